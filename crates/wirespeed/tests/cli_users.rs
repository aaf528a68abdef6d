//! Users through the binary: `wirespeed passwd`, `serve --auth FILE` (a
//! bad file stops the start with its line, SIGHUP reloads, a bad reload
//! keeps the rules, the clear-text warning beyond loopback, failed sign-ins
//! logged without the password) and the client's `--user` (put/get/ls/rm,
//! the password never in the resume state file).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{run_client, Serve, BIN};
use wirespeed_testkit::fs::eventually;
use wirespeed_testkit::proxy::CuttingProxy;

/// `wirespeed passwd [NAME]` with the password on stdin.
fn passwd(password: &str, name: Option<&str>) -> String {
    let mut cmd = Command::new(BIN);
    cmd.arg("passwd").args(name);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string()
}

fn rules_file(dir: &Path, extra_users: &str, paths: &str) -> std::path::PathBuf {
    let file = dir.join("users.toml");
    let text = format!(
        "[users]\n{}\n{extra_users}\n{paths}",
        passwd("alice-pw", Some("alice"))
    );
    std::fs::write(&file, text).unwrap();
    file
}

const PATHS: &str = "[paths.\"/\"]\n\"*\" = \"r\"\n[paths.\"/alice\"]\nalice = \"rwd\"\n";

fn client(state: &Path, password: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("WIRESPEED_TOKEN")
        .env_remove("RUST_LOG")
        .env("XDG_STATE_HOME", state)
        .env("WIRESPEED_PASSWORD", password);
    cmd
}

#[test]
fn passwd_prints_an_argon2id_hash_or_a_rules_line() {
    let hash = passwd("s3cret", None);
    assert!(
        hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
        "{hash}"
    );
    assert!(wirespeed_service::policy::password::check_hash(&hash).is_ok());
    let line = passwd("s3cret", Some("carol"));
    assert!(line.starts_with("carol = \"$argon2id$"), "{line}");
    // An empty password is refused.
    let out = Command::new(BIN)
        .arg("passwd")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty"));
}

