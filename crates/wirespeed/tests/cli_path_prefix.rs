//! `serve --path-prefix /files` behind nginx's `location /files/` block as
//! docs/serving.md gives it: our client (`put`, `put --protocol tus`,
//! `get -r`, `share`), rclone over WebDAV, and curl's COPY, MOVE and
//! LOCK with an `If` header, all through the prefix; and the URLs the
//! server makes, asked directly.

mod common;

use std::path::Path;
use std::process::Command;

use common::{docs_nginx_block, run_bounded, Serve, BIN};
use wirespeed_testkit::nginx::Nginx;

const TOKEN: &str = "prefix-secret";

/// The client with the token, bounded; stdout.
fn client(args: &[&str]) -> String {
    let state = tempfile::tempdir().unwrap();
    let out = run_bounded(
        Command::new(BIN)
            .args(args)
            .env("WIRESPEED_TOKEN", TOKEN)
            .env("XDG_STATE_HOME", state.path())
            .env_remove("RUST_LOG"),
    );
    String::from_utf8(out.stdout).unwrap()
}

/// curl, bounded; (status, head and body as text).
fn curl(args: &[&str]) -> (u16, String) {
    let out = run_bounded(
        Command::new("curl")
            .args(["-sS", "-i", "--max-time", "20", "-H"])
            .arg(format!("Authorization: Bearer {TOKEN}"))
            .args(args),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // The final answer's status (after any 100 Continue).
    let status = text
        .lines()
        .rev()
        .filter(|l| l.starts_with("HTTP/"))
        .filter_map(|l| l.split(' ').nth(1)?.parse().ok())
        .find(|s| *s >= 200)
        .unwrap_or_else(|| panic!("no status in {text}"));
    (status, text)
}

fn rclone_missing() -> bool {
    if Command::new("rclone").arg("version").output().is_ok() {
        return false;
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "rclone is missing in CI (.ci/run installs it)"
    );
    eprintln!("\n!!!!!! SKIPPED: rclone is not installed !!!!!!\n");
    true
}

fn start(root: &Path) -> (Serve, Option<Nginx>) {
    let srv = Serve::start(
        root,
        &[
            "--path-prefix",
            "/files",
            "--token",
            TOKEN,
            "--state-dir",
            root.parent().unwrap().join("state").to_str().unwrap(),
        ],
    );
    let nginx = Nginx::serving("", &docs_nginx_block(srv.addr));
    (srv, nginx)
}

#[test]
fn our_client_puts_gets_and_shares_through_the_prefix() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("d/sub")).unwrap();
    std::fs::write(root.join("d/a.txt"), "file a").unwrap();
    std::fs::write(root.join("d/sub/b.txt"), "file b").unwrap();
    let (_srv, Some(nginx)) = start(&root) else {
        return;
    };
    let base = format!("{}/files", nginx.base());
    // Above the client's resumable size: the default protocol is the
    // IETF draft (created on the file's URL), then tus.
    let data = wirespeed_testkit::data::bytes(9 << 20, 7);
    let local = tmp.path().join("up.bin");
    std::fs::write(&local, &data).unwrap();

    // The default protocol, then tus: both create under the prefix and
    // follow the Locations the server gives.
    client(&[
        "put",
        "-q",
        local.to_str().unwrap(),
        &format!("{base}/in/one.bin"),
    ]);
    assert_eq!(std::fs::read(root.join("in/one.bin")).unwrap(), data);
    client(&[
        "put",
        "-q",
        "--protocol",
        "tus",
        local.to_str().unwrap(),
        &format!("{base}/in/two.bin"),
    ]);
    assert_eq!(std::fs::read(root.join("in/two.bin")).unwrap(), data);

    let got = tmp.path().join("got");
    std::fs::create_dir_all(&got).unwrap();
    client(&[
        "get",
        "-q",
        "-r",
        &format!("{base}/d/"),
        got.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read_to_string(got.join("d/sub/b.txt")).unwrap(),
        "file b"
    );
    let ls = client(&["ls", &format!("{base}/d/")]);
    assert!(ls.contains("a.txt") && ls.contains("sub/"), "{ls}");

    // A link made through the prefix names it, and opens for a guest.
    let link = client(&["share", &format!("{base}/d/")]);
    let link = link.trim();
    assert!(link.starts_with(&format!("{base}/d/?share=")), "{link}");
    let guest = tmp.path().join("guest");
    std::fs::create_dir_all(&guest).unwrap();
    let state = tempfile::tempdir().unwrap();
    run_bounded(
        Command::new(BIN)
            .args(["get", "-q", "-r", link, guest.to_str().unwrap()])
            .env_remove("WIRESPEED_TOKEN")
            .env("XDG_STATE_HOME", state.path()),
    );
    assert_eq!(
        std::fs::read_to_string(guest.join("d/a.txt")).unwrap(),
        "file a"
    );
    let list = client(&["share", "--list", &format!("{base}/d/")]);
    assert!(list.contains(link), "{list}");
}

