#!/usr/bin/env bash
# bench/archive.sh — a folder as one archive (`GET /dir/?archive=tar|zip`)
# against GET of the same bytes, side by side on loopback in one run. Not a
# test: prints a markdown table.
#
#   bash bench/archive.sh                      # FILES=1000 SIZE_KB=1024 ROUNDS=5 MANY=100000
#   FILES=200 ROUNDS=3 MANY=20000 bash bench/archive.sh
#   BINS="/tmp/ws-before target/release/wirespeed" MANY=0 bash bench/archive.sh
#     (builds side by side: get, tar and zip rows per build, in the same
#     interleaved rounds; the other rows for the last build only)
#
# Rows, interleaved (round 1 runs every row, then round 2, …), median MB/s
# over ROUNDS, each one curl download to /dev/null:
#   get       the same bytes as one file (FILES × SIZE_KB concatenated)
#   get-each  the FILES files, one keep-alive connection (curl URL URL …)
#   tar       ?archive=tar of the folder
#   zip       ?archive=zip, CRC-32s known (the server's cache, a resume's case)
#   zip-cold  ?archive=zip on a freshly started server: every CRC-32
#             computed while streaming (what a first download costs)
#   dufs-zip  dufs' `?zip` of the same folder (if `cargo install dufs`
#             succeeded under target/dufs; else the row says why not)
# Then the time to first byte (curl's time_starttransfer) of tar and zip for
# a folder of MANY empty files (100 folders), median of ROUNDS.
# The server is `wirespeed serve --no-fsync`; on loopback it copies file
# bytes (FileSend::Auto), for GET and archives alike.
set -euo pipefail

FILES=${FILES:-1000}
SIZE_KB=${SIZE_KB:-1024}
ROUNDS=${ROUNDS:-5}
MANY=${MANY:-100000}
BENCH=archive
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

if [[ -z "${BINS:-}" ]]; then
    log "building wirespeed (release)"
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    BINS="$REPO/target/release/wirespeed"
fi
read -ra BUILDS <<<"$BINS"
WS=${BUILDS[-1]}
DUFS="$REPO/target/dufs/bin/dufs"

DATA=$W/data
mkdir -p "$DATA/folder" "$DATA/many"
log "creating $FILES files of $SIZE_KB KiB and their concatenation"
for ((i = 0; i < FILES; i++)); do
    # One write per file, as an upload or cp writes it: files written in
    # small pieces (`head -c`) sit in the page cache in small folios and
    # cost about twice the kernel time to read (bench/RESULTS.md, 2026-11-25).
    dd if=/dev/urandom of="$DATA/folder/f$(printf %05d $i).bin" bs=$((SIZE_KB * 1024)) count=1 iflag=fullblock status=none
