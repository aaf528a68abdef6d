//! Test helpers: the real server on 127.0.0.1:0 over a temporary directory,
//! on its own runtime thread, and a tiny blocking HTTP/1.1 client that keeps
//! the raw bytes (so tests can look at chunk framing).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wirespeed_net::{Server, ServerConfig};
use wirespeed_service::{LocalStorage, ServiceConfig, Storage};

pub struct TestServer {
    pub addr: SocketAddr,
    /// Parent of the root: tests put "outside" files here.
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    pub fn start() -> Self {
        Self::with(ServiceConfig::default())
    }

    pub fn with(cfg: ServiceConfig) -> Self {
        Self::with_server(cfg, ServerConfig::default())
    }

    pub fn with_server(cfg: ServiceConfig, server_cfg: ServerConfig) -> Self {
        Self::with_storage(|local| local, cfg, server_cfg)
    }

    /// The server over a storage built from the root's `LocalStorage`
    /// (tests wrap it to inject failures).
    pub fn with_storage<S: Storage>(
        wrap: impl FnOnce(LocalStorage) -> S,
        cfg: ServiceConfig,
        server_cfg: ServerConfig,
    ) -> Self {
        Self::with_pool(wrap, cfg, server_cfg, 512)
    }

    /// Like [`with_storage`](Self::with_storage), with a blocking pool of
    /// `max_blocking` threads (tests that try to exhaust it).
    pub fn with_pool<S: Storage>(
        wrap: impl FnOnce(LocalStorage) -> S,
        cfg: ServiceConfig,
        server_cfg: ServerConfig,
        max_blocking: usize,
    ) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        // Tests don't need durability; fsync would only slow them down.
        let storage = wrap(LocalStorage::new(&root).unwrap().with_fsync(false));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .max_blocking_threads(max_blocking)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let router = wirespeed_service::router(storage, cfg);
                let shutdown = async {
                    let _ = stop_rx.await;
                };
                Server::new(server_cfg)
                    .serve(listener, Arc::new(router), shutdown)
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        TestServer {
            addr,
            tmp,
            root,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// One request on a fresh connection (`Connection: close` is added).
    pub fn req(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        let mut h: Vec<(&str, String)> = headers.iter().map(|(n, v)| (*n, v.to_string())).collect();
        if !body.is_empty()
            && !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
        {
            h.push(("Content-Length", body.len().to_string()));
        }
        let mut raw = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
        for (n, v) in &h {
            raw.push_str(&format!("{n}: {v}\r\n"));
        }
        raw.push_str("\r\n");
        let mut bytes = raw.into_bytes();
        bytes.extend_from_slice(body);
        self.raw(&bytes, method == "HEAD")
    }

    pub fn get(&self, path: &str) -> Resp {
        self.req("GET", path, &[], b"")
    }

    pub fn put(&self, path: &str, body: &[u8]) -> Resp {
        self.req("PUT", path, &[], body)
    }

    /// Send raw bytes, read to EOF, parse.
    pub fn raw(&self, bytes: &[u8], head_request: bool) -> Resp {
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(bytes).unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).unwrap();
        Resp::parse(&buf, head_request)
    }

    /// Names in a directory under the root (including temp files).
    pub fn names(&self, rel: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.root.join(rel))
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().into_string().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Every temporary upload file anywhere under the root.
    pub fn temp_files(&self) -> Vec<PathBuf> {
        fn walk(p: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(p).unwrap().flatten() {
                let path = e.path();
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(".wirespeed-tmp-")
                {
                    out.push(path.clone());
                }
                if e.file_type().unwrap().is_dir() {
                    walk(&path, out);
                }
            }
        }
        let mut v = Vec::new();
        walk(&self.root, &mut v);
        v
    }

