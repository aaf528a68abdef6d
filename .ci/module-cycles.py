#!/usr/bin/env python3
"""Fail if any module uses (outside tests) a module that uses it back,
directly or through others: siblings share through a helper module, never
through each other. In the service crate, a protocol front (FRONTS) must not
use another front at all: the front door (`front_door.rs`) is the only module
that knows them all.

A use is any path to another module of the same crate, in a `use` or in an
expression: `crate::a::b`, `super::b`, `super::super::c`, brace groups of
those, and `x::f()` / `x::Type` through a name `x` that a `use` brought in
(`use super::x;`, `use crate::a::x as y;`). Comments do not count.

`--self-test` runs the check on small trees it writes to a temporary folder:
each form above must close a circle there, and a tree that uses them all one
way must pass.
"""
import glob
import os
import re
import sys
import tempfile

# Folders of crates/<crate>/src that are protocol fronts.
FRONTS = {"crates/service/src": {"files", "encoded", "archive", "resumable", "dav"}}

SEG = r"[a-z_][a-z_0-9]*"
# A path's start: `crate`, `super` (any number of times) or `self`.
HEAD = rf"(?:crate|self|super(?:::super)*)"


def expand(prefix, group):
    """`a, b::c, d::{e, f}` under `prefix` -> (prefix::a, a), (prefix::b::c, c), ...:
    each path with the name it brings into scope (None for `*`)."""
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
        alias = re.search(rf"\s+as\s+({SEG}|_)$", item)
        item = re.sub(r"\s+as\s+\w+$", "", item)
        if not item:
            continue
        if item == "self":
            yield prefix, alias.group(1) if alias else prefix.split("::")[-1]
        elif "{" in item:
            head, inner = item.split("{", 1)
            yield from expand(prefix + "::" + head.rstrip(":").strip(), inner.rsplit("}", 1)[0])
        elif re.fullmatch(rf"\w+(?:::\w+)*(?:::\*)?", item):
            path = prefix + "::" + item.removesuffix("::*")
            name = None if item.endswith("*") else (alias.group(1) if alias else item.split("::")[-1])
            yield path, name


