//! Folder quotas of the rules file (`[quota."/team"]`) end to end on the
//! folder backend: every write front refused with 507 before it reads a
//! body byte (the client sends only the head, with `Expect:
//! 100-continue`, and gets the answer instead of `100`), nothing left on
//! disk; the count right after a file is deleted on the host; the file
//! count; a chunked body cut at the quota; WebDAV's RFC 4331 properties;
//! a user's quota. Then the trash (`serve --trash-days`): deletes and
//! overwrites kept, restored byte-identical with their mtime, rights on
//! listing and restoring, expiry, and the trash counted in quotas.

mod common;

use std::sync::Arc;

use common::*;
use wirespeed_service::{ServiceConfig, UploadsConfig, Users};

const RULES: &str = r#"
[paths."/"]
"*" = "rwd"
[quota."/team"]
bytes = "1K"
files = 3
"#;

fn server() -> TestServer {
    let cfg = ServiceConfig {
        users: Some(Arc::new(Users::from_text("rules.toml", RULES).unwrap())),
        ..ServiceConfig::default()
    };
    let s = TestServer::with_uploads(cfg, UploadsConfig::default());
    std::fs::create_dir(s.root.join("team")).unwrap();
    s
}

/// Only the head of a request announcing `len` body bytes, waiting for
/// `100 Continue` before a body it never sends.
fn head_only(s: &TestServer, method: &str, path: &str, headers: &[(&str, &str)], len: u64) -> Resp {
    let mut raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nExpect: 100-continue\r\n"
    );
    for (n, v) in headers {
        raw.push_str(&format!("{n}: {v}\r\n"));
    }
    raw.push_str(&format!("Content-Length: {len}\r\n\r\n"));
    s.raw(raw.as_bytes(), false)
}

fn assert_quota_refusal(r: &Resp, what: &str) {
    assert_eq!(r.status, 507, "{what}: {}", r.text());
    let t = r.text();
    assert!(
        t.contains("the quota of /team is full") && t.contains("used") && t.contains("left"),
        "{what}: {t}"
    );
}

/// A write front: method, path and fields of its request.
type Front = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str)>,
);

#[test]
fn every_write_front_is_refused_before_the_body() {
    let s = server();
    // 600 of the 1 KiB used: 500 more do not fit.
    assert_eq!(s.put("/team/a.bin", &[1; 600]).status, 201);
    std::fs::write(s.tmp.path().join("big"), [2; 500]).unwrap();
    assert_eq!(s.put("/big.bin", &[2; 500]).status, 201);

    let ct_json = ("Content-Type", "application/json");
    let fronts: &[Front] = &[
        ("PUT", "/team/b.bin", vec![]),
        (
            "POST",
            "/team/",
            vec![("Content-Type", "multipart/form-data; boundary=XX")],
        ),
        ("POST", "/team/c.bin?field=data", vec![ct_json]),
        (
            "POST",
            "/-/uploads/team/d.bin",
            vec![("Tus-Resumable", "1.0.0"), ("Upload-Length", "500")],
        ),
        (
            "POST",
            "/team/e.bin",
            vec![
                ("Upload-Draft-Interop-Version", "8"),
                ("Upload-Complete", "?1"),
            ],
        ),
    ];
    for (method, path, headers) in fronts {
        // The tus creation announces its upload's length, not a body.
        let len = if path.starts_with("/-/uploads") {
            0
        } else {
            500
        };
        let r = head_only(&s, method, path, headers, len);
        assert_quota_refusal(&r, &format!("{method} {path}"));
        assert!(!String::from_utf8_lossy(&r.body).contains("100 Continue"));
    }
    // WebDAV: a copy or a move of 500 bytes into the folder.
    for method in ["COPY", "MOVE"] {
        let dest = [("Destination", "/team/f.bin")];
        let r = s.req(method, "/big.bin", &dest, b"");
        assert_quota_refusal(&r, method);
    }
    assert_eq!(s.names("team"), ["a.bin"]);
    assert!(s.temp_files().is_empty(), "{:?}", s.temp_files());
    assert_eq!(std::fs::read(s.root.join("big.bin")).unwrap(), [2; 500]);
    // Replacing the file frees its bytes: 900 in place of 600 fits.
    assert_eq!(s.put("/team/a.bin", &[3; 900]).status, 204);
    // Outside the folder, no quota.
    assert_eq!(s.put("/free.bin", &[4; 5000]).status, 201);
}

