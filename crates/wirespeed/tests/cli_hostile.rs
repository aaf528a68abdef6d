//! The client against servers that lie or fail for good (docs: "Reruns
//! and errors"): a hostile scripted server must not
//! make `get -r` write outside the destination, hold unbounded memory or
//! drive the terminal; permanent errors fail at once with their fix; a
//! closed pipe ends a command quietly.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::routes::{Reply, Req, Routes};
use common::{run_client as run, Serve, BIN};

/// Every path below `dir`, relative, sorted (folders end with `/`).
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_str().unwrap().to_string();
            if p.is_dir() && !p.is_symlink() {
                out.push(format!("{rel}/"));
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

fn listing(entries: &[(&str, &str)]) -> String {
    let rows: Vec<String> = entries
        .iter()
        .map(|(name, kind)| {
            format!(
                "{{\"name\":{},\"type\":\"{kind}\",\"size\":5,\"modified\":null}}",
                serde_json::to_string(name).unwrap()
            )
        })
        .collect();
    format!("[{}]", rows.join(","))
}

/// The server of the audit: `/photos` redirects to `/` (whose listing holds
/// `.bashrc`), `/pics/` to `/.ssh/` (holding `authorized_keys`).
fn redirecting_server() -> Routes {
    Routes::start(|r: &Req| match r.path() {
        "/photos" | "/photos/" => Reply::redirect("/"),
        "/pics/" => Reply::redirect("/.ssh/"),
        "/" => Reply::json(&listing(&[(".bashrc", "file"), (".ssh", "dir")])),
        "/.ssh/" => Reply::json(&listing(&[("authorized_keys", "file")])),
        "/.bashrc" => Reply::bytes(b"evil1"),
        "/.ssh/authorized_keys" => Reply::bytes(b"evil2"),
        _ => Reply::status(404, "no"),
    })
}

/// The local folder is named from what the user typed; a
/// redirect changes where the listing is read, never where files land.
#[test]
fn get_r_writes_where_the_user_asked_never_where_a_redirect_points() {
    let srv = redirecting_server();
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/authorized_keys"), b"mine").unwrap();
    std::fs::write(home.path().join(".bashrc"), b"mine").unwrap();

    let (code, _, err) = run(&["get", "-q", "-r", &format!("{}/photos", srv.base()), h]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = run(&["get", "-q", "-r", &format!("{}/pics/", srv.base()), h]);
    assert_eq!(code, Some(0), "{err}");

    assert_eq!(std::fs::read(home.path().join(".bashrc")).unwrap(), b"mine");
    assert_eq!(
        std::fs::read(home.path().join(".ssh/authorized_keys")).unwrap(),
        b"mine"
    );
    assert_eq!(
        tree(home.path()),
        [
            ".bashrc",
            ".ssh/",
            ".ssh/authorized_keys",
            "photos/",
            "photos/.bashrc",
            "photos/.ssh/",
            "photos/.ssh/authorized_keys",
            "pics/",
            "pics/authorized_keys",
        ]
    );
    // Without a destination: ./photos, from the typed URL.
    let cwd = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["get", "-q", "-r", &format!("{}/pics/", srv.base())])
        .current_dir(cwd.path())
        .env_remove("WIRESPEED_TOKEN")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(tree(cwd.path()), ["pics/", "pics/authorized_keys"]);
}

/// Names in a listing that are not one plain component,
/// and reserved `.wirespeed-` names, are skipped and said, one line each.
#[test]
fn get_r_skips_listed_names_that_would_leave_the_destination() {
    let srv = Routes::start(|r: &Req| match r.path() {
        "/t/" => Reply::json(&listing(&[
            ("../x", "file"),
            ("/etc/x", "file"),
            ("a/../../b", "file"),
            ("..", "dir"),
            (".wirespeed-part-ok.txt", "file"),
            (".WIRESPEED-evil", "file"),
            ("ok.txt", "file"),
        ])),
        "/t/ok.txt" => Reply::bytes(b"fine!"),
        p => Reply::bytes(format!("should never be fetched: {p}").as_bytes()),
    });
    let top = tempfile::tempdir().unwrap();
    let dest = top.path().join("in");
    std::fs::create_dir(&dest).unwrap();
    let (code, out, err) = run(&[
        "get",
        "-r",
        &format!("{}/t/", srv.base()),
        dest.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1 of 1 files saved"), "{out}");
    assert_eq!(tree(top.path()), ["in/", "in/t/", "in/t/ok.txt"]);
    for name in ["../x", "/etc/x", "a/../../b", "\"..\""] {
        assert!(
            err.lines()
                .any(|l| l.starts_with("skipped ") && l.contains(name) && l.contains("plain")),
            "{name}: {err}"
        );
    }
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("skipped ") && l.contains("reserved"))
            .count(),
        2,
        "{err}"
    );
    let fetched = srv.seen();
    assert_eq!(fetched, ["GET /t/", "GET /t/ok.txt"], "{fetched:?}");
}

/// A folder holding `X` and `X.part` is saved whole; the
/// partial download has a name no remote file can take.
#[test]
fn a_folder_holding_x_and_x_part_saves_both() {
    let root = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("d")).unwrap();
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.path().join("d/X"), &big).unwrap();
    std::fs::write(root.path().join("d/X.part"), b"the other file").unwrap();
    let srv = Serve::start(root.path(), &[]);
    for _ in 0..3 {
        let dest = tempfile::tempdir_in(local.path()).unwrap();
        let (code, out, err) = run(&[
            "get",
            "-r",
            &format!("{}/d/", srv.base()),
            dest.path().to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("2 of 2 files saved"), "{out}");
        assert!(std::fs::read(dest.path().join("d/X")).unwrap() == big);
        assert_eq!(
            std::fs::read(dest.path().join("d/X.part")).unwrap(),
            b"the other file"
        );
        assert_eq!(
            tree(dest.path()),
            ["d/", "d/X", "d/X.part"],
            "no partial left"
        );
    }
}

