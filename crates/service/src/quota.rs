//! Quotas enforced: every write front asks [`QuotaBook::ensure`] before it
//! reads a body byte, with the length the client announced; a write that
//! does not fit is answered 507, saying whose quota, how much is used and
//! how much is left.
//!
//! What a folder quota holds is counted from the tree itself (a walk of
//! its listing, one batch at a time: memory is the walk's stack of
//! folders, never the names), then kept current from the storage's change
//! stream (a file created, replaced, deleted or moved in or out adjusts
//! the count by its before/after sizes). The count is never trusted to
//! refuse: a write the cached count would refuse is judged again on a
//! fresh walk, so a file deleted on the host behind the server's back
//! frees its room for the very next upload. A change the stream cannot
//! size (a folder deleted or moved across a quota's edge, or changes a
//! slow reader missed) marks the count stale, and counts older than
//! [`RECOUNT_AFTER`] are walked again at their next use (files added on
//! the host count from then).
//!
//! A user's quota (`[quota.user]`) counts the files the user owns. The
//! folder backend records with each file it publishes the principal whose
//! request wrote it (`Storage::owner`: an extended attribute, kept by a
//! rename, so a file moved stays its owner's; a copy is its copier's; a
//! share link's uploads are its minter's). A walk of the whole tree sums
//! them (one walk counts every user), and the stream adds what each user
//! writes; what is deleted or replaced is not subtracted until the next
//! walk (whose it was is not in the change), so the count errs high, and
//! a refusal walks first. On S3 the owner is object metadata, written with
//! the object (a server-side copy keeps it: moves, the trash); a listing
//! does not carry it, so the storage remembers each object's owner with
//! the version it read it from (`Storage::owner_listed`, bounded) and asks
//! again only for objects that changed.

use std::collections::HashMap;
use std::time::Instant;

use wirespeed_net::Error;

use crate::answers::storage_answer;
use crate::config::ServiceConfig;
use crate::path::RelPath;
use crate::policy::quotas::{check, Limit, Usage, Whose};
use crate::storage::changes;
use crate::storage::{Kind, Storage};
use crate::usage::{in_trash, owner_of, walk, Known, QuotaBook, RECOUNT_AFTER};

/// What a write may still add under the quotas covering it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    pub bytes: u64,
}

impl QuotaBook {
    /// What is below `top` now: the count kept, else a fresh walk
    /// (`fresh`: always walk).
    async fn usage<S: Storage>(
        &self,
        storage: &S,
        cfg: &ServiceConfig,
        whose: &Whose,
        fresh: bool,
    ) -> Result<Usage, Error> {
        if !fresh {
            self.catch_up(cfg.trash_days > 0);
            let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(k) = state.get(whose) {
                if !k.stale && k.walked.elapsed() < RECOUNT_AFTER {
                    return Ok(k.usage);
                }
            }
        }
        // Changes landing during the walk may be counted twice (by the
        // walk and the stream): too high, never trusted to refuse.
        self.catch_up(cfg.trash_days > 0);
        let walked = Instant::now();
        let found = match whose {
            Whose::Folder(top) => {
                let mut usage = walk(storage, top, None).await.map_err(storage_answer)?;
                if cfg.trash_days > 0 {
                    let kept = in_trash(storage, top).await;
                    usage.bytes = usage.bytes.saturating_add(kept.bytes);
                    usage.files = usage.files.saturating_add(kept.files);
                }
                vec![(whose.clone(), usage)]
            }
            // One walk of the whole tree counts every user with a quota.
            Whose::User(_) => {
                let users: Vec<String> = match &cfg.users {
                    Some(u) => u.rules().quotas().users().map(str::to_owned).collect(),
                    None => Vec::new(),
                };
                let mut owned: HashMap<String, Usage> =
                    users.into_iter().map(|u| (u, Usage::default())).collect();
                walk(storage, &[], Some(&mut owned))
                    .await
                    .map_err(storage_answer)?;
                owned
                    .into_iter()
                    .map(|(u, n)| (Whose::User(u), n))
                    .collect()
            }
        };
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for (w, usage) in found {
            let known = Known {
                usage,
                walked,
                stale: false,
            };
            state.insert(w, known);
        }
        Ok(state.get(whose).map(|k| k.usage).unwrap_or_default())
    }

