//! A real MinIO server on 127.0.0.1 for the S3 backend's tests: started on a
//! free port over a temp dir with fixed root credentials, ready once
//! `/minio/health/live` answers, killed on drop. Buckets are made and
//! inspected with boto3 (an independent S3 client).
//!
//! The binary is `$WIRESPEED_MINIO`, else `target/minio/minio` (what
//! `.ci/run` builds with `go install`). Absent: [`Minio::start`] returns
//! `None` after a loud message, unless `CI=true`, where it panics.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Root user of every test MinIO.
pub const USER: &str = "wirespeed-test";
/// Root password of every test MinIO.
pub const PASSWORD: &str = "wirespeed-test-secret";

/// A running MinIO (killed, its data removed, on drop).
pub struct Minio {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

/// Where the MinIO binary is expected.
pub fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("WIRESPEED_MINIO") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/minio/minio")
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().unwrap().port()
}

fn live(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req =
        format!("GET /minio/health/live HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out.starts_with(b"HTTP/1.1 200")
}

/// MinIO refuses every write (`XMinioStorageFull`) once its drive is 99%
/// full, measured against the drive's total size: on a big shared disk
/// with a few GiB left (a CI machine after a 15 GiB build) that trips
/// although the tests write a few MiB. So its data lives on tmpfs
/// (`/dev/shm`, where the host's disk does not count) when there is one
/// with 1 GiB free, else in the usual temp dir.
fn data_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    let roomy = free_bytes(shm).is_some_and(|free| free >= 1 << 30);
    if roomy {
        if let Ok(dir) = tempfile::Builder::new().prefix("minio-").tempdir_in(shm) {
            return dir;
        }
    }
    crate::fs::tempdir()
}

/// Free bytes on the filesystem holding `path`, from `df` (no libc
/// binding needed in the test kit).
fn free_bytes(path: &std::path::Path) -> Option<u64> {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(path)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

impl Minio {
    /// Start one, or `None` (with a loud message) where MinIO is absent
    /// outside CI.
    pub fn start() -> Option<Minio> {
        let bin = binary();
        if !bin.exists() {
            let msg = format!(
                "MinIO not found at {} (build it with `bash .ci/run`, or set WIRESPEED_MINIO)",
                bin.display()
            );
            return crate::tools::missing(&msg);
        }
        let dir = data_dir();
        for _ in 0..5 {
            let port = free_port();
            let console = free_port();
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let mut child = Command::new(&bin)
                .args(["server", "--quiet", "--address"])
                .arg(addr.to_string())
                .arg("--console-address")
                .arg(format!("127.0.0.1:{console}"))
                .arg(dir.path())
                .env("MINIO_ROOT_USER", USER)
                .env("MINIO_ROOT_PASSWORD", PASSWORD)
                .env("MINIO_BROWSER", "off")
                .env("MINIO_UPDATE", "off")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn minio");
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(30) {
                if live(addr) {
                    return Some(Minio {
                        child,
                        addr,
                        _dir: dir,
                    });
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break; // the port was taken meanwhile: try another
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("MinIO did not become live");
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Run a boto3 snippet with `s3` bound to a client of this MinIO;
    /// returns its stdout (panics on failure).
    pub fn boto3(&self, code: &str) -> String {
        let script = format!(
            "import boto3, botocore, json, sys\n\
             s3 = boto3.client('s3', endpoint_url='{}', aws_access_key_id='{USER}', \
             aws_secret_access_key='{PASSWORD}', region_name='us-east-1', \
             config=botocore.config.Config(s3={{'addressing_style': 'path'}}))\n{code}\n",
            self.endpoint()
        );
        let out = Command::new("python3")
            .arg("-c")
            .arg(&script)
            .output()
            .expect("python3 (with boto3) is needed for the S3 tests");
        assert!(
            out.status.success(),
            "boto3 failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Create `bucket`.
    pub fn create_bucket(&self, bucket: &str) {
        self.boto3(&format!("s3.create_bucket(Bucket='{bucket}')"));
    }

    /// Every key in `bucket` (all pages), sorted.
    pub fn keys(&self, bucket: &str) -> Vec<String> {
        let out = self.boto3(&format!(
            "keys = []\n\
             for page in s3.get_paginator('list_objects_v2').paginate(Bucket='{bucket}'):\n    \
             keys += [o['Key'] for o in page.get('Contents', [])]\n\
             print(json.dumps(sorted(keys)))"
        ));
        serde_json::from_str(out.trim()).unwrap()
    }

    /// Keys of the multipart uploads in progress in `bucket`.
    pub fn multipart_uploads(&self, bucket: &str) -> Vec<String> {
        let out = self.boto3(&format!(
            "r = s3.list_multipart_uploads(Bucket='{bucket}')\n\
             print(json.dumps([u['Key'] for u in r.get('Uploads', [])]))"
        ));
        serde_json::from_str(out.trim()).unwrap()
    }

    /// User metadata of one object (`x-amz-meta-*`, without the prefix).
    pub fn metadata(&self, bucket: &str, key: &str) -> serde_json::Value {
        let out = self.boto3(&format!(
            "print(json.dumps(s3.head_object(Bucket='{bucket}', Key={key:?})['Metadata']))"
        ));
        serde_json::from_str(out.trim()).unwrap()
    }
}

impl Drop for Minio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
