//! Small files kept in memory (`storage/local/small_files.rs`): answered
//! from memory from their second request on, and never after a change the
//! kernel made before the request arrived — in place, by rename, through a
//! hard link outside the root, by a folder swapped for a symlink, by a
//! digest recorded, or (within a second) through a shared mmap.

mod common;

use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::symlink;
use std::path::Path;

use common::TestServer;
use wirespeed_net::ServerConfig;
use wirespeed_service::{LocalStorage, ServiceConfig, SMALL_FILE_RECHECK};

/// A server over its root, and the storage handle to look at what is kept.
/// `None` (with a loud message; a failure under `CI=true`) where the
/// filesystem gives no exact cache (no user extended attributes).
fn server(cfg: ServiceConfig) -> Option<(TestServer, LocalStorage)> {
    let mut handle = None;
    let srv = TestServer::with_storage(
        |local| {
            handle = Some(local.clone());
            local
        },
        cfg,
        ServerConfig::default(),
    );
    let storage = handle.expect("storage built");
    if storage.small_files().is_none() {
        let msg = "SKIPPED: no small-file cache here (no user xattrs or no inotify)";
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{msg}");
        eprintln!("{msg}");
        return None;
    }
    Some((srv, storage))
}

fn kept(storage: &LocalStorage) -> usize {
    storage.small_files().map_or(0, |s| s.len())
}

fn write_new(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("next");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn a_small_file_is_kept_from_its_second_request_and_answers_the_same() {
    let Some((srv, storage)) = server(ServiceConfig::default()) else {
        return;
    };
    std::fs::write(srv.root.join("a.txt"), b"hello, world\n").unwrap();
    let first = srv.get("/a.txt");
    assert_eq!(first.body, b"hello, world\n");
    assert_eq!(kept(&storage), 0, "a file asked once is not kept");
    let second = srv.get("/a.txt");
    assert_eq!(kept(&storage), 1);
    let third = srv.get("/a.txt");
    for r in [&second, &third] {
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"hello, world\n");
        for h in ["etag", "last-modified", "content-type", "content-length"] {
            assert_eq!(r.header(h), first.header(h), "{h}");
        }
    }
    // HEAD, a range and a revalidation from memory answer as from disk.
    let head = srv.req("HEAD", "/a.txt", &[], b"");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(head.header("content-length"), Some("13"));
    let part = srv.req("GET", "/a.txt", &[("Range", "bytes=7-11")], b"");
    assert_eq!(part.status, 206);
    assert_eq!(part.body, b"world");
    assert_eq!(part.header("content-range"), Some("bytes 7-11/13"));
    let etag = third.header("etag").unwrap().to_string();
    let same = srv.req("GET", "/a.txt", &[("If-None-Match", &etag)], b"");
    assert_eq!(same.status, 304);
    assert_eq!(kept(&storage), 1, "answered from memory throughout");
}

#[test]
fn every_replacement_is_answered_by_the_next_request() {
    let Some((srv, storage)) = server(ServiceConfig::default()) else {
        return;
    };
    let path = srv.root.join("v.txt");
    let mut kept_at_some_point = false;
    for i in 0..200u32 {
        write_new(&path, format!("version {i}").as_bytes());
        // Twice: the second is kept, the next replacement must drop it.
        for _ in 0..2 {
            assert_eq!(srv.get("/v.txt").text(), format!("version {i}"));
        }
        kept_at_some_point |= kept(&storage) == 1;
        // In place, same length, same second: only the event tells.
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f.write_all(b"VERSION").unwrap();
        drop(f);
        assert_eq!(srv.get("/v.txt").text(), format!("VERSION {i}"));
    }
    assert!(kept_at_some_point);
}

#[test]
fn a_write_through_a_hard_link_outside_the_root_is_seen() {
    let Some((srv, storage)) = server(ServiceConfig::default()) else {
        return;
    };
    let inside = srv.root.join("shared.txt");
    std::fs::write(&inside, b"before").unwrap();
    let outside = srv.tmp.path().join("elsewhere.txt");
    std::fs::hard_link(&inside, &outside).unwrap();
    srv.get("/shared.txt");
    assert_eq!(srv.get("/shared.txt").text(), "before");
    assert_eq!(kept(&storage), 1);
    std::fs::write(&outside, b"after!").unwrap();
    assert_eq!(srv.get("/shared.txt").text(), "after!");
}

