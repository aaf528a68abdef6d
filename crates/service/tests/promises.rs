//! The server keeps the promises its start line makes: one policy decides
//! every route (no replacing without the delete right, whatever the
//! protocol, also when the name appears during a resumable upload), digests
//! on request cost a bounded amount of work and never write on a read-only
//! server, one address cannot fill the partial uploads, a stalled listing
//! holds no budget others need, and smaller promises (conditions, digests
//! and refusals on resumable routes; one file mode for every protocol).
//! Files are checked on disk.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use base64::Engine as _;
use common::*;
use sha2::Digest as _;
use wirespeed_net::ServerConfig;
use wirespeed_service::storage::digest_store::{DigestStore, SIDECAR_DIR};
use wirespeed_service::{Access, ServiceConfig, UploadsConfig, Writes};

const TUS: (&str, &str) = ("Tus-Resumable", "1.0.0");
const OCTETS: (&str, &str) = ("Content-Type", "application/offset+octet-stream");
const PARTIAL: (&str, &str) = ("Content-Type", "application/partial-upload");
const INTEROP: (&str, &str) = ("Upload-Draft-Interop-Version", "8");
const WANT: (&str, &str) = ("Want-Repr-Digest", "sha-256=10");

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn sha256_field(data: &[u8]) -> String {
    format!("sha-256=:{}:", b64(&sha2::Sha256::digest(data)))
}

/// `--allow-upload` without `--allow-delete`, with resumable uploads.
fn upload_only() -> TestServer {
    let cfg = ServiceConfig {
        writes: Writes::exposed(true, false),
        ..ServiceConfig::default()
    };
    TestServer::with_uploads(cfg, UploadsConfig::default())
}

fn open_server() -> TestServer {
    TestServer::with_uploads(ServiceConfig::default(), UploadsConfig::default())
}

