//! WebDAV `MKCOL` and `MOVE` (what the browser page's New folder and Rename
//! use): statuses, `Overwrite: F`, containment, and what is on disk after.

mod common;

use common::TestServer;
use wirespeed_service::{Access, ServiceConfig, Writes};

#[test]
fn mkcol_creates_one_folder_and_refuses_the_rest() {
    let s = TestServer::start();
    let r = s.req("MKCOL", "/docs/", &[], b"");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("location"), Some("/docs/"));
    assert!(s.root.join("docs").is_dir());
    // Without the trailing slash too, and a name needing encoding.
    assert_eq!(s.req("MKCOL", "/docs/a%20b", &[], b"").status, 201);
    assert!(s.root.join("docs/a b").is_dir());
    // Something already there: 405 (RFC 4918 §9.3.1), folder or file.
    assert_eq!(s.req("MKCOL", "/docs/", &[], b"").status, 405);
    std::fs::write(s.root.join("f.txt"), b"x").unwrap();
    assert_eq!(s.req("MKCOL", "/f.txt", &[], b"").status, 405);
    assert_eq!(std::fs::read(s.root.join("f.txt")).unwrap(), b"x");
    assert_eq!(s.req("MKCOL", "/", &[], b"").status, 405);
    // A missing parent is a conflict; nothing is created on the way.
    assert_eq!(s.req("MKCOL", "/no/such/dir/", &[], b"").status, 409);
    assert!(!s.root.join("no").exists());
    // A parent that is a file: conflict too.
    assert_eq!(s.req("MKCOL", "/f.txt/sub/", &[], b"").status, 409);
    // A body is not understood (§9.3): 415, nothing made.
    assert_eq!(s.req("MKCOL", "/withbody/", &[], b"<x/>").status, 415);
    assert!(!s.root.join("withbody").exists());
    // The control namespace and reserved names are not folders.
    assert_eq!(s.req("MKCOL", "/-/x/", &[], b"").status, 404);
    assert_eq!(s.req("MKCOL", "/.wirespeed-tmp-1/", &[], b"").status, 404);
    assert!(!s.root.join(".wirespeed-tmp-1").exists());
    // The listing shows the new folder.
    let list = s.req("GET", "/docs/?format=json", &[], b"").text();
    assert!(list.contains("\"name\":\"a b\",\"type\":\"dir\""), "{list}");
}

#[test]
fn move_renames_files_and_folders() {
    let s = TestServer::start();
    std::fs::create_dir_all(s.root.join("a/inner")).unwrap();
    std::fs::write(s.root.join("a/inner/f.txt"), b"folder content").unwrap();
    std::fs::write(s.root.join("one.txt"), b"one").unwrap();
    // A file, Destination as a path.
    let r = s.req("MOVE", "/one.txt", &[("Destination", "/two.txt")], b"");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("location"), Some("/two.txt"));
    assert!(!s.root.join("one.txt").exists());
    assert_eq!(std::fs::read(s.root.join("two.txt")).unwrap(), b"one");
    // A folder, Destination as an absolute URI on this Host, encoded name.
    let r = s.req("MOVE", "/a/", &[("Destination", "http://test/b%20c/")], b"");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("location"), Some("/b%20c/"));
    assert_eq!(
        std::fs::read(s.root.join("b c/inner/f.txt")).unwrap(),
        b"folder content"
    );
    assert!(!s.root.join("a").exists());
    // Into another existing folder.
    assert_eq!(
        s.req(
            "MOVE",
            "/two.txt",
            &[("Destination", "/b%20c/inner/two.txt")],
            b""
        )
        .status,
        201
    );
    assert_eq!(
        std::fs::read(s.root.join("b c/inner/two.txt")).unwrap(),
        b"one"
    );
    // GET finds it at the new place, not the old.
    assert_eq!(s.get("/b%20c/inner/two.txt").body, b"one");
    assert_eq!(s.get("/two.txt").status, 404);
}

#[test]
fn move_overwrite_semantics() {
    let s = TestServer::start();
    std::fs::write(s.root.join("src.txt"), b"new").unwrap();
    std::fs::write(s.root.join("dst.txt"), b"old").unwrap();
    // Overwrite: F keeps the destination: 412, both files untouched.
    let r = s.req(
        "MOVE",
        "/src.txt",
        &[("Destination", "/dst.txt"), ("Overwrite", "F")],
        b"",
    );
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("dst.txt")).unwrap(), b"old");
    assert_eq!(std::fs::read(s.root.join("src.txt")).unwrap(), b"new");
    // Overwrite: T (the default) replaces it: 204.
    let r = s.req("MOVE", "/src.txt", &[("Destination", "/dst.txt")], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("dst.txt")).unwrap(), b"new");
    assert!(!s.root.join("src.txt").exists());
    // A bad Overwrite value is a bad request.
    std::fs::write(s.root.join("x.txt"), b"x").unwrap();
    let r = s.req(
        "MOVE",
        "/x.txt",
        &[("Destination", "/y.txt"), ("Overwrite", "maybe")],
        b"",
    );
    assert_eq!(r.status, 400);
    assert!(s.root.join("x.txt").exists());
}

