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

use crate::files::Files;
use crate::path::{parse_request_path, RelPath};
use crate::policy::{Action, Decision, Policy, Principal};
use crate::respond::{admit, admit_with, etag, has_body, write_preconditions, WriteGuard};
use crate::storage::partial::{PartialData, PartialUploads};
use crate::storage::{CommitCheck, Kind, Storage, StorageError, Written};
use crate::{RouteClass, ServiceConfig, UploadPath};

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
}

impl Default for UploadsConfig {
    fn default() -> Self {
        UploadsConfig {
            limits: Limits::default(),
            max_partials: 1000,
            max_partials_per_client: 100,
            empty_expiry_secs: 600,
        }
    }
}

/// How long a new append waits for the one it took over from to let go.
const TAKEOVER_WAIT: Duration = Duration::from_secs(10);

/// One upload's in-process state: the acknowledged state (what HEAD
/// reports), the append lock, and the signal that makes a running append
/// give way to a newer one.
struct Slot {
    state: Mutex<UploadState>,
    append: tokio::sync::Mutex<()>,
    takeover: tokio::sync::Notify,
    gone: AtomicBool,
    /// The address that created it here (counted against its cap), if
    /// it was created without a token by this process.
    owner: Option<std::net::IpAddr>,
}

impl Slot {
    fn new(state: UploadState) -> Self {
        Slot {
            owner: None,
            state: Mutex::new(state),
            append: tokio::sync::Mutex::new(()),
            takeover: tokio::sync::Notify::new(),
            gone: AtomicBool::new(false),
        }
    }

    fn snapshot(&self) -> UploadState {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
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
    /// Uploads the last sweep found unusable (no readable record, or data
    /// shorter than its record): removed if the next sweep still does, so a
    /// creation in flight between its two files is never taken for one.
    unusable: Mutex<std::collections::HashSet<UploadId>>,
    /// Held from the capacity check to the new upload's first record, so a
    /// burst of creations cannot all pass `max_partials` together.
    creating: tokio::sync::Mutex<()>,
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

fn location(id: &UploadId) -> String {
    format!("{UPLOADS_PREFIX}{id}")
}

fn tus_fields(ex: &Exchange) -> tus::Fields<'_> {
    tus::Fields {
        tus_resumable: ex.header("tus-resumable"),
        content_type: ex.header("content-type"),
        content_length: ex.content_length(),
        has_body: has_body(ex),
        upload_offset: ex.header("upload-offset"),
        upload_length: ex.header("upload-length"),
        upload_defer_length: ex.header("upload-defer-length"),
        upload_metadata: ex.header("upload-metadata"),
        upload_checksum: ex.header("upload-checksum"),
    }
}

fn ietf_fields(ex: &Exchange) -> ietf::Fields<'_> {
    ietf::Fields {
        interop_version: ex.header("upload-draft-interop-version"),
        upload_complete: ex.header("upload-complete"),
        upload_offset: ex.header("upload-offset"),
        upload_length: ex.header("upload-length"),
        content_type: ex.header("content-type"),
        content_length: ex.content_length(),
    }
}

/// Whether an upload's `length` bytes have the sha-256 `want` (hex), read
/// back from its local `file`; a store without one cannot be read back
/// here, so the check is skipped (and logged).
async fn representation_matches(
    file: Option<std::fs::File>,
    length: u64,
    want: &str,
) -> Result<bool, Error> {
    let Some(file) = file else {
        tracing::warn!("this store cannot read an upload back: its Repr-Digest is not checked");
        return Ok(true);
    };
    let sum = tokio::task::spawn_blocking(move || -> std::io::Result<[u8; 32]> {
        let mut h = sha2::Sha256::new();
        crate::upload::hash_file_range(&file, &mut h, 0, length, None)?;
        Ok(h.finalize().into())
    })
    .await
    .map_err(|e| Error::Io(std::io::Error::other(e)))?
    .map_err(StorageError::from)?;
    Ok(crate::digest::hex(&sum) == want)
}

type Sha256Sum = [u8; 32];

/// The sha-256 members of a request's `Repr-Digest` and `Content-Digest`
/// (400 when one is malformed).
fn request_digests(ex: &Exchange) -> Result<(Option<Sha256Sum>, Option<Sha256Sum>), Error> {
    let field = |name: &'static str| -> Result<Option<[u8; 32]>, Error> {
        let Some(v) = ex.header(name) else {
            return Ok(None);
        };
        let v = std::str::from_utf8(v)
            .map_err(|_| Error::status(400, format!("{name} is not text")))?;
        crate::digest::sha256_member(name, v).map_err(|e| Error::status(400, e.to_string()))
    };
    Ok((field("repr-digest")?, field("content-digest")?))
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

