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


def dictionary():
    """The words of /usr/share/dict/words (Debian's wamerican), lower-case
    letters only, in a fixed random order: that order is their Zipf rank."""
    with open("/usr/share/dict/words") as fh:
        words = sorted({w.strip() for w in fh if w.strip().isalpha() and w.strip().isascii() and w.strip().islower()})
    random.Random(7).shuffle(words)
    return words


def zipf_weights(n, s=1.07):
    acc, out = 0.0, []
    for rank in range(1, n + 1):
        acc += 1.0 / rank ** s
        out.append(acc)
    return out


def text(root, mb):
    """MB MiB of prose-like text: words of the dictionary drawn with a
    Zipf-like law (rank^-1.07, as in natural language), in sentences and
    paragraphs; file sizes log-normal (median 8 KiB, 200 B to 2 MiB), 500
    files per folder, .txt/.md/.log/.csv names. For speed, 64 MiB of such
    text is made once and each file is a slice of it from a random sentence
    on (a word's share of files is then that of a 1/16 sample, not of an
    independent corpus). Deterministic."""
    rng = random.Random(1024)
    vocab = dictionary()
    cum = zipf_weights(len(vocab))
    words = rng.choices(vocab, cum_weights=cum, k=64 * 1024 * 1024 // 7)
    out, i = [], 0
    while i < len(words):
        k = rng.randint(6, 18)
        out.append(" ".join(words[i:i + k]).capitalize() + (".\n\n" if rng.random() < 0.15 else ". "))
        i += k
    pool = "".join(out)
    del out, words
    total, want, f = 0, mb * 1024 * 1024, 0
    exts = ["txt", "txt", "md", "log", "csv"]
    while total < want:
        size = int(min(2 << 20, max(200, rng.lognormvariate(9.0, 1.3))))
        at = pool.find(". ", rng.randrange(0, len(pool) - size - 1)) + 2
        body = pool[at:at + size]
        body = body[:body.rfind(" ") + 1] if len(body) == size else body
        d = os.path.join(root, f"t{f // 500:04d}")
        if f % 500 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{vocab[f % 5000]}-{f:06d}.{exts[f % len(exts)]}"), "w") as fh:
            fh.write(body)
        total += len(body)
        f += 1
    print(f"{f} files, {total} bytes", file=sys.stderr)


def text_queries(count):
    """Words people would type: a third common (rank < 100), a third middle
    (100 to 5,000), a third rare (5,000 to 40,000); every fifth a pair."""
    rng = random.Random(5)
    vocab = dictionary()
    out = []
    for i in range(count):
        lo, hi = [(0, 100), (100, 5000), (5000, 40000)][i % 3]
        q = vocab[rng.randrange(lo, hi)]
        if i % 5 == 4:
            q += " " + vocab[rng.randrange(0, 5000)]
        out.append(q)
    return out


def conn(url):
    u = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def get(c, path):
    t = time.perf_counter()
    c.request("GET", path, headers={"Accept": "application/json"})
    r = c.getresponse()
    body = r.read()
    return (time.perf_counter() - t) * 1000, json.loads(body)


def wait(url, what, state=None):
    """Until the first walk is done (names) and, for text, until no file is
    left unread (a rare word's results stop growing)."""
    c = conn(url)
    while True:
        _, v = get(c, "/?q=zzzzzz&format=json")
        if v.get("complete"):
            break
        time.sleep(0.5)
    if what == "text":
        # The text pass is done when no file waits for its words (read from
        # the index file itself, read-only; SQLite's WAL lets it).
        import glob
        import sqlite3
        db = glob.glob(os.path.join(state, "search", "*.db"))[0]
        while True:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as s:
                left = s.execute("SELECT count(*) FROM entries WHERE texted = 0 AND dir = 0").fetchone()[0]
            if left == 0:
                break
            time.sleep(1)


def fragments(count):
    out = []
    for _ in range(count):
        w = RNG.choice(WORDS)
        i = RNG.randint(0, len(w) - 4)
        out.append(w[i:i + 4])
    return out


def query(url, root, count, dufs_url=None):
    """Per fragment, interleaved: wirespeed's first page, fd walking the
    tree, and dufs `?q=` (a walk per query, every match) when given."""
    c = conn(url)
    d = conn(dufs_url) if dufs_url else None
    for frag in fragments(count):
        ms, v = get(c, f"/?q={frag}&format=json&limit=100")
        t = time.perf_counter()
        subprocess.run(["fdfind", "-u", "--max-results", "100", frag, root],
                       stdout=subprocess.DEVNULL, check=False)
        fd_ms = (time.perf_counter() - t) * 1000
        dufs_ms, dufs_n = float("nan"), 0
        if d:
            t = time.perf_counter()
            d.request("GET", f"/?q={frag}&simple")
            body = d.getresponse().read()
            dufs_ms = (time.perf_counter() - t) * 1000
            dufs_n = body.count(b"\n")
        print(f"{ms:.2f}\t{fd_ms:.2f}\t{len(v['entries'])}\t{dufs_ms:.2f}\t{dufs_n}")


def changes(url, root, rounds):
    """Host changes behind the server's back: a file created, renamed, then
    deleted in a random folder; each time, ms until `?q=` answers the new
    state (polled every 10 ms, at most 10 s)."""
    c = conn(url)
    folders = sorted(os.listdir(root))
    rng = random.Random(2)

    def until(q, present):
        t = time.perf_counter()
        while time.perf_counter() - t < 10:
            _, v = get(c, f"/?q={q}&format=json&limit=10")
            if bool(v["entries"]) == present:
                return (time.perf_counter() - t) * 1000
            time.sleep(0.01)
        return float("inf")

    for i in range(rounds):
        d = os.path.join(root, rng.choice(folders))
        a, b = os.path.join(d, f"qzxnew{i:04d}.txt"), os.path.join(d, f"qzxmoved{i:04d}.txt")
        open(a, "w").close()
        created = until(f"qzxnew{i:04d}", True)
        os.rename(a, b)
        renamed = until(f"qzxmoved{i:04d}", True)
        os.unlink(b)
        deleted = until(f"qzxmoved{i:04d}", False)
        print(f"{created:.1f}\t{renamed:.1f}\t{deleted:.1f}")


def first(url):
    _, v = get(conn(url), f"/?q={WORDS[1][:4]}&format=json&limit=100")
    print(len(v["entries"]))


def words(url, count):
    c = conn(url)
    for q in text_queries(count):
        ms, v = get(c, f"/?q={urllib.parse.quote(q)}&content=1&format=json&limit=100")
        print(f"{ms:.2f}\t{len(v['entries'])}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "names":
        names(sys.argv[2], int(sys.argv[3]))
    elif cmd == "text":
        text(sys.argv[2], int(sys.argv[3]))
    elif cmd == "wait":
        wait(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    elif cmd == "query":
        query(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else None)
    elif cmd == "changes":
        changes(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "first":
        first(sys.argv[2])
    elif cmd == "text-queries":
        print("\n".join(text_queries(int(sys.argv[2]))))
    elif cmd == "words":
        words(sys.argv[2], int(sys.argv[3]))
