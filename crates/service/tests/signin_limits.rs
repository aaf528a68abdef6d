//! Password guessing against the real server: a parallel burst from one
//! address gets no more checks than a sequence and is answered 429 with
//! `Retry-After` at once; another account's right password still signs in
//! meanwhile; guesses from ever new addresses (here through a trusted
//! proxy's `X-Forwarded-For`) stay under the account's own bound; HTTP
//! Basic meets the same bounds as the sign-in form.

mod common;

use std::sync::Arc;

use base64::Engine as _;
use common::*;
use wirespeed_net::{ServerConfig, TrustedProxies};
use wirespeed_service::policy::limiter::{PER_ACCOUNT, PER_SOURCE};
use wirespeed_service::policy::password;
use wirespeed_service::{ServiceConfig, Users};

fn server() -> TestServer {
    let rules = format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n[paths.\"/\"]\nalice = \"r\"\nbob = \"r\"\n",
        password::hash(b"alice-pw").unwrap(),
        password::hash(b"bob-pw").unwrap()
    );
    let users = Arc::new(Users::from_text("users.toml", &rules).unwrap());
    let (shares, sessions) = signed_tables([7; 32]);
    let cfg = ServiceConfig {
        users: Some(users),
        shares: Some(shares),
        sessions: Some(sessions),
        ..ServiceConfig::default()
    };
    let proxy = TrustedProxies::parse_one("127.0.0.1").unwrap();
    let server_cfg = ServerConfig {
        trusted_proxies: TrustedProxies::new(vec![proxy]),
        ..ServerConfig::default()
    };
    TestServer::with_server(cfg, server_cfg)
}

/// A sign-in through the form route, from `client` (as the proxy says).
fn sign_in_from(s: &TestServer, client: &str, name: &str, pw: &str) -> Resp {
    let body = serde_json::json!({ "name": name, "password": pw }).to_string();
    s.req(
        "POST",
        "/-/session",
        &[
            ("Content-Type", "application/json"),
            SAME_ORIGIN,
            ("X-Forwarded-For", client),
        ],
        body.as_bytes(),
    )
}

fn retry_after(r: &Resp) -> u64 {
    r.header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("429 without Retry-After: {:?}", r.headers))
}

#[test]
fn a_parallel_burst_is_refused_at_once_and_others_still_sign_in() {
    let s = server();
    const BURST: usize = 40;
    let (statuses, alice) = std::thread::scope(|scope| {
        let guesses: Vec<_> = (0..BURST)
            .map(|i| {
                let s = &s;
                scope.spawn(move || {
                    let r = sign_in_from(s, "192.0.2.66", "bob", &format!("guess-{i}"));
                    if r.status == 429 {
                        assert!(retry_after(&r) >= 1);
                        assert!(r.header("set-cookie").is_none());
                    }
                    r.status
                })
            })
            .collect();
        // Meanwhile, alice from her own address.
        let alice = sign_in_from(&s, "198.51.100.7", "alice", "alice-pw");
        let statuses: Vec<u16> = guesses.into_iter().map(|g| g.join().unwrap()).collect();
        (statuses, alice)
    });
    assert_eq!(alice.status, 200, "{}", alice.text());
    assert!(alice.header("set-cookie").is_some());
    let checked = statuses.iter().filter(|&&c| c == 401).count();
    let refused = statuses.iter().filter(|&&c| c == 429).count();
    assert_eq!(checked + refused, BURST, "{statuses:?}");
    // The free budget, and (only were this machine stalled for seconds
    // between the guesses) a few spaced by the doubling back-off.
    assert!(
        checked <= PER_SOURCE.free as usize + 2,
        "{checked} guesses checked: {statuses:?}"
    );
    assert!(refused >= BURST - PER_SOURCE.free as usize - 2);
    // The same address is refused for any account, the right password
    // of bob's included (it is not even checked).
    let r = sign_in_from(&s, "192.0.2.66", "bob", "bob-pw");
    assert_eq!(r.status, 429);
    // HTTP Basic from there meets the same bound.
    let basic = base64::engine::general_purpose::STANDARD.encode("bob:bob-pw");
    let r = s.req(
        "GET",
        "/",
        &[
            ("Authorization", &format!("Basic {basic}")),
            ("X-Forwarded-For", "192.0.2.66"),
        ],
        b"",
    );
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(retry_after(&r) >= 1);
    // From elsewhere, Basic works.
    let r = s.req(
        "GET",
        "/",
        &[
            ("Authorization", &format!("Basic {basic}")),
            ("X-Forwarded-For", "198.51.100.8"),
        ],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn new_addresses_do_not_escape_the_accounts_bound() {
    let s = server();
    let mut checked = 0;
    for i in 0..60 {
        // IPv4 and IPv6 addresses, each used once.
        let from = if i % 2 == 0 {
            format!("10.1.{}.{}", i / 250, i % 250 + 1)
        } else {
            format!("2001:db8:{i:x}::1")
        };
        let r = sign_in_from(&s, &from, "bob", "wrong");
        match r.status {
            401 => checked += 1,
            429 => assert!(retry_after(&r) >= 1),
            other => panic!("{other}: {}", r.text()),
        }
    }
    // The account's free budget, and (only were this machine stalled for
    // seconds) a few more spaced by the doubling back-off.
    assert!(checked >= PER_ACCOUNT.free, "{checked}");
    assert!(checked <= PER_ACCOUNT.free + 3, "{checked} guesses checked");
    // Alice, not under attack, signs in from yet another address.
    let r = sign_in_from(&s, "10.9.9.9", "alice", "alice-pw");
    assert_eq!(r.status, 200, "{}", r.text());
    // Hosts of one IPv6 /64 count as one.
    for i in 0..PER_SOURCE.free {
        let r = sign_in_from(&s, &format!("2001:db8:ffff:1::{:x}", i + 1), "alice", "no");
        assert_eq!(r.status, 401);
    }
    let r = sign_in_from(&s, "2001:db8:ffff:1::99", "alice", "no again");
    assert_eq!(r.status, 429);
    assert!(retry_after(&r) >= 1);
}
