//! The client's manners, through the built binary against `serve`:
//! modification times kept both ways (`get` from `Last-Modified`, `put`
//! sending `X-OC-Mtime`), read back by rclone; progress and messages in
//! one unit system; `serve`'s JSON log is JSON from the first line, and an
//! expected 507 logs one line.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod common;
use common::{run_client as run, Serve, BIN};

/// Sun, 13 Sep 2020 12:26:40 GMT.
const T: u64 = 1_600_000_000;

fn secs(p: &Path) -> u64 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .modified()
        .unwrap()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn write_dated(p: &Path, data: &[u8], t: u64) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(UNIX_EPOCH + Duration::from_secs(t))
        .unwrap();
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn put_sends_the_files_time_and_the_server_keeps_it() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &[]);
    let a = local.path().join("a.txt");
    write_dated(&a, b"small file", T);
    let a = a.to_str().unwrap();

    // A plain PUT, and each resumable protocol (the completing append carries it).
    for (proto, name) in [("put", "p.txt"), ("tus", "t.txt"), ("ietf", "i.txt")] {
        let url = format!("{}/up/{name}", srv.base());
        let (code, _, err) = run(&["put", "--protocol", proto, a, &url]);
        assert_eq!(code, Some(0), "{proto}: {err}");
        assert_eq!(secs(&root.path().join("up").join(name)), T, "{proto}");
    }

    // -r: every file keeps its own time.
    write_dated(&local.path().join("tree/x/one.bin"), b"1", T + 10);
    write_dated(&local.path().join("tree/two.bin"), b"22", T + 20);
    let tree = local.path().join("tree");
    let (code, _, err) = run(&[
        "put",
        "-r",
        tree.to_str().unwrap(),
        &format!("{}/r/", srv.base()),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(secs(&root.path().join("r/tree/x/one.bin")), T + 10);
    assert_eq!(secs(&root.path().join("r/tree/two.bin")), T + 20);

    // --no-mtime: the server's time of upload.
    let before = now_secs() - 2;
    let url = format!("{}/up/n.txt", srv.base());
    let (code, _, err) = run(&["put", "--no-mtime", a, &url]);
    assert_eq!(code, Some(0), "{err}");
    assert!(secs(&root.path().join("up/n.txt")) >= before);
}

#[test]
fn get_and_get_r_take_last_modified() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    write_dated(&root.path().join("d/a.txt"), b"aaa", T);
    write_dated(&root.path().join("d/sub/b.txt"), b"bbbb", T + 5);
    let srv = Serve::start(root.path(), &[]);

    let out = local.path().join("a.txt");
    let (code, _, err) = run(&[
        "get",
        &format!("{}/d/a.txt", srv.base()),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(secs(&out), T);

    let dest = local.path().join("copy");
    let (code, _, err) = run(&[
        "get",
        "-r",
        &format!("{}/d/", srv.base()),
        dest.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    // `get -r URL/d/ DEST` writes DEST/d/ (docs/client.md, "Where `get` writes").
    assert_eq!(secs(&dest.join("d/a.txt")), T);
    assert_eq!(secs(&dest.join("d/sub/b.txt")), T + 5);

    let before = now_secs() - 2;
    let out = local.path().join("fresh.txt");
    let (code, _, err) = run(&[
        "get",
        "--no-mtime",
        &format!("{}/d/a.txt", srv.base()),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(secs(&out) >= before);
}

/// rclone, an independent client, reads the kept time back through
/// `Last-Modified` (its http backend stats a file with HEAD).
#[test]
fn rclone_reads_the_uploaded_time_back() {
    if Command::new("rclone").arg("version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "rclone is missing in CI (.ci/run installs it)"
        );
        eprintln!("SKIPPED rclone_reads_the_uploaded_time_back: rclone is not installed");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &[]);
    let a = local.path().join("a.txt");
    write_dated(&a, b"for rclone", T);
    let (code, _, err) = run(&["put", a.to_str().unwrap(), &format!("{}/rc/", srv.base())]);
    assert_eq!(code, Some(0), "{err}");
    // rclone's http backend stats the file (HEAD) and gives its copy the
    // Last-Modified time, as it does the modtime it lists.
    let copy = local.path().join("from-rclone.txt");
    let out = Command::new("rclone")
        .args([
            "copyto",
            "--config",
            "/dev/null",
            "--contimeout",
            "10s",
            "--timeout",
            "20s",
            "--http-url",
            &format!("{}/rc/", srv.base()),
            ":http:a.txt",
            copy.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&copy).unwrap(), b"for rclone");
    assert_eq!(secs(&copy), T);
}

/// `jq` reads `serve --log-format json`'s stderr whole: every line is a
/// JSON object, the first (the write mode) included.
#[test]
fn the_json_log_is_json_from_the_first_line() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f.txt"), b"hi").unwrap();
    let s = Serve::start(root.path(), &["--log-format", "json"]);
    assert_eq!(s.req("GET", "/f.txt", &[], b"").0, 200);
    let stderr = s.stop();
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines.len() >= 2, "{stderr}");
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}\nall: {stderr}"));
        assert!(v.is_object(), "{line}");
    }
    let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(first["target"], "wirespeed::notice", "{stderr}");
    assert!(
        first["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{stderr}"
    );
}

/// A PUT larger than the free space is refused before its body (507): an
/// expected answer, logged once (the access line), never as an ERROR.
#[test]
fn an_expected_507_logs_one_line_and_no_error() {
    use std::io::{Read, Write};
    let root = tempfile::tempdir().unwrap();
    let s = Serve::start(root.path(), &[]);
    let mut c = std::net::TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(
        b"PUT /huge.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
          Content-Length: 1000000000000000000\r\n\r\n",
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 507"), "{answer}");
    let stderr = s.stop();
    assert!(!stderr.contains("ERROR"), "{stderr}");
    let about: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("507") || l.contains("storage") || l.contains("huge.bin"))
        .collect();
    assert_eq!(about.len(), 1, "one line, the access line: {stderr}");
    assert!(about[0].contains("status=507"), "{stderr}");
}

/// Run `sh -c CMD` on a pseudo-terminal (util-linux `script`), as a person
/// at a terminal would; everything the terminal got. `None`: no `script`.
fn on_a_terminal(cmd: &str) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "script (util-linux) is missing in CI"
        );
        eprintln!("SKIPPED: util-linux `script` is not installed");
        return None;
    }
    let mut child = Command::new("script")
        .args(["-qec", cmd, "/dev/null"])
        .env_remove("WIRESPEED_TOKEN")
        .env("COLUMNS", "100")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{cmd} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Progress on a terminal: no full `0/0` bar first, a spinner (bytes and
/// rate, no bar) for stdin, `get -o -` shows progress on stderr while its
/// bytes go to a pipe, binary units only, and the summary in the same units.
#[test]
fn progress_on_a_terminal() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &[]);
    let src = local.path().join("src.bin");
    let data: Vec<u8> = (0..3u32 << 20).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(&src, &data).unwrap();
    let (src, base) = (src.to_str().unwrap(), srv.base());

    // stdin: no size, so no bar: a spinner with bytes and rate.
    let Some(tty) = on_a_terminal(&format!("cat {src} | {BIN} put - {base}/s.bin")) else {
        return;
    };
    assert!(!tty.contains("put ["), "a bar for stdin: {tty:?}");
    assert!(tty.contains("/s"), "no rate: {tty:?}");
    assert!(
        tty.contains("stdin -> ") && tty.contains("(3 MiB, "),
        "{tty:?}"
    );

    // A file: the first frame is not a full 0/0 bar; sizes in binary units.
    let tty = on_a_terminal(&format!("{BIN} put {src} {base}/f.bin")).unwrap();
    assert!(
        !tty.contains("0 bytes/0 bytes") && !tty.contains("0 B/0 B"),
        "{tty:?}"
    );
    assert!(tty.contains("/3 MiB"), "no bar with the size: {tty:?}");
    assert!(!tty.contains("MB/s") && !tty.contains(" bytes)"), "{tty:?}");

    // get -o - into a pipe: the bytes go down the pipe, the bar to the terminal.
    let out = local.path().join("piped.bin");
    let tty = on_a_terminal(&format!(
        "{BIN} get {base}/f.bin -o - | cat > {}",
        out.display()
    ))
    .unwrap();
    assert!(tty.contains("get") && tty.contains("/3 MiB"), "{tty:?}");
    assert_eq!(std::fs::read(&out).unwrap(), data);
}

