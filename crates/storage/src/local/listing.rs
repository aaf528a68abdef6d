//! Listing a folder: names collected and sorted in short blocking steps,
//! entries stat'ed in batches, each listing within its own bounded memory.

use std::collections::BinaryHeap;
use std::io;
use std::sync::Arc;

use super::meta::entry_meta;
use crate::resolve::Root;
use crate::{Entry, Listing, StorageError};
use wirespeed_path::is_reserved_name;

/// Entries per listing batch handed from the directory-reading thread.
pub const LIST_BATCH: usize = 1024;

/// Directory entries read per blocking step while a listing collects names.
const NAME_STEP: usize = 4096;

/// Most names one listing holds at once (about 3 MiB). A bigger folder is
/// read in several passes, each keeping the next `PASS_NAMES` names in
/// order: a client that stops reading holds at most this, and never a
/// budget other listings need (a shared budget let four stalled readers
/// refuse every other big listing).
pub const PASS_NAMES: usize = 32 * 1024;

/// A directory being listed, sorted by name: a pass reads the directory's
/// names (in steps of [`NAME_STEP`]) keeping the [`PASS_NAMES`] smallest
/// after the last one handed out, then its entries are stat'ed and handed
/// out [`LIST_BATCH`] at a time; another pass follows while names were
/// left out. Memory is at most [`PASS_NAMES`] names (about 50 bytes each),
/// never the formatted listing. Each step is one short blocking task, so a
/// client that stops reading a listing holds a descriptor and the names,
/// never a thread of the shared blocking pool.
pub struct LocalListing {
    pub(super) state: Option<ListState>,
}

pub(super) struct ListState {
    pub(super) dir: rustix::fs::Dir,
    /// Still reading names from `dir` for this pass.
    pub(super) collecting: bool,
    /// This pass's names: while collecting, the smallest seen (max-heap);
    /// then sorted in `names`.
    pub(super) heap: BinaryHeap<String>,
    pub(super) names: Vec<String>,
    /// The last name handed out: later passes keep only greater names.
    pub(super) after: Option<String>,
    /// This pass left names out (the heap was full): another pass follows.
    pub(super) more: bool,
    /// The next name to stat.
    pub(super) next: usize,
    pub(super) root: Arc<Root>,
    pub(super) segments: Vec<String>,
    pub(super) at_root: bool,
}

impl ListState {
    pub(super) fn new(dir: rustix::fs::Dir, root: Arc<Root>, segments: Vec<String>) -> Self {
        ListState {
            dir,
            collecting: true,
            heap: BinaryHeap::new(),
            names: Vec::new(),
            after: None,
            more: false,
            next: 0,
            root,
            at_root: segments.is_empty(),
            segments,
        }
    }

    /// Keep `name` in this pass if it is among the smallest after `after`.
    fn offer(&mut self, name: &str) {
        if self.after.as_deref().is_some_and(|a| name <= a) {
            return;
        }
        if self.heap.len() < PASS_NAMES {
            self.heap.push(name.to_string());
            return;
        }
        self.more = true;
        if self.heap.peek().is_some_and(|top| name < top.as_str()) {
            self.heap.pop();
            self.heap.push(name.to_string());
        }
    }

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
                self.offer(name);
            }
            if self.collecting {
                return Ok(None);
            }
            // Byte order, like `ls` in the C locale and S3 listings.
            self.names = std::mem::take(&mut self.heap).into_sorted_vec();
            self.next = 0;
        }
        let fd = self.dir.fd()?;
        let mut batch = Vec::with_capacity(LIST_BATCH.min(self.names.len() - self.next));
        while batch.len() < LIST_BATCH && self.next < self.names.len() {
            // Taken, not cloned: each name's memory goes once it is handed out.
            let name = std::mem::take(&mut self.names[self.next]);
            self.next += 1;
            if self.next == self.names.len() && self.more {
                self.after = Some(name.clone());
            }
            if let Some(meta) = entry_meta(&self.root, fd, &self.segments, &name) {
                batch.push(Entry { name, meta });
            }
        }
        if self.next >= self.names.len() && self.more {
            // The next pass: the names after the last one handed out.
            self.dir.rewind();
            self.collecting = true;
            self.more = false;
            self.names = Vec::new();
        }
        Ok(Some(batch))
    }

    fn done(&self) -> bool {
        !self.collecting && self.next >= self.names.len()
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
