//! Running a client command again continues it (docs: "Reruns and
//! errors"): an interrupted `get -r` (cut by the proxy) continues the same
//! tree; Ctrl-C prints the command that continues and exits 130; a rerun
//! `put` resumes its recorded upload; plus the everyday mistakes the client
//! must explain, and the plain-PUT fallback when resumable creation is
//! refused (a full server must not strand a `put`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use common::routes::{Reply, Req, Routes};
use common::{files_below, Serve, BIN};
use wirespeed_testkit::fs::eventually;
use wirespeed_testkit::proxy::CuttingProxy;

const MIB: usize = 1 << 20;

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

fn data(len: usize, salt: u8) -> Vec<u8> {
    let mut v = wirespeed_testkit::bytes(len, 0x5eed);
    for (i, b) in v.iter_mut().enumerate().step_by(4096) {
        *b ^= salt.wrapping_add(i as u8);
    }
    v
}

fn sigint(child: &Child) {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
}

/// An interrupted `get -r URL/vids/ vback` (the proxy cuts the big file,
/// no retries) exits 1; the same command again continues the same tree:
/// no `vback/vids/vids`, finished files kept, the partial resumed, a stale
/// partial removed; a third run transfers nothing.
#[test]
fn get_r_rerun_continues_the_interrupted_tree() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, local, state) = (
        tmp.path().join("root"),
        tmp.path().join("local"),
        tmp.path().join("state"),
    );
    std::fs::create_dir_all(root.join("vids/sub")).unwrap();
    std::fs::create_dir_all(&local).unwrap();
    let big = data(24 * MIB, 1);
    std::fs::write(root.join("vids/big.bin"), &big).unwrap();
    std::fs::write(root.join("vids/a.txt"), b"small a").unwrap();
    std::fs::write(root.join("vids/sub/b.txt"), b"small b").unwrap();
    // Listed times must be in the past for "not older than the listing".
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let serve = Serve::start(&root, &[]);
    let proxy = CuttingProxy::start(serve.addr);
    proxy.cut_downstream_every(Some(8 * MIB as u64));
    let url = format!("{}/vids/", proxy.base());
    let vback = local.join("vback");
    let cmd = [
        "get",
        "-r",
        "--retries",
        "0",
        "-P",
        "4",
        &url,
        vback.to_str().unwrap(),
    ];

    let out = run(&state, &cmd);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed file fails the run: {stderr}"
    );
    let tree = vback.join("vids");
    assert_eq!(std::fs::read(tree.join("a.txt")).unwrap(), b"small a");
    assert_eq!(std::fs::read(tree.join("sub/b.txt")).unwrap(), b"small b");
    let part = tree.join(".wirespeed-part-big.bin");
    let had = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    assert!(had > MIB as u64, "a partial file of {had} bytes");
    std::fs::write(tree.join(".wirespeed-part-gone.bin"), b"stale").unwrap();

    proxy.cut_downstream_every(None);
    let before = proxy.bytes_down();
    let out = run(&state, &cmd);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("2 files up to date"), "{stderr}");
    assert!(stderr.contains("1 stale partial files removed"), "{stderr}");
    assert!(stdout.contains("1 of 1 files saved"), "{stdout}");
    let sent = proxy.bytes_down() - before;
    assert!(
        sent < (big.len() as u64 - had) + MIB as u64,
        "resumed: {sent} bytes for the rest {}",
        big.len() as u64 - had
    );
    assert!(std::fs::read(tree.join("big.bin")).unwrap() == big);
    assert_eq!(
        files_below(&vback),
        ["vids/a.txt", "vids/big.bin", "vids/sub/b.txt"].map(PathBuf::from)
    );

    let before = proxy.bytes_down();
    let out = run(&state, &cmd);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("3 files up to date"), "{stderr}");
    assert!(stdout.contains("0 of 0 files saved"), "{stdout}");
    assert!(proxy.bytes_down() - before < 64 * 1024, "only listings");
    assert_eq!(
        files_below(&vback),
        ["vids/a.txt", "vids/big.bin", "vids/sub/b.txt"].map(PathBuf::from)
    );

    // The server's file changes after a partial of it was written: the
    // partial is not continued (its bytes are another version's).
    let old_part = tree.join(".wirespeed-part-a.txt");
    std::fs::write(&old_part, b"XXXXXXX").unwrap();
    let touched = Command::new("touch")
        .args(["-d", "2001-01-01"])
        .arg(&old_part)
        .status()
        .unwrap();
    assert!(touched.success());
    std::fs::write(root.join("vids/a.txt"), b"a changed, and longer").unwrap();
    let out = run(&state, &cmd);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        std::fs::read(tree.join("a.txt")).unwrap(),
        b"a changed, and longer"
    );
    assert!(!old_part.exists());
}

