//! WebDAV class 1 and 2 (RFC 4918) on any [`Storage`]: OPTIONS, PROPFIND,
//! PROPPATCH, MKCOL, DELETE, COPY, MOVE, LOCK and UNLOCK. GET and PUT stay
//! on the file routes (`files.rs`); every write front asks the lock table
//! through `crate::locks`. Every method passes `respond::admit` with its
//! [`Action`] first.
//!
//! - [`xml`]: request bodies in, multi-status out (bounded, no entities).
//! - [`locking`]: LOCK/UNLOCK, and this front's writes' lock check (the
//!   table and the `If` header are `crate::locks`').
//! - [`propfind`]: live properties; [`dead`]: stored ones and PROPPATCH.
//! - [`copymove`]: COPY, MOVE, recursive DELETE, MKCOL.

use futures_util::StreamExt as _;
use wirespeed_net::{Error, Exchange, Response};

use crate::answers::storage_answer;
use crate::config::ServiceConfig;
use crate::locks::{self, LockTable};
use crate::metrics::RouteClass;
use crate::path::{parse_request_path, RelPath};
use crate::policy::{Action, Decision, Policy};
use crate::respond::admit;
use crate::storage::{Kind, Storage, StorageError};

mod copymove;
pub mod dead;
mod locking;
pub mod propfind;
pub mod xml;

use xml::{MULTISTATUS_END, MULTISTATUS_START};

/// The `DAV` field: class 1 and 2.
pub const COMPLIANCE: &str = crate::respond::DAV_COMPLIANCE;
/// The methods a resource takes (the `Allow` field of OPTIONS).
pub const ALLOW: &str = crate::respond::DAV_ALLOW;
/// The methods this module answers (GET and PUT are the file routes').
pub const METHODS: [&str; 9] = [
    "OPTIONS",
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "DELETE",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
];

/// Whether `method` is answered here.
pub fn handles(method: &str) -> bool {
    METHODS.contains(&method)
}

const XML: &str = "application/xml; charset=utf-8";
/// Members whose dead properties a `Depth: 1` PROPFIND reads at once.
const DEAD_PROPS_IN_FLIGHT: usize = 16;

/// The WebDAV front over one storage, with the server's policy and locks.
pub(crate) struct Dav<'a, S> {
    pub storage: &'a S,
    pub cfg: &'a ServiceConfig,
    pub policy: &'a Policy,
    pub locks: &'a LockTable,
    /// The server's path prefix (`Exchange::base`), before every `href`.
    pub base: String,
}

/// What a method asks of the policy at the request's path (COPY and MOVE
/// ask again for their destination).
fn action(method: &str) -> Action {
    match method {
        "OPTIONS" | "PROPFIND" | "COPY" => Action::Read,
        "DELETE" | "MOVE" => Action::Delete,
        _ => Action::Create,
    }
}

/// A policy refusal as an answer (the request's own path was admitted;
/// this is for a second path, a COPY or MOVE destination).
pub(crate) fn decision(d: Decision) -> Result<(), Error> {
    match d {
        Decision::Allow => Ok(()),
        Decision::NeedCredentials => Err(Error::status(
            401,
            "sign in (or send the bearer token) first",
        )),
        Decision::Forbidden(why) => Err(Error::status(403, why)),
    }
}

/// A multi-status answer.
pub(crate) async fn send_multistatus(ex: &mut Exchange, body: &str) -> Result<(), Error> {
    let text = format!("{MULTISTATUS_START}{body}{MULTISTATUS_END}");
    let resp = Response::new(207).header("Content-Type", XML);
    ex.send(resp, text.as_bytes()).await
}

/// An error with a precondition element (RFC 4918 §16).
pub(crate) async fn send_condition(
    ex: &mut Exchange,
    status: u16,
    condition: &str,
) -> Result<(), Error> {
    let resp = Response::new(status).header("Content-Type", XML);
    ex.send(resp, xml::error_body(condition).as_bytes()).await
}

/// The body of a request, at most [`xml::MAX_BODY`] (413 above).
pub(crate) async fn read_xml_body(ex: &mut Exchange) -> Result<Vec<u8>, Error> {
    if ex
        .content_length()
        .is_some_and(|n| n > xml::MAX_BODY as u64)
    {
        ex.close_after_response();
        return Err(Error::status(
            413,
            "WebDAV request bodies are limited to 1 MiB",
        ));
    }
    ex.read_body_to_vec(xml::MAX_BODY).await
}

/// A parent path as a key.
pub(crate) fn parent_of(key: &RelPath) -> RelPath {
    let mut p = RelPath::root();
    for s in key.parent() {
        match p.join(s) {
            Ok(next) => p = next,
            Err(_) => break,
        }
    }
    p
}