#[test]
fn webdav_through_the_prefix() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/a.txt"), "file a").unwrap();
    let (_srv, Some(nginx)) = start(&root) else {
        return;
    };
    let base = format!("{}/files", nginx.base());

    // COPY and MOVE name their Destination as the client sees it.
    let (status, text) = curl(&[
        "-X",
        "COPY",
        "-H",
        &format!("Destination: {base}/d/copy.txt"),
        &format!("{base}/d/a.txt"),
    ]);
    assert_eq!(status, 201, "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("location: /files/d/copy.txt"),
        "{text}"
    );
    let (status, text) = curl(&[
        "-X",
        "MOVE",
        "-H",
        &format!("Destination: {base}/d/moved.txt"),
        &format!("{base}/d/copy.txt"),
    ]);
    assert_eq!(status, 201, "{text}");
    assert_eq!(
        std::fs::read_to_string(root.join("d/moved.txt")).unwrap(),
        "file a"
    );
    assert!(!root.join("d/copy.txt").exists());

    // LOCK a new name; its root names the prefix; a PUT needs the token
    // in an If header that names the resource by its prefixed URL.
    let lockinfo = "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope>\
<D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>";
    let (status, text) = curl(&[
        "-X",
        "LOCK",
        "-H",
        "Content-Type: application/xml",
        "--data-binary",
        lockinfo,
        &format!("{base}/d/locked.txt"),
    ]);
    assert_eq!(status, 201, "{text}");
    assert!(
        text.contains("<D:lockroot><D:href>/files/d/locked.txt</D:href>"),
        "{text}"
    );
    let token = text
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("lock-token:")
                .then(|| l[l.find('<').unwrap()..].trim().to_string())
        })
        .expect("a Lock-Token");
    let (status, _) = curl(&[
        "-X",
        "PUT",
        "--data-binary",
        "no token",
        &format!("{base}/d/locked.txt"),
    ]);
    assert_eq!(status, 423, "a PUT without the lock's token");
    let body = tmp.path().join("body.txt");
    std::fs::write(&body, "locked body").unwrap();
    let (status, text) = curl(&[
        "-T",
        body.to_str().unwrap(),
        "-H",
        &format!("If: <{base}/d/locked.txt> ({token})"),
        &format!("{base}/d/locked.txt"),
    ]);
    assert!(status == 201 || status == 204, "{text}");
    assert_eq!(
        std::fs::read_to_string(root.join("d/locked.txt")).unwrap(),
        "locked body"
    );

    // rclone: a small tree up and back, reading the server's hrefs.
    if rclone_missing() {
        return;
    }
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(tree.join("x/y")).unwrap();
    std::fs::write(tree.join("top.txt"), "top").unwrap();
    std::fs::write(tree.join("x/y/deep.txt"), "deep").unwrap();
    let rclone = |args: &[&str]| {
        let out = run_bounded(
            Command::new("rclone")
                .args(args)
                .args(["--webdav-url", &format!("{base}/")])
                .args(["--webdav-bearer-token", TOKEN, "--config", "/dev/null"]),
        );
        String::from_utf8(out.stdout).unwrap()
    };
    rclone(&["sync", tree.to_str().unwrap(), ":webdav:synced"]);
    assert_eq!(
        std::fs::read_to_string(root.join("synced/x/y/deep.txt")).unwrap(),
        "deep"
    );
    let listed = rclone(&["lsf", "-R", ":webdav:synced"]);
    let mut names: Vec<&str> = listed.lines().collect();
    names.sort_unstable();
    assert_eq!(names, ["top.txt", "x/", "x/y/", "x/y/deep.txt"]);
    let back = tmp.path().join("back");
    rclone(&["copy", ":webdav:synced", back.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(back.join("top.txt")).unwrap(),
        "top"
    );
}

