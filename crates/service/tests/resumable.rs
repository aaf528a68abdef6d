//! Resumable uploads end to end over raw HTTP: tus 1.0 and the IETF draft
//! (interop version 8) against the service on 127.0.0.1, every test
//! checking the files on disk.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use base64::Engine as _;
use common::*;
use sha2::Digest as _;
use wirespeed_service::{Access, ServiceConfig, UploadsConfig, Writes};

const TUS: (&str, &str) = ("Tus-Resumable", "1.0.0");
const OCTETS: (&str, &str) = ("Content-Type", "application/offset+octet-stream");
const PARTIAL: (&str, &str) = ("Content-Type", "application/partial-upload");
const INTEROP: (&str, &str) = ("Upload-Draft-Interop-Version", "8");

fn server() -> TestServer {
    TestServer::with_uploads(ServiceConfig::default(), UploadsConfig::default())
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// The upload folder's files (data and records).
fn partial_files(srv: &TestServer) -> Vec<String> {
    let dir = srv.root.join(".wirespeed-uploads");
    if !dir.exists() {
        return Vec::new();
    }
    srv.names(".wirespeed-uploads")
}

/// The data file of the upload at `loc` (`/-/uploads/ID`).
fn part_file(srv: &TestServer, loc: &str) -> std::path::PathBuf {
    srv.root
        .join(".wirespeed-uploads")
        .join(format!("{}.part", &loc[11..]))
}

/// Sends `head` and the first `sent` bytes of `body` on a new connection
/// and waits until the server stored them: an append left running.
fn start_append(srv: &TestServer, loc: &str, head: &str, body: &[u8], sent: usize) -> TcpStream {
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body[..sent]).unwrap();
    srv.eventually("the running append holds bytes", || {
        std::fs::metadata(part_file(srv, loc)).is_ok_and(|m| m.len() == sent as u64)
    });
    s
}

/// tus creation of `length` bytes at `path`; returns the Location.
fn tus_create(srv: &TestServer, path: &str, extra: &[(&str, &str)]) -> String {
    let mut headers = vec![TUS];
    headers.extend_from_slice(extra);
    let r = srv.req("POST", path, &headers, b"");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("tus-resumable"), Some("1.0.0"));
    assert!(r
        .header("upload-expires")
        .is_some_and(|d| d.ends_with(" GMT")));
    let loc = r.header("location").unwrap().to_string();
    assert!(
        loc.starts_with("/-/uploads/") && loc.len() == 11 + 32,
        "{loc}"
    );
    loc
}

fn tus_patch(
    srv: &TestServer,
    loc: &str,
    offset: u64,
    body: &[u8],
    extra: &[(&str, &str)],
) -> Resp {
    let off = offset.to_string();
    let mut headers = vec![TUS, OCTETS, ("Upload-Offset", off.as_str())];
    headers.extend_from_slice(extra);
    srv.req("PATCH", loc, &headers, body)
}

fn tus_offset(srv: &TestServer, loc: &str) -> Resp {
    let r = srv.req("HEAD", loc, &[TUS], b"");
    assert_eq!(r.header("cache-control"), Some("no-store"));
    r
}

#[test]
fn tus_create_patch_in_three_parts_then_head_byte_identical() {
    let srv = server();
    let data = bytes(300_000, 1);
    let len = data.len().to_string();
    let meta = format!("filename {}", b64(b"big.bin"));
    let loc = tus_create(
        &srv,
        "/-/uploads/docs/",
        &[("Upload-Length", &len), ("Upload-Metadata", &meta)],
    );
    let r = tus_offset(&srv, &loc);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("upload-offset"), Some("0"));
    assert_eq!(r.header("upload-length"), Some(len.as_str()));
    assert_eq!(r.header("upload-metadata"), Some(meta.as_str()));
    let mut offset = 0u64;
    for part in data.chunks(100_000) {
        assert!(
            !srv.root.join("docs/big.bin").exists(),
            "no file before the last byte"
        );
        let r = tus_patch(&srv, &loc, offset, part, &[]);
        assert_eq!(r.status, 204, "{}", r.text());
        offset += part.len() as u64;
        assert_eq!(r.header("upload-offset"), Some(offset.to_string().as_str()));
        assert_eq!(r.header("tus-resumable"), Some("1.0.0"));
    }
    assert_eq!(std::fs::read(srv.root.join("docs/big.bin")).unwrap(), data);
    assert_eq!(
        partial_files(&srv),
        Vec::<String>::new(),
        "the partial is gone"
    );
    // Completed, and still answerable until it would have expired (tus
    // core: the offset "even if the upload is already considered
    // completed"): a client that lost the last answer asks and is done.
    let r = tus_offset(&srv, &loc);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("upload-offset"), Some(len.as_str()));
    assert_eq!(r.header("upload-length"), Some(len.as_str()));
    assert!(r.header("upload-expires").is_some());
}

/// The draft's offset retrieval of a completed upload: its length, and
/// `Upload-Complete: ?1`.
#[test]
fn ietf_completed_upload_still_answers_head() {
    let srv = server();
    let r = srv.req(
        "POST",
        "/done.bin",
        &[INTEROP, ("Upload-Complete", "?0"), ("Upload-Length", "6")],
        b"abc",
    );
    assert_eq!(r.status, 201);
    let loc = r.header("location").unwrap().to_string();
    let r = srv.req(
        "PATCH",
        &loc,
        &[PARTIAL, ("Upload-Offset", "3"), ("Upload-Complete", "?1")],
        b"def",
    );
    assert_eq!(r.status, 201);
    assert_eq!(std::fs::read(srv.root.join("done.bin")).unwrap(), b"abcdef");
    let r = srv.req("HEAD", &loc, &[INTEROP], b"");
    assert_eq!(r.status, 204);
    assert_eq!(r.header("upload-offset"), Some("6"));
    assert_eq!(r.header("upload-complete"), Some("?1"));
    assert_eq!(r.header("upload-length"), Some("6"));
}

