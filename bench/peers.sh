#!/usr/bin/env bash
# bench/peers.sh — wirespeed next to nginx (and dd, iperf3, a discard server)
# on loopback, measured in one run, interleaved (round 1: every row, round 2:
# every row, …) so all rows see the same machine state; medians over ROUNDS.
# Not a test: prints a markdown table, then every sample.
#
#   ROUNDS=5 bash bench/peers.sh     # the README's table; est. 5–10 minutes on 2 cores
#   bash bench/peers.sh              # ROUNDS=3
#   SIZE_MB=64 ROUNDS=1 SMALL_SECS=2 bash bench/peers.sh   # smoke test, ~30 s
#   KEEP=1 …                         # keep the temp dir (logs, wrk output)
#   LOAD=0 …                         # skip bench/load.sh at the end
#
# Knobs: WS (a wirespeed binary to measure instead of building one),
# ROUNDS (3), SIZE_MB (1024: the big file, the upload source and the
# dd file; the labels show it), SMALL_SECS (5: wrk duration per sample).
#
# Rows (SIZE = SIZE_MB MiB, 1 GiB by default):
#   GET SIZE, wirespeed as shipped vs nginx (sendfile, tcp_nopush), and both
#     as a share of the iperf3 one-stream loopback ceiling
#   GET SIZE, wirespeed --file-send sendfile vs nginx
#   GET 20 MiB x 20 on one keep-alive connection, wirespeed vs nginx
#   GET a 13-byte file (`hello, world\n`), requests/s with
#     `wrk -t1 -c64 -dSMALL_SECSs`: server pinned to CPU 0 (`taskset -c 0`;
#     wirespeed `--threads 1`, a separate 1-worker nginx), wrk pinned to CPU 1.
#     Two pairs: no log vs no log (`--access-log off`, nginx `access_log
#     off`), and log vs log (wirespeed's access log, stderr to a file; nginx
#     `access_log FILE`). Target ≥1.1x nginx in both.
#   PUT SIZE, curl -T, wirespeed --no-fsync vs nginx DAV PUT (neither fsyncs).
#     Target ≥1.5x.
#   PUT SIZE, curl -T, wirespeed as shipped (fsync before rename) vs
#     `dd bs=1M conv=fsync` of the same file into the same directory (the
#     server's data dir). Target ≥0.9x dd.
#   PUT SIZE, curl -T -H 'Want-Repr-Digest: sha-256=10', wirespeed --no-fsync,
#     vs the same server without the header: what server-side sha-256 costs.
#   PUT SIZE, curl -T, wirespeed as shipped vs nginx DAV PUT.
#   JSON listing of a 100,000-entry directory, wirespeed vs nginx's JSON
#     autoindex vs find(1).
#   Ceilings: iperf3 (one TCP stream, 3 s) and `curl -T` into
#     bench/discard-server.py (reads the whole body in 1 MiB reads, answers
#     204 after the last byte; no disk). Every PUT row is also shown as a
#     share of the discard ceiling.
# Every PUT is checked (2xx, curl's size_upload = SIZE, stored file = SIZE);
# the first Want-Repr-Digest answer is checked against the source's sha-256;
# wrk output is checked for non-2xx responses and socket errors. MB = 10^6
# bytes. Every timed operation starts after `sync`.
#
# Needs root for apt-get (nginx, iperf3, wrk, curl, python3, util-linux's
# taskset are installed if missing), nginx's `user root;`, and CPUs 0 and 1.
# Everything else lives in a temp dir, removed at the end unless KEEP=1.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SIZE_MB=${SIZE_MB:-1024}
SMALL_SECS=${SMALL_SECS:-5}
BENCH=peers
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

SIZE=$((SIZE_MB << 20))
if ((SIZE_MB % 1024 == 0)); then L="$((SIZE_MB / 1024)) GiB"; else L="$SIZE_MB MiB"; fi

