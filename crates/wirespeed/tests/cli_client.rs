//! The built `wirespeed` binary as a user runs it: `serve` in one process,
//! `put`/`get`/`ls`/`rm` in others; exit codes and messages. The TLS case
//! runs an in-process TLS server (self-signed, `--cacert`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use wirespeed_testkit::server::ThreadServer;

mod common;
use common::{files_below, Serve, BIN};

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
    let srv = Serve::start(root.path(), &[]);
    let bytes = data(3 << 20);
    let src = local.path().join("a b.bin");
    std::fs::write(&src, &bytes).unwrap();
    let s = src.to_str().unwrap();

    let (code, out, err) = run(&["put", s, &format!("{}/d/", srv.base())], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("verified by the server"), "{out}");
    assert_eq!(std::fs::read(root.path().join("d/a b.bin")).unwrap(), bytes);

    // --no-verify: stored the same, and says it was not checked.
    let (code, out, err) = run(
        &["put", "--no-verify", s, &format!("{}/nv/x.bin", srv.base())],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("not verified (--no-verify)"), "{out}");
    assert_eq!(std::fs::read(root.path().join("nv/x.bin")).unwrap(), bytes);

    let (code, out, err) = run(&["ls", &format!("{}/d/", srv.base())], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.lines().next().unwrap().starts_with("TYPE"), "{out}");
    assert!(
        out.contains("file") && out.contains("3145728") && out.contains("a b.bin"),
        "{out}"
    );
    let (code, out, _) = run(&["ls", "--json", &format!("{}/d/", srv.base())], &[]);
    assert_eq!(code, Some(0));
    assert!(
        out.trim_start().starts_with('[') && out.contains("\"a b.bin\""),
        "{out}"
    );

    let dest = local.path().join("copy.bin");
    let url = format!("{}/d/a%20b.bin", srv.base());
    let (code, out, err) = run(&["get", &url, "-o", dest.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("(3 MiB, "), "{out}");
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
    std::fs::write(
        local.path().join(".wirespeed-part-resumed.bin"),
        &bytes[..1_000_000],
    )
    .unwrap();
    let (code, out, err) = run(&["get", "-c", &url, "-o", dest2.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("resumed at 976.5 KiB"), "{out}");
    assert_eq!(std::fs::read(&dest2).unwrap(), bytes);

    // A browser-style form upload to the directory (the service's POST /dir/).
    let (code, out, err) = run(
        &["put", "--form", s, &format!("{}/forms/", srv.base())],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    // Reported like a PUT: where, how much, checked against the server's sum.
    assert!(
        out.contains("/forms/a%20b.bin (3 MiB, ") && out.contains("verified by the server"),
        "{out}"
    );
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
    assert!(!dest3.exists() && !local.path().join(".wirespeed-part-gone.bin").exists());
}

#[test]
fn missing_or_wrong_token_and_bad_arguments_exit_1_with_a_message() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &["--token", "s3cret"]);
    let src = local.path().join("t.bin");
    std::fs::write(&src, data(2 << 20)).unwrap();
    let s = src.to_str().unwrap();
    let url = format!("{}/t.bin", srv.base());

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
    assert!(err.contains("--cacert FILE") && err.contains("-k"), "{err}");
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

/// Each subcommand's `--help` lists only flags that do something there:
/// `ls`, `share` and `rm` move no file bodies (no `--buffer-size`), and
/// `ls` and `share` draw no bar (no `-q`).
#[test]
fn help_lists_only_flags_that_act() {
    let flag = |help: &str, f: &str| help.lines().any(|l| l.trim_start().contains(f));
    for (cmd, absent, present) in [
        (
            "ls",
            &["--buffer-size", "--quiet"][..],
            &["--json", "--cacert", "--user"][..],
        ),
        (
            "share",
            &["--buffer-size", "--quiet"],
            &["--expires", "--cacert", "--user"],
        ),
        (
            "rm",
            &["--buffer-size"],
            &["--quiet", "--recursive", "--token"],
        ),
        (
            "get",
            &[],
            &["--buffer-size", "--quiet", "--json", "--cacert"],
        ),
        (
            "put",
            &[],
            &["--buffer-size", "--quiet", "--json", "--cacert"],
        ),
        (
            "passwd",
            &["--buffer-size", "--quiet", "--token"],
            &["NAME"],
        ),
    ] {
        let (code, out, _) = run(&[cmd, "--help"], &[]);
        assert_eq!(code, Some(0));
        for f in absent {
            assert!(!flag(&out, f), "{cmd} --help lists {f}: {out}");
        }
        for f in present {
            assert!(flag(&out, f), "{cmd} --help lacks {f}: {out}");
        }
    }
    // Not listed and not taken either: clap says so.
    let (code, _, err) = run(&["ls", "--buffer-size", "1M", "http://127.0.0.1:9/"], &[]);
    assert_eq!(code, Some(2), "{err}");
}

/// `serve --help` ends with examples of the common setups, and
/// `wirespeed --help` gives each subcommand its one line.
#[test]
fn serve_help_has_examples_and_the_top_help_names_each_subcommand() {
    let (code, out, _) = run(&["serve", "--help"], &[]);
    assert_eq!(code, Some(0));
    let examples = out
        .split("Examples:")
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"));
    for setup in [
        "wirespeed serve ~/shared -l 0.0.0.0:8080",
        "--auth users.toml",
        "--tls-self-signed",
        "s3://",
        "--trusted-proxy",
    ] {
        assert!(examples.contains(setup), "no {setup} example: {examples}");
    }
    let (code, out, _) = run(&["--help"], &[]);
    assert_eq!(code, Some(0));
    for cmd in [
        "serve",
        "bench",
        "put",
        "get",
        "ls",
        "rm",
        "share",
        "passwd",
        "completions",
    ] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{cmd} ")))
            .unwrap_or_else(|| panic!("{cmd} not listed: {out}"));
        assert!(line.len() > cmd.len() + 12, "{cmd} has no purpose: {line}");
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
    let srv = Serve::start(root.path(), &[]);
    for (path, want) in [
        ("/dir", "is a folder"),
        ("/dir/", "is a folder"),
        ("/missing.txt", "404"),
    ] {
        let out = local.path().join("out");
        let (code, stdout, err) = run(
            &[
                "get",
                &format!("{}{path}", srv.base()),
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
    let (code, out, err) = run(&["ls", &format!("{}/dir", srv.base())], &[]);
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

/// Run the client with `input` on stdin; returns (status, stdout bytes, stderr).
fn run_piped(args: &[&str], input: &[u8], envs: &[(&str, &str)]) -> (Option<i32>, Vec<u8>, String) {
    use std::io::Write;
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_remove("WIRESPEED_TOKEN");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A writer thread: the child may exit (an error) before reading it all.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    (
        out.status.code(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Names as people type them: Unicode and spaces are encoded, `%XX` copied
/// from a listing is not encoded again, a literal `%` in a file name joined
/// onto a folder URL is; put, get, ls and rm alike.
#[test]
fn unicode_spaces_and_percent_in_urls() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &[]);
    let src = local.path().join("ünï 1.txt");
    std::fs::write(&src, b"unicode body").unwrap();
    let pct = local.path().join("100% off.txt");
    std::fs::write(&pct, b"percent body").unwrap();

    let folder = format!("{}/w/dïr ä/", srv.base());
    let (code, out, err) = run(
        &["put", src.to_str().unwrap(), pct.to_str().unwrap(), &folder],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("/w/d%C3%AFr%20%C3%A4/%C3%BCn%C3%AF%201.txt"),
        "{out}"
    );
    let on_disk = root.path().join("w/dïr ä");
    assert_eq!(
        std::fs::read(on_disk.join("ünï 1.txt")).unwrap(),
        b"unicode body"
    );
    assert_eq!(
        std::fs::read(on_disk.join("100% off.txt")).unwrap(),
        b"percent body"
    );

    // Typed with Unicode and a space, and as copied from a listing page.
    for (url, body) in [
        (
            format!("{}/w/dïr ä/ünï 1.txt", srv.base()),
            &b"unicode body"[..],
        ),
        (
            format!("{}/w/d%C3%AFr%20%C3%A4/%C3%BCn%C3%AF%201.txt", srv.base()),
            b"unicode body",
        ),
        (
            format!("{}/w/dïr ä/100%25 off.txt", srv.base()),
            b"percent body",
        ),
    ] {
        let dest = local.path().join("got");
        let (code, _, err) = run(&["get", "-q", &url, "-o", dest.to_str().unwrap()], &[]);
        assert_eq!(code, Some(0), "{url}: {err}");
        assert_eq!(std::fs::read(&dest).unwrap(), body, "{url}");
    }
    // get with no -o saves under the decoded name.
    let (code, _, err) = run_in(
        local.path().join("sub"),
        &["get", "-q", &format!("{}/w/dïr ä/ünï 1.txt", srv.base())],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(local.path().join("sub/ünï 1.txt").exists());

    let (code, out, err) = run(&["ls", &folder], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("ünï 1.txt") && out.contains("100% off.txt"),
        "{out}"
    );

    let (code, _, err) = run(&["rm", &format!("{}/w/dïr ä/ünï 1.txt", srv.base())], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!on_disk.join("ünï 1.txt").exists());
}

/// Run the client in `dir` (created); returns (status, stdout, stderr).
fn run_in(dir: std::path::PathBuf, args: &[&str]) -> (Option<i32>, String, String) {
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(BIN)
        .args(args)
        .current_dir(&dir)
        .env_remove("WIRESPEED_TOKEN")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `-o` into a folder that does not exist fails before anything is sent
/// (even with no server listening), and every non-2xx final answer, from
/// wirespeed and from a foreign server, leaves no file and no `.part`.
#[test]
fn get_checks_the_destination_first_and_fails_on_every_non_2xx() {
    let local = tempfile::tempdir().unwrap();
    let port = wirespeed_testkit::server::closed_port();
    let dest = local.path().join("nodir/file.txt");
    let (code, _, err) = run(
        &[
            "get",
            &format!("http://127.0.0.1:{port}/file.txt"),
            "-o",
            dest.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(1));
    assert!(
        err.contains("does not exist") && err.contains("nodir"),
        "{err}"
    );
    assert!(!err.contains("refused"), "checked before connecting: {err}");
    assert!(std::fs::read_dir(local.path()).unwrap().next().is_none());

    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("p.txt"), b"private").unwrap();
    let srv = Serve::start(root.path(), &["--token", "t0k", "--private"]);
    let script = r#"
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = int(self.path.strip("/").split(".")[0])
        body = b"nope\n"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let mut urls = vec![
        (format!("{}/p.txt", srv.base()), "401"),
        (format!("{}/missing.txt", srv.base()), "401"),
    ];
    let py = Command::new("python3")
        .args(["-c", script])
        .stdout(Stdio::piped())
        .spawn();
    let mut py = match py {
        Ok(mut p) => {
            let mut port = String::new();
            BufReader::new(p.stdout.take().unwrap())
                .read_line(&mut port)
                .unwrap();
            for code in ["300", "304", "400", "403", "410", "500", "503"] {
                urls.push((format!("http://127.0.0.1:{}/{code}.txt", port.trim()), code));
            }
            Some(p)
        }
        Err(e) => {
            eprintln!("python3 unavailable ({e}); foreign statuses skipped");
            None
        }
    };
    for (url, want) in &urls {
        let out = local.path().join("out.txt");
        // No retries: a 5xx is retried by default, and the answer is what is checked here.
        let (code, stdout, err) = run(
            &["get", "--retries", "0", url, "-o", out.to_str().unwrap()],
            &[],
        );
        assert_eq!(code, Some(1), "{url}: {stdout}");
        assert!(err.contains(want), "{url}: {err}");
        assert!(
            std::fs::read_dir(local.path()).unwrap().next().is_none(),
            "{url}: nothing written"
        );
        let (code, stdout, err) = run_piped(&["get", url, "-o", "-"], b"", &[]);
        assert_eq!(code, Some(1), "{url}: stdout");
        assert!(stdout.is_empty() && err.contains(want), "{url}: {err}");
    }
    if let Some(p) = py.as_mut() {
        let _ = p.kill();
        let _ = p.wait();
    }
}

/// A tree of 1,000 small files in nested folders with Unicode and spaces in
/// names: `put -r` then `get -r` reproduce it byte for byte; `-n` skips
/// everything on a second run (exit 0); `rm -r` removes it all. `--parallel`
/// transfers reuse their pooled connections.
#[test]
fn folder_round_trip_of_a_thousand_files() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &[]);
    let tree = local.path().join("träe 1");
    let mut want = std::collections::BTreeMap::new();
    for i in 0..1000 {
        let dir = match i % 4 {
            0 => String::new(),
            1 => format!("a/b {}", i % 7),
            2 => format!("ü/ñ {}/deep", i % 5),
            _ => "c d".to_string(),
        };
        let rel = if dir.is_empty() {
            format!("f{i}.txt")
        } else {
            format!("{dir}/fïle {i}.txt")
        };
        let p = tree.join(&rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let body = format!("{i}:{}", "x".repeat(i % 13));
        std::fs::write(&p, &body).unwrap();
        want.insert(rel, body.into_bytes());
    }
    let (code, out, err) = run(
        &[
            "put",
            "-r",
            "--parallel",
            "4",
            tree.to_str().unwrap(),
            &format!("{}/up/", srv.base()),
        ],
        &[("RUST_LOG", "wirespeed_client=debug")],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1000 of 1000 files stored"), "{out}");
    let connections = err.matches("opening a new connection").count();
    assert!(
        (1..=8).contains(&connections),
        "{connections} connections: pooled and reused"
    );
    assert_eq!(read_tree(&root.path().join("up/träe 1")), want);

    let (code, out, err) = run(
        &[
            "put",
            "-n",
            "-r",
            tree.to_str().unwrap(),
            &format!("{}/up/", srv.base()),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("0 of 1000 files stored"), "{out}");
    assert!(
        err.contains("1000 files exist and were not replaced"),
        "{err}"
    );

    let back = local.path().join("back");
    let (code, out, err) = run(
        &[
            "get",
            "-r",
            &format!("{}/up/träe 1/", srv.base()),
            back.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1000 of 1000 files saved"), "{out}");
    // Always DEST/NAME (DEST created when missing), so a rerun continues it.
    assert_eq!(read_tree(&back.join("träe 1")), want);

    // A folder's own name inside DEST, the same when DEST exists.
    let (code, _, err) = run(
        &[
            "get",
            "-q",
            "-r",
            &format!("{}/up/", srv.base()),
            back.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(read_tree(&back.join("up/träe 1")), want);

    let (code, out, err) = run(&["rm", "-r", &format!("{}/up/", srv.base())], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1000 files"), "{out}");
    assert!(!root.path().join("up").exists());
}

/// Every file below `dir`, by relative path, with its bytes.
fn read_tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    files_below(dir)
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).unwrap();
            (rel.to_str().unwrap().to_string(), bytes)
        })
        .collect()
}

/// stdin streams up (chunked), `-o -` streams down to stdout, several files
/// go into a folder; a stream needs a URL naming the file.
#[test]
fn pipes_and_several_files() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &[]);
    let bytes = data(5 << 20);
    let url = format!("{}/in/piped.bin", srv.base());
    let (code, out, err) = run_piped(&["put", "-", &url], &bytes, &[]);
    assert_eq!(code, Some(0), "{err}");
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains("(5 MiB, ") && out.contains("verified"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(root.path().join("in/piped.bin")).unwrap(),
        bytes
    );

    let (code, _, err) = run_piped(&["put", "-", &format!("{}/in/", srv.base())], &bytes, &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("must name the file"), "{err}");

    let (code, out, err) = run_piped(&["get", &url, "-o", "-"], b"", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out == bytes, "stdout carries exactly the file");

    let names = ["a.txt", "b c.txt", "ç.txt"];
    let paths: Vec<String> = names
        .iter()
        .map(|n| {
            let p = local.path().join(n);
            std::fs::write(&p, n.as_bytes()).unwrap();
            p.to_str().unwrap().to_string()
        })
        .collect();
    let mut args: Vec<&str> = vec!["put"];
    args.extend(paths.iter().map(String::as_str));
    let folder = format!("{}/many/", srv.base());
    args.push(&folder);
    let (code, _, err) = run(&args, &[]);
    assert_eq!(code, Some(0), "{err}");
    for n in names {
        assert_eq!(
            std::fs::read(root.path().join("many").join(n)).unwrap(),
            n.as_bytes()
        );
    }
    // Several files need a folder URL.
    args.pop();
    let file_url = format!("{}/many/x", srv.base());
    args.push(&file_url);
    let (code, _, err) = run(&args, &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("end the URL with `/`"), "{err}");

    // Several URLs into a folder.
    let dl = local.path().join("dl");
    std::fs::create_dir(&dl).unwrap();
    let (u1, u2) = (
        format!("{}/many/a.txt", srv.base()),
        format!("{}/many/b c.txt", srv.base()),
    );
    let (code, _, err) = run(&["get", "-q", &u1, &u2, dl.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read(dl.join("a.txt")).unwrap(), b"a.txt");
    assert_eq!(std::fs::read(dl.join("b c.txt")).unwrap(), b"b c.txt");
}

/// `--no-clobber` keeps what exists (server side by If-None-Match, local
/// side before transferring), says so and exits 0; a plain put over an
/// existing file says `replaced`.
#[test]
fn no_clobber_and_replaced_notices() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &[]);
    let src = local.path().join("f.txt");
    std::fs::write(&src, b"one").unwrap();
    let s = src.to_str().unwrap();
    let url = format!("{}/f.txt", srv.base());
    let (code, _, err) = run(&["put", s, &url], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("replaced"), "{err}");

    std::fs::write(&src, b"two").unwrap();
    let (code, _, err) = run(&["put", "--no-clobber", s, &url], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("exists, not replaced"), "{err}");
    assert_eq!(std::fs::read(root.path().join("f.txt")).unwrap(), b"one");

    let (code, _, err) = run(&["put", s, &url], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("replaced"), "{err}");
    assert_eq!(std::fs::read(root.path().join("f.txt")).unwrap(), b"two");
    let (code, _, err) = run(&["put", "-q", s, &url], &[]);
    assert_eq!(code, Some(0));
    assert!(err.is_empty(), "-q: {err}");

    let dest = local.path().join("have.txt");
    std::fs::write(&dest, b"mine").unwrap();
    let (code, _, err) = run(&["get", "-n", &url, "-o", dest.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("exists, not replaced"), "{err}");
    assert_eq!(std::fs::read(&dest).unwrap(), b"mine");
    let (code, _, err) = run(&["get", "-q", &url, "-o", dest.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read(&dest).unwrap(), b"two");

    // rm -r of a file URL deletes the file.
    let (code, _, err) = run(&["rm", "-r", &url], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!root.path().join("f.txt").exists());
}

/// User errors are one line: no backtrace even with RUST_BACKTRACE=1, no
/// "Caused by" block, each cause once; `ls` of a file says to use get.
#[test]
fn user_errors_are_one_line_each_cause_once() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("file.txt"), b"x").unwrap();
    let srv = Serve::start(root.path(), &[]);
    let local = tempfile::tempdir().unwrap();
    let port = wirespeed_testkit::server::closed_port();
    let missing = local.path().join("missing.bin");
    let cases = [
        (
            vec![
                "get".to_string(),
                "--retries".into(),
                "0".into(),
                format!("http://127.0.0.1:{port}/x"),
                "-o".into(),
                local.path().join("x").to_str().unwrap().into(),
            ],
            "connection refused",
        ),
        (
            vec![
                "get".to_string(),
                format!("{}/nope.txt", srv.base()),
                "-o".into(),
                local.path().join("y").to_str().unwrap().into(),
            ],
            "404",
        ),
        (
            vec![
                "put".to_string(),
                missing.to_str().unwrap().into(),
                format!("{}/m", srv.base()),
            ],
            "No such file or directory",
        ),
        (
            vec!["ls".to_string(), format!("{}/file.txt", srv.base())],
            "is a file, not a folder",
        ),
    ];
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = run(&args, &[("RUST_BACKTRACE", "1")]);
        assert_eq!(code, Some(1), "{args:?}");
        assert_eq!(err.matches(needle).count(), 1, "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(
            !err.contains("acktrace") && !err.contains("Caused by"),
            "{err}"
        );
    }
}

/// `get` checks every file the server holds a digest record for, end to
/// end, whatever its size: bytes corrupted on disk behind an intact record
/// (same size and mtime, so the record still counts) are refused, and
/// nothing is written. Small files (up to 64 KiB, sent with their head in
/// one write) are covered too: the server once stopped reading their record
/// unless asked, so `get` went unverified for them.
#[test]
fn get_refuses_a_file_corrupted_under_its_recorded_digest_at_every_size() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let srv = Serve::start(root.path(), &[]);
    for size in [13usize, 1000, 64 << 10, 3 << 20] {
        let name = format!("f{size}.bin");
        let bytes = data(size);
        let src = local.path().join(&name);
        std::fs::write(&src, &bytes).unwrap();
        let url = format!("{}/{name}", srv.base());
        let (code, out, err) = run(&["put", src.to_str().unwrap(), &url], &[]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("verified by the server"), "{out}");

        let dest = local.path().join(format!("ok-{name}"));
        let (code, out, err) = run(&["get", &url, "-o", dest.to_str().unwrap()], &[]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("sha-256 verified"), "{size}: {out}");
        assert_eq!(std::fs::read(&dest).unwrap(), bytes);

        // One byte flipped in place; size and mtime put back.
        let stored = root.path().join(&name);
        let mtime = std::fs::metadata(&stored).unwrap().modified().unwrap();
        let mut corrupt = bytes.clone();
        corrupt[size / 2] ^= 0x01;
        std::fs::write(&stored, &corrupt).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&stored)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(mtime))
            .unwrap();

        let dest = local.path().join(format!("bad-{name}"));
        let (code, _, err) = run(&["get", &url, "-o", dest.to_str().unwrap()], &[]);
        assert_ne!(code, Some(0), "{size}: a corrupted file was accepted");
        assert!(err.contains("corrupted"), "{size}: {err}");
        assert!(!dest.exists(), "{size}: corrupt bytes were kept");
    }
}
