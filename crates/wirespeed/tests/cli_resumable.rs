//! Resumable uploads through the built binary: expiry swept by `serve`'s
//! periodic task, `kill -9` mid-upload then resume from what reached the
//! disk, and clients nobody here wrote (tus-js-client on Node, tuspy on
//! Python) through a proxy that cuts the connection once.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::Serve;
use wirespeed_testkit::proxy::CuttingProxy;

const TUS: &str = "Tus-Resumable: 1.0.0";
const OCTETS: &str = "Content-Type: application/offset+octet-stream";

fn header(head: &str, name: &str) -> Option<String> {
    let prefix = format!("{}: ", name.to_ascii_lowercase());
    head.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .map(|v| v.trim().to_string())
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn part_file(dir: &Path, loc: &str) -> PathBuf {
    dir.join(".wirespeed-uploads")
        .join(format!("{}.part", loc.trim_start_matches("/-/uploads/")))
}

fn tus_create(srv: &Serve, path: &str, length: usize) -> String {
    let len = format!("Upload-Length: {length}");
    let (status, head, body) = srv.req("POST", path, &[TUS, &len], b"");
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    header(&head, "location").unwrap()
}

#[test]
fn size_limit_and_expired_uploads_swept_then_unknown() {
    let dir = tempfile::tempdir().unwrap();
    // Leftovers no upload can use: data without a record, a garbled record.
    let uploads = dir.path().join(".wirespeed-uploads");
    std::fs::create_dir(&uploads).unwrap();
    let stray = uploads.join("0123456789abcdef0123456789abcdef.part");
    let garbled = uploads.join("fedcba9876543210fedcba9876543210.json");
    std::fs::write(&stray, b"orphan").unwrap();
    std::fs::write(&garbled, b"{not json").unwrap();
    let srv = Serve::start(
        dir.path(),
        &["--upload-expiry", "1", "--upload-max-size", "1K"],
    );
    // --upload-max-size: 413 before any byte, both protocols.
    let (status, head, _) = srv.req("POST", "/-/uploads/big", &[TUS, "Upload-Length: 1025"], b"");
    assert_eq!(
        (status, header(&head, "tus-max-size")),
        (413, Some("1024".into()))
    );
    let ietf = ["Upload-Draft-Interop-Version: 8", "Upload-Complete: ?1"];
    let (status, _, _) = srv.req("PUT", "/big", &ietf, &[0u8; 1025]);
    assert_eq!(status, 413);
    assert!(!dir.path().join("big").exists());
    let loc = tus_create(&srv, "/-/uploads/old.bin", 10);
    let off = "Upload-Offset: 0";
    let (status, _, _) = srv.req("PATCH", &loc, &[TUS, OCTETS, off], b"12345");
    assert!(status == 204 || status == 404, "{status}");
    let part = part_file(dir.path(), &loc);
    wait_for(
        "the sweep to remove the upload",
        Duration::from_secs(15),
        || !part.exists() && !stray.exists() && !garbled.exists(),
    );
    let names: Vec<_> = std::fs::read_dir(dir.path().join(".wirespeed-uploads"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(names.is_empty(), "data and record removed: {names:?}");
    let (status, _, _) = srv.req("HEAD", &loc, &[TUS], b"");
    assert_eq!(status, 404);
    assert!(!dir.path().join("old.bin").exists());
}

/// `serve` with fsync on (the default), as an operator runs it.
fn serve_durable(dir: &Path) -> Serve {
    let mut cmd = Serve::command(dir);
    cmd.args(["--listen", "127.0.0.1:0"]);
    Serve::spawn(cmd, 0)
}

#[test]
fn kill9_mid_append_then_resume_from_the_durable_offset() {
    let dir = tempfile::tempdir().unwrap();
    let data = wirespeed_testkit::bytes(8 << 20, 42);
    let mut srv = serve_durable(dir.path());
    let loc = tus_create(&srv, "/-/uploads/crash/big.bin", data.len());
    // One acknowledged append.
    let acked = 2 << 20;
    let (status, head, _) = srv.req(
        "PATCH",
        &loc,
        &[TUS, OCTETS, "Upload-Offset: 0"],
        &data[..acked],
    );
    assert_eq!(
        (status, header(&head, "upload-offset")),
        (204, Some(acked.to_string()))
    );
    // A second append is cut by kill -9 after 3 MiB of its 6 MiB arrived.
    let mut c = TcpStream::connect(srv.addr).unwrap();
    let head = format!(
        "PATCH {loc} HTTP/1.1\r\nHost: localhost\r\n{TUS}\r\n{OCTETS}\r\nUpload-Offset: {acked}\r\nContent-Length: {}\r\n\r\n",
        data.len() - acked
    );
    c.write_all(head.as_bytes()).unwrap();
    let sent = 3 << 20;
    c.write_all(&data[acked..acked + sent]).unwrap();
    let part = part_file(dir.path(), &loc);
    wait_for(
        "bytes of the second append on disk",
        Duration::from_secs(20),
        || std::fs::metadata(&part).is_ok_and(|m| m.len() > acked as u64),
    );
    srv.kill9();
    drop(c);
    assert!(
        !dir.path().join("crash/big.bin").exists(),
        "no partial under the final name"
    );

    let srv = serve_durable(dir.path());
    let (status, head, _) = srv.req("HEAD", &loc, &[TUS], b"");
    assert_eq!(status, 200, "{head}");
    let offset: usize = header(&head, "upload-offset").unwrap().parse().unwrap();
    assert!(offset >= acked && offset <= acked + sent, "offset {offset}");
    assert_eq!(header(&head, "upload-length"), Some(data.len().to_string()));
    let off = format!("Upload-Offset: {offset}");
    let (status, head, _) = srv.req("PATCH", &loc, &[TUS, OCTETS, &off], &data[offset..]);
    assert_eq!(
        (status, header(&head, "upload-offset")),
        (204, Some(data.len().to_string()))
    );
    assert!(
        std::fs::read(dir.path().join("crash/big.bin")).unwrap() == data,
        "byte-identical"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path().join(".wirespeed-uploads"))
        .unwrap()
        .collect();
    assert!(
        left.is_empty(),
        "the partial upload is gone after completion"
    );
}

// ---- interop ----------------------------------------------------------------

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips (loudly) outside CI when a peer is missing; fails in CI.
fn missing(what: &str) {
    assert!(
        !in_ci(),
        "{what} is missing, and CI must run this interop test (.ci/run installs it)"
    );
    eprintln!("\n!!! SKIPPED: {what} is missing; `bash .ci/run` installs it !!!\n");
}

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

/// Where `.ci/run` installs tus-js-client: `target/interop/node_modules`.
fn node_modules() -> PathBuf {
    std::env::var_os("WIRESPEED_INTEROP_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/interop/node_modules")
        })
}

fn interop_file(dir: &Path, len: usize) -> (PathBuf, Vec<u8>) {
    let data = wirespeed_testkit::bytes(len, 64);
    let path = dir.join("source.bin");
    std::fs::write(&path, &data).unwrap();
    (path, data)
}

#[test]
fn tus_js_client_uploads_64_mib_through_a_cut() {
    let modules = node_modules();
    if Command::new("node").arg("--version").output().is_err() {
        return missing("node");
    }
    if !modules.join("tus-js-client").exists() {
        return missing(&format!("tus-js-client in {}", modules.display()));
    }
    let served = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (source, data) = interop_file(work.path(), 64 << 20);
    let srv = Serve::start(served.path(), &[]);
    let proxy = CuttingProxy::start(srv.addr);
    proxy.cut_upstream_once(20 << 20);
    let out = Command::new("node")
        .arg(interop_dir().join("tus_js_upload.cjs"))
        .arg(format!("http://{}/-/uploads/js/", proxy.addr))
        .arg(&source)
        .env("WIRESPEED_NODE_MODULES", &modules)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "node failed: {stdout}\n{stderr}");
    assert_eq!(proxy.cuts(), 1, "the proxy cut a connection");
    assert!(
        stdout.contains("retry after error"),
        "the client resumed: {stdout}"
    );
    let stored = std::fs::read(served.path().join("js/source.bin")).unwrap();
    assert!(
        stored == data,
        "byte-identical ({} of {} bytes)",
        stored.len(),
        data.len()
    );
}

