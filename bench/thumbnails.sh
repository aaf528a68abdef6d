#!/usr/bin/env bash
# bench/thumbnails.sh — `GET FILE?thumbnail` speed and memory:
#  1. 12-megapixel JPEG photos made into 512 px thumbnails per second on one
#     core, in-process on every side, rounds interleaved, median:
#     wirespeed's maker (crates/service/src/thumbnail/make.rs, built by
#     bench/thumbs/), copyparty's own Pillow thumbnailer
#     (bench/thumbnails_copyparty.py calls its `ThumbSrv.conv_pil` with
#     `--th-size 512x512`, uncropped JPEG at its quality 40), and the
#     fastest Pillow path for the same picture (`draft` to 1/4, then
#     `thumbnail`, quality 80), each pinned to one core;
#  2. the same through the server: `wirespeed serve` pinned to CPU 0, a
#     fresh cache each round, curl on CPU 1 asking for each photo once;
#  3. a 500-photo folder in Chromium's grid: ms to every thumbnail of the
#     first screen (bench/thumbnails_grid.py), cold server cache, then warm;
#  4. the server's peak RSS while 8 headless Chromiums scroll that folder
#     to its end at once (cold cache), and while 8 curls fetch every
#     thumbnail of it.
#
#   bash bench/thumbnails.sh               # PHOTOS=24 ROUNDS=3
#   PHOTOS=6 ROUNDS=1 bash bench/thumbnails.sh   # smoke test
#   BIN=target/debug/wirespeed bash bench/thumbnails.sh   # another build
#   PART=grid bash bench/thumbnails.sh     # only 3 and 4 (PART=speed: 1, 2)
#
# Needs ffmpeg (to make the photos), python3 with Pillow, copyparty and
# Playwright, /usr/bin/chromium, taskset.
set -euo pipefail
BENCH=thumbnails
source "$(dirname "$0")/lib.sh"
PHOTOS=${PHOTOS:-24}
ROUNDS=${ROUNDS:-3}
FOLDER=${FOLDER:-500}

PART=${PART:-all}

if [[ -z "${BIN:-}" ]]; then
    cargo build --release -q -p wirespeed --manifest-path "$REPO/Cargo.toml"
    BIN=$REPO/target/release/wirespeed
fi
mkdir -p "$W/photos" "$W/grid"
log "making $PHOTOS photos of 4000x3000"
for i in $(seq "$PHOTOS"); do
    # Detailed pictures (a test card with film-grain noise, shifted per
    # photo), so the decoder's and encoder's work is a photo's, not a flat
    # colour's: ~3.6 MB each, like a phone's 12 MP JPEG.
    ffmpeg -v error -f lavfi -i "testsrc2=size=4000x3000:rate=1,noise=alls=12:allf=t" -ss "$i" \
        -frames:v 1 -q:v 3 "$W/photos/p$i.jpg" -y
done
log "photo size: $(du -b "$W/photos/p1.jpg" | cut -f1) bytes; load: $(uptime)"
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
# peak RSS (KiB) of $SERVER while the given pids run
watch_rss() {
    while kill -0 "$@" 2>/dev/null; do sleep 0.2; done
    wait "$@" 2>/dev/null || true
    awk '/VmHWM/ {print $2}' "/proc/$SERVER/status"
}

