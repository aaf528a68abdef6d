//! What a web page on another site, a DNS-rebinding page, or a hostile file
//! name can do to the server: no cross-origin writes, no foreign `Host` on a
//! loopback bind, user files never run as the server's origin, and names
//! with control characters refused.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::TestServer;
use wirespeed_service::origin::AllowedHosts;
use wirespeed_service::ServiceConfig;
use wirespeed_testkit::http::parse_all;

#[test]
fn cross_origin_writes_are_refused_scripts_and_same_origin_are_not() {
    let s = TestServer::start();
    let form = |headers: &[(&str, &str)]| {
        let body = "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.html\"\r\n\r\n<script>1</script>\r\n--b--\r\n";
        let mut h = vec![("Content-Type", "multipart/form-data; boundary=b")];
        h.extend_from_slice(headers);
        s.req("POST", "/up/?format=html", &h, body.as_bytes())
    };
    let evil = [
        ("Origin", "https://evil.example"),
        ("Sec-Fetch-Site", "cross-site"),
    ];
    let r = form(&evil);
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(!s.root.join("up").exists(), "nothing written");
    for (m, p) in [("PUT", "/up/a.txt"), ("DELETE", "/up/a.txt")] {
        assert_eq!(s.req(m, p, &evil, b"x").status, 403, "{m}");
    }
    assert_eq!(
        s.req("PUT", "/a.txt", &[("Origin", "null")], b"x").status,
        403
    );
    // Reads from anywhere are fine (the page cannot see them without CORS).
    assert_ne!(s.req("GET", "/", &evil, b"").status, 403);

    // The server's own page (same origin) and plain clients work.
    let r = s.req(
        "POST",
        "/up/?format=html",
        &[
            ("Content-Type", "multipart/form-data; boundary=b"),
            ("Origin", "http://test"),
            ("Sec-Fetch-Site", "same-origin"),
        ],
        b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.html\"\r\n\r\nhi\r\n--b--\r\n",
    );
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(s.put("/b.txt", b"script").status, 201);
    let src = s.tmp.path().join("c.txt");
    std::fs::write(&src, b"curl").unwrap();
    let (ok, out) = common::curl(&[
        "-sS",
        "-T",
        src.to_str().unwrap(),
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &s.url("/c.txt"),
    ]);
    assert!(
        ok && (out == b"201" || out == b"204"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn uploaded_html_is_sandboxed_and_not_sniffed() {
    let s = TestServer::start();
    assert_eq!(
        s.put("/page.html", b"<script>alert(1)</script>").status,
        201
    );
    let g = s.get("/page.html");
    assert_eq!(g.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(g.header("content-security-policy"), Some("sandbox"));
    assert_eq!(g.header("x-content-type-options"), Some("nosniff"));
}

#[test]
fn foreign_host_on_loopback_is_421_and_the_connection_stays_usable() {
    let s = TestServer::with(ServiceConfig {
        allowed_hosts: Some(AllowedHosts::loopback(&["files.lan".to_string()])),
        ..ServiceConfig::default()
    });
    assert_eq!(
        s.put("/f.txt", b"data").status,
        421,
        "Host: test is not a loopback name"
    );
    std::fs::write(s.root.join("f.txt"), b"data").unwrap();
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(
        b"GET /f.txt HTTP/1.1\r\nHost: rebind.evil.example:8080\r\n\r\n\
          GET /f.txt HTTP/1.1\r\nHost: localhost:8080\r\n\r\n\
          GET /f.txt HTTP/1.1\r\nHost: files.lan\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).unwrap();
    let statuses: Vec<u16> = parse_all(&buf).iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [421, 200, 200],
        "{}",
        String::from_utf8_lossy(&buf)
    );
}

/// The control routes outside the front door check the `Host` too.
#[test]
fn foreign_host_is_421_on_the_metrics_page() {
    let s = TestServer::with(ServiceConfig {
        allowed_hosts: Some(AllowedHosts::loopback(&[])),
        metrics: Some(std::sync::Arc::new(wirespeed_service::Metrics::new(false))),
        ..ServiceConfig::default()
    });
    let r = s.get("/-/metrics");
    assert_eq!(r.status, 421, "Host: test is not a loopback name");
    assert!(r.text().contains("--allow-host"), "{}", r.text());
    let ok = s.raw(
        b"GET /-/metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        false,
    );
    assert_eq!(ok.status, 200, "{}", ok.text());
}

#[test]
fn names_with_control_characters_are_refused_on_every_route() {
    let s = TestServer::start();
    for path in ["/a%1b%5d0%3bx%07.txt", "/d%0a/x", "/%7f"] {
        assert_eq!(s.put(path, b"x").status, 400, "PUT {path}");
        assert_eq!(s.get(path).status, 400, "GET {path}");
        assert_eq!(s.req("DELETE", path, &[], b"").status, 400, "DELETE {path}");
        let r = s.req(
            "POST",
            &format!("{path}?field=d"),
            &[("Content-Type", "application/json")],
            b"{\"d\":\"eA==\"}",
        );
        assert_eq!(r.status, 400, "POST {path}");
    }
    assert!(s.names("").is_empty(), "{:?}", s.names(""));
}

/// A refused request (no token) with a body is answered and the connection
/// closed at once, instead of draining the body into a 256 KiB buffer for as
/// long as the client trickles it.
#[test]
fn refused_request_bodies_are_not_drained() {
    use wirespeed_service::Access;
    let s = TestServer::with(ServiceConfig {
        access: Access::new(&["secret".to_string()], true),
        ..ServiceConfig::default()
    });
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // A chunked body that never ends.
    c.write_all(b"GET /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n")
        .unwrap();
    let mut buf = Vec::new();
    let started = std::time::Instant::now();
    c.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 401 "), "{text}");
    assert!(text.contains("Connection: close"), "{text}");
    // Our side closes (FIN) right after the answer, while the lingering
    // close discards what the client still sends; not after the body timeout.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}
