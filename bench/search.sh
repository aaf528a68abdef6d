#!/usr/bin/env bash
# bench/search.sh — `serve --search` on a big tree: the first page of names
# for a fragment with a warm index, next to `fd` walking the same tree; the
# index's build time, size, and the server's RSS with it loaded; then words
# inside ~1 GiB of text. Not a test: prints a markdown table.
#
#   bash bench/search.sh                        # ENTRIES=1000000 QUERIES=200 TEXT_MB=1024
#   ENTRIES=100000 TEXT_MB=64 bash bench/search.sh   # smoke test
#
# The tree (on tmpfs, /dev/shm): ENTRIES names, 1,000 per folder, each
# named from two of 2,000 words and a number (`amber-quartz-004711.txt`).
# Rows (medians and 99th percentiles over QUERIES fragments, each a random
# 4-letter piece of a word, interleaved: wirespeed then fd for each):
#   wirespeed  GET /?q=FRAG&format=json&limit=100 on one kept-alive
#              connection (the first page: at most 100 results)
#   fd         fdfind -u --max-results 100 FRAG TREE (a walk per query;
#              the page cache warm)
# dufs `?q=` is not measured: `cargo install dufs` builds ~300 crates (over
# 20 minutes on this 2-core machine).
# Then TEXT_MB of text files (100 KiB each, words from the same list) in a
# second tree, served with --search: the time until the words of every
# file are in, the index's size, and GET /?q=WORD&content=1 p50/p99.
set -euo pipefail

ENTRIES=${ENTRIES:-1000000}
QUERIES=${QUERIES:-200}
TEXT_MB=${TEXT_MB:-1024}
BENCH=search
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

command -v fdfind >/dev/null || apt-get install -y -q fd-find >/dev/null
cargo build --release -q -p wirespeed
BIN=$REPO/target/release/wirespeed
T=$(mktemp -d /dev/shm/wirespeed-search.XXXXXX)
PIDS+=()
trap 'rm -rf "$T"; cleanup' EXIT

log "making $ENTRIES names in $T/names"
python3 "$REPO/bench/search_tree.py" names "$T/names" "$ENTRIES"

serve() { # serve DIR STATE → URL (PID in SERVER_PID)
    "$BIN" serve "$1" --listen 127.0.0.1:0 --search --state-dir "$2" --no-fsync \
        >"$2.out" 2>"$2.err" &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    wait_listening "$2.out"
}

start=$(date +%s.%N)
URL=$(serve "$T/names" "$W/state-names")
python3 "$REPO/bench/search_tree.py" wait "$URL" names
built=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b-a}')
size=$(du -sm "$W/state-names/search" | cut -f1)
log "names indexed in $built s, $size MiB"

python3 "$REPO/bench/search_tree.py" query "$URL" "$T/names" "$QUERIES" >"$W/names.tsv"
rss=$(awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$SERVER_PID/status")
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true

# A restart: the first answer comes from the stored index.
start=$(date +%s.%N)
URL=$(serve "$T/names" "$W/state-names")
first=$(python3 "$REPO/bench/search_tree.py" first "$URL")
restart=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b-a}')
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
rm -rf "$T/names"

log "making $TEXT_MB MB of text in $T/text"
python3 "$REPO/bench/search_tree.py" text "$T/text" "$TEXT_MB"
start=$(date +%s.%N)
URL=$(serve "$T/text" "$W/state-text")
python3 "$REPO/bench/search_tree.py" wait "$URL" text
tbuilt=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.0f", b-a}')
tsize=$(du -sm "$W/state-text/search" | cut -f1)
python3 "$REPO/bench/search_tree.py" words "$URL" "$QUERIES" >"$W/text.tsv"
trss=$(awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$SERVER_PID/status")

col() { cut -f"$1" "$2"; }
p() { sort -g | awk -v q="$1" '{a[NR]=$1} END {i=int(NR*q+0.999); if (i<1) i=1; printf "%.1f", a[i]}'; }
echo
echo "| $ENTRIES names, first page (≤ 100) for a 4-letter fragment | p50 ms | p99 ms |"
echo "|---|---:|---:|"
echo "| wirespeed \`GET /?q=FRAG\` (warm index) | $(col 1 "$W/names.tsv" | p 0.5) | $(col 1 "$W/names.tsv" | p 0.99) |"
echo "| fd -u --max-results 100 (walks the tree) | $(col 2 "$W/names.tsv" | p 0.5) | $(col 2 "$W/names.tsv" | p 0.99) |"
echo
echo "| index of $ENTRIES names | |"
echo "|---|---:|"
echo "| built from nothing (serve start → complete) | $built s |"
echo "| size on disk | $size MiB |"
echo "| server RSS with it loaded, after the queries | $rss MiB |"
echo "| restart → first answer from the stored index ($first results) | $restart s |"
echo
echo "| $TEXT_MB MB of text (100 KiB files) | |"
echo "|---|---:|"
echo "| words of every file indexed (serve start → done) | $tbuilt s |"
echo "| index size on disk | $tsize MiB |"
echo "| \`GET /?q=WORD&content=1\` p50 / p99 | $(col 1 "$W/text.tsv" | p 0.5) / $(col 1 "$W/text.tsv" | p 0.99) ms |"
echo "| server RSS | $trss MiB |"
