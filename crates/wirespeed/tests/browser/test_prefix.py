#!/usr/bin/env python3
"""The page under a path prefix in a real headless Chromium (Playwright):
`wirespeed serve --path-prefix /files --auth` behind nginx's
`location /files/` block from docs/serving.md, both started by
crates/wirespeed/tests/browser.rs (`prefix_in_chromium`).

Usage: test_prefix.py --base URL --root DIR --work DIR [--only NAME]

URL is the prefixed folder (`http://127.0.0.1:PORT/files/`). alice has rwd
everywhere, anyone r. Each check prints `ok NAME` or `FAIL NAME: why`; the
exit code is the number of failures. The Rust test checks the disk again.
"""
import argparse
from pathlib import Path

from playwright.sync_api import expect

import chromium_checks
from chromium_checks import Checks

args = None
check = Checks()


class Page(chromium_checks.Page):
    """A page that records every request it makes: none may leave the prefix."""

    def __init__(self, browser, url=None, **ctx):
        super().__init__(browser, None, **ctx)
        self.outside = []
        self.page.on("request", self._request)
        if url:
            self.goto(url)

    def _request(self, r):
        if r.url.startswith(args.origin) and not r.url.startswith(args.base):
            self.outside.append(f"{r.method} {r.url}")

    # The 401 of a folder that needs a user, answered by the page's form.
    def console_allowed(self, text):
        return "401" in text

    def assert_clean(self):
        assert not self.outside, "requests outside the prefix: " + "; ".join(self.outside)
        super().assert_clean()


@check("the page loads under the prefix with its script and styles, and lists")
def loads(browser):
    p = Page(browser, args.base)
    # The script ran (it marks the page ready) and the styles applied.
    sheets = p.page.evaluate(
        "[...document.styleSheets].filter(s => s.href && s.href.includes('/files/-/assets/'))"
        ".map(s => s.cssRules.length)")
    assert sheets and sheets[0] > 0, sheets
    assert p.page.evaluate("getComputedStyle(document.body).margin") != "8px", "default styles"
    names = p.names()
    assert "a.txt" in names and "sub/" in names, names
    # Into a folder and back up through the breadcrumbs and the up row.
    p.page.locator("#list td.n a", has_text="sub/").click()
    p.page.wait_for_url(args.base + "sub/")
    p.page.wait_for_selector("html[data-ready='1']")
    assert "inner.txt" in p.names(), p.names()
    expect(p.page.locator("#list tr.up a")).to_have_attribute("href", "../")
    p.page.locator("nav.crumbs a", has_text="Home").click()
    p.page.wait_for_url(args.base)
    p.close()


@check("sign in under the prefix: the cookie's Path is the prefix; upload, plain and resumable")
def sign_in_and_upload(browser):
    p = Page(browser, args.base)
    p.page.locator("#signin-btn").click()
    d = p.page.locator("dialog#signin")
    expect(d).to_be_visible()
    d.get_by_label("User name").fill("alice")
    d.get_by_label("Password").fill("alice-pw")
    d.get_by_role("button", name="Sign in").click()
    p.page.wait_for_selector("#user-name")
    p.page.wait_for_selector("html[data-ready='1']")
    cookies = p.context.cookies()
    assert len(cookies) == 1 and cookies[0]["path"] == "/files", cookies
    work = Path(args.work)
    p.page.set_input_files("#files", [str(work / "small.txt"), str(work / "big.bin")])
    p.page.wait_for_function("() => document.querySelectorAll('#uploads li.done').length === 2",
                             timeout=60_000)
    p.page.wait_for_function(
        "() => [...document.querySelectorAll('#list td.n a')].some(a => a.textContent === 'big.bin')")
    root = Path(args.root)
    assert (root / "small.txt").read_bytes() == (work / "small.txt").read_bytes()
    assert (root / "big.bin").read_bytes() == (work / "big.bin").read_bytes()
    p.page.locator("#signout-btn").click()
    p.page.wait_for_selector("#signin-btn")
    assert not p.context.cookies(), p.context.cookies()
    p.close()


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only")
    args = ap.parse_args()
    args.origin = args.base.split("/files/")[0]
    check.run(args.only)


if __name__ == "__main__":
    main()
