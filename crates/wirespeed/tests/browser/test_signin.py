#!/usr/bin/env python3
"""The page's sign-in and share links in a real headless Chromium
(Playwright), against `wirespeed serve --auth` processes that
crates/wirespeed/tests/browser.rs starts (`signin_in_chromium`).

Usage: test_signin.py --base URL --root DIR --work DIR [--tls-base URL] [--only NAME]

bob has rws on /team (no d), alice rwd. Each check prints `ok NAME` or
`FAIL NAME: why`; the exit code is the number of failures. The Rust test
then checks the files on disk again.
"""
import argparse
import os
import urllib.parse
from pathlib import Path

import requests
from playwright.sync_api import expect

import chromium_checks
from chromium_checks import Checks


def cookie_name(base):
    """The session cookie's name on the server at `base`: one per port
    (browsers keep cookies per host, whatever the port), `__Host-` first
    under TLS."""
    u = urllib.parse.urlsplit(base)
    prefix = "__Host-" if u.scheme == "https" else ""
    return f"{prefix}wirespeed-session" + (f"-{u.port}" if u.port else "")


COOKIE = None  # cookie_name(args.base), set in main

args = None
check = Checks()


class Page(chromium_checks.Page):
    """A page that also collects any Basic challenge it meets."""

    def __init__(self, browser, url=None, **ctx):
        super().__init__(browser, None, **ctx)
        self.basic = []
        # The page must never meet a Basic challenge (the browser's dialog).
        self.page.on("response", self._response)
        if url:
            self.goto(url)

    def _response(self, r):
        challenge = r.headers.get("www-authenticate", "")
        if "basic" in challenge.lower():
            self.basic.append(f"{r.request.method} {r.url}: {challenge}")

    # Statuses a check expects the page to meet (logged by Chromium as
    # failed resources): a 401 the page answers with its form, by default.
    allowed = ("401",)

    def console_allowed(self, text):
        return any(s in text for s in self.allowed)

    def session(self):
        names = {COOKIE, cookie_name(args.tls_base or args.base)}
        return next((c for c in self.context.cookies() if c["name"] in names), None)

    def sign_in(self, name, password):
        d = self.page.locator("dialog#signin")
        expect(d).to_be_visible()
        d.get_by_label("User name").fill(name)
        d.get_by_label("Password").fill(password)
        d.get_by_role("button", name="Sign in").click()

    def signed_in(self, name, password):
        """Sign in and wait until the page shows the user and is ready."""
        self.sign_in(name, password)
        self.page.wait_for_selector("#user-name")
        self.page.wait_for_selector("html[data-ready='1']")

    def assert_clean(self):
        assert not self.basic, "Basic challenges reached the page: " + "; ".join(self.basic)
        super().assert_clean()


def row_menu(p, name):
    """Open a row's menu; the names of its items."""
    row = p.page.locator("#list tbody tr").filter(has=p.page.locator("td.n a", has_text=name))
    row.locator("button.act").click()
    menu = p.page.locator(".menu[role=menu]")
    expect(menu).to_be_visible()
    return [t.strip() for t in menu.get_by_role("menuitem").all_text_contents()]


@check("sign-in: a wrong password shows an error in the page's form, no Basic dialog")
def wrong_password(browser):
    p = Page(browser, args.base + "team/")
    # /team needs a user: the navigation got the page with its form.
    p.sign_in("bob", "not-bobs")
    err = p.page.locator("#signin-error")
    expect(err).to_be_visible()
    expect(err).to_have_text("Wrong user name or password.")
    assert p.session() is None
    # An unknown user reads the same.
    p.sign_in("mallory", "whatever")
    expect(err).to_have_text("Wrong user name or password.")
    p.close()