#[test]
fn tus_creation_with_upload_and_a_path_target() {
    let srv = server();
    let r = srv.req(
        "POST",
        "/-/uploads/a/b/c.txt",
        &[TUS, OCTETS, ("Upload-Length", "11")],
        b"hello",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("upload-offset"), Some("5"));
    let loc = r.header("location").unwrap().to_string();
    let r = tus_patch(&srv, &loc, 5, b" world", &[]);
    assert_eq!(r.status, 204);
    assert_eq!(
        std::fs::read(srv.root.join("a/b/c.txt")).unwrap(),
        b"hello world"
    );
    // The whole file in the creation request completes it at once.
    let r = srv.req(
        "POST",
        "/-/uploads/one.txt",
        &[TUS, OCTETS, ("Upload-Length", "3")],
        b"abc",
    );
    assert_eq!((r.status, r.header("upload-offset")), (201, Some("3")));
    assert_eq!(std::fs::read(srv.root.join("one.txt")).unwrap(), b"abc");
    // An empty upload is complete at creation.
    let r = srv.req(
        "POST",
        "/-/uploads/empty.txt",
        &[TUS, ("Upload-Length", "0")],
        b"",
    );
    assert_eq!((r.status, r.header("upload-offset")), (201, Some("0")));
    assert_eq!(std::fs::read(srv.root.join("empty.txt")).unwrap(), b"");
    assert_eq!(partial_files(&srv), Vec::<String>::new());
}

#[test]
fn tus_deferred_length_is_given_by_a_later_patch() {
    let srv = server();
    let loc = tus_create(
        &srv,
        "/-/uploads/later.bin",
        &[("Upload-Defer-Length", "1")],
    );
    let r = tus_offset(&srv, &loc);
    assert_eq!(r.header("upload-defer-length"), Some("1"));
    assert_eq!(r.header("upload-length"), None);
    assert_eq!(tus_patch(&srv, &loc, 0, b"1234", &[]).status, 204);
    assert!(!srv.root.join("later.bin").exists());
    let r = tus_patch(&srv, &loc, 4, b"5678", &[("Upload-Length", "8")]);
    assert_eq!((r.status, r.header("upload-offset")), (204, Some("8")));
    assert_eq!(
        std::fs::read(srv.root.join("later.bin")).unwrap(),
        b"12345678"
    );
}

#[test]
fn tus_wrong_offset_is_409_and_keeps_the_data() {
    let srv = server();
    let loc = tus_create(&srv, "/-/uploads/x.bin", &[("Upload-Length", "6")]);
    assert_eq!(tus_patch(&srv, &loc, 0, b"abc", &[]).status, 204);
    let r = tus_patch(&srv, &loc, 1, b"zzz", &[]);
    assert_eq!(r.status, 409);
    assert_eq!(r.header("upload-offset"), Some("3"));
    assert_eq!(r.header("tus-resumable"), Some("1.0.0"));
    // Missing or old protocol version: 412.
    let r = srv.req("HEAD", &loc, &[("Tus-Resumable", "0.2.2")], b"");
    assert_eq!((r.status, r.header("tus-version")), (412, Some("1.0.0")));
    // X-HTTP-Method-Override: a POST that is a PATCH.
    let r = srv.req(
        "POST",
        &loc,
        &[
            TUS,
            OCTETS,
            ("Upload-Offset", "3"),
            ("X-HTTP-Method-Override", "PATCH"),
        ],
        b"def",
    );
    assert_eq!(
        (r.status, r.header("upload-offset")),
        (204, Some("6")),
        "{}",
        r.text()
    );
    assert_eq!(std::fs::read(srv.root.join("x.bin")).unwrap(), b"abcdef");
}

#[test]
fn tus_checksums_sha1_and_sha256_good_and_bad() {
    let srv = server();
    let loc = tus_create(&srv, "/-/uploads/sum.bin", &[("Upload-Length", "12")]);
    let sha1 = format!("sha1 {}", b64(&sha1::Sha1::digest(b"abcd")));
    let r = tus_patch(&srv, &loc, 0, b"abcd", &[("Upload-Checksum", &sha1)]);
    assert_eq!(r.status, 204, "{}", r.text());
    let wrong = format!("sha256 {}", b64(&sha2::Sha256::digest(b"nope")));
    let r = tus_patch(&srv, &loc, 4, b"efgh", &[("Upload-Checksum", &wrong)]);
    assert_eq!(r.status, 460, "{}", r.text());
    let r = tus_offset(&srv, &loc);
    assert_eq!(
        r.header("upload-offset"),
        Some("4"),
        "the bad bytes were discarded"
    );
    assert_eq!(std::fs::metadata(part_file(&srv, &loc)).unwrap().len(), 4);
    let good = format!("sha256 {}", b64(&sha2::Sha256::digest(b"efgh")));
    assert_eq!(
        tus_patch(&srv, &loc, 4, b"efgh", &[("Upload-Checksum", &good)]).status,
        204
    );
    let bad_sha1 = format!("sha1 {}", b64(&sha1::Sha1::digest(b"xxxx")));
    assert_eq!(
        tus_patch(&srv, &loc, 8, b"ijkl", &[("Upload-Checksum", &bad_sha1)]).status,
        460
    );
    assert!(!srv.root.join("sum.bin").exists());
    let sha1 = format!("sha1 {}", b64(&sha1::Sha1::digest(b"ijkl")));
    assert_eq!(
        tus_patch(&srv, &loc, 8, b"ijkl", &[("Upload-Checksum", &sha1)]).status,
        204
    );
    assert_eq!(
        std::fs::read(srv.root.join("sum.bin")).unwrap(),
        b"abcdefghijkl"
    );
    // An algorithm the server does not offer: 400.
    let loc = tus_create(&srv, "/-/uploads/md5.bin", &[("Upload-Length", "4")]);
    let r = tus_patch(
        &srv,
        &loc,
        0,
        b"abcd",
        &[("Upload-Checksum", "md5 4vxxTEcn7pOV8yTNLn8zHw==")],
    );
    assert_eq!(r.status, 400);
}

#[test]
fn tus_termination_removes_the_upload() {
    let srv = server();
    let loc = tus_create(&srv, "/-/uploads/gone.bin", &[("Upload-Length", "10")]);
    assert_eq!(tus_patch(&srv, &loc, 0, b"12345", &[]).status, 204);
    assert_eq!(partial_files(&srv).len(), 2);
    let r = srv.req("DELETE", &loc, &[TUS], b"");
    assert_eq!((r.status, r.header("tus-resumable")), (204, Some("1.0.0")));
    assert_eq!(partial_files(&srv), Vec::<String>::new());
    assert_eq!(srv.req("HEAD", &loc, &[TUS], b"").status, 404);
    assert_eq!(tus_patch(&srv, &loc, 5, b"67890", &[]).status, 404);
    assert!(!srv.root.join("gone.bin").exists());
}

