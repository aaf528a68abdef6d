#!/usr/bin/env bash
# bench/load.sh — `wirespeed bench load` against wirespeed and against nginx,
# one after the other on loopback: CONNECTIONS keep-alive connections, a
# GET/PUT mix of big bodies, every byte of every answer verified. Prints a
# markdown table, then each run's text summary. Not a test.
#
#   bash bench/load.sh                      # 256 connections, 60 s per server
#   DURATION=20 bash bench/load.sh          # shorter
#   DURATION=5 CONNECTIONS=16 SIZE=64KiB-1MiB bash bench/load.sh   # smoke, ~30 s
#
# Knobs: DURATION (60, seconds per server), CONNECTIONS (256), SIZE
# (1MiB-64MiB, uniform per object), MIX (get=50,put=50), OBJECTS (64 names,
# PUT once before the timed phase), WS (a wirespeed binary instead of the
# release build), KEEP=1. Servers: `wirespeed serve --no-fsync` (nginx's DAV
# PUT does not fsync either) with its default threads, nginx with
# `worker_processes auto`, sendfile, DAV PUT, `client_max_body_size 0`. The
# load generator runs on the same 2 cores as the server. Server RSS is the
# peak (VmHWM) of the server's processes, summed over nginx's master and
# workers; CPU seconds are the server's (from /proc) and the generator's
# (/usr/bin/time) over the whole run, setup included. Needs root for apt-get
# (nginx, python3, curl, time) and nginx's `user root;`.
set -euo pipefail

DURATION=${DURATION:-60}
CONNECTIONS=${CONNECTIONS:-256}
SIZE=${SIZE:-1MiB-64MiB}
MIX=${MIX:-get=50,put=50}
OBJECTS=${OBJECTS:-64}
BENCH=load
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
need python3 python3
need curl curl
[[ -x /usr/bin/time ]] || need /usr/bin/time time

if [[ -z "${WS:-}" ]]; then
    log "building wirespeed (release)"
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    WS="$REPO/target/release/wirespeed"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Peak RSS (KiB) of a process and its children (nginx: master and workers).
peak_rss() {
    local total=0 p v
    for p in "$1" $(pgrep -P "$1" || true); do
        v=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
        total=$((total + ${v:-0}))
    done
    echo "$total"
}
# CPU seconds (user + system) used so far by a process and its children.
cpu_secs() {
    local total=0 p
    for p in "$1" $(pgrep -P "$1" || true); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    awk -v t="$total" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t / hz}'
}

mkdir -p "$W/ws-data" "$W/ng-data/load" "$W/ngtmp"
"$WS" serve "$W/ws-data" --listen 127.0.0.1:0 --no-fsync >"$W/ws.addr" 2>"$W/ws.log" &
WS_PID=$!
PIDS+=("$WS_PID")
WS_URL=$(wait_listening "$W/ws.addr")

NG_PORT=$(free_port)
cat >"$W/nginx.conf" <<NGINX
user root;
worker_processes auto;
pid $W/nginx.pid;
error_log $W/nginx-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path $W/ngtmp/body;
    proxy_temp_path $W/ngtmp/proxy;
    fastcgi_temp_path $W/ngtmp/fastcgi;
    uwsgi_temp_path $W/ngtmp/uwsgi;
    scgi_temp_path $W/ngtmp/scgi;
    server {
        listen 127.0.0.1:$NG_PORT;
        root $W/ng-data;
        client_max_body_size 0;
        location / {
            dav_methods PUT;
            create_full_put_path on;
        }
    }
}
NGINX
nginx -e "$W/nginx-error.log" -c "$W/nginx.conf" -g 'daemon off;' &
NG_PID=$!
PIDS+=("$NG_PID")
NG_URL="http://127.0.0.1:$NG_PORT"
for _ in $(seq 100); do curl -s -o /dev/null "$NG_URL/" && break; sleep 0.05; done
[[ -n "$WS_URL" ]] || { log "wirespeed did not start"; exit 1; }