if [[ $PART != grid ]]; then
    cargo build --release -q --manifest-path "$REPO/bench/thumbs/Cargo.toml"
    MAKER=$REPO/bench/thumbs/target/release/thumbs-bench
    urls() { for f in "$W/photos"/*.jpg; do echo "url = \"$URL/$(basename "$f")?thumbnail\""; echo "output = /dev/null"; done; }
    WS=() CP=() BEST=() SRV=()
    for r in $(seq "$ROUNDS"); do
        WS+=("$(taskset -c 1 "$MAKER" "$W/photos"/*.jpg 2>/dev/null)")
        CP+=("$(taskset -c 1 python3 "$REPO/bench/thumbnails_copyparty.py" "$W/photos"/*.jpg 2>/dev/null)")
        BEST+=("$(taskset -c 1 python3 "$REPO/bench/thumbnails_copyparty.py" --best-pillow "$W/photos"/*.jpg 2>/dev/null)")
        start "$W/state-ws-$r" "$W/photos"
        t0=$(date +%s.%N)
        urls | taskset -c 1 curl -sf -K - >/dev/null
        t1=$(date +%s.%N)
        stop
        SRV+=("$(awk -v n="$PHOTOS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", n/(b-a)}')")
        log "round $r: wirespeed ${WS[-1]}/s (server ${SRV[-1]}/s), copyparty ${CP[-1]}/s, best Pillow ${BEST[-1]}/s"
    done
    ws=$(printf '%s\n' "${WS[@]}" | median)
    cp=$(printf '%s\n' "${CP[@]}" | median)
    best=$(printf '%s\n' "${BEST[@]}" | median)
    srv=$(printf '%s\n' "${SRV[@]}" | median)
    echo "| 12 MP JPEG → ≤ 512 px JPEG, photos/s on one core (median of $ROUNDS) | photos/s | wirespeed ÷ it |"
    echo "|---|---:|---:|"
    echo "| wirespeed make.rs (in-process) | $ws | |"
    echo "| copyparty 1.20 \`conv_pil\` (Pillow, \`--th-size 512x512\`, jpg q40 progressive) | $cp | $(ratio "$ws" "$cp") |"
    echo "| fastest Pillow path (\`draft\` 1/4 + \`thumbnail\` LANCZOS, q80) | $best | $(ratio "$ws" "$best") |"
    echo "| wirespeed server (pinned CPU 0, curl on CPU 1, fresh cache) | $srv | |"
    echo
fi

if [[ $PART != speed ]]; then
    start "$W/state-grid" "$W/grid"
    cold=$(python3 "$REPO/bench/thumbnails_grid.py" "$URL/")
    warm=$(python3 "$REPO/bench/thumbnails_grid.py" "$URL/")
    stop

    start "$W/state-browsers" "$W/grid"
    B=()
    for c in $(seq 8); do
        python3 "$REPO/bench/thumbnails_grid.py" "$URL/" --scroll >"$W/scroll-$c" 2>&1 &
        B+=($!)
    done
    t0=$(date +%s.%N)
    hwm_b=$(watch_rss "${B[@]}")
    t1=$(date +%s.%N)
    stop
    wall_b=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", b-a}')

    start "$W/state-rss" "$W/grid"
    CLIENTS=()
    for c in $(seq 8); do
        (for i in $(seq "$FOLDER"); do
            echo "url = \"$URL/photo-$(printf %04d "$i").jpg?thumbnail\""; echo "output = /dev/null"
        done | taskset -c 1 curl -s -K - >/dev/null) &
        CLIENTS+=($!)
    done
    t0=$(date +%s.%N)
    hwm_c=$(watch_rss "${CLIENTS[@]}")
    t1=$(date +%s.%N)
    stop
    wall_c=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", b-a}')

    echo "| $FOLDER-photo folder (12 MP JPEGs), loopback | value |"
    echo "|---|---:|"
    echo "| grid in Chromium: first screen's thumbnails all loaded, cold server cache (ms; thumbnails) | ${cold% *} (${cold#* }) |"
    echo "| the same, warm server cache, new browser (ms; thumbnails) | ${warm% *} (${warm#* }) |"
    echo "| 8 headless Chromiums scroll the grid to its end at once: server peak RSS (MiB); wall (s) | $(( hwm_b / 1024 )); $wall_b |"
    echo "| 8 curls fetch all $FOLDER thumbnails at once: server peak RSS (MiB); wall (s) | $(( hwm_c / 1024 )); $wall_c |"
fi
