//! The browser page's sign-in (`/-/session`) end to end: a name and
//! password (JSON or a form) set an `HttpOnly`, `SameSite=Strict` session
//! cookie signed with the share-link key; the cookie signs its user in on
//! every route as HTTP Basic does (the page's rights follow it); writes it
//! signs from another origin, or with no origin at all, are refused;
//! sign-out revokes it on the server; a stale cookie counts as no sign-in;
//! the page's own requests never meet a `Basic` challenge, curl still does.

mod common;

use std::sync::Arc;

use common::*;
use wirespeed_service::policy::sessions::{self, Sessions, DEFAULT_LIFETIME};
use wirespeed_service::policy::shares::DEFAULT_MAX_EXPIRY;
use wirespeed_service::policy::{password, Shares};
use wirespeed_service::{ServiceConfig, UploadsConfig, Users};

const RULES: &str = r#"
[paths."/"]
"*" = "r"
[paths."/alice"]
alice = "rwd"
[paths."/team"]
alice = "rwd"
bob   = "rws"
"#;

const KEY: [u8; 32] = [11; 32];
const SAME: (&str, &str) = SAME_ORIGIN;

fn rules_text(bob_pw: &[u8]) -> String {
    format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n{RULES}",
        password::hash(b"alice-pw").unwrap(),
        password::hash(bob_pw).unwrap()
    )
}

fn config(users: Arc<Users>) -> ServiceConfig {
    let (shares, sessions) = signed_tables(KEY);
    ServiceConfig {
        users: Some(users),
        shares: Some(shares),
        sessions: Some(sessions),
        ..ServiceConfig::default()
    }
}

fn server() -> TestServer {
    let users = Arc::new(Users::from_text("users.toml", &rules_text(b"bob-pw")).unwrap());
    let s = TestServer::with_uploads(config(users), UploadsConfig::default());
    std::fs::create_dir_all(s.root.join("team")).unwrap();
    std::fs::write(s.root.join("team/t.txt"), "team's").unwrap();
    std::fs::write(s.root.join("pub.txt"), "public").unwrap();
    s
}

#[test]
fn a_session_signs_its_user_in_with_the_cookie_flags() {
    let s = server();
    let (r, cookie) = sign_in(&s, "bob", "bob-pw");
    assert_eq!(r.status, 200, "{}", r.text());
    let set = r.header("set-cookie").unwrap();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(flag), "{set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["user"], "bob");
    let expires = v["expires"].as_u64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(expires.abs_diff(now + DEFAULT_LIFETIME) < 60);
    let cookie = cookie.unwrap();
    let c = ("Cookie", cookie.as_str());

    // Reads /team as bob; the page offers upload but no delete there.
    let r = s.req("GET", "/team/", &[c, ("Accept", "text/html")], b"");
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("data-user=\"bob\""), "{html}");
    assert!(html.contains("data-can=\"read write\""), "{html}");
    let r = s.req("GET", "/-/session", &[c], b"");
    assert_eq!(r.text().trim(), r#"{"user":"bob"}"#);
    assert!(html.contains("action=\"/-/session/sign-out\">bob <button"));

    // Writes new names from the page's origin, never replaces or deletes.
    let r = s.req("PUT", "/team/new.txt", &[c, SAME], b"from bob");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        std::fs::read(s.root.join("team/new.txt")).unwrap(),
        b"from bob"
    );
    let r = s.req("DELETE", "/team/t.txt", &[c, SAME], b"");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(s.root.join("team/t.txt").exists());
    // Nothing in alice's folder.
    assert_eq!(s.req("GET", "/alice/", &[c], b"").status, 403);

    // Alice's cookie gives alice's rights: the page offers delete.
    let (_, alice) = sign_in(&s, "alice", "alice-pw");
    let alice = alice.unwrap();
    let r = s.req(
        "GET",
        "/team/",
        &[("Cookie", &alice), ("Accept", "text/html")],
        b"",
    );
    assert!(r.text().contains("data-can=\"read write delete\""));
}