/// A listing bigger than the walk's limits fails before
/// anything is written, with the flag that raises the limit.
#[test]
fn get_r_stops_at_the_walk_limits() {
    let srv = Routes::start(|r: &Req| {
        if r.path().ends_with('/') {
            // Every folder holds 50 folders: endless without a limit.
            let names: Vec<String> = (0..50).map(|i| format!("d{i:02}")).collect();
            let entries: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "dir")).collect();
            Reply::json(&listing(&entries))
        } else {
            Reply::bytes(b"x")
        }
    });
    let dest = tempfile::tempdir().unwrap();
    let url = format!("{}/deep/", srv.base());
    let d = dest.path().to_str().unwrap();
    let (code, _, err) = run(&["get", "-r", "--max-entries", "500", &url, d]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("more than 500 entries") && err.contains("--max-entries"),
        "{err}"
    );
    let (code, _, err) = run(&["get", "-r", "--max-names", "2K", &url, d]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("more than 2048 bytes of names") && err.contains("--max-names"),
        "{err}"
    );
    assert!(tree(dest.path()).is_empty(), "{:?}", tree(dest.path()));
    let (code, _, err) = run(&["rm", "-r", "--max-entries", "100", &url]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("more than 100 entries"), "{err}");
    assert!(
        !srv.seen().iter().any(|r| r.starts_with("DELETE")),
        "nothing deleted"
    );
}

/// An error body's escape codes are shown, not obeyed,
/// and a long one is cut to a line.
#[test]
fn server_error_bodies_cannot_drive_the_terminal() {
    let srv = Routes::start(|r: &Req| match r.path() {
        "/long" => Reply::status(403, &"blah ".repeat(2000)),
        _ => Reply::status(403, "\u{1b}]0;pwned\u{7}\u{1b}[2J denied\r\n\u{9b}31m"),
    });
    let dest = tempfile::tempdir().unwrap();
    let o = dest.path().join("f");
    let o = o.to_str().unwrap();
    for args in [
        vec![
            "get".to_string(),
            format!("{}/f", srv.base()),
            "-o".into(),
            o.into(),
        ],
        vec!["ls".to_string(), format!("{}/d/", srv.base())],
        vec!["rm".to_string(), format!("{}/f", srv.base())],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = run(&args);
        assert_eq!(code, Some(1), "{err}");
        assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
        assert!(err.contains("\\u{1b}]0;pwned\\u{7}"), "{err}");
        assert!(err.contains("denied"), "{err}");
    }
    let (code, _, err) = run(&["get", &format!("{}/long", srv.base()), "-o", o]);
    assert_eq!(code, Some(1));
    assert!(
        err.len() < 600 && err.contains('…'),
        "{} bytes: {err}",
        err.len()
    );
}

