//! What the browser page needs from the server, over raw HTTP: the embedded
//! assets and their caching, the favicon fallback, the listing's HTML, and
//! the token-less frame a private server gives a browser.

mod common;

use common::TestServer;
use wirespeed_service::{assets, Access, ServiceConfig, Writes};

const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

#[test]
fn assets_are_versioned_and_cached_for_a_year() {
    let s = TestServer::start();
    for (name, ty) in [
        ("page.js", "text/javascript; charset=utf-8"),
        ("page.css", "text/css; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
    ] {
        let r = s.get(&assets::url(name));
        assert_eq!(r.status, 200, "{name}");
        assert_eq!(r.header("content-type"), Some(ty), "{name}");
        assert_eq!(
            r.header("cache-control"),
            Some("public, max-age=31536000, immutable"),
            "{name}"
        );
        assert!(!r.body.is_empty());
    }
    assert_eq!(assets::version().len(), 12);
    // Another build's URL still works, revalidated rather than kept.
    let r = s.get("/-/assets/000000000000/page.js");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(s.get(&assets::url("nope.js")).status, 404);
    assert_eq!(s.get("/-/assets/").status, 404);
    // Assets need no token even on a private server (they hold nothing).
    let private = TestServer::with(ServiceConfig {
        access: Access::new(["t"], true),
        ..Default::default()
    });
    assert_eq!(private.get(&assets::url("page.js")).status, 200);
}

#[test]
fn favicon_is_embedded_unless_the_folder_has_one() {
    let s = TestServer::start();
    let r = s.get("/favicon.ico");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("image/x-icon"));
    assert_eq!(&r.body[..4], b"\0\0\x01\0", "an ICO header");
    // Only at the root: a missing one below is simply missing.
    assert_eq!(s.get("/sub/favicon.ico").status, 404);
    std::fs::write(s.root.join("favicon.ico"), b"mine").unwrap();
    assert_eq!(s.get("/favicon.ico").body, b"mine");
}

#[test]
fn listing_html_links_the_assets_under_a_strict_policy() {
    let s = TestServer::start();
    std::fs::create_dir(s.root.join("a&b")).unwrap();
    std::fs::write(s.root.join("a&b/<i>.txt"), vec![0; 2048]).unwrap();
    let r = s.req("GET", "/a%26b/", &[("Accept", BROWSER_ACCEPT)], b"");
    assert_eq!(r.status, 200);
    let csp = r.header("content-security-policy").unwrap();
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    let html = r.text();
    let nonce = csp.split("'nonce-").nth(1).unwrap().trim_end_matches('\'');
    assert!(html.contains(&format!(
        "<script src=\"{}\" nonce=\"{nonce}\" defer>",
        assets::url("page.js")
    )));
    assert!(html.contains(&assets::url("page.css")));
    assert!(
        html.contains("<a href=\"/a%26b/\">a&amp;b</a>"),
        "breadcrumb"
    );
    assert!(html.contains("href=\"%3Ci%3E.txt\">&lt;i&gt;.txt</a>"));
    assert!(html.contains("<td title=\"2.0 KiB\" class=\"s\">2048</td>"));
    assert!(html.contains("rel=\"up\""));
    assert!(!html.contains("<i>"));
    // The JSON listing, the page's API, is unchanged.
    let j = s.req("GET", "/a%26b/?format=json", &[], b"").text();
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v[0]["name"], "<i>.txt");
    assert_eq!(v[0]["size"], 2048);
}

