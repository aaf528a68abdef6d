//! The folder page in a real headless Chromium: `tests/browser/test_page.py`
//! (Python Playwright, the system's `/usr/bin/chromium`) against four
//! `wirespeed serve` processes (open, `--token`, `--private`, `--read-only`), then the files
//! on disk checked here too. Outside CI a missing Chromium or Playwright
//! skips with a loud message; with `CI=true` it fails. `SCREENSHOTS=1`
//! writes the README's screenshots to `docs/`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Serve;

const TOKEN: &str = "page-test-token";
/// The whole browser run's limit (it takes ~40 s on two shared cores).
const LIMIT: Duration = Duration::from_secs(300);

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// Why the browser test cannot run here, if it cannot.
fn missing_tools() -> Option<String> {
    if !chromium().exists() {
        return Some(format!(
            "{} not found (apt-get install chromium)",
            chromium().display()
        ));
    }
    let playwright = Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .stderr(Stdio::null())
        .status();
    if !playwright.is_ok_and(|s| s.success()) {
        return Some("python3 cannot import playwright (pip install playwright)".into());
    }
    None
}

/// Deterministic bytes (xorshift), so a wrong offset cannot go unnoticed.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.extend_from_slice(&seed.to_le_bytes());
    }
    out.truncate(len);
    out
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn folder_page_in_chromium() {
    if let Some(why) = missing_tools() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("the browser test needs Chromium and Playwright in CI: {why}");
        }
        eprintln!(
            "\n!!!!!! SKIPPED folder_page_in_chromium: {why}; bash .ci/run installs both !!!!!!\n"
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (open, tok, private, work) = (
        tmp.path().join("open"),
        tmp.path().join("token"),
        tmp.path().join("private"),
        tmp.path().join("work"),
    );
    for d in [&open, &tok, &private, &work] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::create_dir(open.join("adir")).unwrap();
    write(&open.join("a.txt"), b"aaaa\n");
    write(&open.join("b.bin"), &[0; 3000]);
    write(&open.join("c.dat"), &[0; 100_000]);
    write(&open.join("zdir/inner.txt"), b"in\n");
    write(
        &open.join("<img src=x onerror=alert(1)>.txt"),
        b"<b>x</b>\n",
    );
    write(&private.join("secret.txt"), b"s\n");
    write(&private.join("secret-dir/deeper.txt"), b"d\n");
    let hello = b"hello from the page\n";
    write(&work.join("tree/top.txt"), b"top\n");
    write(&work.join("tree/sub dir/deep.txt"), b"deep\n");
    write(&work.join("hello world.txt"), hello);
    let three = noise(3 << 20, 3);
    write(&work.join("three.bin"), &three);
    let big = noise(24 << 20, 24);
    write(&work.join("big.bin"), &big);

    let s_open = Serve::start(&open, &[]);
    let s_tok = Serve::start(&tok, &["--token", TOKEN]);
    let s_priv = Serve::start(&private, &["--token", TOKEN, "--private"]);
    let s_ro = Serve::start(&open, &["--read-only"]);
    write(&work.join("clash/zdir"), b"a file named like a folder\n");
    // The resumable path is asserted where the server has tus routes.
    let (status, head, _) = s_open.req("OPTIONS", "/-/uploads/", &[], b"");
    let tus = status < 300 && head.contains("tus-version");

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/test_page.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script)
        .args(["--base", &format!("{}/", s_open.base())])
        .arg("--root")
        .arg(&open)
        .arg("--work")
        .arg(&work)
        .args(["--token-base", &format!("{}/", s_tok.base())])
        .arg("--token-root")
        .arg(&tok)
        .args(["--private-base", &format!("{}/", s_priv.base())])
        .args(["--readonly-base", &format!("{}/", s_ro.base())])
        .args(["--token", TOKEN])
        .env("CHROMIUM", chromium());
    if tus {
        cmd.arg("--expect-tus");
    }
    if std::env::var("SCREENSHOTS").is_ok_and(|v| v == "1") {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        std::fs::create_dir_all(&docs).unwrap();
        cmd.arg("--screenshots").arg(docs);
    }
    let mut child = cmd.spawn().expect("run python3");
    let until = Instant::now() + LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the browser checks took longer than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success(),
        "browser checks failed ({status}); see the FAIL lines above"
    );

    // What the page did, as the disk sees it.
    let read = |p: PathBuf| std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert_eq!(read(open.join("hello world.txt")), hello);
    assert_eq!(read(open.join("adir/hello world.txt")), hello, "no-JS form");
    assert_eq!(read(open.join("dropped-1.txt")), b"dropped one\n");
    assert_eq!(read(open.join("three.bin")), three);
    assert!(read(open.join("big.bin")) == big, "the cut upload differs");
    assert!(
        read(open.join("adir/big.bin")) == big,
        "the upload resumed after a reload differs"
    );
    assert!(open.join("made here").is_dir());
    assert_eq!(
        read(open.join("tree/sub dir/deep.txt")),
        b"deep\n",
        "folder upload"
    );
    assert!(!open.join("a.txt").exists() && !open.join("renamed.txt").exists());
    assert_eq!(read(open.join("zdir/inner.txt")), b"in\n");
    assert_eq!(read(tok.join("hello world.txt")), hello);
    assert!(tok.join("with-token").is_dir());
    let leftovers: Vec<_> = std::fs::read_dir(&open)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".wirespeed-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    assert!(
        open.join("zdir").is_dir(),
        "the refused upload changed nothing"
    );
    drop((s_open, s_tok, s_priv, s_ro));
}

