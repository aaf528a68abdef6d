//! Response pieces shared by the file routes (`files`) and the encoded
//! upload routes (`encoded`), so neither route module imports the other for
//! them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use wirespeed_net::{Error, Exchange, Response};

use crate::answers::{storage_answer, IntoAnswer as _};
use crate::conditional::write_allowed;
use crate::config::ServiceConfig;
use crate::digest::format_sha256;
use crate::locks::{LockTable, Reach, Submitted};
use crate::path::RelPath;
use crate::policy::shares::Refusal;
use crate::policy::{sessions, Action, Decision, Policy, Principal};
use crate::storage::{CommitCheck, Kind, Meta, Storage, StorageError, Upload, Written};
pub use wirespeed_units::human_size;

/// The ETag every route answers (kept in `conditional`, with the other
/// validators, so the lock check can use it too).
pub use crate::conditional::etag;

/// The answer to a stored single-file upload (PUT, and the single-file
/// POSTs): 201 (with Location) or 204, `Repr-Digest` of the stored bytes
/// when they were hashed, and the ETag.
pub(crate) async fn respond_stored<S: Storage>(
    storage: &S,
    ex: &mut Exchange,
    key: &RelPath,
    written: Written,
    sum: Option<&[u8; 32]>,
) -> Result<(), Error> {
    respond_stored_with(storage, ex, key, written, sum, &[]).await
}

/// [`respond_stored`] with `extra` fields (`X-OC-Mtime: accepted`).
pub(crate) async fn respond_stored_with<S: Storage>(
    storage: &S,
    ex: &mut Exchange,
    key: &RelPath,
    written: Written,
    sum: Option<&[u8; 32]>,
    extra: &[(&str, &str)],
) -> Result<(), Error> {
    let mut resp = Response::new(match written {
        Written::Created => 201,
        Written::Replaced => 204,
    });
    for (name, value) in extra {
        resp = resp.header(name, value);
    }
    if let Some(sum) = sum {
        resp = resp.header("Repr-Digest", format_sha256(sum));
    }
    if written == Written::Created {
        resp = resp.header("Location", format!("{}{}", ex.base(), key.to_url(false)));
    }
    if let Ok(meta) = storage.stat(key).await {
        if meta.kind == Kind::File {
            resp = resp.header("ETag", etag(&meta));
        }
    }
    ex.send(resp, b"").await
}

/// The 413 of a body that crossed `--max-body` while streaming (no length
/// announced), saying the limit; other errors pass unchanged.
pub(crate) fn explain_too_large(e: Error, max_body: Option<u64>) -> Error {
    match (&e, max_body) {
        (Error::Proto(wirespeed_net::proto::ProtoError::BodyTooLarge), Some(max)) => Error::status(
            413,
            format!(
                "the upload is larger than the limit, {} (serve --max-body); nothing was stored",
                human_size(max)
            ),
        ),
        _ => e,
    }
}

/// A refused request's body is not drained (that would let anyone without
/// a token hold a 256 KiB buffer for as long as they trickle bytes): the
/// connection closes after the answer instead.
pub(crate) fn close_if_body(ex: &mut Exchange) {
    if has_body(ex) {
        ex.close_after_response();
    }
}

/// 421 unless the request's `Host` is a name this server answers
/// (`hosts`: the DNS-rebinding guard; `None`: every name is).
pub(crate) fn check_host(
    hosts: Option<&crate::policy::origin::AllowedHosts>,
    ex: &mut Exchange,
) -> Result<(), Error> {
    let refused = hosts.map_or(Ok(()), |h| {
        crate::answers::refuse_misdirected(h, ex.header_str("host"))
    });
    if refused.is_err() {
        close_if_body(ex);
    }
    refused
}

