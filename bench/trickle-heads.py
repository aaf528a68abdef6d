#!/usr/bin/env python3
"""bench/trickle-heads.py — server CPU spent on request heads that arrive one
byte per TCP segment (20 connections, a ~13.6 KB head each), for one or more
wirespeed binaries, measured one after another. Not a test.

    python3 bench/trickle-heads.py target/release/wirespeed [OTHER_BINARY ...]

Prints the server's CPU time (utime+stime from /proc/PID/stat, in 1/100 s
ticks) for the whole run of each binary.
"""
import os
import socket
import subprocess
import sys
import tempfile
import threading

HEAD = (b"GET /x HTTP/1.1\r\nHost: localhost\r\n"
        + b"".join(b"X-P%d: %s\r\n" % (i, b"v" * 140) for i in range(95)) + b"\r\n")


def trickle(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for b in HEAD:
        s.send(bytes([b]))
    s.recv(100)
    s.close()


def ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def measure(binary):
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.Popen([binary, "serve", d, "--listen", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            port = int(p.stdout.readline().strip().rsplit(":", 1)[1])
            before = ticks(p.pid)
            threads = [threading.Thread(target=trickle, args=(port,)) for _ in range(20)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return ticks(p.pid) - before
        finally:
            p.terminate()
            p.wait()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for b in sys.argv[1:]:
        print(f"{b}: server CPU {measure(os.path.abspath(b))} ticks for 20 x {len(HEAD)}-byte heads, 1 byte per segment")
