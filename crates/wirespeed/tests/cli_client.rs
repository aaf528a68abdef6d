//! The built `wirespeed` binary as a user runs it: `serve` in one process,
//! `put`/`get`/`ls`/`rm` in others; exit codes and messages. The TLS case
//! runs an in-process TLS server (self-signed, `--cacert`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use wirespeed_testkit::server::ThreadServer;

const BIN: &str = env!("CARGO_BIN_EXE_wirespeed");

struct Serve {
    child: Child,
    base: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path, extra: &[&str]) -> Serve {
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg(dir)
        .args(["--listen", "127.0.0.1:0", "--no-fsync"])
        .args(extra)
        .env_remove("WIRESPEED_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start wirespeed serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected start line {line:?}"))
        .to_string();
    Serve { child, base }
}

/// Run the client with a bounded time; returns (status, stdout, stderr).
fn run(args: &[&str], envs: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_remove("WIRESPEED_TOKEN");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("wirespeed {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    (
        status.code(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

fn data(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect()
}

#[test]
fn put_get_ls_rm_round_trip() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = serve(root.path(), &[]);
    let bytes = data(3 << 20);
    let src = local.path().join("a b.bin");
    std::fs::write(&src, &bytes).unwrap();
    let s = src.to_str().unwrap();

    let (code, out, err) = run(&["put", s, &format!("{}/d/", srv.base)], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("verified by the server"), "{out}");
    assert_eq!(std::fs::read(root.path().join("d/a b.bin")).unwrap(), bytes);

    // --no-verify: stored the same, and says it was not checked.
    let (code, out, err) = run(
        &["put", "--no-verify", s, &format!("{}/nv/x.bin", srv.base)],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("not verified (--no-verify)"), "{out}");
    assert_eq!(std::fs::read(root.path().join("nv/x.bin")).unwrap(), bytes);

    let (code, out, err) = run(&["ls", &format!("{}/d/", srv.base)], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.lines().next().unwrap().starts_with("TYPE"), "{out}");
    assert!(
        out.contains("file") && out.contains("3145728") && out.contains("a b.bin"),
        "{out}"
    );
    let (code, out, _) = run(&["ls", "--json", &format!("{}/d/", srv.base)], &[]);
    assert_eq!(code, Some(0));
    assert!(
        out.trim_start().starts_with('[') && out.contains("\"a b.bin\""),
        "{out}"
    );

    let dest = local.path().join("copy.bin");
    let url = format!("{}/d/a%20b.bin", srv.base);
    let (code, out, err) = run(&["get", &url, "-o", dest.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("3145728 bytes"), "{out}");
    assert_eq!(std::fs::read(&dest).unwrap(), bytes);

    // -o an existing directory: the URL's (decoded) name inside it.
    let (code, _, err) = run(
        &["get", "-q", &url, "-o", local.path().to_str().unwrap()],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read(local.path().join("a b.bin")).unwrap(), bytes);

    // --continue from a correct partial file.
    let dest2 = local.path().join("resumed.bin");
    std::fs::write(local.path().join("resumed.bin.part"), &bytes[..1_000_000]).unwrap();
    let (code, out, err) = run(&["get", "-c", &url, "-o", dest2.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("resumed at 1000000"), "{out}");
    assert_eq!(std::fs::read(&dest2).unwrap(), bytes);

    // A browser-style form upload to the directory (the service's POST /dir/).
    let (code, out, err) = run(&["put", "--form", s, &format!("{}/forms/", srv.base)], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with('2'), "{out}");
    assert_eq!(
        std::fs::read(root.path().join("forms/a b.bin")).unwrap(),
        bytes
    );

    let (code, out, err) = run(&["rm", &url], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("deleted"), "{out}");
    let dest3 = local.path().join("gone.bin");
    let (code, _, err) = run(&["get", &url, "-o", dest3.to_str().unwrap()], &[]);
    assert_ne!(code, Some(0));
    assert!(err.contains("404"), "{err}");
    assert!(!dest3.exists() && !local.path().join("gone.bin.part").exists());
}

#[test]
fn missing_or_wrong_token_and_bad_arguments_exit_1_with_a_message() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = serve(root.path(), &["--token", "s3cret"]);
    let src = local.path().join("t.bin");
    std::fs::write(&src, data(2 << 20)).unwrap();
    let s = src.to_str().unwrap();
    let url = format!("{}/t.bin", srv.base);

    let (code, _, err) = run(&["put", s, &url], &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("server answered 401"), "{err}");
    assert!(!root.path().join("t.bin").exists());

    let (code, _, err) = run(&["put", "-q", s, &url, "--token", "wrong"], &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("401"), "{err}");

    let (code, out, err) = run(
        &["put", "--digest-first", s, &url],
        &[("WIRESPEED_TOKEN", "s3cret")],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("verified"), "{out}");

    // Not a file; bad URL; nobody listening.
    let (code, _, err) = run(
        &["put", local.path().join("missing").to_str().unwrap(), &url],
        &[],
    );
    assert_eq!(code, Some(1));
    assert!(err.contains("missing"), "{err}");
    let (code, _, err) = run(&["get", "ftp://x/y"], &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("only http:// and https://"), "{err}");
    let port = wirespeed_testkit::server::closed_port();
    let (code, _, err) = run(&["ls", &format!("http://127.0.0.1:{port}/")], &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("connection refused"), "{err}");
}

#[test]
fn https_works_with_cacert_or_insecure_and_fails_without() {
    let root = tempfile::tempdir().unwrap();
    let certdir = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let (acceptor, cert, _fp) = wirespeed_tls::server_self_signed(certdir.path()).unwrap();
    let storage = wirespeed_service::LocalStorage::new(root.path())
        .unwrap()
        .with_fsync(false);
    let router = wirespeed_service::router(storage, wirespeed_service::ServiceConfig::default());
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.worker_threads(2);
    let server = ThreadServer::start(rt, |listener, stop| async move {
        let s = wirespeed_net::Server::new(wirespeed_net::ServerConfig::default());
        let _ = s
            .serve_with(listener, Arc::new(acceptor), Arc::new(router), stop)
            .await;
    });
    let addr = server.addr;

    let bytes = data(2 << 20);
    let src = local.path().join("s.bin");
    std::fs::write(&src, &bytes).unwrap();
    let url = format!("https://localhost:{}/s.bin", addr.port());
    let cacert = cert.to_str().unwrap();
    let (code, out, err) = run(
        &["put", src.to_str().unwrap(), &url, "--cacert", cacert],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("verified"), "{out}");

    let (code, _, err) = run(
        &["get", &url, "-o", local.path().join("x").to_str().unwrap()],
        &[],
    );
    assert_eq!(code, Some(1));
    assert!(err.contains("TLS handshake"), "{err}");
    assert!(!local.path().join("x").exists());

    let dest = local.path().join("y");
    let (code, _, err) = run(&["get", "-k", &url, "-o", dest.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read(&dest).unwrap(), bytes);

    server.stop();
}

#[test]
fn help_describes_each_client_command() {
    for (cmd, needle) in [
        ("put", "--digest-first"),
        ("get", "--continue"),
        ("ls", "--json"),
        ("rm", "Delete"),
    ] {
        let (code, out, _) = run(&[cmd, "--help"], &[]);
        assert_eq!(code, Some(0));
        assert!(
            out.contains(needle) && out.contains("--cacert") && out.contains("--token"),
            "{cmd}: {out}"
        );
    }
}

/// An empty token would leave writes open without a word: `serve` refuses
/// to start, whether it came from the flag or the environment.
#[test]
fn empty_token_is_refused_at_start() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().to_str().unwrap();
    for (args, envs) in [
        (
            vec!["serve", dir, "--listen", "127.0.0.1:0", "--token", ""],
            vec![],
        ),
        (
            vec!["serve", dir, "--listen", "127.0.0.1:0"],
            vec![("WIRESPEED_TOKEN", "")],
        ),
    ] {
        let (code, out, err) = run(&args, &envs);
        assert_ne!(code, Some(0), "{out}");
        assert!(err.contains("is empty"), "{err}");
        assert!(!out.contains("listening"), "{out}");
    }
}

/// `get` never leaves a wrong file behind with exit 0: a folder (with or
/// without its `/`, the 301 followed) and a 404 both fail and write
/// nothing; `ls` follows the folder's 301.
#[test]
fn get_fails_cleanly_on_folders_and_errors_and_ls_follows_redirects() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("dir")).unwrap();
    std::fs::write(root.path().join("dir/a.txt"), b"a").unwrap();
    let srv = serve(root.path(), &[]);
    for (path, want) in [
        ("/dir", "is a folder"),
        ("/dir/", "is a folder"),
        ("/missing.txt", "404"),
    ] {
        let out = local.path().join("out");
        let (code, stdout, err) = run(
            &[
                "get",
                &format!("{}{path}", srv.base),
                "-o",
                out.to_str().unwrap(),
            ],
            &[],
        );
        assert_ne!(code, Some(0), "{path}: {stdout}");
        assert!(err.contains(want), "{path}: {err}");
        assert!(!out.exists(), "{path}: no output file");
        assert!(
            std::fs::read_dir(local.path()).unwrap().next().is_none(),
            "{path}: no .part left"
        );
    }
    let (code, out, err) = run(&["ls", &format!("{}/dir", srv.base)], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("a.txt"), "{out}");
}

/// Against a foreign server (Python's http.server with a redirecting
/// handler): a same-origin redirect is followed, one to another origin is
/// refused with a clear message, and nothing is written.
#[test]
fn get_follows_same_origin_redirects_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("new.txt"), b"moved here").unwrap();
    let script = r#"