/// tus-js-client's `parallelUploads: 4` under `--path-prefix`: four
/// partial uploads of a quarter each, cut mid-way and resumed each on its
/// own, then the final upload (absolute URLs) joins them.
#[test]
fn tus_js_client_parallel_uploads_through_a_cut() {
    let modules = node_modules();
    if Command::new("node").arg("--version").output().is_err() {
        return missing("node");
    }
    if !modules.join("tus-js-client").exists() {
        return missing(&format!("tus-js-client in {}", modules.display()));
    }
    let served = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (source, data) = interop_file(work.path(), 24 << 20);
    let srv = Serve::start(served.path(), &["--path-prefix", "/files"]);
    let proxy = CuttingProxy::start(srv.addr);
    proxy.cut_upstream_once(3 << 20);
    let out = Command::new("node")
        .arg(interop_dir().join("tus_js_upload.cjs"))
        .arg(format!("http://{}/files/-/uploads/js/", proxy.addr))
        .arg(&source)
        .arg("4")
        .env("WIRESPEED_NODE_MODULES", &modules)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "node failed: {stdout}\n{stderr}");
    // Each partial's connection is cut once, mid-way, and resumes alone.
    assert!(proxy.cuts() >= 1, "the proxy cut connections");
    assert!(stdout.contains("retry after error"), "resumed: {stdout}");
    let stored = std::fs::read(served.path().join("js/source.bin")).unwrap();
    assert!(
        stored == data,
        "byte-identical ({} of {} bytes)",
        stored.len(),
        data.len()
    );
    let left: Vec<_> = std::fs::read_dir(served.path().join(".wirespeed-uploads"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "the partial uploads were consumed");
}

