//! Resumable uploads: tus 1.0.0 and the IETF draft (interop version 8) over
//! one partial-upload store ([`PartialUploads`]). The decisions are
//! `wirespeed-resumable`'s; this module moves the bytes and answers.
//!
//! - `OPTIONS /-/uploads/`: tus discovery and `Upload-Limit`.
//! - `POST /-/uploads/<folder>/` (name from `Upload-Metadata` `filename`) or
//!   `POST /-/uploads/<path>`: tus creation, with or without first bytes.
//! - `PUT`/`POST /<path>` with `Upload-Complete` and
//!   `Upload-Draft-Interop-Version: 8`: IETF creation; `104` with the
//!   upload's `Location` goes out before the body is read.
//! - `HEAD`/`PATCH`/`DELETE /-/uploads/<id>`: offset, append, cancel (tus
//!   when the request carries `Tus-Resumable`, else the IETF draft).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha1::Digest as _;
use wirespeed_net::{Error, Exchange, FileBodyError, Handler, Response};
use wirespeed_resumable::{
    ietf, tus, Append, ChecksumAlgorithm, Limits, Progress, Protocol, Refusal, UploadId,
    UploadState,
};

use crate::answers::storage_answer;
use crate::config::ServiceConfig;
use crate::metrics::RouteClass;
use crate::path::{parse_request_path, RelPath};
use crate::policy::{Action, Decision, Policy, Principal};
use crate::respond::{admit, admit_with, etag, has_body, write_preconditions, WriteGuard};
use crate::storage::partial::{PartialData, PartialUploads};
use crate::storage::{CommitCheck, Kind, Storage, StorageError, Written};
use crate::upload::UploadPath;

mod append;
mod completed;
mod concat_routes;
mod expiry;
mod ietf_routes;
mod slot;
mod tus_routes;

use append::{checksum_mismatch, Appended, Refused, TAKEOVER_WAIT};
use ietf_routes::ietf_fields;
use slot::Slot;

/// Where upload resources live.
pub const UPLOADS_PREFIX: &str = "/-/uploads/";
/// `Upload-Draft-Interop-Version` of every IETF answer: the draft iteration
/// implemented (its clients ignore servers of other iterations).
const INTEROP: &str = "8";
/// The router pattern of [`UPLOADS_PREFIX`].
pub const UPLOADS_PREFIX_ROUTE: &str = "/-/uploads/*";

/// Settings of the resumable routes.
#[derive(Debug, Clone, Copy)]
pub struct UploadsConfig {
    /// Size, append and lifetime limits.
    pub limits: Limits,
    /// Most partial uploads kept at once; creations beyond get 503.
    pub max_partials: usize,
    /// Most partial uploads one client address (without a token) may
    /// create and keep in this process; creations beyond get 503.
    pub max_partials_per_client: usize,
    /// Seconds an upload that never received a byte is kept (an empty
    /// creation holds a place of `max_partials` only this long).
    pub empty_expiry_secs: u64,
    /// How long a final upload's request (tus concatenation) waits for its
    /// parts to be joined; a longer join goes on without it, and `HEAD`
    /// says when it is done (a proxy's read timeout must not cut it).
    pub join_wait: Duration,
}

impl Default for UploadsConfig {
    fn default() -> Self {
        UploadsConfig {
            limits: Limits::default(),
            max_partials: 1000,
            max_partials_per_client: 100,
            empty_expiry_secs: 600,
            join_wait: Duration::from_secs(10),
        }
    }
}

/// The resumable-upload service over a store; shared by its routes and the
/// expiry sweep.
pub struct Uploads<S> {
    storage: S,
    cfg: ServiceConfig,
    policy: Policy,
    /// Partial uploads per creating address (see [`Slot::owner`]).
    per_client: Mutex<HashMap<std::net::IpAddr, usize>>,
    ucfg: UploadsConfig,
    slots: Mutex<HashMap<UploadId, Arc<Slot>>>,
    /// Uploads completed here, answerable to HEAD until they expire.
    completed: Mutex<completed::Completed>,
    /// Uploads the last sweep found unusable (no readable record, or data
    /// shorter than its record): removed if the next sweep still does, so a
    /// creation in flight between its two files is never taken for one.
    unusable: Mutex<std::collections::HashSet<UploadId>>,
    /// Held from the capacity check to the new upload's first record, so a
    /// burst of creations cannot all pass `max_partials` together.
    creating: tokio::sync::Mutex<()>,
    /// Held while a final upload (tus concatenation) checks and takes its
    /// partial uploads.
    finals: tokio::sync::Mutex<()>,
    /// Final uploads whose parts are being joined (or whose join ended
    /// and nobody has looked since).
    joining: Mutex<HashMap<UploadId, Arc<concat_routes::Join>>>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Unix seconds of 9999-12-31 23:59:59, the last date HTTP can write.
const LAST_HTTP_DATE: u64 = 253_402_300_799;

/// An HTTP date, capped at the last one (later times panic in `httpdate`).
fn http_date(secs: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs.min(LAST_HTTP_DATE)))
}

