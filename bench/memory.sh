#!/usr/bin/env bash
# bench/memory.sh — a 10 GiB download and a 10 GiB upload through
# `wirespeed serve`, reporting the server's peak RSS (VmHWM from
# /proc/PID/status). Not a test: prints one line per transfer.
#
#   bash bench/memory.sh              # SIZE_GB=10
#   SIZE_GB=2 bash bench/memory.sh
#
# The download is a sparse file (reads as zeros, no disk space needed); the
# upload streams the same file with Content-Length through `wirespeed put`
# and once more chunked through `curl -T -`; each needs SIZE_GB of free disk
# in the temp dir while it lasts. MB = 10^6 bytes.
set -euo pipefail

SIZE_GB=${SIZE_GB:-10}
REPO=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/wirespeed-memory.XXXXXX)
PID=
cleanup() { [[ -n "$PID" ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT

(cd "$REPO" && cargo build --release -q -p wirespeed)
WS="$REPO/target/release/wirespeed"
mkdir -p "$W/data"
truncate -s "${SIZE_GB}G" "$W/data/sparse.bin"

# A fresh server per transfer, so each peak is that transfer's own.
run() { # label command...
    local label=$1
    shift
    "$WS" serve "$W/data" --listen 127.0.0.1:0 --no-fsync >"$W/addr" 2>"$W/log" &
    PID=$!
    for _ in $(seq 100); do grep -q listening "$W/addr" 2>/dev/null && break; sleep 0.05; done
    URL=$(sed -n 's/^listening on //p' "$W/addr")
    local start end
    start=$(date +%s.%N)
    "$@" "$URL" >/dev/null
    end=$(date +%s.%N)
    local hwm
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
    kill "$PID"
    wait "$PID" 2>/dev/null || true
    PID=
    awk -v l="$label" -v g="$SIZE_GB" -v s="$start" -v e="$end" -v h="$hwm" \
        'BEGIN {printf "%-40s %5.1f s  %6.0f MB/s  server peak RSS %.1f MiB\n", l, e-s, g*1073741824/1e6/(e-s), h/1024}'
    rm -f "$W/data/up.bin"
}

get_curl() { curl -sS -o /dev/null "$1/sparse.bin"; }
put_ws() { "$WS" put -q "$W/data/sparse.bin" "$1/up.bin"; }
put_chunked() { curl -sS -o /dev/null -T - "$1/up.bin" <"$W/data/sparse.bin"; }

echo "${SIZE_GB} GiB each way:"
run "GET (curl)" get_curl
run "PUT Content-Length (wirespeed put)" put_ws
run "PUT chunked (curl -T -)" put_chunked