/// What one append did.
struct Appended {
    /// The upload's progress, or why the bytes were not counted.
    result: Result<Progress, Refused>,
    /// Where a completed upload landed.
    written: Option<Written>,
    /// The completing request's `X-OC-Mtime` was given to the file.
    mtime_applied: bool,
    /// The request body failed (cut, timeout, taken over): the bytes that
    /// arrived are kept, and this error ends the exchange.
    body_error: Option<Error>,
}

enum Refused {
    Protocol(Refusal),
    /// tus checksum extension: the bytes did not match (460).
    Checksum,
}

/// A running hash for the tus checksum extension.
enum Hasher {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl Hasher {
    fn new(a: ChecksumAlgorithm) -> Self {
        match a {
            ChecksumAlgorithm::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            ChecksumAlgorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
        }
    }

    fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        }
    }
}

/// Moves the request body into `data`: zero-copy when nothing is hashed,
/// the server uses splice (`--upload-path`) and the store has a file, else
/// through the connection buffer.
async fn receive<D: PartialData>(
    ex: &mut Exchange,
    data: &mut D,
    hash: Option<ChecksumAlgorithm>,
    path: UploadPath,
) -> Result<Option<Vec<u8>>, Error> {
    if hash.is_none() && path == UploadPath::Splice {
        if let Some(file) = data.as_file() {
            match ex.receive_body_into(file, |_| {}).await {
                Ok(Some(_)) => return Ok(None),
                Ok(None) => {}
                Err(FileBodyError::File(e)) => return Err(StorageError::from(e).into()),
                Err(FileBodyError::Body(e)) => return Err(e),
            }
        }
    }
    let mut hasher = hash.map(Hasher::new);
    while let Some(piece) = ex.read_body().await? {
        if let Some(h) = &mut hasher {
            h.update(piece);
        }
        data.write(piece).await?;
    }
    Ok(hasher.map(Hasher::finish))
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
            unusable: Mutex::new(std::collections::HashSet::new()),
            creating: tokio::sync::Mutex::new(()),
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<UploadId, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn forget(&self, id: &UploadId) {
        if let Some(slot) = self.slots().remove(id) {
            slot.gone.store(true, Ordering::Relaxed);
            if let Some(owner) = slot.owner {
                let mut counts = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(n) = counts.get_mut(&owner) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        counts.remove(&owner);
                    }
                }
            }
        }
    }

    /// The upload `id`, loaded from the store on first use; 404 when it is
    /// unknown, gone or expired.
    async fn slot(&self, id: &UploadId) -> Result<Arc<Slot>, Error> {
        let found = self.slots().get(id).cloned();
        let load = || async {
            self.storage.load_partial(id).await.map_err(|e| match e {
                StorageError::NotFound | StorageError::NotDir => {
                    self.forget(id);
                    Error::status(404, "no such upload")
                }
                e => e.into(),
            })
        };
        let slot = match found {
            // Another server may have appended (a shared store): the record
            // is the truth unless an append runs here.
            Some(slot) if self.storage.shared() => {
                if let Ok(_idle) = slot.append.try_lock() {
                    let state = load().await?;
                    *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
                }
                slot
            }
            Some(slot) => slot,
            None => {
                let state = load().await?;
                self.slots()
                    .entry(*id)
                    .or_insert_with(|| Arc::new(Slot::new(state)))
                    .clone()
            }
        };
        if slot.snapshot().expired(now()) {
            return Err(Error::status(404, "this upload expired"));
        }
        Ok(slot)
    }

    /// Remove expired partial uploads (and their in-process state), and
    /// unusable ones seen by two sweeps in a row; returns how many were
    /// removed. Uploads with an append running are left for the next sweep.
    pub async fn sweep_expired(&self) -> usize {
        let list = match self.storage.list_partials().await {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list partial uploads for the expiry sweep");
                return 0;
            }
        };
        let t = now();
        let mut removed = 0;
        let before = std::mem::take(&mut *self.unusable.lock().unwrap_or_else(|e| e.into_inner()));
        let mut unusable = std::collections::HashSet::new();
        for (id, state) in list {
            let expired = match state {
                Some(state) => state.expired(t) || self.empty_and_idle(&state, t),
                None if self.slots().contains_key(&id) => false,
                None if before.contains(&id) => true,
                None => {
                    unusable.insert(id);
                    false
                }
            };
            if !expired {
                continue;
            }
            let slot = self.slots().get(&id).cloned();
            let _held = match &slot {
                Some(s) => match s.append.try_lock() {
                    Ok(g) => Some(g),
                    Err(_) => continue,
                },
                None => None,
            };
            self.forget(&id);
            match self.storage.delete_partial(&id).await {
                Ok(()) => removed += 1,
                Err(e) => tracing::warn!(%id, error = %e, "could not remove an expired upload"),
            }
        }
        *self.unusable.lock().unwrap_or_else(|e| e.into_inner()) = unusable;
        if removed > 0 {
            tracing::info!(removed, "removed expired partial uploads");
        }
        removed
    }

    /// An upload that never received a byte for `empty_expiry_secs`.
    fn empty_and_idle(&self, state: &UploadState, now: u64) -> bool {
        !state.complete
            && state.offset == 0
            && state.length != Some(0)
            && now >= state.created.saturating_add(self.ucfg.empty_expiry_secs)
    }

    /// Refuse a creation the store has no room for: over the count of
    /// partial uploads (503), or an announced length over the free space
    /// (507) — before any body byte is read.
    async fn check_capacity(&self, length: Option<u64>) -> Result<(), Error> {
        let mut count = self.storage.count_partials().await?;
        if count >= self.ucfg.max_partials {
            // Full: empty creations left idle may be what fills it.
            if self.sweep_expired().await > 0 {
                count = self.storage.count_partials().await?;
            }
        }
        if count >= self.ucfg.max_partials {
            return Err(Error::status(
                503,
                format!(
                    "the server holds {count} unfinished uploads, its limit (serve --max-partial-uploads); finish or cancel some, or try later"
                ),
            ));
        }
        if let Some(needed) = length {
            if let Some(available) = self.storage.available().await {
                if needed > available {
                    return Err(StorageError::NoRoom { needed, available }.into());
                }
            }
        }
        Ok(())
    }

    /// Everything that would make publishing `target` fail, refused at
    /// creation rather than after the last byte: the policy (`w` there,
    /// and `d` if a file has the name), a folder at the name (409), a file
    /// where a parent folder would be (409).
    async fn check_target(
        &self,
        guard: &WriteGuard,
        who: Principal,
        target: &RelPath,
    ) -> Result<(), Error> {
        match self.policy.decide(who, Action::Create, target) {
            Decision::Allow => {}
            Decision::NeedCredentials => {
                return Err(Error::status(401, "a valid bearer token is required"))
            }
            Decision::Forbidden(why) => return Err(Error::status(403, why)),
        }
        self.cfg.hidden.refuse(target)?;
        match self.storage.stat(target).await {
            Ok(meta) if meta.kind == Kind::Dir => {
                return Err(Error::status(
                    409,
                    format!("{target} is a folder; an upload needs a file name there"),
                ))
            }
            Ok(_) if !guard.may_replace() => return Err(guard.refusal()),
            Err(StorageError::NotDir) => {
                return Err(Error::status(
                    409,
                    format!("a parent of {target} is a file, not a folder"),
                ))
            }
            _ => {}
        }
        if target.parent().is_empty() {
            return Ok(());
        }
        let mut parent = String::from("/");
        for name in target.parent() {
            crate::path::encode_segment_into(name, &mut parent);
            parent.push('/');
        }
        let Ok(parent) = parse_request_path(&parent) else {
            return Ok(());
        };
        match self.storage.stat(&parent).await {
            Ok(meta) if meta.kind == Kind::File => Err(Error::status(
                409,
                format!("a parent of {target} is a file, not a folder"),
            )),
            Err(StorageError::NotDir) => Err(Error::status(
                409,
                format!("a parent of {target} is a file, not a folder"),
            )),
            _ => Ok(()),
        }
    }

    /// Refuse a creation by an address (without a token) that holds
    /// `max_partials_per_client` unfinished uploads already.
    fn claim_client_slot(
        &self,
        who: Principal,
        peer: std::net::IpAddr,
    ) -> Result<Option<std::net::IpAddr>, Error> {
        if who == Principal::TokenHolder {
            return Ok(None);
        }
        let mut counts = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
        let n = counts.entry(peer).or_insert(0);
        if *n >= self.ucfg.max_partials_per_client {
            return Err(Error::status(
                503,
                format!(
                    "this address holds {n} unfinished uploads, the limit per client; finish or cancel some, or try later"
                ),
            ));
        }
        *n += 1;
        Ok(Some(peer))
    }

    /// A new upload for `target`: its store entry and in-process slot.
    #[allow(clippy::too_many_arguments)]
    async fn create(
        &self,
        protocol: Protocol,
        target: &RelPath,
        length: Option<u64>,
        metadata: Option<String>,
        guard: &WriteGuard,
        if_none_match: bool,
        client: (Principal, std::net::IpAddr),
    ) -> Result<(UploadId, Arc<Slot>), Error> {
        let _one_at_a_time = self.creating.lock().await;
        self.check_capacity(length).await?;
        let owner = self.claim_client_slot(client.0, client.1)?;
        let release = |owner: Option<std::net::IpAddr>| {
            if let Some(owner) = owner {
                let mut counts = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(n) = counts.get_mut(&owner) {
                    *n = n.saturating_sub(1);
                }
            }
        };
        let id = new_id()?;
        let mut state = UploadState::new(
            protocol,
            target.to_url(false),
            length,
            now(),
            self.ucfg.limits.lifetime_secs,
        );
        state.metadata = metadata;
        state.if_none_match = if_none_match;
        state.no_replace = !guard.may_replace();
        if let Err(e) = self.storage.create_partial(&id, &state).await {
            release(owner);
            return Err(e.on_write(target).into());
        }
        let mut slot = Slot::new(state);
        slot.owner = owner;
        let slot = Arc::new(slot);
        self.slots().insert(id, slot.clone());
        Ok((id, slot))
    }

    /// Wait for the append lock of `slot`, asking a running append to give
    /// way: the draft's recommended answer to a client that resumes while
    /// the server still holds its broken request (the older request is cut
    /// at once, keeping the bytes it stored, instead of making the client
    /// wait for the body timeout).
    async fn take_append<'s>(
        &self,
        slot: &'s Slot,
    ) -> Result<tokio::sync::MutexGuard<'s, ()>, Error> {
        if let Ok(g) = slot.append.try_lock() {
            return Ok(g);
        }
        slot.takeover.notify_waiters();
        tokio::time::timeout(TAKEOVER_WAIT, slot.append.lock())
            .await
            .map_err(|_| Error::status(409, "another request is appending to this upload"))
    }

    /// Receive one append into upload `id` under its append lock, then
    /// count what arrived, acknowledge it durably, and publish a complete
    /// upload.
    async fn append(
        &self,
        ex: &mut Exchange,
        id: &UploadId,
        slot: &Slot,
        mut plan: Append,
        check: Option<CommitCheck>,
        who: Principal,
    ) -> Result<Appended, Error> {
        // As for a PUT: a Content-Digest covers this request's content (a
        // mismatch discards its bytes), a Repr-Digest the whole upload
        // (checked before publishing).
        let (repr, content) = request_digests(ex)?;
        if let (None, Some(sum)) = (&plan.checksum, content) {
            plan.checksum = Some(wirespeed_resumable::Checksum {
                algorithm: ChecksumAlgorithm::Sha256,
                digest: sum.to_vec(),
            });
        }
        if let Some(sum) = repr {
            let mut state = slot.snapshot();
            let hex = crate::digest::hex(&sum);
            if state.sha256.as_deref() != Some(hex.as_str()) {
                state.sha256 = Some(hex);
                self.storage.save_partial(id, &state).await?;
                *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
            }
        }
        let target = slot.snapshot().target;
        let key = parse_request_path(&target)
            .map_err(|_| Error::status(500, "an upload's target is not a valid path"))?;
        if let Some(needed) = ex.content_length() {
            if let Some(available) = self.storage.available().await {
                if needed > available {
                    return Err(StorageError::NoRoom { needed, available }.into());
                }
            }
        }
        // The request that completes the upload may carry `X-OC-Mtime`.
        let mtime = crate::mtime::requested(ex)?;
        ex.limit_body(plan.max_bytes)?;
        let _in_progress = self.cfg.metrics.as_ref().map(|m| m.upload_started());
        let mut data = self.storage.open_partial(id).await?;
        if data.size().await? != plan.offset {
            // A cut append's tail that was never counted: not part of the upload.
            data.truncate(plan.offset).await?;
        }
        let takeover = slot.takeover.notified();
        tokio::pin!(takeover);
        takeover.as_mut().enable();
        let hash = plan.checksum.as_ref().map(|c| c.algorithm);
        let received = tokio::select! {
            r = receive(ex, &mut data, hash, self.cfg.upload_path) => r,
            () = &mut takeover => {
                ex.close_after_response();
                Err(Error::status(409, "a newer request to this upload took over"))
            }
        };
        let end = data.size().await?;
        let mut got = end.saturating_sub(plan.offset);
        if got > plan.max_bytes {
            data.truncate(plan.offset + plan.max_bytes).await?;
            got = plan.max_bytes;
        }
        let (digest, body_error) = match received {
            Ok(d) => (d, None),
            Err(e) => (None, Some(e)),
        };
        if let Some(want) = &plan.checksum {
            // Bytes that cannot be verified do not count (tus checksum).
            let good = body_error.is_none() && digest.as_deref() == Some(&want.digest[..]);
            if !good {
                data.truncate(plan.offset).await?;
                return Ok(Appended {
                    result: Err(Refused::Checksum),
                    written: None,
                    mtime_applied: false,
                    body_error,
                });
            }
        }
        if got > 0 {
            data.sync().await?;
        }
        let mut next = slot.snapshot();
        let before = next.length;
        let progress = match next.record(&plan, got, body_error.is_none()) {
            Ok(p) => p,
            Err(r) => {
                data.truncate(plan.offset).await?;
                return Ok(Appended {
                    result: Err(Refused::Protocol(r)),
                    written: None,
                    mtime_applied: false,
                    body_error,
                });
            }
        };
        if slot.gone.load(Ordering::Relaxed) {
            return Err(
                body_error.unwrap_or_else(|| Error::status(404, "the upload was cancelled"))
            );
        }
        let mut written = None;
        let mut mtime_applied = false;
        match progress {
            Progress::Partial { .. } => {
                if next.length != before {
                    self.storage.save_partial(id, &next).await?;
                }
                *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = next;
            }
            Progress::Complete { length } => {
                if let Some(want) = next.sha256.clone() {
                    let file = match data.as_file() {
                        Some(f) => Some(f.try_clone().map_err(StorageError::from)?),
                        None => None,
                    };
                    if !representation_matches(file, length, &want).await? {
                        self.forget(id);
                        let _ = self.storage.delete_partial(id).await;
                        if let Some(m) = &self.cfg.metrics {
                            m.digest_mismatch();
                        }
                        return Err(Error::status(
                            400,
                            "digest mismatch: the uploaded bytes do not match the announced \
                             Repr-Digest sha-256; nothing was stored",
                        ));
                    }
                }
                // Kept from the creation: its If-None-Match: *, and "no
                // replacing" when its creator (or this request) lacks `d`.
                let check = match (next.if_none_match, check) {
                    (true, prev) => Some(Box::new(move |m: Option<&crate::storage::Meta>| {
                        m.is_none() && prev.as_ref().is_none_or(|p| p(m))
                    }) as CommitCheck),
                    (false, prev) => prev,
                };
                let mut guard = WriteGuard::new(&self.policy, who, &key);
                if next.no_replace {
                    guard = guard.forbid_replace();
                }
                let check = guard.commit_check(check);
                *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = next;
                if let (Some(t), Some(file)) = (mtime, data.as_file()) {
                    // Before the rename publishes it (metadata: one syscall).
                    file.set_modified(t).map_err(StorageError::from)?;
                    mtime_applied = true;
                }
                let w = self
                    .storage
                    .complete_partial(id, data, &key, check)
                    .await
                    .map_err(|e| guard.explain(e.on_write(&key).into()));
                self.forget(id);
                if w.is_err() {
                    let _ = self.storage.delete_partial(id).await;
                }
                written = Some(w?);
            }
        }
        Ok(Appended {
            result: Ok(progress),
            written,
            mtime_applied,
            body_error,
        })
    }

    fn limit_header(&self, max_age: Option<u64>) -> String {
        ietf::limit_field(&self.ucfg.limits, max_age)
    }

    // ---- tus ------------------------------------------------------------

    /// `POST /-/uploads/…`: tus creation (and creation-with-upload).
    async fn tus_create(&self, ex: &mut Exchange, rest: &str, who: Principal) -> Result<(), Error> {
        let creation = match tus::create(&tus_fields(ex), &self.ucfg.limits) {
            Ok(c) => c,
            Err(r) => return refuse(ex, r, true).await,
        };
        let place =
            parse_request_path(rest).map_err(|e| Error::status(e.status(), e.to_string()))?;
        let target = if place.trailing_slash() {
            let Some(name) = creation.filename.as_deref() else {
                return Err(Error::status(
                    400,
                    "a creation in a folder needs Upload-Metadata with a filename",
                ));
            };
            place
                .join(name)
                .map_err(|e| Error::status(400, format!("the filename is not usable: {e}")))?
        } else {
            place
        };
        // Refused now, not after the last byte (publishing onto a folder fails).
        let guard = WriteGuard::new(&self.policy, who, &target);
        self.check_target(&guard, who, &target).await?;
        let client = (who, ex.peer_addr().ip());
        let (id, slot) = self
            .create(
                Protocol::Tus,
                &target,
                creation.length,
                creation.metadata,
                &guard,
                false,
                client,
            )
            .await?;
        let mut resp = Response::new(201)
            .header("Tus-Resumable", tus::VERSION)
            .header("Location", location(&id));
        // An empty upload is complete at creation: published at once.
        let first = creation.first.or_else(|| {
            (creation.length == Some(0)).then_some(Append {
                offset: 0,
                max_bytes: 0,
                set_length: None,
                completes: false,
                checksum: None,
            })
        });
        if let Some(first) = first {
            let _lock = self.take_append(&slot).await?;
            let done = self.append(ex, &id, &slot, first, None, who).await;
            if !matches!(&done, Ok(d) if d.result.is_ok() && d.body_error.is_none()) {
                // The client never got the Location, so nothing could resume
                // this upload: kept, it would only hold a place until expiry.
                self.forget(&id);
                if let Err(e) = self.storage.delete_partial(&id).await {
                    tracing::warn!(%id, error = %e, "could not remove a failed creation");
                }
            }
            let done = done?;
            if let Some(e) = done.body_error {
                return Err(e);
            }
            match done.result {
                Err(Refused::Checksum) => return checksum_mismatch(ex).await,
                Err(Refused::Protocol(r)) => return refuse(ex, r, true).await,
                Ok(_) => {}
            }
        }
        let state = slot.snapshot();
        resp = resp
            .header("Upload-Offset", state.offset.to_string())
            .header("Upload-Expires", http_date(state.expires));
        ex.send(resp, b"").await
    }

    async fn tus_head(&self, ex: &mut Exchange, id: &UploadId) -> Result<(), Error> {
        if let Err(r) = tus::check_version(&tus_fields(ex)) {
            return refuse(ex, r, true).await;
        }
        let state = self.slot(id).await?.snapshot();
        let mut resp = Response::new(200);
        for (name, value) in tus::offset_fields(&state) {
            resp = resp.header(name, value);
        }
        resp = resp.header("Upload-Expires", http_date(state.expires));
        ex.send(resp, b"").await
    }

    async fn tus_patch(
        &self,
        ex: &mut Exchange,
        id: &UploadId,
        who: Principal,
    ) -> Result<(), Error> {
        let slot = self.slot(id).await?;
        // Refused against the acknowledged state: answered without cutting
        // a running append (only a request that could continue takes over).
        if let Err(r) = tus::append(&tus_fields(ex), &slot.snapshot(), &self.ucfg.limits) {
            return refuse(ex, r, true).await;
        }
        let _lock = self.take_append(&slot).await?;
        let plan = match tus::append(&tus_fields(ex), &slot.snapshot(), &self.ucfg.limits) {
            Ok(p) => p,
            Err(r) => return refuse(ex, r, true).await,
        };
        let done = self.append(ex, id, &slot, plan, None, who).await?;
        if let Some(e) = done.body_error {
            return Err(e);
        }
        match done.result {
            Err(Refused::Checksum) => checksum_mismatch(ex).await,
            Err(Refused::Protocol(r)) => refuse(ex, r, true).await,
            Ok(progress) => {
                let offset = match progress {
                    Progress::Partial { offset } => offset,
                    Progress::Complete { length } => length,
                };
                let mut resp = Response::new(204)
                    .header("Tus-Resumable", tus::VERSION)
                    .header("Upload-Offset", offset.to_string())
                    .header("Upload-Expires", http_date(slot.snapshot().expires));
                if done.mtime_applied {
                    resp = resp.header(crate::mtime::ANSWER.0, crate::mtime::ANSWER.1);
                }
                ex.send(resp, b"").await
            }
        }
    }

    // ---- IETF draft -----------------------------------------------------

    /// `PUT`/`POST` to a file URL with `Upload-Complete`: the upload
    /// resource is made and announced (104) before the body is read.
    pub(crate) async fn ietf_create(&self, ex: &mut Exchange) -> Result<(), Error> {
        RouteClass::Resumable.set(ex);
        let parsed = parse_request_path(ex.path());
        let root = RelPath::root();
        let at = parsed.as_ref().unwrap_or(&root);
        let Some(who) = admit(&self.cfg, &self.policy, ex, Action::Create, at).await? else {
            return Ok(());
        };
        let key = parsed.map_err(|e| Error::status(e.status(), e.to_string()))?;
        if key.is_root() || key.trailing_slash() {
            return Err(Error::status(
                400,
                "an upload needs a file path, not a folder",
            ));
        }
        let guard = WriteGuard::new(&self.policy, who, &key);
        self.check_target(&guard, who, &key).await?;
        // A malformed X-OC-Mtime is refused before an upload is created.
        crate::mtime::requested(ex)?;
        let if_none_match = ex
            .header_str("if-none-match")
            .is_some_and(|v| v.trim() == "*");
        // If-Match / If-None-Match as on a PUT: 412 before the body, and
        // checked again before publishing when this request completes it.
        let check = write_preconditions(&self.storage, ex, &key).await?;
        let creation = match ietf::create(&ietf_fields(ex), &self.ucfg.limits) {
            Ok(c) => c,
            Err(r) => return refuse(ex, r, false).await,
        };
        let client = (who, ex.peer_addr().ip());
        let (id, slot) = self
            .create(
                Protocol::Ietf,
                &key,
                creation.length,
                None,
                &guard,
                if_none_match,
                client,
            )
            .await?;
        let loc = location(&id);
        let interim = ietf::interim_fields(&loc, &self.ucfg.limits);
        let fields: Vec<(&str, &str)> = interim.iter().map(|(k, v)| (*k, v.as_str())).collect();
        ex.send_interim(104, &fields).await?;
        let _lock = self.take_append(&slot).await?;
        let done = self
            .append(ex, &id, &slot, creation.first, check, who)
            .await?;
        self.ietf_answer(ex, &id, &slot, &key, done).await
    }

    async fn ietf_answer(
        &self,
        ex: &mut Exchange,
        id: &UploadId,
        slot: &Slot,
        key: &RelPath,
        done: Appended,
    ) -> Result<(), Error> {
        if let Some(e) = done.body_error {
            return Err(e);
        }
        let progress = match done.result {
            Ok(p) => p,
            Err(Refused::Protocol(r)) => return refuse(ex, r, false).await,
            Err(Refused::Checksum) => return Err(Error::status(400, "checksum mismatch")),
        };
        match (progress, done.written) {
            (Progress::Complete { .. }, Some(written)) => {
                let mut resp = Response::new(match written {
                    Written::Created => 201,
                    Written::Replaced => 204,
                })
                .header("Upload-Complete", "?1")
                .header("Upload-Draft-Interop-Version", INTEROP);
                if written == Written::Created {
                    resp = resp.header("Location", key.to_url(false));
                }
                if done.mtime_applied {
                    resp = resp.header(crate::mtime::ANSWER.0, crate::mtime::ANSWER.1);
                }
                if let Ok(meta) = self.storage.stat(key).await {
                    if meta.kind == Kind::File {
                        resp = resp.header("ETag", etag(&meta));
                    }
                }
                ex.send(resp, b"").await
            }
            (progress, _) => {
                let offset = match progress {
                    Progress::Partial { offset } => offset,
                    Progress::Complete { length } => length,
                };
                let state = slot.snapshot();
                let status = if ex.method() == "PATCH" { 204 } else { 201 };
                let mut resp = Response::new(status)
                    .header("Upload-Draft-Interop-Version", INTEROP)
                    .header("Upload-Complete", "?0")
                    .header("Upload-Offset", offset.to_string())
                    .header(
                        "Upload-Limit",
                        self.limit_header(Some(state.expires.saturating_sub(now()))),
                    );
                if status == 201 {
                    resp = resp.header("Location", location(id));
                }
                ex.send(resp, b"").await
            }
        }
    }

    async fn ietf_head(&self, ex: &mut Exchange, id: &UploadId) -> Result<(), Error> {
        let state = self.slot(id).await?.snapshot();
        let mut resp = Response::new(204).header("Upload-Draft-Interop-Version", INTEROP);
        for (name, value) in ietf::offset_fields(&state, &self.ucfg.limits, now()) {
            resp = resp.header(name, value);
        }
        ex.send(resp, b"").await
    }

    async fn ietf_patch(
        &self,
        ex: &mut Exchange,
        id: &UploadId,
        who: Principal,
    ) -> Result<(), Error> {
        let slot = self.slot(id).await?;
        // As for tus: a request refused anyway does not cut a running append.
        if let Err(r) = ietf::append(&ietf_fields(ex), &slot.snapshot(), &self.ucfg.limits) {
            return refuse(ex, r, false).await;
        }
        let _lock = self.take_append(&slot).await?;
        let state = slot.snapshot();
        let plan = match ietf::append(&ietf_fields(ex), &state, &self.ucfg.limits) {
            Ok(p) => p,
            Err(r) => return refuse(ex, r, false).await,
        };
        let key = parse_request_path(&state.target)
            .map_err(|_| Error::status(500, "an upload's target is not a valid path"))?;
        let done = self.append(ex, id, &slot, plan, None, who).await?;
        self.ietf_answer(ex, id, &slot, &key, done).await
    }

    // ---- both -------------------------------------------------------------

    async fn cancel(&self, ex: &mut Exchange, id: &UploadId, tus: bool) -> Result<(), Error> {
        let slot = self.slot(id).await?;
        // A running append is cut (the draft asks for it) and finds the upload gone.
        slot.gone.store(true, Ordering::Relaxed);
        slot.takeover.notify_waiters();
        let _lock = tokio::time::timeout(TAKEOVER_WAIT, slot.append.lock()).await;
        self.forget(id);
        self.storage.delete_partial(id).await?;
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
        let mut resp = Response::new(204)
            .header("Upload-Limit", self.limit_header(None))
            .header(
                "Upload-Draft-Interop-Version",
                ietf::INTEROP_VERSION.to_string(),
            );
        for (name, value) in tus::discovery_fields(&self.ucfg.limits) {
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
                    Err(_) => None,
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

async fn checksum_mismatch(ex: &mut Exchange) -> Result<(), Error> {
    let resp = Response::new(tus::CHECKSUM_MISMATCH)
        .header("Tus-Resumable", tus::VERSION)
        .header("Content-Type", "text/plain; charset=utf-8");
    ex.send(
        resp,
        b"checksum mismatch: the bytes of this request were discarded\n",
    )
    .await
}

/// The `/-/uploads/` routes.
pub struct UploadRoutes<S>(pub Arc<Uploads<S>>);

impl<S: Storage + PartialUploads + Clone> Handler for UploadRoutes<S> {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        RouteClass::Resumable.set(ex);
        // Errors carry Tus-Resumable for tus clients (who send it), not for
        // IETF ones.
        let tus = ex.header("tus-resumable").is_some();
        let r = self.0.route(ex).await;
        answer_error(ex, r, tus).await
    }
}

/// Answers a failed resumable request itself, so tus clients get
/// `Tus-Resumable` on errors too and a full store's 503 says when to retry;
/// connection-level failures pass on to the exchange.
async fn answer_error(ex: &mut Exchange, r: Result<(), Error>, tus: bool) -> Result<(), Error> {
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

/// The file routes with IETF resumable creation in front: a `PUT`/`POST`
/// carrying `Upload-Complete` (interop version 8) becomes an upload
/// resource; `OPTIONS` answers `Upload-Limit`; everything else is [`Files`].
pub struct FilesWithUploads<S> {
    pub files: Files<S>,
    pub uploads: Arc<Uploads<S>>,
}

impl<S: Storage + PartialUploads + Clone> Handler for FilesWithUploads<S> {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        if ex.method() == "OPTIONS" {
            return self.uploads.options(ex).await;
        }
        if wants_resumable(ex) {
            let r = self.uploads.ietf_create(ex).await;
            return answer_error(ex, r, false).await;
        }
        self.files.handle(ex).await
    }
}
