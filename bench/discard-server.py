#!/usr/bin/env python3
"""bench/discard-server.py — an HTTP/1.1 server that reads and drops request
bodies: the upload ceiling for `curl -T` in bench/peers.sh.

PUT/POST: answers `100 Continue` to `Expect: 100-continue` (http.server does
that for HTTP/1.1), reads exactly Content-Length bytes in reads of up to
1 MiB into one reused buffer, and only then answers 204 with
`X-Received: N` (400 if the body ended early). No disk, no hashing. Keep-alive.

Prints `listening on http://127.0.0.1:PORT` (port picked by the kernel) like
`wirespeed serve --listen 127.0.0.1:0`.
"""
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Discard(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        buf = memoryview(bytearray(1 << 20))
        got = 0
        while got < n:
            # A read bigger than the BufferedReader's buffer goes straight to
            # recv_into on the socket.
            k = self.rfile.readinto(buf[: min(len(buf), n - got)])
            if not k:
                break
            got += k
        self.send_response(204 if got == n else 400)
        self.send_header("X-Received", str(got))
        self.end_headers()

    do_POST = do_PUT

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Discard)
    print("listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
    server.serve_forever()