/// 403 when the request comes from a page on another site
/// ([`is_cross_origin`](crate::policy::origin::is_cross_origin)); callers
/// ask it for requests that change state, and `refusal` says what a page
/// elsewhere may not do.
pub(crate) fn refuse_cross_origin(ex: &mut Exchange, refusal: &'static str) -> Result<(), Error> {
    let cross = crate::policy::origin::is_cross_origin(
        ex.header_str("sec-fetch-site"),
        ex.header_str("origin"),
        ex.header_str("host"),
        ex.forwarded_proto(),
    );
    if cross {
        close_if_body(ex);
        return Err(Error::status(403, refusal));
    }
    Ok(())
}

/// The request carries body bytes (chunked, or a nonzero Content-Length).
pub(crate) fn has_body(ex: &Exchange) -> bool {
    !matches!(
        ex.body_framing(),
        wirespeed_net::proto::BodyFraming::Empty | wirespeed_net::proto::BodyFraming::Length(0)
    )
}

/// Names `who` as the author of what this request changes (for the change
/// stream), where the front door opened a place for it.
fn acting(policy: &Policy, who: Principal) -> Principal {
    if crate::storage::changes::actor_wanted() {
        crate::storage::changes::set_actor(policy.label(who).into());
    }
    who
}

/// An admitted request: its author named, its bodies paced by `[rate]`.
fn admitted(cfg: &ServiceConfig, policy: &Policy, ex: &mut Exchange, who: Principal) -> Principal {
    crate::bandwidth::pace(&cfg.bandwidth, policy, ex, who);
    acting(policy, who)
}

/// The share link `ex` presents (query, else header), owned.
pub(crate) fn presented_link(ex: &Exchange) -> Option<String> {
    let header = ex.header_str(crate::policy::shares::HEADER);
    crate::policy::shares::presented(ex.query(), header).map(str::to_owned)
}

/// The checks every request to the file and upload routes passes first:
/// the loopback `Host` check (421), the cross-origin write check (403),
/// then the one policy decision ([`Policy::decide`]) for `action` at `path`:
/// 403 saying what to do, or 401 when a token would allow it.
/// `Ok(None)`: refused, and the answer was sent; else who is asking.
pub(crate) async fn admit(
    cfg: &ServiceConfig,
    policy: &Policy,
    ex: &mut Exchange,
    action: Action,
    path: &RelPath,
) -> Result<Option<Principal>, Error> {
    admit_with(cfg, policy, ex, action, path, &[]).await
}

