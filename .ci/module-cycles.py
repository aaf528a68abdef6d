#!/usr/bin/env python3
"""Fail if any module imports (through `crate::` paths, outside tests) a module
that imports it back, directly or through others: siblings share through a
helper module, never through each other. In the service crate, a protocol
front (FRONTS) must not import another front at all: the front door
(`front_door.rs`) is the only module that knows them all."""
import glob
import os
import re
import sys


# Folders of crates/<crate>/src that are protocol fronts.
FRONTS = {"crates/service/src": {"files", "encoded", "archive", "resumable", "dav"}}


def expand(prefix, group):
    """`a, b::c, d::{e, f}` under `prefix` -> prefix::a, prefix::b::c, prefix::d::e, ..."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(group + ","):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(group[start:i].strip())
            start = i + 1
    for item in items:
        item = re.sub(r"\s+as\s+\w+$", "", item)
        if not item or item == "self":
            yield prefix
        elif "{" in item:
            head, inner = item.split("{", 1)
            yield from expand(prefix + "::" + head.rstrip(":").strip(), inner.rsplit("}", 1)[0])
        elif re.fullmatch(r"[a-z_0-9]+(?:::[a-z_0-9]+)*(?:::\*)?", item):
            yield prefix + "::" + item.removesuffix("::*")


def crate_paths(text):
    """Every module path a file names through `crate::`, brace groups expanded
    (`crate::transfer::{resume, hex}` names `transfer::resume` as well as
    `transfer`: a sibling reached through its parent's group is still an import)."""
    for m in re.finditer(r"crate::((?:[a-z_0-9]+::)*)\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield from expand(m.group(1).rstrip(":"), text[m.end() : i - 1])
    yield from re.findall(r"crate::([a-z_0-9]+(?:::[a-z_0-9]+)*)(?![a-z_0-9]|::\{)", text)


failed = False
for src in sorted(glob.glob("crates/*/src")):
    mods = {}
    for f in glob.glob(src + "/**/*.rs", recursive=True):
        rel = os.path.relpath(f, src)[:-3].replace("/mod", "").replace("/", "::")
        if rel in ("lib", "main"):
            rel = ""
        text = open(f, encoding="utf-8").read().split("#[cfg(test)]")[0]
        mods[rel] = set(crate_paths(text))

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
    fronts = FRONTS.get(src, set())
    for a in sorted(graph):
        mine = a.split("::")[0]
        for b in sorted(graph[a]):
            theirs = b.split("::")[0]
            if mine in fronts and theirs in fronts and theirs != mine:
                print(f"{src}: front {mine} imports front {theirs} ({a} -> {b}); share through a helper")
                failed = True
sys.exit(1 if failed else 0)
