#!/usr/bin/env bash
# bench/digest-requests.sh — what 40 concurrent anonymous HEADs with
# `Want-Repr-Digest: sha-256=10` on one unrecorded file cost the server, in
# CPU-seconds (utime+stime of the serve process, /proc/PID/stat), two builds
# side by side (digests on request must cost bounded work). Two cases: a `--read-only` server (the
# audit's: every request hashed the whole file again), and a writable one
# (the first hash is recorded; concurrent ones used to all hash too). The
# file is replaced between rounds so nothing is recorded beforehand.
# Rounds interleaved, medians.
#
#   BEFORE=/path/old-wirespeed AFTER=/path/new-wirespeed bash bench/digest-requests.sh
#   (ROUNDS=5, SIZE_MIB=32, N=40 by default)
set -euo pipefail
: "${BEFORE:?set BEFORE to the old binary}" "${AFTER:?set AFTER to the new binary}"
ROUNDS=${ROUNDS:-5}
SIZE_MIB=${SIZE_MIB:-32}
N=${N:-40}
BENCH=digest-requests
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
declare -A R
for r in $(seq "$ROUNDS"); do
    log "round $r/$ROUNDS"
    for b in before after; do
        for mode in ro rw; do
            bin=$BEFORE
            [[ $b == after ]] && bin=$AFTER
            d="$W/$b-$mode"
            rm -rf "$d" && mkdir -p "$d"
            head -c $((SIZE_MIB << 20)) /dev/urandom >"$d/f.bin"
            flags=(--no-fsync)
            [[ $mode == ro ]] && flags+=(--read-only)
            "$bin" serve "$d" "${flags[@]}" --listen 127.0.0.1:0 >"$W/out" 2>"$W/err" &
            pid=$!
            PIDS+=("$pid")
            url=$(wait_listening "$W/out")
            t0=$(ticks "$pid")
            for _ in $(seq "$N"); do
                curl -sS -I -o /dev/null -H 'Want-Repr-Digest: sha-256=10' "$url/f.bin" &
            done
            wait_curls=$(jobs -p | grep -v "^$pid$" || true)
            for j in $wait_curls; do wait "$j" || true; done
            t1=$(ticks "$pid")
            kill "$pid"
            wait "$pid" 2>/dev/null || true
            R[$b,$mode]+="$(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN{printf "%.2f", (b-a)/hz}')"$'\n'
        done
    done
done
printf '%-34s %10s %10s %8s\n' "$N HEADs asking a digest, ${SIZE_MIB} MiB" before after ratio
for mode in ro rw; do
    bm=$(printf '%s' "${R[before,$mode]}" | median)
    am=$(printf '%s' "${R[after,$mode]}" | median)
    name="--read-only, CPU-seconds"
    [[ $mode == rw ]] && name="writable, CPU-seconds"
    printf '%-34s %10s %10s %8s\n' "$name" "$bm" "$am" "$(ratio "$am" "$bm")"
done
