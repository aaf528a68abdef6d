//! Refusals that say why and what to do (write policy, filesystem
//! permissions, size limits, long names), content negotiation of listings,
//! charsets of text files, and sorted big listings: raw requests against the
//! real server on 127.0.0.1.

mod common;

use std::io;

use common::TestServer;
use wirespeed_net::ServerConfig;
use wirespeed_service::path::RelPath;
use wirespeed_service::storage::{LocalStorage, Meta, Storage};
use wirespeed_service::{ServiceConfig, StorageError, Writes};

fn with_writes(writes: Writes) -> TestServer {
    TestServer::with(ServiceConfig {
        writes,
        ..ServiceConfig::default()
    })
}

fn form(filename: &str, data: &[u8]) -> (String, Vec<u8>) {
    let boundary = "XyZzY";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

#[test]
fn read_only_refuses_every_write_and_says_so() {
    let s = with_writes(Writes::read_only());
    std::fs::write(s.root.join("keep.txt"), b"kept").unwrap();
    let r = s.put("/new.txt", b"data");
    assert_eq!(r.status, 403);
    assert!(r.text().contains("read-only"), "{}", r.text());
    assert!(r.header("www-authenticate").is_none());
    assert!(!s.root.join("new.txt").exists());
    let r = s.req("DELETE", "/keep.txt", &[], b"");
    assert_eq!(r.status, 403);
    assert!(r.text().contains("read-only"), "{}", r.text());
    let (ct, body) = form("f.bin", b"x");
    let r = s.req("POST", "/", &[("Content-Type", &ct)], &body);
    assert_eq!(r.status, 403);
    assert!(!s.root.join("f.bin").exists());
    // Reads are untouched.
    let g = s.get("/keep.txt");
    assert_eq!((g.status, g.body.as_slice()), (200, &b"kept"[..]));
    assert_eq!(s.get("/").status, 200);
}

#[test]
fn exposed_without_token_takes_only_the_writes_allowed() {
    let s = with_writes(Writes::exposed(false, false));
    let r = s.put("/a.txt", b"a");
    assert_eq!(r.status, 403);
    let t = r.text();
    assert!(t.contains("--token") && t.contains("--allow-upload"), "{t}");
    assert!(!s.root.join("a.txt").exists());

    let s = with_writes(Writes::exposed(true, false));
    assert_eq!(s.put("/a.txt", b"a").status, 201);
    let (ct, body) = form("b.bin", b"b");
    assert_eq!(
        s.req("POST", "/", &[("Content-Type", &ct)], &body).status,
        201
    );
    assert_eq!(std::fs::read(s.root.join("b.bin")).unwrap(), b"b");
    let r = s.req("DELETE", "/a.txt", &[], b"");
    assert_eq!(r.status, 403);
    assert!(r.text().contains("--allow-delete"), "{}", r.text());
    assert!(s.root.join("a.txt").exists());

    let s = with_writes(Writes::exposed(false, true));
    std::fs::write(s.root.join("gone.txt"), b"x").unwrap();
    assert_eq!(s.req("DELETE", "/gone.txt", &[], b"").status, 204);
    assert!(!s.root.join("gone.txt").exists());
    assert_eq!(s.put("/a.txt", b"a").status, 403);
}

/// The local storage, except that creating and deleting fail as a folder
/// the server may not write would make them fail (works as root too).
struct DeniedWrites(LocalStorage);

impl Storage for DeniedWrites {
    type Object = <LocalStorage as Storage>::Object;
    type Upload = <LocalStorage as Storage>::Upload;
    type Listing = <LocalStorage as Storage>::Listing;

    async fn stat(&self, key: &RelPath) -> Result<Meta, StorageError> {
        self.0.stat(key).await
    }
    async fn open(&self, key: &RelPath) -> Result<Self::Object, StorageError> {
        self.0.open(key).await
    }
    async fn create(&self, _key: &RelPath) -> Result<Self::Upload, StorageError> {
        Err(io::Error::from_raw_os_error(libc::EACCES).into())
    }
    async fn list(&self, key: &RelPath) -> Result<Self::Listing, StorageError> {
        self.0.list(key).await
    }
    async fn delete(&self, _key: &RelPath) -> Result<(), StorageError> {
        Err(io::Error::from_raw_os_error(libc::EPERM).into())
    }
}

#[test]
fn filesystem_permission_refusal_is_not_an_auth_refusal() {
    let s = TestServer::with_storage(
        DeniedWrites,
        ServiceConfig::default(),
        ServerConfig::default(),
    );
    std::fs::write(s.root.join("f.txt"), b"x").unwrap();
    for (method, path) in [("PUT", "/dir/new.txt"), ("DELETE", "/f.txt")] {
        let r = s.req(method, path, &[], if method == "PUT" { b"x" } else { b"" });
        assert_eq!(r.status, 403, "{method}");
        assert!(
            r.text()
                .contains("the server cannot write here (permission denied)"),
            "{method}: {}",
            r.text()
        );
        assert!(r.header("www-authenticate").is_none());
    }
    let (ct, body) = form("g.bin", b"g");
    let r = s.req("POST", "/", &[("Content-Type", &ct)], &body);
    assert_eq!(r.status, 403);
    assert!(r.text().contains("permission denied"), "{}", r.text());
}

/// Whether this process can be refused by file permissions (root cannot:
/// it bypasses them).
fn permissions_apply(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = dir.join("probe");
    std::fs::create_dir(&probe).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o555)).unwrap();
    let applies = std::fs::write(probe.join("x"), b"").is_err();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(&probe).unwrap();
    applies
}