#[test]
fn tuspy_uploads_in_several_patches_through_a_cut() {
    let probe = Command::new("python3")
        .args(["-c", "import tusclient"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return missing("python3 with tuspy (import tusclient)");
    }
    let served = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (source, data) = interop_file(work.path(), 12 << 20);
    let srv = Serve::start(served.path(), &["--token", "sesame"]);
    let proxy = CuttingProxy::start(srv.addr);
    proxy.cut_upstream_once(1 << 20);
    let out = Command::new("python3")
        .arg(interop_dir().join("tuspy_upload.py"))
        .arg(format!("http://{}/-/uploads/py/", proxy.addr))
        .arg(&source)
        .arg("sesame")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tuspy failed: {stdout}\n{stderr}");
    assert_eq!(proxy.cuts(), 1, "the proxy cut a connection");
    let patches: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("patches: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(patches >= 3, "several PATCHes: {stdout}");
    let stored = std::fs::read(served.path().join("py/source.bin")).unwrap();
    assert!(
        stored == data,
        "byte-identical ({} of {} bytes)",
        stored.len(),
        data.len()
    );
}

/// A script using tuspy killed (SIGKILL) in the middle of an upload and
/// run again the moment it dies resumes: its HEAD waits until the killed
/// request's append has been counted, so the PATCH at the offset it
/// reports is taken (it was refused with 409 when the killed append was
/// counted between the two). The rerun is loaded beforehand so that it
/// starts at once; repeated, as the kill lands at a different moment each
/// time.
#[test]
fn tuspy_killed_and_rerun_at_once_resumes_every_time() {
    use std::io::Write as _;
    use std::process::Stdio;
    let probe = Command::new("python3")
        .args(["-c", "import tusclient"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return missing("python3 with tuspy (import tusclient)");
    }
    let served = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (source, data) = interop_file(work.path(), 64 << 20);
    let mut cmd = Serve::command(served.path());
    cmd.args(["--listen", "127.0.0.1:0", "--token", "sesame"]);
    let srv = Serve::spawn(cmd, 0);
    let endpoint = format!("{}/-/uploads/py/", srv.base());
    let script = interop_dir().join("tuspy_resume.py");
    let target = served.path().join("py/resumed.bin");
    let uploads = served.path().join(".wirespeed-uploads");
    let received = || -> u64 {
        std::fs::read_dir(&uploads)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".part"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    let tuspy = |storage: &Path| {
        let mut c = Command::new("timeout");
        c.args(["120", "python3"])
            .arg(&script)
            .args([&endpoint, source.to_str().unwrap(), "sesame"])
            .arg(storage);
        c
    };
    for round in 0..8 {
        let _ = std::fs::remove_file(&target);
        let storage = work.path().join(format!("urls-{round}.json"));
        let mut rerun = tuspy(&storage)
            .arg("--wait")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Not under timeout(1): the kill must reach python itself.
        let mut first = Command::new("python3")
            .arg(&script)
            .args([&endpoint, source.to_str().unwrap(), "sesame"])
            .arg(&storage)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Killed once the server holds some of its bytes: its one PATCH
        // is then running, with more on the way.
        let until = Instant::now() + Duration::from_secs(60);
        while received() < (1 << 20) && !target.exists() {
            assert!(Instant::now() < until, "round {round}: no bytes arrived");
            std::thread::sleep(Duration::from_millis(2));
        }
        first.kill().unwrap();
        first.wait().unwrap();
        rerun.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let out = rerun.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains("done"),
            "round {round}: the rerun failed: {stdout}\n{stderr}"
        );
        let stored = std::fs::read(&target).unwrap();
        assert!(stored == data, "round {round}: byte-identical");
    }
}