fn form_body(name: &str, data: &[u8]) -> Vec<u8> {
    let mut b = format!(
        "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    b.extend_from_slice(data);
    b.extend_from_slice(b"\r\n--XyZ--\r\n");
    b
}

const FORM: (&str, &str) = ("Content-Type", "multipart/form-data; boundary=XyZ");

fn assert_refused_replace(r: &Resp, what: &str) {
    assert_eq!(r.status, 403, "{what}: {}", r.text());
    let text = r.text();
    assert!(
        text.contains("--allow-delete") && text.contains("replac"),
        "{what}: {text}"
    );
}

// ---- one policy ------------------------------------------------------------

/// The audit's reproduction: an empty PUT emptied `precious.txt` on a
/// server that printed "deletes refused". Every route that writes a name
/// now asks the same policy: without `d` an upload only creates.
#[test]
fn upload_without_delete_never_replaces_a_file_by_any_route() {
    let srv = upload_only();
    let precious = srv.root.join("precious.txt");
    std::fs::write(&precious, b"keep me").unwrap();
    let kept = || assert_eq!(std::fs::read(&precious).unwrap(), b"keep me");

    assert_refused_replace(&srv.put("/precious.txt", b""), "PUT");
    kept();
    let r = srv.req("POST", "/", &[FORM], &form_body("precious.txt", b"evil"));
    assert_eq!(r.status, 403, "form POST: {}", r.text());
    assert!(r.text().contains("--allow-delete"), "{}", r.text());
    kept();
    let json = format!("{{\"data\":\"{}\"}}", b64(b"evil"));
    let r = srv.req(
        "POST",
        "/precious.txt?field=data",
        &[("Content-Type", "application/json")],
        json.as_bytes(),
    );
    assert_refused_replace(&r, "JSON POST");
    kept();
    let r = srv.req(
        "PUT",
        "/precious.txt",
        &[INTEROP, ("Upload-Complete", "?1")],
        b"evil",
    );
    assert_refused_replace(&r, "IETF creation");
    kept();
    let r = srv.req(
        "POST",
        "/-/uploads/precious.txt",
        &[TUS, ("Upload-Length", "4")],
        b"",
    );
    assert_refused_replace(&r, "tus creation");
    kept();
    assert_eq!(srv.req("DELETE", "/precious.txt", &[], b"").status, 403);
    let r = srv.req(
        "MOVE",
        "/precious.txt",
        &[("Destination", "/moved.txt")],
        b"",
    );
    assert_eq!(r.status, 403, "{}", r.text());
    kept();
    assert!(
        srv.names("").iter().all(|n| n == "precious.txt"),
        "{:?}",
        srv.names("")
    );

    // New names are still taken, by every route.
    assert_eq!(srv.put("/new.txt", b"hi").status, 201);
    let r = srv.req("POST", "/", &[FORM], &form_body("form.txt", b"f"));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = srv.req(
        "PUT",
        "/ietf.txt",
        &[INTEROP, ("Upload-Complete", "?1")],
        b"i",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(std::fs::read(srv.root.join("ietf.txt")).unwrap(), b"i");
}

/// A name that appears between a resumable upload's creation and its last
/// byte is not replaced either: the check runs again at publication.
#[test]
fn a_name_appearing_during_a_resumable_upload_is_not_replaced_without_delete() {
    let srv = upload_only();
    let meta = format!("filename {}", b64(b"late.txt"));
    let r = srv.req(
        "POST",
        "/-/uploads/",
        &[TUS, ("Upload-Length", "5"), ("Upload-Metadata", &meta)],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    std::fs::write(srv.root.join("late.txt"), b"first").unwrap();
    let r = srv.req(
        "PATCH",
        &loc,
        &[TUS, OCTETS, ("Upload-Offset", "0")],
        b"evil!",
    );
    assert_refused_replace(&r, "tus completion");
    assert_eq!(std::fs::read(srv.root.join("late.txt")).unwrap(), b"first");

    let r = srv.req(
        "PUT",
        "/late2.txt",
        &[INTEROP, ("Upload-Complete", "?0")],
        b"ev",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    std::fs::write(srv.root.join("late2.txt"), b"first").unwrap();
    let r = srv.req(
        "PATCH",
        &loc,
        &[
            INTEROP,
            PARTIAL,
            ("Upload-Offset", "2"),
            ("Upload-Complete", "?1"),
        ],
        b"il",
    );
    assert_refused_replace(&r, "IETF completion");
    assert_eq!(std::fs::read(srv.root.join("late2.txt")).unwrap(), b"first");
}

// ---- digests on request ----------------------------------------------------

/// A read-only server writes nothing, not even a digest record, and does
/// not hash for readers (the audit: 40 requests, 13.7 CPU-seconds).
#[test]
fn a_read_only_server_never_hashes_for_readers_nor_records() {
    let cfg = ServiceConfig {
        writes: Writes::read_only(),
        ..ServiceConfig::default()
    };
    let srv = TestServer::with_storage(
        |local| local.with_digest_store(DigestStore::Sidecar),
        cfg,
        ServerConfig::default(),
    );
    let data = bytes(1_000_000, 6);
    std::fs::write(srv.root.join("big.bin"), &data).unwrap();
    for method in ["GET", "HEAD"] {
        let r = srv.req(method, "/big.bin", &[WANT], b"");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("repr-digest"), None, "{method}");
    }
    assert!(
        !srv.root.join(SIDECAR_DIR).exists(),
        "a read-only server recorded a digest"
    );
}

/// On a writable server concurrent asks for one file share a hash and
/// all get the same (right) digest; it is then recorded.
#[test]
fn concurrent_digest_requests_all_get_the_digest() {
    let srv = std::sync::Arc::new(open_server());
    let data = bytes(4_000_000, 7);
    std::fs::write(srv.root.join("f.bin"), &data).unwrap();
    let want = sha256_field(&data);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let srv = srv.clone();
            std::thread::spawn(move || srv.req("HEAD", "/f.bin", &[WANT], b""))
        })
        .collect();
    let mut with = 0;
    for t in threads {
        let r = t.join().unwrap();
        assert_eq!(r.status, 200);
        // Over the cap a request is answered without the digest.
        if let Some(d) = r.header("repr-digest") {
            assert_eq!(d, want);
            with += 1;
        }
    }
    assert!(with >= 1);
    assert_eq!(srv.get("/f.bin").header("repr-digest"), Some(want.as_str()));
}

// ---- partial uploads per address -------------------------------------------

/// One address holds at most `max_partials_per_client` unfinished uploads:
/// a flood of empty creations cannot fill `max_partials` for everyone.
#[test]
fn one_address_cannot_fill_the_partial_uploads() {
    let ucfg = UploadsConfig {
        max_partials: 20,
        max_partials_per_client: 5,
        ..UploadsConfig::default()
    };
    let srv = TestServer::with_uploads(ServiceConfig::default(), ucfg);
    for i in 0..5 {
        let r = srv.req(
            "POST",
            &format!("/-/uploads/e{i}.bin"),
            &[TUS, ("Upload-Length", "10")],
            b"",
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = srv.req(
        "POST",
        "/-/uploads/e5.bin",
        &[TUS, ("Upload-Length", "10")],
        b"",
    );
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("per client"), "{}", r.text());
    assert!(r.header("retry-after").is_some());
    // Finishing one frees its place.
    let loc = {
        let r = srv.req(
            "POST",
            "/-/uploads/done.bin",
            &[TUS, ("Upload-Length", "0")],
            b"",
        );
        assert_eq!(r.status, 503, "still full: {}", r.text());
        let list = srv.names(".wirespeed-uploads");
        let id = list
            .iter()
            .find(|n| n.ends_with(".part"))
            .unwrap()
            .trim_end_matches(".part")
            .to_string();
        format!("/-/uploads/{id}")
    };
    let r = srv.req("DELETE", &loc, &[TUS], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    let r = srv.req(
        "POST",
        "/-/uploads/e6.bin",
        &[TUS, ("Upload-Length", "10")],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

/// Creations that never receive a byte expire after `empty_expiry_secs`,
/// not after the upload lifetime: a full store makes room from them.
#[test]
fn empty_creations_expire_fast() {
    let ucfg = UploadsConfig {
        max_partials: 3,
        empty_expiry_secs: 1,
        ..UploadsConfig::default()
    };
    let srv = TestServer::with_uploads(ServiceConfig::default(), ucfg);
    for i in 0..3 {
        let r = srv.req(
            "POST",
            &format!("/-/uploads/e{i}.bin"),
            &[TUS, ("Upload-Length", "10")],
            b"",
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let create = || {
        srv.req(
            "POST",
            "/-/uploads/real.bin",
            &[TUS, ("Upload-Length", "10")],
            b"",
        )
    };
    assert_eq!(create().status, 503);
    // Expired after about 1 s (the sweep runs every second); polled rather
    // than slept, so a loaded machine cannot fail it. The upload lifetime
    // (24 h) is far beyond the 15 s allowed here.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let mut r = create();
    while r.status != 201 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        r = create();
    }
    assert_eq!(r.status, 201, "{}", r.text());
}

// ---- stalled listings ------------------------------------------------------

/// Readers that stop reading a big listing hold no budget other listings
/// need: a normal big listing afterwards is answered, whole and sorted
/// (246-byte names fill a listing pass's 3 MiB about every 12,000, so the
/// folder takes four passes).
#[test]
fn stalled_listings_do_not_refuse_other_big_listings() {
    let srv = TestServer::start();
    let dir = srv.root.join("big");
    std::fs::create_dir(&dir).unwrap();
    let n = 40_000;
    let pad = "n".repeat(240);
    for i in (0..n).rev() {
        std::fs::File::create(dir.join(format!("{pad}{i:06}"))).unwrap();
    }
    // Four connections ask for the listing and never read the answer.
    let stalled: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(srv.addr).unwrap();
            s.write_all(b"GET /big/?format=json HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(b"GET /big/?format=json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let r = Resp::parse(&raw, false);
    assert_eq!(
        r.status,
        200,
        "{}",
        String::from_utf8_lossy(&r.body[..r.body.len().min(300)])
    );
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let names: Vec<&str> = v["entries"]
        .as_array()
        .or_else(|| v.as_array())
        .expect("a JSON listing")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), n);
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
    drop(stalled);
}

// ---- smaller promises ------------------------------------------------------

/// An IETF upload created with `If-None-Match: *` keeps the condition until
/// the PATCH that completes it.
#[test]
fn if_none_match_star_holds_until_a_later_patch_completes() {
    let srv = open_server();
    let r = srv.req(
        "PUT",
        "/inm.txt",
        &[INTEROP, ("Upload-Complete", "?0"), ("If-None-Match", "*")],
        b"ab",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    std::fs::write(srv.root.join("inm.txt"), b"theirs").unwrap();
    let r = srv.req(
        "PATCH",
        &loc,
        &[
            INTEROP,
            PARTIAL,
            ("Upload-Offset", "2"),
            ("Upload-Complete", "?1"),
        ],
        b"cd",
    );
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(std::fs::read(srv.root.join("inm.txt")).unwrap(), b"theirs");
}

/// `Repr-Digest` and `Content-Digest` are checked on the resumable routes
/// as on a PUT: a corrupted body never replaces a file.
#[test]
fn resumable_uploads_check_announced_digests() {
    let srv = open_server();
    std::fs::write(srv.root.join("d.bin"), b"original").unwrap();
    let wrong = sha256_field(b"something else");
    let r = srv.req(
        "PUT",
        "/d.bin",
        &[INTEROP, ("Upload-Complete", "?1"), ("Repr-Digest", &wrong)],
        b"corrupted",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(std::fs::read(srv.root.join("d.bin")).unwrap(), b"original");
    let r = srv.req(
        "PUT",
        "/d.bin",
        &[
            INTEROP,
            ("Upload-Complete", "?1"),
            ("Content-Digest", &wrong),
        ],
        b"corrupted",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(std::fs::read(srv.root.join("d.bin")).unwrap(), b"original");

    // Across two requests: the Repr-Digest of the creation covers the whole.
    let r = srv.req(
        "PUT",
        "/d.bin",
        &[
            INTEROP,
            ("Upload-Complete", "?0"),
            ("Repr-Digest", &sha256_field(b"abcd")),
        ],
        b"ab",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    let r = srv.req(
        "PATCH",
        &loc,
        &[
            INTEROP,
            PARTIAL,
            ("Upload-Offset", "2"),
            ("Upload-Complete", "?1"),
        ],
        b"XX",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(std::fs::read(srv.root.join("d.bin")).unwrap(), b"original");

    // The right digests publish.
    let meta = format!("filename {}", b64(b"d.bin"));
    let right = sha256_field(b"good");
    let r = srv.req(
        "POST",
        "/-/uploads/",
        &[
            TUS,
            ("Upload-Length", "4"),
            ("Upload-Metadata", &meta),
            ("Repr-Digest", &right),
        ],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    let r = srv.req(
        "PATCH",
        &loc,
        &[
            TUS,
            OCTETS,
            ("Upload-Offset", "0"),
            ("Content-Digest", &right),
        ],
        b"good",
    );
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(std::fs::read(srv.root.join("d.bin")).unwrap(), b"good");
}

/// A tus upload named `-` in the root, and a resumable upload below a
/// file, are refused at creation (they used to fail only after the last
/// byte: a 500 on every PATCH, or bytes thrown away).
#[test]
fn unpublishable_resumable_targets_are_refused_at_creation() {
    let srv = open_server();
    let meta = format!("filename {}", b64(b"-"));
    let r = srv.req(
        "POST",
        "/-/uploads/",
        &[TUS, ("Upload-Length", "1"), ("Upload-Metadata", &meta)],
        b"",
    );
    assert!(
        r.status == 400 || r.status == 404,
        "{} {}",
        r.status,
        r.text()
    );
    std::fs::write(srv.root.join("afile.txt"), b"file").unwrap();
    let r = srv.req(
        "PUT",
        "/afile.txt/x",
        &[INTEROP, ("Upload-Complete", "?1")],
        b"bytes",
    );
    assert_eq!(r.status, 409, "{}", r.text());
    let r = srv.req(
        "POST",
        "/-/uploads/afile.txt/x",
        &[TUS, ("Upload-Length", "5")],
        b"",
    );
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(std::fs::read(srv.root.join("afile.txt")).unwrap(), b"file");
    let left: Vec<_> = srv
        .names(".wirespeed-uploads")
        .into_iter()
        .filter(|n| !n.starts_with(".wirespeed-tmp-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `OPTIONS` tells what the server takes: on `--private` only to a token
/// holder.
#[test]
fn options_needs_the_token_on_a_private_server() {
    let cfg = ServiceConfig {
        access: Access::new(["s3cret"], true),
        ..ServiceConfig::default()
    };
    let srv = TestServer::with_uploads(cfg, UploadsConfig::default());
    for path in ["/-/uploads/", "/a.txt"] {
        let r = srv.req("OPTIONS", path, &[], b"");
        assert_eq!(r.status, 401, "{path}");
        assert!(r.header("upload-limit").is_none());
        let r = srv.req("OPTIONS", path, &[("Authorization", "Bearer s3cret")], b"");
        assert_eq!(r.status, 204, "{path}");
    }
}

/// Reserved `.wirespeed-` names are reserved in any case (on a
/// case-insensitive filesystem `.WIRESPEED-uploads` is the uploads folder).
#[test]
fn reserved_names_are_matched_in_any_case() {
    let srv = open_server();
    for path in [
        "/.WIRESPEED-uploads/x",
        "/.Wirespeed-tmp-1",
        "/a/.wIrEsPeEd-digests",
    ] {
        let r = srv.put(path, b"x");
        assert!(!(200..300).contains(&r.status), "{path}: {}", r.status);
    }
    assert!(srv.names("").is_empty(), "{:?}", srv.names(""));
}

/// MOVE never replaces a symlink that leads out of the root.
#[test]
fn move_never_replaces_a_symlink_leading_out() {
    let srv = open_server();
    let outside = srv.tmp.path().join("outside.txt");
    std::fs::write(&outside, b"outside").unwrap();
    std::os::unix::fs::symlink(&outside, srv.root.join("link")).unwrap();
    std::fs::write(srv.root.join("a.txt"), b"a").unwrap();
    let r = srv.req("MOVE", "/a.txt", &[("Destination", "/link")], b"");
    assert_eq!(r.status, 403, "{}", r.text());
    let link = std::fs::symlink_metadata(srv.root.join("link")).unwrap();
    assert!(link.file_type().is_symlink());
    assert_eq!(std::fs::read(&outside).unwrap(), b"outside");
    assert_eq!(std::fs::read(srv.root.join("a.txt")).unwrap(), b"a");
}

/// Error bodies are never sniffed, from any layer.
#[test]
fn error_bodies_carry_nosniff() {
    let srv = open_server();
    let r = srv.get("/missing.txt");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let r = srv.req("PATCH", "/-/uploads/0123", &[TUS], b"");
    assert!(r.status >= 400);
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let r = srv.raw(
        b"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: z\r\n\r\n",
        false,
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
}

/// The page runs only its own script tag, marked with a nonce fresh on
/// every page: not an uploaded `.js` (as `'self'` would), and whatever
/// name the browser used (a proxy may rewrite `Host`: a source naming the
/// requested host blocked the script there). The locked page too.
#[test]
fn the_page_runs_only_its_own_script_under_any_host() {
    let srv = open_server();
    let nonce_of = |r: &common::Resp| {
        let csp = r.header("content-security-policy").unwrap().to_string();
        assert!(
            !csp.contains("script-src 'self'") && !csp.contains("upstream"),
            "{csp}"
        );
        let nonce = csp
            .split("script-src 'nonce-")
            .nth(1)
            .and_then(|rest| rest.split('\'').next())
            .unwrap_or_else(|| panic!("a nonce: {csp}"))
            .to_string();
        assert!(nonce.len() >= 22, "{nonce}");
        let tag = format!(" nonce=\"{nonce}\" defer></script>");
        assert!(
            r.text().contains(&tag),
            "the script tag carries it: {}",
            r.text()
        );
        assert!(
            r.text().contains("/-/assets/"),
            "the script is the page's own"
        );
        nonce
    };
    let get = |host: &str| {
        let raw = format!(
            "GET / HTTP/1.1\r\nHost: {host}\r\nAccept: text/html\r\nConnection: close\r\n\r\n"
        );
        let r = srv.raw(raw.as_bytes(), false);
        assert_eq!(r.status, 200, "{}", r.text());
        r
    };
    let a = nonce_of(&get("upstream:8080"));
    let b = nonce_of(&get("upstream:8080"));
    assert_ne!(a, b, "a fresh nonce per page");
    let private = TestServer::with(ServiceConfig {
        access: Access::new(["s3cret"], true),
        ..ServiceConfig::default()
    });
    let r = private.req("GET", "/", &[("Accept", "text/html")], b"");
    assert_eq!(r.status, 401);
    assert!(r.text().contains("data-locked"), "{}", r.text());
    nonce_of(&r);
}

// ---- one mode --------------------------------------------------------------

fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let v = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .unwrap();
    u32::from_str_radix(v.trim(), 8).unwrap()
}

/// Files arrive with one mode, 0666 less the umask, whatever the protocol
/// (resumable and page uploads were published 0600).
#[test]
fn every_protocol_publishes_files_with_one_mode() {
    let srv = open_server();
    assert_eq!(srv.put("/put.txt", b"p").status, 201);
    let r = srv.req("POST", "/", &[FORM], &form_body("form.txt", b"f"));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = srv.req(
        "PUT",
        "/ietf.txt",
        &[INTEROP, ("Upload-Complete", "?1")],
        b"i",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let meta = format!("filename {}", b64(b"tus.txt"));
    let r = srv.req(
        "POST",
        "/-/uploads/",
        &[
            TUS,
            OCTETS,
            ("Upload-Length", "1"),
            ("Upload-Metadata", &meta),
        ],
        b"t",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let want = 0o666 & !umask();
    for name in ["put.txt", "form.txt", "ietf.txt", "tus.txt"] {
        let mode = std::fs::metadata(srv.root.join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, want, "{name}: {mode:o}");
    }
}
