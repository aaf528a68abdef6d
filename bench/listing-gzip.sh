#!/usr/bin/env bash
# bench/listing-gzip.sh — a 10,000-entry folder's listing (HTML and JSON)
# sent plain vs gzipped by one `wirespeed serve`: bytes on the wire and
# curl's total time, on loopback and at a LAN-like 100 Mbit/s
# (curl --limit-rate), in interleaved rounds; medians.
#
#   bash bench/listing-gzip.sh          # ENTRIES=10000 ROUNDS=15
#   BIN=target/debug/wirespeed ROUNDS=3 bash bench/listing-gzip.sh   # bytes only (debug times mean nothing)
set -euo pipefail
BENCH=listing-gzip
source "$(dirname "$0")/lib.sh"
ENTRIES=${ENTRIES:-10000}
ROUNDS=${ROUNDS:-15}

if [[ -z "${BIN:-}" ]]; then
    cargo build --release -q -p wirespeed --manifest-path "$REPO/Cargo.toml"
    BIN=$REPO/target/release/wirespeed
fi
mkdir -p "$W/data"
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
"$BIN" serve "$W/data" --listen 127.0.0.1:0 --no-fsync --access-log off >"$W/serve.out" 2>"$W/serve.log" &
PIDS+=($!)
URL=$(wait_listening "$W/serve.out")/
log "$ENTRIES entries, $ROUNDS interleaved rounds"
echo "| listing | link | plain bytes | gzip bytes | size ratio | plain ms (median) | gzip ms (median) | time ratio gzip/plain |"
echo "|---|---|---|---|---|---|---|---|"
for kind in html json; do
    q=""; [[ $kind == json ]] && q="?format=json"
    for link in loopback 100Mbit; do
        rate=(); [[ $link == 100Mbit ]] && rate=(--limit-rate 12500k)
        : >"$W/plain.t"; : >"$W/gzip.t"
        for _ in $(seq "$ROUNDS"); do
            for mode in plain gzip; do
                enc=(); [[ $mode == gzip ]] && enc=(-H 'Accept-Encoding: gzip')
                curl -s -o /dev/null "${rate[@]}" "${enc[@]}" -w '%{size_download} %{time_total}\n' \
                    "$URL$q" >>"$W/$mode.t"
            done
        done
        pb=$(awk '{print $1}' "$W/plain.t" | median); gb=$(awk '{print $1}' "$W/gzip.t" | median)
        pt=$(awk '{print $2*1000}' "$W/plain.t" | median); gt=$(awk '{print $2*1000}' "$W/gzip.t" | median)
        echo "| $kind | $link | $pb | $gb | $(ratio "$pb" "$gb")x smaller | $pt | $gt | $(ratio "$gt" "$pt") |"
    done
done
