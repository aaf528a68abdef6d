//! `wirespeed serve` as an operator starts it: write modes by address and
//! flags, the folder argument, `--listen` forms, a folder the server may not
//! write, and a kept self-signed certificate. Each test runs the real binary
//! and talks to it with raw HTTP over TCP.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{Serve, BIN};

/// Start as these tests do: fsync off, their own `--listen`, and back once
/// the mode line (which follows the stdout lines) is on stderr.
fn start(dir: &Path, args: &[&str]) -> Serve {
    start_with(dir, args, None, 0)
}

/// `start` as user/group `as_uid` if given, waiting for `lines` more stdout
/// lines after `listening on`.
fn start_with(dir: &Path, args: &[&str], as_uid: Option<u32>, lines: usize) -> Serve {
    let mut cmd = Serve::command(dir);
    cmd.arg("--no-fsync").args(args);
    if let Some(id) = as_uid {
        cmd.uid(id).gid(id);
    }
    let s = Serve::spawn(cmd, lines);
    s.wait_stderr("mode: ");
    s
}

/// One request on its own connection; (status, body as text).
fn req(s: &Serve, method: &str, path: &str, headers: &[&str], body: &[u8]) -> (u16, String) {
    let (status, _, body) = s.req(method, path, headers, body);
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Run `wirespeed ARGS` to completion (bounded); (exit code, stderr).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("WIRESPEED_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("wirespeed {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn beyond_loopback_without_token_writes_only_what_is_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("old.txt"), b"old").unwrap();

    let s = start(dir, &["--listen", "0.0.0.0:0"]);
    assert!(s.stdout[0].starts_with("listening on http://0.0.0.0:"));
    assert!(
        s.stderr().contains(
            "mode: read-only (listening beyond loopback without --token; use --token, or \
             --allow-upload/--allow-delete)"
        ),
        "{}",
        s.stderr()
    );
    let (status, body) = req(&s, "PUT", "/new.txt", &[], b"new");
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("--allow-upload") && body.contains("--token"),
        "{body}"
    );
    assert!(!dir.join("new.txt").exists());
    assert_eq!(req(&s, "GET", "/old.txt", &[], b""), (200, "old".into()));
    drop(s);

    let s = start(dir, &["--listen", "0.0.0.0:0", "--allow-upload"]);
    assert!(s
        .stderr()
        .contains("mode: uploads for anyone, new names only: deletes and replaces refused"));
    assert_eq!(req(&s, "PUT", "/new.txt", &[], b"new").0, 201);
    assert_eq!(std::fs::read(dir.join("new.txt")).unwrap(), b"new");
    // What the line says is what is enforced: no replacing without --allow-delete.
    let (status, body) = req(&s, "PUT", "/old.txt", &[], b"");
    assert_eq!(status, 403);
    assert!(body.contains("--allow-delete"), "{body}");
    assert_eq!(std::fs::read(dir.join("old.txt")).unwrap(), b"old");
    let (status, body) = req(&s, "DELETE", "/old.txt", &[], b"");
    assert_eq!(status, 403);
    assert!(body.contains("--allow-delete"), "{body}");
    assert!(dir.join("old.txt").exists());
    drop(s);

    // With a token, writes need it, as on any address.
    let s = start(dir, &["--listen", "0.0.0.0:0", "--token", "s3cret"]);
    assert!(s.stderr().contains("mode: read-write, writes need a token"));
    assert_eq!(req(&s, "DELETE", "/old.txt", &[], b"").0, 401);
    let auth = ["Authorization: Bearer s3cret"];
    assert_eq!(req(&s, "DELETE", "/old.txt", &auth, b"").0, 204);
    assert!(!dir.join("old.txt").exists());
}

