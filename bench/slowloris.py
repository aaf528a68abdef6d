#!/usr/bin/env python3
"""bench/slowloris.py — the two sides of bench/slowloris.sh. Not a test.

    slowloris.py slow   PORT CONNS INTERVAL SECONDS   # dribbling clients
    slowloris.py client PORT GETS UPLOADS UPLOAD_BYTES [EXPECTED_FILE [PREFIX]]

`slow` keeps CONNS connections open for SECONDS, each sending one byte of a
request head that never ends every INTERVAL seconds; a connection the server
closes is replaced at once. At the end it prints one JSON line: how many the
server closed, how many of those with a 408, their lifetimes (connect to
the 408, or to the close without one), and the most open at once.

`client` does GETS requests for /small.txt on one kept-alive connection,
then UPLOADS PUTs of UPLOAD_BYTES bytes to /PREFIXi.bin (new files), checking every body and
status, and prints one JSON line of latencies (ms): p50, p99, max per kind.

With WIRESPEED_TLS=1 in the environment both speak HTTPS (certificate not checked).
"""
import asyncio
import json
import os
import socket
import ssl
import sys
import time

# WIRESPEED_TLS=1: talk HTTPS (the bench's self-signed server; not verified).
TLS = None
if os.environ.get("WIRESPEED_TLS") == "1":
    TLS = ssl.create_default_context()
    TLS.check_hostname = False
    TLS.verify_mode = ssl.CERT_NONE

HEAD = (b"GET /small.txt HTTP/1.1\r\nHost: localhost\r\nUser-Agent: slowloris\r\n"
        + b"X-Pad: " + b"a" * 4000)


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def one_slow(port, interval, stop_at, stats):
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=TLS)
    except OSError as e:
        stats["connect_errors"] += 1
        stats["last_error"] = str(e)
        await asyncio.sleep(0.5)
        return
    t0 = time.monotonic()
    stats["open"] += 1
    stats["peak"] = max(stats["peak"], stats["open"])
    got = b""
    answered = None
    closed_by_server = False
    try:
        i = 0
        while time.monotonic() < stop_at:
            writer.write(HEAD[i % len(HEAD):i % len(HEAD) + 1])
            i += 1
            try:
                await writer.drain()
                chunk = await asyncio.wait_for(reader.read(4096), interval)
            except asyncio.TimeoutError:
                continue
            except OSError:
                closed_by_server = True
                break
            if not chunk:
                closed_by_server = True
                break
            got += chunk
            answered = time.monotonic() - t0
            # The answer came: read on to the server's close.
            while True:
                try:
                    more = await asyncio.wait_for(reader.read(4096), 30)
                except (asyncio.TimeoutError, OSError):
                    break
                if not more:
                    break
                got += more
            closed_by_server = True
            break
    finally:
        stats["open"] -= 1
        writer.close()
    if closed_by_server:
        stats["closed"] += 1
        # Until the 408 (or the close, if none came): when the timeout fired.
        stats["lifetimes"].append(answered if answered is not None else time.monotonic() - t0)
        if got.startswith(b"HTTP/1.1 408"):
            stats["status_408"] += 1


async def slow_main(port, conns, interval, seconds):
    stop_at = time.monotonic() + seconds
    stats = {"open": 0, "peak": 0, "closed": 0, "status_408": 0,
             "connect_errors": 0, "lifetimes": []}

    async def keep_one(k):
        # Spread the first connects (and so the first bytes) over 2 s.
        await asyncio.sleep(2.0 * k / conns)
        while time.monotonic() < stop_at:
            await one_slow(port, interval, stop_at, stats)

    await asyncio.gather(*(keep_one(k) for k in range(conns)))
    life = stats.pop("lifetimes")
    stats["lifetime_s"] = {"min": round(min(life), 2) if life else None,
                           "p50": round(pct(life, 50), 2) if life else None,
                           "max": round(max(life), 2) if life else None}
    print(json.dumps(stats), flush=True)


def read_response(sock, buf):
    """One response with a Content-Length: (status, body, leftover)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("closed before the head")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("closed mid-body")
        rest += chunk
    return status, rest[:length], rest[length:]


def client_main(port, gets, uploads, upload_bytes):
    expected = open(sys.argv[6], "rb").read() if len(sys.argv) > 6 else None
    prefix = sys.argv[7].encode() if len(sys.argv) > 7 else b"up"
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if TLS is not None:
        s = TLS.wrap_socket(s, server_hostname="localhost")
    req = b"GET /small.txt HTTP/1.1\r\nHost: localhost\r\n\r\n"
    buf = b""
    get_ms = []
    for _ in range(gets):
        t = time.perf_counter()
        s.sendall(req)
        status, body, buf = read_response(s, buf)
        get_ms.append((time.perf_counter() - t) * 1000)
        if status != 200 or (expected is not None and body != expected):
            raise SystemExit(f"bad GET: {status} {body[:80]!r}")
    payload = bytes(range(256)) * (upload_bytes // 256)
    put_ms = []
    for i in range(uploads):
        head = (b"PUT /%s%d.bin HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n"
                % (prefix, i, len(payload)))
        t = time.perf_counter()
        s.sendall(head)
        s.sendall(payload)
        status, body, buf = read_response(s, buf)
        put_ms.append((time.perf_counter() - t) * 1000)
        if status not in (201, 204):
            raise SystemExit(f"bad PUT: {status} {body[:200]!r}")
    s.close()

    def summary(xs):
        return {"n": len(xs), "p50": round(pct(xs, 50), 3), "p99": round(pct(xs, 99), 3),
                "max": round(max(xs), 3)}
    print(json.dumps({"get_ms": summary(get_ms), "put_ms": summary(put_ms)}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 6 or sys.argv[1] not in ("slow", "client"):
        sys.exit(__doc__)
    a = sys.argv
    if a[1] == "slow":
        asyncio.run(slow_main(int(a[2]), int(a[3]), float(a[4]), float(a[5])))
    else:
        client_main(int(a[2]), int(a[3]), int(a[4]), int(a[5]))
