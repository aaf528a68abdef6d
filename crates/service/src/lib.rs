//! wirespeed's transfer service: files under a root, over HTTP/1.1.
//!
//! - `GET/HEAD /path`: the file (sendfile on plain TCP), with ETag,
//!   Last-Modified, single byte ranges and conditional requests
//!   ([`conditional`]).
//! - `GET /dir/`: a listing streamed as JSON (`?format=json` or
//!   `Accept: application/json`) or HTML ([`listing`]); `GET /dir` → 301.
//! - `PUT /path`: atomic upload (temp file, fsync, rename); 507 at once when
//!   the announced length exceeds the free space. Digests on request
//!   ([`digest::DigestPolicy`]): hashed when the client asks
//!   (`Want-Repr-Digest`) or sends `Repr-Digest`/`Content-Digest` to check;
//!   a computed digest is recorded with the file and answered by GET/HEAD.
//! - `GET /dir/?archive=tar|zip` (`&name=` to select): the folder as one
//!   archive, exact length, ETag and Range (`archive`).
//! - `DELETE /path`: a file, or an empty directory.
//! - WebDAV `MKCOL /dir/` (one folder) and `MOVE /src` with `Destination`
//!   (and `Overwrite: F`), under the same write policy and token as PUT.
//! - `GET /-/health`; `GET /-/metrics` (Prometheus, [`metrics`]);
//!   `GET /-/assets/<version>/<name>`: the browser page's script, styles and
//!   icons ([`assets`]), and `/favicon.ico` when the folder has none.
//! - Resumable uploads ([`resumable`], with [`router_with_uploads`]): tus
//!   1.0 under `/-/uploads/` and the IETF draft (interop version 8) on any
//!   file URL, over a [`storage::PartialUploads`] store.
//!
//! Paths are validated by the pure [`path`] module; storage sits behind the
//! [`storage::Storage`] trait ([`storage::LocalStorage`] by default).

mod archive;
pub mod assets;
pub mod auth;
pub mod compress;
pub mod conditional;
pub mod digest;
pub mod hash_gate;
pub mod hidden;
pub mod listing;
pub mod metrics;
pub mod mtime;
pub mod not_found;
pub mod origin;
pub mod page;
pub mod path;
pub mod policy;
pub mod resumable;
mod size;
pub mod storage;
pub mod upload;

mod encoded;
mod files;
mod respond;
mod shares;

pub use auth::{Access, Writes, WritesOff};
pub use digest::DigestPolicy;
pub use files::{Files, Health};
pub use hidden::Hidden;
pub use metrics::{Metrics, RouteClass};
pub use policy::{Action, Decision, Policy, Principal, Rights, Users, UsersError};
pub use resumable::{Uploads, UploadsConfig};
pub use size::human_size;
#[cfg(feature = "s3")]
pub use storage::s3::{S3Config, S3Storage};
pub use storage::{LocalStorage, PartialUploads, Storage, StorageError};
pub use upload::{HashMode, UploadPath};

use wirespeed_net::Router;

/// Service settings (the storage backend is passed separately).
#[derive(Debug, Clone, Default)]
pub struct ServiceConfig {
    /// Who may read and write.
    pub access: Access,
    /// Users and their rights per folder (`serve --auth FILE`), shared by
    /// every route (a reload is seen by all).
    pub users: Option<std::sync::Arc<policy::Users>>,
    /// Share links (`/-/shares/…` mints them; `?share=` presents one).
    pub shares: Option<std::sync::Arc<policy::Shares>>,
    /// Which writes are taken at all (checked before the token).
    pub writes: Writes,
    /// Largest accepted upload body in bytes (`None`: unlimited). Bigger
    /// Content-Length → 413 before reading; a chunked body → 413 as soon as
    /// it crosses the limit.
    pub max_body: Option<u64>,
    /// How upload bodies reach storage.
    pub upload_path: UploadPath,
    /// Where upload digests are computed.
    pub hash: HashMode,
    /// When uploads are hashed.
    pub digest: DigestPolicy,
    /// The `Host` names and addresses answered (others get 421, a
    /// DNS-rebinding guard; see `origin::AllowedHosts`). `None`: any Host.
    pub allowed_hosts: Option<origin::AllowedHosts>,
    /// Where the routes count uploads and digest mismatches; also served at
    /// `GET /-/metrics`. `None`: no metrics route.
    pub metrics: Option<std::sync::Arc<Metrics>>,
    /// Names neither listed, served nor taken (`serve --hidden`).
    pub hidden: Hidden,
    /// Folders with an `index.html` answer with it (`serve --index`).
    pub index: bool,
    /// Served files may run scripts as this origin (`serve --allow-scripts`);
    /// by default they get `Content-Security-Policy: sandbox`.
    pub allow_scripts: bool,
    /// Entries one folder archive (`?archive=tar|zip`) may hold; more is
    /// answered 413. `None`: [`ARCHIVE_MAX_ENTRIES`].
    pub archive_max_entries: Option<usize>,
}

