//! The change stream end to end: requests through every front that changes
//! storage (PUT, WebDAV MOVE, MKCOL, DELETE, a tus upload's publication,
//! an upload link, an anonymous drop) each emit one typed change, with who
//! asked, where, and the file's identity before and after; reads emit none.

mod common;
#[path = "changes/search.rs"]
mod search;

use std::sync::Arc;

use base64::Engine as _;
use common::*;
use wirespeed_service::policy::shares::DEFAULT_MAX_EXPIRY;
use wirespeed_service::policy::{password, Shares};
use wirespeed_service::storage::changes::{Change, ChangeKind, Event, FileId, Subscription};
use wirespeed_service::{Access, LocalStorage, Rights, ServiceConfig, UploadsConfig, Users};

const RULES: &str = r#"
[paths."/"]
"*" = "r"
[paths."/alice"]
alice = "rwd"
[paths."/drop"]
"*" = "w"
"#;
const TOKEN: &str = "tok-2718";
const KEY: [u8; 32] = [4; 32];

fn basic(user: &str, pw: &str) -> String {
    let raw = format!("{user}:{pw}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// The next change, which the request that made it emitted before it
/// answered: it is there as soon as the answer is.
fn next(sub: &mut Subscription) -> Arc<Change> {
    match sub.try_next() {
        Some(Event::Change(c)) => c,
        other => panic!("expected a change, got {other:?}"),
    }
}

#[test]
fn every_front_that_changes_storage_tells_the_stream_who_what_and_where() {
    let dir = wirespeed_testkit::fs::tempdir();
    for d in ["alice", "drop"] {
        std::fs::create_dir(dir.path().join(d)).unwrap();
    }
    let storage = LocalStorage::new(dir.path()).unwrap().with_fsync(false);
    let mut sub = storage.changes().subscribe();
    let text = format!(
        "[users]\nalice = \"{}\"\n{RULES}",
        password::hash(b"alice-pw").unwrap()
    );
    let shares = Arc::new(Shares::new(KEY, DEFAULT_MAX_EXPIRY));
    let cfg = ServiceConfig {
        access: Access::new([TOKEN], false),
        users: Some(Arc::new(Users::from_text("users.toml", &text).unwrap())),
        shares: Some(shares.clone()),
        ..ServiceConfig::default()
    };
    let s = TestServer::with_uploads_on(storage, cfg, UploadsConfig::default());
    let alice = basic("alice", "alice-pw");
    let alice = [("Authorization", alice.as_str())];

    // A new file, then the same name replaced: the identity before is the
    // first file's, after the second's.
    assert_eq!(s.req("PUT", "/alice/a.txt", &alice, b"first").status, 201);
    let c = next(&mut sub);
    assert_eq!(
        (c.kind.clone(), c.path.to_string()),
        (ChangeKind::Created, "/alice/a.txt".into())
    );
    assert_eq!(c.by.as_deref(), Some("alice"));
    assert_eq!(c.before, None);
    let first = c.after.clone().unwrap();
    assert_eq!(first.size, 5);
    assert!(matches!(first.id, Some(FileId::Inode(_))));
    assert_eq!(s.req("PUT", "/alice/a.txt", &alice, b"second!").status, 204);
    let c = next(&mut sub);
    assert_eq!(c.kind, ChangeKind::Replaced);
    assert_eq!(c.before.as_ref(), Some(&first));
    assert_eq!(c.after.as_ref().unwrap().size, 7);

    // Reads change nothing.
    assert_eq!(s.req("GET", "/alice/a.txt", &alice, b"").status, 200);
    assert_eq!(
        s.req("PROPFIND", "/alice/", &[alice[0], ("Depth", "1")], b"")
            .status,
        207
    );
    assert!(sub.try_next().is_none());

    // WebDAV: a move, a new folder, a delete.
    let mv = [alice[0], ("Destination", "/alice/b.txt")];
    assert_eq!(s.req("MOVE", "/alice/a.txt", &mv, b"").status, 201);
    let c = next(&mut sub);
    assert_eq!(
        c.kind,
        ChangeKind::Moved {
            from: wirespeed_service::path::parse_request_path("/alice/a.txt").unwrap()
        }
    );
    assert_eq!(c.path.to_string(), "/alice/b.txt");
    assert_eq!(c.after.as_ref().unwrap().size, 7);
    assert_eq!(s.req("MKCOL", "/alice/d", &alice, b"").status, 201);
    let c = next(&mut sub);
    assert_eq!(
        (c.kind.clone(), c.after.as_ref().map(|v| v.folder)),
        (ChangeKind::Created, Some(true))
    );
    assert_eq!(s.req("DELETE", "/alice/b.txt", &alice, b"").status, 204);
    let c = next(&mut sub);
    assert_eq!(
        (c.kind.clone(), c.path.to_string()),
        (ChangeKind::Deleted, "/alice/b.txt".into())
    );
    assert_eq!(c.before.as_ref().unwrap().size, 7);
    assert_eq!(c.after, None);

    // A tus upload emits once, when it is published.
    let tus = ("Tus-Resumable", "1.0.0");
    let r = s.req(
        "POST",
        "/-/uploads/alice/t.bin",
        &[alice[0], tus, ("Upload-Length", "3")],
        b"",
    );
    assert_eq!(r.status, 201);
    assert!(
        sub.try_next().is_none(),
        "nothing is published before the last byte"
    );
    let loc = r.header("location").unwrap().to_string();
    let patch = [
        alice[0],
        tus,
        ("Content-Type", "application/offset+octet-stream"),
        ("Upload-Offset", "0"),
    ];
    assert_eq!(s.req("PATCH", &loc, &patch, b"abc").status, 204);
    let c = next(&mut sub);
    assert_eq!(
        (c.kind.clone(), c.path.to_string()),
        (ChangeKind::Created, "/alice/t.bin".into())
    );
    assert_eq!(c.by.as_deref(), Some("alice"));

    // The token holder, a link (acting for its minter) and anyone.
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(
        s.req(
            "PUT",
            "/tok.txt",
            &[("Authorization", bearer.as_str())],
            b"t"
        )
        .status,
        201
    );
    assert_eq!(next(&mut sub).by.as_deref(), Some("--token"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (grant, link) = shares
        .mint("/alice/", Rights::WRITE, 600, "alice", now)
        .unwrap();
    assert_eq!(
        s.req("PUT", &format!("/alice/l.txt?share={link}"), &[], b"l")
            .status,
        201
    );
    assert_eq!(
        next(&mut sub).by.as_deref(),
        Some(format!("link {} of alice", grant.id).as_str())
    );
    assert_eq!(s.req("PUT", "/drop/anon.txt", &[], b"a").status, 201);
    assert_eq!(next(&mut sub).by.as_deref(), Some("anyone"));

    // Refused writes change nothing.
    assert_eq!(s.req("PUT", "/alice/no.txt", &[], b"x").status, 401);
    assert_eq!(s.req("DELETE", "/drop/anon.txt", &[], b"").status, 401);
    assert!(sub.try_next().is_none());
}