#[test]
fn a_host_side_delete_frees_room_at_once() {
    let s = server();
    assert_eq!(s.put("/team/a.bin", &[1; 1000]).status, 201);
    let r = s.put("/team/b.bin", &[1; 100]);
    assert_quota_refusal(&r, "full");
    assert!(r.text().contains("24 bytes left"), "{}", r.text());
    // Deleted behind the server's back: the very next write fits.
    std::fs::remove_file(s.root.join("team/a.bin")).unwrap();
    assert_eq!(s.put("/team/b.bin", &[1; 100]).status, 201);
    // And a DELETE through the server frees room as well.
    assert_eq!(s.put("/team/c.bin", &[1; 900]).status, 201);
    assert_eq!(s.put("/team/d.bin", &[1; 100]).status, 507);
    assert_eq!(s.req("DELETE", "/team/c.bin", &[], b"").status, 204);
    assert_eq!(s.put("/team/d.bin", &[1; 100]).status, 201);
}

#[test]
fn the_file_count_is_a_quota_too() {
    let s = server();
    for name in ["a", "b", "c"] {
        assert_eq!(s.put(&format!("/team/{name}"), b"x").status, 201);
    }
    let r = s.put("/team/sub/d", b"x");
    assert_eq!(r.status, 507);
    assert!(r.text().contains("3 of 3 files used"), "{}", r.text());
    // Replacing one adds no file.
    assert_eq!(s.put("/team/a", b"yy").status, 204);
}