/// Ctrl-C during `get` keeps the partial file, prints the command that
/// continues it (with --continue) and exits 130.
#[test]
fn ctrl_c_on_get_prints_the_command_that_continues() {
    let srv = Routes::start(|_: &Req| Reply::Stall {
        len: 10 * MIB as u64,
        first: vec![b'x'; 300 * 1024],
    });
    let tmp = wirespeed_testkit::fs::tempdir();
    let dest = tmp.path().join("slow.bin");
    let url = format!("{}/slow.bin", srv.base());
    let child = client(tmp.path(), &["get", &url, "-o", dest.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let part = tmp.path().join(".wirespeed-part-slow.bin");
    eventually("the download is under way", || {
        std::fs::metadata(&part).is_ok_and(|m| m.len() > 0)
    });
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "wirespeed get --continue {url} -o {}",
            dest.display()
        )),
        "{stderr}"
    );
    assert!(part.exists() && !dest.exists());
}

/// Ctrl-C during a resumable `put` prints the command; running that same
/// command (no --continue) sends only the rest.
#[test]
fn ctrl_c_on_put_then_the_same_command_continues() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, state) = (tmp.path().join("root"), tmp.path().join("state"));
    std::fs::create_dir_all(&root).unwrap();
    let serve = Serve::start(&root, &[]);
    let src = tmp.path().join("big.bin");
    let len = 64 * MIB;
    std::fs::write(&src, data(len, 2)).unwrap();
    let proxy = CuttingProxy::start(serve.addr);
    proxy.stall_upstream_after(Some(24 * MIB as u64));
    let url = format!("{}/big.bin", proxy.base());
    let cmd = ["put", src.to_str().unwrap(), url.as_str()];
    let child = client(&state, &cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually("the upload stalls mid-file", || proxy.stalled() >= 1);
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!("wirespeed put {} {url}", src.display())),
        "{stderr}"
    );

    proxy.stall_upstream_after(None);
    let before = proxy.bytes_up();
    let out = run(&state, &cmd);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("continuing the interrupted upload"),
        "{stderr}"
    );
    let sent = proxy.bytes_up() - before;
    assert!(
        sent < (len - 8 * MIB) as u64,
        "the rerun sent {sent} of {len}"
    );
    assert!(std::fs::read(root.join("big.bin")).unwrap() == std::fs::read(&src).unwrap());
}

/// The server refuses to create a resumable upload (503,
/// its limit of unfinished uploads is reached): `put` of 8 MiB and more
/// says so once and sends a plain PUT.
#[test]
fn put_falls_back_to_a_plain_put_when_resumable_creation_is_refused() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, state) = (tmp.path().join("root"), tmp.path().join("state"));
    std::fs::create_dir_all(&root).unwrap();
    let serve = Serve::start(&root, &["--max-partial-uploads", "1"]);
    let (status, _, _) = serve.req(
        "POST",
        "/-/uploads/filler.bin",
        &["Tus-Resumable: 1.0.0", "Upload-Length: 100"],
        b"",
    );
    assert_eq!(status, 201, "one unfinished upload fills the server");
    let src = tmp.path().join("nine.bin");
    std::fs::write(&src, data(9 * MIB, 3)).unwrap();
    let out = run(
        &state,
        &[
            "put",
            src.to_str().unwrap(),
            &format!("{}/nine.bin", serve.base()),
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stderr.matches("cannot take a resumable upload now").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("503"), "{stderr}");
    assert!(std::fs::read(root.join("nine.bin")).unwrap() == std::fs::read(&src).unwrap());
}

