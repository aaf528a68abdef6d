#!/usr/bin/env python3
"""The folder page in a real headless Chromium (Playwright), against running
`wirespeed serve` processes that crates/wirespeed/tests/browser.rs starts.

Usage: test_page.py --base URL --root DIR --work DIR --token-base URL
       --private-base URL --readonly-base URL --token TOKEN [--screenshots DIR]
       [--only NAME]

Each check (run by chromium_checks.py, shared with test_signin.py) prints
`ok NAME` or `FAIL NAME: why`; the exit code is the number
of failures. The Rust test then checks the files on disk again.
"""
import argparse
import os
import hashlib
import time
from pathlib import Path

from playwright.sync_api import expect

import chromium_checks
from chromium_checks import Checks

args = None
check = Checks()


def digest(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


class Page(chromium_checks.Page):
    """A page whose console errors containing one of `allowed` are expected."""

    def __init__(self, browser, url, allowed=(), **ctx):
        self.allowed = allowed
        super().__init__(browser, url, **ctx)

    def console_allowed(self, text):
        return any(a in text for a in self.allowed)


def row_action(p, name, action):
    row = p.page.locator("#list tbody tr").filter(has=p.page.locator("td.n a", has_text=name))
    row.locator("button.act").click()
    p.page.get_by_role("menuitem", name=action).click()


@check("listing: folders first, human sizes, local times, sort and reverse, filter")
def listing(browser):
    p = Page(browser, args.base)
    assert p.names() == ["adir/", "zdir/", "<img src=x onerror=alert(1)>.txt", "a.txt", "b.bin", "c.dat"], p.names()
    size = p.page.locator("#list tbody tr", has_text="c.dat").locator("td.s").text_content()
    assert size == "97.7 KiB", size
    shown = p.page.locator("#list tbody tr", has_text="a.txt").locator("time").text_content()
    assert shown and "T" not in shown and not shown.endswith("Z"), f"time not localised: {shown!r}"
    p.page.get_by_role("button", name="Size").click()
    assert p.names()[2:] == ["a.txt", "<img src=x onerror=alert(1)>.txt", "b.bin", "c.dat"], p.names()
    assert p.page.locator("th.s").get_attribute("aria-sort") == "ascending"
    p.page.get_by_role("button", name="Size").click()
    assert p.names() == ["zdir/", "adir/", "c.dat", "b.bin", "<img src=x onerror=alert(1)>.txt", "a.txt"], p.names()
    assert p.page.locator("th.s").get_attribute("aria-sort") == "descending"
    p.page.fill("#filter", "B.")
    assert p.names() == ["b.bin"], p.names()
    p.page.fill("#filter", "nothing-like-this")
    expect(p.page.locator("#empty")).to_be_visible()
    p.page.fill("#filter", "")
    assert len(p.names()) == 6
    p.close()


@check("navigate: into a folder, up by ../ and by the breadcrumb")
def navigate(browser):
    p = Page(browser, args.base)
    p.page.click("text=zdir/")
    p.page.wait_for_url("**/zdir/")
    p.page.wait_for_selector("html[data-ready='1']")
    assert p.names() == ["inner.txt"], p.names()
    assert p.page.locator(".crumbs a").all_text_contents() == ["Home", "zdir"]
    p.page.click("a[rel=up]")
    p.page.wait_for_url(args.base)
    p.page.wait_for_selector("html[data-ready='1']")
    assert "zdir/" in p.names()
    p.page.click("text=zdir/")
    p.page.wait_for_url("**/zdir/")
    p.page.click(".crumbs >> text=Home")
    p.page.wait_for_url(args.base)
    p.close()


@check("an HTML file name is shown as text, before and after a re-render")
def html_name(browser):
    p = Page(browser, args.base)
    name = "<img src=x onerror=alert(1)>.txt"
    assert p.page.locator("#list img").count() == 0
    assert name in p.names()
    p.page.get_by_role("button", name="Modified").click()  # rebuilt rows
    p.page.evaluate("() => document.dispatchEvent(new Event('visibilitychange'))")
    assert name in p.names()
    assert p.page.locator("#list img").count() == 0
    row_action(p, name, "Rename…")
    assert p.page.locator("dialog input").input_value() == name
    p.page.keyboard.press("Escape")
    p.close()


@check("upload through the file input; the listing updates without a reload")
def upload_input(browser):
    p = Page(browser, args.base)
    src = Path(args.work) / "hello world.txt"
    p.page.set_input_files("#files", str(src))
    expect(p.page.locator("#list td.n a", has_text="hello world.txt")).to_be_visible()
    expect(p.page.locator("#uploads li.done")).to_have_count(1)
    assert digest(Path(args.root) / "hello world.txt") == digest(src)
    p.close()


@check("upload by dropping files (a synthesised DataTransfer)")
def upload_drop(browser):
    p = Page(browser, args.base)
    p.page.evaluate("""() => {
        const dt = new DataTransfer();
        dt.items.add(new File(['dropped one\\n'], 'dropped-1.txt', {type: 'text/plain'}));
        dt.items.add(new File([new Uint8Array(70000).map((_, i) => i % 251)], 'dropped-2.bin'));
        const fire = (type) => document.body.dispatchEvent(
            new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true}));
        fire('dragenter'); fire('dragover'); fire('drop');
    }""")
    expect(p.page.locator("#list td.n a", has_text="dropped-2.bin")).to_be_visible()
    expect(p.page.locator("#list td.n a", has_text="dropped-1.txt")).to_be_visible()
    assert (Path(args.root) / "dropped-1.txt").read_bytes() == b"dropped one\n"
    assert (Path(args.root) / "dropped-2.bin").read_bytes() == bytes(i % 251 for i in range(70000))
    assert p.page.evaluate("document.body.classList.contains('dragging')") is False
    p.close()


def throttle(p, bytes_per_s):
    cdp = p.context.new_cdp_session(p.page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 20,
        "downloadThroughput": -1, "uploadThroughput": bytes_per_s})
    return cdp