#[test]
fn move_refuses_escapes_and_conflicts() {
    let s = TestServer::start();
    std::fs::create_dir_all(s.root.join("d/sub")).unwrap();
    std::fs::write(s.root.join("f.txt"), b"f").unwrap();
    let mv = |src: &str, dst: &str| s.req("MOVE", src, &[("Destination", dst)], b"").status;
    // No Destination.
    assert_eq!(s.req("MOVE", "/f.txt", &[], b"").status, 400);
    // Missing source.
    assert_eq!(mv("/missing.txt", "/m2.txt"), 404);
    // Missing destination parent: 409, source kept.
    assert_eq!(mv("/f.txt", "/no/such/f.txt"), 409);
    // Out of the root, onto the control namespace, onto the root, traversal.
    assert_eq!(mv("/f.txt", "/-/f.txt"), 403);
    assert_eq!(mv("/f.txt", "/%2D/f.txt"), 403);
    assert_eq!(mv("/f.txt", "/"), 403);
    assert_eq!(mv("/f.txt", "/../f.txt"), 400);
    assert_eq!(mv("/f.txt", "/d/%2e%2e/%2e%2e/f.txt"), 400);
    assert_eq!(mv("/f.txt", "/.wirespeed-tmp-x"), 403);
    // Another server's URI.
    assert_eq!(mv("/f.txt", "http://elsewhere.example/f.txt"), 502);
    // The root cannot move; a folder cannot move into itself.
    assert_eq!(mv("/", "/r/"), 403);
    assert_eq!(mv("/d/", "/d/sub/d/"), 409);
    // A file replaces a folder only with Overwrite: T (RFC 4918 §9.9.3;
    // the page sends F): with F it is 412 and nothing changes.
    let r = s.req(
        "MOVE",
        "/f.txt",
        &[("Destination", "/d"), ("Overwrite", "F")],
        b"",
    );
    assert_eq!(r.status, 412);
    // Same source and destination.
    assert_eq!(mv("/f.txt", "/f.txt"), 403);
    assert_eq!(std::fs::read(s.root.join("f.txt")).unwrap(), b"f");
    assert!(s.root.join("d/sub").is_dir());
    let mut names: Vec<String> = std::fs::read_dir(&s.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["d", "f.txt"]);
}

#[test]
fn move_out_through_a_symlink_is_refused() {
    let s = TestServer::start();
    std::fs::create_dir(s.tmp.path().join("outside")).unwrap();
    std::os::unix::fs::symlink(s.tmp.path().join("outside"), s.root.join("out")).unwrap();
    std::fs::write(s.root.join("f.txt"), b"f").unwrap();
    let r = s.req("MOVE", "/f.txt", &[("Destination", "/out/f.txt")], b"");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(s.root.join("f.txt").exists());
    assert!(!s.tmp.path().join("outside/f.txt").exists());
}

#[test]
fn mkcol_and_move_follow_the_write_policy_and_token() {
    let cfg = ServiceConfig {
        access: Access::new(["s3cret"], false),
        ..Default::default()
    };
    let s = TestServer::with(cfg);
    std::fs::write(s.root.join("f.txt"), b"f").unwrap();
    let r = s.req("MKCOL", "/d/", &[], b"");
    assert_eq!(r.status, 401);
    // A bearer challenge, never Basic (a browser would pop up its dialog).
    assert_eq!(
        r.header("www-authenticate"),
        Some("Bearer realm=\"wirespeed\"")
    );
    assert_eq!(
        s.req("MOVE", "/f.txt", &[("Destination", "/g.txt")], b"")
            .status,
        401
    );
    assert!(!s.root.join("d").exists() && s.root.join("f.txt").exists());
    let auth = ("Authorization", "Bearer s3cret");
    assert_eq!(s.req("MKCOL", "/d/", &[auth], b"").status, 201);
    assert_eq!(
        s.req("MOVE", "/f.txt", &[auth, ("Destination", "/d/g.txt")], b"")
            .status,
        201
    );
    assert!(s.root.join("d/g.txt").is_file());
    // Cross-origin pages may not do either.
    let evil = ("Sec-Fetch-Site", "cross-site");
    assert_eq!(s.req("MKCOL", "/e/", &[auth, evil], b"").status, 403);

    // Uploads on, deletes off: MKCOL yes, MOVE no (it removes a name).
    let s = TestServer::with(ServiceConfig {
        writes: Writes::exposed(true, false),
        ..Default::default()
    });
    std::fs::write(s.root.join("f.txt"), b"f").unwrap();
    assert_eq!(s.req("MKCOL", "/d/", &[], b"").status, 201);
    let r = s.req("MOVE", "/f.txt", &[("Destination", "/g.txt")], b"");
    assert_eq!(r.status, 403);
    assert!(r.text().contains("--allow-delete"), "{}", r.text());
    let s = TestServer::with(ServiceConfig {
        writes: Writes::read_only(),
        ..Default::default()
    });
    assert_eq!(s.req("MKCOL", "/d/", &[], b"").status, 403);
    assert!(!s.root.join("d").exists());
}
