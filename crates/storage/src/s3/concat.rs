//! tus concatenation on S3: a final upload joined from its partial uploads
//! inside the bucket, nothing downloaded and sent again but the small
//! pieces S3's part rules force through.
//!
//! - A partial upload's multipart upload is made on a hidden key
//!   (`.wirespeed-uploads/<id>.staged`, `partial.rs`), not on a name. When a
//!   final takes it, it is sealed: its tail goes as the last part and the
//!   multipart upload is completed there (the record says so, so a retried
//!   final does not seal it twice).
//! - The final is one multipart upload on its name (or on a staging key
//!   when a publish gate must say yes first) whose parts are
//!   `UploadPartCopy`s of ranges of the sealed partials (`copy.rs`; one
//!   copy stops at 5 GiB, so big partials are copied in ranges).
//! - S3 wants every part but the last to be at least 5 MiB, and partials
//!   can be any size: small ones (and the start of the partial after one)
//!   are read into one buffer of at most 5 MiB and sent as a part once it
//!   fills. Memory per final: that buffer.
//! - Only a completed multipart upload is visible: a failure aborts it and
//!   leaves the partials sealed, for a retry.

use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjPath;
use object_store::{Attribute, Attributes, ObjectStoreExt, PutMultipartOptions, PutPayload};
use wirespeed_resumable::UploadId;

use super::copy::{MAX_COPY, MIN_PART};
use super::partial::Multipart;
use super::{file_meta, S3Storage};
use crate::changes::{Change, ChangeKind, Version};
use crate::partial::PartialUploads as _;
use crate::{CommitCheck, StorageError, Written};
use wirespeed_path::RelPath;

/// The ranges `UploadPartCopy` copies `len` bytes in: as few as the 5 GiB
/// limit allows, of equal size (so none falls under S3's minimum).
fn copy_ranges(start: u64, len: u64) -> Vec<std::ops::Range<u64>> {
    let n = len.div_ceil(MAX_COPY).max(1);
    let piece = len.div_ceil(n);
    let mut out = Vec::with_capacity(n as usize);
    let mut at = start;
    while at < start + len {
        let end = (at + piece).min(start + len);
        out.push(at..end);
        at = end;
    }
    out
}

impl Multipart {
    /// Sealed: the bytes are one object at the staging key.
    fn sealed() -> Multipart {
        Multipart {
            staged: true,
            sealed: true,
            ..Multipart::default()
        }
    }
}

/// Builds the final's parts in order (see the module doc).
struct Joiner<'a> {
    s3: &'a S3Storage,
    dest: &'a ObjPath,
    id: &'a String,
    parts: Vec<PartId>,
    buf: Vec<u8>,
}

impl Joiner<'_> {
    async fn flush(&mut self) -> Result<(), StorageError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let data = std::mem::take(&mut self.buf);
        let part = self
            .s3
            .store
            .put_part(self.dest, self.id, self.parts.len(), PutPayload::from(data))
            .await
            .map_err(|e| self.s3.error(e))?;
        self.parts.push(part);
        Ok(())
    }

    async fn read_into_buf(
        &mut self,
        src: &ObjPath,
        range: std::ops::Range<u64>,
    ) -> Result<(), StorageError> {
        let bytes = self
            .s3
            .store
            .get_range(src, range)
            .await
            .map_err(|e| self.s3.error(e))?;
        self.buf.extend_from_slice(&bytes);
        Ok(())
    }

    /// Appends `src` (`size` bytes).
    async fn add(&mut self, src: &ObjPath, size: u64) -> Result<(), StorageError> {
        let mut off = 0;
        if !self.buf.is_empty() {
            // The buffer is short of a part: filled from this one first.
            let take = (MIN_PART - self.buf.len() as u64).min(size);
            self.read_into_buf(src, 0..take).await?;
            off = take;
            if self.buf.len() as u64 >= MIN_PART {
                self.flush().await?;
            }
        }
        let rest = size - off;
        if rest == 0 {
            return Ok(());
        }
        if rest < MIN_PART {
            // (The buffer is empty here: it was either flushed or took all.)
            return self.read_into_buf(src, off..size).await;
        }
        for range in copy_ranges(off, rest) {
            let n = self.parts.len();
            let part = self.s3.copy_part(self.dest, self.id, n, src, range).await?;
            self.parts.push(part);
        }
        Ok(())
    }
}

