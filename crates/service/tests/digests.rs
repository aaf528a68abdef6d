//! Digests on request (RFC 9530 §4): an upload is hashed only when the
//! client asks (`Want-Repr-Digest`) or sends a digest to check, or the server
//! runs with `--digest always`; a computed digest is recorded with the file
//! and answered by GET/HEAD while the file is unchanged — never a stale one.

mod common;

use std::time::Duration;

use common::{bytes, sha256_field, TestServer};
use wirespeed_net::ServerConfig;
use wirespeed_service::storage::digest_store::{DigestStore, SIDECAR_DIR};
use wirespeed_service::{DigestPolicy, ServiceConfig};

const WANT: (&str, &str) = ("Want-Repr-Digest", "sha-256=10");

fn put_asking(s: &TestServer, path: &str, body: &[u8]) -> common::Resp {
    s.req("PUT", path, &[WANT], body)
}

#[test]
fn upload_is_hashed_only_when_asked() {
    let s = TestServer::start();
    let data = bytes(200_000, 1);
    let r = s.put("/plain.bin", &data);
    assert_eq!(r.status, 201);
    assert_eq!(r.header("repr-digest"), None);
    let g = s.get("/plain.bin");
    assert_eq!(g.body, data);
    assert_eq!(
        g.header("repr-digest"),
        None,
        "nothing recorded, nothing answered"
    );

    // A preference of 0 means "not acceptable": still not hashed.
    let r = s.req(
        "PUT",
        "/zero.bin",
        &[("Want-Repr-Digest", "sha-256=0")],
        &data,
    );
    assert_eq!(r.header("repr-digest"), None);

    for (field, value) in [WANT, ("Want-Content-Digest", "sha-512=3, sha-256=1")] {
        let r = s.req("PUT", "/asked.bin", &[(field, value)], &data);
        assert!(matches!(r.status, 201 | 204), "{}", r.text());
        assert_eq!(
            r.header("repr-digest"),
            Some(sha256_field(&data).as_str()),
            "{field}"
        );
    }
    // Sending a digest to verify also hashes (and answers it).
    let r = s.req(
        "PUT",
        "/checked.bin",
        &[("Repr-Digest", &sha256_field(&data))],
        &data,
    );
    assert_eq!(r.status, 201);
    assert_eq!(r.header("repr-digest"), Some(sha256_field(&data).as_str()));
}

#[test]
fn digest_always_hashes_every_upload() {
    let s = TestServer::with(ServiceConfig {
        digest: DigestPolicy::Always,
        ..ServiceConfig::default()
    });
    let r = s.put("/a.txt", b"hello");
    assert_eq!(
        r.header("repr-digest"),
        Some(sha256_field(b"hello").as_str())
    );
    assert_eq!(
        s.get("/a.txt").header("repr-digest"),
        Some(sha256_field(b"hello").as_str())
    );
}

#[test]
fn mismatch_is_refused_and_nothing_is_recorded() {
    let s = TestServer::start();
    let r = s.req(
        "PUT",
        "/m.bin",
        &[("Repr-Digest", &sha256_field(b"other"))],
        b"mine",
    );
    assert_eq!(r.status, 400);
    assert!(!s.root.join("m.bin").exists());
    assert!(s.temp_files().is_empty());
}

/// The recorded digest is answered by GET, HEAD and ranged GETs (it is the
/// digest of the whole representation).
fn recorded_digest_is_served(s: &TestServer) {
    let data = bytes(300_000, 2);
    assert_eq!(put_asking(s, "/r/f.bin", &data).status, 201);
    let want = sha256_field(&data);
    let g = s.get("/r/f.bin");
    assert_eq!(g.body, data);
    assert_eq!(g.header("repr-digest"), Some(want.as_str()));
    let h = s.req("HEAD", "/r/f.bin", &[], b"");
    assert_eq!(h.header("repr-digest"), Some(want.as_str()));
    let p = s.req("GET", "/r/f.bin", &[("Range", "bytes=0-9")], b"");
    assert_eq!(p.status, 206);
    assert_eq!(p.header("repr-digest"), Some(want.as_str()));
}

