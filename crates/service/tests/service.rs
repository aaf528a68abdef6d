//! The transfer service end to end: the real server on 127.0.0.1:0 over a
//! temporary directory, driven by raw sockets and by curl.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{bytes, curl, sha256_field, TestServer};
use wirespeed_service::{Access, ServiceConfig, UploadPath};

#[test]
fn health_answers_ok_and_its_namespace_is_not_writable() {
    let s = TestServer::start();
    let r = s.get("/-/health");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "ok\n");
    // The control namespace is not a file namespace.
    assert_eq!(s.put("/-/x", b"data").status, 404);
}

#[test]
fn put_stores_the_file_get_and_head_serve_it_and_a_second_put_replaces_it() {
    let s = TestServer::start();
    let data = bytes(300_000, 1);
    let r = s.put("/dir/sub/file.bin", &data);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("repr-digest"), None, "not hashed unless asked");
    assert_eq!(r.header("location").unwrap(), "/dir/sub/file.bin");
    assert_eq!(
        std::fs::read(s.root.join("dir/sub/file.bin")).unwrap(),
        data
    );

    let g = s.get("/dir/sub/file.bin");
    assert_eq!(g.status, 200);
    assert_eq!(g.body, data);
    assert_eq!(g.header("content-length").unwrap(), "300000");
    assert_eq!(
        g.header("content-type").unwrap(),
        "application/octet-stream"
    );
    assert_eq!(g.header("accept-ranges").unwrap(), "bytes");
    let etag = g.header("etag").unwrap().to_string();
    assert!(etag.starts_with('"') && etag.ends_with('"'));
    assert!(g.header("last-modified").is_some());

    let h = s.req("HEAD", "/dir/sub/file.bin", &[], b"");
    assert_eq!(h.status, 200);
    assert!(h.body.is_empty());
    for name in [
        "content-length",
        "content-type",
        "etag",
        "last-modified",
        "accept-ranges",
    ] {
        assert_eq!(h.header(name), g.header(name), "{name}");
    }

    // Replace: 204, new content, new ETag.
    let r = s.put("/dir/sub/file.bin", b"short");
    assert_eq!(r.status, 204);
    let g2 = s.get("/dir/sub/file.bin");
    assert_eq!(g2.body, b"short");
    assert_ne!(g2.header("etag").unwrap(), etag);

    // Mime type from the name; empty files work.
    assert_eq!(s.put("/page.html", b"").status, 201);
    let g = s.get("/page.html");
    assert_eq!(
        g.header("content-type").unwrap(),
        "text/html; charset=utf-8"
    );
    assert_eq!(g.header("content-length").unwrap(), "0");
    assert!(s.temp_files().is_empty());
}

#[test]
fn chunked_and_expect_continue_puts_store_the_body() {
    let s = TestServer::start();
    let r = s.raw(
        b"PUT /c.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\nWant-Repr-Digest: sha-256=9\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        false,
    );
    assert_eq!(r.status, 201);
    assert_eq!(
        r.header("repr-digest").unwrap(),
        sha256_field(b"hello world")
    );
    assert_eq!(std::fs::read(s.root.join("c.txt")).unwrap(), b"hello world");

    // Expect: 100-continue: the server asks for the body, then stores it.
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"PUT /e.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 25];
    c.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.write_all(b"abc").unwrap();
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).unwrap();
    assert!(rest.starts_with(b"HTTP/1.1 201"));
    assert_eq!(std::fs::read(s.root.join("e.txt")).unwrap(), b"abc");
}

#[test]
fn put_to_a_folder_or_across_a_file_is_refused_with_400_or_409() {
    let s = TestServer::start();
    assert_eq!(s.put("/", b"x").status, 400);
    assert_eq!(s.put("/dir/", b"x").status, 400);
    assert_eq!(s.put("/f", b"x").status, 201);
    // A parent path that is a file.
    assert_eq!(s.put("/f/g", b"x").status, 409);
    // A directory where the file would go.
    assert_eq!(s.put("/d/inner", b"x").status, 201);
    assert_eq!(s.put("/d", b"x").status, 409);
    assert!(s.root.join("d/inner").is_file());
    assert!(s.temp_files().is_empty());
}

