#!/usr/bin/env bash
# bench/wan-put.sh — `wirespeed put` variants and builds interleaved on one
# emulated link (bench/wan-lab.sh), for before/after questions bench/wan.sh
# (one build, every peer) does not answer. Per run: MB/s the server's link
# device took in over SECS, the established connections in the client's
# namespace half-way, the server's CPU ticks and the client's user/system
# CPU seconds. Each run has its own state folder and target name, so no run
# continues another's upload. Needs root (namespaces, TUN).
#
#   BASE=/path/old NEW=/path/new VARIANTS="base|;new|;new|--protocol put" bash bench/wan-put.sh
#   RATE=200 RTT=100 LOSS=0.1 SECS=30 VARIANTS="base|--congestion-control cubic;new|--congestion-control cubic" …
#
# VARIANTS: `;`-separated `BUILD|put arguments` (BUILD: base or new);
# RATE (200) Mbit/s, RTT (20) ms, LOSS (0) %, SECS (12), ROUNDS (2). The
# server is NEW (`serve --no-fsync`); the file is a sparse 2 GiB one.
set -euo pipefail
BENCH=wan-put
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=bench/wan-lab.sh
. "$REPO/bench/wan-lab.sh"
trap 'wan_down; cleanup' EXIT
NEW=${NEW:?NEW=path of a wirespeed binary}
BASE=${BASE:-$NEW}
VARIANTS=${VARIANTS:-"new|"}
SECS=${SECS:-12}
RATE=${RATE:-200} RTT=${RTT:-20} LOSS=${LOSS:-0}
ROUNDS=${ROUNDS:-2}
mkdir -p "$W/srv/up" "$W/cli"
truncate -s 2G "$W/cli/big.bin"
wan_up "$RATE" "$RTT" "$LOSS"
ip netns exec "$WAN_A" "$NEW" serve "$W/srv" --no-fsync --allow-upload --listen "$WAN_IP_A:8080" \
    --allow-host '*' >"$W/ws.out" 2>"$W/ws.err" &
SRV=$!
PIDS+=("$SRV")
wait_listening "$W/ws.out" >/dev/null
WSU="http://$WAN_IP_A:8080"
rx() { ip netns exec "$WAN_A" cat "/sys/class/net/$WAN_DEV_A/statistics/rx_bytes"; }
settle() {
    local a b _
    for _ in $(seq 60); do
        a=$(rx)
        sleep 0.5
        b=$(rx)
        ((b - a < 32768)) && return 0
    done
}
ticks() { awk '{print $14 + $15}' "/proc/$SRV/stat"; }
IFS=';' read -ra VARS <<<"$VARIANTS"
echo "| round | build | put arguments | MB/s | connections half-way | server CPU ticks | client CPU user, system (s) |"
echo "|---|---|---|---:|---:|---:|---|"
for r in $(seq "$ROUNDS"); do
    for v in "${VARS[@]}"; do
        build=${v%%|*} rest=${v#*|}
        read -ra args <<<"$rest"
        case $build in base) bin=$BASE ;; *) bin=$NEW ;; esac
        before=$(rx) t0=$(date +%s.%N) c0=$(ticks)
        (sleep $((SECS / 2)); ip netns exec "$WAN_B" ss -tn state established dst "$WAN_IP_A" >"$W/ss.txt") &
        sampler=$!
        ip netns exec "$WAN_B" env XDG_STATE_HOME="$W/xdg" /usr/bin/time -o "$W/time" -f "%U, %S" \
            timeout -k 3 -s INT "$SECS" "$bin" put -q "${args[@]}" "$W/cli/big.bin" "$WSU/up/r$r-$RANDOM.bin" \
            >"$W/out" 2>&1 || true
        wait "$sampler" || true
        t1=$(date +%s.%N) after=$(rx) c1=$(ticks)
        conns=$(($(wc -l <"$W/ss.txt") - 1))
        awk -v r="$r" -v b="$build" -v v="${rest:-(default)}" -v x="$before" -v y="$after" -v t0="$t0" -v t1="$t1" \
            -v c="$conns" -v cpu=$((c1 - c0)) -v cc="$(tail -1 "$W/time")" \
            'BEGIN {printf "| %s | %s | %s | %.2f | %s | %d | %s |\n", r, b, v, (y-x)/(t1-t0)/1e6, c, cpu, cc}'
        ip netns pids "$WAN_B" | xargs -r kill -KILL 2>/dev/null || true
        rm -rf "$W/xdg"
        settle
    done
done
echo
echo "$RATE Mbit/s, $RTT ms, $LOSS% loss; $SECS s per run; load: $(uptime)"
