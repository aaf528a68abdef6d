#!/usr/bin/env bash
# bench/search.sh — `serve --search` on a big tree: the first page of names
# for a fragment with a warm index, next to `fd` walking the same tree and
# dufs `?q=`; the index's build time, size, the server's RSS with it
# loaded, restart to first answer; host changes seen in results; then
# words inside ~1 GiB of text. Not a test: prints markdown tables.
#
#   bash bench/search.sh                        # ENTRIES=1000000 QUERIES=200 TEXT_MB=1024
#   ENTRIES=100000 TEXT_MB=64 bash bench/search.sh   # smoke test
#   BIN=path/to/wirespeed DUFS=path/to/dufs NAMES_TREE=dir TEXT_TREE=dir bash bench/search.sh
#
# The names tree (on tmpfs, /dev/shm, unless NAMES_TREE names one made by
# `search_tree.py names`): ENTRIES names, 1,000 per folder, each named from
# two of 2,000 words and a number (`amber-quartz-004711.txt`). Rows
# (medians and 99th percentiles over QUERIES fragments, each a random
# 4-letter piece of a word, interleaved per fragment):
#   wirespeed  GET /?q=FRAG&format=json&limit=100 on one kept-alive
#              connection (the first page: at most 100 results)
#   fd         fdfind -u --max-results 100 FRAG TREE (a walk per query;
#              the page cache warm)
#   dufs       GET /?q=FRAG&simple (a walk per query, every match), when
#              DUFS or `dufs` is there (`cargo install dufs`)
# INDEXER_NICE=0 renices the indexer thread (nice 19 by design) for the
# run, on a machine busy with other work.
# Host changes: CHANGES rounds of a file created, renamed, deleted in a
# random folder behind the server's back; ms until `?q=` shows each.
# The text tree (TEXT_TREE, or made on /var/tmp by `search_tree.py text`):
# TEXT_MB MiB of prose, dictionary words with a Zipf law, log-normal file
# sizes; the time until the words of every file are in, the index's size,
# and GET /?q=WORDS&content=1 p50/p99 over `search_tree.py text-queries`.
set -euo pipefail

ENTRIES=${ENTRIES:-1000000}
QUERIES=${QUERIES:-200}
TEXT_MB=${TEXT_MB:-1024}
CHANGES=${CHANGES:-30}
BENCH=search
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

command -v fdfind >/dev/null || apt-get install -y -q fd-find >/dev/null
if [[ -z "${BIN:-}" ]]; then
    cargo build --release -q -p wirespeed
    BIN=$REPO/target/release/wirespeed
fi
DUFS=${DUFS:-$(command -v dufs || true)}
T=$(mktemp -d /dev/shm/wirespeed-search.XXXXXX)
trap 'rm -rf "$T"; cleanup' EXIT

NAMES=${NAMES_TREE:-$T/names}
if [[ -z "${NAMES_TREE:-}" ]]; then
    log "making $ENTRIES names in $NAMES"
    python3 "$REPO/bench/search_tree.py" names "$NAMES" "$ENTRIES"
fi