/// [`admit`], with `extra` fields on every refusal it sends (tus requires
/// `Tus-Resumable` on every answer).
pub(crate) async fn admit_with(
    cfg: &ServiceConfig,
    policy: &Policy,
    ex: &mut Exchange,
    action: Action,
    path: &RelPath,
    extra: &[(&str, &str)],
) -> Result<Option<Principal>, Error> {
    let text = |status: u16| {
        let mut resp = Response::new(status).header("Content-Type", "text/plain; charset=utf-8");
        for (name, value) in extra {
            resp = resp.header(name, value);
        }
        resp
    };
    if let Some(hosts) = &cfg.allowed_hosts {
        if !ex.header_str("host").is_some_and(|h| hosts.allows(h)) {
            close_if_body(ex);
            ex.send(text(421), crate::policy::origin::MISDIRECTED.as_bytes())
                .await?;
            return Ok(None);
        }
    }
    // A COPY is admitted as a read of its source, but it writes: its
    // origin is checked as any write's.
    let writes = action != Action::Read || ex.method() == "COPY";
    if writes {
        refuse_cross_origin(
            ex,
            "cross-origin write refused: a page on another site may not change files here",
        )?;
    }
    // A share link is its own principal: anything it does not cover is
    // the same 404 as an unknown link, so it reveals nothing beyond itself.
    if let Some(token) = presented_link(ex) {
        // A revocation on another node of the bucket holds here within a
        // second: this node's copy of the shared table is that fresh.
        if let (Some(links), Some(shares)) = (&cfg.links, &cfg.shares) {
            if let Err(e) = links.0.refresh(shares, crate::links::WINDOW).await {
                tracing::warn!(target: "wirespeed::share", error = %e, "cannot read the shared links table; using this node's copy");
            }
        }
        let who = match policy.link(&token, ex.client_ip()) {
            // A link whose signature holds tells its holder it has ended,
            // and nothing about the path (which it names itself anyway).
            Some(Err(why @ (Refusal::Expired | Refusal::Revoked))) => {
                close_if_body(ex);
                let says: &[u8] = if why == Refusal::Expired {
                    b"this share link has expired; ask whoever sent it for a new one\n"
                } else {
                    b"this share link was revoked; ask whoever sent it for a new one\n"
                };
                ex.send(text(410), says).await?;
                return Ok(None);
            }
            Some(Ok(who)) => Some(who),
            Some(Err(_)) | None => None,
        };
        let allowed = |w: &Principal| {
            !policy.hides(path) && policy.decide(*w, action, path) == Decision::Allow
        };
        return match who.filter(allowed) {
            Some(who) => Ok(Some(admitted(cfg, policy, ex, who))),
            None => {
                // An upload link opened in a browser: the page with its
                // Upload button and no names, not the refusal.
                if let Some(w) = who {
                    if crate::page::sent_upload_page(policy, ex, w, action, path).await? {
                        return Ok(None);
                    }
                }
                if let Some(w) = who {
                    tracing::warn!(target: "wirespeed::share", client = %ex.client_ip(), path = %path, "share link used outside its grant");
                    // The audit trail names the link and its minter on the
                    // refusal too: misuse of a link is what an operator
                    // looks for there.
                    acting(policy, w);
                }
                close_if_body(ex);
                ex.send(text(404), b"not found\n").await?;
                Ok(None)
            }
        };
    }
    let authorization = ex.header("authorization").map(<[u8]>::to_vec);
    let https = ex.forwarded_proto() == Some("https");
    let session = policy.sessions().and_then(|s| {
        let presented = s.presented(ex.header_str("host"), ex.header_str("cookie"), https);
        presented.map(str::to_owned)
    });
    // The page's own requests must never meet a Basic challenge: it would
    // open the browser's dialog over the page's sign-in form.
    let from_page = sessions::from_page(ex.header_str(sessions::PAGE_MARKER));
    let who = match crate::proxy_signin::signed_in(policy, ex) {
        Some(Ok(who)) => Ok(who),
        Some(Err(why)) => {
            close_if_body(ex);
            return Err(Error::status(403, why));
        }
        None => {
            policy
                .authenticate(authorization.as_deref(), session.as_deref(), ex.client_ip())
                .await
        }
    };
    let who = match who {
        Ok(who) => who,
        Err(crate::policy::SignInFailed {
            retry_after: Some(wait),
        }) => {
            close_if_body(ex);
            let secs = crate::policy::limiter::whole_seconds(wait).to_string();
            let resp = text(429).header("Retry-After", secs);
            ex.send(resp, b"too many sign-in attempts: try again later\n")
                .await?;
            return Ok(None);
        }
        Err(_) => {
            close_if_body(ex);
            let mut resp = text(401);
            for challenge in policy.challenges_for(from_page, ex.base()) {
                resp = resp.header("WWW-Authenticate", challenge);
            }
            ex.send(resp, b"wrong user name or password\n").await?;
            return Ok(None);
        }
    };
    // Named before any decision: a refusal is told (audit) with its asker.
    let who = acting(policy, who);
    // A cookie rides along whoever triggers the request: a write it signs
    // must show where it comes from (browsers send `Origin` or
    // `Sec-Fetch-Site` on every write; a match was checked above).
    let by_cookie = authorization.is_none() && matches!(who, Principal::User(_));
    if by_cookie && writes && ex.header("origin").is_none() && ex.header("sec-fetch-site").is_none()
    {
        close_if_body(ex);
        return Err(Error::status(
            403,
            "a write signed in by a session cookie must come from the page (no Origin): refused",
        ));
    }
    match policy.decide(who, action, path) {
        // A hidden name is missing, whoever asks and whatever they hold.
        Decision::Allow if policy.hides(path) => {
            close_if_body(ex);
            ex.send(text(404), b"not found\n").await?;
            Ok(None)
        }
        Decision::Allow => {
            crate::bandwidth::pace(&cfg.bandwidth, policy, ex, who);
            Ok(Some(who))
        }
        Decision::Forbidden(_)
            if crate::page::sent_upload_page(policy, ex, who, action, path).await? =>
        {
            Ok(None)
        }
        Decision::Forbidden(why) => {
            close_if_body(ex);
            ex.send(text(403), format!("{why}\n").as_bytes()).await?;
            Ok(None)
        }
        Decision::NeedCredentials => {
            close_if_body(ex);
            // A browser navigation cannot send a bearer token: it gets the page
            // without the listing, whose script asks for the token. On a
            // server with users, a navigation (one the browser marks as
            // such) gets it too, whose script shows the sign-in form.
            let navigation = policy.users().is_none()
                || sessions::is_navigation(ex.header_str("sec-fetch-mode"));
            let locked = crate::page::listing::locked_page(policy, ex).filter(|_| navigation);
            if let Some(page) = locked {
                let mut resp = Response::new(401);
                for challenge in policy.challenges_for(true, ex.base()) {
                    resp = resp.header("WWW-Authenticate", challenge);
                }
                let resp = resp
                    .header(
                        "Content-Type",
                        crate::page::listing::Format::Html.content_type(),
                    )
                    .header(
                        "Content-Security-Policy",
                        crate::page::listing::page_csp(ex.header_str("host")),
                    )
                    .header("Cache-Control", "no-store");
                ex.send(resp, &page).await?;
                return Ok(None);
            }
            if from_page && policy.users().is_some() {
                let mut resp = Response::new(401)
                    .header("Content-Type", "application/json")
                    .header("Cache-Control", "no-store");
                for challenge in policy.challenges_for(true, ex.base()) {
                    resp = resp.header("WWW-Authenticate", challenge);
                }
                for (name, value) in extra {
                    resp = resp.header(name, value);
                }
                let body = b"{\"error\":\"sign in: this needs a user's rights\",\"signin\":true}\n";
                ex.send(resp, body).await?;
                return Ok(None);
            }
            let mut resp = text(401);
            for challenge in policy.challenges() {
                resp = resp.header("WWW-Authenticate", challenge);
            }
            let says = format!("{}\n", policy.sign_in_hint());
            ex.send(resp, says.as_bytes()).await?;
            Ok(None)
        }
    }
}