    /// Wait until `cond` holds (the server finishes a request after the
    /// client is gone, so cleanup is observed with a short poll).
    pub fn eventually(&self, what: &str, cond: impl Fn() -> bool) {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if cond() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("timed out waiting for: {what}");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Sizes of the data chunks, when the body was chunked.
    pub chunks: Vec<usize>,
    pub chunked: bool,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Parse one response (skipping 1xx interim responses).
    pub fn parse(mut buf: &[u8], head_request: bool) -> Resp {
        loop {
            let end = find(buf, b"\r\n\r\n").unwrap_or_else(|| {
                panic!("no complete head in {:?}", String::from_utf8_lossy(buf))
            });
            let head = std::str::from_utf8(&buf[..end]).unwrap();
            let rest = &buf[end + 4..];
            let mut lines = head.split("\r\n");
            let status_line = lines.next().unwrap();
            let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
            if (100..200).contains(&status) {
                buf = rest;
                continue;
            }
            let headers: Vec<(String, String)> = lines
                .map(|l| {
                    let (n, v) = l.split_once(':').unwrap();
                    (n.trim().to_string(), v.trim().to_string())
                })
                .collect();
            let mut r = Resp {
                status,
                headers,
                body: Vec::new(),
                chunks: Vec::new(),
                chunked: false,
            };
            if head_request || status == 204 || status == 304 {
                assert!(rest.is_empty(), "no body expected for {status}");
                return r;
            }
            if r.header("transfer-encoding")
                .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
            {
                r.chunked = true;
                let mut p = rest;
                loop {
                    let le = find(p, b"\r\n").expect("chunk size line");
                    let size_s = std::str::from_utf8(&p[..le]).unwrap();
                    let size = usize::from_str_radix(size_s.split(';').next().unwrap().trim(), 16)
                        .unwrap();
                    p = &p[le + 2..];
                    if size == 0 {
                        assert!(p.starts_with(b"\r\n"), "last chunk must end the body");
                        break;
                    }
                    r.body.extend_from_slice(&p[..size]);
                    r.chunks.push(size);
                    assert_eq!(&p[size..size + 2], b"\r\n");
                    p = &p[size + 2..];
                }
            } else if let Some(cl) = r.header("content-length") {
                let n: usize = cl.parse().unwrap();
                assert_eq!(rest.len(), n, "body length vs Content-Length");
                r.body = rest.to_vec();
            } else {
                r.body = rest.to_vec();
            }
            return r;
        }
    }
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(n);
    v
}

pub fn sha256_field(data: &[u8]) -> String {
    use base64::Engine;
    use sha2::Digest;
    format!(
        "sha-256=:{}:",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(data))
    )
}

/// Run curl; returns (exit ok, stdout).
pub fn curl(args: &[&str]) -> (bool, Vec<u8>) {
    let out = std::process::Command::new("/usr/bin/curl")
        .args(["-sS", "--max-time", "30"])
        .args(args)
        .output()
        .expect("run curl");
    if !out.status.success() {
        eprintln!("curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    (out.status.success(), out.stdout)
}

/// The root's `LocalStorage`, with every upload passed through `wrap`
/// (tests inject write failures or count writes in the wrapper); everything
/// else is the local backend's.
pub struct WrapUploads<F> {
    pub inner: LocalStorage,
    pub wrap: F,
}

impl<U, F> Storage for WrapUploads<F>
where
    U: wirespeed_service::storage::Upload + 'static,
    F: Fn(wirespeed_service::storage::LocalUpload) -> U + Send + Sync + 'static,
{
    type Object = <LocalStorage as Storage>::Object;
    type Upload = U;
    type Listing = <LocalStorage as Storage>::Listing;

    async fn stat(
        &self,
        key: &wirespeed_service::path::RelPath,
    ) -> Result<wirespeed_service::storage::Meta, wirespeed_service::StorageError> {
        self.inner.stat(key).await
    }
    async fn open(
        &self,
        key: &wirespeed_service::path::RelPath,
    ) -> Result<Self::Object, wirespeed_service::StorageError> {
        self.inner.open(key).await
    }
    async fn create(
        &self,
        key: &wirespeed_service::path::RelPath,
    ) -> Result<U, wirespeed_service::StorageError> {
        Ok((self.wrap)(self.inner.create(key).await?))
    }
    async fn list(
        &self,
        key: &wirespeed_service::path::RelPath,
    ) -> Result<Self::Listing, wirespeed_service::StorageError> {
        self.inner.list(key).await
    }
    async fn delete(
        &self,
        key: &wirespeed_service::path::RelPath,
    ) -> Result<(), wirespeed_service::StorageError> {
        self.inner.delete(key).await
    }
}
