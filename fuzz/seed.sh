#!/usr/bin/env bash
# Seeds fuzz/corpus/<target>/ from the vendored corpora in tests/corpora/
# (llhttp requests, python-multipart bodies, WPT base64) plus a few
# hand-written cases for the targets no corpus covers. Each seed is laid out
# the way its target reads its input (cut-point bytes first; see the comment
# at the top of each fuzz_targets/*.rs). Idempotent: files are named by
# content hash. The corpus is generated, not committed (fuzz/.gitignore).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - <<'PY'
import base64, hashlib, json, os, struct

root = "fuzz/corpus"
counts = {}

def put(target, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    counts[target] = counts.get(target, 0) + 1

def u16(n):
    return struct.pack("<H", n & 0xFFFF)

def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

# --- HTTP requests (llhttp) -----------------------------------------------------
for case in lines("tests/corpora/http-requests-llhttp.jsonl"):
    raw = base64.b64decode(case["raw_b64"])
    cutp = raw.find(b"\r\n\r\n")
    put("request_head", u16(cutp if cutp > 0 else len(raw) // 2) + raw)
    line = raw.split(b"\r\n", 1)[0].split(b" ")
    if len(line) >= 2:
        put("request_path", line[1].split(b"?", 1)[0])
    if cutp > 0:
        head, body = raw[:cutp].lower(), raw[cutp + 4:]
        if b"chunked" in head:
            put("chunked", u16(len(body) // 2) + body)
            put("body_decoder", bytes([2]) + u16(7) + bytes([16]) + body)
        for field in head.split(b"\r\n"):
            if field.startswith(b"content-length:"):
                value = field.split(b":", 1)[1]
                put("content_length", value)
                n = int(value) if value.strip().isdigit() else len(body)
                put("body_decoder", bytes([1]) + u16(3) + u16(n) + bytes([5]) + body)

# --- multipart bodies (python-multipart) ----------------------------------------
for case in lines("tests/corpora/multipart_python_multipart.jsonl"):
    body = base64.b64decode(case["body_b64"])
    bnd = case["boundary"].encode()
    put("multipart", u16(len(body) // 3) + u16(2 * len(body) // 3) + bnd + b"\n" + body)

# --- base64 (WPT) ---------------------------------------------------------------
for case in lines("tests/corpora/base64_wpt.jsonl"):
    data = case["input"].encode("utf-8")
    put("base64", u16(len(data) // 2) + data)
for n in (1, 2, 3, 57, 100):
    enc = base64.b64encode(bytes(range(n)))
    put("base64", u16(n) + b"\r\n".join(enc[i:i + 76] for i in range(0, len(enc), 76)))

# --- hand-written cases ---------------------------------------------------------
responses = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.0 404 Not Found\r\nConnection: close\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc",
]
for r in responses:
    put("response_head", u16(len(r) // 2) + r)
for v in [b"0", b"5", b" 42\t", b"5, 5", b"5,6", b"18446744073709551615",
          b"18446744073709551616", b"007", b"", b",", b"5,", b"+5", b"0x10"]:
    put("content_length", v)
chunked = [
    b"5\r\nhello\r\n0\r\n\r\n",
    b"3;ext=\"v\"\r\nabc\r\n0\r\nTrailer: x\r\n\r\n",
    b"000A \t; name = token\r\n0123456789\r\n0\r\n\r\n",
    b"1\r\nx\r\n1\r\ny\r\n0\r\n\r\nGET / HTTP/1.1\r\n",
]
for c in chunked:
    put("chunked", u16(len(c) // 3) + c)
    put("body_decoder", bytes([2]) + u16(len(c)) + bytes([3]) + c)
put("body_decoder", bytes([3]) + u16(9) + bytes([4]) + b"until the close")
put("body_decoder", bytes([0]) + u16(1) + bytes([1]) + b"nothing")
xml = [
    b"<?xml version=\"1.0\"?><env:Envelope xmlns:env=\"urn:e\"><env:Body><ns:data>aGVsbG8=</ns:data></env:Body></env:Envelope>",
    b"<a><!-- c --><data attr='1'>x &amp; y &#65;<![CDATA[<raw>]]></data></a>",
    b"<a><data/></a>",
    b"<a><data>no end</a>",
]
for x in xml:
    put("xml_field", u16(len(x) // 3) + u16(len(x) // 2) + x)
js = [
    b'{"name":"f","data":"aGVsbG8=","n":[1,2,{"data":"inner"}]}',
    b'{"data":"esc \\" \\\\ \\u00e9 \\ud83d\\ude00 \\n"}',
    b'{"other":{"data":"no"},"data":""}',
    b'{"data":1}',
]
for j in js:
    put("json_field", u16(len(j) // 3) + u16(len(j) // 2) + j)
for p in [b"/", b"/a/b/", b"/a%20b/c.txt", b"/%2e%2e/x", b"/a/../b", b"/a%2fb",
          b"/a%00b", b"/-/health", b"//x", b"/caf%C3%A9"]:
    put("request_path", p)

for t in sorted(counts):
    print(f"  {t:15} {counts[t]} seeds")
PY
