#!/usr/bin/env bash
# bench/before-after.sh — two wirespeed builds side by side: GET 20 MiB x 20
# on one keep-alive connection, GET 1 GiB, PUT 1 GiB plain (the splice path)
# and with `Want-Repr-Digest: sha-256=10` (server hashes; the answered digest
# is checked), all `--no-fsync`; and small GETs (4 KiB file, `wrk -t1 -c64`,
# requests/s, like bench/peers.sh's row; each server pinned to CPU 0 with
# `--threads 1`, wrk to CPU 1). Rounds interleaved, medians. For "this
# change made nothing slower".
#
#   BEFORE=/path/old-wirespeed AFTER=/path/new-wirespeed bash bench/before-after.sh
#   (ROUNDS=7 by default)
set -euo pipefail
: "${BEFORE:?set BEFORE to the old binary}" "${AFTER:?set AFTER to the new binary}"
ROUNDS=${ROUNDS:-7}
BENCH=before-after
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

mkdir -p "$W/d"
head -c $((20 << 20)) /dev/urandom >"$W/d/m20.bin"
head -c $((1 << 30)) /dev/urandom >"$W/d/big.bin"
head -c 4096 /dev/urandom >"$W/d/small.bin"
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
WANT="sha-256=:$(sha256sum "$W/d/big.bin" | cut -c1-64 | xxd -r -p | base64):"
declare -A URL R
for b in before after; do
    bin=$BEFORE
    [[ $b == after ]] && bin=$AFTER
    taskset -c 0 "$bin" serve "$W/d" --no-fsync --threads 1 --listen 127.0.0.1:0 >"$W/$b.addr" 2>"$W/$b.log" &
    PIDS+=($!)
    for _ in $(seq 100); do grep -q listening "$W/$b.addr" 2>/dev/null && break; sleep 0.05; done
    URL[$b]=$(sed 's/^listening on //' "$W/$b.addr")
done
for r in $(seq "$ROUNDS"); do
    log "round $r/$ROUNDS"
    for b in before after; do
        args=()
        for _ in $(seq 20); do args+=(-o /dev/null "${URL[$b]}/m20.bin"); done
        sync
        t0=$(date +%s.%N)
        curl -sS "${args[@]}"
        t1=$(date +%s.%N)
        R[$b,get20]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.0f", 20*20*1048576/(b-a)/1e6}')"$'\n'
        sync
        R[$b,get1g]+="$(curl -sS -o /dev/null -w '%{speed_download}' "${URL[$b]}/big.bin" | awk '{printf "%.0f", $1/1e6}')"$'\n'
        sync
        s=$(curl -sS -T "$W/d/big.bin" -o /dev/null -w '%{speed_upload}' "${URL[$b]}/plain-$b.bin")
        cmp -s "$W/d/big.bin" "$W/d/plain-$b.bin" || { log "$b: stored upload differs"; exit 1; }
        rm -f "$W/d/plain-$b.bin"
        R[$b,put]+="$(awk -v s="$s" 'BEGIN{printf "%.0f", s/1e6}')"$'\n'
        sync
        s=$(curl -sS -T "$W/d/big.bin" -H 'Want-Repr-Digest: sha-256=10' -D "$W/h" -o /dev/null \
            -w '%{speed_upload}' "${URL[$b]}/up-$b.bin")
        grep -qi "repr-digest: $WANT" "$W/h" || { log "$b: wrong or missing Repr-Digest"; exit 1; }
        rm -f "$W/d/up-$b.bin"
        R[$b,puthash]+="$(awk -v s="$s" 'BEGIN{printf "%.0f", s/1e6}')"$'\n'
        taskset -c 1 wrk -t1 -c64 -d5s "${URL[$b]}/small.bin" >"$W/wrk.$b.txt"
        if grep -qE 'Non-2xx|Socket errors' "$W/wrk.$b.txt"; then log "$b: wrk saw errors"; exit 1; fi
        R[$b,smallget]+="$(awk '/^Requests\/sec/{printf "%.0f", $2}' "$W/wrk.$b.txt")"$'\n'
    done
done
echo "| row (MB/s; smallget: requests/s) | before | after | after / before |"
echo "|---|---:|---:|---:|"
for t in get20 get1g put puthash smallget; do
    a=$(printf '%s' "${R[before,$t]}" | median)
    b=$(printf '%s' "${R[after,$t]}" | median)
    echo "| $t | $a | $b | $(ratio "$b" "$a") |"
done
echo
echo "Samples, round by round (before / after):"
for t in get20 get1g put puthash smallget; do
    echo "$t: $(printf '%s' "${R[before,$t]}" | tr '\n' ' ')/ $(printf '%s' "${R[after,$t]}" | tr '\n' ' ')"
done