/// Overwrites and changes on disk behind the server: the old digest is
/// never answered again.
fn no_stale_digest(s: &TestServer) {
    let a = bytes(100_000, 3);
    assert_eq!(put_asking(s, "/s.bin", &a).status, 201);
    assert_eq!(
        s.get("/s.bin").header("repr-digest"),
        Some(sha256_field(&a).as_str())
    );

    // Overwritten through the API without asking: no digest.
    let b = bytes(100_000, 4);
    assert_eq!(s.put("/s.bin", &b).status, 204);
    let g = s.get("/s.bin");
    assert_eq!(g.body, b);
    assert_eq!(g.header("repr-digest"), None);

    // Changed on disk, same size, later mtime (the file keeps its inode).
    assert_eq!(put_asking(s, "/s.bin", &a).status, 204);
    std::thread::sleep(Duration::from_millis(20));
    let mut c = a.clone();
    c[0] ^= 0xff;
    std::fs::OpenOptions::new()
        .write(true)
        .open(s.root.join("s.bin"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, &c))
        .unwrap();
    let g = s.get("/s.bin");
    assert_eq!(g.body, c);
    assert_eq!(
        g.header("repr-digest"),
        None,
        "a file changed on disk loses its digest"
    );

    // Appended to on disk.
    assert_eq!(put_asking(s, "/s.bin", &a).status, 204);
    std::fs::OpenOptions::new()
        .append(true)
        .open(s.root.join("s.bin"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"more"))
        .unwrap();
    assert_eq!(s.get("/s.bin").header("repr-digest"), None);
}

/// GET/HEAD with `Want-Repr-Digest` on a file without a digest computes it,
/// records it and answers it; later requests get it without asking.
fn computed_on_get_when_asked(s: &TestServer) {
    let data = bytes(2_000_000, 5);
    std::fs::write(s.root.join("dropped.bin"), &data).unwrap();
    assert_eq!(s.get("/dropped.bin").header("repr-digest"), None);
    let h = s.req("HEAD", "/dropped.bin", &[WANT], b"");
    assert_eq!(h.header("repr-digest"), Some(sha256_field(&data).as_str()));
    let g = s.get("/dropped.bin");
    assert_eq!(g.body, data);
    assert_eq!(g.header("repr-digest"), Some(sha256_field(&data).as_str()));
}

#[test]
fn digests_recorded_in_xattrs_are_served_and_never_stale() {
    let s = TestServer::start();
    recorded_digest_is_served(&s);
    no_stale_digest(&s);
    computed_on_get_when_asked(&s);
    assert!(!s.root.join(SIDECAR_DIR).exists() || s.names(SIDECAR_DIR).is_empty());
}

/// A filesystem without user extended attributes keeps records in a hidden
/// sidecar folder, with the same rules, and the folder is invisible.
#[test]
fn sidecar_store_where_xattrs_are_missing() {
    let s = TestServer::with_storage(
        |local| local.with_digest_store(DigestStore::Sidecar),
        ServiceConfig::default(),
        ServerConfig::default(),
    );
    recorded_digest_is_served(&s);
    no_stale_digest(&s);
    computed_on_get_when_asked(&s);
    assert!(s.root.join(SIDECAR_DIR).is_dir());
    assert_eq!(s.get(&format!("/{SIDECAR_DIR}/")).status, 404);
    assert_eq!(s.put(&format!("/{SIDECAR_DIR}/x"), b"x").status, 404);
    assert_eq!(
        s.req("DELETE", &format!("/{SIDECAR_DIR}/"), &[], b"")
            .status,
        404
    );
    let listing = s.get("/?format=json").text();
    assert!(!listing.contains(SIDECAR_DIR), "{listing}");
    // Deleting a file removes its record.
    let before = s.names(SIDECAR_DIR).len();
    assert_eq!(s.req("DELETE", "/r/f.bin", &[], b"").status, 204);
    assert_eq!(s.names(SIDECAR_DIR).len(), before - 1);
}

/// A file's recorded digest is answered whatever its size, asked or not
/// (`wirespeed get` verifies what it is sent and does not ask): small files
/// (sent with their head in one write) included.
#[test]
fn recorded_digests_are_answered_unasked_at_every_size() {
    let s = TestServer::start();
    for size in [13, 1000, 64 << 10, (64 << 10) + 1] {
        let data = bytes(size, 6);
        assert_eq!(put_asking(&s, "/f.bin", &data).status, 201, "{size}");
        let field = sha256_field(&data);
        let g = s.get("/f.bin");
        assert_eq!(g.body, data);
        assert_eq!(g.header("repr-digest"), Some(field.as_str()), "{size}");
        let h = s.req("HEAD", "/f.bin", &[], b"");
        assert_eq!(h.header("repr-digest"), Some(field.as_str()), "{size}");
        assert_eq!(s.req("DELETE", "/f.bin", &[], b"").status, 204);
    }
}