#[test]
fn a_private_server_gives_a_browser_the_frame_without_entries() {
    let s = TestServer::with(ServiceConfig {
        access: Access::new(["t0ken"], true),
        ..Default::default()
    });
    std::fs::create_dir(s.root.join("dir")).unwrap();
    std::fs::write(s.root.join("dir/secret-name.txt"), b"secret").unwrap();
    let r = s.req("GET", "/dir/", &[("Accept", BROWSER_ACCEPT)], b"");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate"),
        Some("Bearer realm=\"wirespeed\"")
    );
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let html = r.text();
    assert!(html.contains("data-locked=\"1\""), "{html}");
    assert!(html.contains(&assets::url("page.js")));
    assert!(!html.contains("secret"), "no names leak: {html}");
    // A file's URL gets the frame too (its script fetches the file with the token).
    let r = s.req(
        "GET",
        "/dir/secret-name.txt",
        &[("Accept", BROWSER_ACCEPT)],
        b"",
    );
    assert_eq!(r.status, 401);
    assert!(r.text().contains("data-locked"));
    assert!(!r.text().contains("secret\n"));
    // Scripts and the page's own fetches get the plain answer.
    for accept in ["application/json", "*/*"] {
        let r = s.req("GET", "/dir/", &[("Accept", accept)], b"");
        assert_eq!(r.status, 401);
        assert_eq!(r.text(), "a valid bearer token is required\n", "{accept}");
    }
    let r = s.req("PUT", "/dir/x", &[("Accept", BROWSER_ACCEPT)], b"x");
    assert_eq!(r.status, 401);
    assert!(!r.text().contains("<html"));
    // With the token, the listing.
    let r = s.req(
        "GET",
        "/dir/",
        &[
            ("Accept", BROWSER_ACCEPT),
            ("Authorization", "Bearer t0ken"),
        ],
        b"",
    );
    assert_eq!(r.status, 200);
    assert!(r.text().contains("secret-name.txt"));
}

#[test]
fn the_page_offers_only_the_writes_the_server_takes() {
    let can = |writes: Writes| {
        let s = TestServer::with(ServiceConfig {
            writes,
            ..Default::default()
        });
        let html = s.req("GET", "/", &[("Accept", BROWSER_ACCEPT)], b"").text();
        let can = html
            .split("data-can=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_else(|| panic!("no data-can: {html}"))
            .to_string();
        (can, html.contains("id=\"upform\""))
    };
    assert_eq!(can(Writes::default()), ("read write delete".into(), true));
    assert_eq!(can(Writes::read_only()), ("read".into(), false));
    assert_eq!(
        can(Writes::exposed(true, false)),
        ("read write".into(), true),
        "--allow-upload without deletes: no Delete, no Rename"
    );
    assert_eq!(can(Writes::exposed(false, false)), ("read".into(), false));
    // A private server's locked frame says the same.
    let s = TestServer::with(ServiceConfig {
        access: Access::new(["t"], true),
        writes: Writes::read_only(),
        ..Default::default()
    });
    let html = s.req("GET", "/", &[("Accept", BROWSER_ACCEPT)], b"").text();
    assert!(html.contains("data-can=\"read\""), "{html}");
}

#[test]
fn a_browser_gets_an_html_404_with_a_link_up() {
    let s = TestServer::start();
    std::fs::create_dir(s.root.join("a b")).unwrap();
    let r = s.req("GET", "/a%20b/gone.txt", &[("Accept", BROWSER_ACCEPT)], b"");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let html = r.text();
    assert!(html.contains("<a href=\"/a%20b/\" rel=\"up\">"), "{html}");
    assert!(html.contains("gone.txt"), "{html}");
    // Scripts and tools keep the plain text.
    for accept in ["*/*", "application/json"] {
        let r = s.req("GET", "/a%20b/gone.txt", &[("Accept", accept)], b"");
        assert_eq!(r.status, 404);
        assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    }
}

#[test]
fn the_listing_is_a_plain_table_with_no_link_into_a_non_listing() {
    let s = TestServer::start();
    std::fs::write(s.root.join("f.txt"), b"12345").unwrap();
    std::fs::create_dir(s.root.join("d")).unwrap();
    let html = s.req("GET", "/", &[("Accept", BROWSER_ACCEPT)], b"").text();
    assert!(
        !html.contains("<noscript"),
        "rows hidden from parsers: {html}"
    );
    let table = html.split("<table id=\"rows\">").nth(1).expect("the table");
    assert!(table.contains("<a href=\"f.txt\">f.txt</a>"), "{table}");
    assert!(table.contains("class=\"s\">5</td>"), "exact size: {table}");
    assert!(table.contains("<a href=\"d/\">d/</a>"), "{table}");
    // Every link a crawler follows is a file, a folder, or up.
    for href in html.split("<a href=\"").skip(1) {
        let href = href.split('"').next().unwrap();
        assert!(!href.contains('?'), "a link into a non-listing: {href}");
    }
}
