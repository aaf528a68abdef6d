//! WebDAV locks beyond WebDAV's own methods: every write front (form POSTs,
//! tus and IETF resumable creations and appends, PUT) refuses a name a lock
//! covers unless the request submits its token (423, the file unchanged on
//! disk), and a lock belongs to who took it: another user's token does not
//! count, and another user's `lockdiscovery` shows the lock without it.

mod common;

use base64::Engine as _;
use common::*;
use wirespeed_service::{ServiceConfig, UploadsConfig};

const TUS: (&str, &str) = ("Tus-Resumable", "1.0.0");
const OCTETS: (&str, &str) = ("Content-Type", "application/offset+octet-stream");
const INTEROP: (&str, &str) = ("Upload-Draft-Interop-Version", "8");
const B: &str = "----wirespeedLockBoundary";

/// An exclusive write lock's request body.
const LOCKINFO: &str = "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope>\
    <D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>tests</D:owner>\
    </D:lockinfo>";

/// LOCK `path` (exclusive, `depth`) with `headers`, returning the token.
fn lock(s: &TestServer, path: &str, depth: &str, headers: &[(&str, &str)]) -> String {
    let body = LOCKINFO;
    let mut h = vec![("Depth", depth), ("Timeout", "Second-120")];
    h.extend_from_slice(headers);
    let r = s.req("LOCK", path, &h, body.as_bytes());
    assert!(
        r.status == 200 || r.status == 201,
        "{} {}",
        r.status,
        r.text()
    );
    let t = r.header("lock-token").unwrap();
    t.trim_start_matches('<').trim_end_matches('>').to_string()
}

fn unlock(s: &TestServer, path: &str, tok: &str, headers: &[(&str, &str)]) -> Resp {
    let lt = format!("<{tok}>");
    let mut h = vec![("Lock-Token", lt.as_str())];
    h.extend_from_slice(headers);
    s.req("UNLOCK", path, &h, b"")
}

/// A form POST of one file `name` holding `data` into the folder `dir`.
fn form_post(s: &TestServer, dir: &str, name: &str, data: &[u8], extra: &[(&str, &str)]) -> Resp {
    let mut body = Vec::new();
    body.extend_from_slice(format!("--{B}\r\n").as_bytes());
    body.extend_from_slice(
        format!(
            "Content-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{B}--\r\n").as_bytes());
    let ct = format!("multipart/form-data; boundary={B}");
    let mut h = vec![
        ("Content-Type", ct.as_str()),
        ("Accept", "application/json"),
    ];
    h.extend_from_slice(extra);
    s.req("POST", dir, &h, &body)
}

/// A tus creation in folder `dir` of a file `name`, `length` bytes.
fn tus_create(s: &TestServer, dir: &str, name: &str, length: usize) -> Resp {
    let meta = format!(
        "filename {}",
        base64::engine::general_purpose::STANDARD.encode(name)
    );
    let len = length.to_string();
    s.req(
        "POST",
        &format!("/-/uploads{dir}"),
        &[TUS, ("Upload-Length", &len), ("Upload-Metadata", &meta)],
        b"",
    )
}

fn tus_patch(s: &TestServer, loc: &str, offset: usize, body: &[u8]) -> Resp {
    let off = offset.to_string();
    s.req(
        "PATCH",
        loc,
        &[TUS, OCTETS, ("Upload-Offset", off.as_str())],
        body,
    )
}

fn ietf_put(s: &TestServer, path: &str, body: &[u8]) -> Resp {
    s.req("PUT", path, &[INTEROP, ("Upload-Complete", "?1")], body)
}

