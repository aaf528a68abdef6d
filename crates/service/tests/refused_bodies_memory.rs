//! Refused connections cost little memory. Alone in its own test binary:
//! the measure is the process's RSS, which tests running beside it in the
//! same process (big listings, uploads) would inflate.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::TestServer;
use wirespeed_service::{Access, ServiceConfig};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// On a private server, connections that send a chunked body without a
/// token are answered 401 and closed; 300 of them used to pin a 256 KiB
/// drain buffer each (≈ 280 MB for 1,000).
#[test]
fn unauthenticated_bodies_cost_little_memory() {
    let s = TestServer::with(ServiceConfig {
        access: Access::new(&["secret".to_string()], true),
        ..ServiceConfig::default()
    });
    let before = rss_kib();
    let mut held = Vec::new();
    for _ in 0..300 {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n")
            .unwrap();
        held.push(c);
    }
    std::thread::sleep(Duration::from_millis(1000));
    let grown = rss_kib().saturating_sub(before);
    eprintln!("RSS grew by {grown} KiB for 300 refused connections");
    assert!(
        grown < 30 * 1024,
        "RSS grew by {grown} KiB for 300 refused connections"
    );
    let r = s.req(
        "GET",
        "/-/health",
        &[("Authorization", "Bearer secret")],
        b"",
    );
    assert_eq!(
        r.status, 200,
        "answers while 300 refused connections linger"
    );
    drop(held);
}