#[test]
fn put_with_a_mismatched_digest_is_refused_and_leaves_the_old_file() {
    let s = TestServer::start();
    assert_eq!(s.put("/keep.txt", b"original").status, 201);
    // Mismatch: 400, the existing file is untouched, nothing left behind.
    let wrong = sha256_field(b"something else");
    for field in ["Repr-Digest", "Content-Digest"] {
        let r = s.req("PUT", "/keep.txt", &[(field, &wrong)], b"replacement");
        assert_eq!(r.status, 400, "{field}: {}", r.text());
        assert!(r.text().contains("digest mismatch"));
        assert_eq!(std::fs::read(s.root.join("keep.txt")).unwrap(), b"original");
    }
    let r = s.req(
        "PUT",
        "/new.txt",
        &[("Repr-Digest", &wrong)],
        b"replacement",
    );
    assert_eq!(r.status, 400);
    assert!(!s.root.join("new.txt").exists());
    // Malformed sha-256 member: 400 before anything is stored.
    let r = s.req(
        "PUT",
        "/keep.txt",
        &[("Repr-Digest", "sha-256=:nope:")],
        b"replacement",
    );
    assert_eq!(r.status, 400);
    assert_eq!(std::fs::read(s.root.join("keep.txt")).unwrap(), b"original");
    // A matching digest among other algorithms.
    let good = format!("sha-512=:AAAA:, {}", sha256_field(b"replacement"));
    let r = s.req(
        "PUT",
        "/keep.txt",
        &[("Repr-Digest", &good)],
        b"replacement",
    );
    assert_eq!(r.status, 204);
    assert_eq!(
        std::fs::read(s.root.join("keep.txt")).unwrap(),
        b"replacement"
    );
    // Unknown algorithms only: nothing to check, stored.
    let r = s.req(
        "PUT",
        "/other.txt",
        &[("Content-Digest", "md5=:AAAA:")],
        b"x",
    );
    assert_eq!(r.status, 201);
    assert!(s.temp_files().is_empty());
}

