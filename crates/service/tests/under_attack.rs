//! The server stays responsive while clients abuse it: health, a small
//! upload and a listing each answer while slow or hostile clients hold
//! connections. (The memory of refused connections is measured in
//! `refused_bodies_memory.rs`, alone in its process.)

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::TestServer;
use wirespeed_net::ServerConfig;
use wirespeed_service::ServiceConfig;

/// A liveness bound, not a speed claim: a pinned pool makes requests wait
/// until the abusers give up (tens of seconds), while a loaded 2-core host
/// can take over a second to schedule a healthy answer.
const RESPONSIVE: Duration = Duration::from_secs(5);

/// Health, a small PUT (its commit uses the blocking pool) and a small
/// listing (read on the blocking pool), each answered within [`RESPONSIVE`].
fn assert_responsive(s: &TestServer, what: &str) {
    for (method, path, body) in [
        ("GET", "/-/health", &b""[..]),
        ("PUT", "/probe/p.txt", &b"probe"[..]),
        ("GET", "/probe/?format=json", &b""[..]),
    ] {
        let t = Instant::now();
        let r = s.req(method, path, &[], body);
        assert!(
            r.status < 300,
            "{what}: {method} {path} answered {}",
            r.status
        );
        assert!(
            t.elapsed() < RESPONSIVE,
            "{what}: {method} {path} took {:?}",
            t.elapsed()
        );
    }
}

/// Hashed uploads that trickle and listings nobody reads used to park one
/// blocking-pool thread each; with a pool of 8 threads, 24 of each left
/// every commit and listing waiting. Now neither holds a thread.
#[test]
fn trickling_hashed_uploads_and_unread_listings_leave_the_pool_free() {
    let s = TestServer::with_pool(|l| l, ServiceConfig::default(), ServerConfig::default(), 8);
    std::fs::create_dir(s.root.join("big")).unwrap();
    for i in 0..40_000 {
        std::fs::File::create(
            s.root
                .join(format!("big/entry-with-a-long-name-{i:06}.dat")),
        )
        .unwrap();
    }
    let mut held = Vec::new();
    for i in 0..24 {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(
            format!(
                "PUT /slow/{i}.bin HTTP/1.1\r\nHost: t\r\nWant-Repr-Digest: sha-256=10\r\n\
                 Content-Length: 20000000\r\n\r\nfirst bytes"
            )
            .as_bytes(),
        )
        .unwrap();
        held.push(c);
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(b"GET /big/?format=json HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        held.push(c); // never read
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_responsive(
        &s,
        "24 trickling hashed uploads + 24 unread 40k-entry listings",
    );
    drop(held);
}

/// Two MTOM root parts built to make namespace resolution quadratic used to
/// keep the async workers busy for seconds; health stays prompt now.
#[test]
fn pathological_mtom_posts_do_not_stall_the_server() {
    let s = TestServer::start();
    let mut root = String::new();
    for w in 0..12 {
        root.push_str("<w");
        for i in 0..2500 {
            root.push_str(&format!(" xmlns:p{}=\"u\"", w * 2500 + i));
        }
        root.push('>');
    }
    root.push_str("<data>");
    for _ in 0..30_000 {
        root.push_str("<p0:Include/>");
    }
    root.push_str("</data>");
    for _ in 0..12 {
        root.push_str("</w>");
    }
    let b = "mtomboundary";
    let body = format!(
        "--{b}\r\nContent-Type: application/xop+xml\r\nContent-ID: <root>\r\n\r\n{root}\r\n--{b}--\r\n"
    );
    let ct = format!("multipart/related; type=\"application/xop+xml\"; boundary={b}");
    let posts: Vec<_> = (0..2)
        .map(|i| {
            let (addr, ct, body) = (s.addr, ct.clone(), body.clone());
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(addr).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                let head = format!(
                    "POST /m/{i}.bin?element=data HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
                     Content-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                c.write_all(head.as_bytes()).unwrap();
                c.write_all(body.as_bytes()).unwrap();
                let mut out = Vec::new();
                let _ = c.read_to_end(&mut out);
                out
            })
        })
        .collect();
    for _ in 0..5 {
        assert_responsive(&s, "two pathological MTOM posts");
        std::thread::sleep(Duration::from_millis(50));
    }
    for p in posts {
        let out = p.join().unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.starts_with("HTTP/1.1 400 "),
            "{}",
            &text[..text.len().min(200)]
        );
    }
}
