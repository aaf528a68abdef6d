//! A file opened for reading: its bytes on disk or kept in memory, and its
//! digest record.

use std::fs::File;
use std::os::fd::AsFd;
use std::sync::Arc;

use rustix::fs::OFlags;

use super::small_files;
use crate::digest_store::{self, DigestStore, Identity};
use crate::resolve::Root;
use crate::{Meta, Object, StorageError};

/// An open local file.
pub struct LocalObject {
    pub(super) body: Body,
    pub(super) meta: Meta,
    pub(super) id: Identity,
    pub(super) root: Arc<Root>,
    pub(super) digests: DigestStore,
}

/// Where a [`LocalObject`]'s bytes are.
pub(super) enum Body {
    File(File),
    /// Kept in memory by [`SmallFiles`] (read with its digest record).
    Memory(Arc<small_files::SmallFile>),
}

impl Object for LocalObject {
    fn meta(&self) -> &Meta {
        &self.meta
    }

    async fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, StorageError> {
        use std::os::unix::fs::FileExt;
        match &self.body {
            Body::File(f) => Ok(f.read_at(buf, offset)?),
            Body::Memory(m) => {
                let rest = usize::try_from(offset)
                    .ok()
                    .and_then(|o| m.bytes.get(o..))
                    .unwrap_or_default();
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                Ok(n)
            }
        }
    }

    fn as_file(&self) -> Option<&File> {
        match &self.body {
            Body::File(f) => Some(f),
            Body::Memory(_) => None,
        }
    }

    fn in_memory(&self) -> Option<&[u8]> {
        match &self.body {
            Body::File(_) => None,
            Body::Memory(m) => Some(&m.bytes),
        }
    }

    fn stored_sha256(&self) -> Option<[u8; 32]> {
        match &self.body {
            Body::File(f) => digest_store::read(self.digests, self.root.fd(), f.as_fd(), &self.id),
            Body::Memory(m) => m.sha256,
        }
    }

    fn records_sha256(&self) -> bool {
        true
    }

    async fn store_sha256(&mut self, sum: &[u8; 32]) -> Result<bool, StorageError> {
        // A kept file is opened again to record on; the identity check
        // below refuses it if that is no longer the same file.
        let reopened;
        let file = match &self.body {
            Body::File(f) => f,
            Body::Memory(m) => {
                reopened = File::from(
                    self.root
                        .open_at(&m.segments, OFlags::RDONLY | OFlags::NONBLOCK)?,
                );
                &reopened
            }
        };
        if digest_store::identity(file)? != self.id {
            return Ok(false);
        }
        match digest_store::write(self.digests, self.root.fd(), file.as_fd(), &self.id, sum) {
            Ok(()) => Ok(true),
            Err(e) => {
                // A file the server may read but not annotate (another
                // owner, a read-only mount) still gets its digest answered.
                tracing::debug!(error = %e, "could not record a digest");
                Ok(true)
            }
        }
    }
}
