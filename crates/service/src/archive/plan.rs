//! The plan of one archive: one walk of `Storage::list`, depth first in
//! name order, with what the policy lets the asker read.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use wirespeed_archive::{Entry, Kind};
use wirespeed_net::Error;

use crate::answers::storage_answer;
use crate::path::RelPath;
use crate::storage::{self, Listing, Meta, Storage};

/// Archive names longer than this are left out: only a symlink loop inside
/// the root nests that deep (each turn lists the same folder again).
const MAX_NAME_BYTES: usize = 4096;

pub(super) fn mtime_of(meta: &Meta) -> (i64, u32) {
    match meta.modified.map(|m| m.duration_since(UNIX_EPOCH)) {
        Some(Ok(d)) => (d.as_secs() as i64, d.subsec_nanos()),
        _ => (0, 0),
    }
}

/// The archive's top folder: the folder's own name (`files` for the root).
pub(super) fn top_name(key: &RelPath) -> &str {
    key.name().unwrap_or("files")
}

/// Every entry of the folder at `key`, in name order, refusing more than
/// `room` (413 with the limit).
async fn list_all<S: Storage>(
    storage: &S,
    key: &RelPath,
    room: usize,
    max: usize,
) -> Result<Vec<storage::Entry>, Error> {
    let mut listing = storage.list(key).await.map_err(storage_answer)?;
    let mut all = Vec::new();
    while let Some(batch) = listing.next_batch().await.map_err(storage_answer)? {
        if all.len() + batch.len() > room {
            return Err(too_many(max));
        }
        all.extend(batch);
    }
    Ok(all)
}

fn too_many(max: usize) -> Error {
    Error::status(
        413,
        format!(
            "the folder has more than {max} entries, the limit of one archive \
             (serve --archive-max-entries); download its subfolders separately"
        ),
    )
}

/// A folder whose listing is walked next.
struct Frame {
    key: RelPath,
    /// Its archive name.
    name: String,
    entries: std::vec::IntoIter<storage::Entry>,
}

/// How many entries all the archives being planned or sent may hold at
/// once: each costs about 100–300 bytes until its response ends, and
/// concurrent plans were unbounded (8 anonymous `HEAD ?archive=tar` of a
/// large tree held 620 MB). Four archives of the largest size fit; one more
/// waits (503) until one ends.
#[derive(Debug)]
pub(crate) struct PlanBudget {
    entries: Arc<Semaphore>,
    /// Entries reserved at a time (fewer semaphore operations).
    chunk: u32,
}

impl PlanBudget {
    pub(crate) fn new(max_entries: usize) -> Self {
        let total = max_entries
            .saturating_mul(4)
            .clamp(1, Semaphore::MAX_PERMITS);
        PlanBudget {
            entries: Arc::new(Semaphore::new(total)),
            chunk: u32::try_from(max_entries.clamp(1, 1024)).unwrap_or(1024),
        }
    }

    /// Room for `chunk` more entries, added to what `held` holds.
    fn reserve(&self, held: &mut Option<OwnedSemaphorePermit>) -> Result<(), Error> {
        let more = self
            .entries
            .clone()
            .try_acquire_many_owned(self.chunk)
            .map_err(|_| {
                Error::status(
                    503,
                    "the server is busy with other folder archives; try again in a moment",
                )
            })?;
        match held {
            Some(h) => h.merge(more),
            None => *held = Some(more),
        }
        Ok(())
    }
}

/// The entries of a plan, and their share of the [`PlanBudget`] (given
/// back when this is dropped, with the response).
pub(super) type Planned = (Vec<Entry>, Option<OwnedSemaphorePermit>);

/// One walk: the entries, depth first in name order, each folder before
/// its contents. With `follow`, an entry reached through a symlink must be
/// readable where it really is, too.
pub(super) async fn plan<S: Storage>(
    storage: &S,
    readable: &super::Readable<impl Fn(&RelPath) -> bool + Send + Sync>,
    budget: &PlanBudget,
    key: &RelPath,
    names: &[String],
    max: usize,
) -> Result<Planned, Error> {
    let mut held = None;
    // Entries the budget has given this plan so far.
    let mut reserved = 0;
    let top = top_name(key).to_string();
    let mut out = vec![Entry {
        name: top.clone(),
        kind: Kind::Dir,
        size: 0,
        mtime: 0,
        mtime_nsec: 0,
        mode: 0o755,
    }];
    if let Ok(meta) = storage.stat(key).await {
        (out[0].mtime, out[0].mtime_nsec) = mtime_of(&meta);
    }
    let mut first = list_all(storage, key, max, max).await?;
    if !names.is_empty() {
        if let Some(missing) = names.iter().find(|n| !first.iter().any(|e| &e.name == *n)) {
            return Err(Error::status(
                404,
                format!("not found: {missing:?} is not in this folder"),
            ));
        }
        first.retain(|e| names.contains(&e.name));
    }
    let mut stack = vec![Frame {
        key: key.clone(),
        name: top,
        entries: first.into_iter(),
    }];
    while let Some(frame) = stack.last_mut() {
        let Some(e) = frame.entries.next() else {
            stack.pop();
            continue;
        };
        let name = format!("{}/{}", frame.name, e.name);
        let Ok(child) = frame.key.join(&e.name) else {
            continue;
        };
        if name.len() > MAX_NAME_BYTES {
            tracing::warn!(path = %child, "archive leaves out a path nested too deep (a symlink loop?)");
            continue;
        }
        if !(readable.may_read)(&child) {
            continue;
        }
        if readable.follow {
            match storage.real_path(&child, true).await {
                Ok(None) => {}
                Ok(Some(real)) if (readable.may_read)(&real) => {}
                _ => continue,
            }
        }
        if out.len() >= max {
            return Err(too_many(max));
        }
        if out.len() >= reserved {
            budget.reserve(&mut held)?;
            reserved += budget.chunk as usize;
        }
        let (mtime, mtime_nsec) = mtime_of(&e.meta);
        let (kind, mode) = match e.meta.kind {
            storage::Kind::File => (Kind::File, 0o644),
            storage::Kind::Dir => (Kind::Dir, 0o755),
        };
        out.push(Entry {
            name: name.clone(),
            kind,
            size: e.meta.size,
            mtime,
            mtime_nsec,
            mode,
        });
        if kind == Kind::Dir {
            match list_all(storage, &child, max - out.len(), max).await {
                Ok(entries) => stack.push(Frame {
                    key: child,
                    name,
                    entries: entries.into_iter(),
                }),
                // Gone or unreadable since it was listed: an empty folder.
                Err(e) if matches!(e.http_status(), 403 | 404) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok((out, held))
}

/// The storage key of planned entry `e` of the archive of `key`.
pub(super) fn entry_key(key: &RelPath, e: &Entry) -> Option<RelPath> {
    let top = top_name(key);
    let rel = e.name.strip_prefix(top)?.strip_prefix('/')?;
    let mut k = key.clone();
    for seg in rel.split('/') {
        k = k.join(seg).ok()?;
    }
    Some(k)
}
