#!/usr/bin/env python3
"""SQLite FTS5 (the server's schema and statements, crates/search/src/
store.rs) against tantivy on the same text corpus, one engine per process
so each RSS is its own, both driven from Python (pysqlite3-binary: SQLite
3.51 with FTS5; the `tantivy` wheel: tantivy's Rust core), so the
per-call overhead is the same on both sides. bench/search-engines/ is the
same comparison in Rust, for a machine with time to build tantivy.

  python3 bench/search_engines.py fts5|tantivy CORPUS INDEX_DIR QUERIES_FILE

Indexes every file below CORPUS on one thread (files read one at a time,
committed every 32 as the server's text pass does), then runs each line of
QUERIES_FILE as "every word, the last one a prefix" (what `?q=…&content=1`
asks), first page of 100 with each hit's path, once to warm and once
timed. Prints one tab-separated line."""
import os
import resource
import shutil
import sys
import time


def files(root):
    out = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        out.extend(os.path.join(d, n) for n in sorted(names))
    return out


def rss(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) // 1024
    return 0


def du(path):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(path) for n in ns) >> 20


def words(q):
    out, cur = [], []
    for c in q:
        if c.isalnum():
            cur.append(c)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


class Fts5:
    SCHEMA = """
CREATE TABLE IF NOT EXISTS entries(
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
    dir INTEGER NOT NULL, size INTEGER NOT NULL, mtime INTEGER,
    seen INTEGER NOT NULL DEFAULT 0, texted INTEGER NOT NULL DEFAULT 0);
CREATE VIRTUAL TABLE IF NOT EXISTS names USING fts5(
    name, content='entries', content_rowid='id', tokenize='trigram');
CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(
    body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS entries_ai AFTER INSERT ON entries BEGIN
    INSERT INTO names(rowid, name) VALUES (new.id, new.name);
END;
"""

    def __init__(self, index):
        import pysqlite3.dbapi2 as sqlite3
        self.db = os.path.join(index, "text.db")
        self.c = sqlite3.connect(self.db, isolation_level=None)
        self.c.execute("PRAGMA journal_mode=WAL")
        self.c.execute("PRAGMA synchronous=NORMAL")
        self.c.execute("PRAGMA cache_size=-8192")
        self.c.executescript(self.SCHEMA)
        self.c.execute("BEGIN")

    def add(self, path, body):
        cur = self.c.execute(
            "INSERT INTO entries(path, name, dir, size, mtime, seen) VALUES (?, ?, 0, ?, 1, 1)",
            (path, path.rsplit("/", 1)[-1], len(body)))
        rid = cur.lastrowid
        self.c.execute("DELETE FROM texts WHERE rowid = ?", (rid,))
        self.c.execute("INSERT INTO texts(rowid, body) VALUES (?, ?)", (rid, body))
        self.c.execute("UPDATE entries SET texted = 1 WHERE id = ?", (rid,))

    def commit(self):
        self.c.execute("COMMIT")
        self.c.execute("BEGIN")

    def finish(self):
        self.c.execute("COMMIT")
        self.c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        import pysqlite3.dbapi2 as sqlite3
        self.r = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        self.r.execute("PRAGMA cache_size=-8192")

    def query(self, q):
        w = words(q)
        fts = " AND ".join(['"%s"' % x.replace('"', '""') for x in w[:-1]] + ['"%s"*' % w[-1].replace('"', '""')])
        rows = self.r.execute(
            "SELECT e.id, e.path, e.name, e.dir, e.size, e.mtime FROM texts "
            "JOIN entries e ON e.id = texts.rowid WHERE texts MATCH ? AND texts.rowid > ? "
            "ORDER BY texts.rowid LIMIT ?", (fts, 0, 100)).fetchall()
        return len(rows)


class Tantivy:
    def __init__(self, index):
        import tantivy
        self.t = tantivy
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("path", stored=True, tokenizer_name="raw")
        # Words with frequencies, no positions (no phrase search asked),
        # nothing stored: like FTS5's contentless table.
        sb.add_text_field("body", stored=False, index_option="freq")
        self.schema = sb.build()
        self.index = tantivy.Index(self.schema, path=index)
        # One indexing thread, as the server's indexer; 64 MB of heap.
        self.w = self.index.writer(heap_size=64_000_000, num_threads=1)

    def add(self, path, body):
        self.w.add_document(self.t.Document(path=path, body=body))

    def commit(self):
        pass  # tantivy commits a segment when asked; once at the end

    def finish(self):
        self.w.commit()
        self.w.wait_merging_threads()
        self.index.reload()
        self.s = self.index.searcher()

    def query(self, q):
        t = self.t
        w = [x.lower() for x in words(q)]
        parts = [(t.Occur.Must, t.Query.term_query(self.schema, "body", x)) for x in w[:-1]]
        # The last word as a prefix, as FTS5's "word"*.
        parts.append((t.Occur.Must, t.Query.regex_query(self.schema, "body", w[-1] + ".*")))
        res = self.s.search(t.Query.boolean_query(parts), 100)
        for _, addr in res.hits:
            self.s.doc(addr)["path"]
        return len(res.hits)


def main():
    engine, corpus, index, queries = sys.argv[1:5]
    shutil.rmtree(index, ignore_errors=True)
    os.makedirs(index)
    e = {"fts5": Fts5, "tantivy": Tantivy}[engine](index)
    lst = files(corpus)
    t0 = time.perf_counter()
    size = 0
    for i, p in enumerate(lst):
        with open(p, encoding="utf-8") as fh:
            body = fh.read()
        size += len(body)
        e.add(os.path.relpath(p, corpus), body)
        if i % 32 == 31:
            e.commit()
    e.finish()
    built = time.perf_counter() - t0
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    hwm = rss("VmHWM:")
    qs = [line.strip() for line in open(queries) if line.strip()]
    for q in qs:
        e.query(q)
    ms, hits = [], 0
    for q in qs:
        t = time.perf_counter()
        hits += e.query(q)
        ms.append((time.perf_counter() - t) * 1000)
    ms.sort()
    pct = lambda f: ms[max(1, min(len(ms), int(len(ms) * f + 0.999))) - 1]
    print(f"{engine}\tfiles\t{len(lst)}\tmib\t{size >> 20}\tindex_s\t{built:.0f}\t"
          f"index_cpu_s\t{cpu.ru_utime + cpu.ru_stime:.0f}\tsize_mib\t{du(index)}\t"
          f"peak_rss_mib\t{hwm}\trss_after_queries_mib\t{rss('VmRSS:')}\t"
          f"query_ms_p50\t{pct(0.5):.2f}\tp99\t{pct(0.99):.2f}\tmean_hits\t{hits // max(1, len(qs))}")


if __name__ == "__main__":
    main()
