//! `X-OC-Mtime` (the modification time rclone, ownCloud and Nextcloud
//! clients send with an upload): applied to the stored file before it is
//! published, on PUT and on the request completing a resumable upload,
//! answered `X-OC-Mtime: accepted`; a malformed value is a 400 that stores
//! nothing. Files are checked on disk.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use wirespeed_service::{ServiceConfig, UploadsConfig};

const T: u64 = 1_600_000_000; // Sun, 13 Sep 2020 12:26:40 GMT
const T_HTTP: &str = "Sun, 13 Sep 2020 12:26:40 GMT";

fn mtime_secs(path: &std::path::Path) -> u64 {
    std::fs::metadata(path)
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn server() -> TestServer {
    TestServer::with_uploads(ServiceConfig::default(), UploadsConfig::default())
}

#[test]
fn put_applies_x_oc_mtime_and_says_accepted() {
    let s = server();
    let t = T.to_string();
    let r = s.req("PUT", "/d/a.txt", &[("X-OC-Mtime", &t)], b"hello");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("x-oc-mtime"), Some("accepted"));
    assert_eq!(mtime_secs(&s.root.join("d/a.txt")), T);
    let g = s.req("HEAD", "/d/a.txt", &[], b"");
    assert_eq!(g.header("last-modified"), Some(T_HTTP));
    // The listing shows the same time.
    let l = s.req("GET", "/d/?format=json", &[], b"");
    assert!(l.text().contains("2020-09-13T12:26:40"), "{}", l.text());

    // A fraction is accepted and dropped; a replace answers 204.
    let r = s.req(
        "PUT",
        "/d/a.txt",
        &[("X-OC-Mtime", "1600000100.75")],
        b"hello",
    );
    assert_eq!((r.status, r.header("x-oc-mtime")), (204, Some("accepted")));
    assert_eq!(mtime_secs(&s.root.join("d/a.txt")), T + 100);

    // Without the field: the time of the upload, and no claim.
    let before = SystemTime::now() - Duration::from_secs(2);
    let r = s.put("/d/b.txt", b"x");
    assert_eq!((r.status, r.header("x-oc-mtime")), (201, None));
    let m = std::fs::metadata(s.root.join("d/b.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert!(m >= before);
}

#[test]
fn a_malformed_x_oc_mtime_is_400_and_stores_nothing() {
    let s = server();
    for bad in ["yesterday", "-5", "1e9", "0x5f5e1000", "16000000000000", ""] {
        let r = s.req("PUT", "/bad.txt", &[("X-OC-Mtime", bad)], b"data");
        assert_eq!(r.status, 400, "{bad:?}: {}", r.text());
        assert!(r.text().contains("X-OC-Mtime"), "{}", r.text());
        assert!(!s.root.join("bad.txt").exists(), "{bad:?}");
    }
    assert!(s.temp_files().is_empty());
}

/// Two uploads of the same size with the same asked time are different
/// versions: their ETags differ (a cache or `If-Range` must not mix them).
#[test]
fn same_size_same_time_uploads_still_get_new_etags() {
    let s = server();
    let t = T.to_string();
    let a = s.req("PUT", "/v.bin", &[("X-OC-Mtime", &t)], b"AAAA");
    let b = s.req("PUT", "/v.bin", &[("X-OC-Mtime", &t)], b"BBBB");
    let (ea, eb) = (a.header("etag").unwrap(), b.header("etag").unwrap());
    assert_ne!(ea, eb);
    assert_eq!(mtime_secs(&s.root.join("v.bin")), T);
    let r = s.req(
        "GET",
        "/v.bin",
        &[("Range", "bytes=2-"), ("If-Range", ea)],
        b"",
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"BBBB"[..]));
}

/// The digest recorded at commit is bound to the mtime: it must be
/// recorded after the time is set, or it would be stale at once.
#[test]
fn the_recorded_digest_survives_the_applied_time() {
    let s = server();
    let t = T.to_string();
    let r = s.req(
        "PUT",
        "/h.bin",
        &[("X-OC-Mtime", &t), ("Want-Repr-Digest", "sha-256=10")],
        b"digest me",
    );
    assert_eq!(r.status, 201);
    let want = r.header("repr-digest").unwrap().to_string();
    // Not asked: only a recorded digest is answered.
    let h = s.req("HEAD", "/h.bin", &[], b"");
    assert_eq!(h.header("repr-digest"), Some(want.as_str()));
}

#[test]
fn the_request_completing_a_tus_upload_applies_it() {
    let s = server();
    let r = s.req(
        "POST",
        "/-/uploads/t/big.bin",
        &[("Tus-Resumable", "1.0.0"), ("Upload-Length", "10")],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    let patch = |off: &str, body: &[u8], extra: &[(&str, &str)]| {
        let mut h = vec![
            ("Tus-Resumable", "1.0.0"),
            ("Content-Type", "application/offset+octet-stream"),
            ("Upload-Offset", off),
        ];
        h.extend_from_slice(extra);
        s.req("PATCH", &loc, &h, body)
    };
    let t = T.to_string();
    let r = patch("0", b"01234", &[("X-OC-Mtime", &t)]);
    assert_eq!(
        (r.status, r.header("x-oc-mtime")),
        (204, None),
        "not complete yet"
    );
    let r = patch("5", b"56789", &[("X-OC-Mtime", &t)]);
    assert_eq!((r.status, r.header("x-oc-mtime")), (204, Some("accepted")));
    assert_eq!(
        std::fs::read(s.root.join("t/big.bin")).unwrap(),
        b"0123456789"
    );
    assert_eq!(mtime_secs(&s.root.join("t/big.bin")), T);
}

#[test]
fn an_ietf_upload_completed_by_patch_applies_it() {
    let s = server();
    let interop = ("Upload-Draft-Interop-Version", "8");
    let r = s.req(
        "PUT",
        "/i.bin",
        &[interop, ("Upload-Complete", "?0"), ("Upload-Length", "6")],
        b"abc",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    let t = T.to_string();
    let r = s.req(
        "PATCH",
        &loc,
        &[
            interop,
            ("Content-Type", "application/partial-upload"),
            ("Upload-Offset", "3"),
            ("Upload-Complete", "?1"),
            ("X-OC-Mtime", &t),
        ],
        b"def",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("x-oc-mtime"), Some("accepted"));
    assert_eq!(mtime_secs(&s.root.join("i.bin")), T);
    // A malformed value on an append is refused before its body counts.
    let r = s.req(
        "PUT",
        "/j.bin",
        &[interop, ("Upload-Complete", "?1"), ("X-OC-Mtime", "soon")],
        b"x",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(!s.root.join("j.bin").exists());
    // ... and before an upload resource is made for it.
    let partials = std::fs::read_dir(s.root.join(".wirespeed-uploads"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(partials, 0, "a partial upload was left");
}

/// curl, an independent client, sends the field as rclone does.
#[test]
fn curl_upload_with_the_header_keeps_the_time() {
    let s = server();
    let tmp = wirespeed_testkit::fs::tempdir();
    let f = tmp.path().join("c.txt");
    std::fs::write(&f, b"from curl").unwrap();
    let (ok, out) = curl(&[
        "-D",
        "-",
        "-o",
        "/dev/null",
        "-T",
        f.to_str().unwrap(),
        "-H",
        &format!("X-OC-Mtime: {T}"),
        &s.url("/c.txt"),
    ]);
    let out = String::from_utf8_lossy(&out).to_ascii_lowercase();
    assert!(ok && out.contains("x-oc-mtime: accepted"), "{out}");
    assert_eq!(mtime_secs(&s.root.join("c.txt")), T);
}