import http.server, sys, os
os.chdir(sys.argv[1])
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/old.txt":
            self.send_response(301); self.send_header("Location", "/new.txt"); self.send_header("Content-Length", "0"); self.end_headers(); return
        if self.path == "/away.txt":
            self.send_response(302); self.send_header("Location", "http://127.0.0.2:9/x"); self.send_header("Content-Length", "0"); self.end_headers(); return
        return super().do_GET()
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let mut py = match Command::new("python3")
        .args(["-c", script, dir.path().to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("python3 unavailable ({e}); skipping");
            return;
        }
    };
    let mut port = String::new();
    BufReader::new(py.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let base = format!("http://127.0.0.1:{}", port.trim());
    let local = tempfile::tempdir().unwrap();
    let out = local.path().join("got.txt");
    let (code, _, err) = run(
        &[
            "get",
            &format!("{base}/old.txt"),
            "-o",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"moved here");
    let out2 = local.path().join("away.txt");
    let (code, _, err) = run(
        &[
            "get",
            &format!("{base}/away.txt"),
            "-o",
            out2.to_str().unwrap(),
        ],
        &[],
    );
    assert_ne!(code, Some(0));
    assert!(err.contains("another origin"), "{err}");
    assert!(!out2.exists());
    let _ = py.kill();
    let _ = py.wait();
}
