#!/usr/bin/env bash
# bench/small-get-cost.sh — what one small GET (13-byte file, kept-alive
# connection) costs the server, in counts that do not depend on the load of
# a shared machine: instructions (valgrind callgrind) and system calls
# (strace -c -f), with the access log off and on, for one or more builds.
# Each figure is (cost of N2 requests − cost of N1 requests) / (N2 − N1), so
# start-up and shutdown cancel out. valgrind 3.19 does not know openat2
# (syscall 437): under callgrind the server takes its fallback path walk, the
# same for every build, so instruction counts compare builds, not absolutes.
#
#   BINS="/tmp/ws-before target/release/wirespeed" bash bench/small-get-cost.sh
#   N1=200 N2=1200 …   (defaults)
#   TOOLS=strace …      (system calls only: any build, even a debug one)
#   SERVE_ARGS="--audit-log /tmp/audit.jsonl" …   (more serve options, e.g.
#                       the audit trail's cost per request)
set -euo pipefail
BENCH=small-get-cost
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
N1=${N1:-200}
N2=${N2:-1200}
TOOLS=${TOOLS:-callgrind strace}
for c in valgrind strace python3; do
    command -v "$c" >/dev/null || { log "$c is missing"; exit 1; }
done
: "${BINS:?set BINS to one or more wirespeed binaries}"
mkdir -p "$W/data"
printf 'hello, world\n' >"$W/data/hello.txt"

# N GETs on one kept-alive connection, each answered before the next.
cat >"$W/client.py" <<'EOF'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
n = int(sys.argv[2])
s = socket.create_connection((host, int(port)))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
req = b"GET /hello.txt HTTP/1.1\r\nHost: localhost\r\nUser-Agent: cost\r\n\r\n"
for _ in range(n):
    s.sendall(req)
    got = b""
    while not got.endswith(b"hello, world\n"):
        chunk = s.recv(4096)
        assert chunk, "server closed"
        got += chunk
s.close()
EOF

# run TOOL BIN LOG N: start serve under TOOL, send N requests, SIGTERM; prints the count.
run() {
    local tool=$1 bin=$2 lg=$3 n=$4 out=$W/run.$RANDOM
    local -a pre
    case $tool in
    callgrind) pre=(valgrind --tool=callgrind --callgrind-out-file="$out.cg" --trace-children=no) ;;
    strace) pre=(strace -f -c -o "$out.st") ;;
    esac
    "${pre[@]}" "$bin" serve "$W/data" --listen 127.0.0.1:0 --threads 1 --access-log "$lg" \
        ${SERVE_ARGS:-} >"$out.addr" 2>"$out.log" &
    local pid=$!
    local url
    url=$(wait_listening "$out.addr") || { sleep 20; url=$(wait_listening "$out.addr"); }
    python3 "$W/client.py" "${url#http://}" "$n"
    sleep 0.3
    # SIGTERM to wirespeed itself: valgrind runs it in its own process; strace
    # runs it as a child (and would not pass the signal on).
    if [[ $tool == strace ]]; then
        kill -TERM "$(pgrep -P "$pid")"
    else
        kill -TERM "$pid"
    fi
    wait "$pid" || true
    case $tool in
    callgrind) awk '/^summary:|^totals:/ {print $2; exit}' "$out.cg" ;;
    strace) awk '$NF == "total" {print $(NF-2); exit}' "$out.st" ;;
    esac
}
per() { awk -v a="$1" -v b="$2" -v n1="$N1" -v n2="$N2" 'BEGIN {printf "%.1f", (b - a) / (n2 - n1)}'; }

echo "| build | access log | instructions per GET | system calls per GET |"
echo "|---|---|---:|---:|"
for bin in $BINS; do
    for lg in off on; do
        ins=- sys=-
        if [[ " $TOOLS " == *" callgrind "* ]]; then
            ins=$(per "$(run callgrind "$bin" "$lg" "$N1")" "$(run callgrind "$bin" "$lg" "$N2")")
        fi
        if [[ " $TOOLS " == *" strace "* ]]; then
            sys=$(per "$(run strace "$bin" "$lg" "$N1")" "$(run strace "$bin" "$lg" "$N2")")
        fi
        echo "| $bin | $lg | $ins | $sys |"
    done
done