need() { # need CMD PACKAGE
    if ! command -v "$1" >/dev/null 2>&1; then
        log "installing $2"
        if [[ -z "${APT_UPDATED:-}" ]]; then apt-get update -qq >&2; APT_UPDATED=1; fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2
    fi
}
need nginx nginx
need iperf3 iperf3
need wrk wrk
need taskset util-linux
need curl curl
need python3 python3
# Debian's packaged nginx starts a system instance on :80; we don't use it.
if nginx -V 2>&1 | grep -q -- '--with-http_dav_module'; then :; else
    log "warning: this nginx lacks http_dav_module; its PUT row will fail"
fi
if ! { taskset -c 0 true && taskset -c 1 true; }; then
    log "CPUs 0 and 1 are needed for the pinned small-GET row"
    exit 1
fi

log "building wirespeed (release)"
# WS=/path/to/wirespeed measures that binary (e.g. an older build, for a
# before/after table); otherwise the repository's release build.
if [[ -z "${WS:-}" ]]; then
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    WS="$REPO/target/release/wirespeed"
fi
SERVE_HELP=$("$WS" serve --help)
if [[ "$SERVE_HELP" == *"--digest <"* ]]; then
    DEFAULT_HASH="no sha-256 unless asked (--digest on-request)"
else
    DEFAULT_HASH="this build hashes every upload (sha-256)"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mb() { awk -v b="$1" 'BEGIN {printf "%.0f", b/1e6}'; }

# ---- data ------------------------------------------------------------
DATA=$W/data
mkdir -p "$DATA/list" "$DATA/up"
log "creating test data ($L, 20 MiB, 13 bytes, 100,000-entry directory)"
head -c "$SIZE" /dev/urandom >"$DATA/big.bin"
head -c $((20 << 20)) /dev/urandom >"$DATA/m20.bin"
printf 'hello, world\n' >"$DATA/hello.txt"
(cd "$DATA/list" && seq -f 'entry-%06g.dat' 0 99999 | xargs touch)
cp "$DATA/big.bin" "$W/upload-src.bin"
SRC_SHA=$(python3 -c '
import base64, hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
print(base64.b64encode(h.digest()).decode())' "$W/upload-src.bin")

# ---- servers ---------------------------------------------------------
# The start_* functions run in this shell, not in $(…): a pid appended to
# PIDS inside a command substitution never reaches cleanup (the wirespeed
# servers used to outlive the script that way). They set URL and PID.
start_ws() { # name [--pin CPU] extra-args...
    local name=$1 pre=()
    shift
    if [[ "${1:-}" == --pin ]]; then pre=(taskset -c "$2"); shift 2; fi
    "${pre[@]}" "$WS" serve "$DATA" --listen 127.0.0.1:0 "$@" >"$W/$name.addr" 2>"$W/$name.log" &
    PID=$!
    PIDS+=("$PID")
    URL=$(wait_listening "$W/$name.addr")
}
start_ws ws; WS_URL=$URL
start_ws ws-nofsync --no-fsync; WSNF_URL=$URL
start_ws ws-sendfile --file-send sendfile; WSSF_URL=$URL
# The small-GET rows' servers: one runtime thread, pinned to CPU 0 (taskset
# execs, so $! is wirespeed's own pid); one without and one with the access
# log (stderr, which start_ws sends to a file).
start_ws ws-small --pin 0 --threads 1 --access-log off; WSSM_URL=$URL WSSM_PID=$PID
start_ws ws-small-log --pin 0 --threads 1 --access-log on; WSSL_URL=$URL WSSL_PID=$PID

python3 "$REPO/bench/discard-server.py" >"$W/discard.addr" 2>"$W/discard.log" &
PIDS+=($!)
DISCARD_URL=$(wait_listening "$W/discard.addr")

ng_conf() { # name port [log]: the nginx config; with `log`, access_log to a file
    local al="access_log off;"
    [[ "${3:-}" == log ]] && al="access_log $W/$1.access;"
    cat <<EOF
user root;
worker_processes 1;
pid $W/$1.pid;
error_log $W/$1-error.log warn;
events { worker_connections 1024; }
http {
    $al
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    default_type application/octet-stream;
    client_body_temp_path $W/ngtmp-$1/body;
    proxy_temp_path $W/ngtmp-$1/proxy;
    fastcgi_temp_path $W/ngtmp-$1/fastcgi;
    uwsgi_temp_path $W/ngtmp-$1/uwsgi;
    scgi_temp_path $W/ngtmp-$1/scgi;
    server {
        listen 127.0.0.1:$2;
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
}
start_ng() { # name [--pin CPU] [log]
    local name=$1 pre=() port
    if [[ "${2:-}" == --pin ]]; then pre=(taskset -c "$3"); fi
    port=$(free_port)
    mkdir -p "$W/ngtmp-$name"
    ng_conf "$name" "$port" "${4:-}" >"$W/$name.conf"
    "${pre[@]}" nginx -e "$W/$name-error.log" -c "$W/$name.conf" -g 'daemon off;' &
    PID=$!
    PIDS+=("$PID")
    URL="http://127.0.0.1:$port"
    for _ in $(seq 100); do curl -s -o /dev/null "$URL/hello.txt" && break; sleep 0.05; done
}
start_ng nginx; NG_URL=$URL
# A separate nginx for the small-GET row: master and its one worker inherit
# CPU 0 from taskset.
start_ng nginx-small --pin 0; NGSM_URL=$URL NGSM_PID=$PID
start_ng nginx-small-log --pin 0 log; NGSL_URL=$URL NGSL_PID=$PID

# Sanity: every server serves; the small-GET servers are pinned where meant.
for u in "$WS_URL" "$WSNF_URL" "$WSSF_URL" "$NG_URL"; do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "$u/m20.bin") == 200 ]] || { log "$u does not serve"; exit 1; }
done
for u in "$WSSM_URL" "$NGSM_URL" "$WSSL_URL" "$NGSL_URL"; do
    [[ $(curl -s "$u/hello.txt") == 'hello, world' ]] || { log "$u does not serve hello.txt"; exit 1; }
