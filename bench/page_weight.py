#!/usr/bin/env python3
"""The folder page's first load in headless Chromium, by bytes: every
response of a fresh context (nothing cached) until the page is ready, as
transferred (Chromium's encodedDataLength: headers and the gzipped body)
and as the body's decoded size. Prints one line per response and the
totals. Used by bench/page.sh; `python3 bench/page_weight.py URL`."""
import os
import sys

from playwright.sync_api import sync_playwright

url = sys.argv[1]
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    ctx = browser.new_context()
    page = ctx.new_page()
    cdp = ctx.new_cdp_session(page)
    cdp.send("Network.enable")
    urls, sizes = {}, {}
    cdp.on("Network.responseReceived", lambda e: urls.__setitem__(e["requestId"], e["response"]["url"]))
    cdp.on("Network.dataReceived", lambda e: sizes.__setitem__(
        e["requestId"], sizes.get(e["requestId"], [0, 0]) + [0, 0] and
        [sizes.get(e["requestId"], [0, 0])[0], sizes.get(e["requestId"], [0, 0])[1] + e["dataLength"]]))
    done = {}
    cdp.on("Network.loadingFinished", lambda e: done.__setitem__(e["requestId"], e["encodedDataLength"]))
    page.goto(url)
    page.wait_for_selector("html[data-ready='1']", state="attached")
    page.wait_for_load_state("networkidle")
    total_wire = total_body = 0
    for rid, u in urls.items():
        wire = done.get(rid, 0)
        body = sizes.get(rid, [0, 0])[1]
        total_wire += wire
        total_body += body
        print(f"{wire:8d} {body:8d}  {u.split('/-/assets/')[-1] if '/-/assets/' in u else u}")
    print(f"{total_wire:8d} {total_body:8d}  total: {len(urls)} responses (transferred, decoded bytes)")
    browser.close()