@check("sign-in as bob: upload through the page, no Delete on /team, sign out ends the session")
def bob(browser):
    p = Page(browser, args.base)
    # The public root offers Sign in and no upload to anyone.
    expect(p.page.locator("#signin-btn")).to_be_visible()
    expect(p.page.locator("#upload-btn")).to_have_count(0)
    p.page.locator("#signin-btn").click()
    p.signed_in("bob", "bob-pw")
    expect(p.page.locator("#user-name")).to_have_text("bob")
    p.goto(args.base + "team/")
    expect(p.page.locator("#user-name")).to_have_text("bob")
    # The cookie's flags.
    c = p.session()
    assert c is not None, p.context.cookies()
    assert c["httpOnly"] is True, c
    assert c["sameSite"] == "Strict", c
    assert c["path"] == "/", c
    assert p.page.evaluate("document.cookie").find(COOKIE) < 0, "readable by scripts"
    # Upload a file through the page: it keeps its date.
    dated = 1_500_000_000
    os.utime(Path(args.work) / "from-bob.txt", (dated, dated))
    p.page.set_input_files("#files", str(Path(args.work) / "from-bob.txt"))
    p.page.wait_for_selector("#uploads li.done")
    p.page.wait_for_function("() => [...document.querySelectorAll('#list td.n a')].some(a => a.textContent === 'from-bob.txt')")
    landed = Path(args.root) / "team" / "from-bob.txt"
    assert landed.read_bytes() == (Path(args.work) / "from-bob.txt").read_bytes()
    assert int(landed.stat().st_mtime) == dated, "the page dropped the file's date"
    # bob has no d on /team: no Delete (nor Rename, a MOVE) on any row.
    items = row_menu(p, "t.txt")
    assert "Delete…" not in items and "Rename…" not in items, items
    assert "Download" in items, items
    p.page.keyboard.press("Escape")
    # Sign out: the cookie is gone, and its old value works no more.
    old = c["value"]
    jar = {COOKIE: old}
    assert requests.get(args.base + "team/", cookies=jar, timeout=10).status_code == 200
    p.page.locator("#signout-btn").click()
    # /team needs a user: signed out, the page asks again.
    expect(p.page.locator("dialog#signin")).to_be_visible()
    assert p.session() is None, p.context.cookies()
    r = requests.get(args.base + "team/", cookies=jar, timeout=10)
    assert r.status_code == 401, r.status_code
    r = requests.put(args.base + "team/replayed.txt", data=b"x", cookies=jar,
                     headers={"Origin": args.base.rstrip("/")}, timeout=10)
    assert r.status_code == 401, r.status_code
    assert not (Path(args.root) / "team" / "replayed.txt").exists()
    p.close()


@check("sign-in as alice: the page offers Delete where she has d")
def alice(browser):
    p = Page(browser, args.base + "team/")
    p.signed_in("alice", "alice-pw")
    items = row_menu(p, "t.txt")
    assert "Delete…" in items and "Rename…" in items, items
    p.close()


@check("under TLS the session cookie is Secure")
def secure(browser):
    if not args.tls_base:
        print("  (no TLS server given)")
        return
    p = Page(browser, args.tls_base, ignore_https_errors=True)
    p.page.locator("#signin-btn").click()
    p.sign_in("bob", "bob-pw")
    p.page.wait_for_selector("#user-name")
    c = p.session()
    assert c is not None and c["secure"] is True and c["httpOnly"] is True, c
    assert c["name"] == cookie_name(args.tls_base), c
    assert c["name"].startswith("__Host-"), c
    p.close()


@check("without JavaScript plain forms sign in (back to the folder) and out")
def no_js(browser):
    p = Page(browser, None, java_script_enabled=False)
    p.page.goto(args.base + "team/")
    form = p.page.locator("#signin-form")
    expect(form).to_be_visible()
    form.get_by_label("User name").fill("bob")
    form.get_by_label("Password").fill("bob-pw")
    form.get_by_role("button", name="Sign in").click()
    p.page.wait_for_url(args.base + "team/")
    expect(p.page.locator("#rows td.n a", has_text="t.txt")).to_be_visible()
    c = p.session()
    assert c is not None and c["httpOnly"] and c["sameSite"] == "Strict", c
    # And a plain form signs out: the session ends on the server.
    out = p.page.locator("#signout-form")
    expect(out).to_contain_text("bob")
    out.get_by_role("button", name="Sign out").click()
    p.page.wait_for_url(args.base)
    assert p.session() is None, p.context.cookies()
    r = requests.get(args.base + "team/", cookies={COOKIE: c["value"]}, timeout=10)
    assert r.status_code == 401, r.status_code
    p.close()


