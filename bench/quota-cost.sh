#!/usr/bin/env bash
# bench/quota-cost.sh — what quota accounting costs one small PUT (1 KiB, a
# new name each, kept-alive connection): the server's system calls per PUT
# (strace -c -f: load-independent, any build) and the wall time per PUT,
# with the same rules file without a quota, with a folder quota, and with a
# folder and a user quota (signed in by Basic either way). Each system-call
# figure is (count for N2 PUTs − count for N1) / (N2 − N1). Not a test.
#
#   bash bench/quota-cost.sh                      # builds --release
#   WS=target/debug/wirespeed bash bench/quota-cost.sh
#   N1=200 N2=1200 …   (defaults)
set -euo pipefail
BENCH=quota-cost
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
N1=${N1:-200}
N2=${N2:-1200}
for c in strace python3; do
    command -v "$c" >/dev/null || { log "$c is missing"; exit 1; }
done
if [[ -z "${WS:-}" ]]; then
    (cd "$REPO" && cargo build --release -q -p wirespeed)
    WS="$REPO/target/release/wirespeed"
fi
hash=$(printf 'pw\n' | "$WS" passwd)
rules() {
    printf '[users]\nu = "%s"\n[paths."/"]\nu = "rwd"\n' "$hash"
    case $1 in
    folder) printf '[quota."/q"]\nbytes = "100G"\nfiles = 10000000\n' ;;
    user) printf '[quota."/q"]\nbytes = "100G"\n[quota.user]\nu = "100G"\n' ;;
    esac
}

# N PUTs of 1 KiB on one kept-alive connection, each answered before the next;
# prints the seconds they took.
cat >"$W/client.py" <<'PY'
import base64, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n, tag = int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((host, int(port)))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
auth = base64.b64encode(b"u:pw").decode()
body = b"x" * 1024
t = time.monotonic()
for i in range(n):
    s.sendall(f"PUT /q/{tag}-{i} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {auth}\r\n"
              f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        assert chunk, "server closed"
        got += chunk
    assert got.startswith(b"HTTP/1.1 201"), got[:200]
print(f"{time.monotonic() - t:.4f}")
s.close()
PY

# run VARIANT N: serve under strace, N PUTs, SIGTERM; prints "syscalls seconds".
run() {
    local v=$1 n=$2 out=$W/run.$RANDOM
    rm -rf "$W/data" && mkdir -p "$W/data/q"
    rules "$v" >"$W/rules.toml"
    strace -f -c -o "$out.st" "$WS" serve "$W/data" --listen 127.0.0.1:0 --threads 1 \
        --no-fsync --auth "$W/rules.toml" >"$out.addr" 2>"$out.log" &
    local pid=$! url secs
    url=$(wait_listening "$out.addr")
    secs=$(python3 "$W/client.py" "${url#http://}" "$n" "$RANDOM")
    sleep 0.3
    kill -TERM "$(pgrep -P "$pid")"
    wait "$pid" || true
    # futex, epoll and write (eventfd wake-ups) calls depend on thread
    # scheduling, not on the work:
    # left out of the count.
    echo "$(awk '$NF == "total" {t = $(NF-2)} $NF ~ /^(futex|epoll_wait|epoll_pwait|sched_yield|write)$/ {f += $(NF-2)} END {print t - f}' "$out.st") $secs"
    cp "$out.st" "$W/last-$v.st"
}

echo "| rules | system calls per PUT (no futex, epoll, eventfd write) | µs per PUT (under strace, N2 run) |"
echo "|---|---:|---:|"
for v in none folder user; do
    read -r a _ <<<"$(run "$v" "$N1")"
    read -r b secs <<<"$(run "$v" "$N2")"
    awk -v v="$v" -v a="$a" -v b="$b" -v s="$secs" -v n1="$N1" -v n2="$N2" \
        'BEGIN {printf "| %s | %.1f | %.0f |\n", v, (b - a) / (n2 - n1), s * 1e6 / n2}'
done
[[ -n "${SHOW:-}" ]] && for v in none folder user; do echo "== $v"; cat "$W/last-$v.st"; done
true
