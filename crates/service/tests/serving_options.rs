//! The operator's serving options over raw HTTP: hidden names
//! (`--hidden`), symlinks leading outside (`--allow-symlink`), a folder's
//! `index.html` (`--index`) and scripts in served files (`--allow-scripts`);
//! the rules file's `[rate]`, held across connections.

mod common;

use common::TestServer;
use wirespeed_net::ServerConfig;
use wirespeed_service::{Hidden, ServiceConfig, UploadsConfig};

fn hiding(patterns: &[&str]) -> TestServer {
    TestServer::with(ServiceConfig {
        hidden: Hidden::new(patterns).unwrap(),
        ..Default::default()
    })
}

#[test]
fn hidden_names_are_neither_listed_nor_served_nor_taken() {
    let s = hiding(&[".git/", ".env*"]);
    std::fs::create_dir_all(s.root.join("proj/.git")).unwrap();
    std::fs::write(s.root.join("proj/.git/config"), b"secret").unwrap();
    std::fs::write(s.root.join("proj/.env.local"), b"KEY=1").unwrap();
    std::fs::write(s.root.join("proj/.gitignore"), b"target").unwrap();
    std::fs::write(s.root.join("proj/main.rs"), b"fn main() {}").unwrap();

    let json = s.get("/proj/?format=json").text();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [".gitignore", "main.rs"]);
    let html = s.get("/proj/").text();
    assert!(!html.contains(".env") && !html.contains(".git/"), "{html}");

    for path in ["/proj/.git/config", "/proj/.git/", "/proj/.env.local"] {
        assert_eq!(s.get(path).status, 404, "GET {path}");
        assert_eq!(s.req("HEAD", path, &[], b"").status, 404, "HEAD {path}");
    }
    assert_eq!(s.put("/proj/.env", b"x").status, 404);
    assert_eq!(s.req("DELETE", "/proj/.env.local", &[], b"").status, 404);
    assert_eq!(s.req("MKCOL", "/proj/.git/hooks/", &[], b"").status, 404);
    let moved = s.req(
        "MOVE",
        "/proj/main.rs",
        &[("Destination", "/proj/.env.prod")],
        b"",
    );
    assert_eq!(moved.status, 404);
    // A form upload of a hidden name is refused too.
    let body = "--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\".env\"\r\n\r\nx\r\n--B--\r\n";
    let r = s.req(
        "POST",
        "/proj/",
        &[("Content-Type", "multipart/form-data; boundary=B")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(
        std::fs::read(s.root.join("proj/.env.local")).unwrap(),
        b"KEY=1"
    );
    assert!(!s.root.join("proj/.env").exists());
    assert!(s.root.join("proj/main.rs").exists());
    // Look-alikes are served.
    assert_eq!(s.get("/proj/.gitignore").body, b"target");
}

/// The WebDAV and resumable fronts refuse hidden names as the plain routes
/// do: described, changed, copied onto, locked, or named by an upload's
/// creation (a tus creation in a folder names its file in its metadata,
/// which only the upload's target check sees).
#[test]
fn hidden_names_stay_refused_by_webdav_and_resumable_uploads() {
    let s = TestServer::with_uploads(
        ServiceConfig {
            hidden: Hidden::new([".git/", ".env*"]).unwrap(),
            ..Default::default()
        },
        UploadsConfig::default(),
    );
    std::fs::create_dir_all(s.root.join("proj/.git")).unwrap();
    std::fs::write(s.root.join("proj/.env.local"), b"KEY=1").unwrap();
    std::fs::write(s.root.join("proj/main.rs"), b"fn main() {}").unwrap();

    let listed = s.req("PROPFIND", "/proj/", &[("Depth", "1")], b"");
    assert_eq!(listed.status, 207);
    let t = listed.text();
    assert!(
        t.contains("main.rs") && !t.contains(".env") && !t.contains(".git"),
        "{t}"
    );
    let depth0 = [("Depth", "0")];
    assert_eq!(
        s.req("PROPFIND", "/proj/.env.local", &depth0, b"").status,
        404
    );
    assert_eq!(s.req("PROPFIND", "/proj/.git/", &depth0, b"").status, 404);
    let patch = br#"<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z"><D:set><D:prop><Z:a>1</Z:a></D:prop></D:set></D:propertyupdate>"#;
    assert_eq!(
        s.req("PROPPATCH", "/proj/.env.local", &[], patch).status,
        404
    );
    let lock = br#"<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"#;
    assert_eq!(s.req("LOCK", "/proj/.env.new", &[], lock).status, 404);
    let copied = s.req(
        "COPY",
        "/proj/main.rs",
        &[("Destination", "/proj/.env.copy")],
        b"",
    );
    assert_eq!(copied.status, 404);

    let tus = [
        ("Tus-Resumable", "1.0.0"),
        ("Upload-Length", "1"),
        ("Upload-Metadata", "filename LmVudg=="), // ".env"
    ];
    let r = s.req("POST", "/-/uploads/proj/", &tus, b"");
    assert_eq!(r.status, 404, "{}", r.text());
    let r = s.req("POST", "/-/uploads/proj/.env.x", &tus[..2], b"");
    assert_eq!(r.status, 404, "{}", r.text());
    let ietf = [
        ("Upload-Draft-Interop-Version", "8"),
        ("Upload-Complete", "?1"),
    ];
    assert_eq!(s.req("PUT", "/proj/.env", &ietf, b"x").status, 404);

    assert_eq!(
        std::fs::read(s.root.join("proj/.env.local")).unwrap(),
        b"KEY=1"
    );
    for made in [".env", ".env.copy", ".env.new", ".env.x"] {
        assert!(!s.root.join("proj").join(made).exists(), "{made}");
    }
    assert!(
        !s.root.join(".wirespeed-uploads").exists() || s.names(".wirespeed-uploads").is_empty()
    );
}

#[test]
fn a_symlink_leading_outside_is_refused_saying_why_unless_allowed() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("shared.txt"), b"from outside").unwrap();
    let link = |s: &TestServer| {
        std::os::unix::fs::symlink(outside.path(), s.root.join("linked")).unwrap();
    };
    let s = TestServer::start();
    link(&s);
    let r = s.get("/linked/shared.txt");
    assert_eq!(r.status, 403);
    let text = r.text();
    assert!(
        text.contains("outside the served folder") && text.contains("--allow-symlink"),
        "{text}"
    );

    let s = TestServer::with_storage(
        |local| local.with_symlinks_outside(true),
        ServiceConfig::default(),
        ServerConfig::default(),
    );
    link(&s);
    assert_eq!(s.get("/linked/shared.txt").body, b"from outside");
    let json = s.get("/linked/?format=json").text();
    assert!(json.contains("shared.txt"), "{json}");
}

