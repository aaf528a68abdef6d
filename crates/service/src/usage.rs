//! What storage holds, counted: the quotas' kept counts ([`QuotaBook`],
//! kept current from the change stream), the walks that count a tree (and
//! each user's files in it), and the record the trash keeps with an entry
//! (its size counts in the quota of the folder it came from). A leaf: the
//! config holds the book, the quota checks (`quota`) and the trash
//! (`trash`) use it.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::path::RelPath;
use crate::policy::quotas::{Usage, Whose};
use crate::storage::changes::{self, Change, ChangeKind, Changes, Event, Subscription};
use crate::storage::{Kind, Listing, Storage, StorageError};

/// A folder's count is walked again at its next use after this long
/// (changes made on the host are not in the change stream).
pub const RECOUNT_AFTER: Duration = Duration::from_secs(300);

/// The usage of every quota counted so far, shared by every route (a clone
/// of the config shares it).
#[derive(Default)]
pub struct QuotaBook {
    pub(crate) state: Mutex<HashMap<Whose, Known>>,
    /// The storage's change stream, drained before a count is used: every
    /// change that landed before the request is in it. Subscribed at the
    /// first count (a server without quotas keeps no subscriber, so its
    /// storage emits nothing).
    hub: OnceLock<Changes>,
    stream: Mutex<Option<Subscription>>,
}

impl std::fmt::Debug for QuotaBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuotaBook").finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Known {
    pub(crate) usage: Usage,
    /// Counted by a walk at this instant (the stream kept it since).
    pub(crate) walked: Instant,
    /// The stream saw a change it could not size: walk before use.
    pub(crate) stale: bool,
}

impl QuotaBook {
    /// Follows `changes` (the first storage's, once per book) to keep the
    /// counts current. Nothing runs meanwhile: a subscriber that is not
    /// read is told, when it is, how many changes it missed, and every
    /// count is then walked again.
    pub(crate) fn watch(&self, changes: Option<&Changes>) {
        if let Some(changes) = changes {
            let _ = self.hub.set(changes.clone());
        }
    }

    /// Applies every change emitted so far to the counts.
    /// (`keeps`: deleted files go to the trash, where they still count.)
    pub(crate) fn catch_up(&self, keeps: bool) {
        let mut stream = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if stream.is_none() {
            // Nothing counted can have missed a change: nothing is counted
            // before the first walk, which comes after this.
            *stream = self.hub.get().map(Changes::subscribe);
        }
        let Some(sub) = stream.as_mut() else {
            return;
        };
        while let Some(event) = sub.try_next() {
            match event {
                Event::Missed(_) => state.values_mut().for_each(|k| k.stale = true),
                Event::Change(c) => {
                    for (whose, known) in state.iter_mut() {
                        match whose {
                            Whose::Folder(top) => adjust(top, known, &c, keeps),
                            Whose::User(name) => adjust_owned(name, known, &c),
                        }
                    }
                }
            }
        }
    }
}

/// The change's effect on the count below `top`.
fn adjust(top: &[String], known: &mut Known, c: &Change, keeps: bool) {
    let inside = |p: &RelPath| p.segments().starts_with(top);
    let above = |p: &RelPath| top.starts_with(p.segments()) && p.segments().len() < top.len();
    let mut add = |sign: i64, v: &Option<changes::Version>| match v {
        Some(v) if !v.folder => {
            let u = &mut known.usage;
            if sign > 0 {
                u.bytes = u.bytes.saturating_add(v.size);
                u.files = u.files.saturating_add(1);
            } else {
                u.bytes = u.bytes.saturating_sub(v.size);
                u.files = u.files.saturating_sub(1);
            }
            false
        }
        // A folder (or an unknown) came or went: its contents are unknown.
        Some(_) => sign < 0,
        None => false,
    };
    let mut stale = above(&c.path);
    match &c.kind {
        ChangeKind::Created | ChangeKind::Replaced if inside(&c.path) => {
            add(-1, &c.before);
            add(1, &c.after);
        }
        // Thrown into the trash, it still counts: walked again (with the
        // trash's records) at the next use.
        ChangeKind::Deleted if inside(&c.path) && keeps => stale = true,
        ChangeKind::Deleted if inside(&c.path) => {
            stale |= c.before.is_none() || add(-1, &c.before);
        }
        ChangeKind::Moved { from } => {
            stale |= above(from);
            let (was_in, is_in) = (inside(from), inside(&c.path));
            if is_in {
                stale |= add(-1, &c.before);
            }
            if was_in != is_in {
                if c.after.as_ref().is_none_or(|v| v.folder) {
                    stale = true;
                } else {
                    add(if is_in { 1 } else { -1 }, &c.after);
                }
            }
        }
        _ => {}
    }
    known.stale |= stale;
}

