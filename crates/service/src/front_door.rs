//! The front door of the file URL space: it asks the policy once, then
//! hands the request to the front that speaks its protocol.
//!
//! The fronts (`files`, `encoded`, `archive`, `resumable`, `thumbnail`) never import one
//! another; this module is the only place that knows them all, so adding a
//! front (WebDAV) is one more arm here, not an edit inside a sibling.

use std::sync::Arc;

use wirespeed_net::{Error, Exchange, Handler};

use crate::archive;
use crate::config::ServiceConfig;
use crate::dav::{self, Dav};
use crate::files::Files;
use crate::locks::check_write;
use crate::metrics::RouteClass;
use crate::path::{parse_request_path, RelPath};
use crate::policy::Action;
use crate::respond::{admit, explain_too_large, WriteGuard};
use crate::resumable::{self, Uploads};
use crate::storage::{changes, Kind, PartialUploads, Storage};

/// The metrics class of a request to the file routes (a folder GET becomes
/// `Listing` once storage says it is one).
fn request_class(ex: &Exchange) -> RouteClass {
    match ex.method() {
        "PUT" => RouteClass::Upload,
        "DELETE" => RouteClass::Delete,
        "POST" => {
            let form = ex.header("content-type").is_some_and(|ct| {
                ct.len() >= 19 && ct[..19].eq_ignore_ascii_case(b"multipart/form-data")
            });
            if form {
                RouteClass::Upload
            } else {
                RouteClass::Encoded
            }
        }
        "GET" | "HEAD" => RouteClass::Files,
        _ => RouteClass::Other,
    }
}

/// Every path that is not a control route: files and listings, encoded
/// POSTs and folder archives.
pub struct FileRoutes<S> {
    files: Files<S>,
    /// zip CRC-32s computed for folder archives and the budget of entries
    /// planned at once, kept across requests.
    archives: archive::Archives,
}

impl<S: Storage> FileRoutes<S> {
    pub fn new(storage: S, cfg: ServiceConfig) -> Self {
        if let (Some(search), Some(changes)) = (&cfg.search, storage.changes()) {
            crate::search::follow(search.clone(), changes);
        }
        cfg.quotas.watch(storage.changes());
        FileRoutes {
            archives: archive::Archives::new(&cfg, storage.changes()),
            files: Files::new(storage, cfg),
        }
    }

    /// The WebDAV front over the same storage, policy and locks.
    fn dav(&self, base: &str) -> Dav<'_, S> {
        let (storage, cfg) = self.files.parts();
        Dav {
            storage,
            cfg,
            policy: self.files.policy(),
            locks: &cfg.locks,
            base: base.to_string(),
        }
    }
}

impl<S: Storage> crate::config::FileParts for FileRoutes<S> {
    type Storage = S;
    fn parts(&self) -> (&S, &ServiceConfig, &crate::policy::Policy) {
        let (storage, cfg) = self.files.parts();
        (storage, cfg, self.files.policy())
    }
}

impl<S: Storage> Handler for FileRoutes<S> {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        // A request that may change storage runs where the policy can name
        // its principal for the change stream; reads (the small GET among
        // them) pay nothing for it.
        if matches!(ex.method(), "GET" | "HEAD") {
            return self.route(ex).await;
        }
        Box::pin(changes::in_actor_scope(self.route(ex))).await
    }
}