#[test]
fn urls_the_server_makes_carry_the_prefix() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/a.txt"), "file a").unwrap();
    let srv = Serve::start(&root, &["--path-prefix", "/files/"]);
    let html = ["Accept: text/html"];

    // Outside the prefix: nothing, not even the control routes.
    for path in [
        "/",
        "/d/a.txt",
        "/-/health",
        "/filesx/d/a.txt",
        "/%66iles/d/a.txt",
    ] {
        assert_eq!(srv.req("GET", path, &[], b"").0, 404, "{path}");
    }
    let (status, head, _) = srv.req("GET", "/files?format=json", &[], b"");
    assert_eq!(status, 301);
    assert!(head.contains("location: /files/?format=json"), "{head}");
    assert_eq!(srv.req("GET", "/files/-/health", &[], b"").0, 200);

    // The page: assets, breadcrumbs and the script's base.
    let (status, _, page) = srv.req("GET", "/files/d/", &html, b"");
    assert_eq!(status, 200);
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains(" data-base=\"/files\""), "{page}");
    assert!(page.contains("href=\"/files/-/assets/"), "{page}");
    assert!(page.contains("<script src=\"/files/-/assets/"), "{page}");
    assert!(
        page.contains("<a href=\"/files/\">Home</a>")
            && page.contains("<a href=\"/files/d/\">d</a>"),
        "{page}"
    );
    let asset = page.split("<script src=\"").nth(1).unwrap();
    let asset = &asset[..asset.find('"').unwrap()];
    assert_eq!(srv.req("GET", asset, &[], b"").0, 200, "{asset}");

    // A folder without its slash, a browser's 404, a new file's Location,
    // a form upload's answer.
    let (status, head, _) = srv.req("GET", "/files/d", &[], b"");
    assert_eq!(status, 301);
    assert!(head.contains("location: /files/d/"), "{head}");
    let (status, _, body) = srv.req("GET", "/files/d/nope.txt", &html, b"");
    assert_eq!(status, 404);
    let body = String::from_utf8(body).unwrap();
    assert!(body.contains("<a href=\"/files/d/\" rel=\"up\">"), "{body}");
    let (status, head, _) = srv.req("PUT", "/files/d/new.txt", &[], b"new");
    assert_eq!(status, 201);
    assert!(head.contains("location: /files/d/new.txt"), "{head}");
    let (status, head, _) = srv.req(
        "POST",
        "/files/-/uploads/d/t.bin",
        &["Tus-Resumable: 1.0.0", "Upload-Length: 3"],
        b"",
    );
    assert_eq!(status, 201, "{head}");
    assert!(head.contains("location: /files/-/uploads/"), "{head}");
    let form = b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.txt\"\r\n\r\nform\r\n--b--\r\n";
    let (status, _, body) = srv.req(
        "POST",
        "/files/d/",
        &[
            "Content-Type: multipart/form-data; boundary=b",
            "Accept: application/json",
        ],
        form,
    );
    assert_eq!(status, 201);
    let body = String::from_utf8(body).unwrap();
    assert!(body.contains("\"path\":\"/files/d/f.txt\""), "{body}");

    // WebDAV's hrefs.
    let (status, _, body) = srv.req("PROPFIND", "/files/d/", &["Depth: 1"], b"");
    assert_eq!(status, 207);
    let body = String::from_utf8(body).unwrap();
    assert!(
        body.contains("<D:href>/files/d/</D:href>")
            && body.contains("<D:href>/files/d/a.txt</D:href>"),
        "{body}"
    );
    assert!(!body.contains("<D:href>/d/"), "{body}");
}