    /// 507 unless a write of `needed` bytes (`None`: not announced) at
    /// `key` fits every quota over it; else the room it has (`None`: no
    /// quota applies). A file already at `key` is replaced, so its bytes
    /// are freed and no file is added.
    pub(crate) async fn ensure<S: Storage>(
        &self,
        storage: &S,
        cfg: &ServiceConfig,
        key: &RelPath,
        needed: Option<u64>,
    ) -> Result<Option<Room>, Error> {
        self.ensure_adding(storage, cfg, key, needed.unwrap_or(0), 1, None)
            .await
    }

    /// 507 unless moving `from` (`src`: what it is) to `to` fits every
    /// quota over `to` that does not already hold it.
    pub(crate) async fn ensure_move<S: Storage>(
        &self,
        storage: &S,
        cfg: &ServiceConfig,
        from: &RelPath,
        to: &RelPath,
        src: &crate::storage::Meta,
    ) -> Result<(), Error> {
        if self.quotas_over(cfg, to, Some(from)).is_empty() {
            return Ok(());
        }
        let moved = match src.kind {
            Kind::Dir => walk(storage, from.segments(), None)
                .await
                .map_err(storage_answer)?,
            _ => Usage {
                bytes: src.size,
                files: 1,
            },
        };
        self.ensure_adding(storage, cfg, to, moved.bytes, moved.files, Some(from))
            .await
            .map(drop)
    }

    /// The folder quotas over `key`, but those over `skip` too (what is
    /// below `skip` is in them already).
    fn quotas_over(
        &self,
        cfg: &ServiceConfig,
        key: &RelPath,
        skip: Option<&RelPath>,
    ) -> Vec<(Whose, Limit)> {
        let Some(users) = &cfg.users else {
            return Vec::new();
        };
        let rules = users.rules();
        let mut over = rules.quotas().folders_over(key.segments());
        match skip {
            Some(skip) => over.retain(
                |(w, _)| !matches!(w, Whose::Folder(top) if skip.segments().starts_with(top)),
            ),
            // A move keeps a file's owner; a write makes the writer its owner.
            None => {
                let me = changes::actor();
                let me = me.as_deref().map(owner_of);
                if let Some((name, limit)) = me.and_then(|n| Some((n, rules.quotas().user(n)?))) {
                    over.push((Whose::User(name.to_owned()), limit));
                }
            }
        }
        over
    }

    async fn ensure_adding<S: Storage>(
        &self,
        storage: &S,
        cfg: &ServiceConfig,
        key: &RelPath,
        bytes: u64,
        files: u64,
        skip: Option<&RelPath>,
    ) -> Result<Option<Room>, Error> {
        let over = self.quotas_over(cfg, key, skip);
        if over.is_empty() {
            return Ok(None);
        }
        // A file at `key` is replaced: its bytes are freed, its place kept
        // (for a user's quota, only if the file was theirs).
        let (size, new_files) = match storage.stat(key).await {
            Ok(m) if m.kind == Kind::File => (m.size, files.saturating_sub(1)),
            _ => (0, files),
        };
        let mut room = u64::MAX;
        for (whose, limit) in over {
            let freed = match &whose {
                Whose::User(me) if size > 0 => {
                    let theirs = storage.owner(key).await;
                    if theirs.as_deref().map(owner_of) == Some(me.as_str()) {
                        size
                    } else {
                        0
                    }
                }
                _ => size,
            };
            let adding = bytes.saturating_sub(freed);
            let mut usage = self.usage(storage, cfg, &whose, false).await?;
            if check(&whose, limit, usage, adding, new_files).is_err() {
                // Never refuse on a kept count: the tree may have lost
                // files behind the server's back.
                usage = self.usage(storage, cfg, &whose, true).await?;
            }
            check(&whose, limit, usage, adding, new_files)
                .map_err(|over| Error::status(507, over.to_string()))?;
            if let Some(max) = limit.bytes {
                room = room.min((max + freed).saturating_sub(usage.bytes));
            }
        }
        Ok(Some(Room { bytes: room }))
    }

