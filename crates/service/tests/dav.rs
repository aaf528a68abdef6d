//! WebDAV class 1 and 2 (`dav`): litmus 0.13's five suites against the
//! real server, then each behaviour a client relies on, checked on the
//! wire and on disk: OPTIONS, PROPFIND depths and properties (the ETag GET
//! answers), PROPPATCH kept with the file, COPY/MOVE/DELETE of trees,
//! locks enforced on every write, and bad XML refused.
//!
//! litmus is an independent peer (apt `litmus`): outside CI a missing one
//! skips loudly; with `CI=true` it fails (`.ci/run` installs it).

mod common;

use std::process::Command;

use common::TestServer;
use wirespeed_service::{Access, Hidden, S3Config, S3Storage, ServiceConfig};

fn have_litmus() -> bool {
    let ok = Command::new("litmus")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() || !o.stdout.is_empty() || !o.stderr.is_empty());
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("litmus is needed in CI (bash .ci/run installs it)");
        }
        eprintln!("\n!!!!!! SKIPPED: litmus not found; bash .ci/run installs it !!!!!!\n");
    }
    ok
}

/// A PROPFIND with `depth` and `body`.
fn propfind(s: &TestServer, path: &str, depth: &str, body: &str) -> common::Resp {
    s.req(
        "PROPFIND",
        path,
        &[("Depth", depth), ("Content-Type", "application/xml")],
        body.as_bytes(),
    )
}

/// Run litmus's `suites` against `addr`; each must report 0 failed.
fn litmus(addr: std::net::SocketAddr, suites: &[&str]) {
    litmus_as(addr, suites, None)
}

/// [`litmus`], signed in as `user` (name, password) by HTTP Basic.
fn litmus_as(addr: std::net::SocketAddr, suites: &[&str], user: Option<(&str, &str)>) {
    let tmp = tempfile::tempdir().unwrap();
    // litmus writes debug.log and child.log into its working folder.
    let out = Command::new("timeout")
        .arg("180")
        .arg("litmus")
        .arg(format!("http://{addr}/"))
        .args(user.map(|(n, p)| [n, p]).into_iter().flatten())
        .env("TESTS", suites.join(" "))
        .current_dir(tmp.path())
        .output()
        .expect("run litmus");
    let text = String::from_utf8_lossy(&out.stdout);
    for suite in suites {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("<- summary for `{suite}'")))
            .unwrap_or_else(|| panic!("suite {suite} did not run:\n{text}"));
        assert!(line.contains(" 0 failed"), "{line}\n{text}");
    }
    assert!(!text.contains("WARNING"), "{text}");
    assert!(out.status.success(), "{text}");
}

#[test]
fn litmus_passes_all_five_suites() {
    if !have_litmus() {
        return;
    }
    let s = TestServer::start();
    litmus(s.addr, &["basic", "copymove", "props", "locks", "http"]);
}

#[test]
fn litmus_passes_all_five_suites_signed_in_on_a_rules_server() {
    // Anyone may read; only alice may write (users.toml as `serve --auth`
    // reads it): litmus signs in as alice by HTTP Basic for every request.
    if !have_litmus() {
        return;
    }
    let hash = wirespeed_service::policy::password::hash(b"alice-pw").unwrap();
    let rules =
        format!("[users]\nalice = \"{hash}\"\n[paths.\"/\"]\n\"*\" = \"r\"\nalice = \"rwd\"\n");
    let users = wirespeed_service::Users::from_text("users.toml", &rules).unwrap();
    let s = TestServer::with(ServiceConfig {
        users: Some(std::sync::Arc::new(users)),
        ..ServiceConfig::default()
    });
    litmus_as(
        s.addr,
        &["basic", "copymove", "props", "locks", "http"],
        Some(("alice", "alice-pw")),
    );
    // Without signing in, the same server takes no write.
    let r = s.req("MKCOL", "/anon/", &[], b"");
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(!s.root.join("anon").exists());
}