#[test]
fn cookie_writes_from_another_origin_are_refused() {
    let s = server();
    let (_, cookie) = sign_in(&s, "bob", "bob-pw");
    let cookie = cookie.unwrap();
    let c = ("Cookie", cookie.as_str());
    for extra in [
        vec![("Origin", "http://evil.example")],
        vec![("Sec-Fetch-Site", "same-site")],
        vec![("Origin", "http://test:8080")],
        // No origin at all: a cookie only comes from a browser, which
        // names the origin of every write; missing, it is refused too.
        vec![],
    ] {
        let mut h = vec![c];
        h.extend(extra.iter().copied());
        let r = s.req("PUT", "/team/csrf.txt", &h, b"x");
        assert_eq!(r.status, 403, "{extra:?}: {}", r.text());
        let r = s.req("MKCOL", "/team/csrf-dir/", &h, b"");
        assert_eq!(r.status, 403, "{extra:?}: {}", r.text());
        // A COPY reads its source but writes its destination: a write.
        let mut copy = h.clone();
        copy.push(("Destination", "/team/csrf-copy.txt"));
        let r = s.req("COPY", "/team/t.txt", &copy, b"");
        assert_eq!(r.status, 403, "{extra:?}: {}", r.text());
    }
    assert!(!s.root.join("team/csrf-copy.txt").exists());
    assert!(!s.root.join("team/csrf.txt").exists());
    assert!(!s.root.join("team/csrf-dir").exists());
    // With Sec-Fetch-Site: same-origin alone it goes through.
    let r = s.req(
        "PUT",
        "/team/ok.txt",
        &[c, ("Sec-Fetch-Site", "same-origin")],
        b"x",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // Nor may another site sign a browser in or out.
    let r = s.req(
        "POST",
        "/-/session",
        &[
            ("Content-Type", "application/json"),
            ("Origin", "http://evil.example"),
        ],
        br#"{"name":"bob","password":"bob-pw"}"#,
    );
    assert_eq!(r.status, 403);
    assert!(r.header("set-cookie").is_none());
    let r = s.req(
        "DELETE",
        "/-/session",
        &[c, ("Origin", "http://evil.example")],
        b"",
    );
    assert_eq!(r.status, 403);
    assert_eq!(s.req("GET", "/team/", &[c], b"").status, 200, "still in");
}

#[test]
fn a_form_signs_out_too() {
    let s = server();
    let (_, cookie) = sign_in(&s, "bob", "bob-pw");
    let cookie = cookie.unwrap();
    let c = ("Cookie", cookie.as_str());
    let evil = s.req(
        "POST",
        "/-/session/sign-out",
        &[c, ("Origin", "http://evil.example")],
        b"",
    );
    assert_eq!(evil.status, 403);
    assert_eq!(s.req("GET", "/team/", &[c], b"").status, 200);
    let r = s.req("POST", "/-/session/sign-out", &[c, SAME], b"");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/"));
    assert!(r.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(s.req("GET", "/team/", &[c], b"").status, 401);
}

#[test]
fn sign_out_revokes_the_session_on_the_server() {
    let s = server();
    let (_, cookie) = sign_in(&s, "bob", "bob-pw");
    let cookie = cookie.unwrap();
    let c = ("Cookie", cookie.as_str());
    assert_eq!(s.req("GET", "/team/", &[c], b"").status, 200);
    let r = s.req("DELETE", "/-/session", &[c, SAME], b"");
    assert_eq!(r.status, 204);
    let cleared = r.header("set-cookie").unwrap();
    assert!(
        cleared.starts_with("wirespeed-session=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    // The old value, replayed, signs nobody in: 401 where a user is needed
    // (with the Basic challenge: this is curl, not the page) ...
    let r = s.req("GET", "/team/", &[c], b"");
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Basic"));
    assert_eq!(
        s.req("PUT", "/team/after.txt", &[c, SAME], b"x").status,
        401
    );
    assert!(!s.root.join("team/after.txt").exists());
    // ... and no lock-out where anyone may read.
    assert_eq!(s.req("GET", "/pub.txt", &[c], b"").status, 200);
    assert_eq!(
        s.req("GET", "/-/session", &[c], b"").text().trim(),
        r#"{"user":null}"#
    );
}

#[test]
fn wrong_passwords_and_page_requests_never_get_a_basic_challenge() {
    let s = server();
    for (name, pw) in [("bob", "nope"), ("mallory", "bob-pw"), ("bob", "")] {
        let (r, cookie) = sign_in(&s, name, pw);
        assert_eq!(r.status, 401, "{name}");
        assert!(cookie.is_none());
        let challenge = r.header("www-authenticate").unwrap();
        assert!(!challenge.contains("Basic"), "{challenge}");
        assert!(r.text().contains("wrong user name or password"));
    }
    // The page's fetch of a folder that needs a user: JSON, no Basic.
    let r = s.req(
        "GET",
        "/team/?format=json",
        &[(sessions::PAGE_MARKER, "1")],
        b"",
    );
    assert_eq!(r.status, 401);
    assert!(r
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("www-authenticate"))
        .all(|(_, v)| !v.contains("Basic")));
    assert!(r.text().contains("\"signin\":true"), "{}", r.text());
    // A navigation: the page with its sign-in form, no Basic.
    let r = s.req(
        "GET",
        "/team/",
        &[
            ("Accept", "text/html,application/xhtml+xml"),
            ("Sec-Fetch-Mode", "navigate"),
        ],
        b"",
    );
    assert_eq!(r.status, 401);
    assert!(!r.header("www-authenticate").unwrap().contains("Basic"));
    let html = r.text();
    assert!(
        html.contains("data-locked=\"1\" data-users=\"1\""),
        "{html}"
    );
    // Without scripts, a plain form signs in and comes back here.
    assert!(html.contains("<form id=\"signin-form\" method=\"post\" action=\"/-/session\">"));
    assert!(html.contains("name=\"next\" value=\"/team/\""), "{html}");
    let r = s.req(
        "GET",
        "/team/t.txt",
        &[("Accept", "text/html"), ("Sec-Fetch-Mode", "navigate")],
        b"",
    );
    assert!(r.text().contains("name=\"next\" value=\"/team/t.txt\""));
    // A browser on plain HTTP to a LAN address (not a secure context)
    // sends no Sec-Fetch-* at all: still a navigation, still no Basic.
    let r = s.req(
        "GET",
        "/team/",
        &[
            ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"),
            ("Upgrade-Insecure-Requests", "1"),
        ],
        b"",
    );
    assert_eq!(r.status, 401);
    assert!(!r.header("www-authenticate").unwrap().contains("Basic"));
    assert!(r.text().contains("<form id=\"signin-form\""));
    // curl and wget (no marker, no preference for HTML) keep their challenge,
    // as does a browser's fetch that is not a navigation.
    for headers in [
        &[("Accept", "*/*")][..],
        &[("Accept", "text/html"), ("Sec-Fetch-Mode", "cors")][..],
    ] {
        let r = s.req("GET", "/team/", headers, b"");
        assert_eq!(r.status, 401);
        assert!(r.header("www-authenticate").unwrap().starts_with("Basic"));
    }
    // A public folder's page offers signing in.
    let r = s.req("GET", "/", &[("Accept", "text/html")], b"");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("data-users=\"1\""));
    assert!(!r.text().contains("data-user=\""));
}

#[test]
fn forms_stale_cookies_and_other_nodes() {
    let s = server();
    // An HTML form (no script): a redirect to `next`, never off-site.
    let r = s.req(
        "POST",
        "/-/session",
        &[("Content-Type", "application/x-www-form-urlencoded"), SAME],
        b"name=bob&password=bob-pw&next=%2Fteam%2F",
    );
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/team/"));
    assert!(r.header("set-cookie").is_some());
    let r = s.req(
        "POST",
        "/-/session",
        &[("Content-Type", "text/plain"), SAME],
        b"bob bob-pw",
    );
    assert_eq!(r.status, 415);

    // A session minted by another node holding the same key is accepted;
    // an expired one, or one under another key, counts as no sign-in.
    let shares = Shares::new(KEY, DEFAULT_MAX_EXPIRY);
    let node2 = Sessions::new(shares.session_key(), DEFAULT_LIFETIME, false);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // The stamp must be that of bob's hash on this server: ask it by
    // signing in, then re-mint the same session on the other node.
    let (_, cookie) = sign_in(&s, "bob", "bob-pw");
    let cookie = cookie.unwrap();
    let token = cookie.strip_prefix("wirespeed-session=").unwrap();
    let here = Sessions::new(shares.session_key(), DEFAULT_LIFETIME, false);
    let session = here.verify(token, now).unwrap();
    let (_, other) = node2.mint("bob", session.stamp, now).unwrap();
    let other = format!("wirespeed-session={other}");
    assert_eq!(
        s.req("GET", "/team/", &[("Cookie", &other)], b"").status,
        200
    );
    let (_, old) = node2
        .mint("bob", session.stamp, now - DEFAULT_LIFETIME - 10)
        .unwrap();
    let old = format!("wirespeed-session={old}");
    assert_eq!(s.req("GET", "/team/", &[("Cookie", &old)], b"").status, 401);
    let stranger = Sessions::new([1; 32], DEFAULT_LIFETIME, false);
    let (_, forged) = stranger.mint("bob", session.stamp, now).unwrap();
    let forged = format!("wirespeed-session={forged}");
    assert_eq!(
        s.req("GET", "/team/", &[("Cookie", &forged)], b"").status,
        401
    );
}

#[test]
fn a_new_password_ends_the_users_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    std::fs::write(&file, rules_text(b"bob-pw")).unwrap();
    let users = Arc::new(Users::load(&file).unwrap());
    // The start line says how users sign in.
    let mode = config(users.clone()).policy().describe();
    assert!(
        mode.contains("users sign in with HTTP Basic or the page's sign-in form"),
        "{mode}"
    );
    let s = TestServer::with(config(users.clone()));
    std::fs::create_dir_all(s.root.join("team")).unwrap();
    let (_, cookie) = sign_in(&s, "bob", "bob-pw");
    let cookie = cookie.unwrap();
    assert_eq!(
        s.req("GET", "/team/", &[("Cookie", &cookie)], b"").status,
        200
    );
    std::fs::write(&file, rules_text(b"bob-new-pw")).unwrap();
    users.reload().unwrap();
    assert_eq!(
        s.req("GET", "/team/", &[("Cookie", &cookie)], b"").status,
        401
    );
}

#[test]
fn a_session_shares_from_the_page_and_never_for_another_origin() {
    let s = server();
    let (_, cookie) = sign_in(&s, "bob", "bob-pw");
    let cookie = cookie.unwrap();
    let c = ("Cookie", cookie.as_str());
    // The page offers "Share link…" to a signed-in user who may share
    // there (`s` on /team), not where they only read (the root).
    let page = |at: &str, h: &[(&str, &str)]| {
        let mut h = h.to_vec();
        h.push(("Accept", "text/html"));
        s.req("GET", at, &h, b"").text()
    };
    assert!(page("/team/", &[c]).contains("data-share=\"1\""));
    assert!(!page("/", &[c]).contains("data-share=\"1\""));
    assert!(!page("/team/", &[]).contains("data-share"));
    let r = s.req("POST", "/-/shares/pub.txt", &[c, SAME], b"");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("s right"), "{}", r.text());
    let r = s.req(
        "POST",
        "/-/shares/team/t.txt?expires=86400",
        &[c, ("Origin", "http://evil.example")],
        b"",
    );
    assert_eq!(r.status, 403, "{}", r.text());
    let r = s.req(
        "POST",
        "/-/shares/team/t.txt?expires=86400",
        &[c, SAME],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["by"], "bob");
    let link = format!("/team/t.txt?share={}", v["share"].as_str().unwrap());
    assert_eq!(s.get(&link).text(), "team's");
}

