//! One share links table for every node on a bucket: two servers on one
//! MinIO bucket with the same key and no revocation sync running (so what
//! holds here holds through the shared table alone). Links minted on
//! either are listed by both, the same list on every node; one node
//! revokes a link the other minted; a link revoked on one is refused on
//! the other within two seconds; mints racing on both nodes all land
//! (conditional writes, no change lost). The table is one record in the
//! bucket, never listed or served.
//!
//! MinIO comes from `target/minio/minio` or `$WIRESPEED_MINIO`; without it
//! this prints a loud SKIPPED and passes, except under `CI=true`.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use wirespeed_service::links::SharedLinks;
use wirespeed_service::policy::presets::Access;
use wirespeed_service::{S3Config, S3Storage, ServiceConfig};
use wirespeed_testkit::fs::eventually_within;
use wirespeed_testkit::minio::{Minio, PASSWORD, USER};

const KEY: [u8; 32] = [22; 32];
const TOKEN: &str = "links-token";

fn s3(m: &Minio) -> S3Storage {
    let mut c = S3Config::from_url("s3://links/pre").unwrap();
    c.endpoint = Some(m.endpoint());
    c.region = Some("us-east-1".into());
    c.credentials = Some((USER.into(), PASSWORD.into()));
    S3Storage::new(&c).unwrap()
}

/// A node on the bucket: the token, the key, the shared links table.
fn node(m: &Minio) -> TestServer {
    let (shares, sessions) = signed_tables(KEY);
    let cfg = ServiceConfig {
        shares: Some(shares),
        sessions: Some(sessions),
        links: Some(SharedLinks::in_bucket(s3(m))),
        access: Access::new([TOKEN], true),
        ..ServiceConfig::default()
    };
    TestServer::on_storage(s3(m), cfg)
}

const BEARER: (&str, &str) = ("Authorization", "Bearer links-token");

fn mint(s: &TestServer, path: &str) -> String {
    let r = s.req("POST", &format!("/-/shares{path}"), &[BEARER], b"");
    assert_eq!(r.status, 201, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["share"].as_str().unwrap().to_string()
}

/// The tokens `s` lists under `/`.
fn listed(s: &TestServer) -> BTreeSet<String> {
    let r = s.req("GET", "/-/shares/", &[BEARER], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|l| l["share"].as_str().unwrap().to_string())
        .collect()
}

fn revoke(s: &TestServer, token: &str) -> u16 {
    s.req(
        "DELETE",
        &format!("/-/shares/?link={token}"),
        &[BEARER],
        b"",
    )
    .status
}

#[test]
fn every_node_lists_revokes_and_refuses_the_same_links() {
    let Some(m) = Minio::start() else {
        return;
    };
    m.create_bucket("links");
    let (a, b) = (node(&m), node(&m));
    assert_eq!(a.req("PUT", "/t/f.txt", &[BEARER], b"shared").status, 201);

    let mut all = BTreeSet::new();
    for _ in 0..3 {
        all.insert(mint(&a, "/t/f.txt"));
    }
    for _ in 0..2 {
        all.insert(mint(&b, "/t/"));
    }
    // The same five on each node, every time (no alternation).
    for _ in 0..4 {
        assert_eq!(listed(&a), all, "node a's list");
        assert_eq!(listed(&b), all, "node b's list");
    }

    // b revokes a link a minted; both lists lose it at once.
    let from_a = all.iter().find(|t| !t.is_empty()).unwrap().clone();
    let link = format!("/t/f.txt?share={from_a}");
    let r = b.get(&link);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(revoke(&b, &from_a), 204, "b revokes a link a minted");
    all.remove(&from_a);
    assert_eq!(listed(&a), all);
    assert_eq!(listed(&b), all);
    // Refused on b at once, and on a within two seconds.
    assert_eq!(b.get(&link).status, 410);
    eventually_within(
        "a refuses the link b revoked",
        Duration::from_secs(2),
        || a.get(&link).status == 410,
    );
    // Revoking it again finds no live link, on either node.
    assert_eq!(revoke(&a, &from_a), 404);

    // And the other way: revoked on a, refused on b within two seconds.
    let fresh = mint(&a, "/t/f.txt");
    let link = format!("/t/f.txt?share={fresh}");
    assert_eq!(b.get(&link).text(), "shared");
    assert_eq!(revoke(&a, &fresh), 204);
    eventually_within(
        "b refuses the link a revoked",
        Duration::from_secs(2),
        || b.get(&link).status == 410,
    );

    // Mints racing on both nodes: none overwrites another's.
    let minted: Vec<String> = std::thread::scope(|scope| {
        let ta = scope.spawn(|| (0..6).map(|_| mint(&a, "/t/")).collect::<Vec<_>>());
        let tb = scope.spawn(|| (0..6).map(|_| mint(&b, "/t/")).collect::<Vec<_>>());
        let mut v = ta.join().unwrap();
        v.extend(tb.join().unwrap());
        v
    });
    all.extend(minted);
    assert_eq!(listed(&a), all, "every racing mint is listed on a");
    assert_eq!(listed(&b), all, "every racing mint is listed on b");

    // One record in the bucket, never listed or served.
    let keys = m.keys("links");
    assert!(
        keys.iter()
            .any(|k| k == "pre/.wirespeed-state/records/links"),
        "{keys:?}"
    );
    let root = a.req("GET", "/?format=json", &[BEARER], b"");
    assert!(!root.text().contains("wirespeed-state"), "{}", root.text());
    let record = a.req("GET", "/.wirespeed-state/records/links", &[BEARER], b"");
    assert_eq!(record.status, 404);
}
