#!/usr/bin/env bash
# bench/thumbnails.sh — `GET FILE?thumbnail` speed and memory:
#  1. 12-megapixel JPEG photos made into 512 px thumbnails per second on one
#     core: wirespeed (server pinned to CPU 0, a fresh cache each round, curl
#     on CPU 1 asking for each photo once) vs Pillow doing what copyparty's
#     thumbnailer does (`draft` + `thumbnail` + save, bench/thumbnails_pillow.py,
#     in-process: no HTTP at all on its side), rounds interleaved, median;
#  2. a 500-photo folder in Chromium's grid: ms to every thumbnail of the
#     first screen (bench/thumbnails_grid.py), cold cache;
#  3. the server's peak RSS while 8 clients fetch every thumbnail of that
#     folder at once (cold cache).
#
#   bash bench/thumbnails.sh               # PHOTOS=24 ROUNDS=3
#   PHOTOS=6 ROUNDS=1 bash bench/thumbnails.sh   # smoke test
#   BIN=target/debug/wirespeed bash bench/thumbnails.sh   # another build
#
# Needs ffmpeg (to make the photos), python3 with Pillow and Playwright,
# /usr/bin/chromium, taskset.
set -euo pipefail
BENCH=thumbnails
source "$(dirname "$0")/lib.sh"
PHOTOS=${PHOTOS:-24}
ROUNDS=${ROUNDS:-3}
FOLDER=${FOLDER:-500}

if [[ -z "${BIN:-}" ]]; then
    cargo build --release -q -p wirespeed --manifest-path "$REPO/Cargo.toml"
    BIN=$REPO/target/release/wirespeed
fi
mkdir -p "$W/photos" "$W/grid"
log "making $PHOTOS photos of 4000x3000"
for i in $(seq "$PHOTOS"); do
    # Detailed pictures (a zone plate over a test card, shifted per photo),
    # so the encoder's work is a photo's, not a flat colour's.
    ffmpeg -v error -f lavfi -i "testsrc2=size=4000x3000:rate=1,noise=alls=12:allf=t" -ss "$i" \
        -frames:v 1 -q:v 3 "$W/photos/p$i.jpg" -y
done
log "photo size: $(du -b "$W/photos/p1.jpg" | cut -f1) bytes"
for i in $(seq "$FOLDER"); do
    ln "$W/photos/p$(( (i - 1) % PHOTOS + 1 )).jpg" "$W/grid/photo-$(printf %04d "$i").jpg"
done

start() { # state dir, root
    taskset -c 0 "$BIN" serve "$2" --listen 127.0.0.1:0 --state-dir "$1" --read-only \
        >"$1.out" 2>"$1.log" &
    PIDS+=($!)
    SERVER=$!
    URL=$(wait_listening "$1.out")
}
stop() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; }

urls() { for f in "$W/photos"/*.jpg; do echo "url = \"$URL/$(basename "$f")?thumbnail\""; echo "output = /dev/null"; done; }
WS=() PIL=()
for r in $(seq "$ROUNDS"); do
    start "$W/state-ws-$r" "$W/photos"
    t0=$(date +%s.%N)
    urls | taskset -c 1 curl -sf -K - >/dev/null
    t1=$(date +%s.%N)
    stop
    WS+=("$(awk -v n="$PHOTOS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", n/(b-a)}')")
    PIL+=("$(taskset -c 0 python3 "$REPO/bench/thumbnails_pillow.py" "$W/photos"/*.jpg)")
    log "round $r: wirespeed ${WS[-1]}/s, Pillow ${PIL[-1]}/s"
done
ws=$(printf '%s\n' "${WS[@]}" | median)
pil=$(printf '%s\n' "${PIL[@]}" | median)

start "$W/state-grid" "$W/grid"
grid=$(python3 "$REPO/bench/thumbnails_grid.py" "$URL/")
stop

start "$W/state-rss" "$W/grid"
peak=0
for c in $(seq 8); do
    (for i in $(seq "$FOLDER"); do
        echo "url = \"$URL/photo-$(printf %04d "$i").jpg?thumbnail\""; echo "output = /dev/null"
    done | taskset -c 1 curl -s -K - >/dev/null) &
    CLIENTS+=($!)
done
t0=$(date +%s.%N)
while kill -0 "${CLIENTS[@]}" 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$SERVER/status")
    (( rss > peak )) && peak=$rss
    sleep 0.1
done
wait "${CLIENTS[@]}" 2>/dev/null || true
t1=$(date +%s.%N)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER/status")
stop

echo "| measure | wirespeed | Pillow (copyparty's thumbnailer) | ratio |"
echo "|---|---:|---:|---:|"
echo "| 12 MP JPEG → 512 px thumbnails per second, one core (median of $ROUNDS) | $ws | $pil | $(ratio "$ws" "$pil") |"
echo
echo "| measure | value |"
echo "|---|---:|"
echo "| $FOLDER-photo folder, grid in Chromium: first screen's thumbnails all loaded (ms, cold cache; thumbnails shown) | ${grid% *} (${grid#* }) |"
echo "| 8 clients × $FOLDER thumbnails of one folder at once: server peak RSS (MiB) | $(( hwm / 1024 )) |"
echo "| … the same: wall time (s) | $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b-a}') |"
