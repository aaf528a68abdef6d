#!/usr/bin/env bash
# bench/slowloris.sh — a normal client's latency with and without 2,000
# slowloris connections, the server's RSS while they are open, and whether
# the head timeout closes them. Not a test: prints a summary.
#
#   bash bench/slowloris.sh
#   SLOW=500 GETS=200 UPLOADS=4 bash bench/slowloris.sh   # smoke test, ~40 s
#   TLS=1 bash bench/slowloris.sh                          # the same over HTTPS
#
# One release server (default flags but --no-fsync, so upload latency is
# the server's and not the disk's), pinned to CPU 0; the clients are pinned
# to CPU 1. Phase 1 (idle): the client does GETS GETs of a 13-byte file on
# one kept-alive connection, then UPLOADS PUTs of UPLOAD_MIB MiB. Phase 2:
# SLOW connections each send one byte of a never-ending head every 5 s
# (replaced when the server closes one); once they are open the same
# client runs again, and a third time across the head timeout's first wave. The dribblers run SLOW_SECS, long enough for the head
# timeout (10 s) to close every one of them at least once.
set -euo pipefail
BENCH=slowloris
source "$(dirname "$0")/lib.sh"

SLOW=${SLOW:-2000}
GETS=${GETS:-1000}
UPLOADS=${UPLOADS:-20}
UPLOAD_MIB=${UPLOAD_MIB:-8}
SLOW_SECS=${SLOW_SECS:-30}
PY="$REPO/bench/slowloris.py"

# 2,000 sockets on each side need more than the usual 1,024 descriptors.
ulimit -n "$(ulimit -Hn)"
(cd "$REPO" && cargo build --release -q -p wirespeed)
WS="$REPO/target/release/wirespeed"
mkdir -p "$W/data"
printf 'hello, world\n' >"$W/data/small.txt"

TLS_FLAGS=()
if [[ "${TLS:-0}" == 1 ]]; then TLS_FLAGS=(--tls-self-signed); export WIRESPEED_TLS=1; fi
taskset -c 0 "$WS" serve "$W/data" --listen 127.0.0.1:0 --no-fsync "${TLS_FLAGS[@]}" >"$W/addr" 2>"$W/log" &
SERVER=$!
PIDS+=("$SERVER")
for _ in $(seq 100); do grep -q listening "$W/addr" 2>/dev/null && break; sleep 0.05; done
PORT=$(sed -n 's/^listening on https\{0,1\}:\/\/127.0.0.1://p' "$W/addr")
rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$SERVER/status"; }
# The server's established connections.
conns() { ss -Htn state established "( sport = :$PORT )" | wc -l; }

# Each phase uploads new files (PREFIX0.bin …), so both create, never replace.
client() { taskset -c 1 python3 "$PY" client "$PORT" "$GETS" "$UPLOADS" $((UPLOAD_MIB << 20)) "$W/data/small.txt" "$1"; }

log "idle phase"
RSS_START=$(rss)
IDLE=$(client idle)
RSS_IDLE=$(rss)

log "slow phase: $SLOW dribbling connections for ${SLOW_SECS}s"
SLOW_START=$(date +%s.%N)
taskset -c "${SLOW_CPU:-1}" python3 "$PY" slow "$PORT" "$SLOW" 5 "$SLOW_SECS" >"$W/slow.json" &
DRIBBLE=$!
PIDS+=("$DRIBBLE")
# Wait until (nearly) all of them are open in the server.
for _ in $(seq 200); do (($(conns) >= SLOW)) && break; sleep 0.05; done
FDS=$(conns)
RSS_SLOW=$(rss)
LOADED=$(client loaded)
RSS_AFTER=$(rss)
# Once more inside the head timeout's first wave: the first bytes went out
# over 2 s from the dribblers' start, so 408s, lingering closes and
# reconnects run from 10 to 12 s (and the closes 2 s longer).
sleep "$(awk -v t="$SLOW_START" -v now="$(date +%s.%N)" 'BEGIN {d = t + 10.5 - now; print (d > 0 ? d : 0)}')"
BURST=$(client burst)
wait "$DRIBBLE"
SLOWSTATS=$(cat "$W/slow.json")
# Each upload stored in full.
for f in idle loaded burst; do
    for i in $(seq 0 $((UPLOADS - 1))); do
        [[ $(stat -c %s "$W/data/$f$i.bin") == $((UPLOAD_MIB << 20)) ]] || { log "$f$i.bin has the wrong size"; exit 1; }
    done
done

python3 - "$IDLE" "$LOADED" "$BURST" "$SLOWSTATS" <<PYEOF
import json, sys
idle, loaded, burst, slow = (json.loads(a) for a in sys.argv[1:5])
print("| client | phase | p50 | p99 | max | p99 / idle p99 |")
print("|---|---|---|---|---|---|")
for k, name in (("get_ms", "GET 13 B x $GETS (ms)"), ("put_ms", "PUT $UPLOAD_MIB MiB x $UPLOADS (ms)")):
    for phase, r in (("idle", idle), ("$SLOW slow open", loaded), ("$SLOW slow timing out", burst)):
        x = r[k]
        print(f"| {name} | {phase} | {x['p50']} | {x['p99']} | {x['max']} | {x['p99'] / idle[k]['p99']:.2f}x |")
print()
print(f"server RSS: {float('$RSS_START'):.1f} MiB at start, {float('$RSS_IDLE'):.1f} MiB after the idle phase, "
      f"{float('$RSS_SLOW'):.1f} MiB with the slow connections open ($FDS connections), "
      f"{float('$RSS_AFTER'):.1f} MiB after the loaded phase")
print(f"slow connections: {slow['closed']} closed by the server ({slow['status_408']} with 408), "
      f"lifetime min/p50/max {slow['lifetime_s']['min']}/{slow['lifetime_s']['p50']}/{slow['lifetime_s']['max']} s, "
      f"at most {slow['peak']} open at once, {slow['connect_errors']} connect errors")
PYEOF
