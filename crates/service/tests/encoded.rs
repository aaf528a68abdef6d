//! Encoded POST uploads end to end: multipart/form-data, SOAP/XML
//! and JSON base64 fields, MTOM/XOP — the real server on 127.0.0.1:0 over a
//! temporary directory, driven by raw sockets, curl and Python `requests`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;
use common::{bytes, curl, sha256_field, Resp, TestServer};
use sha2::Digest;
use wirespeed_service::ServiceConfig;

const B: &str = "----wirespeedTestBoundary7MA4YWxkTrZu0gW";

fn form_ct() -> String {
    format!("multipart/form-data; boundary={B}")
}

/// One multipart part: header lines, then the data.
fn part(out: &mut Vec<u8>, boundary: &str, headers: &[&str], data: &[u8]) {
    out.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
    for h in headers {
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

fn close(out: &mut Vec<u8>, boundary: &str) {
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
}

fn file_part(out: &mut Vec<u8>, field: &str, filename: &str, data: &[u8]) {
    part(
        out,
        B,
        &[
            &format!("Content-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\""),
            "Content-Type: application/octet-stream",
        ],
        data,
    );
}

fn field_part(out: &mut Vec<u8>, name: &str, value: &str) {
    part(
        out,
        B,
        &[&format!("Content-Disposition: form-data; name=\"{name}\"")],
        value.as_bytes(),
    );
}

fn post(s: &TestServer, path: &str, ct: &str, body: &[u8]) -> Resp {
    s.req("POST", path, &[("Content-Type", ct)], body)
}

/// A server that hashes every upload (`--digest always`), for tests that
/// check stored bytes through the answered digests.
fn hashing_server() -> TestServer {
    TestServer::with(ServiceConfig {
        digest: wirespeed_service::DigestPolicy::Always,
        ..ServiceConfig::default()
    })
}

fn json(r: &Resp) -> serde_json::Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", r.text()))
}

fn sha_hex(data: &[u8]) -> String {
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn assert_nothing_stored(s: &TestServer, dir: &str) {
    assert!(
        s.temp_files().is_empty(),
        "temp files left: {:?}",
        s.temp_files()
    );
    let names = s.names(dir);
    assert!(names.is_empty(), "{dir} holds {names:?}");
}

// ---- multipart/form-data ------------------------------------------------------

#[test]
fn form_upload_stores_files_and_reports_fields_as_json() {
    let s = hashing_server();
    let a = bytes(700_000, 11);
    let b = b"second file\r\n".to_vec();
    let mut body = Vec::new();
    field_part(&mut body, "note", "hello");
    file_part(&mut body, "file", "a.bin", &a);
    file_part(&mut body, "file", "b.txt", &b);
    field_part(&mut body, "tag", "x");
    field_part(&mut body, "tag", "y");
    close(&mut body, B);
    let r = post(&s, "/up/", &form_ct(), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = json(&r);
    assert_eq!(v["fields"]["note"], "hello");
    assert_eq!(v["fields"]["tag"], serde_json::json!(["x", "y"]));
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["name"], "a.bin");
    assert_eq!(files[0]["path"], "/up/a.bin");
    assert_eq!(files[0]["size"], 700_000);
    assert_eq!(files[0]["sha256"], sha_hex(&a));
    assert_eq!(files[0]["created"], true);
    assert_eq!(files[1]["sha256"], sha_hex(&b));
    assert_eq!(std::fs::read(s.root.join("up/a.bin")).unwrap(), a);
    assert_eq!(std::fs::read(s.root.join("up/b.txt")).unwrap(), b);
    assert!(s.temp_files().is_empty());

    // Again: the files are replaced.
    let r = post(&s, "/up/", &form_ct(), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(json(&r)["files"][0]["created"], false);

    // ?format=html (browser forms): back to the listing.
    let r = post(&s, "/up/?format=html", &form_ct(), &body);
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/up/"));

    // A form without files is fine, but creates nothing.
    let mut body = Vec::new();
    field_part(&mut body, "only", "field");
    close(&mut body, B);
    let r = post(&s, "/up/", &form_ct(), &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(json(&r)["files"], serde_json::json!([]));
}

#[test]
fn form_needs_a_directory_target() {
    let s = TestServer::start();
    let mut body = Vec::new();
    file_part(&mut body, "file", "a.bin", b"x");
    close(&mut body, B);
    let r = post(&s, "/up", &form_ct(), &body);
    assert_eq!(r.status, 400);
    assert!(r.text().contains("POST /up/"), "{}", r.text());
    assert_nothing_stored(&s, "");
}

#[test]
fn form_filenames_are_sanitized() {
    let s = TestServer::start();
    for (sent, stored) in [
        ("../../etc/passwd", "passwd"),
        ("C:\\\\Users\\\\me\\\\report.pdf", "report.pdf"),
        ("dir/sub/x.txt", "x.txt"),
        ("tab\there", "tab_here"),
        ("h\u{e9}llo w\u{f6}rld.txt", "h\u{e9}llo w\u{f6}rld.txt"),
    ] {
        let mut body = Vec::new();
        file_part(&mut body, "file", sent, b"data");
        close(&mut body, B);
        let r = post(&s, "/san/", &form_ct(), &body);
        assert_eq!(r.status, 201, "{sent:?}: {}", r.text());
        assert_eq!(json(&r)["files"][0]["name"], stored, "{sent:?}");
        assert_eq!(
            std::fs::read(s.root.join("san").join(stored)).unwrap(),
            b"data"
        );
    }
    for bad in ["..", ".", "a/..", "/", ".wirespeed-tmp-0123456789abcdef"] {
        let mut body = Vec::new();
        file_part(&mut body, "file", "ok.bin", b"first");
        file_part(&mut body, "file", bad, b"data");
        close(&mut body, B);
        let r = post(&s, "/bad/", &form_ct(), &body);
        assert_eq!(r.status, 400, "{bad:?}: {}", r.text());
        assert_nothing_stored(&s, "bad");
    }
    // `-` is the control namespace at the root.
    let mut body = Vec::new();
    file_part(&mut body, "file", "-", b"data");
    close(&mut body, B);
    assert_eq!(post(&s, "/", &form_ct(), &body).status, 400);
    assert!(!s.root.join("-").exists());
    // Two files with one name: refused, nothing stored.
    let mut body = Vec::new();
    file_part(&mut body, "file", "same.bin", b"1");
    file_part(&mut body, "file", "same.bin", b"2");
    close(&mut body, B);
    assert_eq!(post(&s, "/dup/", &form_ct(), &body).status, 400);
    assert_nothing_stored(&s, "dup");
    // An empty file input (what browsers send when nothing was chosen) is
    // skipped.
    let mut body = Vec::new();
    file_part(&mut body, "file", "", b"");
    field_part(&mut body, "note", "n");
    close(&mut body, B);
    let r = post(&s, "/empty/", &form_ct(), &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_nothing_stored(&s, "empty");
}

/// File data full of things that look like the boundary but are not
/// delimiters: they must come through byte for byte.
#[test]
fn form_data_that_looks_like_a_boundary_is_stored_byte_for_byte() {
    let s = TestServer::start();
    let mut data = Vec::new();
    for piece in [
        format!("\r\n--{B}X"),
        format!("\r\n--{}", &B[..B.len() - 1]),
        format!("\n--{B}\r\n"),
        format!("--{B}\r\n"),
        format!("\r\n--{B} x\r\n"),
        format!("\r\n--{B}\n"),
        format!("\r\n-{B}--"),
        "\r\n\r\n\r\n--".to_string(),
    ] {
        data.extend_from_slice(piece.as_bytes());
        data.extend_from_slice(&bytes(1000, data.len() as u64));
    }
    data.extend_from_slice(b"\r\n--");
    let mut body = Vec::new();
    file_part(&mut body, "file", "tricky.bin", &data);
    close(&mut body, B);
    let r = post(&s, "/t/", &form_ct(), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("t/tricky.bin")).unwrap(), data);
}

/// Send `head` + `body[..split]`, pause so the server reads it on its own,
/// then the rest.
fn split_request(s: &TestServer, head: &[u8], body: &[u8], split: usize) -> Resp {
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_nodelay(true).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut first = head.to_vec();
    first.extend_from_slice(&body[..split]);
    c.write_all(&first).unwrap();
    c.flush().unwrap();
    std::thread::sleep(Duration::from_millis(2));
    c.write_all(&body[split..]).unwrap();
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).unwrap();
    Resp::parse(&buf, false)
}

/// The body arrives in two reads split at every offset: through part
/// headers, delimiters, the CRLF before them, the close delimiter.
#[test]
fn form_body_split_at_every_offset_gives_the_same_result() {
    let s = hashing_server();
    let a = b"alpha\r\n--not-the-boundary\r\n".to_vec();
    let mut b = bytes(60, 5);
    b.extend_from_slice(format!("\r\n--{B}x").as_bytes());
    let mut body = Vec::new();
    field_part(&mut body, "note", "hi");
    file_part(&mut body, "f", "a.txt", &a);
    file_part(&mut body, "f", "b.bin", &b);
    close(&mut body, B);
    assert!(body.len() < 600, "{}", body.len());
    let head = format!(
        "POST /split/ HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n",
        form_ct(),
        body.len()
    );
    for split in 0..=body.len() {
        let r = split_request(&s, head.as_bytes(), &body, split);
        assert_eq!(r.status, 201, "split at {split}: {}", r.text());
        let v = json(&r);
        assert_eq!(v["fields"]["note"], "hi", "split at {split}");
        assert_eq!(v["files"][0]["sha256"], sha_hex(&a), "split at {split}");
        assert_eq!(v["files"][1]["sha256"], sha_hex(&b), "split at {split}");
    }
    assert_eq!(std::fs::read(s.root.join("split/a.txt")).unwrap(), a);
    assert_eq!(std::fs::read(s.root.join("split/b.bin")).unwrap(), b);
    assert!(s.temp_files().is_empty());
}

/// Truncated bodies: the first file was complete, but nothing may remain.
#[test]
fn form_missing_final_boundary_stores_nothing() {
    let s = TestServer::start();
    let mut body = Vec::new();
    file_part(&mut body, "file", "first.bin", &bytes(300_000, 1));
    file_part(&mut body, "file", "second.bin", &bytes(300_000, 2));
    // No close delimiter at all.
    let r = post(&s, "/trunc/", &form_ct(), &body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("final boundary"), "{}", r.text());
    assert_nothing_stored(&s, "trunc");
    // Cut inside the second file's data.
    let cut = &body[..body.len() - 1000];
    let r = post(&s, "/trunc/", &form_ct(), cut);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_nothing_stored(&s, "trunc");
    // Cut inside the close delimiter.
    let mut body2 = body.clone();
    body2.extend_from_slice(format!("--{B}-").as_bytes());
    let r = post(&s, "/trunc/", &form_ct(), &body2);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_nothing_stored(&s, "trunc");
    // Malformed part headers after a complete file.
    let mut body3 = Vec::new();
    file_part(&mut body3, "file", "first.bin", b"ok");
    body3.extend_from_slice(format!("--{B}\r\nno colon here\r\n\r\nx\r\n--{B}--\r\n").as_bytes());
    let r = post(&s, "/trunc/", &form_ct(), &body3);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_nothing_stored(&s, "trunc");
    // The client disconnects mid-body.
    let mut c = TcpStream::connect(s.addr).unwrap();
    let head = format!(
        "POST /trunc/ HTTP/1.1\r\nHost: t\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n",
        form_ct(),
        body.len() + 100
    );
    c.write_all(head.as_bytes()).unwrap();
    c.write_all(&body).unwrap();
    // Wait until the server is mid-upload (it holds the temp files while it
    // waits for the last 100 bytes); otherwise "no temp files" could be seen
    // before the server even started, and the check would prove nothing.
    s.eventually("the upload is in progress", || !s.temp_files().is_empty());
    drop(c);
    s.eventually("temp files removed after a disconnect", || {
        s.temp_files().is_empty()
    });
    assert_nothing_stored(&s, "trunc");
}

/// LF-only multipart is refused (400), by design of wirespeed-multipart:
/// RFC 2046 requires CRLF, and accepting bare `\n--boundary` as a delimiter
/// would make more byte sequences inside binary files significant.
#[test]
fn form_lf_only_is_400() {
    let s = TestServer::start();
    let body = format!(
        "--{B}\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\n\nhello\n--{B}--\n"
    );
    let r = post(&s, "/lf/", &form_ct(), body.as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("CRLF"), "{}", r.text());
    assert_nothing_stored(&s, "lf");
}

#[test]
fn form_limits_are_413_and_store_nothing() {
    let s = TestServer::with(ServiceConfig {
        max_body: Some(100_000),
        ..ServiceConfig::default()
    });
    let mut body = Vec::new();
    file_part(&mut body, "file", "small.bin", b"ok");
    file_part(&mut body, "file", "big.bin", &bytes(150_000, 3));
    close(&mut body, B);
    // Content-Length above the limit: refused before reading.
    let r = post(&s, "/lim/", &form_ct(), &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_nothing_stored(&s, "lim");
    // Chunked: refused when crossing it, after the first file was written.
    let mut chunked = Vec::new();
    for c in body.chunks(8192) {
        chunked.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        chunked.extend_from_slice(c);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let r = s.req(
        "POST",
        "/lim/",
        &[
            ("Content-Type", &form_ct()),
            ("Transfer-Encoding", "chunked"),
        ],
        &chunked,
    );
    assert_eq!(r.status, 413, "{}", r.text());
    s.eventually("no temp files", || s.temp_files().is_empty());
    assert_nothing_stored(&s, "lim");

    // A form field larger than the parser's limit (1 MiB) → 413.
    let s = TestServer::start();
    let mut body = Vec::new();
    file_part(&mut body, "file", "small.bin", b"ok");
    field_part(&mut body, "huge", &"x".repeat(1024 * 1024 + 1));
    close(&mut body, B);
    let r = post(&s, "/lim/", &form_ct(), &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_nothing_stored(&s, "lim");
}

#[test]
fn form_many_empty_fields_with_long_names_are_413() {
    // Each value is empty, so only names and per-field overhead add up:
    // 200 × (6000 + 64) bytes > 1 MiB.
    let s = TestServer::start();
    let mut body = Vec::new();
    file_part(&mut body, "file", "small.bin", b"ok");
    for i in 0..200 {
        field_part(&mut body, &format!("{i:04}{}", "n".repeat(5996)), "");
    }
    close(&mut body, B);
    let r = post(&s, "/many/", &form_ct(), &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("form fields exceed"), "{}", r.text());
    assert_nothing_stored(&s, "many");

    // Short names: well within the budget.
    let mut body = Vec::new();
    for i in 0..200 {
        field_part(&mut body, &format!("f{i}"), "");
    }
    close(&mut body, B);
    let r = post(&s, "/many/", &form_ct(), &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(json(&r)["fields"].as_object().unwrap().len(), 200);
}

#[test]
fn form_content_digest_is_checked_against_the_request_body() {
    let metrics = std::sync::Arc::new(wirespeed_service::Metrics::new(false));
    let s = TestServer::with(ServiceConfig {
        metrics: Some(metrics.clone()),
        ..Default::default()
    });
    let mismatches = || {
        let text = metrics.encode();
        let line = text
            .lines()
            .find(|l| l.starts_with("wirespeed_digest_mismatches_total"));
        line.and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
    };
    let mut body = Vec::new();
    file_part(&mut body, "file", "d.bin", b"digest me");
    close(&mut body, B);
    let ok = sha256_field(&body);
    let r = s.req(
        "POST",
        "/dg/",
        &[("Content-Type", &form_ct()), ("Content-Digest", &ok)],
        &body,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        mismatches(),
        Some(0.0),
        "a matching digest is not a mismatch"
    );
    let bad = sha256_field(b"something else");
    let r = s.req(
        "POST",
        "/dg2/",
        &[("Content-Type", &form_ct()), ("Content-Digest", &bad)],
        &body,
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_nothing_stored(&s, "dg2");
    // Counted once, where the mismatch is found.
    assert_eq!(mismatches(), Some(1.0));
}

fn temp_file(s: &TestServer, name: &str, data: &[u8]) -> PathBuf {
    let p = s.tmp.path().join(name);
    std::fs::write(&p, data).unwrap();
    p
}

/// curl -F, an independent multipart client.
#[test]
fn form_upload_from_curl_is_stored() {
    let s = hashing_server();
    let data = bytes(3 * 1024 * 1024 + 17, 21);
    let src = temp_file(&s, "upload me.bin", &data);
    let file_arg = format!("file=@{}", src.display());
    let (ok, out) = curl(&["-F", &file_arg, "-F", "note=hello", &s.url("/curl/")]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["files"][0]["name"], "upload me.bin");
    assert_eq!(v["files"][0]["sha256"], sha_hex(&data));
    assert_eq!(v["fields"]["note"], "hello");
    assert_eq!(
        std::fs::read(s.root.join("curl/upload me.bin")).unwrap(),
        data
    );
    // curl -F with a chosen filename and two files under one field name.
    let (ok, out) = curl(&[
        "-F",
        &format!("file=@{};filename=renamed.dat", src.display()),
        "-F",
        "file=@-;filename=stdin.txt",
        &s.url("/curl/"),
    ]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["files"][0]["name"], "renamed.dat");
    assert_eq!(v["files"][1]["name"], "stdin.txt");
    assert_eq!(v["files"][1]["size"], 0);
    assert_eq!(
        std::fs::read(s.root.join("curl/renamed.dat")).unwrap(),
        data
    );
    assert!(s.temp_files().is_empty());
}

/// Python requests, another independent multipart client (it must be
/// installed: this test fails rather than skips without it).
#[test]
fn form_upload_from_python_requests_is_stored() {
    let s = hashing_server();
    let data = bytes(2 * 1024 * 1024 + 5, 22);
    let src = temp_file(&s, "py.bin", &data);
    let script = r#"
import sys
try:
    import requests
except ImportError as e:
    print("FATAL: python3 cannot import requests: %s" % e)
    sys.exit(3)
url, path = sys.argv[1], sys.argv[2]
with open(path, "rb") as f:
    r = requests.post(url, files={"file": ("py data.bin", f, "application/octet-stream")},
                      data={"note": "hello from requests", "n": "42"})
print(r.status_code)
print(r.text)
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, &s.url("/py/"), src.to_str().unwrap()])
        .output()
        .expect("python3 must be installed for this test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python3 requests client failed (is `requests` installed?): {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, text) = stdout.split_once('\n').unwrap();
    assert_eq!(status, "201", "{text}");
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["files"][0]["name"], "py data.bin");
    assert_eq!(v["files"][0]["sha256"], sha_hex(&data));
    assert_eq!(v["fields"]["note"], "hello from requests");
    assert_eq!(v["fields"]["n"], "42");
    assert_eq!(std::fs::read(s.root.join("py/py data.bin")).unwrap(), data);
}

// ---- SOAP / XML and JSON base64 fields ---------------------------------------------------

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Insert `sep` after every `n` characters (MIME-style line breaks).
fn wrap(s: &str, n: usize, sep: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / n * sep.len());
    for (i, chunk) in s.as_bytes().chunks(n).enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(std::str::from_utf8(chunk).unwrap());
    }
    out
}

fn soap(b64_text: &str) -> Vec<u8> {
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?>
<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns="urn:wirespeed:test">
  <soap:Header><ns:Trace id="1">t</ns:Trace></soap:Header>
  <soap:Body>
    <ns:Upload>
      <ns:name>picture.jpg</ns:name>
      <ns:data>{b64_text}</ns:data>
    </ns:Upload>
  </soap:Body>
</soap:Envelope>
"#
    )
    .into_bytes()
}

/// Seed 003: the same file as SOAP base64 with and without MIME line
/// breaks stores identical bytes.
#[test]
fn soap_line_breaks_store_identical_bytes() {
    let s = hashing_server();
    let data = bytes(1_000_003, 31);
    let text = b64(&data);
    let variants = [
        ("plain", text.clone()),
        ("crlf76", wrap(&text, 76, "\r\n")),
        ("crlf73", wrap(&text, 73, "\r\n")),
        ("lf73", wrap(&text, 73, "\n")),
        // .NET's XmlWriter escapes the CR of a line break as a reference.
        ("net13", wrap(&text, 76, "&#13;\n")),
        ("netxd", wrap(&text, 76, "&#xD;&#xA;")),
    ];
    for (name, t) in &variants {
        let path = format!("/soap/{name}.bin");
        let r = post(
            &s,
            &format!("{path}?element=data"),
            "text/xml; charset=utf-8",
            &soap(t),
        );
        assert_eq!(r.status, 201, "{name}: {}", r.text());
        assert_eq!(
            r.header("repr-digest").unwrap(),
            sha256_field(&data),
            "{name}"
        );
        assert_eq!(r.header("location"), Some(path.as_str()));
        assert!(r.header("etag").is_some());
        assert_eq!(
            std::fs::read(s.root.join(format!("soap/{name}.bin"))).unwrap(),
            data,
            "{name}"
        );
    }
    // Replacing answers 204; the other XML types and a prefixed,
    // percent-encoded element name work too.
    for ct in ["application/xml", "application/soap+xml; charset=utf-8"] {
        let r = post(
            &s,
            "/soap/plain.bin?element=ns%3Ad%61ta",
            ct,
            &soap(&variants[1].1),
        );
        assert_eq!(r.status, 204, "{ct}: {}", r.text());
        assert_eq!(r.header("repr-digest").unwrap(), sha256_field(&data));
    }
    assert!(s.temp_files().is_empty());
}

#[test]
fn soap_errors_store_nothing() {
    let s = TestServer::start();
    let good = b64(&bytes(50_000, 2));
    let doc = soap(&wrap(&good, 76, "\r\n"));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "dtd",
            [
                b"<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">]>".as_slice(),
                &doc[doc.iter().position(|&b| b == b'\n').unwrap()..],
            ]
            .concat(),
            "DOCTYPE",
        ),
        ("truncated", doc[..doc.len() - 30].to_vec(), "ended early"),
        (
            "mismatched",
            String::from_utf8(doc.clone())
                .unwrap()
                .replace("</ns:Upload>", "</ns:Uplaod>")
                .into_bytes(),
            "mismatched",
        ),
        (
            "bad char",
            soap(&format!("{}!{}", &good[..1000], &good[1000..])),
            "base64",
        ),
        ("unpadded", soap(&good[..good.len() - 2]), "base64"),
        (
            "url-safe",
            soap(&good.replace('+', "-").replace('/', "_")),
            "base64",
        ),
        ("missing element", soap(&good), "not found"),
    ];
    for (name, body, why) in cases {
        let element = if name == "missing element" {
            "nothere"
        } else {
            "data"
        };
        let r = post(
            &s,
            &format!("/bad/{element}.bin?element={element}"),
            "text/xml",
            &body,
        );
        assert_eq!(r.status, 400, "{name}: {}", r.text());
        assert!(r.text().contains(why), "{name}: {}", r.text());
        assert_nothing_stored(&s, "bad");
    }
    // An existing file stays as it was after a failed replacement.
    assert_eq!(s.put("/bad/keep.bin", b"old").status, 201);
    let r = post(&s, "/bad/keep.bin?element=data", "text/xml", &soap("QUJD!"));
    assert_eq!(r.status, 400);
    assert_eq!(std::fs::read(s.root.join("bad/keep.bin")).unwrap(), b"old");
    assert!(s.temp_files().is_empty());
}