#[test]
fn discovery_answers_tus_and_upload_limit() {
    let srv = TestServer::with_uploads(
        ServiceConfig::default(),
        UploadsConfig {
            limits: wirespeed_resumable::Limits {
                max_size: 1000,
                ..Default::default()
            },
            max_partials: 2,
            ..UploadsConfig::default()
        },
    );
    let r = srv.req("OPTIONS", "/-/uploads/", &[], b"");
    assert_eq!(r.status, 204);
    assert_eq!(r.header("tus-version"), Some("1.0.0"));
    assert_eq!(
        r.header("tus-extension"),
        Some(
            "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum,\
             concatenation"
        )
    );
    assert_eq!(r.header("tus-max-size"), Some("1000"));
    assert_eq!(r.header("tus-checksum-algorithm"), Some("sha1,sha256"));
    assert_eq!(r.header("upload-limit"), Some("max-size=1000"));
    let r = srv.req("OPTIONS", "/any/file.bin", &[], b"");
    assert_eq!(r.header("upload-limit"), Some("max-size=1000"));
    // Over the size limit: 413 before any byte, both protocols.
    let r = srv.req(
        "POST",
        "/-/uploads/big",
        &[TUS, ("Upload-Length", "1001")],
        b"",
    );
    assert_eq!((r.status, r.header("tus-max-size")), (413, Some("1000")));
    let r = srv.req(
        "PUT",
        "/big",
        &[
            INTEROP,
            ("Upload-Complete", "?0"),
            ("Upload-Length", "1001"),
        ],
        b"",
    );
    assert_eq!(r.status, 413);
    assert!(r.header("upload-limit").is_some());
    // Over the count of partial uploads: 503 with Retry-After.
    tus_create(&srv, "/-/uploads/1", &[("Upload-Length", "5")]);
    tus_create(&srv, "/-/uploads/2", &[("Upload-Length", "5")]);
    let r = srv.req("POST", "/-/uploads/3", &[TUS, ("Upload-Length", "5")], b"");
    assert_eq!(
        (r.status, r.header("retry-after").is_some()),
        (503, true),
        "{}",
        r.text()
    );
    assert_eq!(partial_files(&srv).len(), 4);
}

#[test]
fn a_partial_is_never_visible_under_its_final_name() {
    let srv = server();
    let loc = tus_create(&srv, "/-/uploads/seen/f.txt", &[("Upload-Length", "6")]);
    assert_eq!(tus_patch(&srv, &loc, 0, b"abcde", &[]).status, 204);
    assert_eq!(srv.get("/seen/f.txt").status, 404);
    let listing = srv.get("/?format=json");
    assert_eq!(listing.status, 200);
    assert!(!listing.text().contains("wirespeed"), "{}", listing.text());
    assert!(!listing.text().contains("seen"), "{}", listing.text());
    assert_eq!(srv.get("/.wirespeed-uploads/").status, 404);
    assert_eq!(tus_patch(&srv, &loc, 5, b"f", &[]).status, 204);
    assert_eq!(srv.get("/seen/f.txt").body, b"abcdef");
}

#[test]
fn upload_ids_are_strict_and_address_nothing_else() {
    let srv = server();
    std::fs::write(srv.root.join("x"), b"secret").unwrap();
    let loc = tus_create(&srv, "/-/uploads/y", &[("Upload-Length", "5")]);
    let upper = loc
        .to_ascii_uppercase()
        .replace("/-/UPLOADS/", "/-/uploads/");
    for path in [
        "/-/uploads/../x".to_string(),
        "/-/uploads/%2e%2e/x".to_string(),
        "/-/uploads/x".to_string(),
        format!("{loc}/"),
        format!("{loc}0"),
        upper,
        "/-/uploads/00000000000000000000000000000000".to_string(),
    ] {
        let r = srv.req("HEAD", &path, &[TUS], b"");
        assert_eq!(r.status, 404, "{path}");
        let r = tus_patch(&srv, &path, 0, b"hello", &[]);
        assert_eq!(r.status, 404, "{path}");
    }
    assert_eq!(std::fs::read(srv.root.join("x")).unwrap(), b"secret");
}

#[test]
fn resumable_requests_need_the_token_and_a_writable_server() {
    let cfg = ServiceConfig {
        access: Access::new(["sesame"], false),
        ..ServiceConfig::default()
    };
    let srv = TestServer::with_uploads(cfg, UploadsConfig::default());
    let r = srv.req("POST", "/-/uploads/a", &[TUS, ("Upload-Length", "1")], b"");
    assert_eq!(r.status, 401);
    let r = srv.req("PUT", "/a", &[INTEROP, ("Upload-Complete", "?1")], b"x");
    assert_eq!(r.status, 401);
    let auth = ("Authorization", "Bearer sesame");
    let r = srv.req(
        "POST",
        "/-/uploads/a",
        &[TUS, auth, ("Upload-Length", "1")],
        b"",
    );
    assert_eq!(r.status, 201);
    let loc = r.header("location").unwrap().to_string();
    assert_eq!(srv.req("HEAD", &loc, &[TUS], b"").status, 401);
    assert_eq!(tus_patch(&srv, &loc, 0, b"x", &[]).status, 401);
    assert_eq!(srv.req("DELETE", &loc, &[TUS], b"").status, 401);
    assert_eq!(tus_patch(&srv, &loc, 0, b"x", &[auth]).status, 204);
    assert_eq!(std::fs::read(srv.root.join("a")).unwrap(), b"x");

    let cfg = ServiceConfig {
        writes: Writes::read_only(),
        ..ServiceConfig::default()
    };
    let srv = TestServer::with_uploads(cfg, UploadsConfig::default());
    let r = srv.req("POST", "/-/uploads/a", &[TUS, ("Upload-Length", "1")], b"");
    assert_eq!(r.status, 403);
    let r = srv.req("PUT", "/a", &[INTEROP, ("Upload-Complete", "?1")], b"x");
    assert_eq!(r.status, 403);
    assert_eq!(srv.names(""), Vec::<String>::new());
}

