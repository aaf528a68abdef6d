#!/usr/bin/env python3
"""The page query as crates/search/src/store.rs builds it, ordered by
`e.id` (before) and by the FTS5 table's rowid (after), interleaved per
query, on an index bench/search.sh built (pysqlite3-binary: SQLite 3.51;
200 candidates, as the service asks for a page of 100).

  python3 bench/search_plan.py names|texts INDEX.db N"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import search_tree  # noqa: E402
import pysqlite3.dbapi2 as sqlite3  # noqa: E402

kind, db, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
c.execute("PRAGMA cache_size=-8192")
if kind == "names":
    base = ("SELECT e.id, e.path, e.name, e.dir, e.size, e.mtime FROM names JOIN entries e "
            "ON e.id = names.rowid WHERE names MATCH ? AND names.rowid > ? ORDER BY {} LIMIT ?")
    orders = ["e.id", "names.rowid"]
    search_tree.RNG.seed(77)
    queries = ['"%s"' % f for f in search_tree.fragments(n) + ["txt", ".txt", "-00"]]
else:
    base = ("SELECT e.id, e.path, e.name, e.dir, e.size, e.mtime FROM texts JOIN entries e "
            "ON e.id = texts.rowid WHERE texts MATCH ? AND texts.rowid > ? ORDER BY {} LIMIT ?")
    orders = ["e.id", "texts.rowid"]
    queries = []
    for q in search_tree.text_queries(n):
        w = q.split()
        queries.append(" AND ".join(['"%s"' % x for x in w[:-1]] + ['"%s"*' % w[-1]]))
out = {o: [] for o in orders}
for q in queries:
    for o in orders:
        t = time.perf_counter()
        c.execute(base.format(o), (q, 0, 200)).fetchall()
        out[o].append((time.perf_counter() - t) * 1000)
for o, v in out.items():
    v.sort()
    pct = lambda f: v[max(1, min(len(v), int(len(v) * f + 0.999))) - 1]
    print(f"ORDER BY {o}\tp50 {pct(0.5):.1f}\tp99 {pct(0.99):.1f}\tmax {v[-1]:.1f}\tn {len(v)}")