run_load() { # name url pid datadir
    local name=$1 url=$2 pid=$3 data=$4 rc=0 cpu0
    sync
    cpu0=$(cpu_secs "$pid")
    log "$name: $CONNECTIONS connections, $DURATION s, $MIX, $SIZE, $OBJECTS objects"
    /usr/bin/time -f '%U %S' -o "$W/$name.time" "$WS" bench load "$url/load/" --connections "$CONNECTIONS" --duration "${DURATION}s" \
        --size "$SIZE" --mix "$MIX" --objects "$OBJECTS" --json >"$W/$name.json" 2>"$W/$name.err" || rc=$?
    echo "$rc" >"$W/$name.rc"
    peak_rss "$pid" >"$W/$name.rss"
    awk -v a="$cpu0" -v b="$(cpu_secs "$pid")" 'BEGIN {printf "%.1f", b - a}' >"$W/$name.cpu"
    # Free the disk for the next server (OBJECTS x mean size per run); the
    # server may still be removing the temp files of the stopped uploads.
    for _ in 1 2 3 4 5; do rm -rf "${data:?}/load" 2>/dev/null && break; sleep 1; done
    [[ "$rc" == 0 ]] || log "$name: bench load exited $rc: $(tail -n 2 "$W/$name.err" | tr '\n' ' ')"
}
run_load wirespeed "$WS_URL" "$WS_PID" "$W/ws-data"
run_load nginx "$NG_URL" "$NG_PID" "$W/ng-data"

echo
echo "### bench load, loopback, $(nproc) CPUs, $CONNECTIONS connections, $MIX, sizes $SIZE, $OBJECTS objects, ${DURATION} s per server ($(date -u +%Y-%m-%d))"
echo
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
print("| server | MB/s up | MB/s down | req/s | GET p50 / p99 ms | PUT p50 / p99 ms | errors | corrupt bytes | server peak RSS | generator peak RSS | CPU s: server / generator | exit |")
print("|---|---:|---:|---:|---|---|---:|---:|---:|---:|---|---:|")
for name, label in (("wirespeed", "wirespeed serve --no-fsync"), ("nginx", "nginx, DAV PUT")):
    rc = open(f"{w}/{name}.rc").read().strip()
    rss = int(open(f"{w}/{name}.rss").read().strip() or 0)
    cpu = open(f"{w}/{name}.cpu").read().strip()
    try:
        gen_cpu = "%.1f" % sum(float(x) for x in open(f"{w}/{name}.time").read().split()[-2:])
    except Exception:
        gen_cpu = "?"
    try:
        s = json.load(open(f"{w}/{name}.json"))
    except Exception:
        print(f"| {label} | no result (exit {rc}; see {name}.err) |||||||||")
        continue
    def lat(k):
        k = s["kinds"].get(k)
        return f'{k["latency_ms"]["p50"]:.0f} / {k["latency_ms"]["p99"]:.0f}' if k else "-"
    e = s["errors"]
    kinds = ", ".join(f"{c}×{n}" for c, n in e["status"].items())
    errs = f'{s["error_total"]}' + (f" (status {kinds})" if kinds else "")
    print(f'| {label} | {s["mb_per_s_up"]:.0f} | {s["mb_per_s_down"]:.0f} | {s["requests_per_s"]:.1f} | {lat("get")} | {lat("put")} '
          f'| {errs} | {e["corrupt_bytes"]} | {rss/1024:.0f} MiB | {(s["peak_rss_kib"] or 0)/1024:.0f} MiB | {cpu} / {gen_cpu} | {rc} |')
PY
echo
for name in wirespeed nginx; do
    echo "$name, the summary's details (requests under way at the end were stopped: their bytes count, they do not):"
    python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print("  seconds=%.1f requests=%d stopped at the end=%d setup=%d objects, %.0f MB in %.1f s" % (s["seconds"], s["requests"], s["cut_at_end"], s["run"]["setup_objects"], s["run"]["setup_bytes"]/1e6, s["run"]["setup_seconds"]))
for k, v in s["kinds"].items():
    l = v["latency_ms"]
    print("  %s: %d requests (%d failed), p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f ms" % (k, v["requests"], v["failed"], l["p50"], l["p90"], l["p99"], l["p999"], l["max"]))
print("  errors:", s["errors"])' "$W/$name.json" 2>/dev/null || echo "  (no JSON)"
done
