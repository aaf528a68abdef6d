//! The S3 backend against a real MinIO. Each `*_on_both_backends` test runs
//! one scenario twice, through the same HTTP requests and assertions: once
//! over the local directory backend, once over MinIO. The rest are
//! S3-only: two servers on one bucket, a PUT cut midway, failures that
//! name their cause.
//!
//! MinIO comes from `target/minio/minio` (`.ci/run` builds it) or
//! `$WIRESPEED_MINIO`; without it these tests print a loud SKIPPED and
//! pass, except under `CI=true`, where they fail.

mod common;

use std::io::Write;

use common::*;
use wirespeed_service::{S3Config, S3Storage, ServiceConfig};
use wirespeed_testkit::minio::{Minio, PASSWORD, USER};

fn s3_config(m: &Minio, bucket: &str, prefix: &str) -> S3Config {
    let mut c = S3Config::from_url(&format!("s3://{bucket}/{prefix}")).unwrap();
    c.endpoint = Some(m.endpoint());
    c.region = Some("us-east-1".into());
    c.credentials = Some((USER.into(), PASSWORD.into()));
    c
}

fn s3_storage(m: &Minio, bucket: &str, prefix: &str) -> S3Storage {
    S3Storage::new(&s3_config(m, bucket, prefix)).unwrap()
}

/// Run `scenario` over the local backend, then over a fresh MinIO bucket
/// (prefix `pre`); returns the MinIO for S3-side checks.
fn on_both(cfg: impl Fn() -> ServiceConfig, scenario: impl Fn(&TestServer)) -> Option<Minio> {
    scenario(&TestServer::with(cfg()));
    let m = Minio::start()?;
    m.create_bucket("both");
    let s = TestServer::on_storage(s3_storage(&m, "both", "pre"), cfg());
    scenario(&s);
    Some(m)
}

fn json(r: &Resp) -> serde_json::Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", r.text()))
}

fn names(v: &serde_json::Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `data` in chunked framing, 1 MiB chunks.
fn chunked(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 1024);
    for c in data.chunks(1 << 20) {
        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

#[test]
fn reads_ranges_and_conditionals_on_both_backends() {
    on_both(ServiceConfig::default, |s| {
        let data = bytes(300_000, 7);
        assert_eq!(s.put("/r/data.bin", &data).status, 201);
        let r = s.get("/r/data.bin");
        assert_eq!(r.status, 200);
        assert_eq!(r.body, data);
        let tag = r.header("etag").unwrap().to_string();
        let lm = r.header("last-modified").unwrap().to_string();

        let h = s.req("HEAD", "/r/data.bin", &[], b"");
        assert_eq!(h.status, 200);
        assert_eq!(h.header("content-length"), Some("300000"));
        assert_eq!(h.header("etag"), Some(tag.as_str()));
        assert!(h.body.is_empty());

        let r = s.req("GET", "/r/data.bin", &[("Range", "bytes=1000-1999")], b"");
        assert_eq!(r.status, 206);
        assert_eq!(r.header("content-range"), Some("bytes 1000-1999/300000"));
        assert_eq!(r.body, &data[1000..2000]);
        let r = s.req("GET", "/r/data.bin", &[("Range", "bytes=-10")], b"");
        assert_eq!(r.body, &data[data.len() - 10..]);
        let r = s.req("GET", "/r/data.bin", &[("Range", "bytes=400000-")], b"");
        assert_eq!(r.status, 416);

        let r = s.req("GET", "/r/data.bin", &[("If-None-Match", &tag)], b"");
        assert_eq!(r.status, 304);
        let r = s.req("GET", "/r/data.bin", &[("If-Modified-Since", &lm)], b"");
        assert_eq!(r.status, 304);
        let r = s.req("GET", "/r/data.bin", &[("If-Match", "\"other\"")], b"");
        assert_eq!(r.status, 412);
        // If-Range with a stale tag: the whole file, not the range.
        let r = s.req(
            "GET",
            "/r/data.bin",
            &[("Range", "bytes=0-9"), ("If-Range", "\"stale\"")],
            b"",
        );
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), data.len());

        assert_eq!(s.get("/r/missing.bin").status, 404);
        let r = s.get("/r");
        assert_eq!(r.status, 301);
        assert_eq!(r.header("location"), Some("/r/"));
        assert_eq!(s.get("/r/data.bin/").status, 404);
        // A text file gets its charset from its first bytes.
        assert_eq!(s.put("/r/t.txt", "café\n".as_bytes()).status, 201);
        let r = s.get("/r/t.txt");
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    });
}

