#!/usr/bin/env bash
# bench/listing-100k.sh — the JSON listing of a 100,000-entry folder (the
# bench/peers.sh row) for one or more wirespeed builds next to
# `find -maxdepth 1 -printf '%f %s %T@\n'`, rounds interleaved, each sample
# after `sync`; reports median times and the median of the per-round ratio
# to find, plus each server's CPU seconds per listing. Not a test.
#
#   BINS="/tmp/ws-before target/release/wirespeed" ROUNDS=11 bash bench/listing-100k.sh
set -euo pipefail
BENCH=listing-100k
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-11}
if [[ -z "${BINS:-}" ]]; then
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    BINS="$REPO/target/release/wirespeed"
fi
mkdir -p "$W/data/list"
(cd "$W/data/list" && seq -f 'entry-%06g.dat' 0 99999 | xargs touch)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A URL PID T CPU RATIO
NAMES=()
i=0
for b in $BINS; do
    i=$((i + 1))
    n="ws$i"
    NAMES+=("$n")
    "$b" serve "$W/data" --access-log off --listen 127.0.0.1:0 >"$W/$n.addr" 2>"$W/$n.log" &
    PID[$n]=$!
    PIDS+=($!)
    URL[$n]=$(wait_listening "$W/$n.addr")
    log "$n = $b"
done
find_time() {
    local t0 t1
    t0=$(date +%s.%N)
    find "$W/data/list" -maxdepth 1 -printf '%f %s %T@\n' >/dev/null
    t1=$(date +%s.%N)
    awk -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.4f", t1 - t0}'
}
for r in $(seq "$ROUNDS"); do
    log "round $r/$ROUNDS"
    sync
    f=$(find_time)
    T[find]+="$f "
    for n in "${NAMES[@]}"; do
        sync
        c0=$(cpu_ticks "${PID[$n]}")
        t=$(curl -sS -o "$W/$n.json" -w '%{time_total}' "${URL[$n]}/list/?format=json")
        c1=$(cpu_ticks "${PID[$n]}")
        T[$n]+="$t "
        CPU[$n]+="$(awk -v c=$((c1 - c0)) 'BEGIN {printf "%.2f", c / 100}') "
        RATIO[$n]+="$(awk -v a="$t" -v b="$f" 'BEGIN {printf "%.3f", a / b}') "
    done
done
for n in "${NAMES[@]}"; do
    c=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$W/$n.json")
    [[ $c == 100000 ]] || log "warning: $n listed $c entries"
done
echo "| lister | ms (median of $ROUNDS) | min–max | x find (median of per-round ratios) | server CPU-s per listing |"
echo "|---|---:|---|---:|---:|"
for n in find "${NAMES[@]}"; do
    v=${T[$n]}
    m=$(printf '%s\n' $v | median | awk '{printf "%.0f", $1 * 1000}')
    lo=$(printf '%s\n' $v | sort -g | head -1 | awk '{printf "%.0f", $1 * 1000}')
    hi=$(printf '%s\n' $v | sort -g | tail -1 | awk '{printf "%.0f", $1 * 1000}')
    if [[ $n == find ]]; then
        echo "| find -printf | $m | $lo–$hi | 1 | |"
    else
        echo "| $n | $m | $lo–$hi | $(printf '%s\n' ${RATIO[$n]} | median) | $(printf '%s\n' ${CPU[$n]} | median) |"
    fi
done
echo
for n in find "${NAMES[@]}"; do echo "  $n s: ${T[$n]}"; done