impl S3Storage {
    /// The partial `id` as one object (sealing it if it is not yet): where
    /// it is and its size.
    async fn sealed(&self, id: &UploadId) -> Result<(ObjPath, u64), StorageError> {
        let (state, mp) = self.read_record(id).await?;
        if !mp.staged {
            return Err(StorageError::Conflict("this upload cannot be joined"));
        }
        let path = self.uploads_path(&format!("{id}.staged"))?;
        if mp.sealed {
            return Ok((path, state.offset));
        }
        let mut data = self.open_partial(id).await?;
        data.load_tail().await?;
        let last = data.buf.take().unwrap_or_default();
        if !last.is_empty() {
            data.send_part(last.freeze()).await?;
        }
        if data.cur.parts.is_empty() {
            // S3 completes no upload of zero parts: an empty partial is
            // left out of the join.
            let _ = self.store.abort_multipart(&path, &data.cur.id).await;
        } else {
            let parts = data
                .cur
                .parts
                .iter()
                .map(|(_, e)| PartId {
                    content_id: e.clone(),
                })
                .collect();
            self.store
                .complete_multipart(&path, &data.cur.id, parts)
                .await
                .map_err(|e| self.error(e))?;
        }
        data.done = true;
        // The offset the record keeps is the sealed object's size.
        let mut sealed = Multipart::sealed();
        sealed.parts = vec![(state.offset, String::new())];
        self.write_record(id, &state, &sealed).await?;
        Ok((path, state.offset))
    }

    pub(super) async fn concat_s3(
        &self,
        ids: &[UploadId],
        key: &RelPath,
        check: Option<CommitCheck>,
    ) -> Result<Written, StorageError> {
        if ids.is_empty() {
            return Err(StorageError::Conflict("a final upload needs a part"));
        }
        let target = self.path(key)?;
        if !matches!(self.dir_state(key).await?, super::DirState::Absent) {
            return Err(StorageError::Conflict("a directory exists at this path"));
        }
        let mut sources = Vec::with_capacity(ids.len());
        for id in ids {
            sources.push(self.sealed(id).await?);
        }
        let size: u64 = sources.iter().map(|(_, n)| n).sum();
        let current = self.head_opt(&target).await?.map(|m| file_meta(&m));
        if let Some(check) = &check {
            if !check(current.as_ref()) {
                return Err(StorageError::PreconditionFailed);
            }
        }
        let dest = if self.gate.is_some() {
            self.staging_path()?
        } else {
            target.clone()
        };
        let mut attributes = Attributes::new();
        if let Some(owner) = crate::changes::actor() {
            attributes.insert(
                Attribute::Metadata(super::object::OWNER_KEY.into()),
                super::upload::owner_value(&owner).into(),
            );
        }
        let opts = PutMultipartOptions {
            attributes,
            ..PutMultipartOptions::default()
        };
        let mp = self
            .store
            .create_multipart_opts(&dest, opts)
            .await
            .map_err(|e| self.error(e))?;
        let mut join = Joiner {
            s3: self,
            dest: &dest,
            id: &mp,
            parts: Vec::new(),
            buf: Vec::new(),
        };
        let joined = async {
            for (src, n) in sources.iter().filter(|(_, n)| *n > 0) {
                join.add(src, *n).await?;
            }
            join.flush().await?;
            // What the final replaces goes to the trash only now, right
            // before the new object lands: a join that fails on the way
            // (a part's copy refused, the server stopped) leaves no copy
            // of a file that is still in place.
            if dest == target {
                self.keep_before_publishing(key, current.as_ref()).await?;
            }
            if join.parts.is_empty() {
                // All empty: an empty file is one PUT.
                let _ = self.store.abort_multipart(&dest, &mp).await;
                return self
                    .store
                    .put(&dest, PutPayload::default())
                    .await
                    .map(drop)
                    .map_err(|e| self.error(e));
            }
            let parts = std::mem::take(&mut join.parts);
            self.store
                .complete_multipart(&dest, &mp, parts)
                .await
                .map(drop)
                .map_err(|e| self.error(e))
        }
        .await;
        if let Err(e) = joined {
            let _ = self.store.abort_multipart(&dest, &mp).await;
            return Err(e);
        }
        if dest != target {
            self.publish_staged(key, &dest, &target, size).await?;
        }
        for id in ids {
            if let Err(e) = self.delete_upload_objects(id).await {
                tracing::warn!(%id, error = %e, "could not remove a joined partial upload");
            }
        }
        let after = Version {
            folder: false,
            size,
            id: None,
        };
        let (kind, written) = match current {
            Some(_) => (ChangeKind::Replaced, Written::Replaced),
            None => (ChangeKind::Created, Written::Created),
        };
        self.changes
            .emit(Change::new(kind, key.clone(), None, Some(after)));
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_ranges_cover_the_bytes_in_equal_pieces_under_the_limit() {
        assert_eq!(copy_ranges(3, 10), vec![3..13]);
        let big = MAX_COPY * 2 + 7;
        let r = copy_ranges(0, big);
        assert_eq!(r.len(), 3);
        assert_eq!(r.last().unwrap().end, big);
        assert!(r
            .iter()
            .all(|x| x.end - x.start <= MAX_COPY && x.end - x.start >= MIN_PART));
        assert!(r.windows(2).all(|w| w[0].end == w[1].start));
    }
}
