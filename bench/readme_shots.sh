#!/usr/bin/env bash
# bench/readme_shots.sh — the README's screenshots (docs/img/grid.png,
# docs/img/search.png): a small folder of generated pictures and notes,
# `wirespeed serve --search` on it, Playwright in headless Chromium
# (bench/readme_shots.py).
#
#   bash bench/readme_shots.sh                  # release build
#   BIN=target/debug/wirespeed bash bench/readme_shots.sh
set -euo pipefail
BENCH=readme-shots
source "$(dirname "$0")/lib.sh"
if [[ -z "${BIN:-}" ]]; then
    cargo build --release -q -p wirespeed --manifest-path "$REPO/Cargo.toml"
    BIN=$REPO/target/release/wirespeed
fi
A=$W/album
mkdir -p "$A/notes" "$A/trips"
i=0
for n in sunset-over-the-bay:0xff7e5f:0xfeb47b:0x6a3093 morning-fog:0xd7d2cc:0x304352:0xa1c4fd \
    alpine-lake:0x2193b0:0x6dd5ed:0xe0f7fa harbour-lights:0x0f2027:0xf7b733:0x2c5364 \
    autumn-forest:0xa83279:0xd38312:0x5d4157 desert-dunes:0xedc9a3:0xc06c34:0xf6e7cb \
    northern-lights:0x00c9a7:0x005bea:0x1a1a40 coral-reef:0xff6e7f:0x00b4db:0xbfe9ff \
    city-at-dusk:0x283048:0x859398:0xf8b500 lavender-fields:0xb993d6:0x8ca6db:0xe6dada \
    spring-meadow:0x56ab2f:0xa8e063:0xfff6b7 winter-cabin:0x536976:0xbbd2c5:0xffffff; do
    IFS=: read -r name a b c <<<"$n"
    i=$((i + 1))
    ffmpeg -v error -f lavfi -i "gradients=size=1200x800:c0=$a:c1=$b:c2=$c:nb_colors=3:seed=$i:type=$((i % 3))" \
        -frames:v 1 -q:v 3 "$A/$name.jpg" -y
done
cp "$A/alpine-lake.jpg" "$A/trips/lake-walk-2025.jpg"
cp "$A/harbour-lights.jpg" "$A/trips/harbour-walk.jpg"
printf '# Trip notes\n\nThe lake walk starts at the harbour.\n' >"$A/notes/lake-trip.md"
printf 'day,place\n1,harbour\n2,lake\n' >"$A/notes/lake-itinerary.csv"
echo "packing list for the lake" >"$A/notes/packing.txt"

"$BIN" serve "$A" --listen 127.0.0.1:0 --search --state-dir "$W/state" --read-only \
    >"$W/serve.out" 2>"$W/serve.log" &
PIDS+=($!)
URL=$(wait_listening "$W/serve.out")
mkdir -p "$REPO/docs/img"
python3 "$REPO/bench/readme_shots.py" "$URL" "$REPO/docs/img"
ls -l "$REPO/docs/img/grid.png" "$REPO/docs/img/search.png"