/// `wirespeed passwd NAME --file FILE` with the password on stdin: its
/// exit status and what it said on stderr.
fn passwd_into(file: &Path, name: &str, password: &str) -> (bool, String) {
    let mut child = Command::new(BIN)
        .args(["passwd", name, "--file", file.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.stdout.is_empty(), "nothing on stdout");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn passwd_adds_and_replaces_users_in_a_rules_file_in_place() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("alice")).unwrap();
    // The README's shape: [users] first, then the paths, with comments.
    let file = rules_file(
        tmp.path(),
        "# more users below\n",
        &format!("# who may what\n{PATHS}bob = \"rw\"   # bob writes\n"),
    );
    let before = std::fs::read_to_string(&file).unwrap();
    // bob is named in [paths] but not in [users]: the file is refused now.
    let (ok, said) = passwd_into(&file, "carol", "carol-pw");
    assert!(
        !ok && said.contains("nothing was changed") && said.contains("bob"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);

    // Adding bob mends it; every other line stays as written.
    let (ok, said) = passwd_into(&file, "bob", "bob-pw");
    assert!(ok && said.contains("added bob to"), "{said}");
    let after = std::fs::read_to_string(&file).unwrap();
    let kept: Vec<&str> = before.lines().collect();
    let now: Vec<&str> = after
        .lines()
        .filter(|l| !l.starts_with("bob = \"$argon2id$"))
        .collect();
    assert_eq!(now, kept, "only bob's line is new");
    // alice's password changed in place (her old one no longer works).
    let (ok, said) = passwd_into(&file, "alice", "new-alice-pw");
    assert!(ok && said.contains("changed alice's password"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().lines().count(),
        after.lines().count()
    );

    let serve = Serve::start(&root, &["--auth", file.to_str().unwrap()]);
    // (Basic credentials of bob:bob-pw, alice:alice-pw, alice:new-alice-pw.)
    let basic = |u: &str, p: &str| {
        let known = [
            ("bob:bob-pw", "Ym9iOmJvYi1wdw=="),
            ("alice:alice-pw", "YWxpY2U6YWxpY2UtcHc="),
            ("alice:new-alice-pw", "YWxpY2U6bmV3LWFsaWNlLXB3"),
        ];
        let pair = format!("{u}:{p}");
        let b64 = known.iter().find(|(k, _)| *k == pair).unwrap().1;
        format!("Authorization: Basic {b64}")
    };
    assert_eq!(
        serve
            .req("PUT", "/alice/a.txt", &[&basic("bob", "bob-pw")], b"b")
            .0,
        201
    );
    assert_eq!(
        serve
            .req("GET", "/alice/a.txt", &[&basic("alice", "alice-pw")], b"")
            .0,
        401
    );
    assert_eq!(
        serve
            .req(
                "DELETE",
                "/alice/a.txt",
                &[&basic("alice", "new-alice-pw")],
                b""
            )
            .0,
        204
    );
}

#[test]
fn a_bad_rules_file_stops_serve_with_file_line_and_reason() {
    let tmp = wirespeed_testkit::fs::tempdir();
    for (text, says) in [
        (
            "[users]\nalice = \"hunter2\"\n",
            "line 2: alice's password is not an argon2id hash",
        ),
        (
            "[paths.\"/\"]\nbob = \"r\"\n",
            "line 2: \"bob\" is named in [paths.\"/\"] but missing from [users]",
        ),
        (
            "[paths.\"/\"]\n\"*\" = \"rx\"\n",
            "line 2: unknown right 'x'",
        ),
        ("[paths.\"/\"\n", "line 1"),
    ] {
        let file = tmp.path().join("bad.toml");
        std::fs::write(&file, text).unwrap();
        let out = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--auth"])
            .arg(&file)
            .arg(tmp.path())
            .env_remove("WIRESPEED_TOKEN")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text}: {stderr}");
        assert!(
            stderr.contains(&format!("{}, {says}", file.display())),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "no listening line");
    }
}

#[test]
fn sighup_reloads_and_a_bad_reload_keeps_the_rules() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    let file = rules_file(tmp.path(), "", PATHS);
    let serve = Serve::start(&root, &["--auth", file.to_str().unwrap()]);
    assert!(serve
        .wait_stderr("mode: rights per folder from")
        .contains("(1 users, 2 paths"));
    let bob_line = passwd("bob-pw", Some("bob"));
    let bob = "Authorization: Basic Ym9iOmJvYi1wdw=="; // bob:bob-pw
    assert_eq!(serve.req("PUT", "/alice/b.txt", &[bob], b"b").0, 401);

    rules_file(tmp.path(), &bob_line, &format!("{PATHS}bob = \"rw\"\n"));
    let hup = |serve: &Serve| {
        let pid = rustix::process::Pid::from_child(&serve.child);
        rustix::process::kill_process(pid, rustix::process::Signal::HUP).unwrap();
    };
    hup(&serve);
    serve.wait_stderr("reloaded");
    assert!(
        serve.stderr().contains("2 users, 2 paths"),
        "{}",
        serve.stderr()
    );
    assert_eq!(serve.req("PUT", "/alice/b.txt", &[bob], b"b").0, 201);

    std::fs::write(&file, "[paths.\"/\"]\n\"*\" = \"rwq\"\n").unwrap();
    hup(&serve);
    let e = serve.wait_stderr("reload refused");
    assert!(e.contains("line 2: unknown right 'q'"), "{e}");
    // The rules in force are still the good file's.
    assert_eq!(serve.req("PUT", "/alice/c.txt", &[bob], b"c").0, 201);
    assert_eq!(
        serve.req("PUT", "/c.txt", &[], b"c").0,
        403,
        "nobody writes at the root"
    );
    assert!(std::fs::read(root.join("alice/c.txt")).is_ok());
}

