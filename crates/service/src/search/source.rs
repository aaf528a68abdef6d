//! The search index over any storage (an S3 bucket): the indexer's walk is
//! a bounded paged walk of the storage's own listings, folder by folder
//! (one `Storage::list` each, read batch by batch, so memory stays one
//! batch), a told path is a `stat`, and a text file is read through
//! `open`. The index thread blocks on the runtime for each call; it is not
//! one of the runtime's workers.

use std::io;
use std::time::UNIX_EPOCH;

use wirespeed_search::{Meta, Source};

use crate::path::RelPath;
use crate::storage::{Kind, Listing, Object, Storage, StorageError};

/// A storage as the indexer's tree.
pub struct StorageSource<S> {
    storage: S,
    rt: tokio::runtime::Handle,
}

impl<S: Storage> StorageSource<S> {
    /// Calls on `storage` run on the runtime `rt`.
    pub fn new(storage: S, rt: tokio::runtime::Handle) -> Self {
        StorageSource { storage, rt }
    }
}

fn key(path: &str) -> io::Result<RelPath> {
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    RelPath::from_segments(&segs).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

fn meta(m: &crate::storage::Meta) -> Meta {
    let dir = m.kind == Kind::Dir;
    Meta {
        dir,
        size: if dir { 0 } else { m.size },
        mtime: m
            .modified
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_secs()).ok()),
    }
}

/// Gone for good (the name is not there) or unknown for now (the store
/// did not answer): only the first may remove rows.
fn gone(e: &StorageError) -> bool {
    matches!(
        e,
        StorageError::NotFound | StorageError::NotDir | StorageError::IsDir
    )
}

fn io_err(e: StorageError) -> io::Error {
    io::Error::other(e.to_string())
}

impl<S: Storage> Source for StorageSource<S> {
    fn list(&self, dir: &str, each: &mut dyn FnMut(String, Meta) -> bool) -> io::Result<()> {
        let key = key(dir)?;
        self.rt.block_on(async {
            let mut listing = match self.storage.list(&key).await {
                Ok(l) => l,
                Err(e) if gone(&e) => return Ok(()),
                Err(e) => return Err(io_err(e)),
            };
            while let Some(batch) = listing.next_batch().await.map_err(io_err)? {
                for e in batch {
                    if !each(e.name, meta(&e.meta)) {
                        return Ok(());
                    }
                }
            }
            Ok(())
        })
    }

    fn stat(&self, path: &str) -> io::Result<Option<Meta>> {
        let key = key(path)?;
        match self.rt.block_on(self.storage.stat(&key)) {
            Ok(m) => Ok(Some(meta(&m))),
            Err(e) if gone(&e) => Ok(None),
            Err(e) => Err(io_err(e)),
        }
    }

    fn read_text(&self, path: &str, max: u64) -> Option<String> {
        let key = key(path).ok()?;
        let bytes = self.rt.block_on(async {
            let mut obj = self.storage.open(&key).await.ok()?;
            let size = obj.meta().size;
            if size > max {
                return None;
            }
            let mut buf = vec![0u8; usize::try_from(size).ok()?];
            let mut at = 0;
            while at < buf.len() {
                match obj.read_at(at as u64, &mut buf[at..]).await.ok()? {
                    0 => break,
                    n => at += n,
                }
            }
            buf.truncate(at);
            Some(buf)
        })?;
        if !wirespeed_search::looks_like_text(&bytes, true) {
            return None;
        }
        String::from_utf8(bytes).ok()
    }
}