#[test]
fn read_only_folder_on_disk_answers_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    let s = TestServer::start();
    if !permissions_apply(s.tmp.path()) {
        eprintln!(
            "skipped: this process bypasses file permissions (root); \
             cli_serve.rs covers it by running the server as nobody"
        );
        return;
    }
    let locked = s.root.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::write(locked.join("old.txt"), b"old").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let put = s.put("/locked/new.txt", b"x");
    let del = s.req("DELETE", "/locked/old.txt", &[], b"");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    for r in [put, del] {
        assert_eq!(r.status, 403);
        assert!(
            r.text()
                .contains("the server cannot write here (permission denied)"),
            "{}",
            r.text()
        );
    }
    assert!(!locked.join("new.txt").exists());
    assert!(locked.join("old.txt").exists());
}

#[test]
fn too_large_says_the_limit() {
    let s = TestServer::with(ServiceConfig {
        max_body: Some(10 << 30),
        ..ServiceConfig::default()
    });
    // Announced: refused before a byte of the body.
    let r = s.raw(
        format!(
            "PUT /big.iso HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            12u64 << 30
        )
        .as_bytes(),
        false,
    );
    assert_eq!(r.status, 413);
    assert!(
        r.text()
            .contains("the upload is 12 GiB, the limit is 10 GiB (serve --max-body)"),
        "{}",
        r.text()
    );
    let s = TestServer::with(ServiceConfig {
        max_body: Some(1000),
        ..ServiceConfig::default()
    });
    // Chunked: refused when it crosses the limit.
    let mut raw =
        b"PUT /c.bin HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n".to_vec();
    raw.extend_from_slice(&[b'x'; 2000]);
    raw.extend_from_slice(b"\r\n0\r\n\r\n");
    let r = s.raw(&raw, false);
    assert_eq!(r.status, 413);
    assert!(
        r.text()
            .contains("larger than the limit, 1000 bytes (serve --max-body)"),
        "{}",
        r.text()
    );
    assert!(!s.root.join("c.bin").exists());
    assert!(s.temp_files().is_empty());
}

#[test]
fn listing_honours_accept_q_values() {
    let s = TestServer::start();
    std::fs::write(s.root.join("a.txt"), b"a").unwrap();
    let ct = |accept: &str| {
        let r = s.req("GET", "/", &[("Accept", accept)], b"");
        assert_eq!(r.status, 200);
        r.header("content-type").unwrap().to_string()
    };
    assert!(ct("text/html, application/json;q=0.5").starts_with("text/html"));
    assert_eq!(ct("application/json"), "application/json");
    assert!(ct("*/*").starts_with("text/html"));
    assert_eq!(ct("text/html;q=0.1, application/json"), "application/json");
    let r = s.req("GET", "/", &[("Accept", "application/json")], b"");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v[0]["name"], "a.txt");
}

