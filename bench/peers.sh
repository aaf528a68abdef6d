#!/usr/bin/env bash
# bench/peers.sh — wirespeed next to nginx on loopback, measured in one run,
# interleaved (round 1: wirespeed, nginx; round 2: …) so both see the same
# machine state, medians over ROUNDS. Not a test: prints a markdown table.
#
#   bash bench/peers.sh            # ROUNDS=3 by default; ~3–6 minutes
#   ROUNDS=5 KEEP=1 bash bench/peers.sh
#
# Measures: GET 1 GiB (wirespeed as shipped, and with --file-send sendfile);
# GET 20 MiB x 20 on one keep-alive connection; PUT
# 1 GiB with curl -T (wirespeed as shipped — fsync before rename — and with
# --no-fsync, which is what nginx's DAV module does); the JSON listing of a
# 100,000-entry directory vs nginx's JSON autoindex vs find(1); and iperf3's
# loopback TCP ceiling. MB = 10^6 bytes.
#
# Needs root for apt-get (nginx, iperf3 are installed if missing) and nginx's
# `user root;`. Everything else lives in a temp dir, removed at the end
# unless KEEP=1.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
BENCH=peers
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

need() { # need CMD PACKAGE
    if ! command -v "$1" >/dev/null 2>&1; then
        log "installing $2"
        if [[ -z "${APT_UPDATED:-}" ]]; then apt-get update -qq >&2; APT_UPDATED=1; fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2
    fi
}
need nginx nginx
need iperf3 iperf3
need curl curl
need python3 python3
# Debian's packaged nginx starts a system instance on :80; we don't use it.
if nginx -V 2>&1 | grep -q -- '--with-http_dav_module'; then :; else
    log "warning: this nginx lacks http_dav_module; its PUT row will fail"
fi

log "building wirespeed (release)"
(cd "$REPO" && cargo build --release -q -p wirespeed)
WS="$REPO/target/release/wirespeed"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mb() { awk -v b="$1" 'BEGIN {printf "%.0f", b/1e6}'; }

# ---- data ------------------------------------------------------------
DATA=$W/data
mkdir -p "$DATA/list" "$DATA/up" "$W/ngtmp"
log "creating test data (1 GiB, 20 MiB, 100,000-entry directory)"
head -c $((1 << 30)) /dev/urandom >"$DATA/big.bin"
head -c $((20 << 20)) /dev/urandom >"$DATA/m20.bin"
(cd "$DATA/list" && seq -f 'entry-%06g.dat' 0 99999 | xargs touch)
cp "$DATA/big.bin" "$W/upload-src.bin"

# ---- servers ---------------------------------------------------------
start_ws() { # name extra-args...
    local name=$1
    shift
    "$WS" serve "$DATA" --listen 127.0.0.1:0 "$@" >"$W/$name.addr" 2>"$W/$name.log" &
    PIDS+=($!)
    for _ in $(seq 100); do grep -q listening "$W/$name.addr" 2>/dev/null && break; sleep 0.05; done
    sed 's/^listening on //' "$W/$name.addr"
}
WS_URL=$(start_ws ws)
WSNF_URL=$(start_ws ws-nofsync --no-fsync)
WSSF_URL=$(start_ws ws-sendfile --file-send sendfile)

NG_PORT=$(free_port)
cat >"$W/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $W/nginx.pid;
error_log $W/nginx-error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    default_type application/octet-stream;
    client_body_temp_path $W/ngtmp/body;
    proxy_temp_path $W/ngtmp/proxy;
    fastcgi_temp_path $W/ngtmp/fastcgi;
    uwsgi_temp_path $W/ngtmp/uwsgi;
    scgi_temp_path $W/ngtmp/scgi;
    server {
        listen 127.0.0.1:$NG_PORT;
        root $DATA;
        client_max_body_size 0;
        location / {
            dav_methods PUT;
            create_full_put_path on;
        }
        location /list/ {
            autoindex on;
            autoindex_format json;
        }
    }
}
EOF
nginx -e "$W/nginx-error.log" -c "$W/nginx.conf" -g 'daemon off;' &
PIDS+=($!)
NG_URL="http://127.0.0.1:$NG_PORT"
for _ in $(seq 100); do curl -s -o /dev/null "$NG_URL/m20.bin" && break; sleep 0.05; done

# Sanity: both serve the same bytes and the same listing size.
for u in "$WS_URL" "$NG_URL"; do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "$u/m20.bin") == 200 ]] || { log "$u does not serve"; exit 1; }
done

# ---- measurements ----------------------------------------------------
declare -A R # R[test,server] = newline-separated samples

add() { R[$1,$2]+="$3"$'\n'; }