/// Draft example A: the whole representation in one creation request.
#[test]
fn ietf_complete_creation_answers_like_put() {
    let srv = server();
    let r = srv.req(
        "PUT",
        "/docs/a.bin",
        &[INTEROP, ("Upload-Complete", "?1")],
        b"all of it",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("upload-complete"), Some("?1"));
    assert!(r.header("etag").is_some());
    assert_eq!(
        std::fs::read(srv.root.join("docs/a.bin")).unwrap(),
        b"all of it"
    );
    let r = srv.req(
        "PUT",
        "/docs/a.bin",
        &[INTEROP, ("Upload-Complete", "?1")],
        b"again",
    );
    assert_eq!(r.status, 204, "replaced");
    assert_eq!(
        std::fs::read(srv.root.join("docs/a.bin")).unwrap(),
        b"again"
    );
    assert_eq!(partial_files(&srv), Vec::<String>::new());
    // If-None-Match: * creates only, as on a PUT: 412 before the body.
    let only_new = [INTEROP, ("Upload-Complete", "?1"), ("If-None-Match", "*")];
    assert_eq!(
        srv.req("PUT", "/docs/a.bin", &only_new, b"clobber").status,
        412
    );
    assert_eq!(
        std::fs::read(srv.root.join("docs/a.bin")).unwrap(),
        b"again"
    );
    assert_eq!(
        srv.req("PUT", "/docs/new.bin", &only_new, b"new").status,
        201
    );
    assert_eq!(
        std::fs::read(srv.root.join("docs/new.bin")).unwrap(),
        b"new"
    );
    // Another interop version is a plain PUT (no 104, no upload resource).
    let raw = wirespeed_testkit::http::request_bytes(
        "PUT",
        "/plain.bin",
        &[
            ("Upload-Draft-Interop-Version", "6"),
            ("Upload-Complete", "?1"),
        ],
        b"plain",
    );
    let out = wirespeed_testkit::http::send_blocking(srv.addr, &raw);
    assert!(!String::from_utf8_lossy(&out).contains(" 104 "));
    assert_eq!(std::fs::read(srv.root.join("plain.bin")).unwrap(), b"plain");
}

#[test]
fn ietf_wrong_offset_is_409_with_problem_details() {
    let srv = server();
    let r = srv.req(
        "POST",
        "/p.bin",
        &[INTEROP, ("Upload-Complete", "?0")],
        b"abc",
    );
    assert_eq!(r.status, 201);
    assert_eq!(r.header("upload-complete"), Some("?0"));
    let loc = r.header("location").unwrap().to_string();
    let r = srv.req(
        "PATCH",
        &loc,
        &[PARTIAL, ("Upload-Offset", "1"), ("Upload-Complete", "?1")],
        b"def",
    );
    assert_eq!(r.status, 409);
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    let problem: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        problem["type"],
        "https://iana.org/assignments/http-problem-types#mismatching-upload-offset"
    );
    assert_eq!(
        (
            problem["expected-offset"].as_u64(),
            problem["provided-offset"].as_u64()
        ),
        (Some(3), Some(1))
    );
    // Upload-Length disagreeing with what completion implies: its problem type.
    let r = srv.req(
        "PATCH",
        &loc,
        &[
            PARTIAL,
            ("Upload-Offset", "3"),
            ("Upload-Complete", "?1"),
            ("Upload-Length", "7"),
        ],
        b"def",
    );
    assert_eq!(r.status, 400);
    let problem: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        problem["type"],
        "https://iana.org/assignments/http-problem-types#inconsistent-upload-length"
    );
    let r = srv.req(
        "PATCH",
        &loc,
        &[PARTIAL, ("Upload-Offset", "3"), ("Upload-Complete", "?1")],
        b"def",
    );
    assert_eq!((r.status, r.header("upload-complete")), (201, Some("?1")));
    assert_eq!(std::fs::read(srv.root.join("p.bin")).unwrap(), b"abcdef");
}

/// An empty creation (how our client begins an upload) has no body to
/// resume: no 104, only the final answer with the upload's Location.
/// Proxies such as nginx take an upstream's 1xx for the final answer.
#[test]
fn ietf_empty_creation_gets_no_interim_answer() {
    let srv = server();
    for length in [None, Some("0")] {
        let mut headers = vec![INTEROP, ("Upload-Complete", "?0"), ("Upload-Length", "10")];
        if let Some(n) = length {
            headers.push(("Content-Length", n));
        }
        let raw = wirespeed_testkit::http::request_bytes("PUT", "/empty.bin", &headers, b"");
        let out = wirespeed_testkit::http::send_blocking(srv.addr, &raw);
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("HTTP/1.1 201 "), "{text}");
        assert!(!text.contains(" 104 "), "{text}");
        let lower = text.to_ascii_lowercase();
        assert!(lower.contains("\r\nlocation: /-/uploads/"), "{text}");
    }
}

/// A client killed mid-append and resuming at once: the offset HEAD
/// reports is where an append is taken. HEAD waits for the cut append to
/// be counted; it used to answer the offset before it, and the PATCH at
/// that offset then met the counted bytes: 409 (every round, here).
#[test]
fn head_right_after_a_cut_append_reports_an_offset_a_patch_may_use() {
    let srv = server();
    let chunk = bytes(1 << 20, 3);
    for round in 0..6 {
        let total = 64 << 20;
        let len = total.to_string();
        let loc = tus_create(
            &srv,
            &format!("/-/uploads/cut{round}.bin"),
            &[("Upload-Length", &len)],
        );
        let mut s = TcpStream::connect(srv.addr).unwrap();
        let head = format!(
            "PATCH {loc} HTTP/1.1\r\nHost: t\r\nTus-Resumable: 1.0.0\r\n\
             Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\n\
             Content-Length: {total}\r\n\r\n"
        );
        s.write_all(head.as_bytes()).unwrap();
        for _ in 0..16 {
            s.write_all(&chunk).unwrap();
        }
        drop(s); // as a kill -9 leaves it: the rest never comes
        let r = tus_offset(&srv, &loc);
        assert_eq!(r.status, 200, "round {round}");
        let offset: u64 = r.header("upload-offset").unwrap().parse().unwrap();
        let r = tus_patch(&srv, &loc, offset, b"more", &[]);
        assert_eq!(
            r.status,
            204,
            "round {round}: HEAD said {offset}; PATCH: {}",
            r.text()
        );
        let want = (offset + 4).to_string();
        assert_eq!(r.header("upload-offset"), Some(want.as_str()));
    }
}

