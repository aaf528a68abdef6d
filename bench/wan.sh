#!/usr/bin/env bash
# bench/wan.sh — transfers across an emulated WAN link (bench/wan-lab.sh:
# two network namespaces joined by a user-space forwarder with rate,
# one-way delay, random loss and a router buffer; both sides CUBIC by
# default). Every row of a profile runs in the same run, one after another,
# for SECS seconds each; its rate is the bytes the receiving side's link
# device took in over that time (headers and TCP overhead included alike in
# every row, the ceiling's too), so rows of different tools compare. Not a
# test: prints a markdown table per profile, ratios to the ceiling.
#
#   bash bench/wan.sh                               # all profiles, all rows (~15 min)
#   PROFILES="wan200 phone" bash bench/wan.sh
#   ROWS='ceiling|curl|wirespeed' bash bench/wan.sh # rows whose name matches
#   WS=/path/to/wirespeed SECS=15 bash bench/wan.sh
#
# Profiles (rate each way / round trip / random loss each way; the router
# buffer holds one round trip at the link rate):
#   wan200  200 Mbit/s / 100 ms / 0.1%   (across an ocean)
#   phone    50 Mbit/s /  40 ms / 1%     (a phone network)
#   fibre  1000 Mbit/s /  20 ms / 0      (a good fibre line; a 2-core machine
#                                          forwards only ~300-400 Mbit/s: the
#                                          ceiling row shows what it reached)
# Rows: the ceiling (`iperf3 -P 8 -C bbr`), iperf3 one stream CUBIC and BBR,
# iperf3 -P 6 CUBIC (a browser's share over HTTP/1.1); GET: curl from
# wirespeed, `wirespeed get`, curl from nginx, `aria2c -x8` from nginx,
# rclone `:http:` from wirespeed; PUT: `curl -T` to wirespeed, `wirespeed
# put`, rclone `:webdav:` to wirespeed, copyparty's `u2c.py -j 8` to
# copyparty. Downloads go A→B, uploads B→A. Needs root (namespaces, TUN).
set -euo pipefail
BENCH=wan
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=bench/wan-lab.sh
. "$REPO/bench/wan-lab.sh"
trap 'wan_down; cleanup' EXIT
PROFILES=${PROFILES:-wan200 phone fibre}
ROWS=${ROWS:-.}
SECS=${SECS:-12}
declare -A PROFILE=([wan200]="200 100 0.1" [phone]="50 40 1" [fibre]="1000 20 0")
declare -A LABEL=([wan200]="200 Mbit/s, 100 ms, 0.1% loss" [phone]="50 Mbit/s, 40 ms, 1% loss (phone)" [fibre]="1 Gbit/s, 20 ms, no loss")

for t in iperf3 nginx curl aria2c rclone; do
    command -v "$t" >/dev/null || { apt-get install -y -qq "$t" >/dev/null 2>&1 || log "no $t: its row is skipped"; }
done
python3 -c 'import copyparty' 2>/dev/null || pip install --break-system-packages -q copyparty >/dev/null 2>&1 || log "no copyparty: its row is skipped"
if [[ -z ${WS:-} ]]; then
    (cd "$REPO" && cargo build --release -q -p wirespeed) >&2
    WS=$REPO/target/release/wirespeed
fi

mkdir -p "$W/srv/up" "$W/cli" "$W/ng" "$W/cp"
# Sparse: reading it costs nothing, so the link is the only limit.
truncate -s 2G "$W/srv/big.bin"
truncate -s 2G "$W/cli/big.bin"
ln -f "$W/srv/big.bin" "$W/ng/big.bin" 2>/dev/null || truncate -s 2G "$W/ng/big.bin"

rx() { # NS DEV: bytes the device received
    ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_bytes"
}

# row NAME DIRECTION(down|up) CMD…: runs CMD for SECS seconds (killed then),
# prints MB/s received by the far side.
row() {
    local name=$1 dir=$2 ns dev before after t0 t1
    shift 2
    if [[ $dir == down ]]; then ns=$WAN_B dev=wsb0; else ns=$WAN_A dev=wsa0; fi
    before=$(rx "$ns" "$dev")
    t0=$(date +%s.%N)
    timeout -k 3 -s INT "$SECS" "$@" >"$W/row.out" 2>&1 || true
    t1=$(date +%s.%N)
    after=$(rx "$ns" "$dev")
    awk -v b="$before" -v a="$after" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.1f", (a-b)/(t1-t0)/1e6}'
    sleep 1 # the queue drains before the next row
}

nginx_conf() {
    cat <<EOF
user root;
worker_processes 1;
pid $W/ng.pid;
error_log $W/ng-error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    default_type application/octet-stream;
    client_body_temp_path $W/ngtmp/body;
    proxy_temp_path $W/ngtmp/proxy;
    fastcgi_temp_path $W/ngtmp/fastcgi;
    uwsgi_temp_path $W/ngtmp/uwsgi;
    scgi_temp_path $W/ngtmp/scgi;
    server { listen $WAN_IP_A:8081; root $W/ng; }
}
EOF
}
mkdir -p "$W/ngtmp"
nginx_conf >"$W/ng.conf"