@check("progress: per-file and total bars, rate and time left during a throttled upload")
def progress(browser):
    p = Page(browser, args.base, viewport={"width": 1100, "height": 720})
    cdp = throttle(p, 1_000_000)
    src = Path(args.work) / "three.bin"
    p.page.set_input_files("#files", str(src))
    p.page.wait_for_function("""() => {
        const b = document.querySelector('#uploads li progress');
        const info = document.querySelector('#uploads li .info');
        return b && b.value > 0 && b.value < b.max && info.textContent.includes('left');
    }""")
    info = p.page.locator("#uploads li .info").text_content()
    total = p.page.locator("#uploads .total .text").text_content()
    assert "/s" in info and "left" in info, info
    assert "of 1" in total and "MiB" in total, total
    if args.screenshots:
        p.page.screenshot(path=str(Path(args.screenshots) / "page-upload.png"))
    # Cancel stops it and stores nothing; Retry sends it again, whole.
    p.page.locator("#uploads li").get_by_role("button", name="Cancel").click()
    expect(p.page.locator("#uploads li.cancelled")).to_have_count(1)
    expect(p.page.locator("#uploads li").get_by_role("button", name="Retry")).to_be_visible()
    time.sleep(0.3)
    assert not (Path(args.root) / "three.bin").exists(), "a cancelled upload was stored"
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    p.page.locator("#uploads li").get_by_role("button", name="Retry").click()
    expect(p.page.locator("#uploads li.done")).to_have_count(1, timeout=60_000)
    assert digest(Path(args.root) / "three.bin") == digest(src)
    p.close()


@check("upload a folder through the folder picker: the tree is kept")
def upload_folder(browser):
    p = Page(browser, args.base)
    p.page.set_input_files("#folder-files", str(Path(args.work) / "tree"))
    expect(p.page.locator("#uploads li.done")).to_have_count(2)
    expect(p.page.locator("#list td.n a", has_text="tree/")).to_be_visible()
    for rel in ["tree/top.txt", "tree/sub dir/deep.txt"]:
        assert (Path(args.root) / rel).read_bytes() == (Path(args.work) / rel).read_bytes(), rel
    p.close()