/// A request as a browser sends it to the server's own address (the port
/// in `Host`), from the page's origin.
fn req_at(s: &TestServer, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let origin = format!("http://{}", s.addr);
    let mut h = headers.to_vec();
    h.push(("Origin", &origin));
    let raw = wirespeed_testkit::http::request_bytes(method, path, &h, body);
    let text = String::from_utf8(raw).unwrap();
    let raw = text.replacen("Host: test", &format!("Host: {}", s.addr), 1);
    s.raw(raw.as_bytes(), false)
}

#[test]
fn the_cookie_is_this_ports_and_counts_only_when_sent_once() {
    let s = server();
    let body = br#"{"name":"bob","password":"bob-pw"}"#;
    let r = req_at(
        &s,
        "POST",
        "/-/session",
        &[("Content-Type", "application/json")],
        body,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let set = r.header("set-cookie").unwrap().to_string();
    let name = format!("wirespeed-session-{}", s.addr.port());
    assert!(set.starts_with(&format!("{name}=")), "{set}");
    let cookie = set.split(';').next().unwrap().to_string();
    let value = cookie.split_once('=').unwrap().1.to_string();
    let get = |c: &str| req_at(&s, "GET", "/team/", &[("Cookie", c)], b"").status;
    assert_eq!(get(&cookie), 200);
    // Under the name another port's server uses, it is no sign-in here.
    assert_eq!(get(&format!("wirespeed-session-1={value}")), 401);
    // Our name twice (another value planted beside ours, or ours twice):
    // which one is ours cannot be told, so neither counts.
    let (_, alice) = sign_in(&s, "alice", "alice-pw");
    let alice_value = alice.unwrap().split_once('=').unwrap().1.to_string();
    assert_eq!(get(&format!("{cookie}; {name}={alice_value}")), 401);
    assert_eq!(get(&format!("{name}={alice_value}; {cookie}")), 401);
    assert_eq!(get(&format!("{cookie}; {cookie}")), 401);
    assert_eq!(get(&format!("theme=dark; {cookie}")), 200);
    // Signing out clears the cookie of this port's name.
    let r = req_at(&s, "DELETE", "/-/session", &[("Cookie", &cookie)], b"");
    assert_eq!(r.status, 204);
    assert!(r
        .header("set-cookie")
        .unwrap()
        .starts_with(&format!("{name}=;")));
    assert_eq!(get(&cookie), 401);
}

#[test]
fn a_forms_next_never_leads_off_site_through_control_characters() {
    let s = server();
    for next in [
        "%2F%09%2Fevil.example",
        "%2F%0A%2Fevil.example",
        "%2F%0D%2Fevil.example",
    ] {
        let body = format!("name=bob&password=bob-pw&next={next}");
        let r = s.req(
            "POST",
            "/-/session",
            &[("Content-Type", "application/x-www-form-urlencoded"), SAME],
            body.as_bytes(),
        );
        assert_eq!(r.status, 303, "{next}");
        assert_eq!(r.header("location"), Some("/"), "{next}");
    }
}
