#!/usr/bin/env bash
# bench/tree.sh — many small files: `wirespeed put -r` / `get -r` next to
# curl and wget, end to end on loopback in one run. Not a test: prints a
# markdown table.
#
#   bash bench/tree.sh                        # FILES=10000 SIZE_KB=4 ROUNDS=3 PARALLEL=8
#   FILES=2000 ROUNDS=1 KEEP=1 bash bench/tree.sh
#
# The tree: FILES random files of SIZE_KB KiB, 100 per folder, folders two
# levels deep (d00/d0/…). Rows, interleaved (round 1 runs every row, then
# round 2, …) and reported as the median over ROUNDS, in files/s:
#   put  wirespeed put -r --parallel 8 TREE URL/   (default: sha-256 of each
#        file checked against the server's Repr-Digest)
#   put  the same with --no-verify                 (no hashing, like curl)
#   put  curl --parallel --parallel-max 8 -K CFG   (one upload-file/url pair per
#        file in a config file; PUT, the server creates the folders)
#   get  wirespeed get -r --parallel 8 URL/tree/ DIR   (walks JSON listings)
#   get  wget -r -np -nH -l inf URL/tree/          (follows the HTML listings;
#        one connection, one file at a time; also saves each listing as
#        index.html)
# The server is `wirespeed serve --no-fsync` (10,000 fsyncs would measure the
# disk, the same for every client). Round 1 checks every result against the
# source tree (diff -r). wget and curl are installed with apt if missing.
set -euo pipefail

FILES=${FILES:-10000}
SIZE_KB=${SIZE_KB:-4}
ROUNDS=${ROUNDS:-3}
PARALLEL=${PARALLEL:-8}
BENCH=tree
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

for tool in curl wget; do
    if ! command -v "$tool" >/dev/null; then
        log "installing $tool"
        if [[ $(id -u) == 0 ]]; then apt-get install -y -q "$tool" >/dev/null; else sudo apt-get install -y -q "$tool" >/dev/null; fi
    fi
done

log "building wirespeed (release)"
(cd "$REPO" && cargo build --release -q -p wirespeed)
WS="$REPO/target/release/wirespeed"

now() { date +%s.%N; }

# ---- the tree and the server --------------------------------------------------
SRC=$W/src/tree
log "creating $FILES files of $SIZE_KB KiB"
head -c $((FILES * SIZE_KB * 1024)) /dev/urandom >"$W/blob"
i=0
while ((i < FILES)); do
    d=$(printf 'd%02d/d%d' $((i / 1000)) $((i / 100 % 10)))
    mkdir -p "$SRC/$d"
    for ((j = 0; j < 100 && i < FILES; j++, i++)); do
        echo "$d/f$(printf %05d $i).bin"
    done
done >"$W/names"
# One dd per file would take minutes: split the blob into the names instead.
(cd "$SRC" && split -b $((SIZE_KB * 1024)) -a 5 -d "$W/blob" "$W/part." &&
    paste -d' ' <(ls "$W"/part.* | sort) "$W/names" | while read -r p n; do mv "$p" "$n"; done)
rm -f "$W/blob"
test "$(find "$SRC" -type f | wc -l)" -eq "$FILES"

mkdir -p "$W/data"
"$WS" serve "$W/data" --listen 127.0.0.1:0 --no-fsync >"$W/serve.out" 2>"$W/serve.log" &
PIDS+=($!)
for _ in $(seq 200); do grep -q listening "$W/serve.out" 2>/dev/null && break; sleep 0.05; done
BASE=$(sed -n 's/^listening on //p' "$W/serve.out" | head -1)
[[ -n "$BASE" ]] || { echo "server did not start: $(cat "$W/serve.log")" >&2; exit 1; }
log "server at $BASE"

# curl's config: one upload per file, its answer discarded.
while read -r n; do
    printf 'upload-file = "%s"\nurl = "%s/curl/tree/%s"\noutput = "/dev/null"\n' "$SRC/$n" "$BASE" "$n"
done <"$W/names" >"$W/curl.cfg"

# ---- the rows ---------------------------------------------------------------
declare -A T
row() { # row NAME COMMAND...: time one run, append files/s to T[NAME]
    local name=$1
    shift
    sync
    local t0 t1
    t0=$(now)
    "$@" >"$W/$name.out" 2>"$W/$name.err" || { echo "$name failed: $(tail -5 "$W/$name.err")" >&2; exit 1; }
    t1=$(now)
    T[$name]+="$(awk -v n="$FILES" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", n / (b - a)}') "
}
check() { # check NAME DIR: DIR must equal the source tree
    diff -r -x 'index.html*' "$SRC" "$2" >/dev/null || { echo "$1: result differs from the source" >&2; exit 1; }
}

for r in $(seq "$ROUNDS"); do
    log "round $r of $ROUNDS"
    rm -rf "$W/data/ws" "$W/data/wsnv" "$W/data/curl"
    row ws_put "$WS" put -q -r --parallel "$PARALLEL" "$SRC" "$BASE/ws/"
    row ws_put_nv "$WS" put -q -r --no-verify --parallel "$PARALLEL" "$SRC" "$BASE/wsnv/"
    row curl_put curl -s -S --fail --parallel --parallel-max "$PARALLEL" -K "$W/curl.cfg"
    rm -rf "$W/get_ws" "$W/get_wget"
    row ws_get "$WS" get -q -r --parallel "$PARALLEL" "$BASE/ws/tree/" "$W/get_ws"
    row wget_get wget -q -r -np -nH -l inf -P "$W/get_wget" "$BASE/ws/tree/"
    if [[ $r == 1 ]]; then
        check ws_put "$W/data/ws/tree"
        check ws_put_nv "$W/data/wsnv/tree"
        check curl_put "$W/data/curl/tree"
        check ws_get "$W/get_ws"
        check wget_get "$W/get_wget/ws/tree"
    fi
done

med() { tr ' ' '\n' <<<"${T[$1]}" | grep . | median; }
echo
echo "$FILES files of $SIZE_KB KiB, --parallel $PARALLEL, median of $ROUNDS (files/s; samples in brackets)"
echo
echo "| op | client | files/s | vs peer |"
echo "|---|---|---:|---:|"
echo "| put -r | \`wirespeed put -r\` (verified) | $(med ws_put) [${T[ws_put]% }] | $(ratio "$(med ws_put)" "$(med curl_put)")x |"
echo "| put -r | \`wirespeed put -r --no-verify\` | $(med ws_put_nv) [${T[ws_put_nv]% }] | $(ratio "$(med ws_put_nv)" "$(med curl_put)")x |"
echo "| put -r | \`curl --parallel --parallel-max $PARALLEL -K\` | $(med curl_put) [${T[curl_put]% }] | |"
echo "| get -r | \`wirespeed get -r\` | $(med ws_get) [${T[ws_get]% }] | $(ratio "$(med ws_get)" "$(med wget_get)")x |"
echo "| get -r | \`wget -r -np -nH\` | $(med wget_get) [${T[wget_get]% }] | |"