/// Reads from `s` until `needle` has arrived; returns everything read.
fn read_until(s: &mut TcpStream, needle: &[u8]) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    while find(&buf, needle).is_none() {
        let n = s.read(&mut tmp).expect("read");
        assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&tmp[..n]);
    }
    buf
}

/// Draft example B with a cut: the creation request announces the whole
/// length, the 104 names the upload before the body, the connection dies
/// mid-body; offset retrieval reports the bytes kept and an append with
/// the rest completes the file.
#[test]
fn ietf_creation_cut_mid_body_then_head_and_patch_the_rest() {
    let srv = server();
    let data = bytes(1 << 20, 7);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST /project/todo.bin HTTP/1.1\r\nHost: example.com\r\nUpload-Draft-Interop-Version: 8\r\n\
         Upload-Complete: ?1\r\nContent-Length: {}\r\nUpload-Length: {}\r\n\r\n",
        data.len(),
        data.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let interim = read_until(&mut s, b"\r\n\r\n");
    let text = String::from_utf8(interim).unwrap();
    assert!(
        text.starts_with("HTTP/1.1 104 Upload Resumption Supported\r\n"),
        "{text}"
    );
    assert!(
        text.contains("Upload-Draft-Interop-Version: 8\r\n"),
        "{text}"
    );
    assert!(text.contains("Upload-Limit: max-size="), "{text}");
    let loc = text
        .lines()
        .find_map(|l| l.strip_prefix("Location: "))
        .unwrap()
        .to_string();
    let sent = 400_000;
    s.write_all(&data[..sent]).unwrap();
    s.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    drop(s);
    assert!(!srv.root.join("project/todo.bin").exists());
    srv.eventually("the cut append counted", || {
        let r = srv.req("HEAD", &loc, &[], b"");
        r.status == 204 && r.header("upload-offset") == Some(sent.to_string().as_str())
    });
    let offset = sent;
    let r = srv.req("HEAD", &loc, &[], b"");
    assert_eq!(r.header("upload-complete"), Some("?0"));
    assert_eq!(
        r.header("upload-length"),
        Some(data.len().to_string().as_str())
    );
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert!(r
        .header("upload-limit")
        .is_some_and(|l| l.contains("max-age=")));
    let off = offset.to_string();
    let r = srv.req(
        "PATCH",
        &loc,
        &[PARTIAL, ("Upload-Offset", &off), ("Upload-Complete", "?1")],
        &data[offset..],
    );
    assert_eq!(
        (r.status, r.header("upload-complete")),
        (201, Some("?1")),
        "{}",
        r.text()
    );
    assert_eq!(
        std::fs::read(srv.root.join("project/todo.bin")).unwrap(),
        data
    );
    // Cancellation of another upload.
    let r = srv.req(
        "POST",
        "/c.bin",
        &[INTEROP, ("Upload-Complete", "?0")],
        b"abc",
    );
    let loc = r.header("location").unwrap().to_string();
    assert_eq!(srv.req("DELETE", &loc, &[], b"").status, 204);
    assert_eq!(srv.req("HEAD", &loc, &[], b"").status, 404);
    assert_eq!(partial_files(&srv), Vec::<String>::new());
}

/// Two appends at once: the newer takes over (the draft's recommendation),
/// the older one's connection is cut with the bytes it stored kept; the
/// newer, planned for the old offset, then gets 409 with the real one, and
/// a HEAD + PATCH finishes the file byte-identical.
#[test]
fn concurrent_appends_one_wins() {
    let srv = server();
    let data = bytes(200_000, 9);
    let len = data.len().to_string();
    let loc = tus_create(&srv, "/-/uploads/race.bin", &[("Upload-Length", &len)]);
    let head = format!(
        "PATCH {loc} HTTP/1.1\r\nHost: t\r\nTus-Resumable: 1.0.0\r\n\
         Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\nContent-Length: {len}\r\n\r\n"
    );
    let mut first = start_append(&srv, &loc, &head, &data, 50_000);
    // HEAD during the append: the running append gives way (its
    // connection closes) and HEAD reports what it stored, an offset the
    // next append is sure to be taken at (as tusd does).
    assert_eq!(
        tus_offset(&srv, &loc).header("upload-offset"),
        Some("50000")
    );
    let mut rest = Vec::new();
    let _ = first.read_to_end(&mut rest);
    let second = tus_patch(&srv, &loc, 0, &data, &[]);
    assert_eq!(second.status, 409, "{}", second.text());
    assert_eq!(second.header("upload-offset"), Some("50000"));
    let r = tus_offset(&srv, &loc);
    assert_eq!(r.header("upload-offset"), Some("50000"));
    assert_eq!(
        tus_patch(&srv, &loc, 50_000, &data[50_000..], &[]).status,
        204
    );
    assert_eq!(std::fs::read(srv.root.join("race.bin")).unwrap(), data);
}

/// A cancel during an append cuts it (its connection closes, rather than
/// waiting for the body timeout) and nothing of the upload stays.
#[test]
fn cancel_cuts_a_running_append() {
    let srv = server();
    let r = srv.req(
        "POST",
        "/cancel.bin",
        &[INTEROP, ("Upload-Complete", "?0")],
        b"",
    );
    assert_eq!(r.status, 201);
    let loc = r.header("location").unwrap().to_string();
    let head = format!(
        "PATCH {loc} HTTP/1.1\r\nHost: t\r\nContent-Type: application/partial-upload\r\n\
         Upload-Offset: 0\r\nUpload-Complete: ?1\r\nContent-Length: 100000\r\n\r\n"
    );
    let mut s = start_append(&srv, &loc, &head, &[7u8; 1000], 1000);
    assert_eq!(srv.req("DELETE", &loc, &[], b"").status, 204);
    let mut rest = Vec::new();
    s.read_to_end(&mut rest)
        .expect("the server closed the cut append's connection");
    assert!(
        !String::from_utf8_lossy(&rest).contains(" 201 "),
        "the cut append published nothing"
    );
    assert_eq!(srv.req("HEAD", &loc, &[], b"").status, 404);
    assert_eq!(partial_files(&srv), Vec::<String>::new());
    assert!(!srv.root.join("cancel.bin").exists());
}