def mint(p, row, days=None, upload=False):
    """Share link… on a row: the link the page shows."""
    items = row_menu(p, row)
    assert "Share link…" in items, items
    p.page.get_by_role("menuitem", name="Share link…").click()
    d = p.page.locator("dialog#share")
    expect(d).to_be_visible()
    if days:
        d.get_by_label("Expires after").select_option(str(days * 86400))
    box = d.get_by_label("Upload only (others add files, nothing is read)")
    if upload:
        box.check()
    d.get_by_role("button", name="Create link").click()
    field = p.page.locator("#share-link")
    expect(field).to_be_visible()
    link = field.input_value()
    p.page.locator("dialog#share-made").get_by_role("button", name="Done").click()
    return link


@check("Share link…: file and folder links read in a fresh browser, an upload link takes new names")
def share_links(browser):
    p = Page(browser, args.base + "team/")
    p.signed_in("bob", "bob-pw")
    file_link = mint(p, "t.txt", days=1)
    assert file_link.startswith(args.base + "team/t.txt?share="), file_link
    # Upload-only is offered for folders only.
    row_menu(p, "t.txt")
    p.page.get_by_role("menuitem", name="Share link…").click()
    expect(p.page.get_by_label("Upload only (others add files, nothing is read)")).to_have_count(0)
    p.page.locator("dialog#share").get_by_role("button", name="Cancel").click()
    folder_link = mint(p, "sub/")
    upload_link = mint(p, "sub/", days=30, upload=True)
    p.close()

    # A fresh browser, no cookie: the file reads.
    q = Page(browser)
    assert not q.context.cookies()
    r = q.page.request.get(file_link)
    assert r.status == 200 and r.body() == b"team's\n", (r.status, r.body())
    # The folder link's page lists the folder; its rows keep the link.
    q.goto(folder_link)
    assert q.names() == ["deeper/", "inner.txt"], q.names()
    # No way up from the link's folder: no ../, no breadcrumb above it;
    # the one to its own folder keeps the link.
    expect(q.page.locator("#list tr.up")).to_have_count(0)
    crumbs = q.page.locator("nav.crumbs a")
    expect(crumbs).to_have_count(1)
    assert crumbs.get_attribute("href") == "/team/sub/?share=" + folder_link.split("share=", 1)[1]
    # One folder down, ../ leads back through the link.
    q.page.locator("#list td.n a", has_text="deeper/").click()
    q.page.wait_for_url("**/team/sub/deeper/?share=*")
    q.page.wait_for_selector("html[data-ready='1']")
    assert q.names() == ["x.txt"], q.names()
    q.page.locator("#list tr.up a").click()
    q.page.wait_for_url(folder_link)
    q.page.wait_for_selector("html[data-ready='1']")
    assert q.names() == ["deeper/", "inner.txt"], q.names()
    href = q.page.locator("#list td.n a", has_text="inner.txt").get_attribute("href")
    r = q.page.request.get(args.base + "team/sub/" + href)
    assert r.status == 200 and r.body() == b"in\n", (href, r.status)
    # Nothing beside it: the parent through the same link is 404.
    token = folder_link.split("share=", 1)[1]
    r = q.page.request.get(args.base + "team/t.txt?share=" + token)
    assert r.status == 404, r.status
    q.close()
    # The upload link writes new names and reads nothing.
    token = upload_link.split("share=", 1)[1]
    r = requests.put(args.base + "team/sub/via-link.txt?share=" + token, data=b"dropped\n", timeout=10)
    assert r.status_code == 201, r.status_code
    r = requests.get(args.base + "team/sub/inner.txt?share=" + token, timeout=10)
    assert r.status_code == 404, r.status_code