fn new_id() -> Result<UploadId, Error> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| Error::status(500, format!("no randomness for an upload id: {e}")))?;
    Ok(UploadId::from_random(bytes))
}

/// A partial upload a final one is joining (it may not go away meanwhile).
fn is_taken(state: &UploadState) -> bool {
    matches!(
        state.concat,
        Some(wirespeed_resumable::concat::Concat::Partial { used: true })
    )
}

fn location(base: &str, id: &UploadId) -> String {
    format!("{base}{UPLOADS_PREFIX}{id}")
}

/// Whether a request to a file URL asks for an IETF resumable upload.
pub(crate) fn wants_resumable(ex: &Exchange) -> bool {
    matches!(ex.method(), "PUT" | "POST") && ietf_fields(ex).wants_resumable()
}

/// The answer to a refused request: its status and fields, and the problem
/// document where the protocol defines one.
async fn refuse(ex: &mut Exchange, r: Refusal, tus: bool) -> Result<(), Error> {
    let mut resp = Response::new(r.status());
    for (name, value) in &r.headers {
        resp = resp.header(name, value);
    }
    if tus {
        resp = resp.header("Tus-Resumable", tus::VERSION);
    }
    match r.problem {
        Some(problem) => {
            let resp = resp.header("Content-Type", "application/problem+json");
            ex.send(resp, problem.as_bytes()).await
        }
        None => {
            let resp = resp.header("Content-Type", "text/plain; charset=utf-8");
            ex.send(resp, format!("{}\n", r.message).as_bytes()).await
        }
    }
}

impl<S: Storage + PartialUploads + Clone> Uploads<S> {
    pub fn new(storage: S, cfg: ServiceConfig, ucfg: UploadsConfig) -> Self {
        Uploads {
            storage,
            policy: cfg.policy(),
            per_client: Mutex::new(HashMap::new()),
            cfg,
            ucfg,
            slots: Mutex::new(HashMap::new()),
            completed: Mutex::new(completed::Completed::default()),
            unusable: Mutex::new(std::collections::HashSet::new()),
            creating: tokio::sync::Mutex::new(()),
            finals: tokio::sync::Mutex::new(()),
            joining: Mutex::new(HashMap::new()),
        }
    }

    /// A completed upload's state (offset = length), until it expires.
    fn completed(&self, id: &UploadId) -> Option<UploadState> {
        let c = self.completed.lock().unwrap_or_else(|e| e.into_inner());
        c.get(id, now())
    }

    /// The state HEAD reports: once a running append (perhaps of a client
    /// that was just killed) has let go, so that an append at the offset
    /// reported is taken; a completed upload's until it expires.
    async fn settled_state(&self, id: &UploadId) -> Result<UploadState, Error> {
        let slot = match self.slot(id).await {
            Ok(slot) => slot,
            Err(e) => return self.completed(id).ok_or(e),
        };
        let _settled = self.take_append(&slot).await?;
        if slot.gone.load(Ordering::Relaxed) {
            // Completed (or cancelled) while we waited.
            return self
                .completed(id)
                .ok_or_else(|| Error::status(404, "no such upload"));
        }
        Ok(slot.snapshot())
    }

    fn limit_header(&self, max_age: Option<u64>) -> String {
        ietf::limit_field(&self.ucfg.limits, max_age)
    }

    async fn cancel(&self, ex: &mut Exchange, id: &UploadId, tus: bool) -> Result<(), Error> {
        let slot = self.slot(id).await?;
        if is_taken(&slot.snapshot()) {
            return Err(Error::status(
                409,
                "this partial upload is being joined into a final upload",
            ));
        }
        // A running append is cut (the draft asks for it) and finds the upload gone.
        slot.gone.store(true, Ordering::Relaxed);
        slot.takeover.notify_waiters();
        let _lock = tokio::time::timeout(TAKEOVER_WAIT, slot.append.lock()).await;
        self.forget(id);
        self.storage
            .delete_partial(id)
            .await
            .map_err(storage_answer)?;
        let mut resp = Response::new(204);
        if tus {
            resp = resp.header("Tus-Resumable", tus::VERSION);
        }
        ex.send(resp, b"").await
    }

    /// `OPTIONS`: tus discovery and the draft's `Upload-Limit`.
    pub(crate) async fn options(&self, ex: &mut Exchange) -> Result<(), Error> {
        RouteClass::Resumable.set(ex);
        // What the server takes is itself information: a private server
        // tells it only to a token holder.
        let root = RelPath::root();
        if admit(&self.cfg, &self.policy, ex, Action::Read, &root)
            .await?
            .is_none()
        {
            return Ok(());
        }
        // The file routes' OPTIONS: WebDAV's fields too (`dav`).
        let mut resp = Response::new(204)
            .header("DAV", crate::respond::DAV_COMPLIANCE)
            .header("MS-Author-Via", "DAV")
            .header("Allow", crate::respond::DAV_ALLOW)
            .header("Upload-Limit", self.limit_header(None))
            .header(
                "Upload-Draft-Interop-Version",
                ietf::INTEROP_VERSION.to_string(),
            );
        for (name, value) in tus::discovery_fields(&self.ucfg.limits, self.storage.concatenates()) {
            resp = resp.header(name, value);
        }
        ex.send(resp, b"").await
    }