/// How one write request treats an existing name: a principal without the
/// delete right may only create, checked before the body and again at
/// commit (the name may appear meanwhile); and, given the lock table
/// ([`WriteGuard::with_locks`]), each name it creates is refused (423) while
/// a WebDAV lock the request did not submit covers it.
#[derive(Clone)]
pub(crate) struct WriteGuard {
    may_replace: bool,
    refusal: &'static str,
    refused: Arc<AtomicBool>,
    /// The names the policy hides (a form's file names are checked).
    hidden: Arc<crate::policy::hidden::Hidden>,
    locks: Option<(Arc<LockTable>, Submitted)>,
    /// Why the commit was refused for a lock taken meanwhile (423).
    locked: Arc<std::sync::OnceLock<String>>,
    /// The path written (for [`WriteGuard::with_locks`]).
    at: RelPath,
    /// The request fills the empty file its principal's own LOCK made
    /// there: that one existing name may be written without `d`.
    fill_own: bool,
}

impl WriteGuard {
    /// The guard for `who` writing at `path`.
    pub(crate) fn new(policy: &Policy, who: Principal, path: &RelPath) -> Self {
        let refusal = match policy.decide(who, Action::Replace, path) {
            Decision::Forbidden(why) => why,
            _ => "replacing this file needs a token with the delete right",
        };
        WriteGuard {
            may_replace: policy.rights(who, path).may_delete(),
            refusal,
            refused: Arc::new(AtomicBool::new(false)),
            hidden: policy.hidden().clone(),
            locks: None,
            locked: Arc::new(std::sync::OnceLock::new()),
            at: path.clone(),
            fill_own: false,
        }
    }