#[test]
fn every_write_front_honours_locks() {
    let s = TestServer::with_uploads(ServiceConfig::default(), UploadsConfig::default());
    std::fs::create_dir(s.root.join("dir")).unwrap();
    std::fs::write(s.root.join("dir/f.txt"), b"v1").unwrap();
    let tok = lock(&s, "/dir/f.txt", "0", &[]);
    let on_disk = || std::fs::read(s.root.join("dir/f.txt")).unwrap();

    // Without the token: 423 from every front, the file unchanged.
    let r = form_post(&s, "/dir/", "f.txt", b"form", &[]);
    assert_eq!(r.status, 423, "{}", r.text());
    assert!(r.text().contains("/dir/f.txt is locked"), "{}", r.text());
    let r = tus_create(&s, "/dir/", "f.txt", 4);
    assert_eq!(r.status, 423, "{}", r.text());
    assert_eq!(r.header("tus-resumable"), Some("1.0.0"));
    let r = s.req(
        "POST",
        "/-/uploads/dir/f.txt",
        &[TUS, OCTETS, ("Upload-Length", "3")],
        b"tus",
    );
    assert_eq!(r.status, 423, "{}", r.text());
    let r = ietf_put(&s, "/dir/f.txt", b"ietf");
    assert_eq!(r.status, 423, "{}", r.text());
    assert_eq!(s.put("/dir/f.txt", b"put").status, 423);
    assert_eq!(on_disk(), b"v1");
    // The folder's other names are free (a depth-0 lock on one file).
    assert_eq!(form_post(&s, "/dir/", "other.txt", b"o", &[]).status, 201);

    // An If header with the token is honoured (tagged with the file: an
    // untagged list would speak of the request's URL, the folder).
    let with = format!("</dir/f.txt> (<{tok}>)");
    let r = form_post(&s, "/dir/", "f.txt", b"form", &[("If", &with)]);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(on_disk(), b"form");
    // A token the server never gave: the If header fails (412).
    let r = form_post(&s, "/dir/", "f.txt", b"x", &[("If", "(<urn:uuid:nope>)")]);
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(on_disk(), b"form");

    // A running tus upload: its append is refused once a folder lock
    // (depth infinity) covers its target, and goes on after UNLOCK.
    std::fs::create_dir(s.root.join("up")).unwrap();
    let r = tus_create(&s, "/up/", "g.txt", 6);
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    assert_eq!(tus_patch(&s, &loc, 0, b"abc").status, 204);
    let folder = lock(&s, "/up/", "infinity", &[]);
    let r = tus_patch(&s, &loc, 3, b"def");
    assert_eq!(r.status, 423, "{}", r.text());
    assert!(r.text().contains("/up/ is locked"), "{}", r.text());
    assert!(!s.root.join("up/g.txt").exists());
    // An IETF creation in the locked folder: refused before the 104.
    let r = ietf_put(&s, "/up/new.txt", b"n");
    assert_eq!(r.status, 423, "{}", r.text());
    assert!(!s.root.join("up/new.txt").exists());

    // After UNLOCK every front succeeds.
    assert_eq!(unlock(&s, "/up/", &folder, &[]).status, 204);
    assert_eq!(unlock(&s, "/dir/f.txt", &tok, &[]).status, 204);
    assert_eq!(tus_patch(&s, &loc, 3, b"def").status, 204);
    assert_eq!(std::fs::read(s.root.join("up/g.txt")).unwrap(), b"abcdef");
    assert_eq!(form_post(&s, "/dir/", "f.txt", b"form2", &[]).status, 201);
    assert_eq!(on_disk(), b"form2");
    let r = tus_create(&s, "/dir/", "f.txt", 3);
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    assert_eq!(tus_patch(&s, &loc, 0, b"tus").status, 204);
    assert_eq!(on_disk(), b"tus");
    let r = ietf_put(&s, "/dir/f.txt", b"ietf");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(on_disk(), b"ietf");
}

/// Sends `head` and `first` on a new connection, waits until the server
/// holds the upload's temp file (its checks before the body are passed),
/// runs `meanwhile`, sends `rest` and returns the answer's status line.
fn upload_across(
    s: &TestServer,
    head: &str,
    first: &[u8],
    rest: &[u8],
    meanwhile: impl FnOnce(),
) -> String {
    use std::io::{BufRead, Write};
    let mut c = std::net::TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    c.write_all(head.as_bytes()).unwrap();
    c.write_all(first).unwrap();
    s.eventually("the upload is under way", || !s.temp_files().is_empty());
    meanwhile();
    c.write_all(rest).unwrap();
    let mut line = String::new();
    std::io::BufReader::new(c).read_line(&mut line).unwrap();
    line
}

