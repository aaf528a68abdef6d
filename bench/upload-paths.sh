#!/usr/bin/env bash
# bench/upload-paths.sh — the server's upload receive paths side by side:
# splice(2) vs the copy loop at several body-buffer sizes, 1 GiB `curl -T`
# per sample, `--no-fsync` and no digest so only the receive path differs.
# Server pinned to CPU 0, curl to CPU 1; rounds interleaved; reports median
# MB/s and the server's CPU time per upload (utime+stime ticks from
# /proc/PID/stat, 100 ticks = 1 s), which is steadier than wall time on a
# shared host. Not a test.
#
#   bash bench/upload-paths.sh                  # ROUNDS=7, data dir in /tmp
#   DATA_BASE=/dev/shm bash bench/upload-paths.sh   # tmpfs: no disk at all
#   WS=/path/to/wirespeed VARIANTS="splice copy" bash bench/upload-paths.sh
set -euo pipefail

ROUNDS=${ROUNDS:-7}
VARIANTS=${VARIANTS:-"splice copy copy1m copy4m"}
BENCH=upload-paths
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

if [[ -z "${WS:-}" ]]; then
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    WS="$REPO/target/release/wirespeed"
fi
D=$(mktemp -d "${DATA_BASE:-/tmp}/wirespeed-upload-paths.XXXXXX")
trap 'cleanup; rm -rf "$D"' EXIT
head -c $((1 << 30)) /dev/urandom >"$W/src.bin"

declare -A URL PID SPEED CPU
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for v in $VARIANTS; do
    case $v in
    splice) args=(--upload-path splice) ;;
    copy) args=(--upload-path copy) ;;
    copy1m) args=(--upload-path copy --body-buffer 1M) ;;
    copy4m) args=(--upload-path copy --body-buffer 4M) ;;
    *) log "unknown variant $v"; exit 2 ;;
    esac
    mkdir -p "$D/$v"
    taskset -c 0 "$WS" serve "$D/$v" --listen 127.0.0.1:0 --no-fsync "${args[@]}" >"$W/$v.addr" 2>"$W/$v.log" &
    PIDS+=($!)
    PID[$v]=$!
    for _ in $(seq 100); do grep -q listening "$W/$v.addr" 2>/dev/null && break; sleep 0.05; done
    URL[$v]=$(sed 's/^listening on //' "$W/$v.addr")
done

for r in $(seq "$ROUNDS"); do
    log "round $r/$ROUNDS"
    for v in $VARIANTS; do
        sync
        c0=$(cpu_ticks "${PID[$v]}")
        s=$(taskset -c 1 curl -sS -T "$W/src.bin" -o /dev/null -w '%{speed_upload}' "${URL[$v]}/x.bin")
        CPU[$v]+="$(($(cpu_ticks "${PID[$v]}") - c0))"$'\n'
        SPEED[$v]+="$s"$'\n'
        [[ $(stat -c %s "$D/$v/x.bin") == $((1 << 30)) ]] || { log "$v stored a short file"; exit 1; }
        rm -f "$D/$v/x.bin"
    done
done

echo "| receive path | median MB/s | server CPU ticks per GiB (median) | samples MB/s |"
echo "|---|---:|---:|---|"
for v in $VARIANTS; do
    m=$(printf '%s' "${SPEED[$v]}" | median)
    c=$(printf '%s' "${CPU[$v]}" | median)
    printf '| %s | %.0f | %s | %s |\n' "$v" "$(awk -v b="$m" 'BEGIN{print b/1e6}')" "$c" \
        "$(printf '%s' "${SPEED[$v]}" | awk '{printf "%.0f ", $1/1e6}')"
done