def found(p):
    """The paths the search box shows."""
    return p.page.eval_on_selector_all("#found td.n a", "els => els.map(e => e.textContent)")


def search_for(p, text):
    """Type `text` into the search box, as a person does."""
    box = p.page.locator("#search")
    box.fill("")
    box.press_sequentially(text, delay=40)


@check("search as you type: paths, sizes and dates below the folder; nothing of a folder without read; a link's folder only")
def search_box(browser):
    # Anyone: the public file, with its size and date; nothing of /team
    # (no rights) or of the drop box (write only), whatever is typed.
    p = Page(browser, args.base)
    search_for(p, "pub")
    expect(p.page.locator("#found td.n a")).to_have_text(["pub.txt"])
    expect(p.page.locator("#found td.s")).to_have_text(["7 B"])
    assert p.page.locator("#found td.m time").get_attribute("datetime"), "no date"
    expect(p.page.locator("#list")).to_be_hidden()
    search_for(p, "secret")
    expect(p.page.locator("#no-results")).to_be_visible()
    search_for(p, "inner")
    expect(p.page.locator("#no-results")).to_be_visible()
    # Cleared: the folder's own listing is back.
    p.page.locator("#search").fill("")
    expect(p.page.locator("#list")).to_be_visible()
    # bob reads /team but not the drop box beside it.
    p.page.locator("#signin-btn").click()
    p.signed_in("bob", "bob-pw")
    search_for(p, "inner")
    expect(p.page.locator("#found td.n a")).to_have_text(["team/sub/inner.txt"])
    search_for(p, "secret")
    expect(p.page.locator("#no-results")).to_be_visible()
    # Inside a folder: paths below it, links that open the file.
    p.goto(args.base + "team/")
    search_for(p, "x.t")
    expect(p.page.locator("#found td.n a")).to_have_text(["sub/deeper/x.txt"])
    href = p.page.locator("#found td.n a").get_attribute("href")
    r = p.page.request.get(args.base + "team/" + href)
    assert r.status == 200 and r.body() == b"x\n", (href, r.status)
    p.page.locator("#search").fill("")
    expect(p.page.locator("#list")).to_be_visible()
    link = mint(p, "sub/")
    p.assert_clean()
    p.close()
    # alice reads the drop box: the same search finds its file.
    a = Page(browser, args.base)
    a.page.locator("#signin-btn").click()
    a.signed_in("alice", "alice-pw")
    search_for(a, "secret")
    expect(a.page.locator("#found td.n a")).to_have_text(["drop/secret.txt"])
    a.close()
    # Through bob's link to /team/sub/: its folder only, links kept on.
    q = Page(browser, link)
    search_for(q, "txt")
    expect(q.page.locator("#found td.n a").first).to_be_visible()
    shown = sorted(found(q))
    assert "t.txt" not in shown and all(not s.startswith("..") for s in shown), shown
    assert {"inner.txt", "deeper/x.txt"} <= set(shown), shown
    href = q.page.locator("#found td.n a", has_text="inner.txt").get_attribute("href")
    assert "share=" in href, href
    # The link's URL with ?q= (a search page) shows the same, no more.
    q.goto(link + "&q=txt")
    expect(q.page.locator("#found td.n a").first).to_be_visible()
    assert "t.txt" not in found(q), found(q)
    q.assert_clean()
    q.close()