#[test]
fn failed_sign_ins_are_logged_without_the_password_and_clear_text_is_warned() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let file = rules_file(tmp.path(), "", PATHS);
    let serve = Serve::start(
        &tmp.path().join("root"),
        &["--auth", file.to_str().unwrap(), "--listen", "0.0.0.0:0"],
    );
    serve.wait_stderr("passwords travel in clear");
    // alice:Wr0ngPassw0rd
    let auth = "Authorization: Basic YWxpY2U6V3IwbmdQYXNzdzByZA==";
    assert_eq!(serve.req("GET", "/", &[auth], b"").0, 401);
    let e = serve.wait_stderr("sign-in failed");
    assert!(e.contains("alice") && !e.contains("Wr0ngPassw0rd"), "{e}");

    let quiet = Serve::start(
        &tmp.path().join("root"),
        &["--auth", file.to_str().unwrap()],
    );
    quiet.wait_stderr("mode: rights per folder");
    assert!(!quiet.stderr().contains("in clear"), "loopback: no warning");
}

#[test]
fn client_user_put_get_ls_rm() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    let file = rules_file(tmp.path(), "", PATHS);
    let serve = Serve::start(&root, &["--auth", file.to_str().unwrap()]);
    let state = tmp.path().join("state");
    let src = tmp.path().join("a.txt");
    std::fs::write(&src, "alice's file").unwrap();
    let url = format!("{}/alice/a.txt", serve.base());
    let run = |pw: &str, args: &[&str]| client(&state, pw, args).output().unwrap();

    let out = run(
        "alice-pw",
        &["put", "--user", "alice", src.to_str().unwrap(), &url],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("alice/a.txt")).unwrap(),
        "alice's file"
    );

    let out = run("alice-pw", &["get", "--user", "alice", "-o", "-", &url]);
    assert_eq!(out.stdout, b"alice's file");
    let out = run(
        "alice-pw",
        &["ls", "--user", "alice", &format!("{}/alice/", serve.base())],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("a.txt"));

    // A wrong password: 401 with the fix, nothing removed.
    let out = run("nope", &["rm", "--user", "alice", &url]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--user") && !stderr.contains("nope"),
        "{stderr}"
    );
    assert!(root.join("alice/a.txt").exists());
    // Without signing in: the hint names --user.
    let (code, _, stderr) = run_client(&["rm", &url]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("--user NAME"), "{stderr}");

    let out = run("alice-pw", &["rm", "--user", "alice", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!root.join("alice/a.txt").exists());

    // The trash (on by default): listed for her, not for anyone else, and
    // restored with its bytes.
    let folder = format!("{}/alice/", serve.base());
    let out = run("alice-pw", &["trash", "ls", "--user", "alice", &folder]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        listed.contains("/alice/a.txt") && listed.contains("\talice\t"),
        "{listed}"
    );
    // Not signed in: nothing of hers (the root lists nothing, her folder
    // asks to sign in).
    let (code, stdout, _) = run_client(&["trash", "ls", &format!("{}/", serve.base())]);
    assert_eq!((code, stdout.as_str()), (Some(0), ""));
    let (code, stdout, _) = run_client(&["trash", "ls", &folder]);
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    let out = run("alice-pw", &["trash", "restore", "--user", "alice", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("alice/a.txt")).unwrap(),
        "alice's file"
    );
    // Twice: nothing left to restore.
    let out = run("alice-pw", &["trash", "restore", "--user", "alice", &url]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn the_password_never_reaches_the_resume_state_file() {
    const MIB: usize = 1 << 20;
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    let file = rules_file(tmp.path(), "", PATHS);
    let serve = Serve::start(&root, &["--auth", file.to_str().unwrap()]);
    let src = tmp.path().join("big.bin");
    std::fs::write(&src, wirespeed_testkit::bytes(12 * MIB, 7)).unwrap();
    let proxy = CuttingProxy::start(serve.addr);
    proxy.stall_upstream_after(Some(4 * MIB as u64));
    let state = tmp.path().join("state");
    let url = format!("{}/alice/big.bin", proxy.base());
    let mut child = client(
        &state,
        "alice-pw",
        &["put", "--user", "alice", src.to_str().unwrap(), &url],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    eventually("the upload stalls mid-file", || proxy.stalled() >= 1);
    let mut files = Vec::new();
    let mut stack = vec![state.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(!files.is_empty(), "a resumable put keeps a state file");
    for f in files {
        let text = std::fs::read(&f).unwrap();
        assert!(
            wirespeed_testkit::find(&text, b"alice-pw").is_none()
                && wirespeed_testkit::find(&text, b"YWxpY2U6YWxpY2UtcHc=").is_none(),
            "{} holds the password",
            f.display()
        );
    }
}

#[test]
fn share_mints_lists_and_revokes_links() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("alice")).unwrap();
    std::fs::write(root.join("alice/r.txt"), "report").unwrap();
    let file = rules_file(tmp.path(), "", PATHS);
    let state = tmp.path().join("serve-state");
    let start = || {
        Serve::start(
            &root,
            &[
                "--auth",
                file.to_str().unwrap(),
                "--state-dir",
                state.to_str().unwrap(),
            ],
        )
    };
    let serve = start();
    let cstate = tmp.path().join("client-state");
    let run = |args: &[&str]| {
        let out = client(&cstate, "alice-pw", args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        String::from_utf8(out.stdout).unwrap()
    };
    let base = serve.base();
    let link = run(&[
        "share",
        "--user",
        "alice",
        "--expires",
        "1d",
        &format!("{base}/alice/r.txt"),
    ]);
    let link = link.trim_end();
    assert_eq!(link.lines().count(), 1);
    assert!(
        link.starts_with(&format!("{base}/alice/r.txt?share=")),
        "{link}"
    );
    // Anyone with the link reads the file (curl: no credentials at all).
    let (ok, body) = wirespeed_testkit::tools::curl(&["-f", link]);
    assert!(ok && body == b"report");
    // An upload link for the folder: new names only.
    let drop = run(&[
        "share",
        "--user",
        "alice",
        "--upload",
        &format!("{base}/alice/"),
    ]);
    let up = drop.trim_end().replace("/alice/?", "/alice/new.txt?");
    let src = tmp.path().join("new.txt");
    std::fs::write(&src, "dropped in").unwrap();
    let (ok, _) = wirespeed_testkit::tools::curl(&["-f", "-T", src.to_str().unwrap(), &up]);
    assert!(ok);
    assert_eq!(
        std::fs::read_to_string(root.join("alice/new.txt")).unwrap(),
        "dropped in"
    );

    let list = run(&["share", "--user", "alice", "--list", &format!("{base}/")]);
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(list.contains(link) && list.contains("\tw\t"), "{list}");
    run(&["share", "--user", "alice", "--revoke", link]);
    let (ok, _) = wirespeed_testkit::tools::curl(&["-f", link]);
    assert!(!ok, "a revoked link reads nothing");
    assert_eq!(
        run(&["share", "--user", "alice", "--list", &format!("{base}/")])
            .lines()
            .count(),
        1
    );
    // The key and the table are kept in the state folder, the key private.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(state.join("share.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(state.join("shares.json").exists());
    // Sharing what one does not hold: 403 with the reason (alice reads
    // the root but may not write there: no upload link).
    let root_url = format!("{base}/");
    let args = ["share", "--user", "alice", "--upload", root_url.as_str()];
    let out = client(&cstate, "alice-pw", &args).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("403"));

    // A damaged table stops the next start, saying what it holds: read
    // as empty, the revoked link would work again.
    std::mem::drop(serve);
    let table = state.join("shares.json");
    let kept = std::fs::read(&table).unwrap();
    std::fs::write(&table, &kept[..kept.len() - 3]).unwrap();
    let out = Serve::command(&root)
        .args(["--listen", "127.0.0.1:0", "--auth"])
        .arg(&file)
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "no listening line: {err}");
    assert!(
        err.contains(&format!("{} is damaged", table.display()))
            && err.contains("revoked")
            && err.contains("work again"),
        "{err}"
    );
    // Put back, the revoked link stays revoked after the restart.
    std::fs::write(&table, &kept).unwrap();
    let serve = start();
    let again = link.replace(&base, &serve.base());
    let (ok, _) = wirespeed_testkit::tools::curl(&["-f", &again]);
    assert!(!ok, "still revoked after the restart");
}

/// One request on its own connection to `addr`; (status, head as sent,
/// body). The head keeps its case: a cookie's value is case-sensitive.
fn raw(addr: std::net::SocketAddr, method: &str, path: &str, headers: &[&str]) -> (u16, String) {
    use std::io::Read;
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let body = headers
        .iter()
        .find_map(|h| h.strip_prefix("BODY "))
        .unwrap_or("");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in headers.iter().filter(|h| !h.starts_with("BODY ")) {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.push_str(body);
    c.write_all(head.as_bytes()).unwrap();
    let mut buf = String::new();
    let _ = c.read_to_string(&mut buf);
    let status = buf.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
    (status, buf)
}

/// Two `serve` processes on one MinIO bucket, one rules file and one
/// WIRESPEED_SHARE_KEY: a session and a link from the first work on the
/// second; signed out and revoked on the first, the second refuses them
/// within `--revocation-sync` (1 s here).
#[test]
fn two_nodes_on_one_bucket_share_sign_outs_and_revocations() {
    let Some(m) = wirespeed_testkit::minio::Minio::start() else {
        return;
    };
    m.create_bucket("nodes");
    let tmp = tempfile::tempdir().unwrap();
    let rules = rules_file(tmp.path(), "", PATHS);
    let node = || {
        let mut cmd = Serve::command(&tmp.path().join("unused"));
        cmd.args(["--listen", "127.0.0.1:0", "--storage", "s3://nodes/pre"])
            .args(["--s3-endpoint", &m.endpoint(), "--s3-region", "us-east-1"])
            .arg("--auth")
            .arg(&rules)
            .args(["--revocation-sync", "1s"])
            .env("AWS_ACCESS_KEY_ID", wirespeed_testkit::minio::USER)
            .env("AWS_SECRET_ACCESS_KEY", wirespeed_testkit::minio::PASSWORD)
            .env("WIRESPEED_SHARE_KEY", "5a".repeat(32));
        Serve::spawn(cmd, 0)
    };
    let (a, b) = (node(), node());
    // base64("alice:alice-pw")
    let basic = "Authorization: Basic YWxpY2U6YWxpY2UtcHc=".to_string();
    let (status, _) = raw(a.addr, "PUT", "/alice/a.txt", &[&basic, "BODY alice's"]);
    assert_eq!(status, 201);
    let (status, head) = raw(
        a.addr,
        "POST",
        "/-/session",
        &[
            "Content-Type: application/json",
            "Origin: http://localhost",
            r#"BODY {"name":"alice","password":"alice-pw"}"#,
        ],
    );
    assert_eq!(status, 200, "{head}");
    let cookie = head
        .lines()
        .find_map(|l| l.strip_prefix("Set-Cookie: "))
        .and_then(|v| v.split(';').next())
        .unwrap()
        .to_string();
    let cookie = format!("Cookie: {cookie}");
    assert_eq!(raw(b.addr, "GET", "/alice/", &[&cookie]).0, 200);
    let (status, body) = raw(a.addr, "POST", "/-/shares/alice/a.txt", &[&basic]);
    assert_eq!(status, 201, "{body}");
    let token = body
        .split("\"share\":\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .unwrap()
        .to_string();
    let link = format!("/alice/a.txt?share={token}");
    assert_eq!(raw(b.addr, "GET", &link, &[]).0, 200);

    let origin = "Origin: http://localhost";
    assert_eq!(
        raw(a.addr, "DELETE", "/-/session", &[&cookie, origin]).0,
        204
    );
    let revoke = format!("/-/shares/alice/?link={token}");
    assert_eq!(raw(a.addr, "DELETE", &revoke, &[&basic]).0, 204);
    let bound = std::time::Duration::from_secs(10);
    wirespeed_testkit::fs::eventually_within("b refuses the session", bound, || {
        raw(b.addr, "GET", "/alice/", &[&cookie]).0 == 401
    });
    wirespeed_testkit::fs::eventually_within("b refuses the link", bound, || {
        raw(b.addr, "GET", &link, &[]).0 == 410
    });
    assert!(m
        .keys("nodes")
        .iter()
        .any(|k| k.starts_with("pre/.wirespeed-state/revoked/s-")));
}

#[test]
fn entries_naming_nothing_are_warned_and_url_spellings_govern_their_folder() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("Private")).unwrap();
    std::fs::create_dir_all(root.join("My Docs")).unwrap();
    std::fs::write(root.join("Private/p.txt"), b"p").unwrap();
    std::fs::write(root.join("My Docs/d.txt"), b"d").unwrap();
    let paths = "[paths.\"/\"]\n\"*\" = \"r\"\n[paths.\"/private\"]\nalice = \"rwd\"\n\
                 [paths.\"/My%20Docs\"]\nalice = \"rwd\"\n";
    let file = rules_file(tmp.path(), "", paths);
    let serve = Serve::start(&root, &["--auth", file.to_str().unwrap()]);
    let w = serve.wait_stderr("names nothing in the served folder");
    assert!(w.contains("did you mean \"/Private\""), "{w}");
    assert!(!w.contains("My Docs\"] names nothing"), "{w}");
    // The URL spelling governs the folder: anyone no longer reads it.
    assert_eq!(serve.req("GET", "/My%20Docs/d.txt", &[], b"").0, 401);
    let alice = "Authorization: Basic YWxpY2U6YWxpY2UtcHc="; // alice:alice-pw
    assert_eq!(serve.req("GET", "/My%20Docs/d.txt", &[alice], b"").0, 200);
}

/// Share links through our own client, with no credentials: `get -r` and
/// `get --archive zip` of a folder link, `put` of a small and of a
/// resumable-sized file and `put -r` into an upload link.
#[test]
fn share_links_work_with_get_and_put() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("alice/pics/sub")).unwrap();
    std::fs::create_dir_all(root.join("alice/inbox")).unwrap();
    std::fs::write(root.join("alice/pics/a.txt"), "picture a").unwrap();
    std::fs::write(root.join("alice/pics/sub/b.txt"), "picture b").unwrap();
    let file = rules_file(tmp.path(), "", PATHS);
    let state = tmp.path().join("serve-state");
    let serve = Serve::start(
        &root,
        &[
            "--auth",
            file.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    let cstate = tmp.path().join("client-state");
    let base = serve.base();
    let alice = |args: &[&str]| {
        let out = client(&cstate, "alice-pw", args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    };
    let pics = alice(&["share", "--user", "alice", &format!("{base}/alice/pics/")]);
    let inbox = alice(&[
        "share",
        "--user",
        "alice",
        "--upload",
        &format!("{base}/alice/inbox/"),
    ]);
    // The guest: no --user, no token.
    let guest = |args: &[&str]| {
        let out = client(&cstate, "", args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
    };
    let got = tmp.path().join("got");
    std::fs::create_dir_all(&got).unwrap();
    guest(&["get", "-r", &pics, got.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(got.join("pics/sub/b.txt")).unwrap(),
        "picture b"
    );
    let zip = got.join("pics.zip");
    guest(&[
        "get",
        "--archive",
        "zip",
        &pics,
        "-o",
        zip.to_str().unwrap(),
    ]);
    assert!(std::fs::read(&zip).unwrap().starts_with(b"PK"));

    let small = tmp.path().join("note.txt");
    std::fs::write(&small, "a note").unwrap();
    guest(&["put", small.to_str().unwrap(), &inbox]);
    assert_eq!(
        std::fs::read_to_string(root.join("alice/inbox/note.txt")).unwrap(),
        "a note"
    );
    let big = tmp.path().join("big.bin");
    let bytes = wirespeed_testkit::bytes(9 << 20, 9);
    std::fs::write(&big, &bytes).unwrap();
    guest(&["put", big.to_str().unwrap(), &inbox]);
    assert!(std::fs::read(root.join("alice/inbox/big.bin")).unwrap() == bytes);
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("t.txt"), "in a tree").unwrap();
    guest(&["put", "-r", tree.to_str().unwrap(), &inbox]);
    assert_eq!(
        std::fs::read_to_string(root.join("alice/inbox/tree/t.txt")).unwrap(),
        "in a tree"
    );
}