/// The default limit on the entries of one folder archive.
pub const ARCHIVE_MAX_ENTRIES: usize = archive::DEFAULT_MAX_ENTRIES;

impl ServiceConfig {
    /// The policy its presets (`access`, `writes`) make: every route asks it.
    pub fn policy(&self) -> Policy {
        let mut policy = Policy::from_presets(&self.access, self.writes);
        if let Some(users) = &self.users {
            policy = policy.with_users(users.clone());
        }
        if let Some(shares) = &self.shares {
            policy = policy.with_shares(shares.clone());
        }
        policy
    }

    /// Where to hash this request's upload, or `None` to store it unhashed
    /// (see [`digest::hash_upload`]).
    pub(crate) fn hash_for(
        &self,
        ex: &wirespeed_net::Exchange,
        expected: Option<&[u8; 32]>,
    ) -> Option<HashMode> {
        digest::hash_upload(self.digest, ex, expected).then_some(self.hash)
    }
}

/// The control routes every router starts with: `/-/health`, the page's
/// `/-/assets/…`, and `/-/metrics` when `cfg.metrics` is set.
fn control_routes(cfg: &ServiceConfig) -> Router {
    let router = Router::new().route(&["GET"], "/-/health", Health).route(
        &["GET"],
        "/-/assets/*",
        assets::Assets,
    );
    let router = match &cfg.shares {
        Some(shares) => {
            let routes = || shares::ShareRoutes {
                cfg: cfg.clone(),
                policy: cfg.policy(),
                shares: shares.clone(),
            };
            let methods = ["GET", "POST", "DELETE"];
            router.route(&methods, shares::PREFIX, routes()).route(
                &methods,
                "/-/shares/*",
                routes(),
            )
        }
        None => router,
    };
    match &cfg.metrics {
        Some(metrics) => {
            let page = metrics::MetricsPage {
                metrics: metrics.clone(),
                policy: cfg.policy(),
                allowed_hosts: cfg.allowed_hosts.clone(),
            };
            router.route(&["GET"], "/-/metrics", page)
        }
        None => router,
    }
}

/// The service's routes: the control routes, then every other path as a
/// file (`path.rs` answers any `/-/…` path, even percent-encoded, as missing:
/// no stored file hides behind a control path).
pub fn router<S: Storage>(storage: S, cfg: ServiceConfig) -> Router {
    control_routes(&cfg).route(
        &["GET", "PUT", "DELETE", "POST", "MKCOL", "MOVE"],
        "/*",
        Files::new(storage, cfg),
    )
}

/// [`router`] plus resumable uploads: `/-/uploads/…` (tus 1.0 and the IETF
/// draft's upload resources) and IETF creation on the file routes. The
/// returned [`Uploads`] runs the expiry sweep ([`Uploads::sweep_expired`]).
pub fn router_with_uploads<S: Storage + PartialUploads + Clone>(
    storage: S,
    cfg: ServiceConfig,
    ucfg: UploadsConfig,
) -> (Router, std::sync::Arc<Uploads<S>>) {
    let uploads = std::sync::Arc::new(Uploads::new(storage.clone(), cfg.clone(), ucfg));
    let router = control_routes(&cfg)
        .route(
            &["OPTIONS", "POST", "HEAD", "PATCH", "DELETE"],
            resumable::UPLOADS_PREFIX_ROUTE,
            resumable::UploadRoutes(uploads.clone()),
        )
        .route(
            &["GET", "PUT", "DELETE", "POST", "OPTIONS", "MKCOL", "MOVE"],
            "/*",
            resumable::FilesWithUploads {
                files: Files::new(storage, cfg),
                uploads: uploads.clone(),
            },
        );
    (router, uploads)
}

impl From<StorageError> for wirespeed_net::Error {
    fn from(e: StorageError) -> Self {
        let status = e.status();
        match &e {
            // Refused before the body: an answer, not a failure (the
            // access line records the 507).
            StorageError::NoRoom { .. } => {}
            // The disk filled during the upload: once, as a warning.
            StorageError::Full => tracing::warn!(error = %e, "storage full; upload refused (507)"),
            _ if status >= 500 => tracing::error!(error = %e, "storage failure"),
            _ => {}
        }
        match e {
            // Never leak OS error text (paths) to clients.
            StorageError::Io(_) => wirespeed_net::Error::status(status, "storage error"),
            other => wirespeed_net::Error::status(status, other.to_string()),
        }
    }
}