/// Send a head and part of a body, then vanish. Nothing may remain.
fn abort_upload(s: &TestServer, head: &str, partial: &[u8]) {
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    c.write_all(partial).unwrap();
    // Wait until the server has created its temp file, so the abort really
    // happens mid-body.
    s.eventually("the upload to start", || !s.temp_files().is_empty());
    // A listing during the upload never shows the temp file, and its name is
    // unreachable.
    let l = s.get("/up/?format=json");
    assert_eq!(l.status, 200);
    assert!(!l.text().contains("wirespeed-tmp"), "{}", l.text());
    let tmp = s.temp_files()[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(s.get(&format!("/up/{tmp}")).status, 404);
    assert_eq!(s.req("DELETE", &format!("/up/{tmp}"), &[], b"").status, 404);
    drop(c);
    s.eventually("the temp file to be removed", || s.temp_files().is_empty());
    assert!(!s.root.join("up/big.bin").exists());
}

#[test]
fn aborted_uploads_leave_nothing() {
    for path in [UploadPath::Copy, UploadPath::Splice] {
        let s = TestServer::with(ServiceConfig {
            upload_path: path,
            ..Default::default()
        });
        std::fs::create_dir(s.root.join("up")).unwrap();
        abort_upload(
            &s,
            "PUT /up/big.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n",
            &bytes(300_000, 2),
        );
        abort_upload(
            &s,
            "PUT /up/big.bin HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"10000\r\n0123456789",
        );
        assert_eq!(s.names("up"), Vec::<String>::new(), "{path:?}");
        // Parent directories an aborted upload created are removed too.
        abort_upload_new_dirs(&s);
    }
}

fn abort_upload_new_dirs(s: &TestServer) {
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.write_all(b"PUT /fresh/a/b.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\nxx")
        .unwrap();
    s.eventually("the upload to start", || !s.temp_files().is_empty());
    drop(c);
    s.eventually("cleanup", || !s.root.join("fresh").exists());
}

#[test]
fn body_over_the_size_limit_is_refused_with_413() {
    let s = TestServer::with(ServiceConfig {
        max_body: Some(1000),
        ..Default::default()
    });
    // Too-big Content-Length: 413 without the body ever being sent.
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(
        b"PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\nExpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).unwrap();
    assert!(
        buf.starts_with(b"HTTP/1.1 413"),
        "{}",
        String::from_utf8_lossy(&buf)
    );
    // Chunked crossing the limit: 413 as soon as it does.
    let mut body = Vec::new();
    for _ in 0..3 {
        body.extend_from_slice(b"190\r\n");
        body.extend_from_slice(&[b'a'; 400]);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let r = s.req("PUT", "/y", &[("Transfer-Encoding", "chunked")], &body);
    assert_eq!(r.status, 413);
    assert!(!s.root.join("y").exists());
    s.eventually("no temp files", || s.temp_files().is_empty());
    // At the limit is fine.
    assert_eq!(s.put("/z", &[b'z'; 1000]).status, 201);
}

#[test]
fn range_request_returns_206_with_content_range() {
    let s = TestServer::start();
    let data = bytes(1000, 3);
    s.put("/r.bin", &data);
    let range = |h: &str| s.req("GET", "/r.bin", &[("Range", h)], b"");
    let r = range("bytes=0-99");
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &data[..100]);
    assert_eq!(r.header("content-range").unwrap(), "bytes 0-99/1000");
    let r = range("bytes=990-");
    assert_eq!((r.status, &r.body[..]), (206, &data[990..]));
    assert_eq!(r.header("content-range").unwrap(), "bytes 990-999/1000");
    let r = range("bytes=-10");
    assert_eq!((r.status, &r.body[..]), (206, &data[990..]));
    let r = range("bytes=999-5000");
    assert_eq!((r.status, &r.body[..]), (206, &data[999..]));
    let r = range("bytes=1000-");
    assert_eq!(r.status, 416);
    assert_eq!(r.header("content-range").unwrap(), "bytes */1000");
    // Several ranges: the whole file (documented choice).
    let r = range("bytes=0-1,5-6");
    assert_eq!((r.status, r.body.len()), (200, 1000));
    // Invalid syntax is ignored.
    assert_eq!(range("bytes=5-1").status, 200);
    // HEAD ignores Range.
    let h = s.req("HEAD", "/r.bin", &[("Range", "bytes=0-9")], b"");
    assert_eq!((h.status, h.header("content-length")), (200, Some("1000")));
}

#[test]
fn conditional_gets_answer_304_412_or_the_full_file_for_a_stale_if_range() {
    let s = TestServer::start();
    s.put("/c.txt", b"0123456789");
    let g = s.get("/c.txt");
    let etag = g.header("etag").unwrap().to_string();
    let lm = g.header("last-modified").unwrap().to_string();
    let get = |h: &[(&str, &str)]| s.req("GET", "/c.txt", h, b"");

    let r = get(&[("If-None-Match", &etag)]);
    assert_eq!(r.status, 304);
    assert_eq!(r.header("etag").unwrap(), etag);
    assert_eq!(get(&[("If-None-Match", "\"nope\"")]).status, 200);
    assert_eq!(get(&[("If-Modified-Since", &lm)]).status, 304);
    assert_eq!(
        get(&[("If-Modified-Since", "Mon, 01 Jan 2001 00:00:00 GMT")]).status,
        200
    );
    assert_eq!(get(&[("If-Match", "\"nope\"")]).status, 412);
    assert_eq!(get(&[("If-Match", &etag)]).status, 200);
    // If-Range: matching validator → 206; stale → the full file.
    let r = get(&[("Range", "bytes=2-4"), ("If-Range", &etag)]);
    assert_eq!((r.status, &r.body[..]), (206, &b"234"[..]));
    let r = get(&[("Range", "bytes=2-4"), ("If-Range", &lm)]);
    assert_eq!(r.status, 206);
    let r = get(&[("Range", "bytes=2-4"), ("If-Range", "\"stale\"")]);
    assert_eq!((r.status, r.body.len()), (200, 10));
    let r = get(&[
        ("Range", "bytes=2-4"),
        ("If-Range", "Mon, 01 Jan 2001 00:00:00 GMT"),
    ]);
    assert_eq!(r.status, 200);
}

#[test]
fn folder_listings_are_sorted_escaped_and_linked_in_html_and_json() {
    let s = TestServer::start();
    let names = [
        "plain.txt",
        "quo\"te",
        "<b>&amp;",
        "sp ace",
        "é.txt",
        "back\\slash",
        "pct%41",
    ];
    std::fs::create_dir(s.root.join("l")).unwrap();
    for n in names {
        std::fs::write(s.root.join("l").join(n), n.as_bytes()).unwrap();
    }
    std::fs::create_dir(s.root.join("l/sub")).unwrap();
    std::fs::write(s.root.join("l/.wirespeed-tmp-0123"), b"half").unwrap();

    let r = s.get("/l/?format=json");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type").unwrap(), "application/json");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), names.len() + 1);
    let got: Vec<&str> = arr.iter().map(|e| e["name"].as_str().unwrap()).collect();
    let mut want: Vec<&str> = names.iter().copied().chain(["sub"]).collect();
    want.sort();
    assert_eq!(got, want, "small listings are sorted by name");
    for e in arr {
        let name = e["name"].as_str().unwrap();
        if name == "sub" {
            assert_eq!(e["type"], "dir");
        } else {
            assert_eq!(e["type"], "file");
            assert_eq!(e["size"].as_u64().unwrap() as usize, name.len());
        }
        let m = e["modified"].as_str().unwrap();
        assert!(m.ends_with('Z') && m.len() == 20, "{m}");
    }
    // Accept header selects JSON too; HEAD gets headers only.
    let r = s.req("GET", "/l/", &[("Accept", "application/json")], b"");
    assert_eq!(r.header("content-type").unwrap(), "application/json");
    let h = s.req("HEAD", "/l/", &[], b"");
    assert_eq!(h.status, 200);
    assert!(h.header("content-type").unwrap().starts_with("text/html"));

    // HTML: escaped names, percent-encoded links, the upload form.
    let html = s.get("/l/").text();
    assert!(html.contains("href=\"quo%22te\">quo&quot;te</a>"), "{html}");
    assert!(html.contains("href=\"%3Cb%3E%26amp%3B\">&lt;b&gt;&amp;amp;</a>"));
    assert!(html.contains("href=\"sp%20ace\""));
    assert!(html.contains("href=\"pct%2541\""));
    assert!(html.contains("href=\"sub/\""));
    assert!(html.contains("enctype=\"multipart/form-data\""));
    assert!(!html.contains("wirespeed-tmp"));
    // Links resolve: the encoded name serves the file.
    assert_eq!(s.get("/l/quo%22te").body, b"quo\"te");
    assert_eq!(s.get("/l/pct%2541").body, b"pct%41");
    // The root lists too.
    assert!(s.get("/").text().contains("href=\"l/\""));

    // Redirects and wrong-kind paths.
    let r = s.get("/l");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location").unwrap(), "/l/");
    let r = s.get("/l/sub?format=json");
    assert_eq!(r.header("location").unwrap(), "/l/sub/?format=json");
    assert_eq!(s.get("/l/plain.txt/").status, 404);
    assert_eq!(s.get("/missing/").status, 404);
    assert_eq!(s.get("/missing").status, 404);
}

#[test]
fn big_listing_streams_in_big_chunks() {
    let s = TestServer::start();
    let dir = s.root.join("big");
    std::fs::create_dir(&dir).unwrap();
    const N: usize = 100_000;
    for i in 0..N {
        std::fs::File::create(dir.join(format!("file-{i:06}.dat"))).unwrap();
    }
    let r = s.get("/big/?format=json");
    assert_eq!(r.status, 200);
    assert!(
        r.chunked,
        "a large listing is streamed with chunked framing"
    );
    let mean = r.body.len() / r.chunks.len();
    assert!(
        mean >= 16 * 1024,
        "mean chunk {mean} bytes over {} chunks",
        r.chunks.len()
    );
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), N);
    let mut seen: Vec<&str> = arr.iter().map(|e| e["name"].as_str().unwrap()).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), N);
}