@check("the share-link dialog holds its link: nothing sticks out sideways on a desktop")
def share_dialog_fits(browser):
    p = Page(browser, args.base + "team/", viewport={"width": 1280, "height": 800})
    p.signed_in("bob", "bob-pw")
    row_menu(p, "sub/")
    p.page.get_by_role("menuitem", name="Share link…").click()
    p.page.locator("dialog#share").get_by_role("button", name="Create link").click()
    expect(p.page.locator("#share-link")).to_be_visible()
    # The link fits the dialog (it scrolls inside its field).
    fit = p.page.evaluate("""() => {
        const d = document.querySelector('dialog#share-made');
        const f = document.querySelector('#share-link').getBoundingClientRect();
        const r = d.getBoundingClientRect();
        return {over: d.scrollWidth - d.clientWidth, field: [f.left, f.right], dialog: [r.left, r.right]};
    }""")
    assert fit["over"] <= 0 and fit["field"][1] <= fit["dialog"][1], fit
    p.close()


GUEST_SEES_NOTHING = ["#list", "#rows", "#filter", "#mkdir-btn", "a[download]", "#links-btn",
                      "footer form.json", "dialog"]


@check("an upload link opens a page with only Upload: files sent through it land with their dates, no name is shown")
def upload_link_page(browser):
    p = Page(browser, args.base + "team/")
    p.signed_in("bob", "bob-pw")
    link = mint(p, "sub/", days=1, upload=True)
    p.close()
    work, root = Path(args.work), Path(args.root)
    dated = 1_600_000_000
    os.utime(work / "dated.txt", (dated, dated))
    os.utime(work / "big-via-link.bin", (dated + 60, dated + 60))

    q = Page(browser, link)
    page = q.page
    expect(page.locator("#upload-btn")).to_be_visible()
    expect(page.locator("#upload-only")).to_be_visible()
    for sel in GUEST_SEES_NOTHING + ["#signin-btn"]:
        expect(page.locator(sel)).to_have_count(0)
    html = page.content()
    assert "inner.txt" not in html and "deeper" not in html, "a name of the folder reached the guest"
    page.set_input_files("#files", [str(work / "dated.txt"), str(work / "big-via-link.bin")])
    expect(page.locator("#uploads li.done")).to_have_count(2, timeout=60_000)
    assert (root / "team/sub/dated.txt").read_bytes() == (work / "dated.txt").read_bytes()
    assert int((root / "team/sub/dated.txt").stat().st_mtime) == dated, "the file's date was dropped"
    assert int((root / "team/sub/big-via-link.bin").stat().st_mtime) == dated + 60, "the tus upload's date"
    # Revoked, the link refuses the next upload: the page shows the server's words.
    token = link.split("share=", 1)[1]
    r = requests.delete(args.base + "-/shares/team/sub/?link=" + token, auth=("bob", "bob-pw"), timeout=10)
    assert r.status_code == 204, r.status_code
    said = requests.put(args.base + "team/sub/late.txt?share=" + token, data=b"late\n", timeout=10)
    assert said.status_code == 410 and "revoked" in said.text, (said.status_code, said.text)
    q.allowed = ("410",)
    page.set_input_files("#files", str(work / "from-bob.txt"))
    failed = page.locator("#uploads li.failed .info")
    expect(failed).to_have_count(1)
    expect(failed).to_contain_text(said.text.strip())
    assert not (root / "team/sub/from-bob.txt").exists()
    q.close()


@check("an anonymous visitor to a drop box gets Upload at once: no sign-in first, no zip, no names")
def drop_box(browser):
    q = Page(browser, args.base + "drop/")
    page = q.page
    expect(page.locator("#upload-btn")).to_be_visible()
    for sel in GUEST_SEES_NOTHING:
        expect(page.locator(sel)).to_have_count(0)
    # Signing in stays on offer (alice reads here), not in the way.
    expect(page.locator("#signin-btn")).to_be_visible()
    assert "secret.txt" not in page.content()
    page.set_input_files("#files", str(Path(args.work) / "into-drop.txt"))
    expect(page.locator("#uploads li.done")).to_have_count(1)
    q.close()


