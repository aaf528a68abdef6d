#!/usr/bin/env python3
"""Fail if any module imports (through `crate::` paths, outside tests) a module
that imports it back, directly or through others: siblings share through a
helper module, never through each other."""
import glob
import os
import re
import sys

failed = False
for src in sorted(glob.glob("crates/*/src")):
    mods = {}
    for f in glob.glob(src + "/**/*.rs", recursive=True):
        rel = os.path.relpath(f, src)[:-3].replace("/mod", "").replace("/", "::")
        if rel in ("lib", "main"):
            rel = ""
        text = open(f, encoding="utf-8").read().split("#[cfg(test)]")[0]
        mods[rel] = set(re.findall(r"crate::([a-z_0-9]+(?:::[a-z_0-9]+)*)", text))

    def owner(path):
        parts = path.split("::")
        for i in range(len(parts), 0, -1):
            if "::".join(parts[:i]) in mods:
                return "::".join(parts[:i])
        return None

    graph = {m: {owner(d) for d in deps} - {None, m, ""} for m, deps in mods.items()}

    def reaches(a, b):
        seen, todo = set(), [a]
        while todo:
            for n in graph.get(todo.pop(), ()):
                if n == b:
                    return True
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return False

    for a in sorted(graph):
        for b in sorted(graph[a]):
            if reaches(b, a):
                print(f"{src}: {a} -> {b} -> ... -> {a}")
                failed = True
sys.exit(1 if failed else 0)
