//! Listing a folder: names collected and sorted in short blocking steps,
//! entries stat'ed in batches, each listing within its own bounded memory.

use std::io;
use std::sync::Arc;

use super::meta::entry_meta;
use super::pass_names::{PassNames, SortedNames, PASS_BYTES};
use crate::resolve::Root;
use crate::{Entry, Listing, StorageError};
use wirespeed_path::is_reserved_name;

/// Entries per listing batch handed from the directory-reading thread.
pub const LIST_BATCH: usize = 1024;

/// Directory entries read per blocking step while a listing collects names.
const NAME_STEP: usize = 4096;

/// A directory being listed, sorted by name: a pass reads the directory's
/// names (in steps of [`NAME_STEP`]) keeping the smallest after the last
/// one handed out that fit in [`PASS_BYTES`] (packed: a name's bytes and 8,
/// so about 100,000 names of 20 bytes), then its entries are stat'ed and
/// handed out [`LIST_BATCH`] at a time; another pass follows while names
/// were left out. Memory is that budget (its buffers' capacity up to twice
/// it while they grow), never the formatted listing. No budget is shared
/// between listings: a client that stops reading holds its own. Each step is one short blocking task, so a
/// client that stops reading a listing holds a descriptor and the names,
/// never a thread of the shared blocking pool.
pub struct LocalListing {
    pub(super) state: Option<ListState>,
}

pub(super) struct ListState {
    pub(super) dir: rustix::fs::Dir,
    /// Still reading names from `dir` for this pass.
    pub(super) collecting: bool,
    /// This pass's names while collecting; then sorted in `names`.
    pub(super) pass: PassNames,
    pub(super) names: SortedNames,
    /// The last name handed out: later passes keep only greater names.
    pub(super) after: Option<String>,
    /// This pass left names out (the budget was full): another pass follows.
    pub(super) more: bool,
    pub(super) root: Arc<Root>,
    pub(super) segments: Vec<String>,
    pub(super) at_root: bool,
}

impl ListState {
    pub(super) fn new(dir: rustix::fs::Dir, root: Arc<Root>, segments: Vec<String>) -> Self {
        ListState {
            dir,
            collecting: true,
            pass: PassNames::new(PASS_BYTES),
            names: SortedNames::default(),
            after: None,
            more: false,
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
        self.pass.offer(name);
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
            let pass = std::mem::replace(&mut self.pass, PassNames::new(PASS_BYTES));
            self.more = pass.left_out();
            self.names = pass.into_sorted();
        }
        let fd = self.dir.fd()?;
        let mut batch = Vec::with_capacity(LIST_BATCH.min(self.names.remaining()));
        while batch.len() < LIST_BATCH {
            let last = self.names.at_last();
            let Some(name) = self.names.next() else {
                break;
            };
            if last && self.more {
                self.after = Some(name.clone());
            }
            if let Some(meta) = entry_meta(&self.root, fd, &self.segments, &name) {
                batch.push(Entry { name, meta });
            }
        }
        if self.names.is_done() && self.more {
            // The next pass: the names after the last one handed out.
            self.dir.rewind();
            self.collecting = true;
            self.more = false;
            self.names = SortedNames::default();
        }
        Ok(Some(batch))
    }

    fn done(&self) -> bool {
        !self.collecting && self.names.is_done()
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