serve() { # serve DIR STATE: starts the server; its URL in URL, its PID in SERVER_PID
    "$BIN" serve "$1" --listen 127.0.0.1:0 --search --state-dir "$2" --no-fsync \
        >"$2.out" 2>"$2.err" &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    URL=$(wait_listening "$2.out")
}
# The indexer thread runs at nice 19 by design; on a machine busy with
# builds it then gets almost no CPU, so INDEXER_NICE=0 renices it for the
# measurement. Its CPU seconds are printed too (less bound to the load).
indexer_tid() { grep -l '^search-index$' /proc/"$1"/task/*/comm | head -n 1 | cut -d/ -f5; }
renice_indexer() {
    [[ -z "${INDEXER_NICE:-}" ]] && return 0
    local tid=""
    for _ in $(seq 100); do tid=$(indexer_tid "$1" || true); [[ -n "$tid" ]] && break; sleep 0.05; done
    [[ -n "$tid" ]] && renice -n "$INDEXER_NICE" -p "$tid" >/dev/null
}
cpu_s() { awk '{printf "%.0f", ($14+$15)/100}' "/proc/$1/task/$(indexer_tid "$1")/stat"; }
rss() { awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b-a}'; }

uptime >&2
start=$(date +%s.%N)
serve "$NAMES" "$W/state-names"
renice_indexer "$SERVER_PID"
python3 "$REPO/bench/search_tree.py" wait "$URL" names
built=$(secs "$start")
built_cpu=$(cpu_s "$SERVER_PID")
size=$(du -sm "$W/state-names/search" | cut -f1)
log "names indexed in $built s, $size MiB"

DURL=
if [[ -n "$DUFS" ]]; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$DUFS" "$NAMES" -b 127.0.0.1 -p "$port" >"$W/dufs.out" 2>&1 &
    PIDS+=("$!")
    DURL=http://127.0.0.1:$port
    for _ in $(seq 100); do curl -sf "$DURL/" -o /dev/null && break; sleep 0.1; done
fi
uptime >&2
python3 "$REPO/bench/search_tree.py" query "$URL" "$NAMES" "$QUERIES" $DURL >"$W/names.tsv"
rss_names=$(rss "$SERVER_PID")
python3 "$REPO/bench/search_tree.py" changes "$URL" "$NAMES" "$CHANGES" >"$W/changes.tsv"
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true

# A restart: the first answer comes from the stored index.
start=$(date +%s.%N)
serve "$NAMES" "$W/state-names"
listening=$(secs "$start")
first=$(python3 "$REPO/bench/search_tree.py" first "$URL")
restart=$(secs "$start")
sleep 2
rss_restart=$(rss "$SERVER_PID")
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true

TEXT=${TEXT_TREE:-$T/text}
if [[ -z "${TEXT_TREE:-}" ]]; then
    TEXT=$(mktemp -d /var/tmp/wirespeed-search-text.XXXXXX)
    trap 'rm -rf "$T" "$TEXT"; cleanup' EXIT
    log "making $TEXT_MB MiB of text in $TEXT"
    python3 "$REPO/bench/search_tree.py" text "$TEXT" "$TEXT_MB"
fi
tfiles=$(find "$TEXT" -type f | wc -l)
tmib=$(du -sm --apparent-size "$TEXT" | cut -f1)
uptime >&2
start=$(date +%s.%N)
serve "$TEXT" "$W/state-text"
renice_indexer "$SERVER_PID"
python3 "$REPO/bench/search_tree.py" wait "$URL" text "$W/state-text"
tbuilt=$(secs "$start")
tbuilt_cpu=$(cpu_s "$SERVER_PID")
tsize=$(du -sm "$W/state-text/search" | cut -f1)
python3 "$REPO/bench/search_tree.py" words "$URL" "$QUERIES" >"$W/text.tsv"
trss=$(rss "$SERVER_PID")
uptime >&2

col() { cut -f"$1" "$2"; }
p() { grep -v nan | sort -g | awk -v q="$1" '{a[NR]=$1} END {if (NR==0) {print "–"; exit} i=int(NR*q+0.999); if (i<1) i=1; printf "%.1f", a[i]}'; }
echo
echo "| $ENTRIES names, first page (≤ 100) for a 4-letter fragment | p50 ms | p99 ms |"
echo "|---|---:|---:|"
echo "| wirespeed \`GET /?q=FRAG\` (warm index) | $(col 1 "$W/names.tsv" | p 0.5) | $(col 1 "$W/names.tsv" | p 0.99) |"
echo "| fd -u --max-results 100 (walks the tree) | $(col 2 "$W/names.tsv" | p 0.5) | $(col 2 "$W/names.tsv" | p 0.99) |"
echo "| dufs \`GET /?q=FRAG\` (walks the tree, every match) | $(col 4 "$W/names.tsv" | p 0.5) | $(col 4 "$W/names.tsv" | p 0.99) |"
echo
echo "| index of $ENTRIES names | |"
echo "|---|---:|"
echo "| built from nothing (serve start → complete) | $built s (indexer thread: $built_cpu CPU-s) |"
echo "| size on disk | $size MiB |"
echo "| server RSS with it loaded, after the queries | $rss_names MiB |"
echo "| restart → first answer from the stored index ($first results) | $restart s (listening after $listening s) |"
echo "| server RSS 2 s after the restart (reconciling walk running) | $rss_restart MiB |"
echo
echo "| host change shown by \`?q=\` ($CHANGES rounds) | p50 ms | max ms |"
echo "|---|---:|---:|"
echo "| file created | $(col 1 "$W/changes.tsv" | p 0.5) | $(col 1 "$W/changes.tsv" | p 1) |"
echo "| file renamed (new name found) | $(col 2 "$W/changes.tsv" | p 0.5) | $(col 2 "$W/changes.tsv" | p 1) |"
echo "| file deleted (gone) | $(col 3 "$W/changes.tsv" | p 0.5) | $(col 3 "$W/changes.tsv" | p 1) |"
echo
echo "| $tmib MiB of text in $tfiles files | |"
echo "|---|---:|"
echo "| names and words of every file indexed (serve start → done) | $tbuilt s (indexer thread: $tbuilt_cpu CPU-s) |"
echo "| index size on disk | $tsize MiB |"
echo "| \`GET /?q=WORDS&content=1\` p50 / p99 | $(col 1 "$W/text.tsv" | p 0.5) / $(col 1 "$W/text.tsv" | p 0.99) ms |"
echo "| server RSS after the queries | $trss MiB |"