#[test]
fn read_only_refuses_writes_on_loopback_too() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(tmp.path(), &["--listen", "127.0.0.1:0", "--read-only"]);
    assert!(s
        .stderr()
        .contains("mode: read-only (--read-only): uploads and deletes are refused"));
    let (status, body) = req(&s, "PUT", "/x.txt", &[], b"x");
    assert_eq!(status, 403);
    assert!(body.contains("read-only"), "{body}");
    assert!(!tmp.path().join("x.txt").exists());
    drop(s);
    let s = start(tmp.path(), &["--listen", "127.0.0.1:0"]);
    assert!(s
        .stderr()
        .contains("mode: read-write for anyone (loopback)"));
    assert_eq!(req(&s, "PUT", "/x.txt", &[], b"x").0, 201);
    // Conflicting flags are refused at start.
    let (code, err) = run(&[
        "serve",
        tmp.path().to_str().unwrap(),
        "--read-only",
        "--allow-upload",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn missing_folder_is_created_and_a_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let typo = tmp.path().join("typo");
    let s = start(&typo, &["--listen", "127.0.0.1:0"]);
    assert!(
        s.stderr()
            .contains(&format!("created empty folder {}", typo.display())),
        "{}",
        s.stderr()
    );
    assert!(typo.is_dir());
    drop(s);
    // Existing: nothing said about creating it.
    let s = start(&typo, &["--listen", "127.0.0.1:0"]);
    assert!(!s.stderr().contains("created empty folder"));
    drop(s);

    let file = tmp.path().join("file.txt");
    std::fs::write(&file, b"x").unwrap();
    let (code, err) = run(&["serve", file.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains(&format!("{} is a file, not a folder", file.display())),
        "{err}"
    );
    assert!(!err.contains("File exists"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

#[test]
fn listen_takes_a_bare_port_or_a_host_name() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(tmp.path(), &["--listen", "0"]);
    assert!(
        s.stdout[0].starts_with("listening on http://127.0.0.1:"),
        "{:?}",
        s.stdout
    );
    assert_eq!(req(&s, "GET", "/-/health", &[], b"").0, 200);
    drop(s);
    let s = start(tmp.path(), &["--listen", "localhost:0"]);
    assert!(
        s.stdout[0].starts_with("listening on http://127.0.0.1:"),
        "{:?}",
        s.stdout
    );
    assert!(s.stderr().contains("(loopback)"));
    assert_eq!(req(&s, "GET", "/", &[], b"").0, 200);
    drop(s);
    for (bad, says) in [
        ("nonsense", "has no port"),
        ("127.0.0.1:70000", "not in 0-65535"),
        (":8080", "for every interface"),
        ("no-such-host.invalid:80", "cannot resolve"),
    ] {
        let (code, err) = run(&["serve", tmp.path().to_str().unwrap(), "--listen", bad]);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(err.contains(says), "{bad}: {err}");
    }
}

/// Whether this process bypasses file permissions (root does).
fn privileged(dir: &Path) -> bool {
    let probe = dir.join("uid-probe");
    std::fs::write(&probe, b"").unwrap();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    std::fs::remove_file(&probe).unwrap();
    uid == 0
}

#[test]
fn folder_the_server_cannot_write_answers_permission_denied() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("served");
    let locked = dir.join("locked");
    std::fs::create_dir_all(&locked).unwrap();
    std::fs::write(locked.join("old.txt"), b"old").unwrap();
    // Root bypasses permissions: then the server runs as nobody, which can
    // read the tree but write none of it.
    let as_uid = privileged(tmp.path()).then_some(65534);
    for d in [tmp.path(), dir.as_path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let s = start_with(&dir, &["--listen", "127.0.0.1:0"], as_uid, 0);
    let put = req(&s, "PUT", "/locked/new.txt", &[], b"new");
    let del = req(&s, "DELETE", "/locked/old.txt", &[], b"");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (status, body) in [put, del] {
        assert_eq!(status, 403, "{body}");
        assert!(
            body.contains("the server cannot write here (permission denied)"),
            "{body}"
        );
    }
    assert!(!locked.join("new.txt").exists());
    assert!(locked.join("old.txt").exists());
    let log = s.wait_stderr("permission denied");
    assert!(
        log.contains("WARN") && log.contains("/locked/new.txt"),
        "{log}"
    );
    assert_eq!(
        req(&s, "GET", "/locked/old.txt", &[], b""),
        (200, "old".into())
    );
}

#[test]
fn kept_self_signed_certificate_is_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let certs = tmp.path().join("certs");
    let data = tmp.path().join("data");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--tls-self-signed",
        "--tls-cert-dir",
        certs.to_str().unwrap(),
    ];
    let fingerprint = |s: &Serve| {
        s.stdout
            .iter()
            .find_map(|l| l.strip_prefix("certificate sha-256 fingerprint: "))
            .unwrap_or_else(|| panic!("{:?}", s.stdout))
            .to_string()
    };
    let s = start_with(&data, &args, None, 2);
    assert!(s.stdout[0].starts_with("listening on https://"));
    assert!(
        s.stderr()
            .contains("certificate: made a new certificate (none stored yet)"),
        "{}",
        s.stderr()
    );
    let first = fingerprint(&s);
    drop(s);
    let s = start_with(&data, &args, None, 2);
    assert!(
        s.stderr()
            .contains("certificate: reused the stored certificate"),
        "{}",
        s.stderr()
    );
    assert_eq!(fingerprint(&s), first);
    let key = certs.join("wirespeed-self-signed-key.pem");
    assert_eq!(
        std::fs::metadata(key).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// SIGTERM (what `systemctl stop` and `docker stop` send) closes the listener
/// but lets a download in flight finish; then the process exits 0.
#[test]
fn sigterm_lets_a_download_in_flight_finish() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // Far more than the socket buffers hold, so the send is still under way.
    let big = wirespeed_testkit::bytes(48 << 20, 7);
    std::fs::write(data.join("big"), &big).unwrap();
    let mut s = start(
        &data,
        &["--listen", "127.0.0.1:0", "--shutdown-grace", "60"],
    );
    let mut c = TcpStream::connect(s.addr).unwrap();
    // A small fixed receive buffer: without it loopback autotuning (tcp_rmem
    // up to 32 MiB here) let the whole file leave before the signal.
    rustix::net::sockopt::set_socket_recv_buffer_size(&c, 64 << 10).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(b"GET /big HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = vec![0u8; 64 << 10];
    c.read_exact(&mut got).unwrap();

    let pid = rustix::process::Pid::from_child(&s.child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    // The listener closes: new connections are refused.
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(s.addr).is_ok() {
        assert!(Instant::now() < until, "still accepting after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "exited with a download in flight"
    );
    c.read_to_end(&mut got).unwrap();
    let body_at = wirespeed_testkit::find(&got, b"\r\n\r\n").unwrap() + 4;
    assert!(
        got[body_at..] == big[..],
        "download cut: {} of {} bytes",
        got.len() - body_at,
        big.len()
    );
    let until = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < until,
            "still running after the download ended"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}; stderr: {}", s.stderr());
}

/// `wirespeed completions SHELL` prints a script naming the subcommands, and
/// bash parses the bash one.
#[test]
fn completions_name_the_subcommands_and_bash_parses_them() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Command::new(BIN)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        for sub in ["serve", "put", "get", "ls", "rm", "bench", "completions"] {
            assert!(script.contains(sub), "{shell} script lacks {sub}");
        }
    }
    let out = Command::new(BIN)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(out.stdout.len() > 1000);
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(script.path(), &out.stdout).unwrap();
    let check = Command::new("bash")
        .arg("-n")
        .arg(script.path())
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    let (code, err) = run(&["completions", "tcsh"]);
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn max_connections_refuses_the_next_with_503_and_rejects_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for flag in ["--max-connections", "--max-connections-per-ip"] {
        let (code, err) = run(&["serve", dir.to_str().unwrap(), flag, "0"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("must be at least 1"), "{err}");
    }

    std::fs::write(dir.join("a.txt"), b"a").unwrap();
    let s = start(dir, &["--listen", "127.0.0.1:0", "--max-connections", "1"]);
    // The accept loop takes connections in order: the held one is admitted.
    let held = TcpStream::connect(s.addr).unwrap();
    let (status, body) = req(&s, "GET", "/a.txt", &[], b"");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("connection limit"), "{body}");
    drop(held);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = req(&s, "GET", "/a.txt", &[], b"");
        if status == 200 {
            assert_eq!(body, "a");
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(Instant::now() < until, "the held slot was never freed");
        std::thread::sleep(Duration::from_millis(20));
    }
}