#[test]
fn json_field_with_escaped_line_breaks_stores_identical_bytes() {
    let s = hashing_server();
    let data = bytes(400_001, 41);
    let text = b64(&data);
    for (name, t) in [
        ("plain", text.clone()),
        // JSON producers that keep MIME line breaks escape them.
        ("crlf", wrap(&text, 76, "\\r\\n")),
        ("lf", wrap(&text, 64, "\\n")),
        ("slash", text.replace('/', "\\/")),
    ] {
        let body = format!(
            r#"{{"name": "picture.jpg", "meta": {{"data": "not this one", "n": [1, 2, {{"data": 3}}]}}, "data": "{t}", "after": true}}"#
        );
        let r = post(
            &s,
            &format!("/json/{name}.bin?field=data"),
            "application/json",
            body.as_bytes(),
        );
        assert_eq!(r.status, 201, "{name}: {}", r.text());
        assert_eq!(r.header("repr-digest").unwrap(), sha256_field(&data));
        assert_eq!(
            std::fs::read(s.root.join(format!("json/{name}.bin"))).unwrap(),
            data,
            "{name}"
        );
    }
    // Errors: bad base64, malformed JSON after the field, missing field.
    for (body, why) in [
        (r#"{"data": "QUJD*"}"#.to_string(), "base64"),
        (format!(r#"{{"data": "{text}", }}"#), "JSON"),
        (r#"{"other": "QUJD"}"#.to_string(), "not found"),
        (r#"{"data": 12}"#.to_string(), "not a string"),
    ] {
        let r = post(
            &s,
            "/jbad/x.bin?field=data",
            "application/json",
            body.as_bytes(),
        );
        assert_eq!(r.status, 400, "{body:.60}: {}", r.text());
        assert!(r.text().contains(why), "{}", r.text());
        assert_nothing_stored(&s, "jbad");
    }
}

#[test]
fn post_without_a_usable_type_or_field_is_refused_with_415_or_400() {
    let s = TestServer::start();
    let r = post(&s, "/x.bin", "application/octet-stream", b"abc");
    assert_eq!(r.status, 415);
    assert!(r.text().contains("multipart/form-data"), "{}", r.text());
    assert!(r.text().contains("application/json"), "{}", r.text());
    let r = s.req("POST", "/x.bin", &[], b"abc");
    assert_eq!(r.status, 415);
    let r = post(&s, "/x.bin", "text/xml", &soap("QUJD"));
    assert_eq!(r.status, 400);
    assert!(r.text().contains("?element="), "{}", r.text());
    let r = post(&s, "/x.bin?field=data", "text/xml", &soap("QUJD"));
    assert_eq!(r.status, 400, "{}", r.text());
    let r = post(&s, "/x.bin?element=%zz", "text/xml", &soap("QUJD"));
    assert_eq!(r.status, 400, "{}", r.text());
    let r = post(&s, "/dir/?element=data", "text/xml", &soap("QUJD"));
    assert_eq!(r.status, 400, "{}", r.text());
    let r = post(
        &s,
        "/x.bin",
        "multipart/related; boundary=abc",
        b"--abc--\r\n",
    );
    assert_eq!(r.status, 415, "{}", r.text());
    let r = post(&s, "/d/", "multipart/form-data", b"--abc--\r\n");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(s.names("").is_empty());
}

// ---- MTOM / XOP -------------------------------------------------------------------------

const MB: &str = "uuid:0ca0e16e-feb1-426c-97d8-c4508ada5e82+id=1";

fn mtom_root() -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/encoded/mtom_root.xml"),
    )
    .unwrap()
}

fn mtom_ct(start: bool) -> String {
    let mut ct = format!(
        "multipart/related; type=\"application/xop+xml\"; boundary=\"{MB}\"; start-info=\"application/soap+xml\""
    );
    if start {
        ct.push_str("; start=\"<root.message@wirespeed.test>\"");
    }
    ct
}

fn mtom_root_part(out: &mut Vec<u8>) {
    part(
        out,
        MB,
        &[
            "Content-ID: <root.message@wirespeed.test>",
            "Content-Transfer-Encoding: 8bit",
            "Content-Type: application/xop+xml;charset=utf-8;type=\"application/soap+xml\"",
        ],
        &mtom_root(),
    );
}

fn mtom_attachment(out: &mut Vec<u8>, cid: &str, data: &[u8]) {
    part(
        out,
        MB,
        &[
            &format!("Content-ID: <{cid}>"),
            "Content-Transfer-Encoding: binary",
            "Content-Type: application/octet-stream",
        ],
        data,
    );
}

#[test]
fn mtom_upload_is_stored_whether_root_or_attachment_comes_first() {
    let s = hashing_server();
    let mut payload = bytes(500_000, 51);
    payload.extend_from_slice(format!("\r\n--{MB}X\r\n").as_bytes());
    payload.extend_from_slice(&bytes(1000, 52));
    let thumb = bytes(3000, 53);

    // Root first, no start parameter: the first part is the root.
    let mut body = Vec::new();
    mtom_root_part(&mut body);
    mtom_attachment(&mut body, "thumb@wirespeed.test", &thumb);
    mtom_attachment(&mut body, "payload@wirespeed.test", &payload);
    close(&mut body, MB);
    let r = post(
        &s,
        "/mtom/root-first.bin?element=data",
        &mtom_ct(false),
        &body,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("repr-digest").unwrap(), sha256_field(&payload));
    assert_eq!(
        std::fs::read(s.root.join("mtom/root-first.bin")).unwrap(),
        payload
    );
    // The other element picks the other attachment.
    let r = post(
        &s,
        "/mtom/thumb.bin?element=ns:thumb",
        &mtom_ct(true),
        &body,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("mtom/thumb.bin")).unwrap(), thumb);

    // Attachments first (start names the root): the wanted one and an
    // unwanted one stream to temporary uploads until the root is read.
    let mut body = Vec::new();
    mtom_attachment(&mut body, "thumb@wirespeed.test", &thumb);
    mtom_attachment(&mut body, "payload@wirespeed.test", &payload);
    mtom_root_part(&mut body);
    mtom_attachment(&mut body, "late@wirespeed.test", b"after the root");
    close(&mut body, MB);
    let r = post(
        &s,
        "/mtom/attachment-first.bin?element=data",
        &mtom_ct(true),
        &body,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        std::fs::read(s.root.join("mtom/attachment-first.bin")).unwrap(),
        payload
    );
    // Replace: 204.
    let r = post(
        &s,
        "/mtom/attachment-first.bin?element=data",
        &mtom_ct(true),
        &body,
    );
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(s.temp_files().is_empty());
    assert_eq!(
        s.names("mtom"),
        ["attachment-first.bin", "root-first.bin", "thumb.bin"]
    );
}

#[test]
fn mtom_errors_store_nothing() {
    let s = TestServer::start();
    let payload = bytes(100_000, 61);
    // The reference points nowhere (root first, and attachment first).
    for root_first in [true, false] {
        let mut body = Vec::new();
        if root_first {
            mtom_root_part(&mut body);
        }
        mtom_attachment(&mut body, "payload@wirespeed.test", &payload);
        if !root_first {
            mtom_root_part(&mut body);
        }
        close(&mut body, MB);
        let r = post(&s, "/m/x.bin?element=missing", &mtom_ct(true), &body);
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains("nowhere@wirespeed.test"), "{}", r.text());
        assert_nothing_stored(&s, "m");
        // An element without xop:Include, or no such element.
        let r = post(&s, "/m/x.bin?element=name", &mtom_ct(true), &body);
        assert_eq!(r.status, 400, "{}", r.text());
        let r = post(&s, "/m/x.bin?element=absent", &mtom_ct(true), &body);
        assert_eq!(r.status, 400, "{}", r.text());
        assert_nothing_stored(&s, "m");
    }
    // start names a root that isn't there.
    let mut body = Vec::new();
    mtom_attachment(&mut body, "payload@wirespeed.test", &payload);
    close(&mut body, MB);
    let r = post(&s, "/m/x.bin?element=data", &mtom_ct(true), &body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_nothing_stored(&s, "m");
    // Missing close delimiter after everything was there.
    let mut body = Vec::new();
    mtom_root_part(&mut body);
    mtom_attachment(&mut body, "payload@wirespeed.test", &payload);
    let r = post(&s, "/m/x.bin?element=data", &mtom_ct(true), &body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_nothing_stored(&s, "m");
    // Malformed root XML.
    let mut body = Vec::new();
    let mut root = mtom_root();
    let n = root.len();
    root.truncate(n - 20);
    part(
        &mut body,
        MB,
        &["Content-ID: <root.message@wirespeed.test>"],
        &root,
    );
    mtom_attachment(&mut body, "payload@wirespeed.test", &payload);
    close(&mut body, MB);
    let r = post(&s, "/m/x.bin?element=data", &mtom_ct(true), &body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_nothing_stored(&s, "m");
    // Too many parts before the root: 413.
    let mut body = Vec::new();
    for i in 0..17 {
        mtom_attachment(&mut body, &format!("p{i}@wirespeed.test"), b"x");
    }
    mtom_root_part(&mut body);
    close(&mut body, MB);
    let r = post(&s, "/m/x.bin?element=data", &mtom_ct(true), &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_nothing_stored(&s, "m");
    // A root larger than 1 MiB: 413.
    let mut body = Vec::new();
    let mut big = b"<a>".to_vec();
    big.extend(std::iter::repeat_n(b'x', 1024 * 1024));
    big.extend_from_slice(b"</a>");
    part(
        &mut body,
        MB,
        &["Content-ID: <root.message@wirespeed.test>"],
        &big,
    );
    close(&mut body, MB);
    let r = post(&s, "/m/x.bin?element=data", &mtom_ct(true), &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_nothing_stored(&s, "m");
}

/// Files past 4 MiB hand their sha-256 over to a read-behind thread in the
/// middle of the upload (inline before): the digest must still cover every
/// byte exactly once, in both hash modes.
#[test]
fn big_encoded_uploads_hash_correctly_across_the_hand_off() {
    use wirespeed_service::{HashMode, ServiceConfig};
    for hash in [HashMode::Concurrent, HashMode::Inline] {
        let s = TestServer::with(ServiceConfig {
            hash,
            digest: wirespeed_service::DigestPolicy::Always,
            ..ServiceConfig::default()
        });
        let big = bytes(6 * 1024 * 1024 + 5, 71);
        let small = bytes(1000, 72);
        let mut body = Vec::new();
        file_part(&mut body, "file", "big.bin", &big);
        file_part(&mut body, "file", "small.bin", &small);
        body.extend_from_slice(format!("--{B}--\r\n").as_bytes());
        let r = post(&s, "/big/", &form_ct(), &body);
        assert_eq!(r.status, 201, "{hash:?}: {}", r.text());
        let files = json(&r)["files"].as_array().unwrap().clone();
        assert_eq!(files[0]["sha256"], sha_hex(&big), "{hash:?}");
        assert_eq!(files[1]["sha256"], sha_hex(&small), "{hash:?}");
        assert_eq!(std::fs::read(s.root.join("big/big.bin")).unwrap(), big);

        let r = post(
            &s,
            "/big/soap.bin?element=data",
            "text/xml",
            &soap(&wrap(&b64(&big), 76, "\r\n")),
        );
        assert_eq!(r.status, 201, "{hash:?}: {}", r.text());
        assert_eq!(
            r.header("repr-digest").unwrap(),
            sha256_field(&big),
            "{hash:?}"
        );
        assert_eq!(std::fs::read(s.root.join("big/soap.bin")).unwrap(), big);
        assert!(s.temp_files().is_empty());
    }
}

/// The HTML listing's form, used the way a browser uses it: read the form's
/// method, action, enctype and file field from the page, post a file the way
/// the browser would, follow the 303 back, and find the file listed.
#[test]
fn the_listing_upload_form_works_like_a_browser() {
    let s = TestServer::start();
    std::fs::create_dir_all(s.root.join("inbox")).unwrap();
    let page = s.req("GET", "/inbox/", &[("Accept", "text/html")], b"");
    assert_eq!(page.status, 200);
    let html = page.text();
    let form = &html[html.find("<form").expect("an upload form")..];
    let form = &form[..form.find("</form>").unwrap()];
    let attr = |name: &str| -> String {
        let at = form
            .find(&format!("{name}=\""))
            .unwrap_or_else(|| panic!("{name} in {form}"));
        let v = &form[at + name.len() + 2..];
        v[..v.find('"').unwrap()].to_string()
    };
    assert_eq!(attr("method").to_ascii_lowercase(), "post");
    assert_eq!(attr("enctype"), "multipart/form-data");
    let action = attr("action");
    let input = &form[form.find("type=\"file\"").expect("a file input")..];
    let field = {
        let at = input.find("name=\"").unwrap() + 6;
        input[at..at + input[at..].find('"').unwrap()].to_string()
    };
    // What a browser sends for one chosen file.
    let data = bytes(10_000, 5);
    let mut body = Vec::new();
    file_part(&mut body, &field, "scan.pdf", &data);
    body.extend_from_slice(format!("--{B}--\r\n").as_bytes());
    let r = post(&s, &format!("/inbox/{action}"), &form_ct(), &body);
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(r.header("location"), Some("/inbox/"));
    assert_eq!(std::fs::read(s.root.join("inbox/scan.pdf")).unwrap(), data);
    let page = s.req("GET", "/inbox/", &[("Accept", "text/html")], b"");
    assert!(page.text().contains("scan.pdf"), "{}", page.text());
}

/// The encoded routes hash what they store only when asked (or with
/// `--digest always`), like PUT: no `sha256`/`Repr-Digest` otherwise, and the
/// digest they computed is answered by a later GET.
#[test]
fn encoded_uploads_hash_only_on_request() {
    let s = TestServer::start();
    let a = bytes(50_000, 90);
    let mut body = Vec::new();
    file_part(&mut body, "file", "a.bin", &a);
    close(&mut body, B);
    let r = post(&s, "/up/", &form_ct(), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(json(&r)["files"][0].get("sha256").is_none(), "{}", r.text());
    let r = s.req("GET", "/up/a.bin", &[], b"");
    assert_eq!(
        r.header("repr-digest"),
        None,
        "nothing recorded when not asked"
    );

    let r = s.req(
        "POST",
        "/up/",
        &[
            ("Content-Type", &form_ct()),
            ("Want-Repr-Digest", "sha-256=5"),
        ],
        &body,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(json(&r)["files"][0]["sha256"], sha_hex(&a));
    let r = s.req("GET", "/up/a.bin", &[], b"");
    assert_eq!(r.body, a);
    let want = format!(
        "sha-256=:{}:",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(&a))
    );
    assert_eq!(r.header("repr-digest"), Some(want.as_str()));

    // SOAP: the same rule.
    let xml = format!(
        "<Envelope><Body><data>{}</data></Body></Envelope>",
        base64::engine::general_purpose::STANDARD.encode(&a)
    );
    let r = post(&s, "/soap/a.bin?element=data", "text/xml", xml.as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("repr-digest"), None);
    let r = s.req(
        "POST",
        "/soap/a.bin?element=data",
        &[
            ("Content-Type", "text/xml"),
            ("Want-Repr-Digest", "sha-256=5"),
        ],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("repr-digest"), Some(want.as_str()));
}

/// MTOM attachments carry no filename; they stream to storage at any size
/// (they used to hit the 1 MiB form-field cap: 1,048,577 bytes → 413), both
/// before and after the root part.
#[test]
fn mtom_attachments_above_a_mebibyte_are_stored() {
    let s = TestServer::start();
    let payload = bytes(3 * 1024 * 1024 + 1, 54);
    for root_first in [true, false] {
        let mut body = Vec::new();
        if root_first {
            mtom_root_part(&mut body);
            mtom_attachment(&mut body, "payload@wirespeed.test", &payload);
        } else {
            mtom_attachment(&mut body, "payload@wirespeed.test", &payload);
            mtom_root_part(&mut body);
        }
        close(&mut body, MB);
        let r = post(
            &s,
            "/mtom/big.bin?element=data",
            &mtom_ct(!root_first),
            &body,
        );
        assert!(matches!(r.status, 201 | 204), "{}", r.text());
        assert_eq!(std::fs::read(s.root.join("mtom/big.bin")).unwrap(), payload);
    }
}