#[test]
fn sign_in_stays_under_the_prefix() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("d")).unwrap();
    let rules = tmp.path().join("rules.toml");
    std::fs::write(&rules, rules_text()).unwrap();
    let srv = Serve::start(
        &root,
        &[
            "--path-prefix",
            "/files",
            "--auth",
            rules.to_str().unwrap(),
            "--state-dir",
            tmp.path().join("state").to_str().unwrap(),
        ],
    );
    let form = b"name=alice&password=alice-pw&next=%2Ffiles%2Fd%2F";
    let (status, head, _) = srv.req(
        "POST",
        "/files/-/session",
        &[
            "Content-Type: application/x-www-form-urlencoded",
            "Origin: http://localhost",
        ],
        form,
    );
    assert_eq!(status, 303, "{head}");
    assert!(head.contains("location: /files/d/"), "{head}");
    assert!(head.contains("; path=/files;"), "{head}");
    // A `next` outside the prefix goes home instead: the neighbours'
    // paths on the host are not this server's to send a browser to.
    let away = b"name=alice&password=alice-pw&next=%2Felsewhere%2F";
    let (_, head, _) = srv.req(
        "POST",
        "/files/-/session",
        &[
            "Content-Type: application/x-www-form-urlencoded",
            "Origin: http://localhost",
        ],
        away,
    );
    assert!(head.contains("location: /files/\r\n"), "{head}");
}

/// alice (password `alice-pw`) may do everything.
fn rules_text() -> String {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .args(["passwd", "alice"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "alice-pw").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    format!("[users]\n{}\n[paths.\"/\"]\nalice = \"rwd\"\n", line.trim())
}

/// `wirespeed find` against `serve --search --path-prefix`: names anywhere
/// below a folder with sizes, dates and paths, `--json`, `--content`, and
/// every page followed (more results than one page holds).
#[test]
fn find_lists_names_below_a_folder_under_a_path_prefix() {
    let root = wirespeed_testkit::fs::tempdir();
    std::fs::create_dir_all(root.path().join("docs/deep")).unwrap();
    std::fs::write(
        root.path().join("docs/deep/plan-2024.md"),
        "budget meeting notes",
    )
    .unwrap();
    std::fs::write(root.path().join("plan-outside.txt"), "x").unwrap();
    for i in 0..120 {
        std::fs::write(root.path().join(format!("docs/many-{i:03}.log")), "y").unwrap();
    }
    let srv = Serve::start(root.path(), &["--path-prefix", "/files/", "--search"]);
    let folder = format!("{}/files/docs/", srv.base());
    // The index is built in the background: poll, with a bound.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let out = loop {
        let (code, out, err) = common::run_client(&["find", &folder, "plan"]);
        assert_eq!(code, Some(0), "{err}");
        if out.contains("plan-2024.md") || std::time::Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let rows: Vec<&str> = out.lines().collect();
    assert!(rows[0].starts_with("TYPE"), "{out}");
    assert_eq!(rows.len(), 2, "only below the folder asked: {out}");
    assert!(
        rows[1].starts_with("file") && rows[1].contains(" 20 "),
        "{out}"
    );
    assert!(rows[1].ends_with("/docs/deep/plan-2024.md"), "{out}");
    // JSON, across pages (the server's pages hold 100).
    let (code, out, err) = common::run_client(&["find", &folder, "many-", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 120, "{out}");
    assert_eq!(v[0]["type"], "file");
    // Words inside files (read after the names, a few at a time).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (code, out, err) = common::run_client(&["find", &folder, "meeting", "--content"]);
        assert_eq!(code, Some(0), "{err}");
        if out.contains("/docs/deep/plan-2024.md") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{out}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