done
[[ -n "$DISCARD_URL" ]] || { log "the discard server did not start"; exit 1; }
affinity() { taskset -pc "$1" | sed 's/.*: //'; }
NGSM_WORKERS=$(pgrep -P "$NGSM_PID" | tr '\n' ' ')
NGSM_WORKERS+=$(pgrep -P "$NGSL_PID" | tr '\n' ' ')
log "pinned: wirespeed --threads 1 pid $WSSM_PID on CPU $(affinity "$WSSM_PID"); nginx master $NGSM_PID on CPU $(affinity "$NGSM_PID"); workers: $(for p in $NGSM_WORKERS; do printf '%s on CPU %s ' "$p" "$(affinity "$p")"; done)"
for p in "$WSSM_PID" "$WSSL_PID" $NGSM_WORKERS; do
    [[ $(affinity "$p") == 0 ]] || log "warning: pid $p is not pinned to CPU 0"
done
[[ -n "$NGSM_WORKERS" ]] || log "warning: found no worker of the small-GET nginx"

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
small_rps() { # url name round: requests/s for the 13-byte file
    local out=$W/wrk.$2.$3.txt
    sync
    taskset -c 1 wrk -t1 -c64 -d"${SMALL_SECS}s" "$1/hello.txt" >"$out"
    if grep -qE 'Non-2xx|Socket errors' "$out"; then
        log "warning: wrk against $2 (round $3): $(grep -E 'Non-2xx|Socket errors' "$out" | tr -s ' ' | tr '\n' ';')"
    fi
    awk '/^Requests\/sec:/ {print $2}' "$out"
}
# Same page-cache state before every upload: dirty and free SIZE first.
put_prep() {
    sync
    head -c "$SIZE" /dev/zero >"$W/scratch.bin"
    rm -f "$W/scratch.bin"
}
put_big() { # url name [curl args...]: upload speed; checks what was stored
    local url=$1 name=$2 out code up speed stored=$DATA/up/$2.bin
    shift 2
    put_prep
    out=$(curl -sS -T "$W/upload-src.bin" "$@" -D "$W/put.$name.hdr" -o /dev/null \
        -w '%{http_code} %{size_upload} %{speed_upload}' "$url/up/$name.bin")
    read -r code up speed <<<"$out"
    [[ "$code" == 2?? ]] || log "warning: PUT to $name answered $code"
    [[ "$up" == "$SIZE" ]] || log "warning: PUT to $name sent $up of $SIZE bytes"
    if [[ "$name" != discard ]]; then
        [[ -f "$stored" && $(stat -c %s "$stored") == "$SIZE" ]] || log "warning: $name did not store $SIZE bytes"
        rm -f "$stored"
    elif ! grep -qi "^x-received: $SIZE"$'\r' "$W/put.$name.hdr"; then
        log "warning: the discard server did not read $SIZE bytes"
    fi
    echo "$speed"
}
dd_big() { # dd of the upload source into the server's data dir, fsync'd
    local t0 t1 f=$DATA/up/dd.bin
    put_prep
    t0=$(date +%s.%N)
    dd if="$W/upload-src.bin" of="$f" bs=1M conv=fsync status=none
    t1=$(date +%s.%N)
    [[ $(stat -c %s "$f") == "$SIZE" ]] || log "warning: dd wrote $(stat -c %s "$f") bytes"
    rm -f "$f"
    awk -v s="$SIZE" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.0f", s / (t1 - t0)}'
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
    sync
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
    add small ws "$(small_rps "$WSSM_URL" ws "$r")"
    add small ng "$(small_rps "$NGSM_URL" ng "$r")"
    add smalllog ws "$(small_rps "$WSSL_URL" wslog "$r")"
    add smalllog ng "$(small_rps "$NGSL_URL" nglog "$r")"
    add put discard "$(put_big "$DISCARD_URL" discard)"
    add put wsnf "$(put_big "$WSNF_URL" wsnf)"
    add put ng "$(put_big "$NG_URL" ng)"
    add put wsnfd "$(put_big "$WSNF_URL" wsnfd -H 'Want-Repr-Digest: sha-256=10')"
    if ((r == 1)); then
        got=$(sed -n 's/^[Rr]epr-[Dd]igest: *sha-256=:\([^:]*\):.*/\1/p' "$W/put.wsnfd.hdr")
        [[ "$got" == "$SRC_SHA" ]] || log "warning: Repr-Digest '$got' is not the source's sha-256 '$SRC_SHA'"
    fi
    add put ws "$(put_big "$WS_URL" ws)"
    add put dd "$(dd_big)"
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
target() { # ratio minimum
    awk -v r="$1" -v t="$2" 'BEGIN {printf "≥ %.1f: %s", t, (r >= t ? "met" : "missed")}'
}

G1W=$(med get1g ws) G1N=$(med get1g ng) G1S=$(med get1g wssf) IPERF=$(med iperf x)
G2W=$(med get20 ws) G2N=$(med get20 ng)
SW=$(med small ws) SN=$(med small ng) SLW=$(med smalllog ws) SLN=$(med smalllog ng)
PW=$(med put ws) PWNF=$(med put wsnf) PWD=$(med put wsnfd) PN=$(med put ng) PDD=$(med put dd) PX=$(med put discard)
LW=$(med list ws) LN=$(med list ng) LF=$(med list find)
RSMALL=$(ratio "$SW" "$SN") RSLOG=$(ratio "$SLW" "$SLN") RNF=$(ratio "$PWNF" "$PN") RDD=$(ratio "$PW" "$PDD")

echo
echo "### wirespeed vs peers, loopback, $(nproc) CPUs, median of $ROUNDS interleaved rounds, SIZE_MB=$SIZE_MB ($(date -u +%Y-%m-%d))"
echo
echo "| test | wirespeed | peer | wirespeed / peer | target | note |"
echo "|---|---:|---:|---:|---|---|"
echo "| GET $L (MB/s), peer: nginx | $(mb "$G1W") | $(mb "$G1N") | $(ratio "$G1W" "$G1N") | | wirespeed default (--file-send auto: copy loop for a loopback peer); nginx sendfile + tcp_nopush |"
echo "| GET $L (MB/s), wirespeed --file-send sendfile, peer: nginx | $(mb "$G1S") | $(mb "$G1N") | $(ratio "$G1S" "$G1N") | | sendfile + TCP_CORK both: what a non-loopback peer gets |"
echo "| GET 20 MiB x 20, one keep-alive connection (MB/s), peer: nginx | $(mb "$G2W") | $(mb "$G2N") | $(ratio "$G2W" "$G2N") | | |"
printf '| GET 13 bytes, no access log, wrk -t1 -c64 -d%ss (requests/s), peer: nginx | %.0f | %.0f | %s | %s | server on CPU 0 (wirespeed --threads 1 --access-log off; nginx 1 worker, access_log off), wrk on CPU 1 |\n' \
    "$SMALL_SECS" "$SW" "$SN" "$RSMALL" "$(target "$RSMALL" 1.1)"
printf '| GET 13 bytes, access log to a file, wrk -t1 -c64 -d%ss (requests/s), peer: nginx | %.0f | %.0f | %s | %s | the same with wirespeed'"'"'s access log (stderr to a file) and nginx access_log FILE |\n' \
    "$SMALL_SECS" "$SLW" "$SLN" "$RSLOG" "$(target "$RSLOG" 1.1)"
echo "| PUT $L, curl -T (MB/s), wirespeed --no-fsync, peer: nginx DAV PUT | $(mb "$PWNF") | $(mb "$PN") | $RNF | $(target "$RNF" 1.5) | neither fsyncs; wirespeed: $DEFAULT_HASH |"
echo "| PUT $L, curl -T (MB/s), wirespeed default (fsync before rename), peer: dd bs=1M conv=fsync | $(mb "$PW") | $(mb "$PDD") | $RDD | $(target "$RDD" 0.9) | dd of the same file into the server's data dir; MB/s from wall time |"
echo "| PUT $L, curl -T -H 'Want-Repr-Digest: sha-256=10' (MB/s), wirespeed --no-fsync, peer: the same without the header | $(mb "$PWD") | $(mb "$PWNF") | $(ratio "$PWD" "$PWNF") | | what the server's sha-256 costs; no nginx equivalent |"
echo "| PUT $L, curl -T (MB/s), wirespeed default, peer: nginx DAV PUT | $(mb "$PW") | $(mb "$PN") | $(ratio "$PW" "$PN") | | nginx DAV does not fsync or hash |"
printf '| JSON listing, 100,000 entries (ms), peer: nginx autoindex | %.0f | %.0f | %s (time: lower is better) | | find -printf: %.0f ms |\n' \
    "$(awk -v t="$LW" 'BEGIN{print t*1000}')" "$(awk -v t="$LN" 'BEGIN{print t*1000}')" "$(ratio "$LW" "$LN")" "$(awk -v t="$LF" 'BEGIN{print t*1000}')"
echo "| ceiling: iperf3 loopback TCP (MB/s) | | $(mb "$IPERF") | | | one stream, 3 s, every round |"
echo "| ceiling: PUT $L, curl -T into a discard server (MB/s) | | $(mb "$PX") | | | bench/discard-server.py: reads all of the body (1 MiB reads), 204 after the last byte, no disk; $(ratio "$PX" "$IPERF") of iperf3 |"
echo
echo "GET $L as a share of the iperf3 ceiling: wirespeed $(ratio "$G1W" "$IPERF"), wirespeed --file-send sendfile $(ratio "$G1S" "$IPERF"), nginx $(ratio "$G1N" "$IPERF")."
echo "PUT $L as a share of the curl -T discard ceiling: wirespeed --no-fsync $(ratio "$PWNF" "$PX"), with Want-Repr-Digest $(ratio "$PWD" "$PX"), wirespeed default $(ratio "$PW" "$PX"), nginx DAV $(ratio "$PN" "$PX") (dd, no socket: $(ratio "$PDD" "$PX"))."
echo
echo "Samples (bytes/s; list: s; small: requests/s):"
for k in $(printf '%s\n' "${!R[@]}" | sort); do
    printf '  %s=[%s]\n' "$k" "$(printf '%s' "${R[$k]}" | tr '\n' ' ' | sed 's/ $//')"
done

# The many-connection transfer load, every byte verified (bench/load.sh).
if [[ "${LOAD:-1}" != 0 ]]; then
    echo
    WS="$WS" bash "$REPO/bench/load.sh"
fi
