//! A zero-copy (splice) upload that fails after bytes left the socket.
//!
//! The failure is injected with a storage whose upload hands out a file
//! descriptor opened read-only: socket → pipe works, pipe → file fails
//! with EBADF, so the first chunk is stuck in the pipe. The connection must
//! then close after the error answer; before the fix it was kept alive with
//! the body accounting stale, so the server went on to "drain" the client's
//! next request as body and sat waiting for bytes that never come.

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use wirespeed_net::ServerConfig;
use wirespeed_service::storage::{LocalUpload, Upload, Written};
use wirespeed_service::{HashMode, ServiceConfig, StorageError, UploadPath};

/// An upload that offers a read-only descriptor for zero-copy writes.
struct BrokenUpload {
    inner: LocalUpload,
    ro: File,
}

impl Upload for BrokenUpload {
    async fn write(&mut self, data: &[u8]) -> Result<(), StorageError> {
        self.inner.write(data).await
    }
    fn as_file(&mut self) -> Option<&File> {
        Some(&self.ro)
    }
    fn wrote_directly(&mut self, n: u64) {
        self.inner.wrote_directly(n)
    }
    fn written(&self) -> u64 {
        self.inner.written()
    }
    async fn commit(self, sha256: Option<[u8; 32]>) -> Result<Written, StorageError> {
        self.inner.commit(sha256).await
    }
    async fn abort(self) {
        self.inner.abort().await
    }
}

#[test]
fn failed_splice_closes_the_connection() {
    let cfg = ServiceConfig {
        upload_path: UploadPath::Splice,
        hash: HashMode::Inline,
        ..Default::default()
    };
    let srv = common::TestServer::with_storage(
        |inner| common::WrapUploads {
            inner,
            wrap: |up| BrokenUpload {
                inner: up,
                ro: File::open("/dev/null").unwrap(),
            },
        },
        cfg,
        ServerConfig::default(),
    );

    let body = common::bytes(100_000, 7);
    let mut c = TcpStream::connect(srv.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The head alone first, so the whole body comes off the socket by splice.
    c.write_all(
        format!(
            "PUT /f.bin HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // Then the body and, pipelined, a second request.
    let mut rest = body.clone();
    rest.extend_from_slice(b"GET /-/health HTTP/1.1\r\nHost: t\r\n\r\n");
    c.write_all(&rest).unwrap();
    let mut buf = Vec::new();
    c.read_to_end(&mut buf)
        .expect("the server should close the connection after the failed upload");
    let r = common::Resp::parse(&buf, false);
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(r.header("connection"), Some("close"));
    // The pipelined request was not answered (nor eaten as body).
    let text = String::from_utf8_lossy(&buf);
    assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "{text}");
    // Nothing stored, no temp file left.
    let names: Vec<_> = std::fs::read_dir(&srv.root).unwrap().collect();
    assert!(names.is_empty(), "{names:?}");
}
