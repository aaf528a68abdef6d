#!/usr/bin/env python3
"""Load URL in headless Chromium RUNS times (a fresh context each) and print
the median, min and max of: response end, DOMContentLoaded, load, and the
page's own marks (window.wirespeedFirstRowsAt: the table built with its first
rows; window.wirespeedReadyAt: every row in), all in ms from navigation start. Used by bench/page.sh."""
import os
import statistics
import sys

from playwright.sync_api import sync_playwright

url, runs, entries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = []
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    for _ in range(runs):
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        page.goto(url, wait_until="load")
        page.wait_for_selector("html[data-ready='1']", state="attached")
        n = page.evaluate("document.querySelectorAll('#list tbody tr').length")
        assert n == entries, f"{n} rows, expected {entries}"
        t = page.evaluate("""() => {
            const nav = performance.getEntriesByType('navigation')[0];
            return [nav.responseEnd, nav.domContentLoadedEventEnd, nav.loadEventEnd,
                    window.wirespeedFirstRowsAt, window.wirespeedReadyAt];
        }""")
        rows.append(t)
        ctx.close()
    browser.close()
names = ["response end", "DOMContentLoaded", "load event",
         "table shown (first rows in, script done)", "every row in the table"]
print(f"| measure (ms from navigation start) | median | min | max |")
print(f"|---|---:|---:|---:|")
for i, name in enumerate(names):
    col = [r[i] for r in rows]
    print(f"| {name} | {statistics.median(col):.0f} | {min(col):.0f} | {max(col):.0f} |")