    /// The same guard, also refusing names under a lock `submitted` does
    /// not hold: by [`create`](Self::create) before the body, and again
    /// right before the commit (a lock taken while the body streamed).
    pub(crate) fn with_locks(mut self, table: &Arc<LockTable>, submitted: Submitted) -> Self {
        self.fill_own = !self.may_replace && submitted.made_by_own_lock(table, &self.at);
        self.locks = Some((table.clone(), submitted));
        self
    }

    /// Whether the guard lets `meta` (what exists at the name) be written
    /// over without `d`: only the still empty file its own lock made.
    fn may_fill(fill_own: bool, meta: &Meta) -> bool {
        fill_own && meta.kind == Kind::File && meta.size == 0
    }

    /// The same guard, never replacing (its upload's creator lacked `d`).
    pub(crate) fn forbid_replace(mut self) -> Self {
        if self.may_replace {
            self.may_replace = false;
            self.refusal = "this upload was created by a client that may not replace files, \
                            and a file with its name appeared meanwhile; the file was left untouched";
        }
        self
    }

    /// A guard that allows replacing (the principal holds `d`).
    pub(crate) fn may_replace(&self) -> bool {
        self.may_replace
    }

    /// The 403 of a refused replace.
    pub(crate) fn refusal(&self) -> Error {
        Error::status(403, self.refusal)
    }

    /// 403 now if a file exists at `key` and it may not be replaced.
    pub(crate) async fn check_now<S: Storage>(
        &self,
        storage: &S,
        key: &RelPath,
    ) -> Result<(), Error> {
        if self.may_replace {
            return Ok(());
        }
        match storage.stat(key).await {
            Ok(meta) if Self::may_fill(self.fill_own && *key == self.at, &meta) => Ok(()),
            Ok(meta) if meta.kind == Kind::File => Err(self.refusal()),
            _ => Ok(()),
        }
    }

    /// `prev` (the request's own preconditions), plus "no file there" when
    /// replacing is not allowed, plus "no lock the request does not hold
    /// covers `key`" when the guard has the lock table; run right before the
    /// upload is published.
    pub(crate) fn commit_check(
        &self,
        key: &RelPath,
        prev: Option<CommitCheck>,
    ) -> Option<CommitCheck> {
        let check = if self.may_replace {
            prev
        } else {
            let refused = self.refused.clone();
            let fill_own = self.fill_own && *key == self.at;
            Some(Box::new(move |meta: Option<&Meta>| {
                if meta.is_some_and(|m| !Self::may_fill(fill_own, m)) {
                    refused.store(true, Ordering::Relaxed);
                    return false;
                }
                prev.as_ref().is_none_or(|p| p(meta))
            }) as CommitCheck)
        };
        let Some((table, submitted)) = self.locks.clone() else {
            return check;
        };
        let (key, locked) = (key.clone(), self.locked.clone());
        Some(Box::new(move |meta: Option<&Meta>| {
            if let Err(e) = submitted.cover(&table, &[(&key, Reach::Member)]) {
                let _ = locked.set(e.to_string());
                return false;
            }
            check.as_ref().is_none_or(|c| c(meta))
        }))
    }

    /// Checked before the body and at commit: the upload to `key`.
    pub(crate) async fn create<S: Storage>(
        &self,
        storage: &S,
        key: &RelPath,
        prev: Option<CommitCheck>,
    ) -> Result<S::Upload, Error> {
        // A hidden name is not taken (404, as if the folder had no room
        // for it: nothing says it exists).
        if self.hidden.hides(key) {
            return Err(Error::status(404, "not found"));
        }
        if let Some((table, submitted)) = &self.locks {
            submitted.cover(table, &[(key, Reach::Member)])?;
        }
        self.check_now(storage, key).await?;
        let mut up = storage
            .create(key)
            .await
            .map_err(|e| e.on_write(key))
            .map_err(storage_answer)?;
        if let Some(check) = self.commit_check(key, prev) {
            up.check_before_commit(check);
        }
        Ok(up)
    }

