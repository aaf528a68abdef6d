#!/usr/bin/env python3
"""Open URL (a folder of pictures) in headless Chromium with the page's
grid on and print the ms from navigation start until every thumbnail in
the first screen has loaded. Used by bench/thumbnails.sh."""
import os
import sys

from playwright.sync_api import sync_playwright

url = sys.argv[1]
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
    }""", timeout=120_000, polling=20)
    print(f"{page.evaluate('window.allSeenAt'):.0f} {page.evaluate('window.seenCount')}")
    browser.close()
