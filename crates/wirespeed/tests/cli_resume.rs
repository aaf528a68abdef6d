//! `wirespeed put` and `get` that never start over: real `serve`, real
//! client binaries, and a proxy that cuts connections every 16 MiB, so each
//! transfer must resume (or, for a file changed meanwhile, restart).

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Serve, BIN};
use wirespeed_testkit::proxy::CuttingProxy;

const MIB: usize = 1 << 20;
const FILE: usize = 64 * MIB;
const CUT: u64 = 16 * MIB as u64;

/// A client command with its own state folder and no ambient token.
fn client(state: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("XDG_STATE_HOME", state)
        .env_remove("WIRESPEED_TOKEN")
        .env_remove("RUST_LOG");
    cmd
}

fn run(state: &Path, args: &[&str]) -> Output {
    client(state, args).output().expect("run the client")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Deterministic bytes with a per-file salt.
fn data(len: usize, salt: u8) -> Vec<u8> {
    let mut v = wirespeed_testkit::bytes(len, 0x5eed);
    for (i, b) in v.iter_mut().enumerate().step_by(4096) {
        *b ^= salt.wrapping_add(i as u8);
    }
    v
}

struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    local: PathBuf,
    state: PathBuf,
    serve: Serve,
}

fn setup(serve_args: &[&str]) -> Setup {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    let local = tmp.path().join("local");
    let state = tmp.path().join("state");
    for d in [&root, &local, &state] {
        std::fs::create_dir_all(d).unwrap();
    }
    let serve = Serve::start(&root, serve_args);
    Setup {
        _tmp: tmp,
        root,
        local,
        state,
        serve,
    }
}