#[test]
fn a_lock_taken_while_an_upload_streams_stops_its_commit() {
    let s = TestServer::start();
    std::fs::write(s.root.join("f.txt"), b"v1").unwrap();
    let head = format!(
        "PUT /f.txt HTTP/1.1\r\nHost: {}\r\nContent-Length: 10\r\nConnection: close\r\n\r\n",
        s.addr
    );
    let mut tok = String::new();
    let status = upload_across(&s, &head, b"01234", b"56789", || {
        tok = lock(&s, "/f.txt", "0", &[]);
    });
    assert!(status.starts_with("HTTP/1.1 423"), "{status}");
    assert_eq!(std::fs::read(s.root.join("f.txt")).unwrap(), b"v1");
    s.eventually("the temp file is gone", || s.temp_files().is_empty());

    // A form's file too: the lock on its folder came after the checks.
    std::fs::create_dir(s.root.join("d")).unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(
        format!(
            "--{B}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"g.txt\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    let split = body.len() + 3;
    body.extend_from_slice(b"form data");
    body.extend_from_slice(format!("\r\n--{B}--\r\n").as_bytes());
    let head = format!(
        "POST /d/ HTTP/1.1\r\nHost: {}\r\nContent-Type: multipart/form-data; boundary={B}\r\n\
         Accept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        s.addr,
        body.len()
    );
    let status = upload_across(&s, &head, &body[..split], &body[split..], || {
        lock(&s, "/d/", "infinity", &[]);
    });
    assert!(status.starts_with("HTTP/1.1 423"), "{status}");
    assert!(!s.root.join("d/g.txt").exists());
    // The lock's holder still writes.
    let with = format!("(<{tok}>)");
    assert_eq!(s.req("PUT", "/f.txt", &[("If", &with)], b"v2").status, 204);
}

fn basic(user: &str, pw: &str) -> String {
    let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"));
    format!("Basic {b}")
}

#[test]
fn a_lock_belongs_to_who_took_it() {
    let alice_hash = wirespeed_service::policy::password::hash(b"alice-pw").unwrap();
    let bob_hash = wirespeed_service::policy::password::hash(b"bob-pw").unwrap();
    let rules = format!(
        "[users]\nalice = \"{alice_hash}\"\nbob = \"{bob_hash}\"\n\
         [paths.\"/\"]\nalice = \"rwd\"\nbob = \"rwd\"\n"
    );
    let users = wirespeed_service::Users::from_text("users.toml", &rules).unwrap();
    let s = TestServer::with(ServiceConfig {
        users: Some(std::sync::Arc::new(users)),
        ..ServiceConfig::default()
    });
    let alice_auth = basic("alice", "alice-pw");
    let bob_auth = basic("bob", "bob-pw");
    let alice = ("Authorization", alice_auth.as_str());
    let bob = ("Authorization", bob_auth.as_str());
    std::fs::write(s.root.join("f.txt"), b"v1").unwrap();

    let tok = lock(&s, "/f.txt", "0", &[alice]);
    let with = format!("(<{tok}>)");
    let if_tok = ("If", with.as_str());

    // bob presents alice's token: it does not count (423), nothing changes.
    let r = s.req("PUT", "/f.txt", &[bob, if_tok], b"bob");
    assert_eq!(r.status, 423, "{}", r.text());
    assert!(r.text().contains("someone else"), "{}", r.text());
    let r = s.req("DELETE", "/f.txt", &[bob, if_tok], b"");
    assert_eq!(r.status, 423, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("f.txt")).unwrap(), b"v1");
    // Nor may he refresh it.
    let r = s.req("LOCK", "/f.txt", &[bob, if_tok], b"");
    assert_eq!(r.status, 403, "{}", r.text());

    // lockdiscovery: bob sees the lock, not its token; alice sees both.
    let pf = |who: (&str, &str)| {
        let r = s.req("PROPFIND", "/f.txt", &[who, ("Depth", "0")], b"");
        assert_eq!(r.status, 207, "{}", r.text());
        r.text()
    };
    let seen = pf(bob);
    assert!(seen.contains("<D:activelock>"), "{seen}");
    assert!(!seen.contains(&tok), "{seen}");
    assert!(!seen.contains("<D:locktoken>"), "{seen}");
    let seen = pf(alice);
    assert!(seen.contains(&tok), "{seen}");
    // The folder's Depth 1 listing too.
    let r = s.req("PROPFIND", "/", &[bob, ("Depth", "1")], b"");
    assert!(!r.text().contains(&tok), "{}", r.text());

    // alice's token works for alice: write, refresh, unlock.
    assert_eq!(s.req("PUT", "/f.txt", &[alice, if_tok], b"v2").status, 204);
    assert_eq!(s.req("LOCK", "/f.txt", &[alice, if_tok], b"").status, 200);
    assert_eq!(unlock(&s, "/f.txt", &tok, &[alice]).status, 204);
    // Then bob writes without any token.
    assert_eq!(s.req("PUT", "/f.txt", &[bob], b"bob").status, 204);
    assert_eq!(std::fs::read(s.root.join("f.txt")).unwrap(), b"bob");

    // Whoever may change what a lock covers (d there) may lift it: a lock
    // never shuts the owner out. carol, with only r and w, may not.
    let tok = lock(&s, "/f.txt", "0", &[alice]);
    assert_eq!(unlock(&s, "/f.txt", &tok, &[bob]).status, 204);
    assert_eq!(s.req("PUT", "/f.txt", &[bob], b"free").status, 204);
}

#[test]
fn only_d_lifts_a_lock_that_is_not_yours() {
    let alice_hash = wirespeed_service::policy::password::hash(b"alice-pw").unwrap();
    let carol_hash = wirespeed_service::policy::password::hash(b"carol-pw").unwrap();
    let rules = format!(
        "[users]\nalice = \"{alice_hash}\"\ncarol = \"{carol_hash}\"\n\
         [paths.\"/\"]\nalice = \"rwd\"\ncarol = \"rw\"\n"
    );
    let users = wirespeed_service::Users::from_text("users.toml", &rules).unwrap();
    let s = TestServer::with(ServiceConfig {
        users: Some(std::sync::Arc::new(users)),
        ..ServiceConfig::default()
    });
    let alice_auth = basic("alice", "alice-pw");
    let carol_auth = basic("carol", "carol-pw");
    let alice = ("Authorization", alice_auth.as_str());
    let carol = ("Authorization", carol_auth.as_str());
    std::fs::write(s.root.join("f.txt"), b"v1").unwrap();
    let tok = lock(&s, "/f.txt", "0", &[alice]);
    let r = unlock(&s, "/f.txt", &tok, &[carol]);
    assert_eq!(r.status, 403, "{}", r.text());
    // Nor may carol (no d) lock the existing file herself.
    assert_eq!(unlock(&s, "/f.txt", &tok, &[alice]).status, 204);
    let r = s.req(
        "LOCK",
        "/f.txt",
        &[carol, ("Depth", "0")],
        LOCKINFO.as_bytes(),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("d right"), "{}", r.text());
}

/// A server on `bucket/p` of MinIO `m` (each its own process state).
fn s3_server(m: &wirespeed_testkit::minio::Minio, bucket: &str) -> TestServer {
    let mut c = wirespeed_service::S3Config::from_url(&format!("s3://{bucket}/p")).unwrap();
    c.endpoint = Some(m.endpoint());
    c.region = Some("us-east-1".into());
    c.credentials = Some((
        wirespeed_testkit::minio::USER.into(),
        wirespeed_testkit::minio::PASSWORD.into(),
    ));
    let storage = wirespeed_service::S3Storage::new(&c).unwrap();
    TestServer::on_storage(storage, ServiceConfig::default())
}

#[test]
fn two_servers_on_one_bucket_honour_each_others_locks() {
    let Some(m) = wirespeed_testkit::minio::Minio::start() else {
        return;
    };
    m.create_bucket("locks");
    let a = s3_server(&m, "locks");
    let b = s3_server(&m, "locks");
    assert_eq!(a.put("/f.txt", b"v1").status, 201);
    let tok = lock(&a, "/f.txt", "0", &[]);
    assert!(m
        .keys("locks")
        .contains(&"p/.wirespeed-locks.json".to_string()));

    // Node B: the PUT, a form POST and a conflicting LOCK are refused.
    let r = b.put("/f.txt", b"from b");
    assert_eq!(r.status, 423, "{}", r.text());
    assert_eq!(form_post(&b, "/", "f.txt", b"form", &[]).status, 423);
    let body = "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>\
        <D:locktype><D:write/></D:locktype></D:lockinfo>";
    assert_eq!(b.req("LOCK", "/f.txt", &[], body.as_bytes()).status, 423);
    assert_eq!(a.get("/f.txt").body, b"v1");
    // B shows A's lock, and honours its token.
    let r = b.req("PROPFIND", "/f.txt", &[("Depth", "0")], b"");
    assert!(r.text().contains(&tok), "{}", r.text());
    let with = format!("(<{tok}>)");
    assert_eq!(b.req("PUT", "/f.txt", &[("If", &with)], b"v2").status, 204);

    // UNLOCK on B (an anonymous lock is anyone's with the token); A's copy
    // catches up within the shared records' window.
    assert_eq!(unlock(&b, "/f.txt", &tok, &[]).status, 204);
    a.eventually("A sees the lock gone", || {
        a.put("/f.txt", b"v3").status == 204
    });
    assert_eq!(b.get("/f.txt").body, b"v3");

    // Both nodes LOCK one name at once: exactly one lock is granted.
    for round in 0..4 {
        let path = format!("/race{round}.txt");
        assert_eq!(a.put(&path, b"r").status, 201);
        let statuses: Vec<u16> = std::thread::scope(|s| {
            let ta = s.spawn(|| a.req("LOCK", &path, &[], body.as_bytes()).status);
            let tb = s.spawn(|| b.req("LOCK", &path, &[], body.as_bytes()).status);
            vec![ta.join().unwrap(), tb.join().unwrap()]
        });
        let mut sorted = statuses.clone();
        sorted.sort();
        assert_eq!(sorted, vec![200, 423], "round {round}: {statuses:?}");
    }
}