/// Everyday mistakes, each explained: `get -c` of a
/// complete file, `get` of a folder, a URL without `http://`, `put a
/// missing b dir/`, links and reserved names under `put -r`, `-o DIR/` of a
/// missing folder.
#[test]
fn everyday_client_mistakes_are_explained() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, local, state) = (
        tmp.path().join("root"),
        tmp.path().join("local"),
        tmp.path().join("state"),
    );
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::create_dir_all(&local).unwrap();
    let a = data(MIB, 4);
    std::fs::write(root.join("a.bin"), &a).unwrap();
    let serve = Serve::start(&root, &[]);
    let base = serve.base();
    let at = |p: &str| -> PathBuf { local.join(p) };

    // get -c of a complete file: said, exit 0, untouched.
    std::fs::write(at("a.bin"), &a).unwrap();
    let out = run(
        &state,
        &[
            "get",
            "-c",
            &format!("{base}/a.bin"),
            "-o",
            at("a.bin").to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("already complete"),
        "{}",
        text(&out.stderr)
    );

    // get of a folder points to -r.
    let out = run(
        &state,
        &[
            "get",
            &format!("{base}/dir/"),
            "-o",
            at("x").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("wirespeed get -r"),
        "{}",
        text(&out.stderr)
    );

    // No scheme: http:// is assumed.
    let bare = base.trim_start_matches("http://");
    let out = run(
        &state,
        &[
            "get",
            &format!("{bare}/a.bin"),
            "-o",
            at("bare.bin").to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(at("bare.bin")).unwrap() == a);

    // put a missing b dir/: the missing one reported, the others sent, exit 1.
    std::fs::write(at("one.txt"), b"1").unwrap();
    std::fs::write(at("two.txt"), b"2").unwrap();
    let out = run(
        &state,
        &[
            "put",
            at("one.txt").to_str().unwrap(),
            at("missing.txt").to_str().unwrap(),
            at("two.txt").to_str().unwrap(),
            &format!("{base}/up/"),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("missing.txt") && stderr.contains("No such file"),
        "{stderr}"
    );
    assert!(
        text(&out.stdout).contains("2 of 3 files stored"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read(root.join("up/one.txt")).unwrap(), b"1");
    assert_eq!(std::fs::read(root.join("up/two.txt")).unwrap(), b"2");

    // put -r: links to folders or nothing and reserved names, one line each.
    let tree = at("tree");
    std::fs::create_dir_all(tree.join("real")).unwrap();
    std::fs::write(tree.join("real/f.txt"), b"f").unwrap();
    std::fs::write(tree.join(".wirespeed-mine"), b"r").unwrap();
    std::os::unix::fs::symlink(tree.join("real"), tree.join("loop")).unwrap();
    std::os::unix::fs::symlink(tree.join("nowhere"), tree.join("dangling")).unwrap();
    let out = run(
        &state,
        &["put", "-r", tree.to_str().unwrap(), &format!("{base}/t/")],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let skipped: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("skipped "))
        .collect();
    assert_eq!(skipped.len(), 3, "{stderr}");
    assert!(
        skipped
            .iter()
            .any(|l| l.contains("loop: a link to a folder")),
        "{stderr}"
    );
    assert!(
        skipped
            .iter()
            .any(|l| l.contains("dangling: a link to nothing")),
        "{stderr}"
    );
    assert!(
        skipped
            .iter()
            .any(|l| l.contains(".wirespeed-mine: names starting with .wirespeed- are reserved")),
        "{stderr}"
    );
    assert_eq!(std::fs::read(root.join("t/tree/real/f.txt")).unwrap(), b"f");

    // A reserved name given by hand is refused with the reason.
    let out = run(
        &state,
        &[
            "put",
            tree.join(".wirespeed-mine").to_str().unwrap(),
            &format!("{base}/up/"),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("reserved by wirespeed"),
        "{}",
        text(&out.stderr)
    );

    // -o DIR/ of a missing folder: an error, and no stray partial file.
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let out = client(&state, &["get", &format!("{base}/a.bin"), "-o", "nodir/"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("does not exist"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);
}

/// A server that answers 501 to OPTIONS (python's http.server does) has no
/// resumable uploads: `put` of 9 MiB sends one plain PUT instead of
/// retrying the discovery.
#[test]
fn put_to_a_server_without_options_sends_a_plain_put() {
    let srv = Routes::start(|r: &Req| match r.method.as_str() {
        "OPTIONS" => Reply::status(501, "Unsupported method ('OPTIONS')"),
        "PUT" => Reply::status(201, ""),
        _ => Reply::status(405, ""),
    });
    let tmp = wirespeed_testkit::fs::tempdir();
    let src = tmp.path().join("nine.bin");
    std::fs::write(&src, data(9 * MIB, 5)).unwrap();
    let out = run(
        tmp.path(),
        &[
            "put",
            "--no-verify",
            src.to_str().unwrap(),
            &format!("{}/nine.bin", srv.base()),
        ],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("offers no resumable uploads"), "{stderr}");
    let seen = srv.seen();
    assert_eq!(
        seen.iter().filter(|r| r.starts_with("PUT")).count(),
        1,
        "{seen:?}"
    );
    assert!(seen.len() <= 3, "no retries: {seen:?}");
}

/// Give the file at `p` the modification time `secs` seconds and `nanos`
/// nanoseconds after the epoch.
fn set_mtime(p: &Path, secs: u64, nanos: u32) {
    let t = std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos);
    std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// A rerun of `get -r` notices a file edited on the server without
/// changing its size: when its time moved to a later second (the listing
/// shows it), and when the edit stays within the very second the last
/// download saw while that second had not passed yet on the server's
/// clock (a file dated ahead, as from a skewed clock: only its version,
/// the ETag, tells). An unchanged tree then transfers nothing.
#[test]
fn get_r_rerun_notices_same_size_edits() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, local, state) = (
        tmp.path().join("root"),
        tmp.path().join("local"),
        tmp.path().join("state"),
    );
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(&local).unwrap();
    let (a, b) = (root.join("docs/a.txt"), root.join("docs/b.txt"));
    std::fs::write(&a, b"version 1").unwrap();
    std::fs::write(&b, b"unchanged").unwrap();
    let t0 = 1_700_000_000;
    set_mtime(&a, t0, 0);
    set_mtime(&b, t0, 0);
    let serve = Serve::start(&root, &[]);
    let url = format!("{}/docs/", serve.base());
    let cmd = ["get", "-r", &url, local.to_str().unwrap()];
    let saved = local.join("docs/a.txt");
    let rerun = |want: &[u8]| {
        let out = run(&state, &cmd);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{stderr}");
        assert_eq!(std::fs::read(&saved).unwrap(), want, "{stdout}{stderr}");
        (stdout, stderr)
    };
    rerun(b"version 1");

    // Edited a minute later, same size.
    std::fs::write(&a, b"version 2").unwrap();
    set_mtime(&a, t0 + 60, 0);
    let (stdout, stderr) = rerun(b"version 2");
    assert!(stdout.contains("1 of 1 files saved"), "{stdout}");
    assert!(stderr.contains("1 files up to date"), "{stderr}");

    // Dated an hour ahead of the server's clock, then edited again within
    // that second, same size: the listing and Last-Modified cannot tell.
    let ahead = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    std::fs::write(&a, b"version 3").unwrap();
    set_mtime(&a, ahead, 0);
    rerun(b"version 3");
    std::fs::write(&a, b"version 4").unwrap();
    set_mtime(&a, ahead, 500_000_000);
    let (stdout, _) = rerun(b"version 4");
    assert!(stdout.contains("1 of 1 files saved"), "{stdout}");

    let (stdout, stderr) = rerun(b"version 4");
    assert!(stderr.contains("2 files up to date"), "{stderr}");
    assert!(stdout.contains("0 of 0 files saved"), "{stdout}");
}

/// A `get` cut short (no retries) leaves its partial file; the same
/// command again, without --continue, continues it when the server still
/// has that version, and starts over when the file changed meanwhile.
#[test]
fn the_same_get_again_continues_the_partial_file() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, state) = (tmp.path().join("root"), tmp.path().join("state"));
    std::fs::create_dir_all(&root).unwrap();
    let big = data(24 * MIB, 6);
    std::fs::write(root.join("big.bin"), &big).unwrap();
    let serve = Serve::start(&root, &[]);
    let proxy = CuttingProxy::start(serve.addr);
    let url = format!("{}/big.bin", proxy.base());
    let dest = tmp.path().join("big.bin");
    let cmd = ["get", "--retries", "0", &url, "-o", dest.to_str().unwrap()];
    let part = tmp.path().join(".wirespeed-part-big.bin");
    let cut = |proxy: &CuttingProxy| {
        proxy.cut_downstream_every(Some(8 * MIB as u64));
        let out = run(&state, &cmd);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        proxy.cut_downstream_every(None);
        // 24 MiB is fetched by ranges (4 MiB pieces, one connection): the
        // partial file is preallocated, and its record says which pieces
        // are on disk.
        let had = pieces_on_disk(&part, big.len() as u64);
        assert!(had > MIB as u64, "{had} bytes of pieces on disk");
        had
    };

    let had = cut(&proxy);
    let before = proxy.bytes_down();
    let out = run(&state, &cmd);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("resumed at"), "{stdout}");
    let sent = proxy.bytes_down() - before;
    assert!(
        sent < (big.len() as u64 - had) + MIB as u64,
        "resumed: {sent} bytes for the rest {}",
        big.len() as u64 - had
    );
    assert!(std::fs::read(&dest).unwrap() == big);

    // Cut again, then the server's file changes: the rerun starts over
    // and saves the new version whole.
    std::fs::remove_file(&dest).unwrap();
    cut(&proxy);
    let newer = data(24 * MIB, 7);
    std::fs::write(root.join("big.bin"), &newer).unwrap();
    let out = run(&state, &cmd);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("changed on the server"), "{stderr}");
    assert!(std::fs::read(&dest).unwrap() == newer);
}

/// The bytes of the pieces a ranged download's partial file records as
/// on disk.
fn pieces_on_disk(part: &Path, size: u64) -> u64 {
    let mut buf = vec![0u8; 4096];
    let n =
        rustix::fs::getxattr(part, "user.wirespeed.pieces", &mut buf[..]).expect("a pieces record");
    let rec = std::str::from_utf8(&buf[..n]).unwrap();
    wirespeed_client::transfer::ranges::Pieces::decode(rec, size)
        .expect("a valid record")
        .done_bytes()
}

/// `put -r` again sends what changed: an unchanged tree sends no file
/// (only listings cross), a file edited without changing its size is sent
/// again, the others are not.
#[test]
fn put_r_rerun_sends_what_changed() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let (root, local, state) = (
        tmp.path().join("root"),
        tmp.path().join("local"),
        tmp.path().join("state"),
    );
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(local.join("pics/sub")).unwrap();
    let (a, b) = (local.join("pics/a.bin"), local.join("pics/sub/b.txt"));
    std::fs::write(&a, data(2 * MIB, 8)).unwrap();
    std::fs::write(&b, b"first").unwrap();
    let t0 = 1_700_000_000;
    set_mtime(&a, t0, 0);
    set_mtime(&b, t0, 0);
    let serve = Serve::start(&root, &[]);
    let proxy = CuttingProxy::start(serve.addr);
    let url = format!("{}/backup/", proxy.base());
    let pics = local.join("pics");
    let cmd = ["put", "-r", pics.to_str().unwrap(), &url];

    let out = run(&state, &cmd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("2 of 2 files stored"));

    let before = proxy.bytes_up();
    let out = run(&state, &cmd);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 files unchanged on the server"),
        "{stderr}"
    );
    assert!(stdout.contains("nothing to upload"), "{stdout}");
    assert!(
        proxy.bytes_up() - before < 64 * 1024,
        "only listings were asked"
    );

    std::fs::write(&b, b"again").unwrap();
    set_mtime(&b, t0 + 60, 0);
    let before = proxy.bytes_up();
    let out = run(&state, &cmd);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("1 files unchanged on the server"),
        "{stderr}"
    );
    assert!(stdout.contains("1 of 1 files stored"), "{stdout}");
    assert!(
        proxy.bytes_up() - before < MIB as u64,
        "a.bin was not sent again"
    );
    assert_eq!(
        std::fs::read(root.join("backup/pics/sub/b.txt")).unwrap(),
        b"again"
    );
}

