//! `put --json` and `get --json` against a real `serve`: JSON Lines on
//! stdout (one line per file, the summary last), errors on stderr, the
//! exit status unchanged.

use std::path::Path;

use serde_json::Value;

mod common;
use common::{run_client, Serve};

/// Every stdout line parsed (each must be JSON): the file lines and the
/// summary, which must come last and alone.
fn lines(stdout: &str) -> (Vec<Value>, Value) {
    let mut all: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect();
    let summary = all.pop().expect("a summary line");
    assert_eq!(summary["type"], "summary", "{stdout}");
    assert!(all.iter().all(|l| l["type"] == "file"), "{stdout}");
    (all, summary)
}

/// The status of the file line whose path ends with `name`.
fn status_of<'a>(files: &'a [Value], name: &str) -> &'a str {
    files
        .iter()
        .find(|f| {
            f["path"].as_str().is_some_and(|p| p.ends_with(name))
                || f["url"].as_str().is_some_and(|u| u.ends_with(name))
        })
        .and_then(|f| f["status"].as_str())
        .unwrap_or_else(|| panic!("no line for {name}: {files:?}"))
}

fn tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.txt"), b"hello\n").unwrap();
    std::fs::write(dir.join("sub/b.bin"), vec![7u8; 100_000]).unwrap();
    std::os::unix::fs::symlink("/nonexistent/target", dir.join("dangling")).unwrap();
}

#[test]
fn put_and_get_say_each_file_and_a_summary_as_json_lines() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let src = tmp.path().join("d");
    tree(&src);
    let serve = Serve::start(&root, &[]);
    let up = format!("{}/up/", serve.base());

    let (code, out, err) = run_client(&["put", "--json", "-r", src.to_str().unwrap(), &up]);
    assert_eq!(code, Some(0), "{err}");
    let (files, sum) = lines(&out);
    assert_eq!(files.len(), 3, "{out}");
    assert_eq!(status_of(&files, "a.txt"), "sent");
    assert_eq!(status_of(&files, "b.bin"), "sent");
    assert_eq!(status_of(&files, "dangling"), "skipped");
    let b = files
        .iter()
        .find(|f| f["status"] == "sent" && f["bytes"] == 100_000);
    let b = b.unwrap_or_else(|| panic!("{out}"));
    assert_eq!(b["url"], format!("{up}d/sub/b.bin"));
    assert_eq!(b["verified"], true);
    assert_eq!(sum["sent"], 2);
    assert_eq!(sum["skipped"], 1);
    assert_eq!((&sum["failed"], &sum["unchanged"]), (&0.into(), &0.into()));
    assert_eq!(sum["files"], 3);
    assert_eq!(sum["bytes"], 100_006);
    assert!(sum["seconds"].as_f64().is_some_and(|s| s >= 0.0), "{sum}");
    // The human notes stay on stderr.
    assert!(err.contains("skipped"), "{err}");
    assert_eq!(
        std::fs::read(root.join("up/d/sub/b.bin")).unwrap().len(),
        100_000
    );

    // Again: nothing changed, nothing sent, each file said unchanged.
    let (code, out, err) = run_client(&["put", "--json", "-r", src.to_str().unwrap(), &up]);
    assert_eq!(code, Some(0), "{err}");
    let (files, sum) = lines(&out);
    assert_eq!(status_of(&files, "a.txt"), "unchanged");
    assert_eq!(status_of(&files, "b.bin"), "unchanged");
    assert_eq!(
        (sum["sent"].as_u64(), sum["unchanged"].as_u64()),
        (Some(0), Some(2))
    );

    // get -r: saved, then unchanged on the rerun.
    let dl = tmp.path().join("dl");
    let url = format!("{up}d/");
    for (want, saved, unchanged) in [("saved", 2, 0), ("unchanged", 0, 2)] {
        let (code, out, err) = run_client(&["get", "--json", "-r", &url, dl.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{err}");
        let (files, sum) = lines(&out);
        assert_eq!(status_of(&files, "sub/b.bin"), want, "{out}");
        assert_eq!(sum["saved"], saved, "{out}");
        assert_eq!(sum["unchanged"], unchanged, "{out}");
        assert_eq!(sum["files"], 2, "{out}");
    }
    assert_eq!(std::fs::read(dl.join("d/a.txt")).unwrap(), b"hello\n");

    // One file: its line and the summary.
    let one = tmp.path().join("one.txt");
    let (code, out, err) = run_client(&[
        "get",
        "--json",
        &format!("{up}d/a.txt"),
        "-o",
        one.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (files, sum) = lines(&out);
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["path"], one.to_str().unwrap());
    assert_eq!(
        (files[0]["status"].as_str(), files[0]["bytes"].as_u64()),
        (Some("saved"), Some(6))
    );
    assert_eq!(sum["saved"], 1);
}

/// A failure is a line with its error and counted in the summary; the
/// error is on stderr too and the exit status is 1, as without --json.
#[test]
fn failures_are_lines_too_and_the_exit_status_is_unchanged() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("here.txt"), b"here").unwrap();
    let serve = Serve::start(&root, &[]);
    let base = serve.base();

    let missing = tmp.path().join("missing.txt");
    let (code, out, err) = run_client(&[
        "get",
        "--json",
        &format!("{base}/nope.txt"),
        "-o",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("404"), "{err}");
    let (files, sum) = lines(&out);
    assert_eq!(files[0]["status"], "failed");
    assert!(
        files[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("404")),
        "{out}"
    );
    assert_eq!(
        (sum["failed"].as_u64(), sum["saved"].as_u64()),
        (Some(1), Some(0))
    );

    let real = tmp.path().join("real.txt");
    std::fs::write(&real, b"real").unwrap();
    let gone = tmp.path().join("gone.txt");
    let (code, out, err) = run_client(&[
        "put",
        "--json",
        real.to_str().unwrap(),
        gone.to_str().unwrap(),
        &format!("{base}/in/"),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("gone.txt"), "{err}");
    let (files, sum) = lines(&out);
    assert_eq!(status_of(&files, "real.txt"), "sent");
    assert_eq!(status_of(&files, "gone.txt"), "failed");
    assert_eq!(
        (sum["sent"].as_u64(), sum["failed"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(std::fs::read(root.join("in/real.txt")).unwrap(), b"real");

    // -n keeps the existing file: said `exists`, exit 0.
    let (code, out, err) = run_client(&[
        "put",
        "--json",
        "-n",
        real.to_str().unwrap(),
        &format!("{base}/in/"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (files, sum) = lines(&out);
    assert_eq!(status_of(&files, "real.txt"), "exists");
    assert_eq!(sum["exists"], 1);

    // stdout is the file with -o -: no room for JSON.
    let (code, _, err) = run_client(&["get", "--json", &format!("{base}/here.txt"), "-o", "-"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--json"), "{err}");
}