def strip_comments(text):
    """The text without `//` comments (a `://` in a URL string is kept)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"(?<!:)//[^\n]*", "", text)


def absolute(path, here):
    """`crate::a::b` / `super::b` / `self::b` seen in module `here` (a list of
    segments) -> ["a", "b"] from the crate root; None past the root."""
    parts = path.split("::")
    if parts[0] == "crate":
        return parts[1:]
    base = list(here)
    while parts and parts[0] in ("super", "self"):
        if parts.pop(0) == "super":
            if not base:
                return None
            base.pop()
    return base + parts


def inline_modules(text, here):
    """(text, module) pieces: the file's own text and each inline `mod x { }`
    block's, so that `super` in a block means the file's module."""
    out = []
    m = re.search(rf"\bmod ({SEG})\s*\{{", text)
    if not m:
        return [(text, here)]
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    out.extend(inline_modules(text[m.end() : i - 1], here + [m.group(1)]))
    out.extend(inline_modules(text[: m.start()] + text[i:], here))
    return out


def module_paths(text, here):
    """Every module path (a list of segments from the crate root) that `text`,
    the code of module `here`, names."""
    found = []
    names = {}
    # Brace groups: `crate::transfer::{resume, hex}` names `transfer::resume`
    # as well as `transfer`.
    for m in re.finditer(rf"(?<![\w:])({HEAD}(?:::{SEG})*)::\{{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        in_use = re.search(r"\buse\s+$", text[: m.start()][-40:]) is not None
        for path, name in expand(m.group(1), text[m.end() : i - 1]):
            found.append(path)
            if in_use and name:
                names[name] = path
    # Plain paths, in a `use` or an expression.
    for m in re.finditer(rf"(?<![\w:])({HEAD}(?:::\w+)*)(?!\w|::)", text):
        found.append(m.group(1))
    for m in re.finditer(rf"\buse\s+({HEAD}(?:::{SEG})+)(?:\s+as\s+({SEG}))?\s*;", text):
        names[m.group(2) or m.group(1).split("::")[-1]] = m.group(1)
    # `x::f()`, `x::Type`, `x::y::Z` through a name a `use` brought in.
    for name, path in names.items():
        for m in re.finditer(rf"(?<![\w:]){name}((?:::\w+)+)", text):
            found.append(path + m.group(1))
    for path in found:
        parts = absolute(path, here)
        if parts is not None:
            yield [p for p in parts if p]


def module_of(src, f):
    rel = os.path.relpath(f, src)[:-3].split(os.sep)
    if rel[-1] == "mod" or rel == ["lib"] or rel == ["main"]:
        rel = rel[:-1]
    return rel


def check(root):
    """The circles (and fronts using fronts) under `root`, as lines to print."""
    problems = []
    for src in sorted(glob.glob(os.path.join(root, "crates/*/src"))):
        mods = {}
        for f in glob.glob(src + "/**/*.rs", recursive=True):
            here = module_of(src, f)
            text = strip_comments(open(f, encoding="utf-8").read().split("#[cfg(test)]")[0])
            deps = mods.setdefault("::".join(here), set())
            for piece, inner in inline_modules(text, here):
                deps.update("::".join(p) for p in module_paths(piece, inner))

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

        name = os.path.relpath(src, root)
        for a in sorted(graph):
            for b in sorted(graph[a]):
                if reaches(b, a):
                    problems.append(f"{name}: {a} -> {b} -> ... -> {a}")
        fronts = FRONTS.get(name, set())
        for a in sorted(graph):
            mine = a.split("::")[0]
            for b in sorted(graph[a]):
                theirs = b.split("::")[0]
                if mine in fronts and theirs in fronts and theirs != mine:
                    problems.append(
                        f"{name}: front {mine} imports front {theirs} ({a} -> {b}); "
                        "share through a helper"
                    )
    return problems


# Each tree: files under crates/k/src, and whether the check must find a circle.
CASES = {
    "super_path": (
        {"lib.rs": "mod a; mod b;", "a.rs": "pub fn f() { super::b::g() }",
         "b.rs": "pub fn g() {} pub fn h() { crate::a::f() }"},
        True,
    ),
    "super_super_path": (
        {"lib.rs": "mod a; mod b;", "a/mod.rs": "mod x;",
         "a/x.rs": "pub fn f() -> super::super::b::T { todo!() }",
         "b.rs": "pub struct T; use crate::a::x::f;"},
        True,
    ),
    "module_function_through_use_super": (
        {"lib.rs": "mod a; mod b;", "a.rs": "use super::b;\npub fn f() { b::g() }",
         "b.rs": "pub fn g() {}\npub fn h() { super::a::f() }"},
        True,
    ),
    "type_through_use_crate_parent": (
        {"lib.rs": "mod p;", "p/mod.rs": "mod x; mod y;",
         "p/x.rs": "use crate::p;\npub fn f() -> p::y::T { p::y::T }",
         "p/y.rs": "pub struct T;\npub fn g() { crate::p::x::f(); }"},
        True,
    ),
    "use_group_and_alias": (
        {"lib.rs": "mod a; mod b;", "a.rs": "use super::{b as other};\npub fn f() { other::g() }",
         "b.rs": "use crate::a as first;\npub fn g() { first::f() }"},
        True,
    ),
    "crate_path_in_expression": (
        {"lib.rs": "mod a; mod b;", "a.rs": "pub fn f() -> u8 { 1 + crate::b::g() }",
         "b.rs": "pub fn g() -> u8 { let x = crate::a::f(); x }"},
        True,
    ),
    "one_way": (
        {"lib.rs": "mod a; mod b; mod c; pub fn top() {}",
         "a.rs": "use super::b;\nuse crate::c::{self as see, T};\n"
                 "pub fn f() { b::g(); see::h(); super::top(); let _ = T; }",
         "b.rs": "use crate::c;\n// super::a::f() in a comment is no use\n"
                 "pub fn g() { c::h(); super::top(); }\n"
                 "#[cfg(test)]\nmod tests { use super::super::a; }",
         "c/mod.rs": "mod inner;\npub struct T;\npub fn h() { inner::k() }\n",
         "c/inner.rs": "pub fn k() { super::super::top() }\n"},
        False,
    ),
}


def self_test():
    failed = False
    for case, (files, circle) in CASES.items():
        with tempfile.TemporaryDirectory() as root:
            for rel, body in files.items():
                path = os.path.join(root, "crates/k/src", rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as out:
                    out.write(body + "\n")
            found = check(root)
        if bool(found) != circle:
            failed = True
            want = "a circle" if circle else "none"
            print(f"self-test {case}: expected {want}, got {found or 'none'}")
    if not failed:
        print(f"module-cycles self-test: {len(CASES)} trees as expected")
    return failed


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(1 if self_test() else 0)
    problems = check(".")
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
