//! `wirespeed serve` as an operator starts it: write modes by address and
//! flags, the folder argument, `--listen` forms, a folder the server may not
//! write, and a kept self-signed certificate. Each test runs the real binary
//! and talks to it with raw HTTP over TCP.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_wirespeed");

/// A running `wirespeed serve`: its stdout lines up to the first blank
/// wait, and its stderr in a file.
struct Serve {
    child: Child,
    /// The address to connect to (127.0.0.1 for a 0.0.0.0 bind).
    addr: SocketAddr,
    stdout: Vec<String>,
    stderr: PathBuf,
    _logs: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn start(dir: &Path, args: &[&str]) -> Serve {
        Self::start_as(dir, args, None)
    }

    /// Start the server (as user/group `as_uid` if given), wait for its
    /// `listening on` line and `lines` more stdout lines.
    fn start_as(dir: &Path, args: &[&str], as_uid: Option<u32>) -> Serve {
        Self::start_with(dir, args, as_uid, 0)
    }

    fn start_with(dir: &Path, args: &[&str], as_uid: Option<u32>, lines: usize) -> Serve {
        let logs = tempfile::tempdir().unwrap();
        let stderr = logs.path().join("stderr");
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .arg(dir)
            .args(["--no-fsync"])
            .args(args)
            .env_remove("WIRESPEED_TOKEN")
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr).unwrap());
        if let Some(id) = as_uid {
            cmd.uid(id).gid(id);
        }
        let mut child = cmd.spawn().expect("start wirespeed serve");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut stdout = Vec::new();
        for _ in 0..=lines {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            stdout.push(line.trim_end().to_string());
        }
        let first = &stdout[0];
        let url = first.strip_prefix("listening on ").unwrap_or_else(|| {
            panic!(
                "unexpected start line {first:?}; stderr: {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            )
        });
        let hostport = url.split("://").nth(1).unwrap();
        let mut addr: SocketAddr = hostport.parse().unwrap();
        if addr.ip().is_unspecified() {
            addr.set_ip([127, 0, 0, 1].into());
        }
        let s = Serve {
            child,
            addr,
            stdout,
            stderr,
            _logs: logs,
        };
        // The mode line follows the stdout lines on stderr.
        s.wait_stderr("mode: ");
        s
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Wait (bounded) until stderr contains `what`.
    fn wait_stderr(&self, what: &str) -> String {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let e = self.stderr();
            if e.contains(what) {
                return e;
            }
            assert!(Instant::now() < until, "stderr never said {what:?}: {e}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One request on its own connection; (status, body).
    fn req(&self, method: &str, path: &str, headers: &[&str], body: &[u8]) -> (u16, String) {
        let mut c = TcpStream::connect(self.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for h in headers {
            head.push_str(h);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        c.write_all(head.as_bytes()).unwrap();
        c.write_all(body).unwrap();
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {text:?}"));
        let body = text
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        (status, body)
    }
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

    let s = Serve::start(dir, &["--listen", "0.0.0.0:0"]);
    assert!(s.stdout[0].starts_with("listening on http://0.0.0.0:"));
    assert!(
        s.stderr().contains(
            "mode: read-only (listening beyond loopback without --token; use --token, or \
             --allow-upload/--allow-delete)"
        ),
        "{}",
        s.stderr()
    );
    let (status, body) = s.req("PUT", "/new.txt", &[], b"new");
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("--allow-upload") && body.contains("--token"),
        "{body}"
    );
    assert!(!dir.join("new.txt").exists());
    assert_eq!(s.req("GET", "/old.txt", &[], b""), (200, "old".into()));
    drop(s);

    let s = Serve::start(dir, &["--listen", "0.0.0.0:0", "--allow-upload"]);
    assert!(s
        .stderr()
        .contains("mode: uploads for anyone, deletes refused"));
    assert_eq!(s.req("PUT", "/new.txt", &[], b"new").0, 201);
    assert_eq!(std::fs::read(dir.join("new.txt")).unwrap(), b"new");
    let (status, body) = s.req("DELETE", "/old.txt", &[], b"");
    assert_eq!(status, 403);
    assert!(body.contains("--allow-delete"), "{body}");
    assert!(dir.join("old.txt").exists());
    drop(s);

    // With a token, writes need it, as on any address.
    let s = Serve::start(dir, &["--listen", "0.0.0.0:0", "--token", "s3cret"]);
    assert!(s.stderr().contains("mode: read-write, writes need a token"));
    assert_eq!(s.req("DELETE", "/old.txt", &[], b"").0, 401);
    let auth = ["Authorization: Bearer s3cret"];
    assert_eq!(s.req("DELETE", "/old.txt", &auth, b"").0, 204);
    assert!(!dir.join("old.txt").exists());
}

#[test]
fn read_only_refuses_writes_on_loopback_too() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(tmp.path(), &["--listen", "127.0.0.1:0", "--read-only"]);
    assert!(s
        .stderr()
        .contains("mode: read-only (--read-only): uploads and deletes are refused"));
    let (status, body) = s.req("PUT", "/x.txt", &[], b"x");
    assert_eq!(status, 403);
    assert!(body.contains("read-only"), "{body}");
    assert!(!tmp.path().join("x.txt").exists());
    drop(s);
    let s = Serve::start(tmp.path(), &["--listen", "127.0.0.1:0"]);
    assert!(s
        .stderr()
        .contains("mode: read-write for anyone (loopback)"));
    assert_eq!(s.req("PUT", "/x.txt", &[], b"x").0, 201);
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
    let s = Serve::start(&typo, &["--listen", "127.0.0.1:0"]);
    assert!(
        s.stderr()
            .contains(&format!("created empty folder {}", typo.display())),
        "{}",
        s.stderr()
    );
    assert!(typo.is_dir());
    drop(s);
    // Existing: nothing said about creating it.
    let s = Serve::start(&typo, &["--listen", "127.0.0.1:0"]);
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
    let s = Serve::start(tmp.path(), &["--listen", "0"]);
    assert!(
        s.stdout[0].starts_with("listening on http://127.0.0.1:"),
        "{:?}",
        s.stdout
    );
    assert_eq!(s.req("GET", "/-/health", &[], b"").0, 200);
    drop(s);
    let s = Serve::start(tmp.path(), &["--listen", "localhost:0"]);
    assert!(
        s.stdout[0].starts_with("listening on http://127.0.0.1:"),
        "{:?}",
        s.stdout
    );
    assert!(s.stderr().contains("(loopback)"));
    assert_eq!(s.req("GET", "/", &[], b"").0, 200);
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
    let s = Serve::start_as(&dir, &["--listen", "127.0.0.1:0"], as_uid);
    let put = s.req("PUT", "/locked/new.txt", &[], b"new");
    let del = s.req("DELETE", "/locked/old.txt", &[], b"");
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
        s.req("GET", "/locked/old.txt", &[], b""),
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
    let s = Serve::start_with(&data, &args, None, 2);
    assert!(s.stdout[0].starts_with("listening on https://"));
    assert!(
        s.stderr()
            .contains("certificate: made a new certificate (none stored yet)"),
        "{}",
        s.stderr()
    );
    let first = fingerprint(&s);
    drop(s);
    let s = Serve::start_with(&data, &args, None, 2);
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
    let mut s = Serve::start(
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
    let s = Serve::start(dir, &["--listen", "127.0.0.1:0", "--max-connections", "1"]);
    // The accept loop takes connections in order: the held one is admitted.
    let held = TcpStream::connect(s.addr).unwrap();
    let (status, body) = s.req("GET", "/a.txt", &[], b"");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("connection limit"), "{body}");
    drop(held);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = s.req("GET", "/a.txt", &[], b"");
        if status == 200 {
            assert_eq!(body, "a");
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(Instant::now() < until, "the held slot was never freed");
        std::thread::sleep(Duration::from_millis(20));
    }
}
