//! `serve --storage s3://…` against a real MinIO: the client's put/get
//! round trip lands below the prefix in the bucket, and a start-up against
//! a missing bucket, wrong credentials or a dead endpoint exits 1 saying
//! which. Skipped loudly without MinIO outside CI (see `testkit::minio`).

mod common;

use std::process::{Command, Stdio};

use common::{Serve, BIN};
use wirespeed_testkit::minio::{Minio, PASSWORD, USER};

fn serve_s3(endpoint: &str, dir: &std::path::Path, url: &str, secret: &str) -> Command {
    let mut cmd = Serve::command(dir);
    cmd.args(["--listen", "127.0.0.1:0", "--storage", url])
        .args(["--s3-endpoint", endpoint, "--s3-region", "us-east-1"])
        .env("AWS_ACCESS_KEY_ID", USER)
        .env("AWS_SECRET_ACCESS_KEY", secret);
    cmd
}

#[test]
fn serve_on_s3_round_trips_files_through_the_bucket() {
    let Some(m) = Minio::start() else { return };
    m.create_bucket("cli");
    let tmp = tempfile::tempdir().unwrap();
    let unused = tmp.path().join("not-created");
    let s = Serve::spawn(
        serve_s3(&m.endpoint(), &unused, "s3://cli/team", PASSWORD),
        0,
    );
    let src = tmp.path().join("report.bin");
    let data = wirespeed_testkit::bytes(10 << 20, 5);
    std::fs::write(&src, &data).unwrap();
    let url = format!("{}/docs/report.bin", s.base());
    let put = Command::new(BIN)
        .args(["put"])
        .arg(&src)
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    assert_eq!(m.keys("cli"), ["team/docs/report.bin"]);
    let back = tmp.path().join("back.bin");
    let get = Command::new(BIN)
        .args(["get", &url, "-o"])
        .arg(&back)
        .output()
        .unwrap();
    assert!(
        get.status.success(),
        "{}",
        String::from_utf8_lossy(&get.stderr)
    );
    assert!(
        std::fs::read(&back).unwrap() == data,
        "downloaded bytes differ"
    );
    let ls = Command::new(BIN)
        .args(["ls", &format!("{}/docs/", s.base())])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&ls.stdout).contains("report.bin"));
    // The folder argument is not used (nor created) with --storage.
    assert!(!unused.exists());
}