@check("Links lists the user's own live links here, each with Copy and Revoke; a revoked link stops working")
def links_view(browser):
    # alice's link is hers: bob's list leaves it out.
    r = requests.post(args.base + "-/shares/team/t.txt", auth=("alice", "alice-pw"), timeout=10)
    assert r.status_code == 201, r.status_code
    alices = r.json()["share"]
    p = Page(browser, args.base + "team/", permissions=["clipboard-read", "clipboard-write"])
    p.signed_in("bob", "bob-pw")
    link = mint(p, "t.txt", days=1)
    page = p.page
    page.locator("#links-btn").click()
    rows = page.locator("#links tbody tr")
    expect(rows.first).to_be_visible()
    hrefs = rows.locator("td.l a").evaluate_all("els => els.map(a => a.href)")
    assert link in hrefs, (link, hrefs)
    assert not any(alices in h for h in hrefs), hrefs
    mine = rows.filter(has=page.locator(f"td.l a[href='{link}']"))
    mine.get_by_role("button", name="Copy").click()
    expect(page.locator("#toast")).to_have_text("Link copied")
    assert page.evaluate("navigator.clipboard.readText()") == link
    assert requests.get(link, timeout=10).status_code == 200
    mine.get_by_role("button", name="Revoke").click()
    page.locator("dialog").get_by_role("button", name="Revoke").click()
    expect(page.locator("#toast")).to_have_text("Link revoked")
    expect(mine).to_have_count(0)
    assert len(rows.locator("td.l a").evaluate_all("els => els.map(a => a.href)")) == len(hrefs) - 1
    gone = requests.get(link, timeout=10)
    assert gone.status_code == 410 and "revoked" in gone.text, (gone.status_code, gone.text)
    # alice's link still works.
    assert requests.get(args.base + "team/t.txt?share=" + alices, timeout=10).status_code == 200
    p.close()


@check("Recently deleted: alice restores a deleted file from the page; bob (no d) has no such button; the quota bar")
def trash_view(browser):
    r = requests.put(args.base + "team/gone.txt", data=b"restore me\n", auth=("alice", "alice-pw"), timeout=10)
    assert r.status_code == 201, r.status_code
    r = requests.delete(args.base + "team/gone.txt", auth=("alice", "alice-pw"), timeout=10)
    assert r.status_code == 204, r.status_code
    p = Page(browser, args.base + "team/")
    p.signed_in("bob", "bob-pw")
    expect(p.page.locator("#quota")).to_contain_text("of 1.0 GiB used")
    expect(p.page.locator("#trash-btn")).to_have_count(0)
    p.close()
    p = Page(browser, args.base + "team/")
    p.signed_in("alice", "alice-pw")
    page = p.page
    page.locator("#trash-btn").click()
    row = page.locator("#trash tbody tr").filter(has_text="/team/gone.txt")
    expect(row).to_have_count(1)
    row.get_by_role("button", name="Restore").click()
    expect(page.locator("#toast")).to_have_text('Restored "gone.txt"')
    expect(page.locator("#list td.n a", has_text="gone.txt")).to_be_visible()
    assert (Path(args.root) / "team/gone.txt").read_bytes() == b"restore me\n"
    p.close()


@check("on a phone, two folders deep, the breadcrumb and 'Signed in as' do not overlap")
def phone_header(browser):
    p = Page(browser, args.base + "team/sub/deeper/", viewport={"width": 390, "height": 844},
             is_mobile=True, has_touch=True)
    p.signed_in("bob", "bob-pw")
    boxes = p.page.evaluate("""() => ['nav.crumbs', '#who'].map(s => {
        const r = document.querySelector(s).getBoundingClientRect();
        return [r.left, r.top, r.right, r.bottom];
    })""")
    (a, b) = boxes
    apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
    assert apart, boxes
    p.close()


def main():
    global args, COOKIE
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tls-base")
    ap.add_argument("--only")
    args = ap.parse_args()
    COOKIE = cookie_name(args.base)
    check.run(args.only)


if __name__ == "__main__":
    main()