/// A tus creation whose final name is a folder is refused at creation, not
/// after every byte was sent (publishing onto a folder cannot succeed).
#[test]
fn tus_creation_onto_a_folder_is_refused_before_any_byte() {
    let srv = server();
    std::fs::create_dir_all(srv.root.join("dir/sub")).unwrap();
    std::fs::write(srv.root.join("dir/sub/keep"), b"k").unwrap();
    let meta = format!("filename {}", b64(b"sub"));
    for (path, extra) in [
        ("/-/uploads/dir/sub", None),
        ("/-/uploads/dir/", Some(meta.as_str())),
    ] {
        let mut headers = vec![TUS, ("Upload-Length", "4")];
        if let Some(m) = extra {
            headers.push(("Upload-Metadata", m));
        }
        let r = srv.req("POST", path, &headers, b"");
        assert_eq!(r.status, 409, "{path}: {}", r.text());
        assert_eq!(r.header("tus-resumable"), Some("1.0.0"));
        assert!(r.text().contains("folder"), "{}", r.text());
    }
    assert_eq!(partial_files(&srv), Vec::<String>::new());
    assert_eq!(std::fs::read(srv.root.join("dir/sub/keep")).unwrap(), b"k");
}

/// `max-append-size` holds for chunked IETF requests too (no
/// Content-Length to check up front): the request ends in 413 and the
/// upload keeps no more than the cap.
#[test]
fn ietf_chunked_requests_cannot_cross_the_append_cap() {
    let ucfg = UploadsConfig {
        limits: wirespeed_resumable::Limits {
            max_append_size: Some(10),
            ..wirespeed_resumable::Limits::default()
        },
        ..UploadsConfig::default()
    };
    let srv = TestServer::with_uploads(ServiceConfig::default(), ucfg);
    let chunked = ("Transfer-Encoding", "chunked");
    let body = b"14\r\n0123456789abcdefghij\r\n0\r\n\r\n";
    let r = srv.req(
        "PUT",
        "/capped.bin",
        &[INTEROP, ("Upload-Complete", "?0"), chunked],
        body,
    );
    assert_eq!(r.status, 413, "{}", r.text());
    let loc = partial_files(&srv)
        .iter()
        .find_map(|n| n.strip_suffix(".part").map(|id| format!("/-/uploads/{id}")))
        .expect("the upload resource exists");
    let offset = |srv: &TestServer| -> u64 {
        let head = srv.req("HEAD", &loc, &[INTEROP], b"");
        assert_eq!(head.status, 204);
        assert_eq!(head.header("upload-complete"), Some("?0"));
        head.header("upload-offset").unwrap().parse().unwrap()
    };
    let first = offset(&srv);
    assert!(first <= 10, "{first}");
    let at = first.to_string();
    let r = srv.req(
        "PATCH",
        &loc,
        &[
            INTEROP,
            PARTIAL,
            ("Upload-Offset", &at),
            ("Upload-Complete", "?1"),
            chunked,
        ],
        body,
    );
    assert_eq!(r.status, 413, "{}", r.text());
    let second = offset(&srv);
    assert!(second <= first + 10, "{first} then {second}");
    assert!(!srv.root.join("capped.bin").exists());
    let data = std::fs::read(part_file(&srv, &loc)).unwrap();
    assert_eq!(data.len() as u64, second);
}

/// tus 1.0: `Tus-Resumable` is on every answer to a tus request, the
/// token and write-policy refusals included.
#[test]
fn tus_refusals_for_token_and_policy_carry_tus_resumable() {
    let cfg = ServiceConfig {
        access: Access::new(["sesame"], false),
        ..ServiceConfig::default()
    };
    let srv = TestServer::with_uploads(cfg, UploadsConfig::default());
    let r = srv.req("POST", "/-/uploads/a", &[TUS, ("Upload-Length", "1")], b"");
    assert_eq!(r.status, 401);
    assert_eq!(r.header("tus-resumable"), Some("1.0.0"));
    assert!(r.header("www-authenticate").is_some());
    let r = srv.req(
        "HEAD",
        "/-/uploads/00000000000000000000000000000000",
        &[TUS],
        b"",
    );
    assert_eq!((r.status, r.header("tus-resumable")), (401, Some("1.0.0")));

    let cfg = ServiceConfig {
        writes: Writes::read_only(),
        ..ServiceConfig::default()
    };
    let srv = TestServer::with_uploads(cfg, UploadsConfig::default());
    let r = srv.req("POST", "/-/uploads/a", &[TUS, ("Upload-Length", "1")], b"");
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.header("tus-resumable"), Some("1.0.0"));
    assert_eq!(srv.names(""), Vec::<String>::new());
}

/// `--max-partial-uploads` holds under simultaneous creations: the count
/// and the creation are one step, so a burst cannot pass the check together.
#[test]
fn simultaneous_creations_never_exceed_max_partials() {
    let ucfg = UploadsConfig {
        max_partials: 3,
        ..UploadsConfig::default()
    };
    let srv = std::sync::Arc::new(TestServer::with_uploads(ServiceConfig::default(), ucfg));
    let n = 16;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (srv, barrier) = (srv.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let path = format!("/-/uploads/f{i}");
                srv.req("POST", &path, &[TUS, ("Upload-Length", "5")], b"")
                    .status
            })
        })
        .collect();
    let statuses: Vec<u16> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let created = statuses.iter().filter(|&&s| s == 201).count();
    assert_eq!(created, 3, "{statuses:?}");
    assert!(
        statuses.iter().all(|&s| s == 201 || s == 503),
        "{statuses:?}"
    );
    let parts = partial_files(&srv)
        .iter()
        .filter(|n| n.ends_with(".part"))
        .count();
    assert_eq!(parts, 3);
}

/// An expiry past year 9999 (a huge `--upload-expiry`, or a record from
/// disk) is answered, not a panic: the date is capped at the last HTTP date.
#[test]
fn an_expiry_past_year_9999_is_capped_not_a_panic() {
    let ucfg = UploadsConfig {
        limits: wirespeed_resumable::Limits {
            lifetime_secs: u64::MAX / 2,
            ..wirespeed_resumable::Limits::default()
        },
        ..UploadsConfig::default()
    };
    let srv = TestServer::with_uploads(ServiceConfig::default(), ucfg);
    let loc = tus_create(&srv, "/-/uploads/far.txt", &[("Upload-Length", "2")]);
    let r = tus_offset(&srv, &loc);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("upload-expires"),
        Some("Fri, 31 Dec 9999 23:59:59 GMT")
    );
    let r = tus_patch(&srv, &loc, 0, b"ok", &[]);
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(std::fs::read(srv.root.join("far.txt")).unwrap(), b"ok");
}

