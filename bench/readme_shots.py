#!/usr/bin/env python3
"""The README's screenshots: a folder's grid and a search's results, taken
with Playwright in headless Chromium from a running `wirespeed serve
--search` of a small folder of pictures (bench/readme_shots.sh makes it).

    python3 bench/readme_shots.py URL OUT_DIR

Writes OUT_DIR/grid.png and OUT_DIR/search.png (palette PNGs, small)."""
import os
import sys

from PIL import Image
from playwright.sync_api import sync_playwright

url, out = sys.argv[1].rstrip("/"), sys.argv[2]


def small_png(path):
    # A palette of 128 colours keeps a screenshot of soft pictures under
    # 200 KB with no visible banding at this size.
    im = Image.open(path).convert("RGB")
    im.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        path, optimize=True
    )


with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    ctx = browser.new_context(viewport={"width": 1000, "height": 640}, device_scale_factor=1)
    ctx.add_init_script("localStorage.setItem('wirespeed-view', 'grid')")
    page = ctx.new_page()
    page.goto(url + "/")
    page.wait_for_function("""() => {
        const imgs = [...document.querySelectorAll('#grid img')];
        return imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0);
    }""", timeout=60_000)
    page.wait_for_timeout(500)  # the last tiles' pictures painted
    page.screenshot(path=f"{out}/grid.png")
    small_png(f"{out}/grid.png")

    ctx = browser.new_context(viewport={"width": 1000, "height": 330}, device_scale_factor=1)
    ctx.add_init_script("localStorage.setItem('wirespeed-view', 'list')")
    page = ctx.new_page()
    page.goto(url + "/?q=lake")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=f"{out}/search.png")
    small_png(f"{out}/search.png")
    browser.close()
