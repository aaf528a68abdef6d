//! The transfer service on 127.0.0.1:0 over a temporary directory, on its
//! own runtime thread (the kit's `ThreadServer`), plus the service's own
//! helpers; the raw client and response parser are the kit's.

#![allow(dead_code, unused_imports)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use wirespeed_net::{Server, ServerConfig};
use wirespeed_service::{LocalStorage, ServiceConfig, Storage};
pub use wirespeed_testkit::http::Resp;
pub use wirespeed_testkit::tools::curl;
pub use wirespeed_testkit::{bytes, find};
use wirespeed_testkit::{fs, http, server::ThreadServer};

pub struct TestServer {
    // First field, so dropped first: the server stops before its directory goes.
    server: ThreadServer,
    pub addr: SocketAddr,
    /// Parent of the root: tests put "outside" files here.
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
}

/// A temp dir holding an empty `root` folder the server serves.
fn temp_root() -> (tempfile::TempDir, PathBuf) {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    (tmp, root)
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
        let (tmp, root) = temp_root();
        // Tests don't need durability; fsync would only slow them down.
        let storage = wrap(LocalStorage::new(&root).unwrap().with_fsync(false));
        Self::serve(storage, tmp, root, cfg, server_cfg, max_blocking, None)
    }

    /// The server with a search index of its root (kept beside the root,
    /// not in it), and the index.
    pub fn with_search(
        mut cfg: ServiceConfig,
    ) -> (Self, Arc<wirespeed_service::search_index::Search>) {
        use wirespeed_service::search_index::{Search, Settings};
        let (tmp, root) = temp_root();
        let settings = Settings::new(root.clone(), tmp.path().join("search.db"));
        let search = Arc::new(Search::open(settings).unwrap());
        cfg.search = Some(search.clone());
        let storage = LocalStorage::new(&root).unwrap().with_fsync(false);
        let s = Self::serve(storage, tmp, root, cfg, ServerConfig::default(), 512, None);
        (s, search)
    }

    /// The server over any storage (e.g. S3); `root` is then an unused
    /// empty directory.
    pub fn on_storage<S: Storage>(storage: S, cfg: ServiceConfig) -> Self {
        Self::on_storage_under(storage, cfg, None)
    }

    /// The server served under `prefix` (`serve --path-prefix`) over the
    /// root's `LocalStorage`.
    pub fn under_prefix(cfg: ServiceConfig, prefix: &str) -> Self {
        let (tmp, root) = temp_root();
        let storage = LocalStorage::new(&root).unwrap().with_fsync(false);
        let prefix = wirespeed_net::PathPrefix::parse(prefix).unwrap();
        Self::serve(
            storage,
            tmp,
            root,
            cfg,
            ServerConfig::default(),
            512,
            prefix,
        )
    }

    /// [`on_storage`](Self::on_storage), served under `prefix` when given.
    pub fn on_storage_under<S: Storage>(
        storage: S,
        cfg: ServiceConfig,
        prefix: Option<&str>,
    ) -> Self {
        let (tmp, root) = temp_root();
        let prefix = prefix.and_then(|p| wirespeed_net::PathPrefix::parse(p).unwrap());
        Self::serve(
            storage,
            tmp,
            root,
            cfg,
            ServerConfig::default(),
            512,
            prefix,
        )
    }

    fn serve<S: Storage>(
        storage: S,
        tmp: tempfile::TempDir,
        root: PathBuf,
        cfg: ServiceConfig,
        server_cfg: ServerConfig,
        max_blocking: usize,
        prefix: Option<wirespeed_net::PathPrefix>,
    ) -> Self {
        let mut rt = tokio::runtime::Builder::new_multi_thread();
        rt.worker_threads(2).max_blocking_threads(max_blocking);
        let server = ThreadServer::start(rt, move |listener, stop| async move {
            let router = wirespeed_service::router(storage, cfg);
            let mounted = wirespeed_net::Mount::new(prefix, router);
            Server::new(server_cfg)
                .serve(listener, Arc::new(mounted), stop)
                .await
                .unwrap();
        });
        TestServer {
            addr: server.addr,
            server,
            tmp,
            root,
        }
    }

    /// The server with resumable uploads (`router_with_uploads`) over the
    /// root's `LocalStorage`.
    pub fn with_uploads(cfg: ServiceConfig, ucfg: wirespeed_service::UploadsConfig) -> Self {
        Self::with_uploads_under(cfg, ucfg, None)
    }

    /// [`with_uploads`](Self::with_uploads), served under `prefix` when given.
    pub fn with_uploads_under(
        cfg: ServiceConfig,
        ucfg: wirespeed_service::UploadsConfig,
        prefix: Option<&str>,
    ) -> Self {
        let (tmp, root) = temp_root();
        let storage = LocalStorage::new(&root).unwrap().with_fsync(false);
        Self::uploads_server(tmp, root, storage, cfg, ucfg, None, prefix)
    }

    /// [`with_search`](Self::with_search) with resumable uploads too.
    pub fn with_search_and_uploads(
        mut cfg: ServiceConfig,
        ucfg: wirespeed_service::UploadsConfig,
    ) -> (Self, Arc<wirespeed_service::search_index::Search>) {
        use wirespeed_service::search_index::{Search, Settings};
        let (tmp, root) = temp_root();
        let settings = Settings::new(root.clone(), tmp.path().join("search.db"));
        let search = Arc::new(Search::open(settings).unwrap());
        cfg.search = Some(search.clone());
        let storage = LocalStorage::new(&root).unwrap().with_fsync(false);
        let s = Self::uploads_server(tmp, root, storage, cfg, ucfg, None, None);
        (s, search)
    }

    /// The server with resumable uploads over any storage (e.g. S3), its
    /// expiry sweep run every 300 ms; `root` is an unused empty directory.
    pub fn with_uploads_on<S>(
        storage: S,
        cfg: ServiceConfig,
        ucfg: wirespeed_service::UploadsConfig,
    ) -> Self
    where
        S: Storage + wirespeed_service::PartialUploads + Clone,
    {
        Self::with_uploads_on_under(storage, cfg, ucfg, None)
    }

    /// [`with_uploads_on`](Self::with_uploads_on), served under `prefix`
    /// when given.
    pub fn with_uploads_on_under<S>(
        storage: S,
        cfg: ServiceConfig,
        ucfg: wirespeed_service::UploadsConfig,
        prefix: Option<&str>,
    ) -> Self
    where
        S: Storage + wirespeed_service::PartialUploads + Clone,
    {
        let (tmp, root) = temp_root();
        let sweep = Some(std::time::Duration::from_millis(300));
        Self::uploads_server(tmp, root, storage, cfg, ucfg, sweep, prefix)
    }

    fn uploads_server<S>(
        tmp: tempfile::TempDir,
        root: PathBuf,
        storage: S,
        cfg: ServiceConfig,
        ucfg: wirespeed_service::UploadsConfig,
        sweep_every: Option<std::time::Duration>,
        prefix: Option<&str>,
    ) -> Self
    where
        S: Storage + wirespeed_service::PartialUploads + Clone,
    {
        let prefix = prefix.and_then(|p| wirespeed_net::PathPrefix::parse(p).unwrap());
        let mut rt = tokio::runtime::Builder::new_multi_thread();
        rt.worker_threads(2);
        let server = ThreadServer::start(rt, move |listener, stop| async move {
            let (router, uploads) = wirespeed_service::router_with_uploads(storage, cfg, ucfg);
            if let Some(every) = sweep_every {
                uploads.spawn_sweeper(every);
            }
            let mounted = wirespeed_net::Mount::new(prefix, router);
            Server::new(ServerConfig::default())
                .serve(listener, Arc::new(mounted), stop)
                .await
                .unwrap();
        });
        TestServer {
            addr: server.addr,
            server,
            tmp,
            root,
        }
    }

    /// The paths a JSON search (`?q=…&format=json`) answered, sorted;
    /// none unless the answer is 200.
    pub fn found(&self, url: &str, headers: &[(&str, &str)]) -> (u16, Vec<String>) {
        let r = self.req("GET", url, headers, b"");
        if r.status != 200 {
            return (r.status, Vec::new());
        }
        let v: serde_json::Value = serde_json::from_slice(&r.body)
            .unwrap_or_else(|e| panic!("{url}: not JSON ({e}): {}", r.text()));
        let mut paths: Vec<String> = v["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("{url}: no entries: {}", r.text()))
            .iter()
            .filter_map(|e| e["path"].as_str().map(str::to_string))
            .collect();
        paths.sort();
        (r.status, paths)
    }

    /// Polls until `url` finds exactly `want`, for at most 2 s (the index
    /// follows changes within that).
    pub fn finds_within_2s(&self, url: &str, want: &[&str]) {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            let (_, got) = self.found(url, &[]);
            if got == want {
                return;
            }
            assert!(
                std::time::Instant::now() < end,
                "{url}: found {got:?}, wanted {want:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// One request on a fresh connection (`Connection: close` is added).
    pub fn req(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        self.raw(
            &http::request_bytes(method, path, headers, body),
            method == "HEAD",
        )
    }

    pub fn get(&self, path: &str) -> Resp {
        self.req("GET", path, &[], b"")
    }

    pub fn put(&self, path: &str, body: &[u8]) -> Resp {
        self.req("PUT", path, &[], body)
    }

    /// Send raw bytes, read to EOF, parse.
    pub fn raw(&self, bytes: &[u8], head_request: bool) -> Resp {
        Resp::parse(&http::send_blocking(self.addr, bytes), head_request)
    }

    /// Names in a directory under the root (including temp files).
    pub fn names(&self, rel: &str) -> Vec<String> {
        fs::names(&self.root.join(rel))
    }

    /// Every temporary upload file anywhere under the root.
    pub fn temp_files(&self) -> Vec<PathBuf> {
        fs::find_prefixed(&self.root, ".wirespeed-tmp-")
    }

    /// Wait until `cond` holds (the server finishes a request after the
    /// client is gone, so cleanup is observed with a short poll).
    pub fn eventually(&self, what: &str, cond: impl Fn() -> bool) {
        fs::eventually(what, cond)
    }
}

pub fn sha256_field(data: &[u8]) -> String {
    use base64::Engine;
    use sha2::Digest;
    format!(
        "sha-256=:{}:",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(data))
    )
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

/// The request's own origin, as a browser names it on a write (the test
/// client sends `Host: test`).
pub const SAME_ORIGIN: (&str, &str) = ("Origin", "http://test");

/// Share links and browser sessions under one key, as `serve` makes them.
pub fn signed_tables(
    key: [u8; 32],
) -> (
    Arc<wirespeed_service::policy::Shares>,
    Arc<wirespeed_service::policy::sessions::Sessions>,
) {
    use wirespeed_service::policy::sessions::{Sessions, DEFAULT_LIFETIME};
    use wirespeed_service::policy::shares::DEFAULT_MAX_EXPIRY;
    let shares = Arc::new(wirespeed_service::policy::Shares::new(
        key,
        DEFAULT_MAX_EXPIRY,
    ));
    let sessions = Arc::new(Sessions::new(shares.session_key(), DEFAULT_LIFETIME, false));
    (shares, sessions)
}

/// Sign in on the page's route with JSON; the answer, and the cookie's
/// `name=value` a browser would send back.
pub fn sign_in(s: &TestServer, name: &str, pw: &str) -> (Resp, Option<String>) {
    let body = serde_json::json!({ "name": name, "password": pw }).to_string();
    let r = s.req(
        "POST",
        "/-/session",
        &[("Content-Type", "application/json"), SAME_ORIGIN],
        body.as_bytes(),
    );
    let cookie = r
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .map(str::to_owned);
    (r, cookie)
}
