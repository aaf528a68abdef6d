//! Real WebDAV clients against `serve`, as a user runs them: rclone's
//! webdav backend (copy a tree with spaces, Unicode and an empty file, lsf,
//! sync a change and a deletion, copy back byte-identical, moveto, mtimes
//! through `X-OC-Mtime`), a scripted cadaver session, and a davfs2 mount
//! where the machine allows FUSE mounts. Outside CI a missing tool skips
//! loudly; with `CI=true` rclone and cadaver must be there (`.ci/run`).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::{files_below, run_bounded as run, Serve};

const FILES: [(&str, usize); 5] = [
    ("plain.txt", 5),
    ("name with spaces.txt", 3000),
    ("ünïcødé ✓.txt", 70_000),
    ("empty", 0),
    ("sub/inner file.bin", 300_000),
];

fn content(name: &str, len: usize) -> Vec<u8> {
    let seed = name
        .bytes()
        .fold(11u8, |a, b| a.wrapping_mul(31).wrapping_add(b));
    (0..len)
        .map(|i| seed.wrapping_add((i % 251) as u8))
        .collect()
}

fn tree(at: &Path) {
    for (name, len) in FILES {
        let p = at.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content(name, len)).unwrap();
    }
}

/// Whether `tool` runs; if not, skip loudly, or fail in CI when `ci_needs`.
fn have(tool: &str, version_arg: &str, ci_needs: bool) -> bool {
    let ok = Command::new(tool)
        .arg(version_arg)
        .stdin(Stdio::null())
        .output()
        .is_ok();
    if !ok {
        if ci_needs && std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{tool} is needed in CI (bash .ci/run installs it)");
        }
        eprintln!("\n!!!!!! SKIPPED: {tool} not found; bash .ci/run installs it !!!!!!\n");
    }
    ok
}

fn same_tree(a: &Path, b: &Path) {
    let fa = files_below(a);
    assert_eq!(fa, files_below(b), "{a:?} vs {b:?}");
    for f in fa {
        assert!(
            std::fs::read(a.join(&f)).unwrap() == std::fs::read(b.join(&f)).unwrap(),
            "{f:?} differs"
        );
    }
}

#[test]
fn rclone_webdav_copies_syncs_and_moves() {
    if !have("rclone", "--version", true) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let src = tmp.path().join("src");
    tree(&src);
    let s = Serve::start(&root, &[]);
    let config = tmp.path().join("rclone.conf");
    std::fs::write(&config, b"").unwrap();
    let rclone = |vendor: &str, args: &[&str]| {
        let mut cmd = Command::new("rclone");
        cmd.args(args)
            .args(["--webdav-url", &s.base(), "--webdav-vendor", vendor])
            .args(["--low-level-retries", "1", "--retries", "1", "--config"])
            .arg(&config);
        run(&mut cmd)
    };
    let src_s = src.to_str().unwrap();
    rclone("other", &["copy", src_s, ":webdav:d"]);
    same_tree(&src, &root.join("d"));

    let out = rclone("other", &["lsf", "-R", ":webdav:d"]);
    let mut listed: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    listed.sort();
    let mut want: Vec<String> = FILES.iter().map(|(n, _)| n.to_string()).collect();
    want.push("sub/".into());
    want.sort();
    assert_eq!(listed, want);

    // A change and a deletion, synced.
    std::fs::write(src.join("plain.txt"), b"changed, and longer").unwrap();
    std::fs::remove_file(src.join("empty")).unwrap();
    rclone("other", &["sync", src_s, ":webdav:d"]);
    same_tree(&src, &root.join("d"));

    // Back down, byte-identical.
    let back = tmp.path().join("back");
    rclone("other", &["copy", ":webdav:d", back.to_str().unwrap()]);
    same_tree(&src, &back);

    // moveto renames on the server (MOVE), no copy left behind.
    rclone(
        "other",
        &[
            "moveto",
            ":webdav:d/sub/inner file.bin",
            ":webdav:d/moved ✓.bin",
        ],
    );
    assert!(!root.join("d/sub/inner file.bin").exists());
    assert_eq!(
        std::fs::read(root.join("d/moved ✓.bin")).unwrap(),
        content("sub/inner file.bin", 300_000)
    );

    // The ownCloud flavour sends X-OC-Mtime: the file keeps its mtime.
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(981_173_106);
    let f = std::fs::File::options()
        .write(true)
        .open(src.join("plain.txt"))
        .unwrap();
    f.set_modified(old).unwrap();
    drop(f);
    rclone("owncloud", &["copy", src_s, ":webdav:oc"]);
    let got = std::fs::metadata(root.join("oc/plain.txt"))
        .unwrap()
        .modified()
        .unwrap();
    // rclone's webdav precision is a second.
    let secs = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(secs(got), secs(old));
}