/// The state files (not a `.tmp` a kill left half-way through a save).
fn state_files(state: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(state.join("wirespeed/uploads")) {
        Ok(rd) => rd
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn assert_same_file(a: &Path, b: &Path) {
    let (x, y) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    assert_eq!(x.len(), y.len(), "{} vs {}", a.display(), b.display());
    assert!(x == y, "{} and {} differ", a.display(), b.display());
}

/// Stores `bytes` at `name` on the server with `put --protocol put`, so
/// its sha-256 is recorded and GET answers `Repr-Digest`.
fn seed(s: &Setup, name: &str, bytes: &[u8]) {
    let src = s.local.join(format!("{name}.src"));
    std::fs::write(&src, bytes).unwrap();
    let url = format!("{}/{name}", s.serve.base());
    let out = run(
        &s.state,
        &[
            "put",
            "-q",
            "--protocol",
            "put",
            src.to_str().unwrap(),
            &url,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn get_resumes_through_cuts_and_verifies_the_digest() {
    let s = setup(&[]);
    let bytes = data(FILE, 1);
    seed(&s, "big.bin", &bytes);
    let proxy = CuttingProxy::start(s.serve.addr);
    proxy.cut_downstream_every(Some(CUT));
    let dest = s.local.join("got.bin");
    let out = run(
        &s.state,
        &[
            "get",
            "--connections",
            "1",
            &format!("{}/big.bin", proxy.base()),
            "-o",
            dest.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(proxy.cuts() >= 3, "{} cuts\n{stderr}", proxy.cuts());
    assert!(stderr.contains("resuming at byte"), "{stderr}");
    assert!(stdout.contains("sha-256 verified"), "{stdout}");
    assert!(std::fs::read(&dest).unwrap() == bytes, "bytes differ");
    assert!(!s.local.join(".wirespeed-part-got.bin").exists());
}

#[test]
fn get_restarts_when_the_file_changes_between_attempts() {
    let s = setup(&[]);
    seed(&s, "moving.bin", &data(FILE, 2));
    let changed = data(FILE, 3);
    let proxy = CuttingProxy::start(s.serve.addr);
    proxy.cut_downstream_every(Some(CUT));
    let (root, new) = (s.root.clone(), changed.clone());
    // After the first cut, before the retry reaches the server: a new
    // version (another inode, so another ETag) replaces the file.
    proxy.on_cut(move |n| {
        if n == 1 {
            let tmp = root.join("moving.tmp");
            std::fs::write(&tmp, &new).unwrap();
            std::fs::rename(&tmp, root.join("moving.bin")).unwrap();
        }
    });
    let dest = s.local.join("moving.bin");
    let out = run(
        &s.state,
        &[
            "get",
            "--connections",
            "1",
            &format!("{}/moving.bin", proxy.base()),
            "-o",
            dest.to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("the file changed on the server; restarting from byte 0"),
        "{stderr}"
    );
    assert!(
        std::fs::read(&dest).unwrap() == changed,
        "not the new version"
    );
}

/// A port nobody listens on refuses at the first try: that fails at once,
/// with no retries (a permanent error fails fast).
#[test]
fn retries_are_bounded_against_a_dead_port() {
    let s = setup(&[]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let small = s.local.join("small.txt");
    std::fs::write(&small, b"hello").unwrap();
    let big = s.local.join("big.bin");
    std::fs::write(&big, data(9 * MIB, 4)).unwrap();
    let dead = format!("http://127.0.0.1:{port}");
    for args in [
        vec!["put", "--retries", "2", small.to_str().unwrap(), &dead],
        vec!["put", "--retries", "2", big.to_str().unwrap(), &dead],
        vec![
            "get",
            "--retries",
            "2",
            &format!("{dead}/x.bin"),
            "-o",
            s.local.join("x.bin").to_str().unwrap(),
        ],
    ] {
        let started = Instant::now();
        let out = run(&s.state, &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("connection refused"), "{stderr}");
        // Refused at the first try: nobody listens, so no retry at all.
        assert!(!stderr.contains("retry"), "{stderr}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }
    // No retries at all with --retries 0.
    let out = run(
        &s.state,
        &["put", "--retries", "0", small.to_str().unwrap(), &dead],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        !text(&out.stderr).contains("retry"),
        "{}",
        text(&out.stderr)
    );
}

/// A plain HTTP/1.1 file server without resumable uploads (as most are):
/// `OPTIONS` answers only `Allow`, `PUT` stores the body under `root`.
/// Returns its address and the methods it saw.
fn plain_server(root: PathBuf) -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    fake_server(root, false)
}

/// An upload in progress on the fake tus server: target, length, bytes.
type TusUploads = Arc<Mutex<Vec<(String, usize, Vec<u8>)>>>;

/// [`plain_server`], or with `tus` a tus 1.0 server without the
/// concatenation extension (as other tus servers and our S3 backend are):
/// creation, offset and append on `/-/uploads/`. A request carrying
/// `Upload-Concat` is logged as `METHOD concat` and refused.
fn fake_server(root: PathBuf, tus: bool) -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let uploads: TusUploads = Arc::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { return };
            let (root, log, uploads) = (root.clone(), log.clone(), uploads.clone());
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = vec![0u8; 1 << 16];
                loop {
                    let end = loop {
                        if let Some(i) = wirespeed_testkit::find(&buf, b"\r\n\r\n") {
                            break i + 4;
                        }
                        match c.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_string();
                    buf.drain(..end);
                    let mut parts = head.split_whitespace();
                    let (method, path) = (
                        parts.next().unwrap_or("").to_string(),
                        parts.next().unwrap_or("").to_string(),
                    );
                    let field = |name: &str| {
                        head.lines().find_map(|l| {
                            let (n, v) = l.split_once(':')?;
                            n.trim()
                                .eq_ignore_ascii_case(name)
                                .then(|| v.trim().to_string())
                        })
                    };
                    let concat = field("upload-concat").is_some();
                    log.lock().unwrap().push(if concat {
                        format!("{method} concat")
                    } else {
                        method.clone()
                    });
                    let len: usize = field("content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    if field("expect").is_some() {
                        let _ = c.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
                    }
                    while buf.len() < len {
                        match c.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body: Vec<u8> = buf.drain(..len).collect();
                    let upload = path.strip_prefix("/-/uploads/").map(str::to_string);
                    let answer: Vec<u8> = match (method.as_str(), upload) {
                        (_, Some(_)) if concat => {
                            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_vec()
                        }
                        ("OPTIONS", _) if tus => {
                            b"HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\n\
                            Tus-Version: 1.0.0\r\nTus-Extension: creation,termination\r\n\r\n"
                                .to_vec()
                        }
                        ("POST", Some(target)) if tus => {
                            let length = field("upload-length").unwrap().parse().unwrap();
                            let mut u = uploads.lock().unwrap();
                            u.push((target, length, Vec::new()));
                            format!(
                                "HTTP/1.1 201 Created\r\nTus-Resumable: 1.0.0\r\n\
                                 Location: /-/uploads/{}\r\nContent-Length: 0\r\n\r\n",
                                u.len() - 1
                            )
                            .into_bytes()
                        }
                        ("HEAD" | "PATCH", Some(id)) if tus => {
                            let mut u = uploads.lock().unwrap();
                            let (target, length, bytes) = &mut u[id.parse::<usize>().unwrap()];
                            if method == "PATCH" {
                                bytes.extend_from_slice(&body);
                                if bytes.len() == *length {
                                    std::fs::write(root.join(&*target), &*bytes).unwrap();
                                }
                            }
                            format!(
                                "HTTP/1.1 {}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: {}\r\n\
                                 Upload-Length: {length}\r\nContent-Length: 0\r\n\r\n",
                                if method == "PATCH" {
                                    "204 No Content"
                                } else {
                                    "200 OK"
                                },
                                bytes.len()
                            )
                            .into_bytes()
                        }
                        (_, Some(_)) => {
                            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec()
                        }
                        (method, None) => match method {
                            "OPTIONS" => {
                                b"HTTP/1.1 200 OK\r\nAllow: GET, PUT\r\nContent-Length: 0\r\n\r\n"
                                    .to_vec()
                            }
                            "PUT" => {
                                let name = path.trim_start_matches('/');
                                std::fs::write(root.join(name), &body).unwrap();
                                b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n".to_vec()
                            }
                            // The whole file whatever Range says, and no
                            // Accept-Ranges (a server that does not do ranges).
                            "GET" | "HEAD" => {
                                let file =
                                    std::fs::read(root.join(path.trim_start_matches('/'))).unwrap();
                                let mut a = format!(
                                    "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: {}\r\n\r\n",
                                    file.len()
                                )
                                .into_bytes();
                                if method == "GET" {
                                    a.extend_from_slice(&file);
                                }
                                a
                            }
                            _ => b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n"
                                .to_vec(),
                        },
                    };
                    if c.write_all(&answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

#[test]
fn put_falls_back_to_put_on_a_server_without_resumable_uploads() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, state) = (tmp.path().join("root"), tmp.path().join("state"));
    std::fs::create_dir_all(&root).unwrap();
    let (addr, seen) = plain_server(root.clone());
    let src = tmp.path().join("plain.bin");
    std::fs::write(&src, data(9 * MIB, 5)).unwrap();
    let url = format!("http://{addr}/plain.bin");
    let out = run(&state, &["put", src.to_str().unwrap(), &url]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("offers no resumable uploads; sending a plain PUT"),
        "{stderr}"
    );
    assert!(stdout.contains("plain.bin"), "{stdout}");
    assert_same_file(&src, &root.join("plain.bin"));
    let methods = seen.lock().unwrap().clone();
    assert_eq!(
        methods,
        ["OPTIONS", "OPTIONS", "PUT"],
        "discovery, then one PUT"
    );
    assert!(state_files(&state).is_empty());
    // A small file costs no discovery: one PUT.
    let small = tmp.path().join("small.txt");
    std::fs::write(&small, b"small").unwrap();
    let out = run(
        &state,
        &[
            "put",
            small.to_str().unwrap(),
            &format!("http://{addr}/small.txt"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(seen.lock().unwrap().len(), 4, "{:?}", seen.lock().unwrap());
    assert_eq!(std::fs::read(root.join("small.txt")).unwrap(), b"small");
}

#[test]
fn put_help_says_a_plain_put_restarts_from_zero() {
    let out = Command::new(BIN)
        .args(["put", "--help"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let help = text(&out.stdout);
    for want in [
        "--protocol",
        "--continue",
        "--retries",
        "from byte 0",
        "XDG_STATE_HOME",
        "--connections",
        "tus concatenation",
        "only the missing bytes",
    ] {
        assert!(help.contains(want), "{want}: {help}");
    }
}

/// `put --protocol PROTOCOL EXTRA…` of 64 MiB through a proxy cutting every 16 MiB
/// upstream: at least 3 cuts, the stored file byte-identical, verified, the
/// state file gone, and the file sent about once (resumed, not restarted).
fn put_resumes_through_cuts(protocol: &str, extra: &[&str]) {
    let s = setup(&[]);
    let src = s.local.join("big.bin");
    std::fs::write(&src, data(FILE, 10)).unwrap();
    let proxy = CuttingProxy::start(s.serve.addr);
    proxy.cut_upstream_every(Some(CUT));
    let url = format!("{}/up/big.bin", proxy.base());
    let mut args = vec!["put", "--protocol", protocol];
    args.extend_from_slice(extra);
    args.extend([src.to_str().unwrap(), url.as_str()]);
    let out = run(&s.state, &args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(proxy.cuts() >= 3, "{} cuts\n{stderr}", proxy.cuts());
    assert!(stderr.contains("resuming at byte"), "{stderr}");
    assert!(!stderr.contains("plain PUT"), "{stderr}");
    assert!(stdout.contains("verified by the server"), "{stdout}");
    assert_same_file(&src, &s.root.join("up/big.bin"));
    assert!(
        proxy.bytes_up() < 2 * FILE as u64,
        "{} bytes sent for a {FILE}-byte file",
        proxy.bytes_up()
    );
    assert!(state_files(&s.state).is_empty(), "state file left behind");
}

#[test]
fn put_resumes_through_cuts_with_the_ietf_draft_digest_first() {
    put_resumes_through_cuts("ietf", &["--digest-first"]);
}

#[test]
fn put_resumes_through_cuts_with_tus_in_8_mib_appends() {
    put_resumes_through_cuts("tus", &["--append-size", "8M"]);
}

#[test]
fn put_resumes_through_cuts_with_the_announced_protocol() {
    put_resumes_through_cuts("auto", &[]);
}

#[test]
fn put_continue_after_the_client_was_killed_sends_only_the_rest() {
    let s = setup(&[]);
    let src = s.local.join("killed.bin");
    std::fs::write(&src, data(FILE, 11)).unwrap();
    let proxy = CuttingProxy::start(s.serve.addr);
    proxy.stall_upstream_after(Some(24 * MIB as u64));
    let url = format!("{}/killed.bin", proxy.base());
    let mut child = client(&s.state, &["put", "-q", src.to_str().unwrap(), &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wirespeed_testkit::fs::eventually("the upload stalls mid-file", || proxy.stalled() >= 1);
    assert_eq!(state_files(&s.state).len(), 1, "the upload is recorded");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        state_files(&s.state).len(),
        1,
        "a killed put keeps its state"
    );
    proxy.stall_upstream_after(None);
    let before = proxy.bytes_up();
    let out = run(
        &s.state,
        &["put", "--continue", src.to_str().unwrap(), &url],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("continuing the interrupted upload"),
        "{stderr}"
    );
    assert!(stderr.contains("resuming at byte"), "{stderr}");
    let resumed = proxy.bytes_up() - before;
    assert!(
        resumed < FILE as u64 - 8 * MIB as u64,
        "--continue sent {resumed} bytes of {FILE}"
    );
    assert!(proxy.bytes_up() < 2 * FILE as u64);
    assert_same_file(&src, &s.root.join("killed.bin"));
    assert!(
        state_files(&s.state).is_empty(),
        "state removed when complete"
    );
}

#[test]
fn a_failed_put_says_how_to_continue_and_continue_notices_a_changed_file() {
    let s = setup(&[]);
    let src = s.local.join("hint.bin");
    std::fs::write(&src, data(FILE, 12)).unwrap();
    let proxy = CuttingProxy::start(s.serve.addr);
    proxy.cut_upstream_every(Some(CUT));
    let url = format!("{}/hint.bin", proxy.base());
    let out = run(
        &s.state,
        &["put", "--retries", "0", src.to_str().unwrap(), &url],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the partial upload is kept: `wirespeed put --continue"),
        "{stderr}"
    );
    assert_eq!(state_files(&s.state).len(), 1);
    // The file changes: --continue starts a new upload and says so.
    std::fs::write(&src, data(FILE, 13)).unwrap();
    let out = run(
        &s.state,
        &["put", "--continue", src.to_str().unwrap(), &url],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("changed since the interrupted upload; starting a new upload"),
        "{stderr}"
    );
    assert_same_file(&src, &s.root.join("hint.bin"));
    assert!(state_files(&s.state).is_empty());
}

/// `get -r --archive`: a folder as one archive through a proxy that cuts
/// every 16 MiB, resumed by ranges with If-Range, byte-identical to a fresh
/// uncut download; and a `.part` left by a cut finishes with `-c`.
#[test]
fn get_archive_resumes_through_cuts_and_equals_a_fresh_one() {
    let s = setup(&[]);
    let dir = s.root.join("photos");
    std::fs::create_dir_all(dir.join("2024 été")).unwrap();
    std::fs::write(dir.join("a.bin"), data(20 * MIB, 4)).unwrap();
    std::fs::write(dir.join("2024 été/b.bin"), data(30 * MIB + 5, 5)).unwrap();
    std::fs::write(dir.join("small.txt"), b"small").unwrap();
    for format in ["zip", "tar"] {
        let fresh = s.local.join(format!("fresh.{format}"));
        let out = run(
            &s.state,
            &[
                "get",
                "-r",
                "--archive",
                format,
                &format!("{}/photos/", s.serve.base()),
                "-o",
                fresh.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let proxy = CuttingProxy::start(s.serve.addr);
        proxy.cut_downstream_every(Some(CUT));
        let cut = s.local.join(format!("cut.{format}"));
        let out = run(
            &s.state,
            &[
                "get",
                "-r",
                "--archive",
                format,
                &format!("{}/photos", proxy.base()),
                "-o",
                cut.to_str().unwrap(),
            ],
        );
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(proxy.cuts() >= 2, "{} cuts\n{stderr}", proxy.cuts());
        // Larger than the first request's answer: fetched by ranges.
        assert!(stderr.contains("resuming the missing ranges"), "{stderr}");
        assert_same_file(&fresh, &cut);
        // A download cut by the user: finished later with -c.
        let whole = std::fs::read(&fresh).unwrap();
        let later = s.local.join(format!("later.{format}"));
        std::fs::write(
            // The client's partial name (`transfer::part_path`).
            s.local.join(format!(".wirespeed-part-later.{format}")),
            &whole[..whole.len() / 3],
        )
        .unwrap();
        let out = run(
            &s.state,
            &[
                "get",
                "-c",
                "--archive",
                format,
                &format!("{}/photos/", s.serve.base()),
                "-o",
                later.to_str().unwrap(),
            ],
        );
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(stdout.contains("resumed at"), "{stdout}");
        assert_same_file(&fresh, &later);
    }
    // The default name is the folder's.
    let out = client(
        &s.state,
        &[
            "get",
            "--archive",
            "tar",
            &format!("{}/photos/", s.serve.base()),
        ],
    )
    .current_dir(&s.local)
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_same_file(&s.local.join("photos.tar"), &s.local.join("fresh.tar"));
}

/// The access log's 206 answers since `from` bytes of stderr: how many, and
/// the body bytes they carried.
fn ranges_served(stderr: &str) -> (usize, u64) {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("status=206"))
        .collect();
    let bytes = lines
        .iter()
        .filter_map(|l| {
            l.split("bytes_out=")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    (lines.len(), bytes)
}

/// The 206 answers logged since `before` once the server has logged at
/// least `want` bytes of them. The server writes its access line after the
/// last byte leaves, so the client may finish first; waiting (bounded) for the
/// expected bytes, then a moment more for any surplus, keeps the count exact.
fn ranges_served_since(s: &Setup, before: usize, want_bytes: u64) -> (usize, u64) {
    let until = Instant::now() + Duration::from_secs(10);
    while ranges_served(&s.serve.stderr()[before..]).1 < want_bytes && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    ranges_served(&s.serve.stderr()[before..])
}

/// 24 MiB in 4 MiB pieces (the smallest piece size): six ranges.
const RANGED: usize = 24 * MIB;
const PIECE: u64 = 4 * MIB as u64;

fn ranged_get(s: &Setup, base: &str, name: &str, dest: &Path, extra: &[&str]) -> Output {
    let url = format!("{base}/{name}");
    let mut args = vec!["get", "--ranged-from", "1M"];
    args.extend_from_slice(extra);
    if !extra.contains(&"--connections") {
        args.extend_from_slice(&["--connections", "4"]);
    }
    args.extend_from_slice(&[url.as_str(), "-o", dest.to_str().unwrap()]);
    run(&s.state, &args)
}

#[test]
fn get_by_ranges_is_byte_identical_and_a_cut_fetches_only_the_missing_ranges() {
    let s = setup(&[]);
    let bytes = data(RANGED, 4);
    seed(&s, "r.bin", &bytes);
    // Whole, over parallel connections.
    let whole = s.local.join("whole.bin");
    let before = s.serve.stderr().len();
    let out = ranged_get(&s, &s.serve.base(), "r.bin", &whole, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(&whole).unwrap() == bytes, "bytes differ");
    assert!(stdout_says_verified(&out), "{}", text(&out.stdout));
    let (n, b) = ranges_served_since(&s, before, RANGED as u64);
    assert_eq!((n, b), (6, RANGED as u64), "six ranges, each byte once");

    // Cut after two and a half pieces on one connection, no retries: two
    // pieces are on disk and recorded.
    let proxy = CuttingProxy::start(s.serve.addr);
    let dest = s.local.join("cut.bin");
    let done = cut_ranged_get(&s, &proxy, "r.bin", &dest);
    let part = s.local.join(".wirespeed-part-cut.bin");
    let len = std::fs::metadata(&part).map(|m| m.len());
    assert_eq!(len.ok(), Some(RANGED as u64), "preallocated");
    // The server logs the cut answer once it notices: wait for it (the
    // pieces done and the one cut), so it is not counted as the rerun's;
    // then until no line has come for half a second (the next piece's
    // request may have been pipelined behind the cut one, and be logged
    // as cut too).
    let until = Instant::now() + Duration::from_secs(10);
    let (mut seen, mut quiet_since) = (0, Instant::now());
    while Instant::now() < until {
        let now = ranges_served(&s.serve.stderr()).0;
        if now != seen {
            (seen, quiet_since) = (now, Instant::now());
        } else if now > 6 + done && quiet_since.elapsed() > Duration::from_millis(500) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The rerun (the same URL, no more cuts) fetches the missing pieces only.
    let before = s.serve.stderr().len();
    let out = ranged_get(&s, &proxy.base(), "r.bin", &dest, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        std::fs::read(&dest).unwrap() == bytes,
        "bytes differ after the resume"
    );
    let (n, b) = ranges_served_since(&s, before, RANGED as u64 - done as u64 * PIECE);
    assert_eq!(
        (n, b),
        (6 - done, RANGED as u64 - done as u64 * PIECE),
        "only the missing ranges"
    );
    assert!(!part.exists());
}

/// Every connection cut after a piece and a half, one retry allowed: each
/// attempt brings a whole piece, which counts as progress (the retries
/// start again) though its record waits for the next sync.
#[test]
fn get_by_ranges_counts_whole_pieces_as_progress_between_cuts() {
    let s = setup(&[]);
    let bytes = data(RANGED, 8);
    seed(&s, "cuts.bin", &bytes);
    let proxy = CuttingProxy::start(s.serve.addr);
    proxy.cut_downstream_every(Some(PIECE + PIECE / 2));
    let dest = s.local.join("cuts.bin");
    let out = ranged_get(
        &s,
        &proxy.base(),
        "cuts.bin",
        &dest,
        &["--retries", "1", "--connections", "2"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(proxy.cuts() >= 4, "{} cuts", proxy.cuts());
    assert!(std::fs::read(&dest).unwrap() == bytes, "bytes differ");
}

/// Ctrl-C mid-download: the pieces received whole (which wait for a sync
/// and a record every 30 s as they arrive) are synced and recorded before
/// it exits, so the rerun fetches only the rest.
#[test]
fn get_by_ranges_interrupted_keeps_the_pieces_received_whole() {
    let s = setup(&[]);
    let bytes = data(RANGED, 6);
    seed(&s, "int.bin", &bytes);
    let proxy = CuttingProxy::start(s.serve.addr);
    proxy.stall_downstream_after(Some(2 * PIECE + PIECE / 2));
    let (url, dest) = (format!("{}/int.bin", proxy.base()), s.local.join("int.bin"));
    let args = [
        "get",
        "--ranged-from",
        "1M",
        "--connections",
        "2",
        url.as_str(),
        "-o",
        dest.to_str().unwrap(),
    ];
    let child = client(&s.state, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wirespeed_testkit::fs::eventually("the download stalls mid-file", || proxy.stalled() >= 1);
    // The proxy has sent them; the client has written them (what it wrote
    // is read back).
    let part = s.local.join(".wirespeed-part-int.bin");
    let two = 2 * PIECE as usize;
    wirespeed_testkit::fs::eventually("two pieces written", || {
        std::fs::read(&part).is_ok_and(|b| b.len() >= two && b[..two] == bytes[..two])
    });
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert_eq!(
        pieces_done(&part),
        2,
        "the two pieces received whole: {}",
        text(&out.stderr)
    );
    proxy.stall_downstream_after(None);
    let before = proxy.bytes_down();
    let out = run(&s.state, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(&dest).unwrap() == bytes, "bytes differ");
    let fetched = proxy.bytes_down() - before;
    let rest = RANGED as u64 - 2 * PIECE;
    assert!(
        (rest..rest + 64 * 1024).contains(&fetched),
        "the rerun fetched {fetched} bytes; {rest} were missing"
    );
}

/// A partial file of pieces, rerun with `--connections 1`: continued by
/// ranges over one connection, never appended to as one stream would (its
/// holes, preallocated, would be taken for bytes received).
#[test]
fn get_by_ranges_cut_then_one_connection_continues_the_pieces() {
    let s = setup(&[]);
    let bytes = data(RANGED, 9);
    seed(&s, "one.bin", &bytes);
    let proxy = CuttingProxy::start(s.serve.addr);
    let dest = s.local.join("one.bin");
    let done = cut_ranged_get(&s, &proxy, "one.bin", &dest);
    let before = proxy.bytes_down();
    let out = ranged_get(&s, &proxy.base(), "one.bin", &dest, &["--connections", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(&dest).unwrap() == bytes, "bytes differ");
    let fetched = proxy.bytes_down() - before;
    let rest = RANGED as u64 - done as u64 * PIECE;
    assert!(
        (rest..rest + 64 * 1024).contains(&fetched),
        "fetched {fetched} bytes; {rest} were missing"
    );
}

/// A ranged get of `name` into `dest` through `proxy`, cut after two and a
/// half pieces with no retries: it fails, and some pieces, not all, are
/// recorded on disk (how many is returned). The proxy cuts no more after.
fn cut_ranged_get(s: &Setup, proxy: &CuttingProxy, name: &str, dest: &Path) -> usize {
    proxy.cut_downstream_every(Some(2 * PIECE + PIECE / 2));
    let cut = ["--retries", "0", "--connections", "2"];
    let out = ranged_get(s, &proxy.base(), name, dest, &cut);
    proxy.cut_downstream_every(None);
    assert!(
        !out.status.success(),
        "the cut fails it: {}",
        text(&out.stderr)
    );
    let name = dest.file_name().unwrap().to_str().unwrap();
    let done = pieces_done(&dest.with_file_name(format!(".wirespeed-part-{name}")));
    assert!(
        (1..6).contains(&done),
        "{done} pieces recorded before the cut"
    );
    done
}

/// How many pieces the partial file's record says are on disk.
fn pieces_done(part: &Path) -> usize {
    let mut buf = vec![0u8; 4096];
    let n =
        rustix::fs::getxattr(part, "user.wirespeed.pieces", &mut buf[..]).expect("a pieces record");
    let rec = std::str::from_utf8(&buf[..n]).unwrap();
    let pieces = wirespeed_client::transfer::ranges::Pieces::decode(rec, RANGED as u64)
        .expect("a valid record");
    pieces.count() - pieces.missing().count()
}

fn stdout_says_verified(out: &Output) -> bool {
    text(&out.stdout).contains("sha-256 verified")
}

#[test]
fn get_by_ranges_starts_over_when_the_file_changed_between_runs() {
    let s = setup(&[]);
    seed(&s, "m.bin", &data(RANGED, 5));
    let proxy = CuttingProxy::start(s.serve.addr);
    let dest = s.local.join("m.bin");
    cut_ranged_get(&s, &proxy, "m.bin", &dest);
    // A new version (another ETag) before the rerun.
    let changed = data(RANGED, 6);
    seed(&s, "m.bin", &changed);
    let before = s.serve.stderr().len();
    let out = ranged_get(&s, &proxy.base(), "m.bin", &dest, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        std::fs::read(&dest).unwrap() == changed,
        "not the new version"
    );
    let (_, b) = ranges_served_since(&s, before, RANGED as u64);
    assert_eq!(b, RANGED as u64, "every byte fetched again");
}

#[test]
fn get_by_ranges_falls_back_to_one_stream_without_range_support() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, state) = (tmp.path().join("root"), tmp.path().join("state"));
    std::fs::create_dir_all(&root).unwrap();
    let bytes = data(8 * MIB, 7);
    std::fs::write(root.join("f.bin"), &bytes).unwrap();
    let (addr, seen) = plain_server(root.clone());
    let dest = tmp.path().join("f.bin");
    let out = run(
        &state,
        &[
            "get",
            "--ranged-from",
            "1M",
            "--connections",
            "4",
            &format!("http://{addr}/f.bin"),
            "-o",
            dest.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(&dest).unwrap() == bytes, "bytes differ");
    assert_eq!(
        *seen.lock().unwrap(),
        ["GET"],
        "the answer to the first request (a 200) written as one stream"
    );
}

/// Parallel parts in tests: 16 MiB files cut into 4 parts of 4 MiB.
const PARTS_FILE: usize = 16 * MIB;
const PARTS_FROM: &str = "1M";

/// The state file's record of a parts upload (None: not one).
fn recorded_parts(state: &Path) -> Option<serde_json::Value> {
    let files = state_files(state);
    let [file] = files.as_slice() else {
        return None;
    };
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    v.get("parts").cloned()
}

#[test]
fn put_in_parallel_parts_is_byte_identical_and_verified() {
    let s = setup(&[]);
    let src = s.local.join("parts.bin");
    std::fs::write(&src, data(PARTS_FILE, 20)).unwrap();
    let url = format!("{}/up/parts.bin", s.serve.base());
    let out = run(
        &s.state,
        &[
            "put",
            "--connections",
            "4",
            "--parts-from",
            PARTS_FROM,
            src.to_str().unwrap(),
            &url,
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("verified by the server"), "{stdout}");
    assert!(stdout.contains("sent as 4 parts over"), "{stdout}");
    assert_same_file(&src, &s.root.join("up/parts.bin"));
    assert!(state_files(&s.state).is_empty(), "state file left behind");
    // The parts are consumed: nothing is left in the server's upload area.
    let left: Vec<_> = std::fs::read_dir(s.root.join(".wirespeed-uploads"))
        .map(|rd| rd.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(
        !left.iter().any(|n| n.to_string_lossy().ends_with(".part")),
        "{left:?}"
    );
    // --connections 1 is one upload, as before.
    let out = run(
        &s.state,
        &[
            "put",
            "--connections",
            "1",
            "--parts-from",
            PARTS_FROM,
            src.to_str().unwrap(),
            &format!("{}/up/one.bin", s.serve.base()),
        ],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!stdout.contains("sent as"), "{stdout}");
    assert_same_file(&src, &s.root.join("up/one.bin"));
}

/// Killed mid-way (the connection stalls after 6 MiB: part 1 complete,
/// part 2 half sent), the same command continues: the complete parts are
/// not sent again, the half one from the server's offset.
#[test]
fn put_in_parts_killed_mid_way_resends_only_the_missing_bytes() {
    let s = setup(&[]);
    let src = s.local.join("cut.bin");
    std::fs::write(&src, data(PARTS_FILE, 21)).unwrap();
    let proxy = CuttingProxy::start(s.serve.addr);
    proxy.stall_upstream_after(Some(6 * MIB as u64));
    let url = format!("{}/cut.bin", proxy.base());
    let args = [
        "put",
        "--connections",
        "4",
        "--parts-from",
        PARTS_FROM,
        src.to_str().unwrap(),
        url.as_str(),
    ];
    let mut child = client(&s.state, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wirespeed_testkit::fs::eventually("the upload stalls mid-file", || proxy.stalled() >= 1);
    wirespeed_testkit::fs::eventually("a complete part is recorded", || {
        recorded_parts(&s.state).is_some_and(|p| {
            let done = p["done"].as_str().unwrap_or("").to_string();
            !done.ends_with(" 00")
        })
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let parts = recorded_parts(&s.state).expect("the parts are recorded");
    assert_eq!(parts["urls"].as_array().unwrap().len(), 4, "{parts}");
    proxy.stall_upstream_after(None);
    let before = proxy.bytes_up();
    let out = run(&s.state, &args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("continuing the interrupted upload"),
        "{stderr}"
    );
    assert!(stderr.contains("resuming at byte"), "{stderr}");
    let resumed = proxy.bytes_up() - before;
    assert!(
        resumed < (PARTS_FILE - 5 * MIB) as u64,
        "the rerun sent {resumed} of {PARTS_FILE}"
    );
    assert_same_file(&src, &s.root.join("cut.bin"));
    assert!(state_files(&s.state).is_empty());
}

/// While a part's bytes go, the upload of the part its connection takes
/// next is created on another connection. With every connection stalled
/// after 2 MiB and at most 2 connections, at least three parts have
/// uploads: the first connection's part and the one it created ahead, and
/// the part the second connection took (one at a time, only two would).
/// Four when the first part's bytes all fit in the socket buffers: its
/// connection then writes the next part's append without waiting for the
/// answer (pipelined), and creates the one after.
#[test]
fn put_in_parts_creates_the_next_part_while_one_is_sent() {
    let s = setup(&[]);
    let src = s.local.join("ahead.bin");
    std::fs::write(&src, data(PARTS_FILE, 22)).unwrap();
    let proxy = CuttingProxy::start(s.serve.addr);
    proxy.stall_upstream_after(Some(2 * MIB as u64));
    let url = format!("{}/ahead.bin", proxy.base());
    let args = [
        "put",
        "--connections",
        "2",
        "--parts-from",
        PARTS_FROM,
        src.to_str().unwrap(),
        url.as_str(),
    ];
    let mut child = client(&s.state, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The second connection comes with the first judgement of the rate, 4 s in.
    wirespeed_testkit::fs::eventually_within(
        "both connections stall",
        Duration::from_secs(20),
        || proxy.stalled() >= 2,
    );
    let created = |p: &serde_json::Value| {
        p["urls"]
            .as_array()
            .map_or(0, |u| u.iter().filter(|u| u.is_string()).count())
    };
    let parts = recorded_parts(&s.state).expect("the parts are recorded");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!((3..=4).contains(&created(&parts)), "{parts}");
    // The rerun finishes it, the part created ahead included.
    proxy.stall_upstream_after(None);
    let out = run(&s.state, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_same_file(&src, &s.root.join("ahead.bin"));
}

/// `wirespeed passwd alice` with alice's password on stdin: her rules line.
fn alice_line() -> String {
    let mut child = Command::new(BIN)
        .args(["passwd", "alice"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "alice-pw").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim_end().to_string()
}

/// A final upload naming someone else's parts (here: a record pointing at
/// alice's partial uploads, continued by an anonymous uploader; both may
/// write) is refused by the server, and the client says why.
#[test]
fn put_in_parts_over_someone_elses_parts_is_refused_clearly() {
    let rules = wirespeed_testkit::fs::tempdir();
    let file = rules.path().join("users.toml");
    let text_rules = format!(
        "[users]\n{}\n[paths.\"/\"]\n\"*\" = \"rwd\"\n",
        alice_line()
    );
    std::fs::write(&file, text_rules).unwrap();
    let s = setup(&["--auth", file.to_str().unwrap()]);
    let len = 8 * MIB;
    let proxy = CuttingProxy::start(s.serve.addr);
    let src = s.local.join("theirs.bin");
    std::fs::write(&src, data(len, 22)).unwrap();
    // Alice's two complete partial uploads of 4 MiB.
    let auth = "Authorization: Basic YWxpY2U6YWxpY2UtcHc=".to_string();
    let theirs: Vec<String> = (0..2)
        .map(|i| {
            let (status, head, body) = s.serve.req(
                "POST",
                "/-/uploads/theirs.bin",
                &[
                    "Tus-Resumable: 1.0.0",
                    "Upload-Concat: partial",
                    "Upload-Length: 4194304",
                    &auth,
                ],
                b"",
            );
            assert_eq!(status, 201, "{}", text(&body));
            let loc = head
                .lines()
                .find_map(|l| l.strip_prefix("location: "))
                .unwrap()
                .trim()
                .to_string();
            let chunk = &std::fs::read(&src).unwrap()[i * 4 * MIB..(i + 1) * 4 * MIB];
            let (status, _, body) = s.serve.req(
                "PATCH",
                &loc,
                &[
                    "Tus-Resumable: 1.0.0",
                    "Upload-Offset: 0",
                    "Content-Type: application/offset+octet-stream",
                    &auth,
                ],
                chunk,
            );
            assert_eq!(status, 204, "{}", text(&body));
            format!("{}{loc}", proxy.base())
        })
        .collect();
    // An anonymous upload of the same file, stalled at once, recorded...
    proxy.stall_upstream_after(Some(MIB as u64));
    let url = format!("{}/theirs.bin", proxy.base());
    let args = [
        "put",
        "--parts-from",
        PARTS_FROM,
        "--retries",
        "0",
        src.to_str().unwrap(),
        url.as_str(),
    ];
    let mut child = client(&s.state, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wirespeed_testkit::fs::eventually("the parts are recorded", || {
        recorded_parts(&s.state).is_some()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    // ...then its record made to name the other's complete parts.
    let [file] = state_files(&s.state).try_into().unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    v["parts"]["done"] = serde_json::json!(format!("{len} {} 03", 4 * MIB));
    v["parts"]["urls"] = serde_json::json!(theirs);
    std::fs::write(&file, serde_json::to_vec(&v).unwrap()).unwrap();
    proxy.stall_upstream_after(None);
    let out = run(&s.state, &args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("continuing the interrupted upload: 2 of 2 parts complete"),
        "{stderr}"
    );
    assert!(stderr.contains("refused to join the 2 parts"), "{stderr}");
    assert!(stderr.contains("belongs to someone else"), "{stderr}");
    assert!(!s.root.join("theirs.bin").exists(), "nothing published");
    assert!(
        state_files(&s.state).is_empty(),
        "a refused record is dropped"
    );
}

#[test]
fn put_in_parts_falls_back_quietly_to_one_upload_without_concatenation() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, state) = (tmp.path().join("root"), tmp.path().join("state"));
    std::fs::create_dir_all(&root).unwrap();
    let (addr, seen) = fake_server(root.clone(), true);
    let src = tmp.path().join("tus.bin");
    std::fs::write(&src, data(PARTS_FILE, 23)).unwrap();
    let url = format!("http://{addr}/tus.bin");
    let out = run(
        &state,
        &[
            "put",
            "--connections",
            "4",
            "--parts-from",
            PARTS_FROM,
            src.to_str().unwrap(),
            &url,
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.trim().is_empty(), "quietly: {stderr}");
    assert!(!stdout.contains("sent as"), "{stdout}");
    assert_same_file(&src, &root.join("tus.bin"));
    let methods = seen.lock().unwrap().clone();
    assert!(
        !methods.iter().any(|m| m.ends_with("concat")),
        "{methods:?}"
    );
    assert_eq!(
        methods.iter().filter(|m| *m == "POST").count(),
        1,
        "one upload: {methods:?}"
    );
    assert!(state_files(&state).is_empty());
}
