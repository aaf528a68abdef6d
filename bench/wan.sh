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
#   lan    LAN_RATE (300) Mbit/s / 20 ms / 0  (no loss at the highest rate
#                                          the forwarder calibrates to here)
# Rows: the ceiling (`iperf3 -P 8 -C bbr`), iperf3 one stream CUBIC and BBR,
# iperf3 -P 6 CUBIC down and up (a browser's share over HTTP/1.1); GET: curl
# from wirespeed, `wirespeed get`, curl from nginx, `aria2c -x8` from nginx,
# rclone `:http:` from wirespeed; PUT: `curl -T` to wirespeed, `wirespeed
# put`, `wirespeed put --congestion-control cubic` with 1 connection, adaptive
# parallel tus parts and `--connections 8` (a sender that cannot choose BBR),
# rclone `:webdav:` to wirespeed, the folder page in headless Chromium
# (bench/wan_page_upload.py: 6 tus parts; its clock starts when the file is
# chosen), copyparty's `u2c.py -j 8` to copyparty (a CP_MB = 1024 MiB random
# file; its clock starts at its first bytes, after it hashed the file: that
# wait is its own column). ROUNDS (1) repeats the rows, interleaved; the
# table has the median and every sample. Downloads go A→B, uploads B→A.
# Needs root (namespaces, TUN).
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
ROUNDS=${ROUNDS:-1}
LAN_RATE=${LAN_RATE:-300}
CP_MB=${CP_MB:-1024}
declare -A PROFILE=([wan200]="200 100 0.1" [phone]="50 40 1" [fibre]="1000 20 0" [lan]="$LAN_RATE 20 0")
declare -A LABEL=([wan200]="200 Mbit/s, 100 ms, 0.1% loss" [phone]="50 Mbit/s, 40 ms, 1% loss (phone)"
    [fibre]="1 Gbit/s, 20 ms, no loss" [lan]="$LAN_RATE Mbit/s, 20 ms, no loss")

# Command, then its Debian package where the names differ.
for t in iperf3 nginx curl aria2c:aria2 rclone; do
    command -v "${t%%:*}" >/dev/null || { apt-get install -y -qq "${t#*:}" >/dev/null 2>&1 || log "no ${t%%:*}: its row is skipped"; }
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
# The page's upload: a File of 2 GiB (sparse; Chromium reads it at no cost).
truncate -s 2G "$W/cli/page.bin"
PAGE_OK=
python3 -c 'import playwright' 2>/dev/null && [[ -x ${CHROMIUM:-/usr/bin/chromium} ]] && PAGE_OK=1 \
    || log "no playwright or chromium: the page's row is skipped"
# copyparty's uploader hashes every chunk and the server skips chunks it
# has (zeros would be one chunk): random bytes, CP_MB MiB.
U2C=
if python3 -c 'import copyparty' 2>/dev/null; then
    U2C=$(python3 -c 'import copyparty, os; print(os.path.join(os.path.dirname(copyparty.__file__), "web", "a", "u2c.py"))')
    [[ -f $U2C ]] || U2C=$(find / -xdev -name u2c.py -path '*copyparty*' 2>/dev/null | head -1)
    [[ -n $U2C ]] && head -c "$((CP_MB << 20))" /dev/urandom >"$W/cli/rand.bin"
fi

rx() { # NS DEV: bytes the device received
    ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_bytes"
}

# row NAME DIRECTION(down|up) CMD…: runs CMD for SECS seconds (interrupted
# then), prints "MB/s received by the far side" over those seconds (or until
# CMD ended, if sooner; what CMD does after the interrupt, such as saving
# what arrived, is not transfer time) and the seconds waited before the
# clock started. With ROW_START=file the clock starts when CMD creates
# $W/ready (Chromium's start and the page's load are not the transfer);
# with ROW_START=traffic when the far side has taken in 256 KiB (copyparty's
# u2c.py hashes the whole file before its first byte: that wait is
# reported apart from the rate).
row() {
    local name=$1 dir=$2 ns dev before after t0 t1 tl pid base _
    shift 2
    if [[ $dir == down ]]; then ns=$WAN_B dev=$WAN_DEV_B; else ns=$WAN_A dev=$WAN_DEV_A; fi
    if [[ -z ${ROW_START:-} ]]; then
        before=$(rx "$ns" "$dev")
        t0=$(date +%s.%N)
        tl=$t0
        "$@" >"$W/row.out" 2>&1 &
        pid=$!
        local end=$(($(date +%s%N) + SECS * 1000000000))
        while kill -0 "$pid" 2>/dev/null && (($(date +%s%N) < end)); do
            sleep 0.02
        done
    else
        rm -f "$W/ready"
        tl=$(date +%s.%N)
        base=$(rx "$ns" "$dev")
        "$@" >"$W/row.out" 2>&1 &
        pid=$!
        for _ in $(seq 3000); do # at most 300 s
            if [[ $ROW_START == file ]]; then
                [[ -e $W/ready ]] && break
            elif (($(rx "$ns" "$dev") - base > 262144)); then
                break
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        before=$(rx "$ns" "$dev")
        t0=$(date +%s.%N)
        sleep "$SECS"
    fi
    t1=$(date +%s.%N)
    after=$(rx "$ns" "$dev")
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    # Whatever the row started in the client's namespace stops here (a
    # browser outliving its driver would go on sending into the next row).
    ip netns pids "$WAN_B" | xargs -r kill -KILL 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    awk -v b="$before" -v a="$after" -v t0="$t0" -v t1="$t1" -v tl="$tl" \
        'BEGIN {printf "%.2f %.1f", (a-b)/(t1-t0)/1e6, t0-tl}'
    settle
}

