//! Test servers: the real transfer service (plain or TLS) on 127.0.0.1:0,
//! optionally behind a wrapper handler that misbehaves on purpose.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use wirespeed_client::{Client, ClientConfig, ClientTls, Url};
use wirespeed_net::{Accept, Handler, PlainTcp, Router, Server, ServerConfig};
use wirespeed_service::{Access, LocalStorage, ServiceConfig};

pub struct TestServer {
    pub addr: SocketAddr,
    pub tls: bool,
    pub dir: tempfile::TempDir,
    /// The self-signed certificate (TLS servers).
    pub cert: Option<PathBuf>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    pub fn url(&self, path: &str) -> Url {
        let scheme = if self.tls { "https" } else { "http" };
        Url::parse(&format!("{scheme}://{}{path}", self.addr)).unwrap()
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A client that trusts this server's certificate.
    pub fn client(&self) -> Client {
        self.client_with(|_| {})
    }

    pub fn client_with(&self, f: impl FnOnce(&mut ClientConfig)) -> Client {
        let mut cfg = ClientConfig {
            tls: ClientTls {
                cacert: self.cert.clone(),
                insecure_accept_anything: false,
            },
            io_timeout: Duration::from_secs(20),
            ..ClientConfig::default()
        };
        f(&mut cfg);
        Client::new(cfg).unwrap()
    }

    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
    }
}

pub fn service(root: &Path, tokens: &[&str]) -> Router {
    let storage = LocalStorage::new(root).unwrap().with_fsync(false);
    let cfg = ServiceConfig {
        access: Access::new(tokens.iter().copied(), false),
        ..ServiceConfig::default()
    };
    wirespeed_service::router(storage, cfg)
}

async fn start_inner<A: Accept, H: Handler>(
    acceptor: A,
    handler: H,
    dir: tempfile::TempDir,
    tls: bool,
    cert: Option<PathBuf>,
) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let cfg = ServerConfig {
        shutdown_grace: Duration::from_secs(1),
        head_timeout: Duration::from_secs(5),
        ..ServerConfig::default()
    };
    let task = tokio::spawn(async move {
        let server = Server::new(cfg);
        let _ = server
            .serve_with(listener, Arc::new(acceptor), Arc::new(handler), async {
                let _ = rx.await;
            })
            .await;
    });
    TestServer {
        addr,
        tls,
        dir,
        cert,
        stop: Some(tx),
        task: Some(task),
    }
}

/// The real service, plain HTTP.
pub async fn start_plain(tokens: &[&str]) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let h = service(dir.path(), tokens);
    start_inner(PlainTcp, h, dir, false, None).await
}

/// The real service over TLS with a self-signed certificate (cert written
/// into a separate temp dir so it is not served).
pub async fn start_tls(tokens: &[&str]) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let certdir = tempfile::tempdir().unwrap();
    let (acc, cert, fp) = wirespeed_tls::server_self_signed(certdir.path()).unwrap();
    assert_eq!(fp.len(), 95, "fingerprint {fp}");
    let h = service(dir.path(), tokens);
    (start_inner(acc, h, dir, true, Some(cert)).await, certdir)
}

/// The real service over TLS with a given acceptor; `cert` is what clients
/// get as `--cacert`.
pub async fn start_tls_with(acceptor: wirespeed_tls::Acceptor, cert: PathBuf) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let h = service(dir.path(), &[]);
    start_inner(acceptor, h, dir, true, Some(cert)).await
}

/// A custom handler (with the service's storage dir available to it), plain.
pub async fn start_with<H: Handler>(make: impl FnOnce(&Path) -> H) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let h = make(dir.path());
    start_inner(PlainTcp, h, dir, false, None).await
}

/// Deterministic test data (not all zeros, not periodic at small scale).
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}