/// Run a browser script to its end (bounded by [`LIMIT`]); whether it passed.
fn run_script(mut cmd: Command) -> std::process::ExitStatus {
    let mut child = cmd
        .env("CHROMIUM", chromium())
        .spawn()
        .expect("run python3");
    let until = Instant::now() + LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the browser checks took longer than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The rules of the sign-in run: bob adds to /team and shares it, alice also
/// deletes; anyone may add to /drop (a drop box), alice also reads it;
/// alice writes in /gallery, bob reads and shares it, and nobody but alice
/// reads /gallery/closed.
fn signin_rules(dir: &Path) -> PathBuf {
    use wirespeed_service::policy::password::hash;
    let file = dir.join("users.toml");
    let text = format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n\
         [paths.\"/\"]\n\"*\" = \"r\"\n[paths.\"/team\"]\nalice = \"rwd\"\nbob = \"rws\"\n\
         [paths.\"/drop\"]\n\"*\" = \"w\"\nalice = \"rwd\"\n\
         [paths.\"/gallery\"]\nalice = \"rwd\"\nbob = \"rs\"\n\
         [paths.\"/gallery/closed\"]\nalice = \"rwd\"\nbob = \"\"\n\"*\" = \"\"\n\
         [quota.\"/team\"]\nbytes = \"1G\"\n",
        hash(b"alice-pw").unwrap(),
        hash(b"bob-pw").unwrap()
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// The page's sign-in (`tests/browser/test_signin.py`) against a rules
/// server, plain and under `--tls-self-signed`: a wrong password shown in
/// the page's form, bob signs in, uploads, sees no Delete on /team, signs
/// out, and the old cookie is refused; the cookie's flags; "Share link…"
/// for a file, a folder and an upload link, used without a cookie; the
/// upload-only page of an upload link and of a drop box; "Links"; the
/// search box as anyone, bob (no read on the drop box beside /team), alice
/// and through bob's link; "Recently deleted" with Restore, and the quota bar.
#[test]
fn signin_in_chromium() {
    if let Some(why) = missing_tools() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("the browser test needs Chromium and Playwright in CI: {why}");
        }
        eprintln!(
            "\n!!!!!! SKIPPED signin_in_chromium: {why}; bash .ci/run installs both !!!!!!\n"
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (root, work) = (tmp.path().join("root"), tmp.path().join("work"));
    write(&root.join("team/t.txt"), b"team's\n");
    write(&root.join("pub.txt"), b"public\n");
    write(&root.join("team/sub/inner.txt"), b"in\n");
    write(&root.join("team/sub/deeper/x.txt"), b"x\n");
    write(&root.join("drop/secret.txt"), b"not for guests\n");
    write(&work.join("from-bob.txt"), b"bob was here\n");
    write(&work.join("dated.txt"), b"sent through the upload link\n");
    write(&work.join("into-drop.txt"), b"dropped anonymously\n");
    // Above the page's plain-PUT size: sent with tus through the link.
    let big = noise(9 << 20, 9);
    write(&work.join("big-via-link.bin"), &big);
    // The media run's folder: pictures, a video, text.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/fixtures");
    for name in ["p1.jpg", "p2.jpg", "p3.png", "clip.webm"] {
        write(
            &root.join("gallery").join(name),
            &std::fs::read(fixtures.join(name)).unwrap(),
        );
    }
    write(
        &root.join("gallery/notes.md"),
        b"# Notes\n\nSome **bold** text.\n\n<script>window.pwned = 1</script>\n\n\
          [click](javascript:window.pwned=2)\n",
    );
    write(&root.join("gallery/edit.txt"), b"first version\n");
    write(&root.join("gallery/media/in.txt"), b"in\n");
    write(
        &root.join("gallery/closed/c.jpg"),
        &std::fs::read(fixtures.join("p1.jpg")).unwrap(),
    );
    let rules = signin_rules(tmp.path());
    let rules = rules.to_str().unwrap();
    let plain = Serve::start(&root, &["--auth", rules, "--search"]);
    let tls = Serve::start(&root, &["--auth", rules, "--tls-self-signed"]);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/test_signin.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script)
        .args(["--base", &format!("{}/", plain.base())])
        .arg("--root")
        .arg(&root)
        .arg("--work")
        .arg(&work)
        .args(["--tls-base", &format!("{}/", tls.base())]);
    let status = run_script(cmd);
    assert!(
        status.success(),
        "sign-in checks failed ({status}); see the FAIL lines above"
    );
    // The grid, the viewer and the editor, on the same server.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/test_media.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script)
        .args(["--base", &format!("{}/", plain.base())])
        .arg("--root")
        .arg(&root);
    let status = run_script(cmd);
    assert!(
        status.success(),
        "media checks failed ({status}); see the FAIL lines above"
    );
    assert_eq!(
        std::fs::read(root.join("team/from-bob.txt")).unwrap(),
        b"bob was here\n"
    );
    assert_eq!(std::fs::read(root.join("team/t.txt")).unwrap(), b"team's\n");
    assert!(!root.join("team/replayed.txt").exists());
    assert_eq!(
        std::fs::read(root.join("team/sub/via-link.txt")).unwrap(),
        b"dropped\n",
        "the upload link's file"
    );
    assert_eq!(
        std::fs::read(root.join("team/sub/dated.txt")).unwrap(),
        b"sent through the upload link\n",
        "the upload link's page"
    );
    assert!(
        std::fs::read(root.join("team/sub/big-via-link.bin")).unwrap() == big,
        "the upload link's page, resumable"
    );
    assert_eq!(
        std::fs::read(root.join("drop/into-drop.txt")).unwrap(),
        b"dropped anonymously\n",
        "the drop box's page"
    );
    drop((plain, tls));
}

/// The page under `serve --path-prefix /files` behind nginx's
/// `location /files/` block from docs/serving.md
/// (`tests/browser/test_prefix.py`): it loads with its script and styles,
/// lists, goes into a folder and back, signs in (the cookie's Path is the
/// prefix), uploads a small file and a resumable one, signs out; and no
/// request it makes leaves the prefix.
#[test]
fn prefix_in_chromium() {
    if let Some(why) = missing_tools() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("the browser test needs Chromium and Playwright in CI: {why}");
        }
        eprintln!(
            "\n!!!!!! SKIPPED prefix_in_chromium: {why}; bash .ci/run installs both !!!!!!\n"
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (root, work) = (tmp.path().join("root"), tmp.path().join("work"));
    write(&root.join("a.txt"), b"a\n");
    write(&root.join("sub/inner.txt"), b"in\n");
    write(&work.join("small.txt"), b"small through the prefix\n");
    // Above the page's plain-PUT size: sent with tus under the prefix.
    let big = noise(9 << 20, 11);
    write(&work.join("big.bin"), &big);
    let rules = tmp.path().join("users.toml");
    std::fs::write(
        &rules,
        format!(
            "[users]\nalice = \"{}\"\n[paths.\"/\"]\n\"*\" = \"r\"\nalice = \"rwd\"\n",
            wirespeed_service::policy::password::hash(b"alice-pw").unwrap()
        ),
    )
    .unwrap();
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
    let Some(nginx) =
        wirespeed_testkit::nginx::Nginx::serving("", &common::docs_nginx_block(srv.addr))
    else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/test_prefix.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script)
        .args(["--base", &format!("{}/files/", nginx.base())])
        .arg("--root")
        .arg(&root)
        .arg("--work")
        .arg(&work);
    let status = run_script(cmd);
    assert!(
        status.success(),
        "prefix checks failed ({status}); see the FAIL lines above; nginx: {}",
        nginx.error_log()
    );
    assert!(std::fs::read(root.join("big.bin")).unwrap() == big);
    assert_eq!(
        std::fs::read(root.join("small.txt")).unwrap(),
        b"small through the prefix\n"
    );
}
