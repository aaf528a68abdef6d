#!/usr/bin/env bash
# bench/team-cost.sh — what the team features cost one small GET (13-byte
# file, kept-alive connection), per build and per setting, side by side in
# one run: system calls per GET (strace, through bench/small-get-cost.sh:
# counts, not times, so the machine's load does not skew them) and
# requests per second (wrk, 1 thread, 8 connections, the server on one
# thread; the settings and builds interleaved, ROUNDS times, medians).
#
#   BINS="/tmp/ws-before target/debug/wirespeed" bash bench/team-cost.sh
#   ROUNDS=3 SECS=5 …   (defaults)
#
# Settings: `plain` (no rules file), `rules` (a rules file that only lets
# everyone read), `rate` (the same with `[rate.user] "*"` and `total`, far
# above what the GETs use: the buckets are asked, nobody waits), `all`
# (`rate` plus a folder quota over the served folder and `--audit-log`).
set -euo pipefail
BENCH=team-cost
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
: "${BINS:?set BINS to one or more wirespeed binaries}"
for c in wrk strace python3; do
    command -v "$c" >/dev/null || { log "$c is missing"; exit 1; }
done
mkdir -p "$W/data"
printf 'hello, world\n' >"$W/data/hello.txt"
base='[paths."/"]
"*" = "r"
'
printf '%s' "$base" >"$W/rules.toml"
printf '%s[rate.user]\n"*" = "1G"\n[rate]\ntotal = "10G"\n' "$base" >"$W/rate.toml"
printf '%s[rate.user]\n"*" = "1G"\n[rate]\ntotal = "10G"\n[quota."/"]\nbytes = "1T"\nfiles = 1000000\n' \
    "$base" >"$W/all.toml"
args() {
    case $1 in
    plain) echo "" ;;
    rules) echo "--auth $W/rules.toml" ;;
    rate) echo "--auth $W/rate.toml" ;;
    all) echo "--auth $W/all.toml --audit-log $W/audit.jsonl" ;;
    esac
}
SETTINGS=${SETTINGS:-plain rules rate all}

# rps BIN SETTING: one wrk run's requests per second.
rps() {
    local out=$W/rps.$RANDOM
    # shellcheck disable=SC2046
    "$1" serve "$W/data" --listen 127.0.0.1:0 --threads 1 --access-log off $(args "$2") \
        >"$out.addr" 2>"$out.log" &
    local pid=$!
    local url
    url=$(wait_listening "$out.addr")
    wrk -t1 -c8 -d"${SECS}s" "$url/hello.txt" | awk '/^Requests\/sec:/ {print $2}'
    kill -TERM "$pid"
    wait "$pid" || true
}

declare -A got
for round in $(seq "$ROUNDS"); do
    for s in $SETTINGS; do
        for bin in $BINS; do
            got["$bin $s"]+="$(rps "$bin" "$s") "
        done
    done
    log "round $round done"
done

echo "| build | setting | system calls per GET | requests/s (median of $ROUNDS × ${SECS}s) |"
echo "|---|---|---:|---:|"
for s in $SETTINGS; do
    for bin in $BINS; do
        sys=$(TOOLS=strace BINS=$bin SERVE_ARGS="$(args "$s")" bash "$REPO/bench/small-get-cost.sh" \
            | awk -F'|' '$3 ~ /off/ {gsub(/ /, "", $5); print $5}')
        med=$(echo "${got["$bin $s"]}" | tr ' ' '\n' | grep . | median)
        echo "| $bin | $s | $sys | $med |"
    done
done
