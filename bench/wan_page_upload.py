#!/usr/bin/env python3
"""Upload FILE through wirespeed's folder page in headless Chromium
(Playwright), as a person would: open URL (a folder page), choose the file
in the page's file input, wait until the page shows it done. Used by
bench/wan.sh's page row, run in the client's namespace so Chromium's TCP
uses that namespace's congestion control (CUBIC), as a browser's operating
system would.

Usage: wan_page_upload.py URL FILE READY_FILE

READY_FILE is created just before the file is chosen: Chromium's start and
the page's load are not part of the measured transfer (bench/wan.sh starts
its clock then). Prints the page's state every few seconds; runs until the
upload is done or it is interrupted (SIGINT from the row's time limit).
"""
import os
import signal
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

url, src, ready = sys.argv[1], sys.argv[2], sys.argv[3]
# timeout(1) sends SIGINT; leave through the `with` so Chromium is closed.
signal.signal(signal.SIGTERM, signal.default_int_handler)
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                                 args=["--no-sandbox"])
    try:
        page = browser.new_context().new_page()
        page.goto(url)
        page.wait_for_selector("html[data-ready='1']")
        Path(ready).touch()
        t0 = time.monotonic()
        page.set_input_files("#files", src)
        while True:
            done = page.locator("#uploads li.done").count()
            info = page.locator("#uploads li .info").all_text_contents()
            print(f"{time.monotonic() - t0:6.1f} s done={done} {info}", flush=True)
            if done:
                break
            page.wait_for_timeout(2000)
    except KeyboardInterrupt:
        pass
    finally:
        browser.close()
