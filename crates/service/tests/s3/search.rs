//! `--search` on S3: the index is fed from the bucket's listings (a walk at
//! start and at each rescan) and from this server's own change stream;
//! each result is judged by the same rights code as on a folder.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wirespeed_service::policy::hidden::Hidden;
use wirespeed_service::search::StorageSource;
use wirespeed_service::search_index::{NameQuery, Search, Settings};
use wirespeed_service::ServiceConfig;
use wirespeed_testkit::minio::Minio;

use super::{s3_storage, TestServer};

#[test]
fn search_on_s3_follows_listings_and_the_servers_writes() {
    let Some(m) = Minio::start() else { return };
    m.create_bucket("found");
    // Another node on the bucket wrote before this one started.
    let other = TestServer::on_storage(s3_storage(&m, "found", "p"), ServiceConfig::default());
    assert_eq!(
        other.put("/docs/early-report.txt", b"alpha words").status,
        201
    );
    assert_eq!(other.put("/.git/hidden-report", b"x").status, 201);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let db = state.path().join("bucket.db");
    let storage = s3_storage(&m, "found", "p");
    let open = |walk: bool| {
        let mut settings = Settings::new(PathBuf::new(), db.clone());
        settings.walk_at_start = walk;
        let source = StorageSource::new(storage.clone(), rt.handle().clone());
        Arc::new(Search::open_with(settings, Box::new(source)).unwrap())
    };
    let search = open(true);
    let cfg = ServiceConfig {
        search: Some(search.clone()),
        hidden: Hidden::new([".git/"]).unwrap(),
        ..ServiceConfig::default()
    };
    let s = TestServer::on_storage(storage.clone(), cfg);
    assert!(search.walk_and_wait(Duration::from_secs(10)));
    let q = "/?q=report&format=json";
    // From the listing; the hidden folder's name never.
    assert_eq!(s.found(q, &[]).1, ["/docs/early-report.txt"]);
    s.finds_within_2s(
        "/?q=alph&content=1&format=json",
        &["/docs/early-report.txt"],
    );
    // Through this server: its change stream, at once.
    assert_eq!(s.put("/docs/new-report.txt", b"beta").status, 201);
    s.finds_within_2s(q, &["/docs/early-report.txt", "/docs/new-report.txt"]);
    assert_eq!(
        s.req("DELETE", "/docs/early-report.txt", &[], b"").status,
        204
    );
    s.finds_within_2s(q, &["/docs/new-report.txt"]);
    // Through the other node: at the next listing.
    assert_eq!(other.put("/late-report.txt", b"x").status, 201);
    assert!(search.walk_and_wait(Duration::from_secs(10)));
    assert_eq!(
        s.found(q, &[]).1,
        ["/docs/new-report.txt", "/late-report.txt"]
    );
    // A restart answers from the stored index before any listing.
    drop(s);
    drop(search);
    let again = open(false);
    let q = NameQuery::parse("report").unwrap();
    let mut kept: Vec<String> = again
        .names("", &q, 0, 10)
        .unwrap()
        .into_iter()
        .map(|h| h.path)
        .collect();
    kept.sort();
    assert_eq!(
        kept,
        [
            ".git/hidden-report",
            "docs/new-report.txt",
            "late-report.txt"
        ]
    );
}
