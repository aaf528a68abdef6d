#!/usr/bin/env python3
"""Open URL (a folder of pictures) in headless Chromium with the page's
grid on. Used by bench/thumbnails.sh.

    thumbnails_grid.py URL            # ms from navigation start until every
                                      # thumbnail in the first screen has
                                      # loaded, and how many there were
    thumbnails_grid.py URL --scroll   # then scroll to the end of the folder a
                                      # screen every 250 ms, as a viewer
                                      # does; prints the s it took"""
import os
import sys
import time

from playwright.sync_api import sync_playwright

url = sys.argv[1]
scroll = "--scroll" in sys.argv[2:]
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_init_script("localStorage.setItem('wirespeed-view', 'grid')")
    page = ctx.new_page()
    page.goto(url)
    page.wait_for_function("""() => {
        const imgs = [...document.querySelectorAll('#grid img')];
        const seen = imgs.filter(i => i.getBoundingClientRect().top < innerHeight);
        if (!seen.length || !seen.every(i => i.complete && i.naturalWidth > 0)) return false;
        window.allSeenAt = window.allSeenAt || performance.now();
        window.seenCount = seen.length;
        return true;
    }""", timeout=300_000, polling=20)
    if not scroll:
        print(f"{page.evaluate('window.allSeenAt'):.0f} {page.evaluate('window.seenCount')}")
    else:
        t0 = time.monotonic()
        while page.evaluate("scrollY + innerHeight < document.documentElement.scrollHeight - 2"):
            page.evaluate("scrollBy(0, innerHeight)")
            page.wait_for_timeout(250)
        print(f"{time.monotonic() - t0:.1f}")
    browser.close()