/// Bytes and files below `top` (a folder thrown into the trash records
/// them).
pub(crate) async fn walk_usage<S: Storage>(
    storage: &S,
    top: &[String],
) -> Result<Usage, StorageError> {
    walk(storage, top, None).await
}

/// What the trash keeps from below `top` (it counts in `top`'s quota).
pub(crate) async fn in_trash<S: Storage>(storage: &S, top: &[String]) -> Usage {
    let mut usage = Usage::default();
    for (_, r) in trash_records(storage).await {
        let below =
            crate::path::parse_request_path(&r.path).is_ok_and(|p| p.segments().starts_with(top));
        if below {
            usage.bytes = usage.bytes.saturating_add(r.size);
            usage.files = usage.files.saturating_add(r.files);
        }
    }
    usage
}

/// The user a change-stream name charges: a share link's uploads are its
/// minter's (`link 7 of alice` → `alice`).
pub(crate) fn owner_of(label: &str) -> &str {
    match label
        .strip_prefix("link ")
        .and_then(|l| l.split_once(" of "))
    {
        Some((_, minter)) => minter,
        None => label,
    }
}

/// A user's count after a change: a file written by them adds its bytes.
/// What is deleted or replaced is not subtracted (whose it was is not in
/// the change): the count errs high, and a refusal walks again first.
fn adjust_owned(name: &str, known: &mut Known, c: &Change) {
    if c.by.as_deref().map(owner_of) != Some(name) {
        return;
    }
    if let (ChangeKind::Created | ChangeKind::Replaced, Some(v)) = (&c.kind, &c.after) {
        if !v.folder {
            known.usage.bytes = known.usage.bytes.saturating_add(v.size);
            known.usage.files += u64::from(c.kind == ChangeKind::Created);
        }
    }
}

/// Bytes and files below `top`, walked one listing batch at a time; with
/// `owned`, also each listed user's files (by the owner each file records).
pub(crate) async fn walk<S: Storage>(
    storage: &S,
    top: &[String],
    mut owned: Option<&mut HashMap<String, Usage>>,
) -> Result<Usage, StorageError> {
    let mut usage = Usage::default();
    let Ok(start) = RelPath::from_segments(top) else {
        return Ok(usage);
    };
    let mut folders = vec![start];
    while let Some(dir) = folders.pop() {
        let mut listing = match storage.list(&dir).await {
            Ok(l) => l,
            Err(StorageError::NotFound | StorageError::NotDir) => continue,
            Err(e) => return Err(e),
        };
        loop {
            // (A bucket says a missing prefix is missing at the first batch.)
            let batch = match listing.next_batch().await {
                Ok(Some(batch)) => batch,
                Ok(None) | Err(StorageError::NotFound | StorageError::NotDir) => break,
                Err(e) => return Err(e),
            };
            for entry in batch {
                match entry.meta.kind {
                    Kind::Dir => {
                        if let Ok(sub) = dir.join(&entry.name) {
                            folders.push(sub);
                        }
                    }
                    _ => {
                        usage.bytes = usage.bytes.saturating_add(entry.meta.size);
                        usage.files += 1;
                        let Some(owned) = owned.as_deref_mut() else {
                            continue;
                        };
                        let Ok(file) = dir.join(&entry.name) else {
                            continue;
                        };
                        if let Some(who) = storage.owner_listed(&file, &entry.meta).await {
                            if let Some(u) = owned.get_mut(owner_of(&who)) {
                                u.bytes = u.bytes.saturating_add(entry.meta.size);
                                u.files += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(usage)
}

/// Trash entries one listing reads (and answers) at most.
pub const MAX_LISTED: usize = 1000;

/// What the trash remembers of an entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    /// The original path, URL-encoded (as a request names it).
    pub path: String,
    /// Who removed it (the change stream's name of the principal).
    pub by: Option<String>,
    /// When, in seconds since the epoch.
    pub at: u64,
    /// Its bytes and files (a folder's: everything below it).
    pub size: u64,
    pub files: u64,
    pub folder: bool,
}

/// Every entry's record (at most [`MAX_LISTED`]); unreadable ones are
/// left out.
pub(crate) async fn trash_records<S: Storage>(storage: &S) -> Vec<(String, Record)> {
    let raw = storage.trash_records(MAX_LISTED).await.unwrap_or_default();
    raw.into_iter()
        .filter_map(|(id, json)| Some((id, serde_json::from_slice(&json).ok()?)))
        .collect()
}