    /// Where the policy decides an upload route: a creation's place (the
    /// path after `/-/uploads`), an existing upload's target, else the root
    /// (an unknown upload is 404 once the asker passes).
    async fn upload_place(&self, method: &str, rest: &str) -> RelPath {
        let place = if method == "POST" {
            parse_request_path(rest).ok()
        } else {
            match UploadId::parse(rest.get(1..).unwrap_or("")) {
                Some(id) => match self.slot(&id).await {
                    Ok(slot) => parse_request_path(&slot.snapshot().target).ok(),
                    Err(_) => self
                        .completed(&id)
                        .or_else(|| self.joining_state(&id))
                        .and_then(|s| parse_request_path(&s.target).ok()),
                },
                None => None,
            }
        };
        place.unwrap_or_else(RelPath::root)
    }

    async fn route(&self, ex: &mut Exchange) -> Result<(), Error> {
        if ex.method() == "OPTIONS" {
            return self.options(ex).await;
        }
        let tus = ex.header("tus-resumable").is_some();
        let extra: &[(&str, &str)] = if tus {
            &[("Tus-Resumable", tus::VERSION)]
        } else {
            &[]
        };
        let rest = ex.path()[UPLOADS_PREFIX.len() - 1..].to_string();
        // tus core: X-HTTP-Method-Override names the method (for clients
        // behind proxies that only pass GET and POST).
        let method = match (tus, ex.method(), ex.header("x-http-method-override")) {
            (true, "POST", Some(m)) if [&b"PATCH"[..], b"DELETE", b"HEAD"].contains(&m) => {
                std::str::from_utf8(m).unwrap_or("POST").to_string()
            }
            (_, m, _) => m.to_string(),
        };
        // Every upload route writes, decided where the upload lands (asked
        // again at the exact name: at creation, and at completion).
        let at = self.upload_place(&method, &rest).await;
        let Some(who) = admit_with(&self.cfg, &self.policy, ex, Action::Create, &at, extra).await?
        else {
            return Ok(());
        };
        if method == "POST" {
            return self.tus_create(ex, &rest, who).await;
        }
        let Some(id) = UploadId::parse(&rest[1..]) else {
            return Err(Error::status(404, "no such upload"));
        };
        let method: &'static str = match method.as_str() {
            "HEAD" => "HEAD",
            "PATCH" => "PATCH",
            "DELETE" => "DELETE",
            _ => "other",
        };
        match (method, tus) {
            ("HEAD", true) => self.tus_head(ex, &id).await,
            ("HEAD", false) => self.ietf_head(ex, &id).await,
            ("PATCH", true) => self.tus_patch(ex, &id, who).await,
            ("PATCH", false) => self.ietf_patch(ex, &id, who).await,
            ("DELETE", tus) => self.cancel(ex, &id, tus).await,
            _ => Err(Error::status(405, "method not allowed")),
        }
    }
}

/// The `/-/uploads/` routes.
pub struct UploadRoutes<S>(pub Arc<Uploads<S>>);

impl<S: Storage + PartialUploads + Clone> Handler for UploadRoutes<S> {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        RouteClass::Resumable.set(ex);
        // Errors carry Tus-Resumable for tus clients (who send it), not for
        // IETF ones.
        let tus = ex.header("tus-resumable").is_some();
        // Creations, appends and publications name their principal for the
        // change stream.
        let r = crate::storage::changes::in_actor_scope(self.0.route(ex)).await;
        answer_error(ex, r, tus).await
    }
}

/// Answers a failed resumable request itself, so tus clients get
/// `Tus-Resumable` on errors too and a full store's 503 says when to retry;
/// connection-level failures pass on to the exchange.
pub(crate) async fn answer_error(
    ex: &mut Exchange,
    r: Result<(), Error>,
    tus: bool,
) -> Result<(), Error> {
    let e = match r {
        Err(e) if !ex.response_started() => e,
        other => return other,
    };
    if matches!(
        e,
        Error::Proto(_) | Error::Timeout(_) | Error::UnexpectedEof
    ) || e.is_connection_lost()
    {
        return Err(e);
    }
    let status = e.http_status();
    if status >= 500 {
        tracing::error!(error = %e, "resumable upload failed");
    }
    let text = if status >= 500 && !matches!(e, Error::Status { .. }) {
        "storage error".to_string()
    } else {
        e.to_string()
    };
    let mut resp = Response::new(status).header("Content-Type", "text/plain; charset=utf-8");
    if tus {
        resp = resp.header("Tus-Resumable", tus::VERSION);
    }
    if status == 503 {
        resp = resp.header("Retry-After", "60");
    }
    ex.send(resp, format!("{text}\n").as_bytes()).await
}
