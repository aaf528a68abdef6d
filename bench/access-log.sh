#!/usr/bin/env bash
# bench/access-log.sh — small-GET requests/s with the access log on (text and
# json, stderr to a file, as under systemd or docker) and off, side by side.
#
#   bash bench/access-log.sh                  # ROUNDS=3, 10 s per sample
#   ROUNDS=1 SECS=2 bash bench/access-log.sh  # smoke test
#
# Each server: `wirespeed serve --threads 1` pinned to CPU 0; wrk -t1 -c64
# pinned to CPU 1, GET of a 13-byte file; rounds interleaved, median reported.
# Metrics are counted in every row (they cannot be switched off, only their
# page); the rows differ only in the access log. Needs wrk and taskset.
set -euo pipefail
BENCH=access-log
source "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-10}
command -v wrk >/dev/null || { log "wrk is missing (apt-get install wrk)"; exit 1; }

cargo build --release -q -p wirespeed --manifest-path "$REPO/Cargo.toml"
BIN=$REPO/target/release/wirespeed
mkdir -p "$W/data"
printf 'hello, world\n' >"$W/data/hello.txt"

start() { # name, args…
    local name=$1; shift
    taskset -c 0 "$BIN" serve "$W/data" --listen 127.0.0.1:0 --threads 1 --no-fsync "$@" \
        >"$W/$name.out" 2>"$W/$name.log" &
    PIDS+=($!)
    wait_listening "$W/$name.out"
}
declare -A URL
URL[off]=$(start off --access-log off)
URL[text]=$(start text --access-log on --log-format text)
URL[json]=$(start json --access-log on --log-format json)

declare -A RPS
for round in $(seq "$ROUNDS"); do
    for row in off text json; do
        out=$W/wrk.$row.$round.txt
        taskset -c 1 wrk -t1 -c64 -d"${SECS}s" "${URL[$row]}/hello.txt" >"$out"
        if grep -qE 'Non-2xx|Socket errors' "$out"; then
            log "warning: $row round $round: $(grep -E 'Non-2xx|Socket errors' "$out" | tr -s ' ' | tr '\n' ';')"
        fi
        RPS[$row]+="$(awk '/^Requests\/sec/ {print $2}' "$out") "
    done
done
med() { tr ' ' '\n' <<<"${RPS[$1]}" | grep . | median; }
for row in off text json; do log "$row, each round: ${RPS[$row]}"; done
off=$(med off); text=$(med text); json=$(med json)
echo "| access log | GET 13 bytes, wrk -t1 -c64 -d${SECS}s (requests/s, median of $ROUNDS) | vs off |"
echo "|---|---:|---:|"
printf '| off | %.0f | 1.00 |\n' "$off"
printf '| on, text | %.0f | %s |\n' "$text" "$(ratio "$text" "$off")"
printf '| on, json | %.0f | %s |\n' "$json" "$(ratio "$json" "$off")"
# Lines dropped by the lossy log writer would show as fewer lines than requests.
for row in text json; do
    sent=$(cat "$W"/wrk."$row".*.txt | awk '/requests in/ {n += $1} END {print n}')
    log "$row: $sent requests answered, $(grep -c 'wirespeed::access' "$W/$row.log") access lines, $(du -h "$W/$row.log" | cut -f1)"
done