#[test]
fn cadaver_scripted_session() {
    if !have("cadaver", "--version", true) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("d")).unwrap();
    let up = tmp.path().join("up.txt");
    std::fs::write(&up, b"hello cadaver\n").unwrap();
    let got = tmp.path().join("got.txt");
    let s = Serve::start(&root, &[]);
    let script = format!(
        "mkcol newdir\nput {up} newdir/up.txt\nls newdir\ncopy newdir/up.txt newdir/copy.txt\n\
         move newdir/copy.txt newdir/moved.txt\npropset newdir/up.txt colour red\n\
         propget newdir/up.txt colour\nlock newdir/up.txt\ndiscover newdir/up.txt\n\
         unlock newdir/up.txt\nget newdir/moved.txt {got}\ndelete newdir/up.txt\nls\nquit\n",
        up = up.display(),
        got = got.display()
    );
    let mut child = Command::new("timeout")
        .args(["60", "cadaver", "-t"])
        .arg(format!("{}/d/", s.base()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cadaver");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // cadaver says "succeeded" per command and "not WebDAV-enabled" or
    // "failed" when the server lets it down.
    assert!(
        !text.contains("failed") && !text.contains("not WebDAV"),
        "{text}"
    );
    assert!(text.matches("succeeded").count() >= 10, "{text}");
    assert!(text.contains("Value of colour is: red"), "{text}");
    assert!(text.contains("Scope: exclusive"), "{text}");
    assert_eq!(std::fs::read(&got).unwrap(), b"hello cadaver\n");
    assert!(root.join("d/newdir/moved.txt").is_file());
    assert!(!root.join("d/newdir/up.txt").exists());
}

#[test]
fn davfs2_mounts_where_fuse_is_allowed() {
    // davfs2 needs FUSE and the right to mount: present on few CI machines,
    // so its absence skips loudly even in CI.
    if !have("mount.davfs", "-V", false) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("served.txt"), b"from the server").unwrap();
    let s = Serve::start(&root, &[]);
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let conf = tmp.path().join("davfs2.conf");
    // No locks kept across runs, no cache to wait for.
    std::fs::write(&conf, b"use_locks 0\ndelay_upload 0\n").unwrap();
    let mut mount = Command::new("timeout");
    mount
        .args(["30", "mount", "-t", "davfs", "-o"])
        .arg(format!("conf={},username=", conf.display()))
        .arg(format!("{}/", s.base()))
        .arg(&mnt)
        .stdin(Stdio::piped());
    let mounted = mount
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            // Empty user name and password at the prompts.
            let _ = c.stdin.take().unwrap().write_all(b"\n\n");
            c.wait_with_output()
        })
        .is_ok_and(|o| o.status.success());
    if !mounted {
        eprintln!("\n!!!!!! SKIPPED: davfs2 could not mount here (FUSE or mount rights) !!!!!!\n");
        return;
    }
    let result = std::panic::catch_unwind(|| {
        assert_eq!(
            std::fs::read(mnt.join("served.txt")).unwrap(),
            b"from the server"
        );
        std::fs::write(mnt.join("written.txt"), b"through the mount").unwrap();
        std::fs::create_dir(mnt.join("folder")).unwrap();
    });
    let _ = Command::new("umount").arg(&mnt).status();
    result.unwrap();
    // umount flushes davfs2's cache to the server.
    assert_eq!(
        std::fs::read(root.join("written.txt")).unwrap(),
        b"through the mount"
    );
    assert!(root.join("folder").is_dir());
}

/// A WebDAV DELETE takes a folder with everything in it; `wirespeed rm`
/// without `-r` must still refuse a folder that is not empty.
#[test]
fn wirespeed_rm_without_r_keeps_a_full_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("full/sub")).unwrap();
    std::fs::write(root.join("full/sub/kept.txt"), b"kept").unwrap();
    std::fs::create_dir(root.join("empty")).unwrap();
    let s = Serve::start(&root, &[]);
    let (code, _, err) = common::run_client(&["rm", &format!("{}/full/", s.base())]);
    assert_ne!(code, Some(0));
    assert!(err.contains("409"), "{err}");
    assert_eq!(
        std::fs::read(root.join("full/sub/kept.txt")).unwrap(),
        b"kept"
    );
    let (code, _, err) = common::run_client(&["rm", &format!("{}/empty/", s.base())]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!root.join("empty").exists());
    let (code, _, err) = common::run_client(&["rm", "-r", &format!("{}/full/", s.base())]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!root.join("full").exists());
}