    /// The tightest byte quota over `key` as (used, available), for
    /// WebDAV's `quota-used-bytes`/`quota-available-bytes` and the page's
    /// bar; `None` when no byte quota covers it.
    pub(crate) async fn shown<S: Storage>(
        &self,
        storage: &S,
        cfg: &ServiceConfig,
        key: &RelPath,
    ) -> Option<(u64, u64)> {
        let rules = cfg.users.as_ref()?.rules();
        let mut best: Option<(u64, u64)> = None;
        for (whose, limit) in rules.quotas().folders_over(key.segments()) {
            let Some(max) = limit.bytes else { continue };
            let used = self.usage(storage, cfg, &whose, false).await.ok()?.bytes;
            let left = max.saturating_sub(used);
            if best.is_none_or(|(_, l)| left < l) {
                best = Some((used, left));
            }
        }
        best
    }
}
/// The quota check of a write whose body is `ex`'s, at `key`: refused
/// (507) before a byte of the body is read when its announced length does
/// not fit; a body of unknown length (chunked) is cut where the room
/// ends, and [`explain_cut`] says so.
pub(crate) async fn admit_body<S: Storage>(
    storage: &S,
    cfg: &ServiceConfig,
    ex: &mut wirespeed_net::Exchange,
    key: &RelPath,
) -> Result<Option<Room>, Error> {
    let room = match cfg
        .quotas
        .ensure(storage, cfg, key, ex.content_length())
        .await
    {
        Ok(room) => room,
        Err(e) => {
            crate::respond::close_if_body(ex);
            return Err(e);
        }
    };
    if let Some(room) = room {
        let tighter = cfg.max_body.is_none_or(|max| room.bytes < max);
        if ex.content_length().is_none() && tighter {
            ex.limit_body(room.bytes)?;
        }
    }
    Ok(room)
}

/// A body cut at the quota's room (see [`admit_body`]) as the 507 that
/// says so; other errors pass unchanged.
pub(crate) fn explain_cut(e: Error, room: Option<Room>, cfg: &ServiceConfig) -> Error {
    match (&e, room) {
        (Error::Proto(wirespeed_net::proto::ProtoError::BodyTooLarge), Some(room))
            if cfg.max_body.is_none_or(|max| room.bytes < max) =>
        {
            Error::status(
                507,
                format!(
                    "the upload is larger than the room its quota has left, {}; nothing was stored",
                    crate::respond::human_size(room.bytes)
                ),
            )
        }
        _ => e,
    }
}

/// The control path of a folder's quota: `GET /-/quota/PATH` answers the
/// tightest byte quota over `PATH` as JSON (`used`, `available`), for the
/// page's bar; 204 when no quota covers it.
pub const ROUTE: &str = "/-/quota/*";

pub(crate) struct QuotaRoute<P> {
    pub files: std::sync::Arc<P>,
}

impl<P: crate::config::FileParts> wirespeed_net::Handler for QuotaRoute<P> {
    async fn handle(&self, ex: &mut wirespeed_net::Exchange) -> Result<(), Error> {
        let (storage, cfg, policy) = self.files.parts();
        let below = ex.path().strip_prefix("/-/quota").unwrap_or("/");
        let path = crate::path::parse_request_path(below)
            .map_err(|e| Error::status(400, e.to_string()))?;
        let action = crate::policy::Action::Read;
        let Some(_who) = crate::respond::admit(cfg, policy, ex, action, &path).await? else {
            return Ok(());
        };
        let Some((used, available)) = cfg.quotas.shown(storage, cfg, &path).await else {
            // No quota here: nothing to show, and nothing wrong.
            return ex.send(wirespeed_net::Response::new(204), b"").await;
        };
        let body = format!("{{\"used\":{used},\"available\":{available}}}");
        let resp = wirespeed_net::Response::new(200)
            .header("Content-Type", "application/json")
            .header("Cache-Control", "no-store");
        ex.send(resp, body.as_bytes()).await
    }
}