RESULT="$W/result.md"
: >"$RESULT"
for p in $PROFILES; do
    read -r rate rtt loss <<<"${PROFILE[$p]}"
    log "profile $p: ${LABEL[$p]}"
    wan_up "$rate" "$rtt" "$loss"
    SRV=()
    in_a "$WS" serve "$W/srv" --no-fsync --allow-upload --listen "$WAN_IP_A:8080" --allow-host '*' >"$W/ws.out" 2>"$W/ws.err" &
    SRV+=($!)
    in_a nginx -e "$W/ng-error.log" -c "$W/ng.conf" -g 'daemon off;' &
    SRV+=($!)
    if python3 -c 'import copyparty' 2>/dev/null; then
        in_a python3 -m copyparty -q -i "$WAN_IP_A" -p 3923 -v "$W/cp::rw" >"$W/cp.log" 2>&1 &
        SRV+=($!)
    fi
    in_a iperf3 -s -B "$WAN_IP_A" -p 5201 >/dev/null 2>&1 &
    SRV+=($!)
    PIDS+=("${SRV[@]}")
    wait_listening "$W/ws.out" >/dev/null
    sleep 1
    WSU="http://$WAN_IP_A:8080"
    NGU="http://$WAN_IP_A:8081"
    declare -A MBS=()
    ORDER=()
    add() { # name dir cmd…
        local name=$1
        [[ $name =~ $ROWS ]] || return 0
        log "  $name"
        MBS[$name]=$(row "$@")
        ORDER+=("$name")
        rm -rf "$W"/srv/up/* "$W"/srv/up/.wirespeed* "$W"/cli/dl* "$W"/cli/.wirespeed* "$W"/cp/*.bin 2>/dev/null || true
    }
    ip3=(ip netns exec "$WAN_B" iperf3 -c "$WAN_IP_A" -p 5201 -R -t "$((SECS + 5))")
    add "ceiling: iperf3 -P 8 -C bbr" down "${ip3[@]}" -P 8 -C bbr
    add "iperf3, one stream, CUBIC" down "${ip3[@]}" -C cubic
    add "iperf3, one stream, BBR" down "${ip3[@]}" -C bbr
    add "iperf3 -P 6, CUBIC (a browser's share)" down "${ip3[@]}" -P 6 -C cubic
    add "GET curl from wirespeed" down ip netns exec "$WAN_B" curl -s -o /dev/null "$WSU/big.bin"
    add "GET wirespeed get" down ip netns exec "$WAN_B" "$WS" get -q "$WSU/big.bin" -o "$W/cli/dl.bin"
    add "GET curl from nginx" down ip netns exec "$WAN_B" curl -s -o /dev/null "$NGU/big.bin"
    add "GET aria2c -x8 from nginx" down ip netns exec "$WAN_B" aria2c -q -x8 -s8 -k1M --file-allocation=none \
        --allow-overwrite=true -d "$W/cli" -o dl-aria.bin "$NGU/big.bin"
    add "GET rclone :http: from wirespeed" down ip netns exec "$WAN_B" rclone copy -q --http-url "$WSU/" \
        ":http:big.bin" "$W/cli/dl-rclone/"
    add "PUT curl -T to wirespeed" up ip netns exec "$WAN_B" curl -s -o /dev/null -T "$W/cli/big.bin" "$WSU/up/curl.bin"
    add "PUT wirespeed put" up ip netns exec "$WAN_B" "$WS" put -q "$W/cli/big.bin" "$WSU/up/ws.bin"
    add "PUT rclone :webdav: to wirespeed" up ip netns exec "$WAN_B" rclone copyto -q --webdav-url "$WSU/" \
        "$W/cli/big.bin" ":webdav:up/rclone.bin"
    if python3 -c 'import copyparty' 2>/dev/null; then
        U2C=$(python3 -c 'import copyparty, os; print(os.path.join(os.path.dirname(copyparty.__file__), "web", "a", "u2c.py"))')
        [[ -f $U2C ]] || U2C=$(find / -name u2c.py -path '*copyparty*' 2>/dev/null | head -1)
        if [[ -n $U2C ]]; then
            add "PUT copyparty u2c.py -j 8 to copyparty" up ip netns exec "$WAN_B" python3 "$U2C" -j 8 \
                "http://$WAN_IP_A:3923/" "$W/cli/big.bin"
        fi
    fi
    ceiling=${MBS["ceiling: iperf3 -P 8 -C bbr"]:-}
    {
        echo
        echo "### ${LABEL[$p]}"
        echo
        echo "| row | MB/s | of the ceiling |"
        echo "|---|---:|---:|"
        for name in "${ORDER[@]}"; do
            echo "| $name | ${MBS[$name]} | $(ratio "${MBS[$name]}" "${ceiling:-0}") |"
        done
    } | tee -a "$RESULT"
    for s in "${SRV[@]}"; do kill "$s" 2>/dev/null || true; done
    wait "${SRV[@]}" 2>/dev/null || true
    wan_down
done
echo
echo; echo "${SECS} s per row; $("$WS" --version 2>/dev/null || echo wirespeed)"