#[test]
fn writes_overwrites_and_deletes_on_both_backends() {
    let m = on_both(ServiceConfig::default, |s| {
        assert_eq!(s.put("/w/a.bin", b"first").status, 201);
        let tag1 = s.get("/w/a.bin").header("etag").unwrap().to_string();
        let r = s.put("/w/a.bin", b"second");
        assert_eq!(r.status, 204);
        let r = s.get("/w/a.bin");
        assert_eq!(r.body, b"second");
        let tag2 = r.header("etag").unwrap().to_string();
        assert_ne!(tag1, tag2);

        // Preconditions: create-only, replace-only-this-version.
        let r = s.req("PUT", "/w/a.bin", &[("If-None-Match", "*")], b"third");
        assert_eq!(r.status, 412);
        let r = s.req("PUT", "/w/a.bin", &[("If-Match", &tag1)], b"third");
        assert_eq!(r.status, 412);
        let r = s.req("PUT", "/w/a.bin", &[("If-Match", &tag2)], b"third");
        assert_eq!(r.status, 204);
        assert_eq!(s.get("/w/a.bin").body, b"third");
        let r = s.req("PUT", "/w/new.bin", &[("If-None-Match", "*")], b"new");
        assert_eq!(r.status, 201);

        // Bigger than one S3 part (8 MiB), chunked: a multipart upload.
        let big = bytes(19 << 20, 3);
        let r = s.req(
            "PUT",
            "/w/big.bin",
            &[("Transfer-Encoding", "chunked")],
            &chunked(&big),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        let r = s.get("/w/big.bin");
        assert_eq!(r.body.len(), big.len());
        assert!(r.body == big, "big object differs");
        let r = s.req(
            "GET",
            "/w/big.bin",
            &[("Range", "bytes=8388600-8388615")],
            b"",
        );
        assert_eq!(r.body, &big[8_388_600..8_388_616]);

        // A directory in the way, and deletes.
        assert_eq!(s.put("/w/sub/x", b"x").status, 201);
        assert_eq!(s.put("/w/sub", b"file over a folder").status, 409);
        assert_eq!(s.req("DELETE", "/w/sub/x", &[], b"").status, 204);
        // A folder goes with what it holds (WebDAV DELETE, RFC 4918 §9.6.1).
        assert_eq!(s.put("/w/gone/a/b", b"b").status, 201);
        assert_eq!(s.req("DELETE", "/w/gone/", &[], b"").status, 204);
        assert_eq!(s.get("/w/gone/a/b").status, 404);
        assert_eq!(s.req("DELETE", "/w/a.bin", &[], b"").status, 204);
        assert_eq!(s.get("/w/a.bin").status, 404);
        assert_eq!(s.req("DELETE", "/w/a.bin", &[], b"").status, 404);
        assert_eq!(s.req("PUT", "/w/dir/", &[], b"x").status, 400);
    });
    if let Some(m) = m {
        // Stored below the prefix, nothing else left behind.
        assert_eq!(m.keys("both"), ["pre/w/big.bin", "pre/w/new.bin"]);
        assert!(m.multipart_uploads("both").is_empty());
    }
}

#[test]
fn listings_json_and_html_on_both_backends() {
    on_both(ServiceConfig::default, |s| {
        for p in [
            "/l/b.txt",
            "/l/a.bin",
            "/l/sub/x",
            "/l/sub/deeper/y",
            "/l/z/1",
        ] {
            assert_eq!(s.put(p, p.as_bytes()).status, 201);
        }
        let r = s.get("/l/?format=json");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = json(&r);
        let want: Vec<(String, String)> = [
            ("a.bin", "file"),
            ("b.txt", "file"),
            ("sub", "dir"),
            ("z", "dir"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(names(&v), want);
        assert_eq!(v[0]["size"], 8);
        assert!(v[0]["modified"].is_string());
        let r = s.req("GET", "/l/sub/", &[("Accept", "application/json")], b"");
        assert_eq!(
            names(&json(&r)),
            [
                ("deeper".to_string(), "dir".to_string()),
                ("x".into(), "file".into())
            ]
        );
        let r = s.req("GET", "/l/", &[("Accept", "text/html")], b"");
        assert_eq!(r.status, 200);
        let html = r.text();
        assert!(html.contains("href=\"a.bin\""), "{html}");
        assert!(html.contains("href=\"sub/\""), "{html}");
        let root = json(&s.get("/?format=json"));
        assert_eq!(names(&root), [("l".to_string(), "dir".to_string())]);
        assert_eq!(s.get("/nothing/").status, 404);
        assert_eq!(s.get("/l/a.bin/").status, 404);
        // Names with spaces, '%', '+' and non-ASCII round-trip as keys.
        let odd = "/odd/a%20b%25c+d%C3%BC.txt";
        assert_eq!(s.put(odd, b"odd").status, 201);
        assert_eq!(s.get(odd).body, b"odd");
        let v = json(&s.get("/odd/?format=json"));
        assert_eq!(v[0]["name"], "a b%c+dü.txt");
    });
}

#[test]
fn listing_pages_follow_each_other_on_s3() {
    let Some(m) = Minio::start() else { return };
    m.create_bucket("pages");
    // 1,500 keys: two ListObjectsV2 pages, created by boto3 directly.
    m.boto3(
        "from concurrent.futures import ThreadPoolExecutor\n\
         with ThreadPoolExecutor(16) as ex:\n    \
         list(ex.map(lambda i: s3.put_object(Bucket='pages', Key='p/many/f%04d' % i, Body=b'x'), range(1500)))",
    );
    let s = TestServer::on_storage(s3_storage(&m, "pages", "p"), ServiceConfig::default());
    let v = json(&s.get("/many/?format=json"));
    let got: Vec<String> = names(&v).into_iter().map(|(n, _)| n).collect();
    let want: Vec<String> = (0..1500).map(|i| format!("f{i:04}")).collect();
    assert_eq!(got, want);
}

mod encoded {
    use super::*;

    const B: &str = "----wirespeedS3Boundary";

    fn file_part(out: &mut Vec<u8>, filename: &str, data: &[u8]) {
        out.extend_from_slice(
            format!(
                "--{B}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
    }

    #[test]
    fn encoded_posts_on_both_backends() {
        on_both(ServiceConfig::default, |s| {
            let a = bytes(700_000, 11);
            let b = b"second\r\n".to_vec();
            let mut body = Vec::new();
            file_part(&mut body, "a.bin", &a);
            file_part(&mut body, "b.txt", &b);
            body.extend_from_slice(format!("--{B}--\r\n").as_bytes());
            let ct = format!("multipart/form-data; boundary={B}");
            let r = s.req("POST", "/up/", &[("Content-Type", &ct)], &body);
            assert_eq!(r.status, 201, "{}", r.text());
            let v = json(&r);
            assert_eq!(v["files"][0]["path"], "/up/a.bin");
            assert_eq!(v["files"][0]["created"], true);
            assert_eq!(s.get("/up/a.bin").body, a);
            assert_eq!(s.get("/up/b.txt").body, b);
            let r = s.req("POST", "/up/", &[("Content-Type", &ct)], &body);
            assert_eq!(json(&r)["files"][0]["created"], false);

            // A base64 JSON field.
            use base64::Engine;
            let data = bytes(100_000, 5);
            let doc = format!(
                "{{\"name\":\"x\",\"data\":\"{}\"}}",
                base64::engine::general_purpose::STANDARD.encode(&data)
            );
            let r = s.req(
                "POST",
                "/up/field.bin?field=data",
                &[("Content-Type", "application/json")],
                doc.as_bytes(),
            );
            assert_eq!(r.status, 201, "{}", r.text());
            assert_eq!(s.get("/up/field.bin").body, data);
            // A broken one stores nothing.
            let r = s.req(
                "POST",
                "/up/broken.bin?field=data",
                &[("Content-Type", "application/json")],
                b"{\"data\":\"QUJD!\"}",
            );
            assert_eq!(r.status, 400, "{}", r.text());
            assert_eq!(s.get("/up/broken.bin").status, 404);
        });
    }
}

#[test]
fn digests_on_both_backends() {
    let m = on_both(ServiceConfig::default, |s| {
        let small = bytes(5_000, 1);
        let big = bytes(17 << 20, 2);
        // Announced up front: recorded, for a single PUT and a multipart one.
        for (path, data) in [("/d/small", &small), ("/d/big", &big)] {
            let field = sha256_field(data);
            let r = s.req("PUT", path, &[("Repr-Digest", &field)], data);
            assert_eq!(r.status, 201, "{}", r.text());
            let h = s.req("HEAD", path, &[], b"");
            assert_eq!(h.header("repr-digest"), Some(field.as_str()), "{path}");
        }
        // Asked for: answered, and recorded for a small body.
        let r = s.req(
            "PUT",
            "/d/asked",
            &[("Want-Repr-Digest", "sha-256=1")],
            &small,
        );
        assert_eq!(r.header("repr-digest"), Some(sha256_field(&small).as_str()));
        let h = s.req("HEAD", "/d/asked", &[], b"");
        assert_eq!(h.header("repr-digest"), Some(sha256_field(&small).as_str()));
        // Never stale: replaced without a digest, none is claimed...
        assert_eq!(s.put("/d/small", b"other bytes").status, 204);
        assert_eq!(
            s.req("HEAD", "/d/small", &[], b"").header("repr-digest"),
            None
        );
        // ...and one asked for is of the new bytes.
        let r = s.req("GET", "/d/small", &[("Want-Repr-Digest", "sha-256=1")], b"");
        assert_eq!(
            r.header("repr-digest"),
            Some(sha256_field(b"other bytes").as_str())
        );
        // A mismatch stores nothing.
        let r = s.req(
            "PUT",
            "/d/bad",
            &[("Repr-Digest", &sha256_field(b"x"))],
            &big,
        );
        assert_eq!(r.status, 400);
        assert_eq!(s.get("/d/bad").status, 404);
    });
    if let Some(m) = m {
        let meta = m.metadata("both", "pre/d/big");
        assert_eq!(meta["sha256"].as_str().map(str::len), Some(64));
        assert!(m.multipart_uploads("both").is_empty());
    }
}

fn quota_config() -> ServiceConfig {
    let rules = "[paths.\"/\"]\n\"*\" = \"rwd\"\n[quota.\"/team\"]\nbytes = \"1K\"\n";
    ServiceConfig {
        users: Some(std::sync::Arc::new(
            wirespeed_service::Users::from_text("rules.toml", rules).unwrap(),
        )),
        ..ServiceConfig::default()
    }
}

#[test]
fn folder_quotas_on_both_backends() {
    let Some(m) = on_both(quota_config, |s| {
        let r = s.put("/team/a.bin", &[1; 1000]);
        assert_eq!(r.status, 201, "{}", r.text());
        // Only the head, waiting for 100 Continue: refused before the body.
        let head = "PUT /team/b.bin HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\
                    Expect: 100-continue\r\nContent-Length: 100\r\n\r\n";
        let r = s.raw(head.as_bytes(), false);
        assert_eq!(r.status, 507, "{}", r.text());
        assert!(
            r.text().contains("the quota of /team is full"),
            "{}",
            r.text()
        );
        assert_eq!(s.get("/team/b.bin").status, 404);
        assert_eq!(s.req("DELETE", "/team/a.bin", &[], b"").status, 204);
        assert_eq!(s.put("/team/b.bin", &[1; 100]).status, 201);
    }) else {
        return;
    };
    // Another node's delete (the bucket changed behind this one's back)
    // frees the room for this node's next write.
    m.create_bucket("quota");
    let a = TestServer::on_storage(s3_storage(&m, "quota", "p"), quota_config());
    let b = TestServer::on_storage(s3_storage(&m, "quota", "p"), quota_config());
    assert_eq!(a.put("/team/a.bin", &[1; 1000]).status, 201);
    assert_eq!(a.put("/team/b.bin", &[1; 100]).status, 507);
    assert_eq!(b.req("DELETE", "/team/a.bin", &[], b"").status, 204);
    assert_eq!(a.put("/team/b.bin", &[1; 100]).status, 201);
}

#[test]
fn two_nodes_on_one_bucket_see_each_others_writes() {
    let Some(m) = Minio::start() else { return };
    m.create_bucket("shared");
    let a = TestServer::on_storage(s3_storage(&m, "shared", "p"), ServiceConfig::default());
    let b = TestServer::on_storage(s3_storage(&m, "shared", "p"), ServiceConfig::default());
    let data = bytes(9 << 20, 4);
    assert_eq!(a.put("/team/report.bin", &data).status, 201);
    assert_eq!(b.get("/team/report.bin").body, data);
    assert_eq!(
        names(&json(&b.get("/team/?format=json"))),
        [("report.bin".to_string(), "file".to_string())]
    );
    // An overwrite through b is what a reads next, with a new ETag.
    let tag = a
        .get("/team/report.bin")
        .header("etag")
        .unwrap()
        .to_string();
    assert_eq!(b.put("/team/report.bin", b"v2").status, 204);
    let r = a.get("/team/report.bin");
    assert_eq!(r.body, b"v2");
    assert_ne!(r.header("etag"), Some(tag.as_str()));
    // b's delete is a's 404, and the folder is gone for both.
    assert_eq!(b.req("DELETE", "/team/report.bin", &[], b"").status, 204);
    assert_eq!(a.get("/team/report.bin").status, 404);
    assert_eq!(a.get("/team/").status, 404);
    assert!(m.keys("shared").is_empty());
}

#[test]
fn a_put_cut_midway_leaves_no_object_and_no_multipart_upload() {
    let Some(m) = Minio::start() else { return };
    m.create_bucket("cut");
    let s = TestServer::on_storage(s3_storage(&m, "cut", ""), ServiceConfig::default());
    let total = 40usize << 20;
    let half = bytes(total / 2, 9);
    let mut conn = std::net::TcpStream::connect(s.addr).unwrap();
    let head =
        format!("PUT /cut.bin HTTP/1.1\r\nHost: localhost\r\nContent-Length: {total}\r\n\r\n");
    conn.write_all(head.as_bytes()).unwrap();
    conn.write_all(&half).unwrap();
    // Parts went out (20 MiB > two parts): a multipart upload exists now.
    s.eventually("a multipart upload in progress", || {
        !m.multipart_uploads("cut").is_empty()
    });
    drop(conn);
    s.eventually("the multipart upload aborted", || {
        m.multipart_uploads("cut").is_empty()
    });
    assert_eq!(s.get("/cut.bin").status, 404);
    assert!(m.keys("cut").is_empty());
}

#[test]
fn backend_failures_say_which() {
    let Some(m) = Minio::start() else { return };
    m.create_bucket("real");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let check = |c: S3Config| rt.block_on(async { S3Storage::new(&c).unwrap().check().await });
    check(s3_config(&m, "real", "")).unwrap();

    let e = check(s3_config(&m, "no-such-bucket", "")).unwrap_err();
    assert_eq!(e.status(), 502);
    assert!(e.to_string().contains("bucket does not exist"), "{e}");

    let mut c = s3_config(&m, "real", "");
    c.credentials = Some((USER.into(), "wrong-secret".into()));
    let e = check(c).unwrap_err();
    assert_eq!(e.status(), 502);
    assert!(e.to_string().contains("credentials"), "{e}");

    // Nothing listens there (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = s3_config(&m, "real", "");
    c.endpoint = Some(format!("http://127.0.0.1:{port}"));
    let e = check(c.clone()).unwrap_err();
    assert_eq!(e.status(), 503);
    assert!(e.to_string().contains("cannot be reached"), "{e}");
    // The same through a request: a 503 whose body says so.
    let s = TestServer::on_storage(S3Storage::new(&c).unwrap(), ServiceConfig::default());
    let r = s.get("/x");
    assert_eq!(r.status, 503);
    assert!(r.text().contains("cannot be reached"), "{}", r.text());
}

/// WebDAV `MKCOL` and `MOVE` (the page's New folder and Rename), checked
/// through listings and GETs only, so the same assertions hold for a
/// directory and a bucket.
#[test]
fn mkcol_and_move_on_both_backends() {
    let m = on_both(ServiceConfig::default, |s| {
        let mv = |src: &str, dst: &str, extra: &[(&str, &str)]| {
            let mut h = vec![("Destination", dst)];
            h.extend_from_slice(extra);
            s.req("MOVE", src, &h, b"")
        };
        // MKCOL: one folder, listed while empty, refused where something is.
        let r = s.req("MKCOL", "/docs/", &[], b"");
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!(r.header("location"), Some("/docs/"));
        assert_eq!(s.req("MKCOL", "/docs/a%20b", &[], b"").status, 201);
        let v = json(&s.get("/docs/?format=json"));
        assert_eq!(names(&v), [("a b".to_string(), "dir".to_string())]);
        assert_eq!(
            json(&s.get("/docs/a%20b/?format=json")),
            serde_json::json!([])
        );
        assert_eq!(s.req("MKCOL", "/docs/", &[], b"").status, 405);
        assert_eq!(s.put("/f.txt", b"x").status, 201);
        assert_eq!(s.req("MKCOL", "/f.txt", &[], b"").status, 405);
        assert_eq!(s.req("MKCOL", "/", &[], b"").status, 405);
        assert_eq!(s.req("MKCOL", "/no/such/dir/", &[], b"").status, 409);
        assert_eq!(s.get("/no/").status, 404);
        assert_eq!(s.req("MKCOL", "/f.txt/sub/", &[], b"").status, 409);
        assert_eq!(s.req("MKCOL", "/.wirespeed-tmp-1/", &[], b"").status, 404);
        // An empty folder is deleted; a file in a made folder keeps it.
        assert_eq!(s.req("DELETE", "/docs/a%20b/", &[], b"").status, 204);
        assert_eq!(s.get("/docs/a%20b/").status, 404);
        assert_eq!(s.put("/docs/in.txt", b"in").status, 201);
        assert_eq!(s.req("DELETE", "/docs/in.txt", &[], b"").status, 204);
        assert_eq!(json(&s.get("/docs/?format=json")), serde_json::json!([]));

        // MOVE of a file: created, then Overwrite F (412) and T (204).
        let r = mv("/f.txt", "/docs/g.txt", &[]);
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!(r.header("location"), Some("/docs/g.txt"));
        assert_eq!(s.get("/f.txt").status, 404);
        assert_eq!(s.get("/docs/g.txt").body, b"x");
        assert_eq!(s.put("/src.txt", b"new").status, 201);
        let r = mv("/src.txt", "/docs/g.txt", &[("Overwrite", "F")]);
        assert_eq!(r.status, 412, "{}", r.text());
        assert_eq!(s.get("/docs/g.txt").body, b"x");
        assert_eq!(s.get("/src.txt").body, b"new");
        assert_eq!(mv("/src.txt", "/docs/g.txt", &[]).status, 204);
        assert_eq!(s.get("/docs/g.txt").body, b"new");
        assert_eq!(s.get("/src.txt").status, 404);
        // Refusals leave everything in place.
        assert_eq!(mv("/missing.txt", "/m2.txt", &[]).status, 404);
        assert_eq!(mv("/docs/g.txt", "/no/such/g.txt", &[]).status, 409);
        // A file replaces a folder only with Overwrite: T (RFC 4918 §9.9.3).
        assert_eq!(
            mv("/docs/g.txt", "/docs", &[("Overwrite", "F")]).status,
            412
        );
        assert_eq!(mv("/docs/g.txt", "/.wirespeed-tmp-x", &[]).status, 403);
        assert_eq!(mv("/docs/", "/docs/sub/docs/", &[]).status, 409);
        assert_eq!(s.get("/docs/g.txt").body, b"new");

        // MOVE of a folder with a subfolder and an empty made folder.
        let big = bytes(300_000, 5);
        assert_eq!(s.put("/docs/deep/er/b.bin", &big).status, 201);
        assert_eq!(s.req("MKCOL", "/docs/empty/", &[], b"").status, 201);
        let r = mv("/docs/", "http://test/moved%20here/", &[]);
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!(r.header("location"), Some("/moved%20here/"));
        assert_eq!(s.get("/docs/").status, 404);
        assert_eq!(s.get("/moved%20here/deep/er/b.bin").body, big);
        assert_eq!(s.get("/moved%20here/g.txt").body, b"new");
        let v = json(&s.get("/moved%20here/?format=json"));
        assert_eq!(
            names(&v),
            [
                ("deep".to_string(), "dir".to_string()),
                ("empty".into(), "dir".into()),
                ("g.txt".into(), "file".into())
            ]
        );
        assert_eq!(
            names(&json(&s.get("/?format=json"))),
            [("moved here".to_string(), "dir".to_string())]
        );
    });
    if let Some(m) = m {
        // The made folder's marker moved along; nothing else is left.
        assert_eq!(
            m.keys("both"),
            [
                "pre/moved here/.wirespeed-folder",
                "pre/moved here/deep/er/b.bin",
                "pre/moved here/empty/.wirespeed-folder",
                "pre/moved here/g.txt"
            ]
        );
        assert!(m.multipart_uploads("both").is_empty());
    }
}

/// Resumable uploads (tus 1.0, IETF draft interop 8) on both backends, and
/// the S3-only cases: a restart, a second node, expiry. Appends are odd
/// sizes so that S3's 5 MiB part minimum falls inside them.
mod resumable {
    use super::*;
    use std::io::Read;
    use std::net::TcpStream;
    use std::time::Duration;
    use wirespeed_service::UploadsConfig;

    const TUS: (&str, &str) = ("Tus-Resumable", "1.0.0");
    const OCTETS: (&str, &str) = ("Content-Type", "application/offset+octet-stream");
    const PARTIAL: (&str, &str) = ("Content-Type", "application/partial-upload");
    const INTEROP: (&str, &str) = ("Upload-Draft-Interop-Version", "8");

    fn on_both_uploads(ucfg: UploadsConfig, scenario: impl Fn(&TestServer)) -> Option<Minio> {
        scenario(&TestServer::with_uploads(ServiceConfig::default(), ucfg));
        let m = Minio::start()?;
        m.create_bucket("both");
        let s = TestServer::with_uploads_on(
            s3_storage(&m, "both", "pre"),
            ServiceConfig::default(),
            ucfg,
        );
        scenario(&s);
        Some(m)
    }

    fn on_s3(m: &Minio, bucket: &str) -> TestServer {
        TestServer::with_uploads_on(
            s3_storage(m, bucket, "p"),
            ServiceConfig::default(),
            UploadsConfig::default(),
        )
    }

    fn create(s: &TestServer, path: &str, extra: &[(&str, &str)]) -> String {
        let mut h = vec![TUS];
        h.extend_from_slice(extra);
        let r = s.req("POST", path, &h, b"");
        assert_eq!(r.status, 201, "{}", r.text());
        r.header("location").unwrap().to_string()
    }

    fn patch(s: &TestServer, loc: &str, offset: usize, body: &[u8]) -> Resp {
        let off = offset.to_string();
        s.req("PATCH", loc, &[TUS, OCTETS, ("Upload-Offset", &off)], body)
    }

    fn offset(s: &TestServer, loc: &str) -> Option<String> {
        let r = s.req("HEAD", loc, &[TUS], b"");
        assert_eq!(r.status, 200, "{}", r.text());
        r.header("upload-offset").map(str::to_string)
    }

    /// `data` sent from `from` in appends of `sizes` (0: the rest).
    fn send_in(s: &TestServer, loc: &str, data: &[u8], from: usize, sizes: &[usize]) {
        let mut at = from;
        for n in sizes {
            let end = if *n == 0 { data.len() } else { at + n };
            let r = patch(s, loc, at, &data[at..end]);
            assert_eq!(r.status, 204, "{}", r.text());
            at = end;
            assert_eq!(r.header("upload-offset"), Some(at.to_string().as_str()));
        }
    }

    fn nothing_left(m: &Minio, bucket: &str, want: &[&str]) {
        assert_eq!(m.keys(bucket), want);
        assert!(m.multipart_uploads(bucket).is_empty());
    }

    #[test]
    fn tus_appends_across_part_boundaries_byte_identical_on_both_backends() {
        let m = on_both_uploads(UploadsConfig::default(), |s| {
            let data = bytes((13 << 20) + 12_345, 21);
            let len = data.len().to_string();
            let meta = format!("filename {}", "YmlnLmJpbg=="); // big.bin
            let loc = create(
                s,
                "/-/uploads/docs/",
                &[("Upload-Length", &len), ("Upload-Metadata", &meta)],
            );
            assert_eq!(offset(s, &loc).as_deref(), Some("0"));
            let sizes = [(1 << 20) + 3, (5 << 20) - 1, (3 << 20) + 7, 11, 0];
            let mut at = 0;
            for n in &sizes[..4] {
                let r = patch(s, &loc, at, &data[at..at + n]);
                assert_eq!(r.status, 204, "{}", r.text());
                at += n;
                assert_eq!(offset(s, &loc), Some(at.to_string()));
                assert_eq!(
                    s.get("/docs/big.bin").status,
                    404,
                    "not before the last byte"
                );
                let root = s.get("/?format=json").text();
                assert!(
                    !root.contains("wirespeed") && !root.contains("docs"),
                    "{root}"
                );
            }
            assert_eq!(s.get("/.wirespeed-uploads/").status, 404);
            send_in(s, &loc, &data, at, &[0]);
            let r = s.get("/docs/big.bin");
            assert_eq!(r.body.len(), data.len());
            assert!(r.body == data, "the file differs");
            // Completed: still answerable, at its length, until it expires.
            let r = s.req("HEAD", &loc, &[TUS], b"");
            assert_eq!(r.status, 200);
            assert_eq!(
                r.header("upload-offset"),
                Some(data.len().to_string().as_str())
            );
        });
        if let Some(m) = m {
            nothing_left(&m, "both", &["pre/docs/big.bin"]);
        }
    }

    #[test]
    fn creation_with_upload_empty_uploads_and_checksums_on_both_backends() {
        let m = on_both_uploads(UploadsConfig::default(), |s| {
            let r = s.req(
                "POST",
                "/-/uploads/a/b/c.txt",
                &[TUS, OCTETS, ("Upload-Length", "11")],
                b"hello",
            );
            assert_eq!((r.status, r.header("upload-offset")), (201, Some("5")));
            let loc = r.header("location").unwrap().to_string();
            assert_eq!(patch(s, &loc, 5, b" world").status, 204);
            assert_eq!(s.get("/a/b/c.txt").body, b"hello world");
            let r = s.req(
                "POST",
                "/-/uploads/empty.txt",
                &[TUS, ("Upload-Length", "0")],
                b"",
            );
            assert_eq!((r.status, r.header("upload-offset")), (201, Some("0")));
            let r = s.get("/empty.txt");
            assert_eq!((r.status, r.body.len()), (200, 0));
            // A bad checksum discards the whole append, a full part it sent too.
            use base64::Engine as _;
            use sha2::Digest as _;
            let data = bytes(12 << 20, 8);
            let len = data.len().to_string();
            let loc = create(s, "/-/uploads/sum.bin", &[("Upload-Length", &len)]);
            assert_eq!(patch(s, &loc, 0, &data[..3 << 20]).status, 204);
            let sum = |d: &[u8]| {
                format!(
                    "sha256 {}",
                    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(d))
                )
            };
            let wrong = sum(b"nope");
            let r = s.req(
                "PATCH",
                &loc,
                &[
                    TUS,
                    OCTETS,
                    ("Upload-Offset", "3145728"),
                    ("Upload-Checksum", &wrong),
                ],
                &data[3 << 20..],
            );
            assert_eq!(r.status, 460, "{}", r.text());
            assert_eq!(offset(s, &loc), Some((3 << 20).to_string()));
            let good = sum(&data[3 << 20..]);
            let r = s.req(
                "PATCH",
                &loc,
                &[
                    TUS,
                    OCTETS,
                    ("Upload-Offset", "3145728"),
                    ("Upload-Checksum", &good),
                ],
                &data[3 << 20..],
            );
            assert_eq!(r.status, 204, "{}", r.text());
            assert!(s.get("/sum.bin").body == data, "sum.bin differs");
        });
        if let Some(m) = m {
            nothing_left(
                &m,
                "both",
                &["pre/a/b/c.txt", "pre/empty.txt", "pre/sum.bin"],
            );
        }
    }

    #[test]
    fn ietf_creation_cut_then_resumed_mismatch_and_cancel_on_both_backends() {
        let m = on_both_uploads(UploadsConfig::default(), |s| {
            let data = bytes(12 << 20, 7);
            let mut c = TcpStream::connect(s.addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let head = format!(
                "POST /project/todo.bin HTTP/1.1\r\nHost: t\r\nUpload-Draft-Interop-Version: 8\r\n\
                 Upload-Complete: ?1\r\nContent-Length: {0}\r\nUpload-Length: {0}\r\n\r\n",
                data.len()
            );
            c.write_all(head.as_bytes()).unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while find(&got, b"\r\n\r\n").is_none() {
                let n = c.read(&mut buf).unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            let text = String::from_utf8(got).unwrap();
            assert!(text.starts_with("HTTP/1.1 104 "), "{text}");
            let loc = text
                .lines()
                .find_map(|l| l.strip_prefix("Location: "))
                .unwrap()
                .to_string();
            let sent = (9 << 20) + 333;
            c.write_all(&data[..sent]).unwrap();
            c.flush().unwrap();
            std::thread::sleep(Duration::from_millis(300));
            drop(c);
            s.eventually("the cut append counted", || {
                let r = s.req("HEAD", &loc, &[], b"");
                r.status == 204 && r.header("upload-offset") == Some(sent.to_string().as_str())
            });
            assert_eq!(s.get("/project/todo.bin").status, 404);
            // A wrong offset: 409 with the real one.
            let r = s.req(
                "PATCH",
                &loc,
                &[PARTIAL, ("Upload-Offset", "1"), ("Upload-Complete", "?1")],
                b"x",
            );
            assert_eq!(r.status, 409);
            let problem: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(problem["expected-offset"].as_u64(), Some(sent as u64));
            let off = sent.to_string();
            let r = s.req(
                "PATCH",
                &loc,
                &[PARTIAL, ("Upload-Offset", &off), ("Upload-Complete", "?1")],
                &data[sent..],
            );
            assert_eq!(
                (r.status, r.header("upload-complete")),
                (201, Some("?1")),
                "{}",
                r.text()
            );
            assert!(s.get("/project/todo.bin").body == data, "todo.bin differs");
            // Cancel: the upload and its bytes are gone.
            let r = s.req(
                "POST",
                "/c.bin",
                &[INTEROP, ("Upload-Complete", "?0")],
                &data[..6 << 20],
            );
            assert_eq!(r.status, 201);
            let loc = r.header("location").unwrap().to_string();
            assert_eq!(s.req("DELETE", &loc, &[], b"").status, 204);
            assert_eq!(s.req("HEAD", &loc, &[], b"").status, 404);
            assert_eq!(s.get("/c.bin").status, 404);
        });
        if let Some(m) = m {
            nothing_left(&m, "both", &["pre/project/todo.bin"]);
        }
    }

    #[test]
    fn a_restart_mid_upload_then_resume_on_s3() {
        let Some(m) = Minio::start() else { return };
        m.create_bucket("restart");
        let data = bytes((11 << 20) + 77, 31);
        let len = data.len().to_string();
        let first = on_s3(&m, "restart");
        let loc = create(&first, "/-/uploads/r.bin", &[("Upload-Length", &len)]);
        send_in(&first, &loc, &data, 0, &[(6 << 20) + 5, 1]);
        let at = (6 << 20) + 6;
        assert_eq!(data.len() - at, (5 << 20) + 71);
        // An append refused once its bytes were stored (chunked: its length
        // shows only at its end) leaves none of them, also after a restart.
        let ietf_offset = |s: &TestServer, loc: &str| {
            s.req("HEAD", loc, &[], b"")
                .header("upload-offset")
                .map(str::to_string)
        };
        let r = first.req(
            "POST",
            "/ietf.bin",
            &[
                INTEROP,
                ("Upload-Complete", "?0"),
                ("Upload-Length", "9999999"),
            ],
            &data[..1000],
        );
        assert_eq!(r.status, 201, "{}", r.text());
        let loc2 = r.header("location").unwrap().to_string();
        let r = first.req(
            "PATCH",
            &loc2,
            &[
                PARTIAL,
                ("Upload-Offset", "1000"),
                ("Upload-Complete", "?1"),
                ("Transfer-Encoding", "chunked"),
            ],
            &chunked(&data[1000..3000]),
        );
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(ietf_offset(&first, &loc2).as_deref(), Some("1000"));
        drop(first);
        // A new process knows nothing but the bucket.
        let second = on_s3(&m, "restart");
        assert_eq!(offset(&second, &loc), Some(at.to_string()));
        assert_eq!(second.get("/r.bin").status, 404);
        assert_eq!(ietf_offset(&second, &loc2).as_deref(), Some("1000"));
        assert_eq!(second.req("DELETE", &loc2, &[], b"").status, 204);
        send_in(&second, &loc, &data, at, &[0]);
        assert!(second.get("/r.bin").body == data, "r.bin differs");
        nothing_left(&m, "restart", &["p/r.bin"]);
    }

    #[test]
    fn a_second_node_resumes_what_the_first_began_on_s3() {
        let Some(m) = Minio::start() else { return };
        m.create_bucket("nodes");
        let a = on_s3(&m, "nodes");
        let b = on_s3(&m, "nodes");
        let data = bytes((14 << 20) + 9, 41);
        let len = data.len().to_string();
        let loc = create(&a, "/-/uploads/n.bin", &[("Upload-Length", &len)]);
        send_in(&a, &loc, &data, 0, &[(4 << 20) + 1]);
        let at = (4 << 20) + 1;
        // Mid-upload: b continues from a's offset...
        assert_eq!(offset(&b, &loc), Some(at.to_string()));
        let r = patch(&b, &loc, at, &data[at..at + (5 << 20)]);
        assert_eq!(r.status, 204, "{}", r.text());
        let at = at + (5 << 20);
        // ...and a, which held the upload, sees b's offset and finishes it.
        assert_eq!(offset(&a, &loc), Some(at.to_string()));
        assert_eq!(patch(&a, &loc, 0, b"stale").status, 409);
        send_in(&a, &loc, &data, at, &[0]);
        assert!(b.get("/n.bin").body == data, "n.bin differs");
        // Completed by `a`: answerable there until it expires.
        let r = a.req("HEAD", &loc, &[TUS], b"");
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("upload-offset"),
            Some(data.len().to_string().as_str())
        );
        nothing_left(&m, "nodes", &["p/n.bin"]);
    }

    #[test]
    fn tus_concatenation_joins_partials_by_server_side_copies_on_s3() {
        use wirespeed_service::policy::password;
        let Some(m) = Minio::start() else { return };
        m.create_bucket("concat");
        let text = format!(
            "[users]\nalice = \"{}\"\nbob = \"{}\"\n[paths.\"/\"]\nalice = \"rwd\"\nbob = \"rwd\"\n",
            password::hash(b"a-pw").unwrap(),
            password::hash(b"b-pw").unwrap()
        );
        let cfg = ServiceConfig {
            users: Some(std::sync::Arc::new(
                wirespeed_service::Users::from_text("rules.toml", &text).unwrap(),
            )),
            ..ServiceConfig::default()
        };
        let s = TestServer::with_uploads_on(
            s3_storage(&m, "concat", "p"),
            cfg,
            UploadsConfig::default(),
        );
        let basic = |u: &str, pw: &str| {
            use base64::Engine as _;
            let raw = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{pw}"));
            format!("Basic {raw}")
        };
        let (alice, bob) = (basic("alice", "a-pw"), basic("bob", "b-pw"));
        let r = s.req(
            "OPTIONS",
            "/-/uploads/",
            &[TUS, ("Authorization", &alice)],
            b"",
        );
        let ext = r.header("tus-extension").unwrap_or_default();
        assert!(ext.contains("concatenation"), "{ext}");
        // Sizes around S3's 5 MiB part minimum: small ones go through one
        // buffer, the big one is an UploadPartCopy.
        let pieces = [
            b"head".to_vec(),
            bytes(10 << 20, 61),
            bytes(1 << 20, 62),
            b"end".to_vec(),
        ];
        let mut urls = Vec::new();
        for p in &pieces {
            let len = p.len().to_string();
            let h = [
                TUS,
                ("Upload-Concat", "partial"),
                ("Upload-Length", &len),
                ("Authorization", &alice),
            ];
            let r = s.req("POST", "/-/uploads/d/", &h, b"");
            assert_eq!(r.status, 201, "{}", r.text());
            let loc = r.header("location").unwrap().to_string();
            let h = [
                TUS,
                OCTETS,
                ("Upload-Offset", "0"),
                ("Authorization", alice.as_str()),
            ];
            assert_eq!(s.req("PATCH", &loc, &h, p).status, 204);
            urls.push(loc);
        }
        let concat = format!("final;{}", urls.join(" "));
        let fin = |who: &str| {
            let meta = format!("filename {}", "ai5iaW4="); // j.bin
            let h = [
                TUS,
                ("Upload-Concat", concat.as_str()),
                ("Upload-Metadata", &meta),
                ("Authorization", who),
            ];
            s.req("POST", "/-/uploads/d/", &h, b"")
        };
        // Someone else's partials: refused, nothing made.
        assert_eq!(fin(&bob).status, 403);
        let r = fin(&alice);
        assert_eq!(r.status, 201, "{}", r.text());
        let got = s.req("GET", "/d/j.bin", &[("Authorization", &alice)], b"");
        assert!(got.body == pieces.concat(), "j.bin differs");
        nothing_left(&m, "concat", &["p/d/j.bin"]);
        // Hers, for her quota.
        assert_eq!(
            m.metadata("concat", "p/d/j.bin")["wirespeed-owner"],
            "alice"
        );
    }

    #[test]
    fn the_upload_hook_sees_the_staged_object_and_refuses_before_publication_on_s3() {
        let Some(m) = Minio::start() else { return };
        m.create_bucket("gate");
        // The hook reads the staged bytes through the URL it is given: an
        // object under a reserved name (a PUT's staging copy, or a
        // resumable upload's staged object), never the name asked for.
        let hook = r#"url=$(python3 -c 'import json,sys; e=json.load(sys.stdin); assert e["s3"]["key"].startswith(("p/.wirespeed-staging/", "p/.wirespeed-uploads/")); print(e["url"])') || exit 3
            if curl -sf "$url" | grep -q EICAR; then echo 'virus found'; exit 1; fi"#;
        let gate = wirespeed_service::events::CommandGate {
            command: hook.into(),
            timeout: Duration::from_secs(20),
        };
        let s = TestServer::with_uploads_on(
            s3_storage(&m, "gate", "p").with_publish_gate(std::sync::Arc::new(gate)),
            ServiceConfig::default(),
            UploadsConfig::default(),
        );
        let r = s.put("/bad.txt", b"x EICAR x");
        assert_eq!(r.status, 422, "{}", r.text());
        assert!(r.text().contains("virus found"), "{}", r.text());
        assert_eq!(s.get("/bad.txt").status, 404);
        assert_eq!(s.put("/good.txt", b"fine").status, 201);
        assert_eq!(s.get("/good.txt").body, b"fine");
        // A tus upload is staged too: refused at its completion.
        let loc = create(&s, "/-/uploads/t.txt", &[("Upload-Length", "5")]);
        let r = patch(&s, &loc, 0, b"EICAR");
        assert_eq!(r.status, 422, "{}", r.text());
        assert!(r.text().contains("virus found"), "{}", r.text());
        assert_eq!(s.get("/t.txt").status, 404);
        nothing_left(&m, "gate", &["p/good.txt"]);
    }

    #[test]
    fn expired_uploads_are_swept_from_the_bucket_on_s3() {
        let Some(m) = Minio::start() else { return };
        m.create_bucket("expiry");
        let ucfg = UploadsConfig {
            limits: wirespeed_resumable::Limits {
                // Long enough for the first append to land before it
                // expires, even on a loaded machine.
                lifetime_secs: 12,
                ..Default::default()
            },
            ..UploadsConfig::default()
        };
        let s = TestServer::with_uploads_on(
            s3_storage(&m, "expiry", "p"),
            ServiceConfig::default(),
            ucfg,
        );
        let data = bytes((9 << 20) + 5, 51);
        let loc = create(&s, "/-/uploads/old.bin", &[("Upload-Length", "99999999")]);
        assert_eq!(patch(&s, &loc, 0, &data).status, 204);
        // A full part and a tail are in the bucket now.
        assert_eq!(m.multipart_uploads("expiry"), ["p/old.bin"]);
        assert_eq!(m.keys("expiry").len(), 2, "{:?}", m.keys("expiry"));
        let expiry = std::time::Duration::from_secs(30);
        wirespeed_testkit::fs::eventually_within("the upload expired", expiry, || {
            s.req("HEAD", &loc, &[TUS], b"").status == 404
        });
        s.eventually("the expired upload swept", || {
            m.keys("expiry").is_empty() && m.multipart_uploads("expiry").is_empty()
        });
        assert_eq!(s.req("HEAD", &loc, &[TUS], b"").status, 404);
        assert_eq!(s.get("/old.bin").status, 404);
    }
}

#[test]
fn the_s3_backend_tells_the_change_stream_what_landed() {
    use wirespeed_service::storage::changes::{ChangeKind, Event};
    let Some(m) = Minio::start() else { return };
    m.create_bucket("changes");
    let storage = s3_storage(&m, "changes", "c");
    let mut sub = storage.changes().subscribe();
    let s = TestServer::on_storage(storage, ServiceConfig::default());
    let mut next = || match sub.try_next() {
        Some(Event::Change(c)) => (c.kind.clone(), c.path.to_string(), c.after.clone()),
        other => panic!("expected a change, got {other:?}"),
    };
    assert_eq!(s.put("/a.txt", b"12345").status, 201);
    let (kind, path, after) = next();
    assert_eq!((kind, path.as_str()), (ChangeKind::Created, "/a.txt"));
    assert_eq!(after.map(|v| v.size), Some(5));
    assert_eq!(s.put("/a.txt", b"v2").status, 204);
    assert_eq!(next().0, ChangeKind::Replaced);
    assert_eq!(s.req("MKCOL", "/d", &[], b"").status, 201);
    assert_eq!(next().0, ChangeKind::Created);
    let mv = [("Destination", "/d/b.txt")];
    assert_eq!(s.req("MOVE", "/a.txt", &mv, b"").status, 201);
    let (kind, path, _) = next();
    assert!(
        matches!(kind, ChangeKind::Moved { .. }) && path == "/d/b.txt",
        "{kind:?} {path}"
    );
    assert_eq!(s.req("DELETE", "/d/b.txt", &[], b"").status, 204);
    assert_eq!(next().0, ChangeKind::Deleted);
    assert!(s.get("/d/").status == 200 && sub.try_next().is_none());
}

#[path = "s3/search.rs"]
mod search;

fn trash_config() -> ServiceConfig {
    ServiceConfig {
        trash_days: 30,
        ..quota_config()
    }
}

fn trash_entries(s: &TestServer) -> Vec<serde_json::Value> {
    let r = s.get("/-/trash/");
    assert_eq!(r.status, 200, "{}", r.text());
    json(&r)["entries"].as_array().unwrap().clone()
}

fn trash_id(s: &TestServer, path: &str) -> String {
    let entries = trash_entries(s);
    let e = entries.iter().find(|e| e["path"] == path);
    let e = e.unwrap_or_else(|| panic!("{path} is not in the trash: {entries:?}"));
    e["id"].as_str().unwrap().to_string()
}

fn restore(s: &TestServer, id: &str) -> Resp {
    s.req("POST", &format!("/-/trash?restore={id}"), &[], b"")
}

#[test]
fn the_trash_keeps_deletes_and_overwrites_on_s3() {
    let Some(m) = Minio::start() else { return };
    m.create_bucket("trash");
    let s = TestServer::with_uploads_on(
        s3_storage(&m, "trash", "p"),
        trash_config(),
        wirespeed_service::UploadsConfig::default(),
    );
    let body = bytes(70_000, 3);
    let r = s.req(
        "PUT",
        "/d/doc.bin",
        &[("Repr-Digest", &sha256_field(&body))],
        &body,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(s.req("DELETE", "/d/doc.bin", &[], b"").status, 204);
    assert_eq!(s.get("/d/doc.bin").status, 404);
    assert!(!s.get("/").text().contains("wirespeed-trash"));
    let id = trash_id(&s, "/d/doc.bin");
    // Copied inside the bucket with its metadata, the record beside it.
    let keys = m.keys("trash");
    assert!(
        keys.contains(&format!("p/.wirespeed-trash/{id}")),
        "{keys:?}"
    );
    assert!(
        keys.contains(&format!("p/.wirespeed-trash/{id}.json")),
        "{keys:?}"
    );
    let meta = m.metadata("trash", &format!("p/.wirespeed-trash/{id}"));
    assert_eq!(meta["sha256"].as_str().map(str::len), Some(64));
    // The name taken meanwhile: 409, nothing replaced.
    assert_eq!(s.put("/d/doc.bin", b"new").status, 201);
    assert_eq!(restore(&s, &id).status, 409);
    assert_eq!(s.get("/d/doc.bin").body, b"new");
    assert_eq!(s.req("DELETE", "/d/doc.bin", &[], b"").status, 204);
    assert_eq!(restore(&s, &id).status, 201);
    assert_eq!(s.get("/d/doc.bin").body, body);

    // An overwrite by PUT and by MOVE keeps the old bytes.
    assert_eq!(s.put("/o.txt", b"v1").status, 201);
    assert_eq!(s.put("/o.txt", b"v2").status, 204);
    assert_eq!(s.put("/m.txt", b"moved").status, 201);
    let r = s.req("MOVE", "/m.txt", &[("Destination", "/o.txt")], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    let kept: Vec<_> = trash_entries(&s)
        .into_iter()
        .filter(|e| e["path"] == "/o.txt")
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(s.get("/o.txt").body, b"moved");

    // So does every other front that replaces an object: a form POST, an
    // encoded POST, a tus upload, a PUT with If-Match and a tus final.
    let form = b"--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"o.txt\"\r\n\r\nformed\r\n--b--\r\n";
    let ct = [("Content-Type", "multipart/form-data; boundary=b")];
    let r = s.req("POST", "/", &ct, form);
    assert!(r.status < 300, "form: {} {}", r.status, r.text());
    let json = br#"{"data": "ZW5jb2RlZA=="}"#;
    let ct = [("Content-Type", "application/json")];
    let r = s.req("POST", "/o.txt?field=data", &ct, json);
    assert!(r.status < 300, "json: {} {}", r.status, r.text());
    let h = [
        ("Tus-Resumable", "1.0.0"),
        ("Upload-Length", "3"),
        ("Content-Type", "application/offset+octet-stream"),
    ];
    let r = s.req("POST", "/-/uploads/o.txt", &h, b"tus");
    assert!(r.status < 300, "tus: {} {}", r.status, r.text());
    let etag = s.get("/o.txt").header("etag").unwrap().to_string();
    let r = s.req("PUT", "/o.txt", &[("If-Match", &etag)], b"matched");
    assert!(r.status < 300, "If-Match: {} {}", r.status, r.text());
    // And a tus final joining two parts over it.
    let mut parts = Vec::new();
    for piece in [&b"jo"[..], b"ined"] {
        let len = piece.len().to_string();
        let h = [
            ("Tus-Resumable", "1.0.0"),
            ("Upload-Length", len.as_str()),
            ("Upload-Concat", "partial"),
            ("Content-Type", "application/offset+octet-stream"),
        ];
        let r = s.req("POST", "/-/uploads/o.txt", &h, piece);
        assert_eq!(r.status, 201, "partial: {}", r.text());
        parts.push(r.header("location").unwrap().to_string());
    }
    let fin = format!("final;{}", parts.join(" "));
    let h = [("Tus-Resumable", "1.0.0"), ("Upload-Concat", fin.as_str())];
    let r = s.req("POST", "/-/uploads/o.txt", &h, b"");
    assert_eq!(r.status, 201, "final: {}", r.text());
    let kept: Vec<_> = trash_entries(&s)
        .into_iter()
        .filter(|e| e["path"] == "/o.txt")
        .collect();
    assert_eq!(kept.len(), 7, "{kept:?}");
    assert_eq!(s.get("/o.txt").body, b"joined");

    // A folder goes whole and comes back whole.
    assert_eq!(s.put("/f/a.txt", b"a").status, 201);
    assert_eq!(s.put("/f/sub/b.txt", b"b").status, 201);
    assert_eq!(s.req("DELETE", "/f/", &[], b"").status, 204);
    assert_eq!(s.get("/f/a.txt").status, 404);
    let id = trash_id(&s, "/f");
    assert_eq!(restore(&s, &id).status, 201);
    assert_eq!(s.get("/f/sub/b.txt").body, b"b");

    // Kept, it still counts in its folder's quota (1K for /team).
    assert_eq!(s.put("/team/a.bin", &[1; 800]).status, 201);
    assert_eq!(s.req("DELETE", "/team/a.bin", &[], b"").status, 204);
    assert_eq!(s.put("/team/b.bin", &[1; 300]).status, 507);

    // Expired (the records say long ago): the next listing sweeps them
    // all, bytes and records.
    m.boto3(
        "for o in s3.list_objects_v2(Bucket='trash', Prefix='p/.wirespeed-trash/')['Contents']:\n    \
         k = o['Key']\n    \
         if k.endswith('.json'):\n        \
         v = json.loads(s3.get_object(Bucket='trash', Key=k)['Body'].read())\n        \
         v['at'] = 1000\n        \
         s3.put_object(Bucket='trash', Key=k, Body=json.dumps(v))",
    );
    assert!(trash_entries(&s).is_empty());
    let keys = m.keys("trash");
    assert!(
        !keys.iter().any(|k| k.contains(".wirespeed-trash")),
        "{keys:?}"
    );
    assert_eq!(s.put("/team/b.bin", &[1; 300]).status, 201);
}

#[test]
fn a_user_quota_on_s3_is_refused_before_the_body_and_survives_a_restart() {
    use wirespeed_service::policy::password;
    let Some(m) = Minio::start() else { return };
    m.create_bucket("users");
    let text = format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n[paths.\"/\"]\nalice = \"rwd\"\nbob = \"rwd\"\n\
         [quota.user]\nalice = \"1K\"\n",
        password::hash(b"a-pw").unwrap(),
        password::hash(b"b-pw").unwrap()
    );
    let cfg = || ServiceConfig {
        users: Some(std::sync::Arc::new(
            wirespeed_service::Users::from_text("rules.toml", &text).unwrap(),
        )),
        ..ServiceConfig::default()
    };
    let auth = |who: &str, pw: &str| {
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::STANDARD.encode(format!("{who}:{pw}"));
        format!("Basic {raw}")
    };
    let (alice, bob) = (auth("alice", "a-pw"), auth("bob", "b-pw"));
    let head_only = |s: &TestServer, path: &str, len: u64| {
        let raw = format!(
            "PUT {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nExpect: 100-continue\r\n\
             Authorization: {alice}\r\nContent-Length: {len}\r\n\r\n"
        );
        s.raw(raw.as_bytes(), false)
    };
    let s = TestServer::on_storage(s3_storage(&m, "users", "p"), cfg());
    let put = |s: &TestServer, who: &str, path: &str, n: usize| {
        s.req("PUT", path, &[("Authorization", who)], &vec![7; n])
    };
    assert_eq!(put(&s, &alice, "/a/x", 800).status, 201);
    assert_eq!(put(&s, &bob, "/b/big", 5000).status, 201);
    let r = head_only(&s, "/b/y", 300);
    assert_eq!(r.status, 507, "{}", r.text());
    assert!(r.text().contains("alice's quota is full"), "{}", r.text());
    let r = s.req("GET", "/b/y", &[("Authorization", &alice)], b"");
    assert_eq!(r.status, 404);
    // A new server on the bucket counts from the objects' owners.
    drop(s);
    let s = TestServer::on_storage(s3_storage(&m, "users", "p"), cfg());
    assert_eq!(head_only(&s, "/b/y", 300).status, 507);
    assert_eq!(put(&s, &alice, "/b/y", 200).status, 201);
    // Deleted by another tool: the room is hers again.
    m.boto3("s3.delete_object(Bucket='users', Key='p/a/x')");
    assert_eq!(put(&s, &alice, "/b/z", 700).status, 201);
}
