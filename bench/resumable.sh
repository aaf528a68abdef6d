#!/usr/bin/env bash
# bench/resumable.sh — what resumability costs an upload: the same file
# uploaded by `wirespeed put` as a plain PUT, as one resumable append (IETF
# draft, and tus), and in 8 MiB appends. Not a test: prints a markdown table.
#
#   bash bench/resumable.sh               # SIZE_MB=1024 ROUNDS=5
#   SIZE_MB=256 ROUNDS=3 KEEP=1 bash bench/resumable.sh
#
# The server (`wirespeed serve --no-fsync`) is pinned to CPU $SERVER_CPU
# (default 0) and the client to CPU $CLIENT_CPU (default 1) with taskset.
# Every row uses `--no-verify` (no client-side sha-256), so each is the body
# going out with sendfile and what the protocol adds around it. Rounds are
# interleaved (round 1 runs every row, then round 2, …), each after `sync`
# with the previous upload removed; the median MB/s is
# reported with its ratio to the plain PUT. Each stored file is checked
# against the source's sha-256 in round 1. MB = 10^6 bytes.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
SIZE_MB=${SIZE_MB:-1024}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BENCH=resumable
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

log "building wirespeed (release)"
(cd "$REPO" && cargo build --release -q -p wirespeed)
WS="$REPO/target/release/wirespeed"
now() { date +%s.%N; }

SRC=$W/src.bin
mkdir -p "$W/data" "$W/state"
log "generating a ${SIZE_MB} MiB random file"
head -c $((SIZE_MB << 20)) /dev/urandom >"$SRC"
BYTES=$(stat -c %s "$SRC")
WANT=$(sha256sum "$SRC" | cut -d' ' -f1)

taskset -c "$SERVER_CPU" "$WS" serve "$W/data" --listen 127.0.0.1:0 --no-fsync \
    >"$W/serve.out" 2>"$W/serve.log" &
PIDS+=($!)
BASE=$(wait_listening "$W/serve.out") || { cat "$W/serve.log" >&2; exit 1; }

ROWS=(put ietf tus ietf-8m tus-8m)
declare -A ARGS=(
    [put]="--protocol put"
    [ietf]="--protocol ietf"
    [tus]="--protocol tus"
    [ietf-8m]="--protocol ietf --append-size 8M"
    [tus-8m]="--protocol tus --append-size 8M"
)
declare -A LABEL=(
    [put]="plain PUT (\`--protocol put\`)"
    [ietf]="IETF draft, one PATCH (\`--protocol ietf\`)"
    [tus]="tus, one PATCH (\`--protocol tus\`)"
    [ietf-8m]="IETF draft, 8 MiB appends (\`--append-size 8M\`)"
    [tus-8m]="tus, 8 MiB appends"
)
declare -A RESULTS=()

for round in $(seq "$ROUNDS"); do
    for row in "${ROWS[@]}"; do
        name="$row.bin"
        # Untimed: the last upload's dirty pages are written back first, so
        # no row pays for another's writeback.
        rm -f "$W/data/"*.bin
        sync
        t0=$(now)
        # shellcheck disable=SC2086
        XDG_STATE_HOME=$W/state taskset -c "$CLIENT_CPU" "$WS" put -q --no-verify \
            ${ARGS[$row]} "$SRC" "$BASE/$name"
        t1=$(now)
        mbs=$(awk -v b="$BYTES" -v a="$t0" -v z="$t1" 'BEGIN {printf "%.0f", b / (z - a) / 1e6}')
        RESULTS[$row]+="$mbs "
        if [[ $round == 1 ]]; then
            got=$(sha256sum "$W/data/$name" | cut -d' ' -f1)
            [[ "$got" == "$WANT" ]] || { echo "$row: stored file differs" >&2; exit 1; }
        fi
        log "round $round $row: $mbs MB/s"
    done
done

base=$(echo "${RESULTS[put]}" | tr ' ' '\n' | grep . | median)
echo "| upload of ${SIZE_MB} MiB | MB/s (median of $ROUNDS) | vs plain PUT | each round |"
echo "|---|---:|---:|---|"
for row in "${ROWS[@]}"; do
    m=$(echo "${RESULTS[$row]}" | tr ' ' '\n' | grep . | median)
    echo "| ${LABEL[$row]} | $m | $(ratio "$m" "$base") | ${RESULTS[$row]% } |"
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
