//! Other people's tools reading `serve`'s folder listings, as a user runs
//! them: rclone's http backend (`lsf`, `copy`), `wget -r -np` and lftp.
//! Outside CI a missing tool skips its check with a loud message; with
//! `CI=true` it fails (`.ci/run` installs all three).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{files_below, run_bounded as run, Serve};

/// The tree every check reads: names with spaces, Unicode and HTML
/// characters, a sub-folder, an empty file.
const FILES: [(&str, usize); 6] = [
    ("plain.txt", 5),
    ("name with spaces.txt", 3000),
    ("ünïcødé ✓.txt", 70_000),
    ("a&b <c>.bin", 1),
    ("empty", 0),
    ("sub/inner file.bin", 200_000),
];

fn content(name: &str, len: usize) -> Vec<u8> {
    let seed = name
        .bytes()
        .fold(7u8, |a, b| a.wrapping_mul(31).wrapping_add(b));
    (0..len)
        .map(|i| seed.wrapping_add((i % 251) as u8))
        .collect()
}

fn tree(root: &Path) -> PathBuf {
    let docs = root.join("docs");
    for (name, len) in FILES {
        let p = docs.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content(name, len)).unwrap();
    }
    docs
}

/// Whether `tool` can run; if not, skip (loudly) or, in CI, fail.
fn have(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{tool} is needed in CI (bash .ci/run installs it)");
        }
        eprintln!("\n!!!!!! SKIPPED: {tool} not found; bash .ci/run installs it !!!!!!\n");
    }
    ok
}

fn serve(root: &Path) -> Serve {
    Serve::start(root, &["--log-format", "json"])
}

#[test]
fn rclone_lists_and_copies_every_entry() {
    if !have("rclone") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    tree(&root);
    let s = serve(&root);
    let url = format!("{}/docs/", s.base());
    let config = tmp.path().join("rclone.conf");
    std::fs::write(&config, b"").unwrap();
    let rclone = |args: &[&str]| {
        let mut cmd = Command::new("rclone");
        cmd.args(args)
            .args(["--http-url", &url, "--config"])
            .arg(&config);
        run(&mut cmd)
    };
    let out = rclone(&["lsf", "-R", ":http:"]);
    let mut listed: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    listed.sort();
    let mut want: Vec<String> = FILES.iter().map(|(n, _)| n.to_string()).collect();
    want.push("sub/".into());
    want.sort();
    assert_eq!(listed, want, "rclone lsf -R sees every entry");

    let dest = tmp.path().join("copy");
    let mut cmd = Command::new("rclone");
    cmd.args(["copy", ":http:"])
        .arg(&dest)
        .args(["--http-url", &url, "--config"])
        .arg(&config);
    run(&mut cmd);
    for (name, len) in FILES {
        let got = std::fs::read(dest.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            got == content(name, len),
            "{name} differs after rclone copy"
        );
    }
}

#[test]
fn wget_mirrors_without_stray_files() {
    if !have("wget") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    tree(&root);
    let s = serve(&root);
    let out_dir = tmp.path().join("mirror");
    std::fs::create_dir(&out_dir).unwrap();
    run(Command::new("wget")
        .args(["-q", "-r", "-np", "-nH", "-e", "robots=off"])
        .arg(format!("{}/docs/", s.base()))
        .current_dir(&out_dir));
    let mut saved: Vec<String> = files_below(&out_dir)
        .iter()
        .map(|rel| rel.to_string_lossy().into_owned())
        .collect();
    saved.sort();
    let mut want: Vec<String> = FILES.iter().map(|(n, _)| format!("docs/{n}")).collect();
    want.extend(["docs/index.html".into(), "docs/sub/index.html".into()]);
    want.sort();
    assert_eq!(
        saved, want,
        "wget -r -np saves the files and one index per folder"
    );
    for (name, len) in FILES {
        let got = std::fs::read(out_dir.join("docs").join(name)).unwrap();
        assert!(got == content(name, len), "{name} differs after wget");
    }
}

#[test]
fn lftp_reads_sizes_and_dates_without_a_head_per_file() {
    if !have("lftp") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let docs = tree(&root);
    // A known modification time, to see it come back.
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    std::fs::File::options()
        .write(true)
        .open(docs.join("plain.txt"))
        .unwrap()
        .set_modified(when)
        .unwrap();
    let s = serve(&root);
    let out = run(Command::new("lftp")
        .arg("-c")
        .arg(format!(
            "open {}/docs/; cls -l --time-style=+%Y-%m-%dT%H:%M:%S",
            s.base()
        ))
        .env("TZ", "UTC"));
    let text = String::from_utf8(out.stdout).unwrap();
    for (name, len) in FILES.iter().filter(|(n, _)| !n.contains('/')) {
        let line = text
            .lines()
            .find(|l| l.ends_with(name))
            .unwrap_or_else(|| panic!("{name} not in lftp's listing:\n{text}"));
        assert!(
            line.split_whitespace().any(|w| w == len.to_string()),
            "{name}: size {len} not in {line:?}"
        );
    }
    let plain = text.lines().find(|l| l.ends_with("plain.txt")).unwrap();
    assert!(plain.contains("2023-11-14T22:13:20"), "{plain}");
    assert!(
        text.lines()
            .any(|l| l.starts_with('d') && l.contains("sub")),
        "{text}"
    );
    // The listing carried it all: no HEAD for any file.
    let log = s.stop();
    let heads: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"method\":\"HEAD\"") && !l.contains("/\""))
        .collect();
    assert!(
        log.contains("\"method\":\"GET\""),
        "the access log is on: {log}"
    );
    assert!(heads.is_empty(), "lftp sent HEADs per file: {heads:#?}");
}