#[test]
fn write_without_token_is_refused_with_401_and_private_mode_guards_reads() {
    let s = TestServer::with(ServiceConfig {
        access: Access::new(["t0ken", "second"], false),
        ..Default::default()
    });
    let r = s.put("/a", b"x");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate").unwrap(),
        "Bearer realm=\"wirespeed\""
    );
    assert_eq!(
        s.req("PUT", "/a", &[("Authorization", "Bearer wrong")], b"x")
            .status,
        401
    );
    assert_eq!(
        s.req("PUT", "/a", &[("Authorization", "Basic dDBrZW4=")], b"x")
            .status,
        401
    );
    assert_eq!(
        s.req("PUT", "/a", &[("Authorization", "Bearer t0ken")], b"x")
            .status,
        201
    );
    assert_eq!(
        s.req("PUT", "/a", &[("Authorization", "Bearer second")], b"y")
            .status,
        204
    );
    assert_eq!(s.req("DELETE", "/a", &[], b"").status, 401);
    assert_eq!(s.req("POST", "/", &[], b"").status, 401);
    // Reads stay open.
    assert_eq!(s.get("/a").body, b"y");
    assert_eq!(
        s.req("DELETE", "/a", &[("Authorization", "Bearer t0ken")], b"")
            .status,
        204
    );

    let p = TestServer::with(ServiceConfig {
        access: Access::new(["t0ken"], true),
        ..Default::default()
    });
    std::fs::write(p.root.join("secret"), b"s").unwrap();
    assert_eq!(p.get("/secret").status, 401);
    assert_eq!(p.get("/").status, 401);
    assert_eq!(
        p.req("GET", "/secret", &[("Authorization", "Bearer t0ken")], b"")
            .body,
        b"s"
    );
    assert_eq!(p.get("/-/health").status, 200, "health stays public");
}

