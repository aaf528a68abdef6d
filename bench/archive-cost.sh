#!/usr/bin/env bash
# bench/archive-cost.sh — what one file inside a folder archive costs the
# server beyond the same bytes served as one GET, in counts a loaded machine
# does not distort much: system calls (strace -c -f), page faults and CPU
# time (the server's utime + stime from /proc), per file:
#   (cost of ?archive=tar|zip of FILES files − cost of GET of their
#    concatenation) / FILES
# for one or more builds. Loopback, so the file bytes take the copy loop
# (FileSend::Auto), as in bench/archive.sh; `FILE_SEND=sendfile` for the
# other path. zip is measured warm (CRC-32s cached by a first download).
#
#   BINS="/tmp/ws-before target/release/wirespeed" bash bench/archive-cost.sh
#   FILES=1000 SIZE_KB=1024 ROUNDS=3 …   (defaults)
set -euo pipefail
BENCH=archive-cost
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
FILES=${FILES:-1000}
SIZE_KB=${SIZE_KB:-1024}
ROUNDS=${ROUNDS:-3}
FILE_SEND=${FILE_SEND:-auto}
for c in strace curl python3; do
    command -v "$c" >/dev/null || { log "$c is missing"; exit 1; }
done
: "${BINS:?set BINS to one or more wirespeed binaries}"

DATA=$W/data
mkdir -p "$DATA/folder"
log "creating $FILES files of $SIZE_KB KiB and their concatenation"
for ((i = 0; i < FILES; i++)); do
    # One write per file, as an upload or cp writes it: files written in
    # small pieces (`head -c`) sit in the page cache in small folios and
    # cost about twice the kernel time to read (bench/RESULTS.md, 2026-11-25).
    dd if=/dev/urandom of="$DATA/folder/f$(printf %05d $i).bin" bs=$((SIZE_KB * 1024)) count=1 iflag=fullblock status=none
done
cat "$DATA"/folder/*.bin >"$DATA/one.bin"
cat "$DATA"/one.bin >/dev/null # page cache

# cpu PID: the process's utime + stime in clock ticks (all threads).
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
faults() { awk '{print $10}' "/proc/$1/stat"; }

# measure BIN PATH: one download of PATH; prints "syscalls faults cpu_ms".
measure() {
    local bin=$1 path=$2 out=$W/m.$RANDOM url pid c0 f0 c1 f1 sys
    # Without strace: CPU time and page faults.
    "$bin" serve "$DATA" --listen 127.0.0.1:0 --threads 1 --no-fsync --access-log off \
        --file-send "$FILE_SEND" >"$out.addr" 2>"$out.log" &
    pid=$!
    PIDS+=("$pid")
    url=$(wait_listening "$out.addr")
    # Warm: buffers, the zip's CRC cache.
    curl -sS -o /dev/null "$url/$path"
    c0=$(cpu "$pid") f0=$(faults "$pid")
    curl -sS -o /dev/null "$url/$path"
    c1=$(cpu "$pid") f1=$(faults "$pid")
    kill -TERM "$pid"
    wait "$pid" || true
    # Under strace: system calls of the second download only (the
    # difference of two runs: one download, and two).
    local n1 n2
    n1=$(straced "$bin" "$path" 1)
    n2=$(straced "$bin" "$path" 2)
    sys=$((n2 - n1))
    echo "$sys $((f1 - f0)) $(((c1 - c0) * 1000 / $(getconf CLK_TCK)))"
}

# straced BIN PATH N: total system calls of a server that answered N downloads.
straced() {
    local bin=$1 path=$2 n=$3 out=$W/s.$RANDOM url pid
    strace -f -c -o "$out.st" "$bin" serve "$DATA" --listen 127.0.0.1:0 --threads 1 --no-fsync \
        --access-log off --file-send "$FILE_SEND" >"$out.addr" 2>"$out.log" &
    pid=$!
    url=$(wait_listening "$out.addr")
    for ((k = 0; k < n; k++)); do curl -sS -o /dev/null "$url/$path"; done
    kill -TERM "$(pgrep -P "$pid")"
    wait "$pid" || true
    awk '$NF == "total" {print $(NF-2); exit}' "$out.st"
}

per() { awk -v a="$1" -v b="$2" -v n="$FILES" 'BEGIN {printf "%.1f", (a - b) / n}'; }

echo "| build | download | system calls per file | page faults per file | CPU µs per file |"
echo "|---|---|---:|---:|---:|"
for bin in $BINS; do
    declare -A S=() F=() C=()
    for ((r = 1; r <= ROUNDS; r++)); do
        for what in one.bin "folder/?archive=tar" "folder/?archive=zip"; do
            read -r s f c < <(measure "$bin" "$what")
            S[$what]+="$s " F[$what]+="$f " C[$what]+="$c "
        done
    done
    med() { tr ' ' '\n' <<<"$1" | grep . | median; }
    for what in "folder/?archive=tar" "folder/?archive=zip"; do
        echo "| $bin | ${what#folder/?archive=} | $(per "$(med "${S[$what]}")" "$(med "${S[one.bin]}")") | $(per "$(med "${F[$what]}")" "$(med "${F[one.bin]}")") | $(awk -v a="$(med "${C[$what]}")" -v b="$(med "${C[one.bin]}")" -v n="$FILES" 'BEGIN {printf "%.0f", (a - b) * 1000 / n}') |"
    done
    unset S F C
done
