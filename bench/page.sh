#!/usr/bin/env bash
# bench/page.sh — the folder page's first load on a 10,000-entry folder in
# headless Chromium: navigation start to the `load` event, to the table shown
# (the script built it with its first rows: `window.wirespeedFirstRowsAt`)
# and to every row being in it (`window.wirespeedReadyAt`); then the bytes a
# first load moves (bench/page_weight.py: the HTML, style sheet, scripts).
#
#   bash bench/page.sh                 # ENTRIES=10000, RUNS=10
#   ENTRIES=1000 RUNS=3 bash bench/page.sh
#
# Each run is a fresh browser context (nothing cached: the assets are
# fetched too). Needs /usr/bin/chromium and Python playwright (.ci/run
# installs both).
set -euo pipefail
BENCH=page
source "$(dirname "$0")/lib.sh"
ENTRIES=${ENTRIES:-10000}
RUNS=${RUNS:-10}

cargo build --release -q -p wirespeed --manifest-path "$REPO/Cargo.toml"
BIN=$REPO/target/release/wirespeed
mkdir -p "$W/data"
# A mix like a real folder: 5% folders, file names of varied length and size.
python3 - "$W/data" "$ENTRIES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    if i % 20 == 0:
        os.mkdir(os.path.join(root, f"folder-{i:05d}"))
    else:
        with open(os.path.join(root, f"file-{i:05d}-{'x' * (i % 17)}.dat"), "wb") as f:
            f.write(b"\0" * (i * 37 % 5000))
PY
"$BIN" serve "$W/data" --listen 127.0.0.1:0 --no-fsync >"$W/serve.out" 2>"$W/serve.log" &
PIDS+=($!)
URL=$(wait_listening "$W/serve.out")/
bytes=$(curl -s -H 'Accept: text/html' "$URL" | wc -c)
log "$ENTRIES entries, page $bytes bytes, $RUNS runs, $(/usr/bin/chromium --version 2>/dev/null | head -c 40)"
python3 "$REPO/bench/page_load.py" "$URL" "$RUNS" "$ENTRIES"
python3 "$REPO/bench/page_weight.py" "$URL" | tail -1
