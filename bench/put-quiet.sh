#!/usr/bin/env bash
# bench/put-quiet.sh — PUT `--no-fsync` against the discard ceiling, measured
# to tell a regression from noise: one or more wirespeed builds and
# bench/discard-server.py, each `curl -T` of SIZE_MB MiB, rounds interleaved
# (every server once per round, in turn), server pinned to CPU 0 and curl to
# CPU 1. Per sample: MB/s (wall) and the server's CPU seconds per GiB
# (utime+stime from /proc/PID/stat), which a busy neighbour disturbs less
# than wall time. Reports median, min and max of each, and the median of
# the per-round ratio to the discard server (pairs share the machine's
# state). Not a test.
#
#   BINS="/tmp/ws-before target/release/wirespeed" ROUNDS=15 bash bench/put-quiet.sh
#   SIZE_MB=256 ROUNDS=3 bash bench/put-quiet.sh        # smoke test
set -euo pipefail
BENCH=put-quiet
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-15}
SIZE_MB=${SIZE_MB:-1024}
SIZE=$((SIZE_MB << 20))
if [[ -z "${BINS:-}" ]]; then
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    BINS="$REPO/target/release/wirespeed"
fi
head -c "$SIZE" /dev/urandom >"$W/src.bin"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

declare -A URL PID MBS CPU RATIO
NAMES=(discard)
taskset -c 0 python3 "$REPO/bench/discard-server.py" >"$W/discard.addr" 2>"$W/discard.log" &
PID[discard]=$!
PIDS+=($!)
URL[discard]=$(wait_listening "$W/discard.addr")
i=0
for b in $BINS; do
    i=$((i + 1))
    n="ws$i"
    NAMES+=("$n")
    mkdir -p "$W/d$i"
    taskset -c 0 "$b" serve "$W/d$i" --no-fsync --access-log off --listen 127.0.0.1:0 >"$W/$n.addr" 2>"$W/$n.log" &
    PID[$n]=$!
    PIDS+=($!)
    URL[$n]=$(wait_listening "$W/$n.addr")
    log "$n = $b"
done

for r in $(seq "$ROUNDS"); do
    log "round $r/$ROUNDS"
    declare -A this=()
    for n in "${NAMES[@]}"; do
        rm -f "$W"/d*/up.bin
        sync
        c0=$(cpu_ticks "${PID[$n]}")
        out=$(taskset -c 1 curl -sS -o /dev/null -w '%{http_code} %{speed_upload} %{size_upload}' -T "$W/src.bin" "${URL[$n]}/up.bin")
        c1=$(cpu_ticks "${PID[$n]}")
        read -r code speed sent <<<"$out"
        [[ $code == 2* && $sent == "$SIZE" ]] || log "warning: $n answered $code after $sent bytes"
        [[ $n == discard ]] || [[ $(stat -c %s "$W/d${n#ws}/up.bin") == "$SIZE" ]] || log "warning: $n stored a wrong size"
        MBS[$n]+="$(awk -v s="$speed" 'BEGIN {printf "%.0f", s / 1e6}') "
        CPU[$n]+="$(awk -v c=$((c1 - c0)) -v m="$SIZE_MB" 'BEGIN {printf "%.3f", c / 100 / (m / 1024)}') "
        this[$n]=$speed
    done
    for n in "${NAMES[@]}"; do
        RATIO[$n]+="$(awk -v a="${this[$n]}" -v b="${this[discard]}" 'BEGIN {printf "%.3f", a / b}') "
    done
done

echo "| server | MB/s median | MB/s min–max | of discard (median of per-round ratios) | ratio min–max | server CPU-s per GiB median | CPU min–max |"
echo "|---|---:|---|---:|---|---:|---|"
stats() { local v=$1; printf '%s %s %s' "$(printf '%s\n' $v | median)" "$(printf '%s\n' $v | sort -g | head -1)" "$(printf '%s\n' $v | sort -g | tail -1)"; }
for n in "${NAMES[@]}"; do
    read -r mm ml mh <<<"$(stats "${MBS[$n]}")"
    read -r rm rl rh <<<"$(stats "${RATIO[$n]}")"
    read -r cm cl ch <<<"$(stats "${CPU[$n]}")"
    echo "| $n | $mm | $ml–$mh | $rm | $rl–$rh | $cm | $cl–$ch |"
done
echo
echo "samples:"
for n in "${NAMES[@]}"; do echo "  $n MB/s: ${MBS[$n]}"; echo "  $n CPU-s/GiB: ${CPU[$n]}"; done