#[test]
fn a_folder_swapped_for_a_symlink_out_of_the_root_is_refused_not_remembered() {
    let Some((srv, storage)) = server(ServiceConfig::default()) else {
        return;
    };
    std::fs::create_dir(srv.root.join("d")).unwrap();
    std::fs::write(srv.root.join("d/f.txt"), b"inside").unwrap();
    srv.get("/d/f.txt");
    assert_eq!(srv.get("/d/f.txt").text(), "inside");
    assert_eq!(kept(&storage), 1);
    let secret = srv.tmp.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(secret.join("f.txt"), b"secret").unwrap();
    std::fs::rename(srv.root.join("d"), srv.root.join("d.old")).unwrap();
    symlink(&secret, srv.root.join("d")).unwrap();
    for _ in 0..3 {
        let r = srv.get("/d/f.txt");
        assert_eq!(r.status, 403, "{}", r.text());
        assert!(!r.text().contains("inside") && !r.text().contains("secret"));
    }
    assert_eq!(kept(&storage), 0, "paths through symlinks are never kept");
    // The moved folder's file is found under its new name only.
    assert_eq!(srv.get("/d.old/f.txt").text(), "inside");
}

#[test]
fn a_deleted_file_is_gone_at_once() {
    let Some((srv, storage)) = server(ServiceConfig::default()) else {
        return;
    };
    std::fs::write(srv.root.join("gone.txt"), b"here").unwrap();
    srv.get("/gone.txt");
    srv.get("/gone.txt");
    assert_eq!(kept(&storage), 1);
    std::fs::remove_file(srv.root.join("gone.txt")).unwrap();
    assert_eq!(srv.get("/gone.txt").status, 404);
}

#[test]
fn a_digest_recorded_after_the_file_was_kept_is_answered() {
    let Some((srv, storage)) = server(ServiceConfig::default()) else {
        return;
    };
    let body = b"digest me";
    std::fs::write(srv.root.join("d.txt"), body).unwrap();
    srv.get("/d.txt");
    let plain = srv.get("/d.txt");
    assert_eq!(kept(&storage), 1);
    assert_eq!(plain.header("repr-digest"), None, "none recorded yet");
    let asked = srv.req("GET", "/d.txt", &[("Want-Repr-Digest", "sha-256=10")], b"");
    let want = common::sha256_field(body);
    assert_eq!(asked.header("repr-digest"), Some(want.as_str()));
    // Recorded as an extended attribute: an event that drops the kept copy,
    // so the next plain GET reads the record.
    srv.get("/d.txt");
    let after = srv.get("/d.txt");
    assert_eq!(after.header("repr-digest"), Some(want.as_str()));
}

#[test]
fn a_write_through_a_shared_mmap_is_seen_within_the_recheck() {
    let Some((srv, storage)) = server(ServiceConfig::default()) else {
        return;
    };
    if std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_err()
    {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "python3 missing"
        );
        eprintln!("SKIPPED: python3 missing");
        return;
    }
    let path = srv.root.join("m.txt");
    std::fs::write(&path, b"mapped").unwrap();
    // The mtime must move: the file was written in an earlier clock tick.
    std::thread::sleep(std::time::Duration::from_millis(20));
    srv.get("/m.txt");
    assert_eq!(srv.get("/m.txt").text(), "mapped");
    assert_eq!(kept(&storage), 1);
    let st = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import mmap,sys\n\
             f=open(sys.argv[1],'r+b')\n\
             m=mmap.mmap(f.fileno(),0)\n\
             m[0:6]=b'MAPPED'\n\
             m.close()\n",
        )
        .arg(&path)
        .status()
        .unwrap();
    assert!(st.success());
    std::thread::sleep(SMALL_FILE_RECHECK + std::time::Duration::from_millis(300));
    assert_eq!(srv.get("/m.txt").text(), "MAPPED");
}
