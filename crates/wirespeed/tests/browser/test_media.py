#!/usr/bin/env python3
"""The grid, the gallery, media and text in the page, in a real headless
Chromium (Playwright), against the `wirespeed serve --auth` process that
crates/wirespeed/tests/browser.rs starts for the sign-in checks
(`signin_in_chromium`).

Usage: test_media.py --base URL --root DIR [--only NAME]

/gallery holds pictures, a video, a Markdown file with a <script> in it
and a text file; alice may write there, bob may read and share; nobody
but alice reads /gallery/closed. Each check prints `ok NAME` or
`FAIL NAME: why`; the exit code is the number of failures.
"""
import argparse
from pathlib import Path

import requests
from playwright.sync_api import expect

import chromium_checks
from chromium_checks import Checks

args = None
check = Checks()


class Page(chromium_checks.Page):
    # A video or a thumbnail the server cannot make is logged as a failed
    # resource; the page falls back to its icon.
    def console_allowed(self, text):
        return "415" in text


def session(name, password):
    """A signed-in session's cookie, as the page's form would get it."""
    r = requests.post(args.base + "-/session", json={"name": name, "password": password},
                      headers={"Origin": args.base.rstrip("/")}, timeout=10)
    assert r.status_code in (200, 204), (r.status_code, r.text)
    name, value = r.headers["set-cookie"].split(";")[0].split("=", 1)
    return {"name": name, "value": value, "url": args.base}


def as_user(browser, name, password, url):
    p = Page(browser)
    p.context.add_cookies([session(name, password)])
    p.goto(url)
    return p


def share_link(path):
    r = requests.post(args.base + "-/shares" + path, auth=("bob", "bob-pw"), timeout=10)
    assert r.status_code == 201, (r.status_code, r.text)
    return r.json()["share"]


def tiles(p):
    return p.page.eval_on_selector_all("#grid .label", "els => els.map(e => e.textContent)")


def thumbnails_loaded(p, n):
    p.page.wait_for_function(
        f"""() => {{
        const imgs = [...document.querySelectorAll('#grid img')].filter(i => /\\.(jpg|png)\\?/.test(i.src));
        return imgs.length === {n} && imgs.every(i => i.complete && i.naturalWidth > 0);
    }}""")


@check("grid through a share link: thumbnails, no sibling the minter may not read; gallery steps with keys")
def grid_and_gallery(browser):
    link = share_link("/gallery/")
    p = Page(browser, args.base + "gallery/?share=" + link)
    p.page.click("#view-btn")
    expect(p.page.locator("#grid")).to_be_visible()
    names = tiles(p)
    assert "closed/" not in names and "media/" in names, names
    thumbnails_loaded(p, 3)
    srcs = p.page.eval_on_selector_all("#grid img", "els => els.map(e => e.getAttribute('src'))")
    assert all("thumbnail" in s and "share=" in s for s in srcs), srcs
    p.page.locator("#grid a", has_text="p1.jpg").click()
    viewer = p.page.locator("#viewer")
    expect(viewer).to_be_visible()
    img = viewer.locator(".stage img")
    assert "p1.jpg" in img.get_attribute("src")
    p.page.keyboard.press("ArrowRight")
    expect(viewer.locator(".stage img")).to_have_attribute("alt", "p2.jpg")
    p.page.keyboard.press("ArrowRight")
    expect(viewer.locator(".stage img")).to_have_attribute("alt", "p3.png")
    p.page.keyboard.press("ArrowLeft")
    expect(viewer.locator(".stage img")).to_have_attribute("alt", "p2.jpg")
    # A swipe to the left steps on, as the arrow does.
    box = viewer.bounding_box()
    y = box["y"] + box["height"] / 2
    p.page.evaluate(f"""() => {{
        const v = document.querySelector('#viewer');
        const ev = (type, x) => v.dispatchEvent(new PointerEvent(type, {{pointerType: 'touch', clientX: x, clientY: {y}, bubbles: true}}));
        ev('pointerdown', 300); ev('pointerup', 100);
    }}""")
    expect(viewer.locator(".stage img")).to_have_attribute("alt", "p3.png")
    p.page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()
    # The grid is remembered: the next folder opens in it.
    p.goto(args.base + "gallery/media/?share=" + link)
    expect(p.page.locator("#grid")).to_be_visible()
    p.close()