impl<S: Storage> FileRoutes<S> {
    async fn route(&self, ex: &mut Exchange) -> Result<(), Error> {
        // WebDAV's methods (DELETE, MKCOL and MOVE among them) admit each
        // path with its own action.
        // Every front but the plain GET is boxed: their futures (4.6 KiB,
        // 32-byte aligned) would otherwise size the one the router allocates
        // per request, and an over-aligned allocation takes malloc's slow
        // path (~700 instructions of a small GET's 24k).
        if dav::handles(ex.method()) {
            return Box::pin(self.dav(ex.base()).handle(ex)).await;
        }
        request_class(ex).set(ex);
        let (storage, cfg) = self.files.parts();
        let policy = self.files.policy();
        // The policy decides on the path asked for (the root when the path
        // is refused: its error comes after the rights).
        let parsed = parse_request_path(ex.path());
        let root = RelPath::root();
        let at = parsed.as_ref().unwrap_or(&root);
        let Some(who) = admit(cfg, policy, ex, method_action(ex.method()), at).await? else {
            return Ok(());
        };
        // (A hidden path was answered 404 by `admit`: the policy hides it.)
        let key = parsed.map_err(|e| path_error(e, ex.method()))?;
        crate::through_links::check_real(storage, policy, who, method_action(ex.method()), &key)
            .await?;
        let _upload = match ex.method() {
            "PUT" | "POST" => cfg.metrics.as_ref().map(|m| m.upload_started()),
            _ => None,
        };
        if let Some(asked) = search_asked(cfg, ex, &key) {
            RouteClass::Listing.set(ex);
            return Box::pin(crate::search::send(
                storage, cfg, policy, ex, &key, who, asked,
            ))
            .await;
        }
        let result = match ex.method() {
            "POST" => {
                // WebDAV locks (PUT's are checked in `files`): the `If`
                // header is rare here but honoured.
                let if_field = crate::locks::IfField::of(ex);
                // The form's files are checked as they come, each at its name.
                let submitted = check_write(&cfg.locks, storage, &if_field, &key, &[], who).await?;
                let guard = WriteGuard::new(policy, who, &key).with_locks(&cfg.locks, submitted);
                let r = Box::pin(crate::encoded::post(storage, cfg, &guard, ex, key)).await;
                r.map_err(|e| guard.explain(e))
            }
            "GET" | "HEAD" if crate::thumbnail::wanted(ex.query()) => {
                Box::pin(crate::thumbnail::send(storage, &cfg.thumbnails, ex, &key)).await
            }
            "GET" | "HEAD" if key.trailing_slash() => match archive::wanted(ex.query())? {
                Some(wanted) if is_folder(storage, &key).await => {
                    RouteClass::Listing.set(ex);
                    // Entries the principal may not read, and hidden
                    // names, are left out.
                    let may_read = move |k: &RelPath| policy.reads(who, k);
                    // Where a member leads through a symlink is asked too,
                    // unless every path holds the same rights for `who`.
                    let readable = archive::Readable {
                        may_read,
                        follow: !policy.uniform_for(who),
                    };
                    Box::pin(archive::send(
                        storage,
                        cfg,
                        &self.archives,
                        ex,
                        &key,
                        wanted,
                        readable,
                    ))
                    .await
                }
                _ => self.files.answer(ex, key, who).await,
            },
            _ => self.files.answer(ex, key, who).await,
        };
        result.map_err(|e| explain_too_large(e, cfg.max_body))
    }
}

/// What a folder's GET asks to search (`?q=TEXT`), where search is on.
fn search_asked(cfg: &ServiceConfig, ex: &Exchange, key: &RelPath) -> Option<crate::search::Asked> {
    let get = matches!(ex.method(), "GET" | "HEAD");
    if !get || !key.trailing_slash() || cfg.search.is_none() {
        return None;
    }
    crate::search::wanted(ex.query())
}

async fn is_folder<S: Storage>(storage: &S, key: &RelPath) -> bool {
    storage.stat(key).await.is_ok_and(|m| m.kind == Kind::Dir)
}

/// What a method asks of the policy at the request's path: writes create
/// (replacing is checked at the name, [`WriteGuard`]); the WebDAV methods
/// ask in `dav`.
fn method_action(method: &str) -> Action {
    match method {
        "GET" | "HEAD" => Action::Read,
        _ => Action::Create,
    }
}

/// A refused path as an answer. A name over 255 bytes is a bad request for
/// a write (400, never 414: the URI is not what is too long) and simply
/// absent for a read or delete, since no such file can exist.
fn path_error(e: crate::path::PathError, method: &str) -> Error {
    if e == crate::path::PathError::NameTooLong && matches!(method, "GET" | "HEAD") {
        return Error::status(
            404,
            "not found: a name in the path is longer than 255 bytes",
        );
    }
    Error::status(e.status(), e.to_string())
}

/// [`FileRoutes`] held with the share routes, which ask its storage what
/// a path names before minting a link to it.
pub struct SharedFileRoutes<S>(pub Arc<FileRoutes<S>>);

impl<S: Storage> Handler for SharedFileRoutes<S> {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        self.0.handle(ex).await
    }
}

impl<S: Storage> crate::shares::Probe for FileRoutes<S> {
    fn kind<'a>(&'a self, key: &'a RelPath) -> crate::shares::KindFuture<'a> {
        Box::pin(async move { self.files.parts().0.stat(key).await.map(|m| m.kind) })
    }
}

/// [`FileRoutes`] with IETF resumable creation in front: a `PUT`/`POST`
/// carrying `Upload-Complete` (interop version 8) becomes an upload
/// resource; `OPTIONS` answers `Upload-Limit`; everything else goes on.
pub struct FileRoutesWithUploads<S> {
    pub routes: Arc<FileRoutes<S>>,
    pub uploads: Arc<Uploads<S>>,
}

impl<S: Storage + PartialUploads + Clone> Handler for FileRoutesWithUploads<S> {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        if ex.method() == "OPTIONS" {
            return Box::pin(self.uploads.options(ex)).await;
        }
        if resumable::wants_resumable(ex) {
            let r = Box::pin(changes::in_actor_scope(self.uploads.ietf_create(ex))).await;
            return resumable::answer_error(ex, r, false).await;
        }
        self.routes.handle(ex).await
    }
}
