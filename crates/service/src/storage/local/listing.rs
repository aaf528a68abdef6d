//! Listing a folder: names collected and sorted in short blocking steps,
//! entries stat'ed in batches, names held within a shared budget.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::meta::entry_meta;
use crate::path::is_reserved_name;
use crate::storage::resolve::Root;
use crate::storage::{Entry, Listing, StorageError};

/// Entries per listing batch handed from the directory-reading thread.
pub const LIST_BATCH: usize = 1024;

/// Directory entries read per blocking step while a listing collects names.
const NAME_STEP: usize = 4096;

/// Memory all listings together may hold in names beyond their first
/// [`NAME_STEP`]: clients that open big listings and never read them could
/// otherwise pin the names of a big folder per connection. One listing alone
/// may exceed it (a single huge folder still lists).
const NAMES_BUDGET: usize = 16 << 20;

/// Bytes of names held by listings past their first step (see [`NAMES_BUDGET`]).
pub(super) static NAMES_HELD: AtomicUsize = AtomicUsize::new(0);

/// What one collected name costs: its bytes, the `String`, allocator overhead.
fn name_cost(name: &str) -> usize {
    name.len() + std::mem::size_of::<String>() + 16
}

/// A directory being listed, sorted by name: first its names alone are
/// collected (in steps of [`NAME_STEP`]) and sorted, then entries are
/// stat'ed and handed out [`LIST_BATCH`] at a time. Memory is the names
/// (about 50 bytes each), never the formatted listing. Each step is one
/// short blocking task, so a client that stops reading a listing holds a
/// descriptor and the names, never a thread of the shared blocking pool.
pub struct LocalListing {
    pub(super) state: Option<ListState>,
}

pub(super) struct ListState {
    pub(super) dir: rustix::fs::Dir,
    /// Still reading names from `dir`.
    pub(super) collecting: bool,
    /// Every listed name; sorted once `collecting` ends.
    pub(super) names: Vec<String>,
    /// What `names` cost (see [`name_cost`]).
    pub(super) cost: usize,
    /// The part of `cost` counted in [`NAMES_HELD`].
    pub(super) charged: usize,
    /// The next name to stat.
    pub(super) next: usize,
    pub(super) root: Arc<Root>,
    pub(super) segments: Vec<String>,
    pub(super) at_root: bool,
}

impl ListState {
    /// One blocking step: up to [`NAME_STEP`] more names while collecting
    /// (`None`), then the next batch of up to [`LIST_BATCH`] entries (fewer
    /// only at the end, or where names vanished since they were read). The
    /// step that finishes collecting also makes the first batch, so a small
    /// folder costs one trip through the blocking pool.
    fn step(&mut self) -> Result<Option<Vec<Entry>>, StorageError> {
        if self.collecting {
            for _ in 0..NAME_STEP {
                let Some(de) = self.dir.next() else {
                    self.collecting = false;
                    break;
                };
                let de = de?;
                let Ok(name) = de.file_name().to_str() else {
                    tracing::debug!(name = ?de.file_name(), "listing skips a name that is not UTF-8");
                    continue;
                };
                if name == "."
                    || name == ".."
                    || is_reserved_name(name)
                    || (self.at_root && name == "-")
                {
                    continue;
                }
                self.cost += name_cost(name);
                self.names.push(name.to_string());
            }
            if self.names.len() > NAME_STEP {
                self.charge()?;
            }
            if self.collecting {
                return Ok(None);
            }
            // Byte order, like `ls` in the C locale and S3 listings.
            self.names.sort_unstable();
        }
        let fd = self.dir.fd()?;
        let mut batch = Vec::with_capacity(LIST_BATCH.min(self.names.len() - self.next));
        while batch.len() < LIST_BATCH && self.next < self.names.len() {
            // Taken, not cloned: each name's memory goes once it is handed out.
            let name = std::mem::take(&mut self.names[self.next]);
            self.next += 1;
            if let Some(meta) = entry_meta(&self.root, fd, &self.segments, &name) {
                batch.push(Entry { name, meta });
            }
        }
        Ok(Some(batch))
    }

    /// Count the names collected so far in [`NAMES_HELD`], or refuse
    /// ([`StorageError::Busy`]) if other listings already hold the budget.
    fn charge(&mut self) -> Result<(), StorageError> {
        let total = self.cost;
        let more = total - self.charged;
        let before = NAMES_HELD.fetch_add(more, Ordering::Relaxed);
        let others = before - self.charged;
        if others > 0 && before + more > NAMES_BUDGET {
            NAMES_HELD.fetch_sub(more, Ordering::Relaxed);
            tracing::warn!(
                held = before,
                "a big listing was refused: other unfinished listings hold the names budget"
            );
            return Err(StorageError::Busy);
        }
        self.charged = total;
        Ok(())
    }

    fn done(&self) -> bool {
        !self.collecting && self.next >= self.names.len()
    }
}

impl Drop for ListState {
    fn drop(&mut self) {
        NAMES_HELD.fetch_sub(self.charged, Ordering::Relaxed);
    }
}

impl Listing for LocalListing {
    async fn next_batch(&mut self) -> Result<Option<Vec<Entry>>, StorageError> {
        loop {
            let Some(mut state) = self.state.take() else {
                return Ok(None);
            };
            let (state, step) = tokio::task::spawn_blocking(move || {
                let step = state.step();
                (state, step)
            })
            .await
            .map_err(|e| StorageError::Io(io::Error::other(e)))?;
            let step = step?;
            if !state.done() {
                self.state = Some(state);
            }
            match step {
                Some(batch) if !batch.is_empty() => return Ok(Some(batch)),
                _ => continue,
            }
        }
    }
}