@check("a video plays and seeks in the viewer")
def video(browser):
    p = as_user(browser, "bob", "bob-pw", args.base + "gallery/")
    p.page.locator("#list a", has_text="clip.webm").click()
    v = p.page.locator("#viewer video")
    expect(v).to_be_visible()
    p.page.wait_for_function("() => document.querySelector('#viewer video').readyState >= 1")
    duration = p.page.evaluate("document.querySelector('#viewer video').duration")
    assert 2.5 < duration < 3.5, duration
    at = p.page.evaluate("""() => new Promise((ok) => {
        const v = document.querySelector('#viewer video');
        v.muted = true;
        v.addEventListener('seeked', () => ok(v.currentTime), { once: true });
        v.currentTime = 2.0;
    })""")
    assert abs(at - 2.0) < 0.3, at
    p.page.evaluate("document.querySelector('#viewer video').play()")
    p.page.wait_for_function("() => document.querySelector('#viewer video').currentTime > 2.1")
    p.close()


@check("Markdown renders, and a <script> in it does not run")
def markdown(browser):
    p = as_user(browser, "bob", "bob-pw", args.base + "gallery/")
    p.page.locator("#list a", has_text="notes.md").click()
    md = p.page.locator("#viewer .md")
    expect(md.locator("h1")).to_have_text("Notes")
    expect(md.locator("strong")).to_have_text("bold")
    assert "<script>" in md.inner_text(), md.inner_text()
    assert md.locator("script").count() == 0
    assert p.page.evaluate("window.pwned") is None, "the file's script ran"
    hrefs = md.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert not any(h and h.lower().startswith("javascript") for h in hrefs), hrefs
    # No edit for bob: he may not replace the file.
    assert p.page.locator("#viewer button.edit").count() == 0
    p.close()


@check("two editors: the second save is refused with a clear message")
def editors(browser):
    url = args.base + "gallery/"
    a = as_user(browser, "alice", "alice-pw", url)
    b = Page(browser)
    b.context.add_cookies([session("alice", "alice-pw")])
    b.goto(url)
    for p in (a, b):
        p.page.locator("#list a", has_text="edit.txt").click()
        p.page.locator("#viewer button.edit").click()
        expect(p.page.locator("#viewer textarea")).to_have_value("first version\n")
    a.page.fill("#viewer textarea", "saved by A\n")
    a.page.click("#viewer button.save")
    expect(a.page.locator("#viewer .note")).to_have_text("Saved.")
    b.page.fill("#viewer textarea", "saved by B\n")
    b.page.click("#viewer button.save")
    note = b.page.locator("#viewer .note.error")
    expect(note).to_contain_text("someone changed this file")
    assert (Path(args.root) / "gallery/edit.txt").read_text() == "saved by A\n"
    # A saves again over its own save: its ETag followed the first one.
    a.page.fill("#viewer textarea", "saved by A twice\n")
    a.page.click("#viewer button.save")
    expect(a.page.locator("#viewer .note")).to_have_text("Saved.")
    assert (Path(args.root) / "gallery/edit.txt").read_text() == "saved by A twice\n"
    a.close()
    b.errors = [e for e in b.errors if "412" not in e]
    b.close()


@check("bob's grid shows nothing of a folder he may not read")
def no_sibling(browser):
    p = as_user(browser, "bob", "bob-pw", args.base + "gallery/")
    if not p.page.locator("#grid").is_visible():
        p.page.click("#view-btn")
    names = tiles(p)
    assert "closed/" not in names and "p1.jpg" in names, names
    r = p.page.request.get(args.base + "gallery/closed/c.jpg?thumbnail")
    assert r.status in (403, 404), r.status
    p.close()


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--only")
    args = ap.parse_args()
    check.run(args.only)


if __name__ == "__main__":
    main()