# Every timed operation starts after `sync`: an earlier upload leaves up to
# 1 GiB of dirty pages whose write-back would otherwise land on whichever
# test runs next (it made GET samples bimodal).
get_big() { sync; curl -sS -o /dev/null -w '%{speed_download}' "$1/big.bin"; }
get_20x20() {
    local args=() t0 t1
    for _ in $(seq 20); do args+=(-o /dev/null "$1/m20.bin"); done
    sync
    t0=$(date +%s.%N)
    curl -sS "${args[@]}"
    t1=$(date +%s.%N)
    awk -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.0f", 20 * 20 * 1048576 / (t1 - t0)}'
}
put_big() { # url name
    # Same page-cache state for every server: dirty and free 1 GiB first.
    sync
    head -c $((1 << 30)) /dev/zero >"$W/scratch.bin"
    rm -f "$W/scratch.bin"
    local s
    s=$(curl -sS -T "$W/upload-src.bin" -o /dev/null -w '%{speed_upload}' "$1/up/$2.bin")
    rm -f "$DATA/up/$2.bin"
    echo "$s"
}
list_time() { sync; curl -sS -o "$W/list.$2.json" -w '%{time_total}' "$1"; }
find_time() {
    local t0 t1
    sync
    t0=$(date +%s.%N)
    find "$DATA/list" -maxdepth 1 -printf '%f %s %T@\n' >/dev/null
    t1=$(date +%s.%N)
    awk -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.4f", t1 - t0}'
}

# iperf3's loopback TCP ceiling, measured inside every round like the rest.
iperf_once() {
    local port
    port=$(free_port)
    iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
    local pid=$!
    sleep 0.3
    iperf3 -c 127.0.0.1 -p "$port" -t 3 -J | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8))'
    wait "$pid" 2>/dev/null || true
}

for r in $(seq "$ROUNDS"); do
    log "round $r/$ROUNDS"
    add get1g ws "$(get_big "$WS_URL")"
    add get1g ng "$(get_big "$NG_URL")"
    add get1g wssf "$(get_big "$WSSF_URL")"
    add iperf x "$(iperf_once)"
    add get20 ws "$(get_20x20 "$WS_URL")"
    add get20 ng "$(get_20x20 "$NG_URL")"
    add put ws "$(put_big "$WS_URL" ws)"
    add put wsnf "$(put_big "$WSNF_URL" wsnf)"
    add put ng "$(put_big "$NG_URL" ng)"
    add list ws "$(list_time "$WS_URL/list/?format=json" ws)"
    add list ng "$(list_time "$NG_URL/list/" ng)"
    add list find "$(find_time)"
done

# Listings are complete (100,000 entries) on both sides.
for s in ws ng; do
    n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$W/list.$s.json")
    [[ "$n" == 100000 ]] || log "warning: $s listing has $n entries"
done


med() { printf '%s' "${R[$1,$2]}" | median; }

G1W=$(med get1g ws) G1N=$(med get1g ng) G1S=$(med get1g wssf) IPERF=$(med iperf x)
G2W=$(med get20 ws) G2N=$(med get20 ng)
PW=$(med put ws) PWNF=$(med put wsnf) PN=$(med put ng)
LW=$(med list ws) LN=$(med list ng) LF=$(med list find)

echo
echo "### wirespeed vs nginx, loopback, $(nproc) CPUs, median of $ROUNDS interleaved rounds ($(date -u +%Y-%m-%d))"
echo
echo "| test | wirespeed | nginx | wirespeed / nginx | note |"
echo "|---|---:|---:|---:|---|"
echo "| GET 1 GiB (MB/s) | $(mb "$G1W") | $(mb "$G1N") | $(ratio "$G1W" "$G1N") | wirespeed default (--file-send auto: copy loop for a loopback peer); nginx sendfile + tcp_nopush |"
echo "| GET 1 GiB (MB/s), wirespeed --file-send sendfile | $(mb "$G1S") | $(mb "$G1N") | $(ratio "$G1S" "$G1N") | sendfile + TCP_CORK both: what a non-loopback peer gets |"
echo "| GET 20 MiB x 20, one keep-alive connection (MB/s) | $(mb "$G2W") | $(mb "$G2N") | $(ratio "$G2W" "$G2N") | |"
echo "| PUT 1 GiB, curl -T (MB/s), wirespeed default: fsync + sha-256 | $(mb "$PW") | $(mb "$PN") | $(ratio "$PW" "$PN") | nginx DAV does not fsync or hash |"
echo "| PUT 1 GiB, curl -T (MB/s), wirespeed --no-fsync (sha-256 still) | $(mb "$PWNF") | $(mb "$PN") | $(ratio "$PWNF" "$PN") | like for like on durability |"
printf '| JSON listing, 100,000 entries (ms) | %.0f | %.0f | %s (time: lower is better) | find -printf: %.0f ms |\n' \
    "$(awk -v t="$LW" 'BEGIN{print t*1000}')" "$(awk -v t="$LN" 'BEGIN{print t*1000}')" "$(ratio "$LW" "$LN")" "$(awk -v t="$LF" 'BEGIN{print t*1000}')"
echo "| iperf3 loopback TCP ceiling (MB/s) | $(mb "$IPERF") | | | one stream, 3 s, every round |"
echo
echo "GET 1 GiB as a share of the iperf3 ceiling: wirespeed $(ratio "$G1W" "$IPERF"), nginx $(ratio "$G1N" "$IPERF")."
echo "Samples (bytes/s or s): $(for k in "${!R[@]}"; do printf '%s=[%s] ' "$k" "$(printf '%s' "${R[$k]}" | tr '\n' ' ' | sed 's/ $//')"; done)"