#[test]
fn a_chunked_body_is_cut_at_the_quota_and_nothing_is_published() {
    let s = server();
    assert_eq!(s.put("/team/a.bin", &[1; 1000]).status, 201);
    let mut body = Vec::new();
    for _ in 0..4 {
        body.extend_from_slice(b"10\r\n0123456789abcdef\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let te = [("Transfer-Encoding", "chunked")];
    let r = s.req("PUT", "/team/b.bin", &te, &body);
    assert_eq!(r.status, 507, "{}", r.text());
    assert!(r.text().contains("quota"), "{}", r.text());
    s.eventually("no temp file", || s.temp_files().is_empty());
    assert_eq!(s.names("team"), ["a.bin"]);
    // A chunked body that fits is stored.
    let small = b"4\r\nabcd\r\n0\r\n\r\n";
    assert_eq!(s.req("PUT", "/team/c.bin", &te, small).status, 201);
}

#[test]
fn a_tus_append_past_the_quota_is_refused() {
    let s = server();
    let tus = ("Tus-Resumable", "1.0.0");
    let r = s.req(
        "POST",
        "/-/uploads/team/late.bin",
        &[tus, ("Upload-Defer-Length", "1")],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    let patch = |offset: &str, body: &[u8]| {
        s.req(
            "PATCH",
            &loc,
            &[
                tus,
                ("Upload-Offset", offset),
                ("Content-Type", "application/offset+octet-stream"),
            ],
            body,
        )
    };
    assert_eq!(patch("0", &[1; 600]).status, 204);
    // 600 kept plus 600 more cross the 1 KiB.
    let r = patch("600", &[1; 600]);
    assert_eq!(r.status, 507, "{}", r.text());
    assert!(s.names("team").is_empty());
}

#[test]
fn webdav_shows_the_folder_quota() {
    let s = server();
    assert_eq!(s.put("/team/a.bin", &[1; 300]).status, 201);
    let body = br#"<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop>
        <D:quota-available-bytes/><D:quota-used-bytes/></D:prop></D:propfind>"#;
    let r = s.req("PROPFIND", "/team/", &[("Depth", "0")], body);
    assert_eq!(r.status, 207);
    let t = r.text();
    assert!(t.contains("<D:quota-used-bytes>300<"), "{t}");
    assert!(t.contains("<D:quota-available-bytes>724<"), "{t}");
}

#[test]
fn a_user_quota_counts_the_files_they_own_wherever_they_are() {
    use wirespeed_service::policy::password;
    let text = format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n[paths.\"/\"]\nalice = \"rwd\"\nbob = \"rwd\"\n\
         [quota.user]\nalice = \"1K\"\n",
        password::hash(b"a-pw").unwrap(),
        password::hash(b"b-pw").unwrap()
    );
    let cfg = ServiceConfig {
        users: Some(Arc::new(Users::from_text("rules.toml", &text).unwrap())),
        ..ServiceConfig::default()
    };
    let s = TestServer::with(cfg);
    let auth = |who: &str, pw: &str| {
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::STANDARD.encode(format!("{who}:{pw}"));
        format!("Basic {raw}")
    };
    let (alice, bob) = (auth("alice", "a-pw"), auth("bob", "b-pw"));
    let put = |who: &str, path: &str, n: usize| {
        s.req("PUT", path, &[("Authorization", who)], &vec![7; n])
    };
    assert_eq!(put(&alice, "/a/x", 800).status, 201);
    // Elsewhere in the tree, still hers: 800 + 300 cross 1 KiB.
    let r = put(&alice, "/b/y", 300);
    assert_eq!(r.status, 507, "{}", r.text());
    assert!(r.text().contains("alice's quota is full"), "{}", r.text());
    // Bob has no quota; his files are not hers.
    assert_eq!(put(&bob, "/b/y", 5000).status, 201);
    assert_eq!(put(&alice, "/a/z", 200).status, 201);
    // Replacing her own file frees its bytes; replacing bob's does not.
    assert_eq!(put(&alice, "/a/x", 820).status, 204);
    assert_eq!(put(&alice, "/b/y", 100).status, 507);
    // Gone on the host: the room is hers again.
    std::fs::remove_file(s.root.join("a/x")).unwrap();
    assert_eq!(put(&alice, "/b/w", 700).status, 201);
}

// ---- trash ------------------------------------------------------------

fn trash_server(rules: &str) -> TestServer {
    let cfg = ServiceConfig {
        users: Some(Arc::new(Users::from_text("rules.toml", rules).unwrap())),
        trash_days: 30,
        ..ServiceConfig::default()
    };
    TestServer::with(cfg)
}

fn trash_entries(s: &TestServer, path: &str, headers: &[(&str, &str)]) -> Vec<serde_json::Value> {
    let r = s.req("GET", &format!("/-/trash{path}"), headers, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["entries"].as_array().unwrap().clone()
}

fn restore(s: &TestServer, id: &str, extra: &str, headers: &[(&str, &str)]) -> Resp {
    s.req(
        "POST",
        &format!("/-/trash?restore={id}{extra}"),
        headers,
        b"",
    )
}

#[test]
fn a_deleted_file_comes_back_byte_identical_with_its_mtime() {
    let s = trash_server(RULES);
    let body: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect();
    assert_eq!(s.put("/docs/doc.bin", &body).status, 201);
    let file = s.root.join("docs/doc.bin");
    let mtime = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(s.req("DELETE", "/docs/doc.bin", &[], b"").status, 204);
    assert!(!file.exists());
    assert_eq!(s.get("/docs/doc.bin").status, 404);
    // Invisible and unreachable by requests.
    assert!(!s.get("/").text().contains("wirespeed-trash"));
    let entries = trash_entries(&s, "/docs/", &[]);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["path"], "/docs/doc.bin");
    assert_eq!(entries[0]["size"], 70_000);
    let id = entries[0]["id"].as_str().unwrap().to_string();
    assert_eq!(restore(&s, &id, "", &[]).status, 201);
    assert_eq!(std::fs::read(&file).unwrap(), body);
    assert_eq!(std::fs::metadata(&file).unwrap().modified().unwrap(), mtime);
    assert!(trash_entries(&s, "/", &[]).is_empty());
}

#[test]
fn an_overwrite_kept_in_the_trash_never_leaves_the_name_empty() {
    // The file replaced is kept by a second name and the new one renames
    // over it: a reader meets the old bytes or the new, never a 404.
    let s = trash_server(RULES);
    assert_eq!(s.put("/live.txt", b"v0").status, 201);
    let done = std::sync::atomic::AtomicBool::new(false);
    let ((reads, empty), statuses) = std::thread::scope(|t| {
        let reader = t.spawn(|| {
            let (mut reads, mut empty) = (0u32, Vec::new());
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let r = s.get("/live.txt");
                reads += 1;
                if r.status != 200 || !r.text().starts_with('v') {
                    empty.push(format!("{} {:?}", r.status, r.text()));
                }
            }
            (reads, empty)
        });
        let statuses: Vec<u16> = (1..=60)
            .map(|i| s.put("/live.txt", format!("v{i}").as_bytes()).status)
            .collect();
        // The reader stops before anything is judged (a failed judgement
        // must not leave it looping).
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (reader.join().unwrap(), statuses)
    });
    assert!(
        empty.is_empty(),
        "{} of {reads} reads found no file: {empty:?}",
        empty.len()
    );
    assert!(statuses.iter().all(|s| *s == 204), "{statuses:?}");
    assert_eq!(std::fs::read(s.root.join("live.txt")).unwrap(), b"v60");
    // Every version replaced is in the trash, the first one included.
    let kept = trash_entries(&s, "/", &[]);
    assert_eq!(kept.len(), 60, "{kept:?}");
}

#[test]
fn overwrites_and_whole_folders_go_to_the_trash() {
    let s = trash_server(RULES);
    assert_eq!(s.put("/notes.txt", b"first").status, 201);
    assert_eq!(s.put("/notes.txt", b"second").status, 204);
    let e = trash_entries(&s, "/", &[]);
    assert_eq!(e.len(), 1);
    let id = e[0]["id"].as_str().unwrap().to_string();
    // The name is taken: 409 unless restored beside it.
    assert_eq!(restore(&s, &id, "", &[]).status, 409);
    assert_eq!(restore(&s, &id, "&as=notes-old.txt", &[]).status, 201);
    assert_eq!(
        std::fs::read(s.root.join("notes-old.txt")).unwrap(),
        b"first"
    );
    assert_eq!(std::fs::read(s.root.join("notes.txt")).unwrap(), b"second");
    // A WebDAV MOVE over an existing file keeps the one replaced.
    assert_eq!(s.put("/a.txt", b"aaa").status, 201);
    let r = s.req("MOVE", "/a.txt", &[("Destination", "/notes.txt")], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    let e = trash_entries(&s, "/", &[]);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["path"], "/notes.txt");
    // A folder goes whole, and comes back whole.
    for name in ["x", "sub/y", "sub/z"] {
        assert_eq!(s.put(&format!("/dir/{name}"), name.as_bytes()).status, 201);
    }
    assert_eq!(s.req("DELETE", "/dir/", &[], b"").status, 204);
    assert!(!s.root.join("dir").exists());
    let e = trash_entries(&s, "/dir/", &[]);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(
        (e[0]["folder"].as_bool(), e[0]["files"].as_u64()),
        (Some(true), Some(3))
    );
    let id = e[0]["id"].as_str().unwrap().to_string();
    assert_eq!(restore(&s, &id, "", &[]).status, 201);
    assert_eq!(std::fs::read(s.root.join("dir/sub/z")).unwrap(), b"sub/z");
}

#[test]
fn only_who_could_delete_it_sees_or_restores_it() {
    use base64::Engine as _;
    use wirespeed_service::policy::password;
    let rules = format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n[paths.\"/\"]\nalice = \"r\"\nbob = \"r\"\n\
         [paths.\"/alice\"]\nalice = \"rwd\"\nbob = \"r\"\n",
        password::hash(b"a-pw").unwrap(),
        password::hash(b"b-pw").unwrap()
    );
    let s = trash_server(&rules);
    let auth = |who: &str, pw: &str| {
        let raw = base64::engine::general_purpose::STANDARD.encode(format!("{who}:{pw}"));
        format!("Basic {raw}")
    };
    let (alice, bob) = (auth("alice", "a-pw"), auth("bob", "b-pw"));
    let (alice, bob) = (
        [("Authorization", alice.as_str())],
        [("Authorization", bob.as_str())],
    );
    assert_eq!(s.req("PUT", "/alice/x", &alice, b"mine").status, 201);
    assert_eq!(s.req("DELETE", "/alice/x", &alice, b"").status, 204);
    let mine = trash_entries(&s, "/", &alice);
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["by"], "alice");
    assert!(trash_entries(&s, "/", &bob).is_empty());
    let id = mine[0]["id"].as_str().unwrap().to_string();
    assert_eq!(restore(&s, &id, "", &bob).status, 403);
    assert!(!s.root.join("alice/x").exists());
    // Anyone not signed in is asked to.
    assert_eq!(restore(&s, &id, "", &[]).status, 401);
    assert_eq!(restore(&s, &id, "", &alice).status, 201);
    assert_eq!(std::fs::read(s.root.join("alice/x")).unwrap(), b"mine");
}

#[test]
fn the_trash_empties_itself_and_counts_in_quotas() {
    let s = trash_server(RULES);
    assert_eq!(s.put("/team/a.bin", &[1; 800]).status, 201);
    assert_eq!(s.req("DELETE", "/team/a.bin", &[], b"").status, 204);
    // Deleted, still kept: still in /team's quota.
    let r = s.put("/team/b.bin", &[1; 300]);
    assert_eq!(r.status, 507, "{}", r.text());
    // Its time is up (the record says it went long ago): the next sweep
    // removes it for good, and the room is free.
    let trash = s.root.join(".wirespeed-trash");
    let record = std::fs::read_dir(&trash)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    v["at"] = 1_000.into();
    std::fs::write(&record, v.to_string()).unwrap();
    assert!(trash_entries(&s, "/", &[]).is_empty());
    assert_eq!(std::fs::read_dir(&trash).unwrap().count(), 0);
    assert_eq!(s.put("/team/b.bin", &[1; 300]).status, 201);
}

/// Every front that publishes over an existing file keeps the old one in
/// the trash: the storage keeps it at the publication itself, so none of
/// them can skip it (a form, the encoded POSTs, tus and IETF uploads, a
/// conditional PUT).
#[test]
fn every_front_that_replaces_a_file_keeps_the_old_one() {
    let cfg = ServiceConfig {
        users: Some(Arc::new(Users::from_text("rules.toml", RULES).unwrap())),
        trash_days: 30,
        ..ServiceConfig::default()
    };
    let s = TestServer::with_uploads(cfg, UploadsConfig::default());
    let form = {
        let b = "XXbound";
        let mut body = format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"form.txt\"\r\n\r\nnew form\r\n--{b}--\r\n"
        )
        .into_bytes();
        body.truncate(body.len());
        (format!("multipart/form-data; boundary={b}"), body)
    };
    let b64 = |t: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(t)
    };
    let json = format!(r#"{{"data": "{}"}}"#, b64("new json"));
    let xml = format!(
        "<?xml version=\"1.0\"?><Envelope><Body><data>{}</data></Body></Envelope>",
        b64("new xml")
    );
    let mb = "MIMEbound";
    let mtom = format!(
        "--{mb}\r\nContent-ID: <root@t>\r\nContent-Type: application/xop+xml\r\n\r\n\
         <Envelope><Body><data><xop:Include xmlns:xop=\"http://www.w3.org/2004/08/xop/include\" href=\"cid:p@t\"/></data></Body></Envelope>\r\n\
         --{mb}\r\nContent-ID: <p@t>\r\nContent-Type: application/octet-stream\r\n\r\nnew mtom\r\n--{mb}--\r\n"
    );
    let mtom_ct = format!("multipart/related; type=\"application/xop+xml\"; boundary=\"{mb}\"");
    let tus = ("Tus-Resumable", "1.0.0");
    let octets = ("Content-Type", "application/offset+octet-stream");
    let names = [
        "form.txt",
        "json.txt",
        "xml.txt",
        "mtom.txt",
        "tus.txt",
        "ietf.txt",
        "ifmatch.txt",
    ];
    for name in names {
        assert_eq!(
            s.put(&format!("/{name}"), format!("old {name}").as_bytes())
                .status,
            201
        );
    }
    let ok = |r: Resp, what: &str| assert!(r.status < 300, "{what}: {} {}", r.status, r.text());
    ok(
        s.req("POST", "/", &[("Content-Type", &form.0)], &form.1),
        "form",
    );
    let ct = |v: &'static str| [("Content-Type", v)];
    ok(
        s.req(
            "POST",
            "/json.txt?field=data",
            &ct("application/json"),
            json.as_bytes(),
        ),
        "json",
    );
    ok(
        s.req(
            "POST",
            "/xml.txt?element=data",
            &ct("text/xml"),
            xml.as_bytes(),
        ),
        "xml",
    );
    let r = s.req(
        "POST",
        "/mtom.txt?element=data",
        &[("Content-Type", &mtom_ct)],
        mtom.as_bytes(),
    );
    ok(r, "mtom");
    let len = b"new tus".len().to_string();
    let r = s.req(
        "POST",
        "/-/uploads/tus.txt",
        &[tus, ("Upload-Length", &len), octets],
        b"new tus",
    );
    ok(r, "tus");
    let ietf = [
        ("Upload-Draft-Interop-Version", "8"),
        ("Upload-Complete", "?1"),
    ];
    ok(s.req("POST", "/ietf.txt", &ietf, b"new ietf"), "ietf");
    let etag = s.get("/ifmatch.txt").header("etag").unwrap().to_string();
    ok(
        s.req(
            "PUT",
            "/ifmatch.txt",
            &[("If-Match", &etag)],
            b"new ifmatch",
        ),
        "If-Match",
    );

    let kept = trash_entries(&s, "/", &[]);
    for name in names {
        let what = name.trim_end_matches(".txt");
        let new = std::fs::read_to_string(s.root.join(name)).unwrap();
        assert_eq!(new, format!("new {what}"), "{name}");
        let e: Vec<_> = kept
            .iter()
            .filter(|e| e["path"] == format!("/{name}"))
            .collect();
        assert_eq!(e.len(), 1, "{name}: {kept:?}");
        let id = e[0]["id"].as_str().unwrap();
        let r = restore(&s, id, &format!("&as={what}.old"), &[]);
        assert_eq!(r.status, 201, "{name}: {}", r.text());
        let old = std::fs::read_to_string(s.root.join(format!("{what}.old"))).unwrap();
        assert_eq!(old, format!("old {name}"));
    }
    assert_eq!(kept.len(), names.len(), "{kept:?}");
}