#[test]
fn delete_removes_files_and_empty_folders_and_never_follows_links() {
    let s = TestServer::start();
    s.put("/d/f", b"x");
    // Depth: 0 (what `wirespeed rm` and the page send) keeps a full folder;
    // a plain DELETE takes it whole (WebDAV, tests/dav.rs).
    assert_eq!(
        s.req("DELETE", "/d", &[("Depth", "0")], b"").status,
        409,
        "non-empty directory"
    );
    assert_eq!(s.req("DELETE", "/d/f", &[], b"").status, 204);
    assert!(!s.root.join("d/f").exists());
    assert_eq!(s.req("DELETE", "/d/f", &[], b"").status, 404);
    assert_eq!(s.req("DELETE", "/d/", &[], b"").status, 204);
    assert!(!s.root.join("d").exists());
    assert_eq!(s.req("DELETE", "/", &[], b"").status, 403);
    assert_eq!(s.req("DELETE", "/nope/x", &[], b"").status, 404);
    // A symlink is removed itself, never what it points at; one that points
    // out of the root is not touched at all.
    s.put("/target", b"keep");
    std::os::unix::fs::symlink(s.root.join("target"), s.root.join("link")).unwrap();
    assert_eq!(s.req("DELETE", "/link", &[], b"").status, 204);
    assert_eq!(std::fs::read(s.root.join("target")).unwrap(), b"keep");
    std::fs::write(s.tmp.path().join("outside.txt"), b"keep").unwrap();
    std::os::unix::fs::symlink(s.tmp.path().join("outside.txt"), s.root.join("out")).unwrap();
    assert_eq!(s.req("DELETE", "/out", &[], b"").status, 403);
    assert!(s.root.join("out").symlink_metadata().is_ok());
    // A link to a folder, alone or inside a folder deleted whole: the link
    // goes, the folder it leads to keeps everything.
    s.put("/real/kept.txt", b"kept");
    std::os::unix::fs::symlink(s.root.join("real"), s.root.join("dirlink")).unwrap();
    assert_eq!(s.req("DELETE", "/dirlink", &[], b"").status, 204);
    assert!(s.root.join("dirlink").symlink_metadata().is_err());
    s.put("/box/f", b"f");
    std::os::unix::fs::symlink(s.root.join("real"), s.root.join("box/inner")).unwrap();
    assert_eq!(s.req("DELETE", "/box/", &[], b"").status, 204);
    assert!(!s.root.join("box").exists());
    assert_eq!(
        std::fs::read(s.root.join("real/kept.txt")).unwrap(),
        b"kept"
    );
}

