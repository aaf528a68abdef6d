"""What test_page.py and test_signin.py share: the browser they launch, a
page in its own context that collects console errors, and the list of
named checks with the run that prints `ok NAME` / `FAIL NAME: why` and
exits with the number of failures.
"""
import os
import sys
import time
import traceback

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TIMEOUT_MS = 20_000


class Page:
    """A page in its own browser context, with its console errors collected."""

    def __init__(self, browser, url=None, **ctx):
        self.context = browser.new_context(**ctx)
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page = self.context.new_page()
        self.errors = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        # A name that ran as markup would pop this up.
        self.page.on("dialog", lambda d: (self.errors.append(f"native dialog: {d.message}"), d.dismiss()))
        if url:
            self.goto(url)

    def console_allowed(self, text):
        """Whether a console error is expected (the check's own business)."""
        return False

    def _console(self, msg):
        if msg.type == "error" and not self.console_allowed(msg.text):
            self.errors.append(f"console: {msg.text}")

    def goto(self, url):
        self.page.goto(url)
        self.page.wait_for_selector("html[data-ready='1']")

    def names(self):
        return self.page.eval_on_selector_all(
            "#list tbody tr:not(.up) td.n a", "els => els.map(e => e.textContent)")

    def assert_clean(self):
        assert not self.errors, "console errors: " + "; ".join(self.errors)

    def close(self):
        self.context.close()
        self.assert_clean()


class Checks:
    """Named checks, run in order against one browser; `only` runs those
    whose name contains it."""

    def __init__(self):
        self.all = []
        self.results = []

    def __call__(self, name):
        def wrap(fn):
            self.all.append((name, fn))
            return fn
        return wrap

    def run(self, only=None):
        """Run every check (or those `only` names) and exit with the failures."""
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            for name, fn in self.all:
                if only and only not in name:
                    continue
                t0 = time.monotonic()
                try:
                    fn(browser)
                    self.results.append((name, None))
                    print(f"ok {name} ({time.monotonic() - t0:.1f} s)", flush=True)
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    self.results.append((name, e))
                    print(f"FAIL {name}: {e}", flush=True)
                    traceback.print_exc()
            browser.close()
        failed = [n for n, e in self.results if e]
        print(f"{len(self.results) - len(failed)} passed, {len(failed)} failed", flush=True)
        sys.exit(min(len(failed), 100))