@check("a large upload cut by 2 s offline completes byte-identical")
def offline(browser):
    # The cut fails requests in flight: Chromium logs them.
    p = Page(browser, args.base, allowed=("ERR_INTERNET_DISCONNECTED", "Failed to load resource"))
    methods = []
    p.page.on("request", lambda r: methods.append((r.method, r.headers.get("upload-offset"))))
    failed = []
    p.page.on("requestfailed", lambda r: failed.append((r.method, r.failure)))
    cdp = throttle(p, 3_000_000)
    src = Path(args.work) / "big.bin"
    p.page.set_input_files("#files", str(src))
    size = src.stat().st_size
    p.page.wait_for_function(f"""() => {{
        const b = document.querySelector('#uploads li progress');
        return b && b.value > {size // 4};
    }}""", timeout=60_000)
    # The throttling session going offline fails the requests it throttles
    # (Playwright's own offline switch only refuses new ones).
    cut = len(methods)
    cdp.send("Network.emulateNetworkConditions", {
        "offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    p.context.set_offline(True)
    time.sleep(2)
    p.context.set_offline(False)
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    expect(p.page.locator("#uploads li.done")).to_have_count(1, timeout=120_000)
    assert digest(Path(args.root) / "big.bin") == digest(src), "bytes differ"
    assert failed, "the cut failed no request"
    print(f"  failed by the cut: {failed}; requests {methods}", flush=True)
    after = methods[cut:]
    patches = [int(o) for m, o in after if m == "PATCH" and o is not None]
    if any(m == "PATCH" for m, _ in methods):
        assert not any(m in ("POST", "PUT") for m, _ in after), f"restarted: {after}"
        assert any(m == "HEAD" for m, _ in after), f"no offset asked after the cut: {after}"
        assert patches and patches[0] > 0, f"tus resumed from a later offset: {after}"
        print(f"  resumed through tus from offset {patches[0]}", flush=True)
    else:
        print("  no tus routes on this server: the upload restarted as a PUT", flush=True)
    if args.expect_tus:
        assert any(m == "PATCH" for m, _ in methods), "expected the tus path"
    p.close()


@check("a file of 64 MiB goes as six parallel partial uploads joined by a final one (tus concatenation)")
def parallel_parts(browser):
    if not args.expect_tus:
        print("  no tus routes on this server: skipped", flush=True)
        return
    (Path(args.root) / "pdir").mkdir(exist_ok=True)
    p = Page(browser, args.base + "pdir/")
    concat = []
    p.page.on("request", lambda r: r.method == "POST" and "/-/uploads/" in r.url
              and concat.append(r.headers.get("upload-concat", "")))
    src = Path(args.work) / "parts.bin"
    if not src.exists():
        src.write_bytes(os.urandom(64 * 1024 * 1024))
    p.page.set_input_files("#files", str(src))
    expect(p.page.locator("#uploads li.done")).to_have_count(1, timeout=120_000)
    assert digest(Path(args.root) / "pdir" / "parts.bin") == digest(src), "bytes differ"
    assert concat.count("partial") == 6, concat
    finals = [c for c in concat if c.startswith("final;")]
    assert len(finals) == 1 and len(finals[0].split()) == 6, finals
    assert not list((Path(args.root) / ".wirespeed-uploads").glob("*.part")), "partials left"
    p.close()


@check("a large upload interrupted by a reload resumes when the same file is chosen again")
def reload_resume(browser):
    # The reload aborts the PATCH in flight: Chromium may log it.
    p = Page(browser, args.base + "adir/", allowed=("Failed to load resource",))
    acked = []
    p.page.on("response", lambda r: r.request.method == "PATCH" and r.status == 204
              and acked.append(int(r.headers.get("upload-offset", "0"))))
    cdp = throttle(p, 3_000_000)
    src = Path(args.work) / "big.bin"
    p.page.set_input_files("#files", str(src))
    deadline = time.monotonic() + 60
    while not acked and time.monotonic() < deadline:
        p.page.wait_for_timeout(100)
    assert acked, "no chunk acknowledged"
    p.goto(args.base + "adir/")
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    sent = []
    p.page.on("request", lambda r: sent.append((r.method, r.headers.get("upload-offset"))))
    p.page.set_input_files("#files", str(src))
    expect(p.page.locator("#uploads li.done")).to_have_count(1, timeout=60_000)
    assert digest(Path(args.root) / "adir" / "big.bin") == digest(src), "bytes differ"
    assert sent[0][0] == "HEAD", f"asked the offset first: {sent}"
    assert not any(m in ("POST", "PUT") for m, _ in sent), f"started over: {sent}"
    first = next(int(o) for m, o in sent if m == "PATCH")
    assert first >= acked[0] > 0, f"resumed at {first}, {acked[0]} was acknowledged"
    print(f"  resumed after the reload at offset {first}", flush=True)
    p.close()


@check("read-only server: no upload, new folder, rename or delete, but folder and selection downloads; a browser's 404 is a page with a way up")
def read_only(browser):
    p = Page(browser, args.readonly_base, allowed=("404",))
    assert "b.bin" in p.names(), p.names()
    for sel in ["#upload-btn", "#upload-folder-btn", "#mkdir-btn", "#upform"]:
        expect(p.page.locator(sel)).to_have_count(0)
    expect(p.page.locator("#filter")).to_be_visible()
    # Reading is allowed: the folder and a selection download as archives.
    expect(p.page.get_by_role("link", name="Download folder (zip)")).to_be_visible()
    p.page.get_by_role("checkbox", name="Select b.bin", exact=True).check()
    expect(p.page.locator("#download-selected")).to_have_text("Download 1 selected (zip)")
    row = p.page.locator("#list tbody tr").filter(has=p.page.locator("td.n a", has_text="b.bin"))
    row.locator("button.act").click()
    expect(p.page.get_by_role("menuitem", name="Download")).to_be_visible()
    expect(p.page.get_by_role("menuitem", name="Copy link")).to_be_visible()
    expect(p.page.get_by_role("menuitem", name="Rename…")).to_have_count(0)
    expect(p.page.get_by_role("menuitem", name="Delete…")).to_have_count(0)
    r = p.page.goto(args.readonly_base + "zdir/no-such-file.txt")
    assert r.status == 404, r.status
    expect(p.page.locator("a[rel=up]")).to_have_attribute("href", "/zdir/")
    p.page.click("a[rel=up]")
    p.page.wait_for_selector("html[data-ready='1']")
    assert p.names() == ["inner.txt"], p.names()
    p.close()


@check("a refusal that a retry cannot change (409) shows no Retry")
def permanent_refusal(browser):
    p = Page(browser, args.base, allowed=("409",))
    p.page.set_input_files("#files", str(Path(args.work) / "clash" / "zdir"))
    item = p.page.locator("#uploads li.failed")
    expect(item).to_contain_text("409")
    expect(item.get_by_role("button", name="Retry")).to_be_hidden()
    assert (Path(args.root) / "zdir").is_dir()
    p.close()


@check("new folder, rename and delete through the page")
def manage(browser):
    # The refused rename (412) and delete (409) are logged by Chromium.
    p = Page(browser, args.base, allowed=("412", "409"))
    root = Path(args.root)
    p.page.click("#mkdir-btn")
    p.page.fill("dialog input", "made here")
    p.page.click("dialog button.primary")
    expect(p.page.locator("#list td.n a", has_text="made here/")).to_be_visible()
    assert (root / "made here").is_dir()
    row_action(p, "a.txt", "Rename…")
    p.page.fill("dialog input", "renamed.txt")
    p.page.keyboard.press("Enter")
    expect(p.page.locator("#list td.n a", has_text="renamed.txt")).to_be_visible()
    assert not (root / "a.txt").exists() and (root / "renamed.txt").read_bytes() == b"aaaa\n"
    # Rename onto an existing name is refused, nothing replaced.
    row_action(p, "renamed.txt", "Rename…")
    p.page.fill("dialog input", "b.bin")
    p.page.keyboard.press("Enter")
    expect(p.page.locator("#toast")).to_contain_text("already exists")
    assert (root / "renamed.txt").exists() and (root / "b.bin").stat().st_size == 3000
    row_action(p, "renamed.txt", "Delete…")
    p.page.click("dialog button.danger")
    expect(p.page.locator("#list td.n a", has_text="renamed.txt")).to_have_count(0)
    assert not (root / "renamed.txt").exists()
    # A folder with something in it cannot be deleted: said so, kept.
    row_action(p, "zdir/", "Delete…")
    p.page.click("dialog button.danger")
    expect(p.page.locator("#toast")).to_contain_text("empty folder")
    assert (root / "zdir" / "inner.txt").exists()
    p.close()


@check("keyboard: Tab reaches the row actions, Enter opens, Escape closes and returns focus")
def keyboard(browser):
    p = Page(browser, args.base)
    for _ in range(40):
        p.page.keyboard.press("Tab")
        if p.page.evaluate("document.activeElement.classList.contains('act')"):
            break
    else:
        raise AssertionError("no row action reachable by Tab")
    outline = p.page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none", "focus is visible"
    p.page.keyboard.press("Enter")
    expect(p.page.locator(".menu")).to_be_visible()
    assert p.page.evaluate("document.activeElement.getAttribute('role')") == "menuitem"
    p.page.keyboard.press("ArrowDown")
    assert p.page.evaluate("document.activeElement.textContent") == "Copy link"
    p.page.keyboard.press("Escape")
    expect(p.page.locator(".menu")).to_have_count(0)
    assert p.page.evaluate("document.activeElement.classList.contains('act')")
    p.close()


@check("a --token server: a write asks for the token in the page, once, then works")
def token(browser):
    p = Page(browser, args.token_base, allowed=("401",))
    src = Path(args.work) / "hello world.txt"
    p.page.set_input_files("#files", str(src))
    dialog = p.page.locator("dialog[open]")
    expect(dialog).to_be_visible()
    assert dialog.locator("input").get_attribute("type") == "password"
    # A wrong token is asked for again, saying so.
    dialog.locator("input").fill("not-the-token")
    dialog.locator("button.primary").click()
    expect(p.page.locator("dialog[open]")).to_contain_text("not accepted")
    p.page.locator("dialog[open] input").fill(args.token)
    p.page.locator("dialog[open] button.primary").click()
    expect(p.page.locator("#uploads li.done")).to_have_count(1)
    assert digest(Path(args.token_root) / "hello world.txt") == digest(src)
    assert p.page.evaluate("sessionStorage.getItem('wirespeed-token')") == args.token
    # The next write uses the kept token: no second prompt.
    p.page.click("#mkdir-btn")
    p.page.fill("dialog input", "with-token")
    p.page.click("dialog button.primary")
    expect(p.page.locator("#list td.n a", has_text="with-token/")).to_be_visible()
    assert (Path(args.token_root) / "with-token").is_dir()
    p.close()


@check("a --private server: the page asks for the token, then lists; folders below need no new prompt")
def private(browser):
    p = Page(browser, None, allowed=("401",))
    resp = p.page.goto(args.private_base)
    assert resp.status == 401
    assert "basic" not in (resp.headers.get("www-authenticate") or "").lower()
    dialog = p.page.locator("dialog[open]")
    expect(dialog).to_be_visible()
    assert p.names() == []
    dialog.locator("input").fill(args.token)
    dialog.locator("button.primary").click()
    p.page.wait_for_selector("html[data-ready='1']")
    assert p.names() == ["secret-dir/", "secret.txt"], p.names()
    p.page.click("text=secret-dir/")
    p.page.wait_for_url("**/secret-dir/")
    p.page.wait_for_selector("html[data-ready='1']")
    assert p.names() == ["deeper.txt"], p.names()
    assert p.page.locator("dialog[open]").count() == 0
    # The row menu's Download fetches with the token (a plain link would get 401).
    with p.page.expect_download() as dl:
        row_action(p, "deeper.txt", "Download")
    assert Path(dl.value.path()).read_bytes() == b"d\n"
    assert dl.value.suggested_filename == "deeper.txt"
    p.close()


@check("download from the row menu, and copy link falls back to a field without a clipboard")
def download(browser):
    p = Page(browser, args.base)
    with p.page.expect_download() as dl:
        row_action(p, "c.dat", "Download")
    assert Path(dl.value.path()).read_bytes() == bytes(100_000)
    row_action(p, "b.bin", "Copy link")
    field = p.page.locator("dialog[open] input")
    if field.count():
        assert field.input_value() == args.base + "b.bin"
        p.page.keyboard.press("Escape")
    else:
        expect(p.page.locator("#toast")).to_have_text("Link copied")
    p.close()


@check("download a folder as one zip from the toolbar, and a subfolder as tar from its row menu")
def download_folder(browser):
    import tarfile
    import zipfile
    p = Page(browser, args.base)
    with p.page.expect_download() as dl:
        p.page.get_by_role("link", name="Download folder (zip)").click()
    assert dl.value.suggested_filename == "files.zip", dl.value.suggested_filename
    with zipfile.ZipFile(dl.value.path()) as z:
        assert z.testzip() is None
        assert z.read("files/c.dat") == bytes(100_000)
        assert "files/zdir/" in z.namelist(), z.namelist()
    with p.page.expect_download() as dl:
        row_action(p, "zdir/", "Download as tar")
    assert dl.value.suggested_filename == "zdir.tar", dl.value.suggested_filename
    with tarfile.open(dl.value.path()) as t:
        assert t.getnames()[0] == "zdir", t.getnames()
    p.close()


@check("tick rows and download just those as one zip (?archive=zip&name=…); ticks survive sorting")
def download_selected(browser):
    import zipfile
    p = Page(browser, args.base)
    link = p.page.locator("#download-selected")
    expect(link).to_be_hidden()

    def tick(name):
        return p.page.get_by_role("checkbox", name="Select " + name, exact=True)

    # (a.txt is gone by now: the manage check renamed and deleted it.)
    for name in ["b.bin", "zdir", "c.dat"]:
        tick(name).check()
    tick("c.dat").uncheck()
    expect(link).to_have_text("Download 2 selected (zip)")
    p.page.get_by_role("button", name="Size").click()
    expect(tick("b.bin")).to_be_checked()
    expect(tick("c.dat")).not_to_be_checked()
    with p.page.expect_download() as dl:
        link.click()
    assert dl.value.suggested_filename == "files.zip", dl.value.suggested_filename
    with zipfile.ZipFile(dl.value.path()) as z:
        assert z.testzip() is None
        names = z.namelist()
        assert z.read("files/b.bin") == bytes(3000)
        assert z.read("files/zdir/inner.txt") == b"in\n"
        others = [n for n in names if n != "files/" and not n.startswith(("files/b.bin", "files/zdir/"))]
        assert not others, f"not selected but archived: {others}"
    tick("b.bin").uncheck()
    tick("zdir").uncheck()
    expect(link).to_be_hidden()
    p.close()


@check("phone: no horizontal scrolling at 375 px")
def phone(browser):
    p = Page(browser, args.base, viewport={"width": 375, "height": 740}, is_mobile=True,
             device_scale_factor=2, has_touch=True)
    width = p.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"scrollWidth {width}"
    if args.screenshots:
        p.page.screenshot(path=str(Path(args.screenshots) / "page-phone.png"))
    p.close()


@check("dark mode follows prefers-color-scheme")
def dark(browser):
    p = Page(browser, args.base, color_scheme="dark")
    bg = p.page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg in ("rgb(13, 17, 23)",), bg
    p.close()


@check("favicon and assets: embedded icon, long-cached versioned assets")
def favicon(browser):
    p = Page(browser, args.base)
    r = p.page.request.get(args.base + "favicon.ico")
    assert r.status == 200 and r.headers["content-type"] == "image/x-icon", r.status
    assert r.body()[:4] == b"\x00\x00\x01\x00"
    href = p.page.get_attribute("link[rel=stylesheet]", "href")
    r = p.page.request.get(args.base.rstrip("/") + href)
    assert "immutable" in r.headers["cache-control"], r.headers
    if args.screenshots:
        p.page.set_viewport_size({"width": 1100, "height": 640})
        p.page.screenshot(path=str(Path(args.screenshots) / "page-desktop.png"))
    p.close()


@check("without JavaScript the plain form still uploads")
def no_js(browser):
    p = Page(browser, None, java_script_enabled=False)
    # The server's own table is the listing without a script.
    p.page.goto(args.base)
    expect(p.page.locator("#rows td.n a", has_text="b.bin")).to_be_visible()
    expect(p.page.locator("#rows tr", has_text="b.bin").locator("td.s")).to_have_text("3000")
    p.page.goto(args.base + "adir/")
    submit = p.page.locator("#upform button[type=submit]")
    expect(submit).to_be_visible()
    p.page.set_input_files("#files", str(Path(args.work) / "hello world.txt"))
    submit.click()
    p.page.wait_for_load_state()
    assert (Path(args.root) / "adir" / "hello world.txt").read_bytes() == \
        (Path(args.work) / "hello world.txt").read_bytes()
    p.close()


@check("modules: the page's ES modules all load under the nonce-only policy; tus-js-client is served by us, fetched for a large upload")
def modules(browser):
    # Chromium logs the refusal of the stored script.
    p = Page(browser, None, allowed=("mods/stored.js",))
    p.page.add_init_script("""window.wsViolations = [];
        document.addEventListener('securitypolicyviolation', (e) => window.wsViolations.push(e.blockedURI));""")
    loaded = {}
    p.page.on("response", lambda r: loaded.__setitem__(r.url, (r.status, r.headers.get("content-type", ""))))
    p.goto(args.base)
    preloads = p.page.eval_on_selector_all("link[rel=modulepreload]", "els => els.map(e => e.href)")
    assert any(u.endswith("/page/main.js") for u in preloads), preloads
    assert len(preloads) >= 10, f"one module per concern: {preloads}"
    for u in preloads:
        assert u.startswith(args.base + "-/assets/"), u
        assert loaded.get(u, (0, ""))[0] == 200, (u, loaded.get(u))
        assert loaded[u][1].startswith("text/javascript"), (u, loaded[u])
    assert not any("/vendor/" in u for u in loaded), "tus-js-client fetched before any upload"
    # The policy still admits no script by origin: one stored here is refused.
    (Path(args.root) / "mods").mkdir(exist_ok=True)
    (Path(args.root) / "mods" / "stored.js").write_text("window.wsStored = 1;\n")
    p.page.evaluate("""() => new Promise((done) => {
        const s = document.createElement('script');
        s.src = '/mods/stored.js';
        s.onload = s.onerror = done;
        document.head.append(s);
    })""")
    assert p.page.evaluate("window.wsStored") is None, "a stored script ran"
    assert p.page.evaluate("window.wsViolations").count(args.base + "mods/stored.js") == 1
    # A large file goes through tus-js-client, from this server.
    p.page.goto(args.base + "mods/")
    p.page.wait_for_selector("html[data-ready='1']")
    tus_requests = []
    p.page.on("request", lambda r: "/-/uploads/" in r.url and tus_requests.append(r.headers))
    src = Path(args.work) / "big.bin"
    p.page.set_input_files("#files", str(src))
    expect(p.page.locator("#uploads li.done")).to_have_count(1, timeout=60_000)
    assert digest(Path(args.root) / "mods" / "big.bin") == digest(src), "bytes differ"
    vendor = [u for u in loaded if "/vendor/" in u]
    assert len(vendor) == 1 and vendor[0].startswith(args.base + "-/assets/"), vendor
    assert loaded[vendor[0]][0] == 200, loaded[vendor[0]]
    assert p.page.evaluate("typeof window.tus.Upload") == "function", "not tus-js-client"
    assert tus_requests and all(h.get("tus-resumable") == "1.0.0" and h.get("x-wirespeed-page") == "1"
                                and h.get("x-oc-mtime") for h in tus_requests), tus_requests
    assert p.page.evaluate("window.wsViolations") == [], p.page.evaluate("window.wsViolations")
    p.close()


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--token-base", required=True)
    ap.add_argument("--token-root", required=True)
    ap.add_argument("--private-base", required=True)
    ap.add_argument("--readonly-base", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--screenshots")
    ap.add_argument("--only")
    ap.add_argument("--expect-tus", action="store_true")
    args = ap.parse_args()
    check.run(args.only)


if __name__ == "__main__":
    main()