#[test]
fn unknown_methods_get_405_and_unsupported_posts_415() {
    let s = TestServer::start();
    // POST takes encoded uploads (tests/encoded.rs); other types are 415.
    let r = s.req("POST", "/", &[("Content-Type", "text/plain")], b"x");
    assert_eq!(r.status, 415);
    let r = s.req("PATCH", "/x", &[], b"");
    assert_eq!(r.status, 405);
    assert!(r.header("allow").unwrap().contains("PUT"));
}

#[test]
fn traversal_is_refused() {
    let s = TestServer::start();
    std::fs::write(s.tmp.path().join("secret.txt"), b"TOP SECRET").unwrap();
    std::fs::create_dir(s.tmp.path().join("outdir")).unwrap();
    std::fs::write(s.root.join("ok.txt"), b"fine").unwrap();
    std::os::unix::fs::symlink(s.tmp.path().join("secret.txt"), s.root.join("out-link")).unwrap();
    std::os::unix::fs::symlink(s.tmp.path().join("outdir"), s.root.join("out-dir")).unwrap();
    std::os::unix::fs::symlink(s.root.join("ok.txt"), s.root.join("in-link")).unwrap();
    let attacks = [
        "/../secret.txt",
        "/a/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/..%2fsecret.txt",
        "/%2fsecret.txt",
        "/..%5csecret.txt",
        "/%5c..%5csecret.txt",
        "/ok.txt%00.png",
        "/./ok.txt",
        "//secret.txt",
        "/out-link",
        "/out-dir/",
        "/out-dir/x",
        "/%",
    ];
    for a in attacks {
        for method in ["GET", "PUT", "DELETE"] {
            let r = s.raw(format!("{method} {a} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 4\r\n\r\nevil").as_bytes(), false);
            assert!(
                matches!(r.status, 400 | 403 | 404 | 409),
                "{method} {a}: {} {}",
                r.status,
                r.text()
            );
            assert!(!r.text().contains("TOP SECRET"), "{method} {a}");
        }
    }
    assert_eq!(
        std::fs::read(s.tmp.path().join("secret.txt")).unwrap(),
        b"TOP SECRET"
    );
    assert_eq!(
        std::fs::read_dir(s.tmp.path().join("outdir"))
            .unwrap()
            .count(),
        0,
        "nothing written outside"
    );
    // Links inside the root work; links out are not listed.
    assert_eq!(s.get("/in-link").body, b"fine");
    let l = s.get("/?format=json").text();
    assert!(
        l.contains("in-link") && !l.contains("out-link") && !l.contains("out-dir"),
        "{l}"
    );
    // And curl (which would normalize ../ itself) with --path-as-is.
    let (_, out) = curl(&["--path-as-is", "-o", "-", &s.url("/../secret.txt")]);
    assert!(!String::from_utf8_lossy(&out).contains("TOP SECRET"));
}

#[test]
fn curl_upload_and_download_are_byte_identical() {
    let s = TestServer::start();
    let data = bytes(3 * 1024 * 1024 + 17, 4);
    let src = s.tmp.path().join("src.bin");
    let dst = s.tmp.path().join("dst.bin");
    std::fs::write(&src, &data).unwrap();
    let (ok, out) = curl(&[
        "-T",
        src.to_str().unwrap(),
        "-w",
        "%{http_code}",
        "-o",
        "/dev/null",
        &s.url("/c/up.bin"),
    ]);
    assert!(ok);
    assert_eq!(out, b"201");
    let (ok, out) = curl(&[
        "-o",
        dst.to_str().unwrap(),
        "-w",
        "%{http_code}",
        &s.url("/c/up.bin"),
    ]);
    assert!(ok);
    assert_eq!(out, b"200");
    assert_eq!(std::fs::read(&dst).unwrap(), data);
    // curl's chunked upload (stdin) and a range.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "head -c 100000 {} | /usr/bin/curl -sS -T - -o /dev/null -w '%{{http_code}}' {}",
            src.display(),
            s.url("/c/piped.bin")
        ))
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"201");
    assert_eq!(
        std::fs::read(s.root.join("c/piped.bin")).unwrap(),
        &data[..100_000]
    );
    let (ok, out) = curl(&["-r", "100-199", &s.url("/c/up.bin")]);
    assert!(ok);
    assert_eq!(out, &data[100..200]);
}