#[test]
fn litmus_passes_all_five_suites_on_s3() {
    // Dead properties as object metadata (`storage/s3/props.rs`): props
    // and the PROPPATCH steps of locks pass on S3 too.
    if !have_litmus() {
        return;
    }
    let Some(m) = wirespeed_testkit::minio::Minio::start() else {
        return;
    };
    m.create_bucket("dav");
    let mut c = S3Config::from_url("s3://dav/p").unwrap();
    c.endpoint = Some(m.endpoint());
    c.region = Some("us-east-1".into());
    c.credentials = Some((
        wirespeed_testkit::minio::USER.into(),
        wirespeed_testkit::minio::PASSWORD.into(),
    ));
    let s = TestServer::on_storage(S3Storage::new(&c).unwrap(), ServiceConfig::default());
    litmus(s.addr, &["basic", "copymove", "props", "locks", "http"]);
}

/// A server on `bucket/p` of `m`.
fn s3_server(m: &wirespeed_testkit::minio::Minio, bucket: &str) -> TestServer {
    let mut c = S3Config::from_url(&format!("s3://{bucket}/p")).unwrap();
    c.endpoint = Some(m.endpoint());
    c.region = Some("us-east-1".into());
    c.credentials = Some((
        wirespeed_testkit::minio::USER.into(),
        wirespeed_testkit::minio::PASSWORD.into(),
    ));
    TestServer::on_storage(S3Storage::new(&c).unwrap(), ServiceConfig::default())
}

