//! Sign-outs and link revocations across nodes on one bucket:
//! two servers on one MinIO bucket with the same key, each running the
//! revocation sync (`revocations::run_sync`, here every 1 s); a session
//! and a link minted on one are accepted by the other, and once signed out
//! or revoked on the first, the second refuses them within its period; a
//! third node started afterwards, with no state of its own, refuses them
//! from its first read of the bucket (the records live in the bucket,
//! under `PREFIX/.wirespeed-state/revoked/`).
//!
//! MinIO comes from `target/minio/minio` or `$WIRESPEED_MINIO`; without it
//! this prints a loud SKIPPED and passes, except under `CI=true`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use common::*;
use wirespeed_service::policy::password;
use wirespeed_service::{S3Config, S3Storage, ServiceConfig, Users};
use wirespeed_testkit::fs::eventually_within;
use wirespeed_testkit::minio::{Minio, PASSWORD, USER};

const KEY: [u8; 32] = [21; 32];
const SAME: (&str, &str) = SAME_ORIGIN;
/// How often each node reads the others' revocations in this test.
const EVERY: Duration = Duration::from_secs(1);

fn s3(m: &Minio) -> S3Storage {
    let mut c = S3Config::from_url("s3://nodes/pre").unwrap();
    c.endpoint = Some(m.endpoint());
    c.region = Some("us-east-1".into());
    c.credentials = Some((USER.into(), PASSWORD.into()));
    S3Storage::new(&c).unwrap()
}

/// Every node reads the same rules file (a session names its user's
/// password hash: one hashed per node would differ).
fn users() -> Arc<Users> {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let text = TEXT.get_or_init(|| {
        format!(
            "[users]\nalice = \"{}\"\n[paths.\"/\"]\n\"*\" = \"r\"\n[paths.\"/team\"]\nalice = \"rwd\"\n",
            password::hash(b"alice-pw").unwrap()
        )
    });
    Arc::new(Users::from_text("users.toml", text).unwrap())
}

/// A node: its server on the bucket, and its sync on `rt`.
fn node(m: &Minio, rt: &tokio::runtime::Runtime) -> TestServer {
    let (shares, sessions) = signed_tables(KEY);
    rt.spawn(wirespeed_service::revocations::run_sync(
        s3(m),
        Some(shares.clone()),
        Some(sessions.clone()),
        EVERY,
    ));
    let cfg = ServiceConfig {
        users: Some(users()),
        shares: Some(shares),
        sessions: Some(sessions),
        ..ServiceConfig::default()
    };
    TestServer::on_storage(s3(m), cfg)
}

fn alice() -> (&'static str, String) {
    let b64 = base64::engine::general_purpose::STANDARD.encode("alice:alice-pw");
    ("Authorization", format!("Basic {b64}"))
}

#[test]
fn sign_outs_and_revocations_reach_every_node_on_the_bucket() {
    let Some(m) = Minio::start() else {
        return;
    };
    m.create_bucket("nodes");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (a, b) = (node(&m, &rt), node(&m, &rt));
    let (auth, basic) = alice();
    let al = (auth, basic.as_str());
    assert_eq!(a.req("PUT", "/team/t.txt", &[al], b"team's").status, 201);

    // A session and a link minted on a, used on b.
    let (r, cookie) = sign_in(&a, "alice", "alice-pw");
    assert_eq!(r.status, 200, "{}", r.text());
    let cookie = cookie.expect("a session cookie");
    let c = ("Cookie", cookie.as_str());
    assert_eq!(b.req("GET", "/team/", &[c], b"").status, 200);
    let r = a.req("POST", "/-/shares/team/t.txt", &[al], b"");
    assert_eq!(r.status, 201, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let token = v["share"].as_str().unwrap().to_string();
    let link = format!("/team/t.txt?share={token}");
    assert_eq!(b.get(&link).text(), "team's");

    // Signed out and revoked on a: refused on a at once, on b within its
    // period (the bound leaves room for a slow listing).
    assert_eq!(a.req("DELETE", "/-/session", &[c, SAME], b"").status, 204);
    let r = a.req(
        "DELETE",
        &format!("/-/shares/team/?link={token}"),
        &[al],
        b"",
    );
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(a.req("GET", "/team/", &[c], b"").status, 401);
    // A revoked link says so (410), without a word about its path.
    let r = a.get(&link);
    assert_eq!(r.status, 410, "{}", r.text());
    assert!(r.text().contains("revoked"), "{}", r.text());
    let bound = EVERY * 10;
    eventually_within("b refuses the signed-out session", bound, || {
        b.req("GET", "/team/", &[c], b"").status == 401
    });
    eventually_within("b refuses the revoked link", bound, || {
        b.get(&link).status == 410
    });
    // The records are in the bucket, not on a node.
    let keys = m.keys("nodes");
    let marks: Vec<&String> = keys
        .iter()
        .filter(|k| k.starts_with("pre/.wirespeed-state/revoked/"))
        .collect();
    assert_eq!(marks.len(), 2, "{keys:?}");
    assert!(marks.iter().any(|k| k.contains("/s-")) && marks.iter().any(|k| k.contains("/l-")));
    // Never listed or served through the file routes.
    assert!(!b.get("/?format=json").text().contains("wirespeed-state"));
    assert_eq!(b.get("/.wirespeed-state/revoked/").status, 404);

    // A node started now, with nothing of its own, refuses both after its
    // first read.
    let c3 = node(&m, &rt);
    eventually_within("a new node refuses both", bound, || {
        c3.req("GET", "/team/", &[c], b"").status == 401 && c3.get(&link).status == 410
    });
    // And still takes what is live: a new sign-in on a works on it.
    let (_, fresh) = sign_in(&a, "alice", "alice-pw");
    let fresh = fresh.expect("a session cookie");
    assert_eq!(
        c3.req("GET", "/team/", &[("Cookie", &fresh)], b"").status,
        200
    );
    drop(rt);
}