#[test]
fn splice_upload_stores_exact_bytes() {
    let s = TestServer::with(ServiceConfig {
        upload_path: UploadPath::Splice,
        ..Default::default()
    });
    let data = bytes(5 * 1024 * 1024 + 3, 5);
    // Part of the body arrives with the head (goes through the buffer), the
    // rest over the socket (spliced).
    let head = format!(
        "PUT /s.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\nWant-Repr-Digest: sha-256=9\r\nContent-Length: {}\r\n\r\n",
        data.len()
    );
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut first = head.into_bytes();
    first.extend_from_slice(&data[..1000]);
    c.write_all(&first).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    c.write_all(&data[1000..]).unwrap();
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).unwrap();
    let r = common::Resp::parse(&buf, false);
    assert_eq!(r.status, 201);
    assert_eq!(r.header("repr-digest").unwrap(), sha256_field(&data));
    assert_eq!(std::fs::read(s.root.join("s.bin")).unwrap(), data);
    // A digest mismatch on the splice path also leaves the old file.
    let r = s.req(
        "PUT",
        "/s.bin",
        &[("Repr-Digest", &sha256_field(b"x"))],
        &data[..2_000_000],
    );
    assert_eq!(r.status, 400);
    assert_eq!(std::fs::read(s.root.join("s.bin")).unwrap(), data);
    // curl -T through the splice path.
    let src = s.tmp.path().join("src.bin");
    std::fs::write(&src, &data).unwrap();
    let (ok, out) = curl(&[
        "-T",
        src.to_str().unwrap(),
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &s.url("/s2.bin"),
    ]);
    assert!(ok && out == b"201");
    assert_eq!(std::fs::read(s.root.join("s2.bin")).unwrap(), data);
    assert!(s.temp_files().is_empty());
}

#[test]
fn curl_reuses_one_connection_across_requests() {
    let s = TestServer::start();
    s.put("/k1", b"one");
    s.put("/k2", b"two");
    // Two URLs on one curl command reuse the connection.
    let (ok, out) = curl(&[&s.url("/k1"), &s.url("/k2")]);
    assert!(ok);
    assert_eq!(out, b"onetwo");
}

/// RFC 9110 §13.1.1–2 on PUT: `If-None-Match: *` creates only,
/// `If-Match: ETAG` replaces only the version that was read; a refused PUT
/// stores nothing.
#[test]
fn put_preconditions_prevent_lost_updates() {
    let s = TestServer::start();
    let r = s.req("PUT", "/p.txt", &[("If-None-Match", "*")], b"first");
    assert_eq!(r.status, 201, "{}", r.text());
    let r = s.req("PUT", "/p.txt", &[("If-None-Match", "*")], b"second");
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("p.txt")).unwrap(), b"first");

    let tag = s.get("/p.txt").header("etag").unwrap().to_string();
    let r = s.req("PUT", "/p.txt", &[("If-Match", "\"not-it\"")], b"third");
    assert_eq!(r.status, 412);
    assert_eq!(std::fs::read(s.root.join("p.txt")).unwrap(), b"first");
    let r = s.req("PUT", "/p.txt", &[("If-Match", &tag)], b"fourth");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("p.txt")).unwrap(), b"fourth");
    // The old tag no longer matches: a second writer with it is refused.
    let r = s.req("PUT", "/p.txt", &[("If-Match", &tag)], b"fifth");
    assert_eq!(r.status, 412);
    assert_eq!(
        s.req("PUT", "/none.txt", &[("If-Match", "*")], b"x").status,
        412
    );
    assert!(!s.root.join("none.txt").exists());
    assert!(s.temp_files().is_empty());
}
