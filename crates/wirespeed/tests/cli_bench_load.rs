//! `wirespeed bench load` as a user runs it: against `wirespeed serve` in
//! another process, then against a stored object changed on disk.

use std::process::{Command, Stdio};
use std::time::Duration;

use wirespeed_load::gen::Content;
use wirespeed_load::SizeRange;

mod common;
use common::{Serve, BIN};

/// Run `bench load` with a time bound; (exit code, stdout, stderr).
fn load(args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(BIN)
        .args(["bench", "load"])
        .args(args)
        .env_remove("WIRESPEED_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("bench load did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn load_against_wirespeed_verifies_every_byte_and_stores_the_objects() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Serve::start(dir.path(), &[]);
    let url = format!("{}/load/", srv.base());
    let (code, out, err) = load(&[
        &url,
        "--requests",
        "200",
        "--connections",
        "8",
        "--size",
        "64KiB-1MiB",
        "--mix",
        "get=40,put=40,range=20",
        "--objects",
        "12",
        "--seed",
        "7",
        "--json",
    ]);
    assert_eq!(code, Some(0), "stderr: {err}\nstdout: {out}");
    let s = json(&out);
    assert_eq!(s["error_total"], 0, "{out}");
    assert_eq!(s["errors"]["corrupt_bytes"], 0);
    assert_eq!(s["requests"], 200);
    let kinds = s["kinds"].as_object().unwrap();
    let sum: u64 = kinds
        .values()
        .map(|k| k["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, 200);
    for k in ["get", "range"] {
        let k = &kinds[k];
        assert!(k["bytes_down"].as_u64().unwrap() > 0);
        assert_eq!(
            k["verified_bytes"], k["bytes_down"],
            "every byte read was checked"
        );
    }
    let totals = |field: &str| -> u64 { kinds.values().map(|k| k[field].as_u64().unwrap()).sum() };
    assert_eq!(s["bytes_down"].as_u64().unwrap(), totals("bytes_down"));
    assert_eq!(s["bytes_up"].as_u64().unwrap(), totals("bytes_up"));
    // The server stored exactly the generated objects, each once in setup.
    let sizes = SizeRange::new(64 << 10, 1 << 20).unwrap();
    let mut stored = 0u64;
    for id in 0..12u64 {
        let got = std::fs::read(dir.path().join(format!("load/load-7-{id}.bin"))).unwrap();
        assert_eq!(got.len() as u64, sizes.size_of(7, id));
        assert_eq!(Content::new(7, id).mismatches(0, &got), 0, "object {id}");
        stored += got.len() as u64;
    }
    assert_eq!(s["run"]["setup_objects"], 12);
    assert_eq!(s["run"]["setup_bytes"].as_u64().unwrap(), stored);
    assert!(s["peak_rss_kib"].as_u64().unwrap() > 0);
}

#[test]
fn an_object_changed_on_disk_is_reported_as_corrupt_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Serve::start(dir.path(), &[]);
    let url = format!("{}/c/", srv.base());
    let common = [
        url.as_str(),
        "--objects",
        "1",
        "--size",
        "100KiB",
        "--connections",
        "2",
    ];
    let (code, _, err) = load(&[&common[..], &["--mix", "put=1", "--requests", "1"]].concat());
    assert_eq!(code, Some(0), "{err}");
    let path = dir.path().join("c/load-1-0.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[54_321] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();

    let (code, out, err) = load(
        &[
            &common[..],
            &["--mix", "get=1", "--requests", "10", "--no-setup", "--json"],
        ]
        .concat(),
    );
    assert_eq!(code, Some(1), "stdout: {out}\nstderr: {err}");
    let s = json(&out);
    assert_eq!(s["errors"]["corrupt_responses"], 10);
    assert_eq!(s["errors"]["corrupt_bytes"], 10);
    assert!(err.contains("10 corrupt bytes"), "{err}");

    // Without --json: the table says it too.
    let (code, out, _) = load(
        &[
            &common[..],
            &["--mix", "get=1", "--requests", "2", "--no-setup"],
        ]
        .concat(),
    );
    assert_eq!(code, Some(1));
    assert!(out.contains("corrupt 2 responses / 2 bytes"), "{out}");
}

#[test]
fn refused_uploads_stop_the_setup_and_the_token_opens_them() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Serve::start(dir.path(), &["--token", "sekrit"]);
    let url = format!("{}/x/", srv.base());
    let args = [
        url.as_str(),
        "--requests",
        "5",
        "--size",
        "1K",
        "--objects",
        "3",
    ];
    let (code, out, err) = load(&args);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        err.contains("setup: PUT /x/load-1-") && err.contains("answered status 401"),
        "{err}"
    );
    let (code, out, err) = load(&[&args[..], &["--token", "sekrit"]].concat());
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(std::fs::read_dir(dir.path().join("x")).unwrap().count(), 3);
}