# Until the link is quiet both ways (at most 30 s): a killed client's
# socket still sends what its buffer holds (megabytes at 100 ms), which
# would be counted in the next row.
settle() {
    local a b a2 b2 _
    for _ in $(seq 60); do
        a=$(rx "$WAN_A" "$WAN_DEV_A") b=$(rx "$WAN_B" "$WAN_DEV_B")
        sleep 0.5
        a2=$(rx "$WAN_A" "$WAN_DEV_A") b2=$(rx "$WAN_B" "$WAN_DEV_B")
        ((a2 - a < 32768 && b2 - b < 32768)) && return 0
    done
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
    # Rows cut uploads of parts mid-way and remove their files behind the
    # server's back: without a token, the server's count of one address's
    # unfinished uploads would reach its limit (100) and refuse the rest.
    ip netns exec "$WAN_A" "$WS" serve "$W/srv" --no-fsync --allow-upload --listen "$WAN_IP_A:8080" --allow-host '*' \
        --max-partial-uploads-per-client 100000 >"$W/ws.out" 2>"$W/ws.err" &
    SRV+=($!)
    ip netns exec "$WAN_A" nginx -e "$W/ng-error.log" -c "$W/ng.conf" -g 'daemon off;' &
    SRV+=($!)
    if python3 -c 'import copyparty' 2>/dev/null; then
        ip netns exec "$WAN_A" python3 -m copyparty -q -i "$WAN_IP_A" -p 3923 -v "$W/cp::rw" >"$W/cp.log" 2>&1 &
        SRV+=($!)
    fi
    ip netns exec "$WAN_A" iperf3 -s -B "$WAN_IP_A" -p 5201 >/dev/null 2>&1 &
    SRV+=($!)
    PIDS+=("${SRV[@]}")
    wait_listening "$W/ws.out" >/dev/null
    sleep 1
    WSU="http://$WAN_IP_A:8080"
    NGU="http://$WAN_IP_A:8081"
    declare -A MBS=() WAITS=()
    ORDER=()
    add() { # name dir cmd…
        local name=$1 out
        [[ $name =~ $ROWS ]] || return 0
        log "  $name"
        out=$(row "$@")
        [[ -n ${MBS[$name]:-} ]] || ORDER+=("$name")
        MBS[$name]+="${out% *} "
        WAITS[$name]+="${out#* } "
        cp "$W/row.out" "$W/last-row-$p.out" 2>/dev/null || true
        rm -rf "$W"/srv/up/* "$W"/srv/up/.wirespeed* "$W"/srv/.wirespeed-uploads/* "$W"/cli/dl* "$W"/cli/.wirespeed* \
            "$W"/cp/*.bin "$W"/cp/.hist "$W"/xdg 2>/dev/null || true
    }
    ip3=(ip netns exec "$WAN_B" iperf3 -c "$WAN_IP_A" -p 5201 -t "$((SECS + 5))")
    for round in $(seq "$ROUNDS"); do
        ((ROUNDS == 1)) || log " round $round/$ROUNDS"
        add "ceiling: iperf3 -P 8 -C bbr" down "${ip3[@]}" -R -P 8 -C bbr
        add "iperf3, one stream, CUBIC" down "${ip3[@]}" -R -C cubic
        add "iperf3, one stream, BBR" down "${ip3[@]}" -R -C bbr
        add "iperf3 -P 6, CUBIC (a browser's share)" down "${ip3[@]}" -R -P 6 -C cubic
        add "iperf3 -P 6 up, CUBIC (a browser's share, its direction)" up "${ip3[@]}" -P 6 -C cubic
        add "GET curl from wirespeed" down ip netns exec "$WAN_B" curl -s -o /dev/null "$WSU/big.bin"
        add "GET wirespeed get" down ip netns exec "$WAN_B" "$WS" get -q "$WSU/big.bin" -o "$W/cli/dl.bin"
        add "GET curl from nginx" down ip netns exec "$WAN_B" curl -s -o /dev/null "$NGU/big.bin"
        add "GET aria2c -x8 from nginx" down ip netns exec "$WAN_B" aria2c -q -x8 -s8 -k1M --file-allocation=none \
            --allow-overwrite=true -d "$W/cli" -o dl-aria.bin "$NGU/big.bin"
        add "GET rclone :http: from wirespeed" down ip netns exec "$WAN_B" rclone copy -q --http-url "$WSU/" \
            ":http:big.bin" "$W/cli/dl-rclone/"
        add "PUT curl -T to wirespeed" up ip netns exec "$WAN_B" curl -s -o /dev/null -T "$W/cli/big.bin" "$WSU/up/curl.bin"
        # Each `put` row its own state folder (removed after it): a second
        # round would otherwise continue the first round's upload, whose
        # parts the cleanup below took from under the server.
        add "PUT wirespeed put" up ip netns exec "$WAN_B" env XDG_STATE_HOME="$W/xdg" "$WS" put -q "$W/cli/big.bin" "$WSU/up/ws.bin"
        add "PUT wirespeed put --protocol put" up ip netns exec "$WAN_B" "$WS" put -q --protocol put "$W/cli/big.bin" "$WSU/up/ws-put.bin"
        # The client forced to CUBIC, as a sender that cannot pick BBR: only
        # parallel tus parts fill the link then.
        wsput=(ip netns exec "$WAN_B" env XDG_STATE_HOME="$W/xdg" "$WS" put -q --congestion-control cubic)
        add "PUT wirespeed put, CUBIC, --connections 1" up "${wsput[@]}" --connections 1 "$W/cli/big.bin" "$WSU/up/ws-c1.bin"
        add "PUT wirespeed put, CUBIC, adaptive parts" up "${wsput[@]}" "$W/cli/big.bin" "$WSU/up/ws-ca.bin"
        add "PUT wirespeed put, CUBIC, --connections 8" up "${wsput[@]}" --connections 8 "$W/cli/big.bin" "$WSU/up/ws-c8.bin"
        add "PUT rclone :webdav: to wirespeed" up ip netns exec "$WAN_B" rclone copyto -q --webdav-url "$WSU/" \
            "$W/cli/big.bin" ":webdav:up/rclone.bin"
        if [[ -n $PAGE_OK ]]; then
            ROW_START=file add "PUT the page in Chromium (6 tus parts, the client's CUBIC)" up \
                ip netns exec "$WAN_B" python3 "$REPO/bench/wan_page_upload.py" "$WSU/up/" "$W/cli/page.bin" "$W/ready"
        fi
        if [[ -n $U2C ]]; then
            ROW_START=traffic add "PUT copyparty u2c.py -j 8 to copyparty" up ip netns exec "$WAN_B" python3 "$U2C" -j 8 \
                "http://$WAN_IP_A:3923/" "$W/cli/rand.bin"
            # Ours on the same bytes and the same clock (from the first
            # 256 KiB), so the two rows compare like for like.
            ROW_START=traffic add "PUT wirespeed put, the same file and clock as copyparty's" up \
                ip netns exec "$WAN_B" env XDG_STATE_HOME="$W/xdg" "$WS" put -q "$W/cli/rand.bin" "$WSU/up/ws-rand.bin"
        fi
    done
    ceiling=$(tr ' ' '\n' <<<"${MBS["ceiling: iperf3 -P 8 -C bbr"]:-}" | grep . | median)
    {
        echo
        echo "### ${LABEL[$p]}"
        echo
        echo "| row | MB/s (median) | of the ceiling | samples | seconds before the clock started |"
        echo "|---|---:|---:|---|---|"
        for name in "${ORDER[@]}"; do
            m=$(tr ' ' '\n' <<<"${MBS[$name]}" | grep . | median)
            echo "| $name | $m | $(ratio "$m" "${ceiling:-0}") | ${MBS[$name]% } | ${WAITS[$name]% } |"
        done
    } | tee -a "$RESULT"
    for s in "${SRV[@]}"; do kill "$s" 2>/dev/null || true; done
    wait "${SRV[@]}" 2>/dev/null || true
    wan_down
done
echo
echo; echo "${SECS} s per row, ${ROUNDS} round(s); $("$WS" --version 2>/dev/null || echo wirespeed); load: $(uptime)"