#[test]
fn s3_keeps_dead_properties_as_object_metadata() {
    let Some(m) = wirespeed_testkit::minio::Minio::start() else {
        return;
    };
    m.create_bucket("props");
    let s = s3_server(&m, "props");
    let set = |v: &str| {
        format!(
            "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><x:color xmlns:x=\"urn:x\">{v}</x:color>\
             </D:prop></D:set></D:propertyupdate>"
        )
    };
    let get =
        "<D:propfind xmlns:D=\"DAV:\"><D:prop><x:color xmlns:x=\"urn:x\"/></D:prop></D:propfind>";
    // A file (its sha-256 record kept through the rewrite), a folder made
    // by MKCOL, and one that exists only as a prefix.
    let body = b"hello";
    let sum = common::sha256_field(body);
    let r = s.req("PUT", "/f.txt", &[("Repr-Digest", sum.as_str())], body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(s.req("MKCOL", "/made/", &[], b"").status, 201);
    assert_eq!(s.put("/implicit/inner.txt", b"i").status, 201);
    for (path, v) in [
        ("/f.txt", "red"),
        ("/made/", "green"),
        ("/implicit/", "blue"),
    ] {
        let r = s.req("PROPPATCH", path, &[], set(v).as_bytes());
        assert_eq!(r.status, 207, "{}", r.text());
        assert!(r.text().contains("HTTP/1.1 200"), "{path}: {}", r.text());
    }
    assert_eq!(s.get("/f.txt").body, body);
    let meta = m.metadata("props", "p/f.txt");
    assert!(meta.get("wirespeed-dav").is_some(), "{meta}");
    assert!(meta.get("sha256").is_some(), "{meta}");
    assert!(m
        .keys("props")
        .contains(&"p/implicit/.wirespeed-folder".to_string()));

    // Kept in the bucket: a fresh server on it reads them back.
    drop(s);
    let s = s3_server(&m, "props");
    for (path, v) in [
        ("/f.txt", "red"),
        ("/made/", "green"),
        ("/implicit/", "blue"),
    ] {
        let t = propfind(&s, path, "0", get).text();
        assert!(t.contains(&format!(">{v}</")), "{path}: {t}");
    }
    // They follow a MOVE (Overwrite: F too), and a new upload starts bare.
    let r = s.req(
        "MOVE",
        "/f.txt",
        &[("Destination", "/g.txt"), ("Overwrite", "F")],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(propfind(&s, "/g.txt", "0", get).text().contains(">red<"));
    assert_eq!(s.put("/g.txt", b"new").status, 204);
    assert!(!propfind(&s, "/g.txt", "0", get).text().contains(">red<"));

    // More than S3's 2 KB of metadata: 507, nothing changed.
    let big = "x".repeat(3000);
    let r = s.req("PROPPATCH", "/made/", &[], set(&big).as_bytes());
    assert_eq!(r.status, 207);
    assert!(r.text().contains("HTTP/1.1 507"), "{}", r.text());
    assert!(propfind(&s, "/made/", "0", get).text().contains(">green<"));
}

#[test]
fn options_say_class_2_and_propfind_answers_depth_0_and_1() {
    let s = TestServer::start();
    let r = s.req("OPTIONS", "/", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("dav"), Some("1, 2"));
    assert!(r.header("allow").unwrap().contains("PROPFIND"));
    std::fs::create_dir(s.root.join("sub")).unwrap();
    std::fs::write(s.root.join("a b.txt"), b"hello").unwrap();
    std::fs::write(s.root.join("hidden.key"), b"x").unwrap();

    // Depth 0 on a file: the ETag and length GET answers.
    let etag = s.get("/a%20b.txt").header("etag").unwrap().to_string();
    let r = propfind(&s, "/a%20b.txt", "0", "");
    assert_eq!(r.status, 207, "{}", r.text());
    let t = r.text();
    assert!(t.contains("<D:href>/a%20b.txt</D:href>"), "{t}");
    assert!(
        t.contains(&format!(
            "<D:getetag>{}</D:getetag>",
            etag.replace('"', "&quot;")
        )),
        "{t}"
    );
    assert!(
        t.contains("<D:getcontentlength>5</D:getcontentlength>"),
        "{t}"
    );
    assert!(t.contains("<D:supportedlock>"), "{t}");

    // Depth 1 on the root: itself and each member, folders with a slash.
    let r = propfind(&s, "/", "1", "");
    let t = r.text();
    assert_eq!(t.matches("<D:response>").count(), 4, "{t}");
    assert!(
        t.contains("<D:href>/sub/</D:href>") && t.contains("<D:collection/>"),
        "{t}"
    );

    // Named properties, quota among them; a missing one is 404.
    let body = "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\"><D:prop>\
        <D:quota-available-bytes/><D:quota-used-bytes/><D:nope/></D:prop></D:propfind>";
    let t = propfind(&s, "/", "0", body).text();
    assert!(t.contains("<D:quota-available-bytes>"), "{t}");
    assert!(t.contains("<D:quota-used-bytes>"), "{t}");
    assert!(
        t.contains("<D:nope/></D:prop><D:status>HTTP/1.1 404"),
        "{t}"
    );

    // propname: names, no values.
    let body = "<D:propfind xmlns:D=\"DAV:\"><D:propname/></D:propfind>";
    let t = propfind(&s, "/a%20b.txt", "0", body).text();
    assert!(t.contains("<D:getcontentlength/>"), "{t}");

    // Infinity (also when Depth is absent) is refused with the precondition.
    for r in [
        propfind(&s, "/", "infinity", ""),
        s.req("PROPFIND", "/", &[], b""),
    ] {
        assert_eq!(r.status, 403);
        assert!(r.text().contains("propfind-finite-depth"), "{}", r.text());
    }
    assert_eq!(propfind(&s, "/missing", "0", "").status, 404);
    // Only a folder needs the refusal: a file has no members (infinity is
    // depth 0 there) and a missing name is 404, as Apache answers.
    for r in [
        propfind(&s, "/a%20b.txt", "infinity", ""),
        s.req("PROPFIND", "/a%20b.txt", &[], b""),
    ] {
        assert_eq!(r.status, 207, "{}", r.text());
        assert!(r.text().contains("<D:getcontentlength>"), "{}", r.text());
    }
    assert_eq!(propfind(&s, "/missing", "infinity", "").status, 404);
    assert_eq!(s.req("PROPFIND", "/missing", &[], b"").status, 404);

    // Hidden names are neither listed nor described.
    let s2 = TestServer::with(ServiceConfig {
        hidden: Hidden::new(["*.key"]).unwrap(),
        ..Default::default()
    });
    std::fs::write(s2.root.join("hidden.key"), b"x").unwrap();
    std::fs::write(s2.root.join("shown.txt"), b"x").unwrap();
    let t = propfind(&s2, "/", "1", "").text();
    assert!(t.contains("shown.txt") && !t.contains("hidden.key"), "{t}");
    assert_eq!(propfind(&s2, "/hidden.key", "0", "").status, 404);
}

#[test]
fn depth_1_lists_a_big_folder_in_batches() {
    let s = TestServer::start();
    let n = 5000; // several listing batches (1024 each)
    for i in 0..n {
        std::fs::write(s.root.join(format!("f{i:05}")), b"").unwrap();
    }
    let r = propfind(&s, "/", "1", "");
    assert_eq!(r.status, 207);
    let t = r.text();
    assert_eq!(t.matches("<D:response>").count(), n + 1);
    assert!(t.contains("<D:href>/f04999</D:href>"));
    assert!(t.trim_end().ends_with("</D:multistatus>"));
}

#[test]
fn proppatch_keeps_dead_properties_with_the_file() {
    let s = TestServer::start();
    std::fs::write(s.root.join("doc.txt"), b"x").unwrap();
    let body = "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:schemas-microsoft-com:\" xmlns:t=\"urn:t\">\
        <D:set><D:prop><t:colour>red &amp; <t:deep>blue</t:deep></t:colour>\
        <Z:Win32LastModifiedTime>Mon, 01 Jan 2001 00:00:00 GMT</Z:Win32LastModifiedTime></D:prop></D:set></D:propertyupdate>";
    let r = s.req("PROPPATCH", "/doc.txt", &[], body.as_bytes());
    assert_eq!(r.status, 207, "{}", r.text());
    assert!(r.text().contains("HTTP/1.1 200 OK"), "{}", r.text());
    // Windows' timestamp set the file's mtime.
    let mtime = std::fs::metadata(s.root.join("doc.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(
        mtime
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
        978_307_200
    );
    // Kept on disk in the file's extended attribute (moves with the inode).
    let out = Command::new("getfattr")
        .args(["-n", "user.wirespeed.dav", "--only-values"])
        .arg(s.root.join("doc.txt"))
        .output();
    if let Some(out) = out.ok().filter(|o| o.status.success()) {
        assert!(String::from_utf8_lossy(&out.stdout).contains("colour"));
    }
    // MOVE keeps them, COPY copies them.
    let mv = s.req("MOVE", "/doc.txt", &[("Destination", "/moved.txt")], b"");
    assert_eq!(mv.status, 201);
    let cp = s.req("COPY", "/moved.txt", &[("Destination", "/copied.txt")], b"");
    assert_eq!(cp.status, 201);
    let ask =
        "<D:propfind xmlns:D=\"DAV:\"><D:prop><t:colour xmlns:t=\"urn:t\"/></D:prop></D:propfind>";
    for path in ["/moved.txt", "/copied.txt"] {
        let t = propfind(&s, path, "0", ask).text();
        assert!(
            t.contains("<P:colour xmlns:P=\"urn:t\">red &amp; <deep xmlns=\"urn:t\">blue</deep></P:colour>"),
            "{path}: {t}"
        );
    }
    // A protected property fails the whole request (403 + 424), nothing changes.
    let body = "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><D:getetag>x</D:getetag>\
        <x:other xmlns:x=\"urn:t\">1</x:other></D:prop></D:set></D:propertyupdate>";
    let t = s
        .req("PROPPATCH", "/moved.txt", &[], body.as_bytes())
        .text();
    assert!(
        t.contains("403 Forbidden") && t.contains("424 Failed Dependency"),
        "{t}"
    );
    let t = propfind(&s, "/moved.txt", "0", "").text();
    assert!(!t.contains("other"), "{t}");
}

#[test]
fn bad_xml_is_400_and_never_expanded() {
    let s = TestServer::start();
    std::fs::write(s.root.join("f"), b"x").unwrap();
    let laughs = "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]>\
        <D:propfind xmlns:D=\"DAV:\"><D:prop>&b;</D:prop></D:propfind>";
    let deep = format!("{}{}", "<a>".repeat(200), "</a>".repeat(200));
    for body in [
        "<D:propfind xmlns:D=\"DAV:\"><D:prop>",
        "<propfind xmlns=\"DAV:\"><prop><bar:foo xmlns:bar=\"\"/></prop></propfind>",
        laughs,
        deep.as_str(),
        "not xml",
    ] {
        assert_eq!(propfind(&s, "/f", "0", body).status, 400, "{body}");
        assert_eq!(
            s.req("PROPPATCH", "/f", &[], body.as_bytes()).status,
            400,
            "{body}"
        );
        assert_eq!(
            s.req("LOCK", "/f", &[], body.as_bytes()).status,
            400,
            "{body}"
        );
    }
    // Over 1 MiB: refused before it is read.
    let big = vec![b' '; (1 << 20) + 1];
    assert_eq!(s.req("PROPPATCH", "/f", &[], &big).status, 413);
}

#[test]
fn copy_move_and_delete_whole_trees() {
    let s = TestServer::start();
    std::fs::create_dir_all(s.root.join("a/b/c")).unwrap();
    std::fs::write(s.root.join("a/top.txt"), b"top").unwrap();
    std::fs::write(s.root.join("a/b/c/deep.txt"), b"deep").unwrap();
    // Depth infinity copies everything; Depth 0 only the folder.
    assert_eq!(
        s.req("COPY", "/a/", &[("Destination", "/all/")], b"")
            .status,
        201
    );
    assert_eq!(
        std::fs::read(s.root.join("all/b/c/deep.txt")).unwrap(),
        b"deep"
    );
    let r = s.req(
        "COPY",
        "/a/",
        &[("Destination", "/shallow/"), ("Depth", "0")],
        b"",
    );
    assert_eq!(r.status, 201);
    assert!(std::fs::read_dir(s.root.join("shallow"))
        .unwrap()
        .next()
        .is_none());
    // Overwrite: F keeps an existing destination; T replaces it whole (204).
    let r = s.req(
        "COPY",
        "/a/",
        &[("Destination", "/all/"), ("Overwrite", "F")],
        b"",
    );
    assert_eq!(r.status, 412);
    std::fs::write(s.root.join("all/extra.txt"), b"x").unwrap();
    assert_eq!(
        s.req("COPY", "/a/", &[("Destination", "/all/")], b"")
            .status,
        204
    );
    assert!(!s.root.join("all/extra.txt").exists());
    // A missing destination parent is a conflict.
    let r = s.req("COPY", "/a/top.txt", &[("Destination", "/no/such/x")], b"");
    assert_eq!(r.status, 409);
    // MOVE of a folder over a file with Overwrite: T replaces it.
    std::fs::write(s.root.join("file"), b"f").unwrap();
    assert_eq!(
        s.req("MOVE", "/all/", &[("Destination", "/file")], b"")
            .status,
        204
    );
    assert!(s.root.join("file/b/c/deep.txt").is_file());
    // Depth: 0 (what `wirespeed rm` without -r sends) removes only an
    // empty folder.
    let r = s.req("DELETE", "/file/", &[("Depth", "0")], b"");
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(s.root.join("file/b/c/deep.txt").is_file());
    assert_eq!(
        s.req("DELETE", "/shallow/", &[("Depth", "0")], b"").status,
        204
    );
    assert_eq!(s.req("DELETE", "/a/", &[("Depth", "1")], b"").status, 400);
    // DELETE takes a folder with all it holds.
    assert_eq!(s.req("DELETE", "/file/", &[], b"").status, 204);
    assert!(!s.root.join("file").exists());
    assert_eq!(s.req("DELETE", "/file/", &[], b"").status, 404);
    // A link back up inside the copied folder: the copy stops at a depth
    // limit (508 for the member) instead of filling the disk.
    std::fs::create_dir(s.root.join("loopy")).unwrap();
    std::fs::write(s.root.join("loopy/f"), b"f").unwrap();
    std::os::unix::fs::symlink("..", s.root.join("loopy/up")).unwrap();
    let r = s.req("COPY", "/loopy/", &[("Destination", "/loopcopy/")], b"");
    assert_eq!(r.status, 207, "{}", r.text());
    assert!(r.text().contains("508 Loop Detected"), "{}", r.text());
    let r = s.req("COPY", "/loopy/up/", &[("Destination", "/viaLink/")], b"");
    assert_eq!(r.status, 403, "{}", r.text());
    // The copies' bytes are the source's.
    assert_eq!(s.get("/a/b/c/deep.txt").body, b"deep");
}

#[test]
fn delete_reports_what_it_could_not_remove() {
    // A hidden name is kept (as if absent), so its folder cannot go.
    let s = TestServer::with(ServiceConfig {
        hidden: Hidden::new(["*.key"]).unwrap(),
        ..Default::default()
    });
    std::fs::create_dir_all(s.root.join("d/keep")).unwrap();
    std::fs::write(s.root.join("d/free.txt"), b"x").unwrap();
    std::fs::write(s.root.join("d/keep/secret.key"), b"x").unwrap();
    std::fs::write(s.root.join("d/keep/other.txt"), b"x").unwrap();
    let r = s.req("DELETE", "/d/", &[], b"");
    assert_eq!(r.status, 207, "{}", r.text());
    let t = r.text();
    assert!(
        t.contains("<D:href>/d/keep/</D:href><D:status>HTTP/1.1 403"),
        "{t}"
    );
    assert!(!t.contains("secret"), "{t}");
    assert!(!s.root.join("d/free.txt").exists());
    assert!(!s.root.join("d/keep/other.txt").exists());
    assert!(s.root.join("d/keep/secret.key").exists());
}

/// LOCK `path` (exclusive unless `shared`), returning the token.
fn lock(s: &TestServer, path: &str, depth: &str, shared: bool) -> String {
    let scope = if shared { "shared" } else { "exclusive" };
    let body = format!(
        "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:{scope}/></D:lockscope>\
         <D:locktype><D:write/></D:locktype><D:owner>tests</D:owner></D:lockinfo>"
    );
    let r = s.req(
        "LOCK",
        path,
        &[("Depth", depth), ("Timeout", "Second-60")],
        body.as_bytes(),
    );
    assert!(
        r.status == 200 || r.status == 201,
        "{} {}",
        r.status,
        r.text()
    );
    assert!(
        r.text().contains("<D:owner>tests</D:owner>"),
        "{}",
        r.text()
    );
    let t = r.header("lock-token").unwrap();
    t.trim_start_matches('<').trim_end_matches('>').to_string()
}

#[test]
fn locks_guard_every_write() {
    let s = TestServer::start();
    std::fs::create_dir(s.root.join("dir")).unwrap();
    std::fs::write(s.root.join("dir/f.txt"), b"v1").unwrap();
    let tok = lock(&s, "/dir/f.txt", "0", false);
    let with = format!("(<{tok}>)");
    let if_tok = [("If", with.as_str())];
    // Without the token: every write is 423, nothing changes.
    assert_eq!(s.put("/dir/f.txt", b"v2").status, 423);
    assert_eq!(s.req("DELETE", "/dir/f.txt", &[], b"").status, 423);
    assert_eq!(
        s.req("MOVE", "/dir/f.txt", &[("Destination", "/g")], b"")
            .status,
        423
    );
    std::fs::write(s.root.join("other"), b"o").unwrap();
    assert_eq!(
        s.req("COPY", "/other", &[("Destination", "/dir/f.txt")], b"")
            .status,
        423
    );
    let pp = "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><x xmlns=\"urn:x\">1</x></D:prop></D:set></D:propertyupdate>";
    assert_eq!(
        s.req("PROPPATCH", "/dir/f.txt", &[], pp.as_bytes()).status,
        423
    );
    assert_eq!(std::fs::read(s.root.join("dir/f.txt")).unwrap(), b"v1");
    // Another exclusive lock is refused; a depth-0 lock leaves siblings free.
    let body = "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>";
    assert_eq!(
        s.req("LOCK", "/dir/f.txt", &[], body.as_bytes()).status,
        423
    );
    assert_eq!(s.put("/dir/sibling", b"s").status, 201);
    // With the token (untagged, or tagged with the URL): allowed.
    assert_eq!(s.req("PUT", "/dir/f.txt", &if_tok, b"v2").status, 204);
    let tagged = format!("<http://{}/dir/f.txt> (<{tok}>)", s.addr);
    let r = s.req(
        "PROPPATCH",
        "/dir/f.txt",
        &[("If", tagged.as_str())],
        pp.as_bytes(),
    );
    assert_eq!(r.status, 207);
    // A wrong ETag in the If header is 412, a token not held is 412.
    let r = s.req(
        "PUT",
        "/dir/f.txt",
        &[("If", &format!("(<{tok}> [\"nope\"])"))],
        b"v3",
    );
    assert_eq!(r.status, 412);
    // Refresh, lockdiscovery, unlock.
    let r = s.req(
        "LOCK",
        "/dir/f.txt",
        &[("If", with.as_str()), ("Timeout", "Second-100")],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<D:timeout>Second-"), "{}", r.text());
    let t = propfind(&s, "/dir/f.txt", "0", "").text();
    assert!(t.contains(&tok), "{t}");
    let lt = format!("<{tok}>");
    assert_eq!(
        s.req("UNLOCK", "/dir/f.txt", &[("Lock-Token", lt.as_str())], b"")
            .status,
        204
    );
    assert_eq!(
        s.req("UNLOCK", "/dir/f.txt", &[("Lock-Token", lt.as_str())], b"")
            .status,
        409
    );
    assert_eq!(s.req("PUT", "/dir/f.txt", &if_tok, b"v4").status, 412);
    assert_eq!(s.put("/dir/f.txt", b"v4").status, 204);

    // A depth-infinity lock on a folder covers new members and deletes.
    let tok = lock(&s, "/dir/", "infinity", false);
    assert_eq!(s.put("/dir/new.txt", b"n").status, 423);
    assert_eq!(s.req("MKCOL", "/dir/sub/", &[], b"").status, 423);
    assert_eq!(s.req("DELETE", "/dir/", &[], b"").status, 423);
    let tagged = format!("</dir/> (<{tok}>)");
    assert_eq!(
        s.req("PUT", "/dir/new.txt", &[("If", tagged.as_str())], b"n")
            .status,
        201
    );
    // Shared locks stack; an exclusive one then conflicts.
    std::fs::write(s.root.join("shared.txt"), b"s").unwrap();
    let a = lock(&s, "/shared.txt", "0", true);
    let _b = lock(&s, "/shared.txt", "0", true);
    assert_eq!(
        s.req("LOCK", "/shared.txt", &[], body.as_bytes()).status,
        423
    );
    assert_eq!(
        s.req("PUT", "/shared.txt", &[("If", &format!("(<{a}>)"))], b"t")
            .status,
        204
    );
    // LOCK of an unmapped URL makes an empty file (201).
    let r = s.req("LOCK", "/fresh.txt", &[], body.as_bytes());
    assert_eq!(r.status, 201);
    assert_eq!(std::fs::read(s.root.join("fresh.txt")).unwrap(), b"");
}

#[test]
fn webdav_follows_the_policy_and_token() {
    let s = TestServer::with(ServiceConfig {
        access: Access::new(["s3cret"], true),
        ..Default::default()
    });
    std::fs::write(s.root.join("f"), b"x").unwrap();
    // A private server: even PROPFIND needs the token.
    assert_eq!(propfind(&s, "/", "1", "").status, 401);
    for m in ["PROPPATCH", "LOCK", "COPY", "DELETE"] {
        let r = s.req(m, "/f", &[("Destination", "/g")], b"");
        assert_eq!(r.status, 401, "{m}");
    }
    let auth = ("Authorization", "Bearer s3cret");
    let r = s.req("PROPFIND", "/", &[auth, ("Depth", "1")], b"");
    assert_eq!(r.status, 207);
    assert_eq!(
        s.req("COPY", "/f", &[auth, ("Destination", "/g")], b"")
            .status,
        201
    );
    assert!(s.root.join("g").is_file());
}

#[test]
fn a_copy_keeps_the_upload_size_limit() {
    let s = TestServer::with(ServiceConfig {
        max_body: Some(10),
        ..ServiceConfig::default()
    });
    std::fs::write(s.root.join("big.bin"), [7u8; 11]).unwrap();
    std::fs::write(s.root.join("small.bin"), [7u8; 10]).unwrap();
    let r = s.req("COPY", "/big.bin", &[("Destination", "/big2.bin")], b"");
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("--max-body"), "{}", r.text());
    assert!(!s.root.join("big2.bin").exists());
    let r = s.req("COPY", "/small.bin", &[("Destination", "/small2.bin")], b"");
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn a_folder_with_a_link_to_its_own_file_is_deleted_whole() {
    let s = TestServer::start();
    std::fs::create_dir(s.root.join("d")).unwrap();
    std::fs::write(s.root.join("d/a.txt"), b"a").unwrap();
    // "a.txt" sorts before "z-link": the target goes first, the link dangles.
    std::os::unix::fs::symlink("a.txt", s.root.join("d/z-link")).unwrap();
    let r = s.req("DELETE", "/d/", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(!s.root.join("d").exists());
}