/// More everyday mistakes, each with its fix: `get` of a folder URL
/// points to `get -r`; a transposed subcommand gets "did you mean";
/// `--user` without a password and without a terminal says to set
/// WIRESPEED_PASSWORD; `--expires` takes `1w` and `2h30m`.
#[test]
fn more_everyday_mistakes_are_explained() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::write(root.join("a.txt"), b"a").unwrap();
    let serve = Serve::start(&root, &["--token", "sesame"]);
    let base = serve.base();
    let state = tmp.path().join("state");

    let out = client(&state, &["get", &format!("{base}/dir/")])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("use `wirespeed get -r {base}/dir/`")),
        "{stderr}"
    );

    let out = run(&state, &["gte", &format!("{base}/a.txt")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a similar subcommand exists: 'get'"),
        "{stderr}"
    );

    // No terminal at all: a new session, stdin from nothing.
    let out = Command::new("setsid")
        .args(["-w", BIN, "ls", "--user", "bob", &format!("{base}/")])
        .env_remove("WIRESPEED_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("set WIRESPEED_PASSWORD"), "{stderr}");
    assert!(!stderr.contains("os error"), "{stderr}");

    for expires in ["1w", "2h30m"] {
        let out = run(
            &state,
            &[
                "share",
                "--token",
                "sesame",
                "--expires",
                expires,
                &format!("{base}/a.txt"),
            ],
        );
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{expires}: {stderr}");
        assert!(
            stdout.starts_with(&format!("{base}/a.txt?share=")),
            "{stdout}"
        );
    }
}

/// A body the server refuses while it arrives (over `--max-body`, sent
/// from an endless pipe) stops going out at the refusal, and `put` reports
/// the 413 at once, as curl does, instead of sending until the server's
/// lingering close gives up (30 s and gigabytes).
#[test]
fn put_stops_sending_when_the_server_refuses_mid_body() {
    use std::io::Write;
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let serve = Serve::start(&root, &["--max-body", "1M"]);
    let proxy = CuttingProxy::start(serve.addr);
    let url = format!("{}/endless.bin", proxy.base());
    let mut child = client(tmp.path(), &["put", "-", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Fed until the client stops reading (it exits).
    let feeder = std::thread::spawn(move || {
        let block = vec![b'y'; 64 * 1024];
        while stdin.write_all(&block).is_ok() {}
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("413"), "{stderr}");
    let sent = proxy.bytes_up();
    assert!(
        sent < 64 * MIB as u64,
        "{sent} bytes sent after the refusal"
    );
    assert_eq!(
        std::fs::read_dir(&root).unwrap().count(),
        0,
        "nothing stored"
    );
}
