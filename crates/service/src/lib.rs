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
//! - `DELETE /path`: a file, or a folder with everything in it (WebDAV;
//!   `Depth: 0` only an empty one).
//! - WebDAV class 1 and 2 ([`dav`]): OPTIONS, PROPFIND (Depth 0 and 1),
//!   PROPPATCH, MKCOL, DELETE of folders, COPY, MOVE, LOCK and UNLOCK,
//!   under the same policy and token as PUT; its locks ([`locks`]) hold
//!   against every write (PUT, POSTs, resumable uploads), and on S3 are
//!   shared by every server on the bucket.
//! - `GET /-/health`; `GET /-/metrics` (Prometheus, [`metrics`]);
//!   `GET /-/assets/<version>/<name>`: the browser page's script, styles and
//!   icons ([`assets`]), and `/favicon.ico` when the folder has none.
//! - Resumable uploads ([`resumable`], with [`router_with_uploads`]): tus
//!   1.0 under `/-/uploads/` and the IETF draft (interop version 8) on any
//!   file URL, over a [`storage::PartialUploads`] store.
//!
//! Paths are validated by the pure [`path`] module; storage sits behind the
//! [`storage::Storage`] trait ([`storage::LocalStorage`] by default).

// Fronts: one folder per protocol front. A front never imports another;
// this file (the composition root) builds the router from them.
mod archive;
pub mod dav;
mod encoded;
mod files;
pub mod resumable;
pub mod search;
pub mod thumbnail;

// The policy (who is asking, what they may do on a path), the storage
// (where bytes live) and the request paths both speak are crates of their
// own, so the compiler keeps the layering: policy knows no storage and no
// network, storage asks no policy. Re-exported under their old names.
pub use wirespeed_path as path;
pub use wirespeed_policy as policy;
pub use wirespeed_search as search_index;
pub use wirespeed_storage as storage;

// The door to the fronts, and the control routes beside them.
mod control;
mod front_door;

// Helpers the fronts share.
pub mod access_log;
mod answers;
pub mod bandwidth;
pub mod conditional;
pub mod config;
pub(crate) mod content_type;
pub mod digest;
pub mod events;
pub mod hash_gate;
pub mod links;
pub mod locks;
pub mod metrics;
pub mod mtime;
pub mod page;
mod proxy_signin;
pub mod quota;
mod respond;
pub mod revocations;
pub mod session;
mod shares;
mod through_links;
pub mod trash;
pub mod upload;
mod usage;

pub use access_log::AccessLog;
pub use config::{ServiceConfig, ARCHIVE_MAX_ENTRIES};
pub use control::Health;
pub use digest::DigestPolicy;
pub use front_door::{FileRoutes, FileRoutesWithUploads};
pub use metrics::{Metrics, RouteClass};
pub use page::{assets, listing};
pub use policy::hidden::Hidden;
pub use policy::origin;
pub use policy::presets::{Access, Writes, WritesOff};
pub use policy::{Action, Decision, Policy, Principal, Rights, Sessions, Users, UsersError};
pub use resumable::{Uploads, UploadsConfig};
pub use storage::local::SMALL_FILE_RECHECK;
#[cfg(feature = "s3")]
pub use storage::s3::{S3Config, S3Storage};
pub use storage::{LocalStorage, PartialUploads, Storage, StorageError};
pub use upload::{HashMode, UploadPath};
pub use wirespeed_units::human_size;

use wirespeed_net::Router;

/// The methods of the file routes: plain HTTP and WebDAV's (`dav`).
const FILE_METHODS: [&str; 12] = [
    "GET",
    "PUT",
    "POST",
    "DELETE",
    "OPTIONS",
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
];

/// The service's routes: the control routes, then every other path as a
/// file (`path.rs` answers any `/-/…` path, even percent-encoded, as missing:
/// no stored file hides behind a control path).
pub fn router<S: Storage>(mut storage: S, cfg: ServiceConfig) -> Router {
    trash::keep_replaced_at_publication(&mut storage, &cfg);
    let files = std::sync::Arc::new(front_door::FileRoutes::new(storage, cfg.clone()));
    team_routes(control::control_routes(&cfg, files.clone()), &files, &cfg).route(
        &FILE_METHODS,
        "/*",
        events::Recorded {
            inner: front_door::SharedFileRoutes(files),
            events: cfg.events.clone(),
        },
    )
}

/// The trash (`/-/trash`, listing and restore) and quota (`/-/quota/…`)
/// routes over the file routes, the same with or without resumable uploads.
fn team_routes<P: config::FileParts>(
    router: Router,
    files: &std::sync::Arc<P>,
    cfg: &ServiceConfig,
) -> Router {
    if let (Some(events), Some(proxy)) = (&cfg.events, &cfg.proxy_sign_in) {
        events.set_user_header(&proxy.user_header);
    }
    let trash = || events::Recorded {
        inner: trash::TrashRoutes {
            files: files.clone(),
        },
        events: cfg.events.clone(),
    };
    router
        .route(&["GET", "POST"], trash::PATH, trash())
        .route(&["GET", "POST"], trash::ROUTE, trash())
        .route(
            &["GET"],
            quota::ROUTE,
            quota::QuotaRoute {
                files: files.clone(),
            },
        )
}

/// [`router`] plus resumable uploads: `/-/uploads/…` (tus 1.0 and the IETF
/// draft's upload resources) and IETF creation on the file routes. The
/// returned [`Uploads`] runs the expiry sweep ([`Uploads::sweep_expired`]).
pub fn router_with_uploads<S: Storage + PartialUploads + Clone>(
    mut storage: S,
    cfg: ServiceConfig,
    ucfg: UploadsConfig,
) -> (Router, std::sync::Arc<Uploads<S>>) {
    trash::keep_replaced_at_publication(&mut storage, &cfg);
    let uploads = std::sync::Arc::new(Uploads::new(storage.clone(), cfg.clone(), ucfg));
    let files = std::sync::Arc::new(front_door::FileRoutes::new(storage, cfg.clone()));
    let router = team_routes(control::control_routes(&cfg, files.clone()), &files, &cfg)
        .route(
            &["OPTIONS", "POST", "HEAD", "PATCH", "DELETE"],
            resumable::UPLOADS_PREFIX_ROUTE,
            events::Recorded {
                inner: resumable::UploadRoutes(uploads.clone()),
                events: cfg.events.clone(),
            },
        )
        .route(
            &FILE_METHODS,
            "/*",
            events::Recorded {
                inner: front_door::FileRoutesWithUploads {
                    routes: files,
                    uploads: uploads.clone(),
                },
                events: cfg.events.clone(),
            },
        );
    (router, uploads)
}