/// A PATCH the upload would refuse anyway (wrong type, wrong offset) is
/// answered without cutting the append that is running: only a request
/// that could take over does.
#[test]
fn a_refused_patch_does_not_cut_a_running_append() {
    let srv = server();
    let data = bytes(100_000, 3);
    let len = data.len().to_string();
    let loc = tus_create(&srv, "/-/uploads/kept.bin", &[("Upload-Length", &len)]);
    let head = format!(
        "PATCH {loc} HTTP/1.1\r\nHost: t\r\nTus-Resumable: 1.0.0\r\n\
         Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\nContent-Length: {len}\r\n\r\n"
    );
    let mut first = start_append(&srv, &loc, &head, &data, 40_000);
    let wrong_type = srv.req(
        "PATCH",
        &loc,
        &[TUS, ("Content-Type", "text/plain"), ("Upload-Offset", "0")],
        b"x",
    );
    assert_eq!(wrong_type.status, 415, "{}", wrong_type.text());
    let wrong_offset = tus_patch(&srv, &loc, 7, b"x", &[]);
    assert_eq!(wrong_offset.status, 409, "{}", wrong_offset.text());
    let ietf_wrong_type = srv.req(
        "PATCH",
        &loc,
        &[INTEROP, ("Upload-Offset", "0"), ("Upload-Complete", "?0")],
        b"x",
    );
    assert_eq!(ietf_wrong_type.status, 415, "{}", ietf_wrong_type.text());
    first.write_all(&data[40_000..]).unwrap();
    let answer = read_until(&mut first, b"\r\n\r\n");
    assert!(
        answer.starts_with(b"HTTP/1.1 204"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(std::fs::read(srv.root.join("kept.bin")).unwrap(), data);
}

/// A tus creation-with-upload whose bytes are refused (checksum mismatch,
/// more bytes than the length) answers without a Location, so the upload
/// is removed rather than left holding a place until it expires.
#[test]
fn a_refused_creation_with_upload_leaves_no_partial() {
    let ucfg = UploadsConfig {
        max_partials: 1,
        ..UploadsConfig::default()
    };
    let srv = TestServer::with_uploads(ServiceConfig::default(), ucfg);
    let wrong = format!("sha1 {}", b64(&[0u8; 20]));
    let r = srv.req(
        "POST",
        "/-/uploads/c.txt",
        &[
            TUS,
            OCTETS,
            ("Upload-Length", "5"),
            ("Upload-Checksum", &wrong),
        ],
        b"hello",
    );
    assert_eq!(r.status, 460, "{}", r.text());
    assert_eq!(r.header("location"), None);
    assert_eq!(partial_files(&srv), Vec::<String>::new());
    // The one place is free: a good creation still fits.
    let loc = tus_create(&srv, "/-/uploads/c.txt", &[("Upload-Length", "5")]);
    assert_eq!(tus_patch(&srv, &loc, 0, b"hello", &[]).status, 204);
    assert_eq!(std::fs::read(srv.root.join("c.txt")).unwrap(), b"hello");
}

// ---- tus concatenation -------------------------------------------------------

/// A complete partial upload of `bytes` created at `place` by `auth`.
fn tus_partial(srv: &TestServer, place: &str, bytes: &[u8], auth: &[(&str, &str)]) -> String {
    let len = bytes.len().to_string();
    let mut h = vec![
        ("Upload-Concat", "partial"),
        ("Upload-Length", len.as_str()),
    ];
    h.extend_from_slice(auth);
    let loc = tus_create(srv, place, &h);
    // A share link's holder keeps the link on every URL.
    let query = place.split_once('?').map(|(_, q)| format!("?{q}"));
    let at = format!("{loc}{}", query.unwrap_or_default());
    let r = tus_patch(srv, &at, 0, bytes, auth);
    assert_eq!(r.status, 204, "{}", r.text());
    loc
}

fn tus_final(
    srv: &TestServer,
    place: &str,
    name: &str,
    parts: &[&str],
    auth: &[(&str, &str)],
) -> Resp {
    let concat = format!("final;{}", parts.join(" "));
    let meta = format!("filename {}", b64(name.as_bytes()));
    let mut h = vec![
        TUS,
        ("Upload-Concat", concat.as_str()),
        ("Upload-Metadata", meta.as_str()),
    ];
    h.extend_from_slice(auth);
    srv.req("POST", place, &h, b"")
}

#[test]
fn tus_concatenation_joins_partials_into_one_file_published_once() {
    let srv = server();
    let r = srv.req("OPTIONS", "/-/uploads/", &[TUS], b"");
    assert!(r
        .header("tus-extension")
        .is_some_and(|e| e.contains("concatenation")));
    let pieces: [&[u8]; 3] = [b"first piece, ", &[7u8; 200_000], b", the end"];
    // Made in a different order than they are joined: parallel clients finish in any order.
    let c = tus_partial(&srv, "/-/uploads/d/", pieces[2], &[]);
    let a = tus_partial(&srv, "/-/uploads/d/", pieces[0], &[]);
    let b = tus_partial(&srv, "/-/uploads/d/", pieces[1], &[]);
    // A complete partial is not a file.
    assert_eq!(srv.names(""), vec![".wirespeed-uploads".to_string()]);
    let r = tus_offset(&srv, &a);
    assert_eq!(r.header("upload-concat"), Some("partial"));
    assert_eq!(r.header("upload-offset"), Some("13"));
    // tus-js-client names them by absolute URL; relative ones count too.
    let abs = format!("http://{}{b}", srv.addr);
    let r = tus_final(&srv, "/-/uploads/d/", "joined.bin", &[&a, &abs, &c], &[]);
    assert_eq!(r.status, 201, "{}", r.text());
    let fin = r.header("location").unwrap().to_string();
    assert_eq!(
        std::fs::read(srv.root.join("d/joined.bin")).unwrap(),
        pieces.concat()
    );
    let total = pieces.iter().map(|p| p.len()).sum::<usize>().to_string();
    let r = tus_offset(&srv, &fin);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("upload-offset"), Some(total.as_str()));
    assert_eq!(r.header("upload-length"), Some(total.as_str()));
    assert!(r
        .header("upload-concat")
        .is_some_and(|v| v.starts_with("final;") && v.contains(&a[11..])));
    // The parts are consumed: gone from the store, and not usable twice.
    assert_eq!(partial_files(&srv), Vec::<String>::new());
    assert_eq!(srv.req("HEAD", &a, &[TUS], b"").status, 404);
    let r = tus_final(&srv, "/-/uploads/d/", "again.bin", &[&a, &b, &c], &[]);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(srv.names("d"), vec!["joined.bin".to_string()]);
    // A final takes no PATCH.
    assert_eq!(tus_patch(&srv, &fin, 0, b"x", &[]).status, 404);
}

#[test]
fn a_final_of_missing_incomplete_or_foreign_partials_publishes_nothing() {
    use wirespeed_service::policy::shares::DEFAULT_MAX_EXPIRY;
    use wirespeed_service::policy::{password, Shares};
    use wirespeed_service::{Rights, Users};
    let text = format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n[paths.\"/team\"]\nalice = \"rwd\"\nbob = \"rwd\"\n",
        password::hash(b"alice-pw").unwrap(),
        password::hash(b"bob-pw").unwrap()
    );
    let shares = Shares::new([5; 32], DEFAULT_MAX_EXPIRY);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let link = shares
        .mint("/team/", Rights::WRITE, 3600, "alice", now)
        .unwrap()
        .1;
    let cfg = ServiceConfig {
        users: Some(std::sync::Arc::new(
            Users::from_text("u.toml", &text).unwrap(),
        )),
        shares: Some(std::sync::Arc::new(shares)),
        ..ServiceConfig::default()
    };
    let srv = TestServer::with_uploads(cfg, UploadsConfig::default());
    let basic = |u: &str| format!("Basic {}", b64(format!("{u}:{u}-pw").as_bytes()));
    let (alice, bob) = (basic("alice"), basic("bob"));
    let alice = [("Authorization", alice.as_str())];
    let bob = [("Authorization", bob.as_str())];
    let place = "/-/uploads/team/";
    let one = tus_partial(&srv, place, b"alice's ", &alice);
    let two = tus_partial(&srv, place, b"bytes", &alice);
    // Someone else's parts: 403, even with the right to write there.
    let r = tus_final(&srv, place, "f.bin", &[&one, &two], &bob);
    assert_eq!(r.status, 403, "{}", r.text());
    // Missing (never made, or of another server's path), or incomplete: 400.
    let unknown = "/-/uploads/0123456789abcdef0123456789abcdef";
    let r = tus_final(&srv, place, "f.bin", &[&one, unknown], &alice);
    assert_eq!(r.status, 400, "{}", r.text());
    let elsewhere = format!("/other{two}");
    assert_eq!(
        tus_final(&srv, place, "f.bin", &[&one, &elsewhere], &alice).status,
        400
    );
    let mut h = vec![("Upload-Concat", "partial"), ("Upload-Length", "10")];
    h.extend_from_slice(&alice);
    let half = tus_create(&srv, place, &h);
    assert_eq!(tus_patch(&srv, &half, 0, b"12345", &alice).status, 204);
    let r = tus_final(&srv, place, "f.bin", &[&one, &half], &alice);
    assert!(
        r.status == 400 && r.text().contains("not complete"),
        "{}",
        r.text()
    );
    // An ordinary upload is no partial.
    let mut h = vec![("Upload-Length", "1")];
    h.extend_from_slice(&alice);
    let plain = tus_create(&srv, "/-/uploads/team/plain", &h);
    assert_eq!(
        tus_final(&srv, place, "f.bin", &[&one, &plain], &alice).status,
        400
    );
    // The target is judged like any upload's: bob may not write at the root.
    let r = tus_final(&srv, "/-/uploads/", "f.bin", &[&one, &two], &alice);
    assert!(matches!(r.status, 401 | 403), "{}", r.status);
    assert_eq!(srv.names("team"), Vec::<String>::new());
    // A share link acts for its minter: alice's link may join alice's parts.
    let path = format!("{place}?share={link}");
    let three = tus_partial(&srv, &path, b" and more", &[]);
    let joined = tus_final(&srv, &path, "f.bin", &[&one, &two, &three], &[]);
    assert_eq!(joined.status, 201, "{}", joined.text());
    assert_eq!(
        std::fs::read(srv.root.join("team/f.bin")).unwrap(),
        b"alice's bytes and more"
    );
}

/// A join longer than `join_wait` goes on after the answer: `HEAD` has no
/// offset until the file is published whole, then offset = length.
#[test]
fn a_long_join_answers_first_and_head_says_when_it_is_done() {
    let ucfg = UploadsConfig {
        join_wait: Duration::ZERO,
        ..UploadsConfig::default()
    };
    let srv = TestServer::with_uploads(ServiceConfig::default(), ucfg);
    let pieces: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 3 << 20]).collect();
    let locs: Vec<String> = pieces
        .iter()
        .map(|p| tus_partial(&srv, "/-/uploads/", p, &[]))
        .collect();
    let names: Vec<&str> = locs.iter().map(String::as_str).collect();
    let r = tus_final(&srv, "/-/uploads/", "late.bin", &names, &[]);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("upload-length"), Some("12582912"));
    let fin = r.header("location").unwrap().to_string();
    // A part being joined cannot be cancelled (409 while the join runs,
    // 404 once it consumed the part).
    let cancel = srv.req("DELETE", &locs[3], &[TUS], b"").status;
    assert!(matches!(cancel, 409 | 404), "{cancel}");
    srv.eventually("the join ends", || {
        let h = tus_offset(&srv, &fin);
        assert_eq!(h.status, 200);
        assert!(h
            .header("upload-concat")
            .is_some_and(|c| c.starts_with("final;")));
        match h.header("upload-offset") {
            // Meanwhile the name shows nothing, or (just published) the whole file.
            None => {
                let now = std::fs::metadata(srv.root.join("late.bin"));
                assert!(now.map_or(true, |m| m.len() == 12582912));
                false
            }
            Some(o) => o == "12582912",
        }
    });
    assert!(std::fs::read(srv.root.join("late.bin")).unwrap() == pieces.concat());
    assert_eq!(partial_files(&srv), Vec::<String>::new());
}
