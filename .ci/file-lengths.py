#!/usr/bin/env python3
"""Fail if a source file (crates/*/src/**/*.rs) has more than LIMIT lines
before its tests (the first `#[cfg(test)]` line, or the end): a file that
long holds more than one job and is split along a seam, or ARCHITECTURE.md
says why not and the file is named in EXCEPTIONS."""
import glob
import sys

LIMIT = 650
# Files allowed over LIMIT, each with its sentence in ARCHITECTURE.md.
EXCEPTIONS = set()


def lines_before_tests(path):
    n = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip().startswith("#[cfg(test)]"):
                break
            n += 1
    return n


over = []
for path in sorted(glob.glob("crates/*/src/**/*.rs", recursive=True)):
    n = lines_before_tests(path)
    if n > LIMIT and path not in EXCEPTIONS:
        over.append((n, path))
for n, path in sorted(over, reverse=True):
    print(f"{path}: {n} lines before its tests (limit {LIMIT}): split it along a seam")
sys.exit(1 if over else 0)