/// Permanent errors: 409, 507, 501 and 4xx fail at once (one request, no retry
/// notices), with the fix in the line, even with -q; connection refused on
/// the first try too.
#[test]
fn permanent_errors_fail_at_once_with_their_fix() {
    let srv = Routes::start(|r: &Req| {
        let code: u16 = r
            .path()
            .trim_start_matches('/')
            .get(..3)
            .and_then(|c| c.parse().ok())
            .unwrap_or(404);
        Reply::status(code, "refused")
    });
    let local = tempfile::tempdir().unwrap();
    let src = local.path().join("f.bin");
    std::fs::write(&src, vec![7u8; 100_000]).unwrap();
    for (code, fix) in [
        (409, "trailing /"),
        (507, "disk is full"),
        (501, "does not implement"),
        (400, ""),
        (403, "does not allow"),
    ] {
        for verb in ["get", "put"] {
            let before = srv.seen().len();
            let url = format!("{}/{code}/f.bin", srv.base());
            let args = match verb {
                "get" => vec!["get", "-q", url.as_str(), "-o"],
                _ => vec![
                    "put",
                    "-q",
                    "--protocol",
                    "put",
                    src.to_str().unwrap(),
                    url.as_str(),
                ],
            };
            let out_file = local.path().join("out.bin");
            let mut args = args;
            if verb == "get" {
                args.push(out_file.to_str().unwrap());
            }
            let (exit, _, err) = run(&args);
            assert_eq!(exit, Some(1), "{verb} {code}: {err}");
            assert!(
                err.contains(&format!("{code}")) && err.contains(fix),
                "{verb} {code}: {err}"
            );
            assert!(!err.contains("retry"), "{verb} {code}: {err}");
            // One request: `get`'s first GET (of the first bytes, in place
            // of a HEAD) carries the refusal, and is not asked again.
            let sent = &srv.seen()[before..];
            assert_eq!(sent.len(), 1, "{verb} {code}: one request: {sent:?}");
        }
    }
    let port = wirespeed_testkit::server::closed_port();
    let started = Instant::now();
    for args in [
        vec![
            "get".to_string(),
            "-q".into(),
            format!("http://127.0.0.1:{port}/x"),
        ],
        vec![
            "put".to_string(),
            "-q".into(),
            src.to_str().unwrap().into(),
            format!("http://127.0.0.1:{port}/x"),
        ],
        vec![
            "put".to_string(),
            "-q".into(),
            "--protocol".into(),
            "tus".into(),
            src.to_str().unwrap().into(),
            format!("http://127.0.0.1:{port}/x"),
        ],
    ] {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (exit, _, err) = run(&a);
        assert_eq!(exit, Some(1), "{err}");
        assert!(
            err.contains("connection refused") && !err.contains("retry"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // Ten retries with back-off would take over a minute.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// A 401 names the way to give a token, or says the one given
/// was refused.
#[test]
fn a_401_names_the_token_flag() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), b"a").unwrap();
    let srv = Serve::start(root.path(), &["--token", "s3cret", "--private"]);
    let url = format!("{}/a.txt", srv.base());
    let (code, _, err) = run(&["ls", &format!("{}/", srv.base())]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("401") && err.contains("--token TOKEN or set WIRESPEED_TOKEN"),
        "{err}"
    );
    let dest = tempfile::tempdir().unwrap();
    let o = dest.path().join("a.txt");
    let (code, _, err) = run(&["get", &url, "-o", o.to_str().unwrap(), "--token", "wrong"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("401")
            && err.contains("token given with --token or WIRESPEED_TOKEN was refused"),
        "{err}"
    );
}

/// `wirespeed ls URL | head -1` ends quietly on the closed pipe.
#[test]
fn a_closed_pipe_ends_quietly() {
    let root = tempfile::tempdir().unwrap();
    for i in 0..3000 {
        std::fs::write(root.path().join(format!("file number {i:05}.txt")), b"x").unwrap();
    }
    let srv = Serve::start(root.path(), &[]);
    for json in [false, true] {
        let mut cmd = Command::new(BIN);
        cmd.arg("ls");
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .arg(format!("{}/", srv.base()))
            .env_remove("WIRESPEED_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        // The reader is gone (like `head -1` exiting).
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!first.is_empty());
        assert!(err.is_empty(), "quiet: {err}");
        assert_eq!(out.status.code(), Some(141), "{err}");
    }
    // `get -o -` into a reader that leaves (`| head -c 10`).
    std::fs::write(root.path().join("big.bin"), vec![1u8; 8 << 20]).unwrap();
    let mut child = Command::new(BIN)
        .args(["get", &format!("{}/big.bin", srv.base()), "-o", "-"])
        .env_remove("WIRESPEED_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut some = [0u8; 10];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut some).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.is_empty(), "quiet: {err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}

/// `rm -r` where a folder vanished with its last key (S3) and
/// answers 404: that folder is deleted, success.
#[test]
fn rm_r_takes_a_vanished_folder_as_deleted() {
    let srv = Routes::start(|r: &Req| match (r.method.as_str(), r.path()) {
        ("GET", "/t/") => Reply::json(&listing(&[("d", "dir")])),
        ("GET", "/t/d/") => Reply::json(&listing(&[("f", "file")])),
        ("DELETE", "/t/d/f") => Reply::status(204, ""),
        ("DELETE", "/t/d/") => Reply::status(404, "no such key"),
        ("DELETE", "/t/") => Reply::status(204, ""),
        _ => Reply::status(500, "unexpected"),
    });
    let (code, out, err) = run(&["rm", "-r", &format!("{}/t/", srv.base())]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("deleted"), "{out}");
    assert!(srv.seen().contains(&"DELETE /t/".to_string()));
}

/// Text from a proxy or a hostile server, shown short and safe: a
/// proxy's HTML 502 page is its title in the retry line (no markup), a
/// share listing's escape codes are escaped, and a minted link is built
/// on the URL the user typed, never on a host the server names.
#[test]
fn foreign_text_in_retry_lines_and_share_answers_is_short_and_safe() {
    let page = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
                <center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n\
                </body>\r\n</html>\r\n";
    let srv = Routes::start(move |r: &Req| match (r.method.as_str(), r.path()) {
        ("GET", "/-/shares/") => Reply::json(
            r#"[{"path":"/a.txt","share":"tok","rights":"r\u001b[2J","expires":1,"by":"x\u001b]0;pwned\u0007"}]"#,
        ),
        ("POST", _) => Reply::json(r#"{"path":"http://evil.example/a.txt","share":"tok"}"#),
        _ => Reply::Full(
            502,
            vec![("Content-Type".into(), "text/html".into())],
            page.as_bytes().to_vec(),
        ),
    });
    let dest = tempfile::tempdir().unwrap();
    let o = dest.path().join("f");
    let url = format!("{}/f", srv.base());
    let (code, _, err) = run(&["get", "--retries", "1", &url, "-o", o.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("502 Bad Gateway"), "{err}");
    assert!(!err.contains('<') && !err.contains("nginx/1.22.1"), "{err}");
    assert!(err.lines().all(|l| l.len() < 400), "{err}");

    let (code, out, err) = run(&["share", "--list", &format!("{}/", srv.base())]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !out.chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{out:?}"
    );
    assert!(out.contains("\\u{1b}]0;pwned"), "{out}");
    let (code, out, err) = run(&["share", &format!("{}/a.txt", srv.base())]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(!out.contains("evil.example"), "{out}");
    assert!(err.contains("names no path on this server"), "{err}");
}

/// The walk of a wide hostile tree holds one listing at a time: a
/// folder is listed when its turn comes, so reaching the memory budget
/// on the first folder's entries asked for that listing only (a walk
/// that listed each folder as it was named held them all).
#[test]
fn get_r_lists_one_folder_at_a_time() {
    let srv = Routes::start(|r: &Req| {
        let names: Vec<String> = (0..2000).map(|i| format!("folder-{i:05}")).collect();
        let entries: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "dir")).collect();
        match r.path().ends_with('/') {
            true => Reply::json(&listing(&entries)),
            false => Reply::bytes(b"x"),
        }
    });
    let dest = tempfile::tempdir().unwrap();
    let url = format!("{}/wide/", srv.base());
    let d = dest.path().to_str().unwrap();
    let (code, _, err) = run(&["get", "-r", "--max-names", "200K", &url, d]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--max-names"), "{err}");
    let listings = srv.seen().iter().filter(|r| r.starts_with("GET")).count();
    assert_eq!(listings, 1, "{:?}", &srv.seen()[..5.min(srv.seen().len())]);
}