#[test]
fn serve_on_s3_fails_fast_saying_why() {
    let Some(m) = Minio::start() else { return };
    m.create_bucket("there");
    let tmp = tempfile::tempdir().unwrap();
    let dead_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = dead_listener.local_addr().unwrap();
    let cases = [
        (
            "s3://missing-bucket",
            PASSWORD,
            m.endpoint(),
            "bucket does not exist",
        ),
        ("s3://there", "wrong-secret", m.endpoint(), "credentials"),
        (
            "s3://there",
            PASSWORD,
            format!("http://{dead}"),
            "cannot be reached",
        ),
    ];
    drop(dead_listener);
    for (url, secret, endpoint, why) in cases {
        let mut cmd = serve_s3(&endpoint, tmp.path(), url, secret);
        let out = cmd.stdin(Stdio::null()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{url}: {err}");
        assert!(err.contains(why), "{url}: {err}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("listening"),
            "{url}"
        );
    }
}

/// The server's peak resident memory (VmHWM), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

#[test]
fn a_big_upload_through_s3_keeps_the_server_small() {
    use std::io::{Read, Write};
    let Some(m) = Minio::start() else { return };
    m.create_bucket("mem");
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::spawn(serve_s3(&m.endpoint(), tmp.path(), "s3://mem", PASSWORD), 0);
    // 512 MiB streamed in 1 MiB writes: 64 parts of 8 MiB, memory-bounded by
    // the parts in flight, never the object (bench/s3.sh does 4 GiB).
    let total: usize = 512 << 20;
    let chunk = wirespeed_testkit::bytes(1 << 20, 8);
    let mut c = std::net::TcpStream::connect(s.addr).unwrap();
    let head = format!(
        "PUT /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {total}\r\n\r\n"
    );
    c.write_all(head.as_bytes()).unwrap();
    for _ in 0..total >> 20 {
        c.write_all(&chunk).unwrap();
    }
    let mut answer = Vec::new();
    c.read_to_end(&mut answer).unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 201"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    let (status, head, _) = s.req("HEAD", "/big.bin", &[], b"");
    assert_eq!(status, 200);
    assert!(head.contains(&format!("content-length: {total}")), "{head}");
    let peak = peak_rss_kib(s.child.id());
    assert!(peak < 100 << 10, "server peak RSS {} MiB", peak >> 10);
}

/// tus on `serve --storage s3://…`: an upload begun, the server killed
/// (SIGKILL) after an acknowledged append, a new server on the same bucket
/// reports the offset and the rest completes the file byte-identical; no
/// multipart upload or hidden object stays in the bucket.
#[test]
fn serve_on_s3_resumes_an_upload_after_a_crash() {
    let Some(m) = Minio::start() else { return };
    m.create_bucket("tus");
    let tmp = tempfile::tempdir().unwrap();
    let unused = tmp.path().join("not-created");
    let start = || Serve::spawn(serve_s3(&m.endpoint(), &unused, "s3://tus/up", PASSWORD), 0);
    let data = wirespeed_testkit::bytes((10 << 20) + 99, 8);
    let len = format!("Upload-Length: {}", data.len());
    let mut first = start();
    let (status, head, _) = first.req(
        "POST",
        "/-/uploads/in/big.bin",
        &["Tus-Resumable: 1.0.0", &len],
        b"",
    );
    assert_eq!(status, 201, "{head}");
    let loc = head
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap()
        .to_string();
    let half = (5 << 20) + 17;
    let patch = |s: &Serve, from: usize, to: usize| {
        let off = format!("Upload-Offset: {from}");
        s.req(
            "PATCH",
            &loc,
            &[
                "Tus-Resumable: 1.0.0",
                "Content-Type: application/offset+octet-stream",
                &off,
            ],
            &data[from..to],
        )
    };
    let (status, head, _) = patch(&first, 0, half);
    assert_eq!(status, 204, "{head}");
    first.kill9();
    let second = start();
    let (status, head, _) = second.req("HEAD", &loc, &["Tus-Resumable: 1.0.0"], b"");
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains(&format!("upload-offset: {half}\r\n")),
        "{head}"
    );
    let (status, _, _) = second.req("GET", "/in/big.bin", &[], b"");
    assert_eq!(status, 404, "not visible before the last byte");
    let (status, head, _) = patch(&second, half, data.len());
    assert_eq!(status, 204, "{head}");
    let (status, _, body) = second.req("GET", "/in/big.bin", &[], b"");
    assert_eq!(status, 200);
    assert!(body == data, "the file differs");
    assert_eq!(m.keys("tus"), ["up/in/big.bin"]);
    assert!(m.multipart_uploads("tus").is_empty());
}

/// tus-js-client's `parallelUploads: 4` into a bucket: four partial
/// uploads, joined by the final one inside the bucket (server-side part
/// copies), byte-identical, nothing left behind.
#[test]
fn tus_js_client_parallel_uploads_into_s3() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let modules = std::env::var_os("WIRESPEED_INTEROP_NODE_MODULES")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("../../target/interop/node_modules"));
    if !modules.join("tus-js-client").exists()
        || Command::new("node").arg("--version").output().is_err()
    {
        return wirespeed_testkit::tools::missing::<()>("node and tus-js-client (target/interop)")
            .unwrap_or(());
    }
    let Some(m) = Minio::start() else { return };
    m.create_bucket("tusjs");
    let tmp = tempfile::tempdir().unwrap();
    let unused = tmp.path().join("not-created");
    let s = Serve::spawn(
        serve_s3(&m.endpoint(), &unused, "s3://tusjs/p", PASSWORD),
        0,
    );
    let data = wirespeed_testkit::bytes(24 << 20, 66);
    let source = tmp.path().join("source.bin");
    std::fs::write(&source, &data).unwrap();
    let out = Command::new("node")
        .arg(root.join("tests/interop/tus_js_upload.cjs"))
        .arg(format!("{}/-/uploads/js/", s.base()))
        .arg(&source)
        .arg("4")
        .env("WIRESPEED_NODE_MODULES", &modules)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "node failed: {stdout}\n{stderr}");
    let got = tmp.path().join("got.bin");
    let url = format!("{}/js/source.bin", s.base());
    let get = Command::new(BIN)
        .args(["get", &url, "-o"])
        .arg(&got)
        .output()
        .unwrap();
    assert!(
        get.status.success(),
        "{}",
        String::from_utf8_lossy(&get.stderr)
    );
    assert!(std::fs::read(&got).unwrap() == data, "byte-identical");
    assert_eq!(m.keys("tusjs"), ["p/js/source.bin"]);
    assert!(m.multipart_uploads("tusjs").is_empty());
}
