//! Test servers: the real transfer service (plain or TLS) on 127.0.0.1:0
//! (the kit's `Spawned`), optionally behind a wrapper handler that
//! misbehaves on purpose.

#![allow(dead_code, unused_imports)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wirespeed_client::{Client, ClientConfig, ClientTls, Url};
use wirespeed_net::{Accept, Handler, PlainTcp, Router, Server, ServerConfig};
use wirespeed_service::{Access, LocalStorage, ServiceConfig};
pub use wirespeed_testkit::bytes as data;
use wirespeed_testkit::server::Spawned;

pub struct TestServer {
    pub addr: SocketAddr,
    pub tls: bool,
    pub dir: tempfile::TempDir,
    /// The self-signed certificate (TLS servers).
    pub cert: Option<PathBuf>,
    server: Spawned,
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

    pub async fn stop(self) {
        let _ = self.server.stop(Duration::from_secs(5)).await;
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
    let cfg = ServerConfig {
        shutdown_grace: Duration::from_secs(1),
        head_timeout: Duration::from_secs(5),
        ..ServerConfig::default()
    };
    let server = Spawned::start(move |listener, stop| async move {
        let server = Server::new(cfg);
        let _ = server
            .serve_with(listener, Arc::new(acceptor), Arc::new(handler), stop)
            .await;
    })
    .await;
    TestServer {
        addr: server.addr,
        tls,
        dir,
        cert,
        server,
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