    /// A commit refused by this guard (not by the request's preconditions)
    /// becomes the 403 that says why; other errors pass.
    pub(crate) fn explain(&self, e: Error) -> Error {
        if e.http_status() != 412 {
            return e;
        }
        if let Some(why) = self.locked.get() {
            return Error::status(423, why.clone());
        }
        if self.refused.load(Ordering::Relaxed) {
            self.refusal()
        } else {
            e
        }
    }
}

/// Refuse an upload whose announced length exceeds the storage's free
/// space (507, before a byte of the body is read), and apply `--max-body`.
pub(crate) async fn check_room<S: Storage>(
    storage: &S,
    cfg: &ServiceConfig,
    ex: &mut Exchange,
) -> Result<(), Error> {
    if let Some(max) = cfg.max_body {
        if let Some(len) = ex.content_length().filter(|&len| len > max) {
            // The body is never read: no other request can follow on this connection.
            ex.close_after_response();
            return Err(Error::status(
                413,
                format!(
                    "the upload is {}, the limit is {} (serve --max-body); nothing was stored",
                    human_size(len),
                    human_size(max)
                ),
            ));
        }
        ex.limit_body(max)?;
    }
    ensure_room(storage, ex.content_length()).await
}

/// 507 before any body byte is read when `needed` bytes (announced by the
/// client) exceed the store's free space; stores that cannot tell pass.
pub(crate) async fn ensure_room<S: Storage>(storage: &S, needed: Option<u64>) -> Result<(), Error> {
    if let (Some(needed), Some(available)) = (needed, storage.available().await) {
        if needed > available {
            return Err(StorageError::NoRoom { needed, available }.into_answer());
        }
    }
    Ok(())
}

/// RFC 9110 §13.1.1–2: If-Match / If-None-Match protect a write against lost
/// updates. Checked now against what is at `key` (412 before the body is
/// read); the returned test runs again right before the upload becomes
/// visible, so a write that raced us is not overwritten. `None`: the request
/// has no preconditions.
pub(crate) async fn write_preconditions<S: Storage>(
    storage: &S,
    ex: &mut Exchange,
    key: &RelPath,
) -> Result<Option<CommitCheck>, Error> {
    let if_match = ex.header_str("if-match").map(str::to_owned);
    let if_none_match = ex.header_str("if-none-match").map(str::to_owned);
    if if_match.is_none() && if_none_match.is_none() {
        return Ok(None);
    }
    let current = match storage.stat(key).await {
        Ok(meta) if meta.kind == Kind::File => Some(etag(&meta)),
        Ok(_) | Err(StorageError::NotFound) => None,
        Err(e) => return Err(e.into_answer()),
    };
    if !write_allowed(
        if_match.as_deref(),
        if_none_match.as_deref(),
        current.as_deref(),
    ) {
        close_if_body(ex);
        return Err(Error::status(
            412,
            "precondition failed: the file does not match If-Match / If-None-Match; nothing was stored",
        ));
    }
    Ok(Some(Box::new(move |meta| {
        let current = meta.map(etag);
        write_allowed(
            if_match.as_deref(),
            if_none_match.as_deref(),
            current.as_deref(),
        )
    })))
}

/// The `DAV` field of the file routes' OPTIONS: WebDAV class 1 and 2
/// (`dav`; here because resumable's OPTIONS answers it too).
pub(crate) const DAV_COMPLIANCE: &str = "1, 2";
/// The methods a file URL takes (the `Allow` field of OPTIONS).
pub(crate) const DAV_ALLOW: &str =
    "OPTIONS, GET, HEAD, PUT, POST, DELETE, PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, LOCK, UNLOCK";