/// The README's quick start says what is true: after `wirespeed put` the
/// download is checked against the recorded sha-256; after `curl -T`
/// (which asks for no digest) it is not, and says nothing of the kind.
#[test]
fn the_quick_starts_checks_are_true() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &[]);
    let notes = local.path().join("notes.txt");
    std::fs::write(&notes, b"my notes\n").unwrap();
    let (code, out, err) = run(&["put", notes.to_str().unwrap(), &format!("{}/", srv.base())]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("verified by the server"), "{out}");
    let copy = local.path().join("copy.txt");
    let url = format!("{}/notes.txt", srv.base());
    let (code, out, err) = run(&["get", &url, "-o", copy.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("sha-256 verified"), "{out}");

    let (ok, _) = wirespeed_testkit::tools::curl(&[
        "-T",
        notes.to_str().unwrap(),
        &format!("{}/curl.txt", srv.base()),
    ]);
    assert!(ok);
    let url = format!("{}/curl.txt", srv.base());
    let copy = local.path().join("curl-copy.txt");
    let (code, out, err) = run(&["get", &url, "-o", copy.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("verified"), "{out}");
    // The README's lines say exactly this.
    let readme = include_str!("../../../README.md");
    assert!(readme.contains("# download (checked against the recorded sha-256)"));
    assert!(readme.contains("(unchecked: curl asks no digest)"));
    assert!(!readme.contains("-o copy.txt  # download (sha-256 checked)"));
}