#[test]
fn index_serves_a_folders_index_html_and_scripts_stay_sandboxed_by_default() {
    let page = b"<!doctype html><script>document.title='ran'</script>";
    let site = |s: &TestServer| {
        std::fs::create_dir_all(s.root.join("site/empty")).unwrap();
        std::fs::write(s.root.join("site/index.html"), page).unwrap();
    };
    // Default: the listing, and served HTML sandboxed.
    let s = TestServer::start();
    site(&s);
    let r = s.get("/site/");
    assert!(r.text().contains("<table id=\"rows\">"), "a listing");
    let r = s.get("/site/index.html");
    assert_eq!(r.header("content-security-policy"), Some("sandbox"));

    let s = TestServer::with(ServiceConfig {
        index: true,
        allow_scripts: true,
        ..Default::default()
    });
    site(&s);
    let r = s.get("/site/");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, page);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("content-security-policy"), None, "scripts allowed");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    // A folder without one still lists; a folder URL without '/' still
    // redirects first.
    assert!(s.get("/site/empty/").text().contains("<table id=\"rows\">"));
    assert_eq!(s.get("/site").status, 301);

    // --index alone keeps the sandbox.
    let s = TestServer::with(ServiceConfig {
        index: true,
        ..Default::default()
    });
    site(&s);
    let r = s.get("/site/");
    assert_eq!(r.body, page);
    assert_eq!(r.header("content-security-policy"), Some("sandbox"));
}

