//! The built binary's `wirespeed serve` in a child process, shared by the
//! binary's integration tests: start it, talk raw HTTP to it, read its
//! stderr, signal it, kill it on drop.

// Each test file uses a different part of this module.
#![allow(dead_code)]

pub mod routes;

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_wirespeed");

/// A running `wirespeed serve`: its first stdout lines, its stderr in a file.
pub struct Serve {
    pub child: Child,
    /// The address to connect to (127.0.0.1 for a 0.0.0.0 bind).
    pub addr: SocketAddr,
    /// `http` or `https`, from the `listening on` line.
    scheme: String,
    /// The `listening on` line and the lines `spawn` was asked to wait for.
    pub stdout: Vec<String>,
    /// Kept open so the server never writes to a closed pipe.
    _out: BufReader<ChildStdout>,
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
    /// `serve DIR --no-fsync ARGS`, on 127.0.0.1:0 unless ARGS say `--listen`.
    pub fn start(dir: &Path, args: &[&str]) -> Serve {
        let mut cmd = Self::command(dir);
        cmd.arg("--no-fsync");
        if !args.contains(&"--listen") {
            cmd.args(["--listen", "127.0.0.1:0"]);
        }
        cmd.args(args);
        Self::spawn(cmd, 0)
    }

    /// `wirespeed serve DIR` without the test runner's token or log filter,
    /// for callers that need other flags or a user before `spawn`.
    pub fn command(dir: &Path) -> Command {
        Self::command_with(Path::new(BIN), dir)
    }

    /// [`Serve::command`] running the binary at `bin` (a copy another user
    /// can execute: see [`binary_for_other_users`]).
    pub fn command_with(bin: &Path, dir: &Path) -> Command {
        let mut cmd = Command::new(bin);
        // --create: the tests' folders may not exist yet (unused with --storage).
        cmd.arg("serve")
            .arg(dir)
            .arg("--create")
            .env_remove("WIRESPEED_TOKEN")
            .env_remove("RUST_LOG");
        cmd
    }

    /// Spawn `cmd`, wait for its `listening on` line and `lines` more.
    pub fn spawn(mut cmd: Command, lines: usize) -> Serve {
        let logs = tempfile::tempdir().unwrap();
        let stderr = logs.path().join("stderr");
        // serve's state (the share-link key) goes beside its log, not into
        // the home folder of whoever runs the tests.
        if !cmd.get_envs().any(|(k, _)| k == "XDG_STATE_HOME") {
            cmd.env("XDG_STATE_HOME", logs.path());
        }
        cmd.stdout(Stdio::piped())
            .stderr(File::create(&stderr).unwrap());
        let mut child = cmd.spawn().expect("start wirespeed serve");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut stdout = Vec::new();
        for _ in 0..=lines {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            stdout.push(line.trim_end().to_string());
        }
        let first = &stdout[0];
        let parsed = first
            .strip_prefix("listening on ")
            .and_then(|url| url.split_once("://"))
            .and_then(|(scheme, hostport)| Some((scheme, hostport.parse::<SocketAddr>().ok()?)));
        let Some((scheme, mut addr)) = parsed else {
            panic!(
                "unexpected start line {first:?}; stderr: {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            )
        };
        if addr.ip().is_unspecified() {
            addr.set_ip([127, 0, 0, 1].into());
        }
        Serve {
            scheme: scheme.to_string(),
            child,
            addr,
            stdout,
            _out: out,
            stderr,
            _logs: logs,
        }
    }

    /// `http://ADDR` (or https), the URL prefix for client commands.
    pub fn base(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Wait (bounded) until stderr contains `what`; the whole stderr.
    pub fn wait_stderr(&self, what: &str) -> String {
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

    /// One request on its own connection (`Host: localhost`, always a
    /// Content-Length); (status, head lowercased, body).
    pub fn req(
        &self,
        method: &str,
        path: &str,
        headers: &[&str],
        body: &[u8],
    ) -> (u16, String, Vec<u8>) {
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
        let split = wirespeed_testkit::find(&buf, b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(&buf)));
        let head = String::from_utf8_lossy(&buf[..split]).to_ascii_lowercase();
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {head:?}"));
        (status, head, buf[split + 4..].to_vec())
    }

    /// SIGKILL and reap: a crash, nothing flushed or cleaned up.
    pub fn kill9(&mut self) {
        // std's Child::kill is SIGKILL on Unix.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Stop with SIGTERM and wait (bounded), so every log line is written;
    /// then the whole stderr.
    pub fn stop(mut self) -> String {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)
            .expect("kill -TERM failed");
        let until = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < until, "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::fs::read_to_string(&self.stderr).unwrap()
    }
}

/// Whether every folder above `path` lets other users through (o+x): what a
/// server started as another user needs to reach it.
pub fn others_can_reach(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .skip(1)
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// A copy of the binary that another user (the tests' uid 65534) can run,
/// in a world-readable temp folder: the build's own may sit in a tree only
/// its owner can enter (a clone in root's home, or in `mktemp -d`). `None`
/// when even the temp folder is out of their reach (the caller skips).
pub fn binary_for_other_users() -> Option<(tempfile::TempDir, PathBuf)> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("wirespeed-bin-")
        .tempdir()
        .ok()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).ok()?;
    let bin = dir.path().join("wirespeed");
    std::fs::copy(BIN, &bin).ok()?;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).ok()?;
    others_can_reach(&bin).then_some((dir, bin))
}

/// Run the client (60 s bound, its own state folder, no ambient token);
/// (exit code, stdout, stderr).
pub fn run_client(args: &[&str]) -> (Option<i32>, String, String) {
    let state = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("WIRESPEED_TOKEN")
        .env_remove("RUST_LOG")
        .env("XDG_STATE_HOME", state.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("wirespeed {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `cmd` under `timeout 60`: no tool may hang the suite.
pub fn run_bounded(cmd: &mut Command) -> Output {
    let mut bounded = Command::new("timeout");
    bounded
        .arg("60")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        bounded.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => bounded.env(k, v),
            None => bounded.env_remove(k),
        };
    }
    let out = bounded.output().expect("run timeout(1)");
    assert!(
        out.status.success(),
        "{:?} failed ({}): {}{}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every file below `dir`, relative, sorted (the server's own reserved
/// names, such as its trash, left out: no request reaches them).
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_name()
                .to_string_lossy()
                .starts_with(".wirespeed-trash")
            {
                continue;
            }
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// docs/serving.md's nginx `location /files/` block (`serve --path-prefix`),
/// pointed at `upstream`: the tests run the block the docs give.
pub fn docs_nginx_block(upstream: std::net::SocketAddr) -> String {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/serving.md");
    let text = std::fs::read_to_string(docs).unwrap();
    let start = text
        .find("```nginx\nlocation /files/ {")
        .expect("docs/serving.md has the `location /files/` block");
    let block = &text[start + "```nginx\n".len()..];
    let block = &block[..block.find("```").unwrap()];
    assert!(
        block.contains("proxy_set_header Host $http_host;"),
        "the docs pass the Host on with its port: {block}"
    );
    block.replace("127.0.0.1:8080", &upstream.to_string())
}
