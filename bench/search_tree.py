#!/usr/bin/env python3
"""Helpers of bench/search.sh: make the trees, wait for the index, time
queries (one kept-alive connection) next to fd."""
import http.client
import json
import os
import random
import subprocess
import sys
import time
import urllib.parse

RNG = random.Random(39)
LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORDS = sorted({"".join(RNG.choice(LETTERS) for _ in range(RNG.randint(5, 9))) for _ in range(2100)})[:2000]


def names(root, n):
    per = 1000
    for d in range((n + per - 1) // per):
        folder = os.path.join(root, f"{WORDS[d % len(WORDS)]}-{d:04d}")
        os.makedirs(folder, exist_ok=True)
        for i in range(min(per, n - d * per) - 1):  # the folder is a name too
            name = f"{RNG.choice(WORDS)}-{RNG.choice(WORDS)}-{d * per + i:06d}.txt"
            open(os.path.join(folder, name), "wb").close()


def text(root, mb):
    os.makedirs(root, exist_ok=True)
    files = mb * 1024 * 1024 // (100 * 1024)
    for f in range(files):
        d = os.path.join(root, f"d{f // 1000:03d}")
        os.makedirs(d, exist_ok=True)
        words = []
        size = 0
        while size < 100 * 1024:
            w = RNG.choice(WORDS)
            words.append(w)
            size += len(w) + 1
        with open(os.path.join(d, f"doc-{f:06d}.txt"), "w") as fh:
            fh.write(" ".join(words))


def conn(url):
    u = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def get(c, path):
    t = time.perf_counter()
    c.request("GET", path, headers={"Accept": "application/json"})
    r = c.getresponse()
    body = r.read()
    return (time.perf_counter() - t) * 1000, json.loads(body)


def wait(url, what):
    """Until the first walk is done (names) and, for text, until no file is
    left unread (a rare word's results stop growing)."""
    c = conn(url)
    while True:
        _, v = get(c, "/?q=zzzzzz&format=json")
        if v.get("complete"):
            break
        time.sleep(0.5)
    if what == "text":
        # The text pass ends when the last file's words are in: the count
        # of files holding a word every file holds reaches the file count.
        last, same = -1, 0
        while True:
            n = 0
            after = 0
            while True:
                _, v = get(c, f"/?q={WORDS[0]}&content=1&format=json&limit=1000&after={after}")
                n += len(v["entries"])
                if not v["next"]:
                    break
                after = int(urllib.parse.parse_qs(urllib.parse.urlsplit(v["next"]).query)["after"][0])
            same = same + 1 if n == last else 0
            last = n
            if same >= 3:
                break
            time.sleep(1)


def fragments(count):
    out = []
    for _ in range(count):
        w = RNG.choice(WORDS)
        i = RNG.randint(0, len(w) - 4)
        out.append(w[i:i + 4])
    return out


def query(url, root, count):
    c = conn(url)
    for frag in fragments(count):
        ms, v = get(c, f"/?q={frag}&format=json&limit=100")
        t = time.perf_counter()
        subprocess.run(["fdfind", "-u", "--max-results", "100", frag, root],
                       stdout=subprocess.DEVNULL, check=False)
        fd_ms = (time.perf_counter() - t) * 1000
        print(f"{ms:.2f}\t{fd_ms:.2f}\t{len(v['entries'])}")


def first(url):
    _, v = get(conn(url), f"/?q={WORDS[1][:4]}&format=json&limit=100")
    print(len(v["entries"]))


def words(url, count):
    c = conn(url)
    for _ in range(count):
        ms, v = get(c, f"/?q={RNG.choice(WORDS)}&content=1&format=json&limit=100")
        print(f"{ms:.2f}\t{len(v['entries'])}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "names":
        names(sys.argv[2], int(sys.argv[3]))
    elif cmd == "text":
        text(sys.argv[2], int(sys.argv[3]))
    elif cmd == "wait":
        wait(sys.argv[2], sys.argv[3])
    elif cmd == "query":
        query(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "first":
        first(sys.argv[2])
    elif cmd == "words":
        words(sys.argv[2], int(sys.argv[3]))