impl<S: Storage> Dav<'_, S> {
    /// Answer a WebDAV method.
    pub(crate) async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        RouteClass::Other.set(ex);
        let method = ex.method().to_string();
        let parsed = parse_request_path(ex.path());
        let root = RelPath::root();
        let at = parsed.as_ref().unwrap_or(&root);
        let Some(who) = admit(self.cfg, self.policy, ex, action(&method), at).await? else {
            return Ok(());
        };
        let key = parsed.map_err(|e| {
            if e == crate::path::PathError::NameTooLong && method != "MKCOL" {
                Error::status(
                    404,
                    "not found: a name in the path is longer than 255 bytes",
                )
            } else {
                Error::status(e.status(), e.to_string())
            }
        })?;
        crate::through_links::check_real(self.storage, self.policy, who, action(&method), &key)
            .await?;
        match method.as_str() {
            "OPTIONS" => {
                let resp = Response::new(200)
                    .header("DAV", COMPLIANCE)
                    .header("MS-Author-Via", "DAV")
                    .header("Allow", ALLOW);
                ex.send(resp, b"").await
            }
            "PROPFIND" => self.propfind(ex, &key, who).await,
            "PROPPATCH" => self.proppatch(ex, &key, who).await,
            "MKCOL" => self.mkcol(ex, &key, who).await,
            "DELETE" => self.delete(ex, &key, who).await,
            "COPY" => self.copy_or_move(ex, &key, who, false).await,
            "MOVE" => self.copy_or_move(ex, &key, who, true).await,
            "LOCK" => self.lock(ex, &key, who).await,
            "UNLOCK" => self.unlock(ex, &key, who).await,
            _ => Err(Error::status(405, "method not allowed")),
        }
    }

    /// PROPFIND with `Depth: 0` or `1` (RFC 4918 §9.1); a folder's members
    /// are written as its listing's batches arrive.
    async fn propfind(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        who: crate::policy::Principal,
    ) -> Result<(), Error> {
        let depth_one = match ex.header_str("depth").map(str::trim) {
            Some("0") => false,
            Some("1") => true,
            _ => {
                // Infinity (also when absent) is refused on a folder, as
                // RFC 4918 allows; a file has no members (depth 0), and a
                // missing name is 404, as Apache answers.
                if self.storage.stat(key).await.map_err(storage_answer)?.kind == Kind::Dir {
                    return send_condition(ex, 403, "propfind-finite-depth").await;
                }
                false
            }
        };
        let body = read_xml_body(ex).await?;
        let want = xml::parse_propfind(&body).map_err(|e| Error::status(400, e.to_string()))?;
        let meta = self.storage.stat(key).await.map_err(storage_answer)?;
        let quota = if propfind::needs_quota(&want) {
            // RFC 4331: a folder quota over the path is its quota; else the disk's.
            match self.cfg.quotas.shown(self.storage, self.cfg, key).await {
                Some((used, left)) => (Some(left), Some(used)),
                None => (self.storage.available().await, self.storage.used().await),
            }
        } else {
            (None, None)
        };
        let dead = propfind::needs_dead(&want);
        let mut text = String::from(MULTISTATUS_START);
        // The locks that can cover the folder or a member, looked up once
        // (this node's copy of shared records, if it cannot be refreshed).
        if let Err(e) = self.locks.sync(self.storage, false).await {
            tracing::debug!(error = %e, "lock records not refreshed for PROPFIND");
        }
        let mut nearby = self.locks.covering(key.segments());
        nearby.extend(self.locks.below(key.segments()));
        // Another principal's lock shows without its token (RFC 4918 §15.8).
        for l in &mut nearby {
            if !l.usable_by(who) {
                l.token.clear();
            }
        }
        let stored = if dead {
            self.dead_props_of(key).await
        } else {
            Vec::new()
        };
        let me = self.resource(key, key.name().unwrap_or(""), meta, stored, quota, &nearby);
        me.write(&want, &mut text);
        let resp = Response::new(207).header("Content-Type", XML);
        if !(depth_one && meta.kind == Kind::Dir) {
            text.push_str(MULTISTATUS_END);
            return ex.send(resp, text.as_bytes()).await;
        }
        use crate::storage::Listing;
        // The first batch is read before the head is sent, so its failures
        // get a status.
        let mut listing = self.storage.list(key).await.map_err(storage_answer)?;
        let mut batch = listing.next_batch().await.map_err(storage_answer)?;
        let mut w = ex.writer(resp)?;
        while let Some(entries) = batch {
            let mut members = Vec::with_capacity(entries.len());
            for e in &entries {
                if self.policy.hides_name(&e.name) {
                    continue;
                }
                let Ok(child) = key.join(&e.name) else {
                    continue;
                };
                // Members the principal may not read are left out.
                if !self.policy.rights(who, &child).may_read() {
                    continue;
                }
                members.push((child, e));
            }
            // A batch's dead properties are read a few at a time: on S3
            // each is a request of its own.
            let keys: Vec<RelPath> = if dead {
                members.iter().map(|(child, _)| child.clone()).collect()
            } else {
                Vec::new()
            };
            let this = self;
            let mut props = futures_util::stream::iter(keys)
                .map(move |child| async move { this.dead_props_of(&child).await })
                .buffered(DEAD_PROPS_IN_FLIGHT);
            for (child, e) in &members {
                let stored = props.next().await.unwrap_or_default();
                let r = self.resource(child, &e.name, e.meta, stored, quota, &nearby);
                r.write(&want, &mut text);
                if text.len() >= crate::page::listing::FLUSH_AT {
                    w.write(text.as_bytes()).await?;
                    text.clear();
                }
            }
            drop(props);
            batch = listing.next_batch().await.map_err(storage_answer)?;
        }
        text.push_str(MULTISTATUS_END);
        w.write(text.as_bytes()).await?;
        w.finish().await
    }

    /// The dead properties stored with `key` (none when unreadable).
    async fn dead_props_of(&self, key: &RelPath) -> Vec<(xml::PropName, String)> {
        dead::decode(self.storage.dead_props(key).await.ok().flatten().as_deref())
    }

    fn resource<'n>(
        &self,
        key: &RelPath,
        name: &'n str,
        meta: crate::storage::Meta,
        dead: Vec<(xml::PropName, String)>,
        quota: (Option<u64>, Option<u64>),
        nearby: &[locks::Lock],
    ) -> propfind::Resource<'n> {
        let dir = meta.kind == Kind::Dir;
        propfind::Resource {
            href: format!("{}{}", self.base, key.to_url(dir)),
            name,
            meta,
            etag: (!dir).then(|| crate::respond::etag(&meta)),
            dead,
            locks: nearby
                .iter()
                .filter(|l| l.covers(key.segments()))
                .cloned()
                .collect(),
            quota,
        }
    }

    /// PROPPATCH (RFC 4918 §9.2): dead properties, all or none, kept with
    /// the file by the storage; a set modification time is applied.
    async fn proppatch(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        who: crate::policy::Principal,
    ) -> Result<(), Error> {
        let body = read_xml_body(ex).await?;
        let patches = xml::parse_proppatch(&body).map_err(|e| Error::status(400, e.to_string()))?;
        let meta = self.storage.stat(key).await.map_err(storage_answer)?;
        let submitted = self
            .check_locks_submitted(ex, &[(key, locks::Reach::Own)], who)
            .await?;
        // Changing what is recorded of an existing resource (its dead
        // properties, its mtime) is a change to it: `d`, as replacing it is,
        // unless it is the empty file the asker's own lock just made.
        if !self
            .rights_here_and_there(who, key, false)
            .await
            .may_delete()
            && !submitted.made_by_own_lock(self.locks, key)
        {
            return Err(Error::status(
                403,
                "changing the properties of an existing file or folder needs the d right \
                 (the one replacing it needs); nothing was changed",
            ));
        }
        let current = dead::decode(
            self.storage
                .dead_props(key)
                .await
                .map_err(storage_answer)?
                .as_deref(),
        );
        let mut outcome = dead::apply(current, &patches);
        let mut failure = None;
        if let Some(props) = &outcome.store {
            let blob = (!props.is_empty()).then(|| dead::encode(props));
            if let Err(e) = self.storage.set_dead_props(key, blob.as_deref()).await {
                failure = Some(e);
            }
        }
        if failure.is_none() {
            if let Some(t) = outcome.mtime {
                if let Err(e) = self.storage.set_modified(key, t).await {
                    failure = Some(e);
                }
            }
        }
        if let Some(e) = failure {
            tracing::debug!(error = %e, "PROPPATCH not stored");
            let status = match e {
                StorageError::Full | StorageError::NoRoom { .. } | StorageError::TooLarge(_) => 507,
                _ => 403,
            };
            for s in &mut outcome.statuses {
                s.1 = status;
            }
        }
        let mut text = String::from("<D:response><D:href>");
        let href = format!("{}{}", self.base, key.to_url(meta.kind == Kind::Dir));
        xml::escape_into(&href, &mut text);
        text.push_str("</D:href>");
        for status in [200, 403, 409, 424, 507] {
            let props: Vec<_> = outcome
                .statuses
                .iter()
                .filter(|s| s.1 == status)
                .map(|s| (s.0.clone(), None))
                .collect();
            xml::propstat(&props, status, &mut text);
        }
        text.push_str("</D:response>\n");
        send_multistatus(ex, &text).await
    }
}