#[test]
fn text_files_say_utf8_only_when_they_are() {
    let s = TestServer::start();
    std::fs::write(s.root.join("notes.txt"), "caf\u{e9}\n".as_bytes()).unwrap();
    std::fs::write(s.root.join("latin1.txt"), b"caf\xe9\n").unwrap();
    std::fs::write(s.root.join("style.css"), b"body{}").unwrap();
    std::fs::write(s.root.join("blob.bin"), b"\xff\xfe").unwrap();
    let ct = |p: &str| s.get(p).header("content-type").unwrap().to_string();
    assert_eq!(ct("/notes.txt"), "text/plain; charset=utf-8");
    assert_eq!(ct("/style.css"), "text/css; charset=utf-8");
    assert_eq!(ct("/latin1.txt"), "text/plain");
    assert_eq!(ct("/blob.bin"), "application/octet-stream");
    let h = s.req("HEAD", "/notes.txt", &[], b"");
    assert_eq!(
        h.header("content-type").unwrap(),
        "text/plain; charset=utf-8"
    );
}

#[test]
fn names_over_255_bytes_are_refused_and_leave_nothing() {
    let s = TestServer::start();
    let long = "a".repeat(256);
    let r = s.put(&format!("/newdir/sub/{long}"), b"x");
    assert_eq!(r.status, 400);
    assert!(r.text().contains("longer than 255 bytes"), "{}", r.text());
    assert!(!s.root.join("newdir").exists(), "no folder left behind");
    let r = s.get(&format!("/{long}"));
    assert_eq!(r.status, 404);
    assert!(r.text().contains("longer than 255 bytes"), "{}", r.text());
    assert_eq!(s.req("DELETE", &format!("/{long}"), &[], b"").status, 404);
    // A 2-byte character making the name 256 bytes counts in bytes.
    let r = s.put(&format!("/{}%C3%A9", "a".repeat(254)), b"x");
    assert_eq!(r.status, 400);
    // 255 bytes is fine.
    let ok = "b".repeat(255);
    assert_eq!(s.put(&format!("/newdir/{ok}"), b"x").status, 201);
    assert!(s.root.join("newdir").join(&ok).exists());
    // Through a form: refused, no folder created for it.
    let (ct, body) = form(&"c".repeat(300), b"x");
    let r = s.req("POST", "/formdir/", &[("Content-Type", &ct)], &body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(!s.root.join("formdir").exists());
    // Every name fits but the whole path is past the kernel's PATH_MAX.
    let seg = "d".repeat(250);
    let deep = format!("/{}/f", vec![seg.as_str(); 17].join("/"));
    let r = s.put(&deep, b"x");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(!s.root.join(&seg).exists(), "no folder left behind");
    assert!(s.temp_files().is_empty());
}

#[test]
fn big_listing_comes_sorted() {
    let s = TestServer::start();
    let dir = s.root.join("many");
    std::fs::create_dir(&dir).unwrap();
    // Names whose creation order is not their sorted order.
    let mut expected: Vec<String> = (0..3000u64)
        .map(|i| format!("n{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
        .collect();
    for n in &expected {
        std::fs::write(dir.join(n), b"").unwrap();
    }
    std::fs::create_dir(dir.join("zz-dir")).unwrap();
    expected.push("zz-dir".into());
    expected.sort();
    let r = s.get("/many/?format=json");
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3001);
    assert_eq!(names, expected);
    assert_eq!(v[3000]["type"], "dir");
    // The HTML listing in the same order.
    let html = s.get("/many/").text();
    let first = html.find(&expected[0]).unwrap();
    let middle = html.find(&expected[1500]).unwrap();
    let last = html.find("zz-dir").unwrap();
    assert!(first < middle && middle < last);
}