/// `page` with every nonce value left out.
fn without_nonce(page: &[u8]) -> Vec<u8> {
    // Every tag the page's policy admits carries it (the script, the
    // module preloads).
    let mut text = String::from_utf8_lossy(page).into_owned();
    while let Some((head, rest)) = text.split_once(" nonce=\"") {
        let tail = rest.split_once('"').map_or("", |(_, t)| t);
        text = format!("{head}{tail}");
    }
    text.into_bytes()
}

#[test]
fn listings_and_assets_are_gzipped_when_accepted_files_never() {
    use std::io::Read;
    let gunzip = |b: &[u8]| {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(b)
            .read_to_end(&mut out)
            .expect("valid gzip");
        out
    };
    let s = TestServer::start();
    for i in 0..2000 {
        std::fs::write(s.root.join(format!("file-{i:05}.txt")), b"x").unwrap();
    }
    let page = vec![b'a'; 100_000];
    std::fs::write(s.root.join("big.html"), &page).unwrap();
    for (path, accept) in [("/", "text/html"), ("/?format=json", "application/json")] {
        let plain = s.req("GET", path, &[("Accept", accept)], b"");
        assert_eq!(plain.header("content-encoding"), None, "{path}");
        assert_eq!(plain.header("vary"), Some("Accept, Accept-Encoding"));
        let gz = s.req(
            "GET",
            path,
            &[("Accept", accept), ("Accept-Encoding", "gzip, deflate, br")],
            b"",
        );
        assert_eq!(gz.status, 200);
        assert_eq!(gz.header("content-encoding"), Some("gzip"), "{path}");
        assert_eq!(gz.header("vary"), Some("Accept, Accept-Encoding"));
        // The same listing, but for the page's script nonce (fresh on each).
        assert_eq!(
            without_nonce(&gunzip(&gz.body)),
            without_nonce(&plain.body),
            "{path}: same listing"
        );
        assert!(gz.body.len() * 5 < plain.body.len(), "{path}: compressed");
        let refused = s.req("GET", path, &[("Accept-Encoding", "gzip;q=0")], b"");
        assert_eq!(refused.header("content-encoding"), None);
    }
    let js = wirespeed_service::assets::url("page.js");
    let plain = s.get(&js);
    let gz = s.req("GET", &js, &[("Accept-Encoding", "gzip")], b"");
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert_eq!(gz.header("vary"), Some("Accept-Encoding"));
    assert_eq!(gunzip(&gz.body), plain.body);
    // A stored file: exact bytes, exact ranges, never encoded.
    let r = s.req("GET", "/big.html", &[("Accept-Encoding", "gzip")], b"");
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.body, page);
    let r = s.req(
        "GET",
        "/big.html",
        &[("Accept-Encoding", "gzip"), ("Range", "bytes=10-19")],
        b"",
    );
    assert_eq!((r.status, r.body.len()), (206, 10));
    // curl, an independent decoder, reads the same listing back.
    let (ok, out) =
        wirespeed_testkit::tools::curl(&["-s", "--compressed", &s.url("/?format=json")]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2001);
}