done
cat "$DATA"/folder/*.bin >"$DATA/one.bin"
log "creating $MANY empty files in 100 folders"
for ((d = 0; d < 100; d++)); do
    mkdir -p "$DATA/many/d$d"
    (cd "$DATA/many/d$d" && seq -f "f%06g" $((d * MANY / 100)) $(((d + 1) * MANY / 100 - 1)) | xargs -r touch)
done

# start_server runs inside $(…), a subshell: the PIDS it adds never reach
# lib.sh's cleanup, so its servers are stopped by their pid files.
stop_servers() {
    for f in "$W"/*.pid; do [[ -e $f ]] && kill "$(cat "$f")" 2>/dev/null || true; done
    cleanup
}
trap stop_servers EXIT

start_server() { # start_server NAME [BIN]: prints its base URL
    "${2:-$WS}" serve "$DATA" --listen 127.0.0.1:0 --no-fsync >"$W/$1.out" 2>"$W/$1.log" &
    PIDS+=($!)
    echo "$!" >"$W/$1.pid"
    echo "$(wait_listening "$W/$1.out")/"
}
BASE=$(start_server main)
declare -A BUILD_BASE
for ((b = 0; b + 1 < ${#BUILDS[@]}; b++)); do
    BUILD_BASE[$b]=$(start_server "build$b" "${BUILDS[$b]}")
    log "build$b = ${BUILDS[$b]}"
done

# Read the archives back once: they must be right before they are fast.
curl -sS "${BASE}folder/?archive=tar" | tar -t | wc -l | grep -qx $((FILES + 1))
curl -sS -o "$W/check.zip" "${BASE}folder/?archive=zip"
python3 -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; assert len(z.namelist()) == $FILES + 1" "$W/check.zip"
rm -f "$W/check.zip"

speed() { # speed URL...: MB/s over all bytes of the URLs, one connection
    local t0 t1 bytes
    t0=$(date +%s.%N)
    bytes=$(curl -sS -o /dev/null -w '%{size_download}\n' "$@" | awk '{s += $1} END {print s}')
    t1=$(date +%s.%N)
    awk -v b="$bytes" -v a="$t0" -v z="$t1" 'BEGIN {printf "%.0f", b / (z - a) / 1e6}'
}

EACH=() # curl -o applies to one URL: one -o /dev/null per URL
for f in "$DATA"/folder/*.bin; do EACH+=(-o /dev/null "${BASE}folder/$(basename "$f")"); done

DUFS_NOTE=""
if [[ -x "$DUFS" ]]; then
    "$DUFS" "$DATA" --allow-archive -b 127.0.0.1 -p 0 >"$W/dufs.out" 2>&1 &
    PIDS+=($!)
    DPORT=""
    for _ in $(seq 100); do
        DPORT=$(ss -ltnp 2>/dev/null | awk -v p="pid=$!," '$0 ~ p {split($4, a, ":"); print a[length(a)]; exit}')
        [[ -n "$DPORT" ]] && break
        sleep 0.1
    done
    [[ -n "$DPORT" ]] || DUFS_NOTE="dufs did not start: $(head -c 300 "$W/dufs.out")"
else
    DUFS_NOTE="dufs not built (cargo install dufs --root target/dufs; see bench/RESULTS.md)"
fi

declare -A R
for ((r = 1; r <= ROUNDS; r++)); do
    log "round $r/$ROUNDS"
    for b in "${!BUILD_BASE[@]}"; do
        R[get-build$b]+="$(speed "${BUILD_BASE[$b]}one.bin") "
        R[tar-build$b]+="$(speed "${BUILD_BASE[$b]}folder/?archive=tar") "
        R[zip-build$b]+="$(speed "${BUILD_BASE[$b]}folder/?archive=zip") "
        COLD=$(start_server "cold$b" "${BUILDS[$b]}")
        R[zip-cold-build$b]+="$(speed "${COLD}folder/?archive=zip") "
        kill "$(cat "$W/cold$b.pid")"
    done
    R[get]+="$(speed "${BASE}one.bin") "
    R[get-each]+="$(speed "${EACH[@]}") "
    R[tar]+="$(speed "${BASE}folder/?archive=tar") "
    R[zip]+="$(speed "${BASE}folder/?archive=zip") "
    COLD=$(start_server cold)
    R[zip-cold]+="$(speed "${COLD}folder/?archive=zip") "
    kill "$(cat "$W/cold.pid")"
    if [[ -z "$DUFS_NOTE" ]]; then
        R[dufs-zip]+="$(speed "http://127.0.0.1:$DPORT/folder?zip") "
    fi
done

med() { tr ' ' '\n' <<<"${R[$1]}" | grep . | median; }
GET=$(med get)
echo
echo "$FILES files × $SIZE_KB KiB, $ROUNDS rounds interleaved, median:"
echo
echo "| download | MB/s | vs get |"
echo "|---|---|---|"
for b in "${!BUILD_BASE[@]}"; do
    g=$(med "get-build$b")
    for row in get tar zip zip-cold; do
        m=$(med "$row-build$b")
        echo "| $row (build$b: ${BUILDS[$b]}) | $m | $(ratio "$m" "$g")x |"
    done
done
for row in get get-each tar zip zip-cold dufs-zip; do
    if [[ $row == dufs-zip && -n "$DUFS_NOTE" ]]; then
        echo "| $row | — | $DUFS_NOTE |"
        continue
    fi
    m=$(med "$row")
    echo "| $row | $m | $(ratio "$m" "$GET")x |"
done

if [[ -z "$DUFS_NOTE" ]]; then
    dl=$(curl -sS -D - -o /dev/null "http://127.0.0.1:$DPORT/folder?zip" | tr -d '\r' | grep -i '^content-length' || true)
    echo
    echo "dufs' zip Content-Length: ${dl:-none}; ours: $(curl -sSI "${BASE}folder/?archive=zip" | tr -d '\r' | grep -i '^content-length')"
fi

[[ $MANY -gt 0 ]] || exit 0
echo
echo "time to first byte, a folder of $MANY empty files (median of $ROUNDS, seconds):"
echo
echo "| archive | first byte | whole |"
echo "|---|---|---|"
for fmt in tar zip; do
    ttfb=""
    total=""
    for ((r = 1; r <= ROUNDS; r++)); do
        read -r a b < <(curl -sS -o /dev/null -w '%{time_starttransfer} %{time_total}\n' "${BASE}many/?archive=$fmt")
        ttfb+="$a "
        total+="$b "
    done
    echo "| $fmt | $(tr ' ' '\n' <<<"$ttfb" | grep . | median) | $(tr ' ' '\n' <<<"$total" | grep . | median) |"
done
