//! Search (`GET /PATH/?q=`) over the index following the change stream and
//! the host: names made, moved and removed through the server or behind
//! its back show up or go within 2 s; results never hold a hidden name, a
//! name outside a principal's rights or outside a share link's folder;
//! words inside text files; pages with a continuation.

use std::sync::Arc;
use std::time::Duration;

use wirespeed_service::policy::shares::DEFAULT_MAX_EXPIRY;
use wirespeed_service::policy::{hidden::Hidden, password, Shares};
use wirespeed_service::{Access, Rights, ServiceConfig, Users};

use super::{basic, TOKEN};
use crate::common::TestServer;

#[test]
fn the_index_follows_changes_through_the_server_and_on_the_host() {
    let (s, search) = TestServer::with_search(ServiceConfig::default());
    assert!(search.walk_and_wait(Duration::from_secs(10)));
    let q = "/?q=report&format=json";
    // Through the server: PUT, a WebDAV MOVE, MKCOL, DELETE.
    assert_eq!(s.put("/q1-report.txt", b"alpha beta").status, 201);
    s.finds_within_2s(q, &["/q1-report.txt"]);
    assert_eq!(s.req("MKCOL", "/dir", &[], b"").status, 201);
    let mv = [("Destination", "/dir/q2-report.txt")];
    assert_eq!(s.req("MOVE", "/q1-report.txt", &mv, b"").status, 201);
    s.finds_within_2s(q, &["/dir/q2-report.txt"]);
    assert_eq!(s.req("DELETE", "/dir/q2-report.txt", &[], b"").status, 204);
    s.finds_within_2s(q, &[]);
    // On the host: created, renamed, deleted.
    std::fs::create_dir_all(s.root.join("host/deep")).unwrap();
    std::fs::write(s.root.join("host/deep/h-report.md"), "gamma").unwrap();
    s.finds_within_2s(q, &["/host/deep/h-report.md"]);
    std::fs::rename(s.root.join("host"), s.root.join("moved")).unwrap();
    s.finds_within_2s(q, &["/moved/deep/h-report.md"]);
    // Only below the folder asked.
    s.finds_within_2s(
        "/moved/deep/?q=report&format=json",
        &["/moved/deep/h-report.md"],
    );
    s.finds_within_2s("/dir/?q=report&format=json", &[]);
    std::fs::remove_file(s.root.join("moved/deep/h-report.md")).unwrap();
    s.finds_within_2s(q, &[]);
    // Words inside text files (the last one a prefix, as typed).
    assert_eq!(s.put("/notes.txt", b"the quick brown fox").status, 201);
    s.finds_within_2s("/?q=quick%20bro&content=1&format=json", &["/notes.txt"]);
}

#[test]
fn results_keep_to_rights_hidden_names_and_a_links_folder() {
    let text = format!(
        "[users]\nalice = \"{}\"\n\
         [paths.\"/\"]\n\"*\" = \"r\"\n\
         [paths.\"/alice\"]\nalice = \"rwd\"\n",
        password::hash(b"alice-pw").unwrap()
    );
    let shares = Arc::new(Shares::new([9; 32], DEFAULT_MAX_EXPIRY));
    let cfg = ServiceConfig {
        access: Access::new([TOKEN], false),
        users: Some(Arc::new(Users::from_text("users.toml", &text).unwrap())),
        shares: Some(shares.clone()),
        hidden: Hidden::new([".git/", "secret*"]).unwrap(),
        ..ServiceConfig::default()
    };
    let (s, search) = TestServer::with_search(cfg);
    for d in ["pub", "alice/sub", "alice/other", ".git"] {
        std::fs::create_dir_all(s.root.join(d)).unwrap();
    }
    for f in [
        "pub/report.txt",
        "alice/report.txt",
        "alice/sub/report.txt",
        "alice/other/report.txt",
        ".git/report",
        "pub/secret-report.txt",
    ] {
        std::fs::write(s.root.join(f), "x").unwrap();
    }
    assert!(search.walk_and_wait(Duration::from_secs(10)));
    let q = "?q=report&format=json";
    // Anyone: not a name in alice's folder, never a hidden one.
    assert_eq!(s.found(&format!("/{q}"), &[]).1, ["/pub/report.txt"]);
    // Alice: her folder too; hidden names still not.
    let alice = basic("alice", "alice-pw");
    let as_alice = [("Authorization", alice.as_str())];
    assert_eq!(
        s.found(&format!("/{q}"), &as_alice).1,
        [
            "/alice/other/report.txt",
            "/alice/report.txt",
            "/alice/sub/report.txt",
            "/pub/report.txt"
        ]
    );
    // Asked below a folder the principal may not read: refused, no names.
    assert_eq!(s.found(&format!("/alice/{q}"), &[]).0, 401);
    // A link: its folder only, and nothing when asked above it.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (_, link) = shares
        .mint("/alice/sub/", Rights::READ, 600, "alice", now)
        .unwrap();
    assert_eq!(
        s.found(&format!("/alice/sub/{q}&share={link}"), &[]).1,
        ["/alice/sub/report.txt"]
    );
    assert_eq!(s.found(&format!("/alice/{q}&share={link}"), &[]).0, 404);
    assert_eq!(
        s.found(&format!("/{q}&share={link}"), &[]).1,
        Vec::<String>::new(),
        "a link's holder sees nothing outside its folder, public or not"
    );
}

#[test]
fn pages_are_bounded_and_continue() {
    let (s, search) = TestServer::with_search(ServiceConfig::default());
    for i in 0..25 {
        std::fs::write(s.root.join(format!("page-{i:02}.log")), "x").unwrap();
    }
    assert!(search.walk_and_wait(Duration::from_secs(10)));
    let mut url = "/?q=page-&format=json&limit=10".to_string();
    let mut all = Vec::new();
    let mut pages = 0;
    loop {
        let r = s.get(&url);
        assert_eq!(r.status, 200);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let entries = v["entries"].as_array().unwrap();
        assert!(entries.len() <= 10);
        all.extend(
            entries
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_string()),
        );
        pages += 1;
        match v["next"].as_str() {
            Some(next) => url = format!("{next}&format=json"),
            None => break,
        }
    }
    all.sort();
    let want: Vec<String> = (0..25).map(|i| format!("page-{i:02}.log")).collect();
    assert_eq!((all, pages), (want, 3));
    // HTML by default: the listing's rows, each with its path.
    let r = s.get("/?q=page-01");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<a href=\"page-01.log\">page-01.log</a>"));
    // Without the index a `?q=` is an ordinary listing.
    let plain = TestServer::start();
    assert_eq!(
        plain
            .get("/?q=x&format=json")
            .text()
            .trim_start()
            .chars()
            .next(),
        Some('[')
    );
}