/// Hidden names were folded into the policy: archives, which ask it per
/// entry, leave them out too (they used to carry `.git/config`), and a
/// share link of the folder reaches none of them.
#[test]
fn hidden_names_stay_out_of_archives_and_share_links() {
    use std::sync::Arc;
    use wirespeed_service::policy::shares::DEFAULT_MAX_EXPIRY;
    use wirespeed_service::policy::Shares;
    use wirespeed_service::Rights;
    let shares = Arc::new(Shares::new([3; 32], DEFAULT_MAX_EXPIRY));
    let s = TestServer::with(ServiceConfig {
        hidden: Hidden::new([".git", "*.key"]).unwrap(),
        shares: Some(shares.clone()),
        ..Default::default()
    });
    std::fs::create_dir_all(s.root.join("proj/.git")).unwrap();
    std::fs::write(s.root.join("proj/.git/config"), b"secret").unwrap();
    std::fs::write(s.root.join("proj/id.key"), b"secret").unwrap();
    std::fs::write(s.root.join("proj/main.rs"), b"fn main() {}").unwrap();
    let tar = s.get("/proj/?archive=tar");
    assert_eq!(tar.status, 200);
    let names: Vec<String> = tar
        .body
        .chunks(512)
        .filter(|b| b.len() == 512 && b[257..262] == *b"ustar")
        .map(|b| {
            String::from_utf8_lossy(&b[..100])
                .trim_end_matches('\0')
                .to_string()
        })
        .collect();
    assert!(names.iter().any(|n| n.ends_with("main.rs")), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.contains(".git") || n.ends_with(".key")),
        "{names:?}"
    );
    let zip = s.get("/proj/?archive=zip");
    assert_eq!(zip.status, 200);
    assert!(!String::from_utf8_lossy(&zip.body).contains("secret"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let by = wirespeed_service::policy::shares::TOKEN_MINTER;
    let (_, link) = shares.mint("/proj/", Rights::READ, 60, by, now).unwrap();
    assert_eq!(s.get(&format!("/proj/main.rs?share={link}")).status, 200);
    for hidden in ["/proj/id.key", "/proj/.git/config"] {
        assert_eq!(s.get(&format!("{hidden}?share={link}")).status, 404);
    }
}

/// `[rate]` paces a principal over all of its connections: four anonymous
/// downloads (and then uploads) from one address share one "2M" bucket, so
/// 4 MiB take about two seconds however they are spread; a user with no
/// rate is not slowed. Loose bounds: speed is the benchmark's to measure
/// (bench/fair-bandwidth.sh).
#[test]
fn a_rate_holds_across_connections_and_spares_the_unpaced() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    use wirespeed_service::policy::password;
    use wirespeed_service::Users;

    let text = format!(
        "[users]\nalice = \"{}\"\n[paths.\"/\"]\n\"*\" = \"rw\"\nalice = \"rw\"\n\
         [rate.user]\n\"*\" = \"2M\"\n",
        password::hash(b"alice-pw").unwrap()
    );
    let users = Arc::new(Users::from_text("rules.toml", &text).unwrap());
    let s = TestServer::with(ServiceConfig {
        users: Some(users),
        ..Default::default()
    });
    let mib = vec![7u8; 1 << 20];
    for i in 0..4 {
        std::fs::write(s.root.join(format!("f{i}")), &mib).unwrap();
    }
    std::fs::write(s.root.join("big"), vec![1u8; 4 << 20]).unwrap();

    // One 2 MiB/s bucket for the address: 4 MiB in about 1.9 s (the bucket
    // starts with a tenth of a second's worth).
    let timed = |f: &(dyn Fn(usize) -> usize + Sync)| {
        let t = Instant::now();
        let total: usize = std::thread::scope(|sc| {
            let runs: Vec<_> = (0..4).map(|i| sc.spawn(move || f(i))).collect();
            runs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        (total, t.elapsed())
    };
    let (got, took) = timed(&|i| {
        let r = s.get(&format!("/f{i}"));
        assert_eq!(r.status, 200);
        r.body.len()
    });
    assert_eq!(got, 4 << 20);
    assert!(
        (Duration::from_millis(1500)..Duration::from_secs(5)).contains(&took),
        "4 MiB over 4 connections at 2 MiB/s took {took:?}"
    );
    // Uploads are paced apart, at the same rate: 2 MiB in about 0.9 s.
    let half = vec![3u8; 512 << 10];
    let (_, took) = timed(&|i| {
        let r = s.put(&format!("/up{i}"), &half);
        assert_eq!(r.status, 201, "{}", r.text());
        0
    });
    assert!(
        (Duration::from_millis(600)..Duration::from_secs(4)).contains(&took),
        "2 MiB up over 4 connections at 2 MiB/s took {took:?}"
    );
    assert_eq!(std::fs::read(s.root.join("up3")).unwrap(), half);
    // alice has no rate: her 4 MiB are not held to the anonymous 2 MiB/s.
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "alice:alice-pw")
    );
    // Signed in once first: the password check is remembered, not timed.
    assert_eq!(
        s.req("HEAD", "/big", &[("Authorization", &auth)], b"")
            .status,
        200
    );
    let t = Instant::now();
    let r = s.req("GET", "/big", &[("Authorization", &auth)], b"");
    assert_eq!((r.status, r.body.len()), (200, 4 << 20));
    assert!(
        t.elapsed() < Duration::from_millis(1200),
        "an unpaced user took {:?}",
        t.elapsed()
    );
}
