#!/usr/bin/env bash
# bench/smallget.sh — small GETs (13-byte file) in both pairs of the small-GET target:
# no log vs no log and log vs log (wirespeed's access log, stderr to a file;
# nginx `access_log FILE`), for one or more wirespeed builds next to nginx.
# Every server is pinned to CPU 0 (wirespeed `--threads 1`, nginx one
# worker), wrk to CPU 1; rounds interleaved over every server, medians.
#
#   bash bench/smallget.sh                              # this tree's release build
#   BINS="/tmp/ws-before target/release/wirespeed" ROUNDS=7 bash bench/smallget.sh
#   SECS=5 ROUNDS=5 …                                   # defaults
#   NGINX_CACHE=1 …   nginx with open_file_cache (descriptors and stat kept
#                     60 s: it may answer a replaced file's old bytes that
#                     long; wirespeed's kept small files never are)
#
# After the run, each log is checked: lines written = requests answered
# (wrk's count, plus a few in flight when it stopped), so nothing was lost.
set -euo pipefail
BENCH=smallget
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
for c in wrk nginx taskset; do
    command -v "$c" >/dev/null || { log "$c is missing"; exit 1; }
done
if [[ -z "${BINS:-}" ]]; then
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    BINS="$REPO/target/release/wirespeed"
fi
mkdir -p "$W/data"
printf 'hello, world\n' >"$W/data/hello.txt"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

declare -A URL LOGF
ROWS=()
i=0
for bin in $BINS; do
    for lg in off on; do
        name="ws$i-$lg"
        taskset -c 0 "$bin" serve "$W/data" --listen 127.0.0.1:0 --threads 1 --access-log "$lg" \
            >"$W/$name.addr" 2>"$W/$name.log" &
        PIDS+=($!)
        URL[$name]=$(wait_listening "$W/$name.addr")
        LOGF[$name]=$W/$name.log
        ROWS+=("$name")
    done
    log "ws$i = $bin ($(stat -c %s "$bin") bytes)"
    i=$((i + 1))
done
for lg in off on; do
    name="nginx-$lg"
    port=$(free_port)
    mkdir -p "$W/ngtmp-$name"
    if [[ $lg == on ]]; then al="access_log $W/$name.access;"; else al="access_log off;"; fi
    if [[ ${NGINX_CACHE:-0} == 1 ]]; then
        al="$al open_file_cache max=1000 inactive=60s; open_file_cache_valid 60s;"
    fi
    cat >"$W/$name.conf" <<EOF
user root;
worker_processes 1;
pid $W/$name.pid;
error_log $W/$name-error.log warn;
events { worker_connections 1024; }
http {
    $al
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    default_type application/octet-stream;
    client_body_temp_path $W/ngtmp-$name/body;
    proxy_temp_path $W/ngtmp-$name/proxy;
    fastcgi_temp_path $W/ngtmp-$name/fastcgi;
    uwsgi_temp_path $W/ngtmp-$name/uwsgi;
    scgi_temp_path $W/ngtmp-$name/scgi;
    server { listen 127.0.0.1:$port; root $W/data; }
}
EOF
    taskset -c 0 nginx -e "$W/$name-error.log" -c "$W/$name.conf" -g 'daemon off;' &
    PIDS+=($!)
    URL[$name]="http://127.0.0.1:$port"
    LOGF[$name]=$W/$name.access
    for _ in $(seq 100); do curl -s -o /dev/null "${URL[$name]}/hello.txt" && break; sleep 0.05; done
    ROWS+=("$name")
done
for n in "${ROWS[@]}"; do
    [[ $(curl -s "${URL[$n]}/hello.txt") == 'hello, world' ]] || { log "$n does not serve"; exit 1; }
done

declare -A RPS SENT
log "load before: $(uptime)"
for r in $(seq "$ROUNDS"); do
    for n in "${ROWS[@]}"; do
        out=$W/wrk.$n.$r.txt
        taskset -c 1 wrk -t1 -c64 -d"${SECS}s" "${URL[$n]}/hello.txt" >"$out"
        if grep -qE 'Non-2xx|Socket errors' "$out"; then
            log "warning: $n round $r: $(grep -E 'Non-2xx|Socket errors' "$out" | tr -s ' ' | tr '\n' ';')"
        fi
        RPS[$n]+="$(awk '/^Requests\/sec:/ {print $2}' "$out") "
        SENT[$n]=$((${SENT[$n]:-0} + $(awk '/requests in/ {print $1}' "$out")))
    done
done
log "load after: $(uptime)"
# Stop the servers cleanly (SIGTERM) so every buffered log line is written.
for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()

med() { tr ' ' '\n' <<<"${RPS[$1]}" | grep . | median; }
echo
echo "GET 13 bytes, wrk -t1 -c64 -d${SECS}s, server on CPU 0, wrk on CPU 1; median of $ROUNDS interleaved rounds ($(date -u +%Y-%m-%d))"
echo
echo "| server | access log | requests/s | vs nginx, same log setting | each round | log lines / requests |"
echo "|---|---|---:|---:|---|---|"
for n in "${ROWS[@]}"; do
    lg=${n##*-}
    m=$(med "$n")
    ng=$(med "nginx-$lg")
    lines=-
    if [[ $lg == on ]]; then
        lines="$(grep -c 'GET /hello.txt\|"GET"' "${LOGF[$n]}" || true) / ${SENT[$n]}"
    fi
    printf '| %s | %s | %.0f | %s | %s | %s |\n' "${n%-*}" "$lg" "$m" "$(ratio "$m" "$ng")" "${RPS[$n]% }" "$lines"
done
