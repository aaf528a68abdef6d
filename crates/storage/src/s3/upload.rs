//! Writing an object: buffered into parts; a body that fits one part is one
//! `PutObject` at commit, a bigger one a multipart upload that only
//! `CompleteMultipartUpload` makes visible, and that is aborted (never left
//! half-made in the bucket) on failure or drop.

use bytes::{Bytes, BytesMut};
use object_store::path::Path as ObjPath;
use object_store::{
    Attribute, Attributes, MultipartUpload, ObjectStore, PutMode, PutMultipartOptions, PutOptions,
    PutPayload,
};
use tokio::task::JoinSet;

use super::object::{DAV_KEY, OWNER_KEY, SHA256_KEY};
use super::{file_meta, S3Storage, PARTS_IN_FLIGHT, PART_SIZE};
use crate::changes::{Change, ChangeKind, Version};
use crate::digest_store::hex as to_hex;
use crate::{CommitCheck, StorageError, Upload, Written};
use wirespeed_path::RelPath;

/// An object being written (see the module doc).
pub struct S3Upload {
    storage: S3Storage,
    path: ObjPath,
    part_size: usize,
    /// The part being filled.
    buf: BytesMut,
    /// Parts handed to uploads, reclaimed into `spare` once sent: each
    /// upload allocates its few part buffers once (allocating and freeing
    /// 8 MiB per part across threads grew glibc's arenas to twice the
    /// in-flight memory: 107 vs 58 MiB peak for 2 GiB).
    sent: Vec<Bytes>,
    spare: Vec<BytesMut>,
    /// Started once the body outgrows one part.
    multipart: Option<Box<dyn MultipartUpload>>,
    /// Parts on their way (at most [`PARTS_IN_FLIGHT`]).
    parts: JoinSet<object_store::Result<()>>,
    written: u64,
    check: Option<CommitCheck>,
    expected: Option<[u8; 32]>,
    /// WebDAV dead properties to store with the object (`props.rs`).
    pub(super) dav: Option<String>,
    /// Who writes it (`object.rs` `OWNER_KEY`): a user's quota counts it.
    pub(super) owner: Option<String>,
    /// With a publish gate: where the upload goes once the gate said yes
    /// (`path` is then its staging key, `staging.rs`).
    publish_to: Option<ObjPath>,
    /// The file's name, for the change a commit emits (`None`: an object
    /// of the server's own, such as properties).
    key: Option<RelPath>,
}

impl S3Upload {
    pub(super) fn new(storage: S3Storage, path: ObjPath, part_size: usize) -> S3Upload {
        S3Upload {
            storage,
            path,
            part_size,
            buf: BytesMut::new(),
            sent: Vec::new(),
            spare: Vec::new(),
            multipart: None,
            parts: JoinSet::new(),
            written: 0,
            check: None,
            expected: None,
            dav: None,
            owner: None,
            publish_to: None,
            key: None,
        }
    }

    /// An upload of the file at `key`, which emits its change when it lands
    /// (the property objects written through [`new`](Self::new) emit none).
    pub(super) fn of_file(storage: S3Storage, path: ObjPath, key: &RelPath) -> S3Upload {
        let mut up = S3Upload::new(storage, path, PART_SIZE);
        up.key = Some(key.clone());
        up.owner = crate::changes::actor().map(|a| a.to_string());
        up
    }

    /// Write to `staging` first; the gate decides whether it moves to the
    /// upload's path.
    pub(super) fn stage_at(&mut self, staging: ObjPath) {
        self.publish_to = Some(std::mem::replace(&mut self.path, staging));
    }

    fn attributes(&self, sum: Option<&[u8; 32]>) -> Attributes {
        let mut a = Attributes::new();
        if let Some(sum) = sum {
            a.insert(Attribute::Metadata(SHA256_KEY.into()), to_hex(sum).into());
        }
        if let Some(dav) = &self.dav {
            a.insert(Attribute::Metadata(DAV_KEY.into()), dav.clone().into());
        }
        if let Some(owner) = &self.owner {
            a.insert(
                Attribute::Metadata(OWNER_KEY.into()),
                owner_value(owner).into(),
            );
        }
        a
    }

    /// Wait for one part in flight; its failure fails the upload.
    async fn join_one(&mut self) -> Result<(), StorageError> {
        let joined = self.parts.join_next().await;
        for part in std::mem::take(&mut self.sent) {
            match part.try_into_mut() {
                Ok(mut buf) => {
                    buf.clear();
                    self.spare.push(buf);
                }
                Err(part) => self.sent.push(part),
            }
        }
        match joined {
            Some(Ok(Ok(()))) | None => Ok(()),
            Some(Ok(Err(e))) => Err(self.storage.error(e)),
            Some(Err(e)) => Err(StorageError::Io(std::io::Error::other(e))),
        }
    }

    /// Send the filled part (starting the multipart upload on the first).
    async fn send_part(&mut self) -> Result<(), StorageError> {
        if self.multipart.is_none() {
            let opts = PutMultipartOptions {
                attributes: self.attributes(self.expected.as_ref()),
                ..PutMultipartOptions::default()
            };
            let mp = self
                .storage
                .store
                .put_multipart_opts(&self.path, opts)
                .await
                .map_err(|e| self.storage.error(e))?;
            self.multipart = Some(mp);
        }
        while self.parts.len() >= PARTS_IN_FLIGHT {
            self.join_one().await?;
        }
        let part = std::mem::take(&mut self.buf).freeze();
        self.sent.push(part.clone());
        if let Some(mp) = self.multipart.as_mut() {
            self.parts.spawn(mp.put_part(PutPayload::from(part)));
        }
        Ok(())
    }

    /// What is at the key now, for the commit's precondition and its
    /// Created/Replaced answer.
    async fn current(
        storage: &S3Storage,
        path: &ObjPath,
    ) -> Result<Option<crate::Meta>, StorageError> {
        Ok(storage.head_opt(path).await?.map(|m| file_meta(&m)))
    }

    async fn finish(&mut self, sha256: Option<[u8; 32]>) -> Result<Written, StorageError> {
        let written = self.land(sha256).await?;
        let (Some(target), Some(key)) = (self.publish_to.clone(), self.key.clone()) else {
            return Ok(written);
        };
        self.storage
            .publish_staged(&key, &self.path, &target, self.written)
            .await?;
        Ok(written)
    }

    /// The bytes at `path` (the name, or the staging key).
    async fn land(&mut self, sha256: Option<[u8; 32]>) -> Result<Written, StorageError> {
        let target = self.publish_to.as_ref().unwrap_or(&self.path);
        let current = Self::current(&self.storage, target).await?;
        if let Some(check) = &self.check {
            if !check(current.as_ref()) {
                return Err(StorageError::PreconditionFailed);
            }
        }
        let written = if current.is_some() {
            Written::Replaced
        } else {
            Written::Created
        };
        // A staged upload is kept at its publication (`publish_staged`).
        if let (None, Some(key)) = (&self.publish_to, &self.key) {
            self.storage
                .keep_before_publishing(key, current.as_ref())
                .await?;
        }
        if self.multipart.is_none() {
            // A precondition that held on an absent key is enforced by S3
            // itself (If-None-Match: *), closing the race with another writer.
            let mode = if self.check.is_some() && current.is_none() && self.publish_to.is_none() {
                PutMode::Create
            } else {
                PutMode::Overwrite
            };
            let opts = PutOptions {
                mode,
                attributes: self.attributes(sha256.or(self.expected).as_ref()),
                ..PutOptions::default()
            };
            let data = std::mem::take(&mut self.buf).freeze();
            self.storage
                .store
                .put_opts(&self.path, PutPayload::from(data), opts)
                .await
                .map_err(|e| self.storage.error(e))?;
            return Ok(written);
        }
        if !self.buf.is_empty() {
            self.send_part().await?;
        }
        while !self.parts.is_empty() {
            self.join_one().await?;
        }
        // Checked by HEAD above: between it and the completion another
        // writer can still slip in (object_store offers no conditional
        // CompleteMultipartUpload).
        if let Some(mp) = self.multipart.as_mut() {
            mp.complete().await.map_err(|e| self.storage.error(e))?;
        }
        self.multipart = None;
        Ok(written)
    }

    async fn abort_now(&mut self) {
        self.parts.abort_all();
        while self.parts.join_next().await.is_some() {}
        if let Some(mut mp) = self.multipart.take() {
            if let Err(e) = mp.abort().await {
                tracing::warn!(path = %self.path, error = %e, "could not abort an S3 multipart upload");
            }
        }
    }
}

/// An owner as a metadata value (header text).
pub(super) fn owner_value(owner: &str) -> String {
    percent_encoding::utf8_percent_encode(owner, percent_encoding::NON_ALPHANUMERIC).to_string()
}

impl Upload for S3Upload {
    async fn write(&mut self, mut data: &[u8]) -> Result<(), StorageError> {
        self.written += data.len() as u64;
        while !data.is_empty() {
            if self.buf.capacity() == 0 {
                // The first buffer starts small (most files are) and grows.
                let first = self.multipart.is_none();
                let want = if first {
                    self.part_size.min(data.len().max(256 << 10))
                } else {
                    self.part_size
                };
                self.buf = self
                    .spare
                    .pop()
                    .unwrap_or_else(|| BytesMut::with_capacity(want));
            }
            let room = self.part_size - self.buf.len();
            let n = room.min(data.len());
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.buf.len() == self.part_size {
                self.send_part().await?;
            }
        }
        Ok(())
    }

    fn check_before_commit(&mut self, check: CommitCheck) {
        self.check = Some(check);
    }

    fn expect_sha256(&mut self, sum: [u8; 32]) {
        self.expected = Some(sum);
    }

    fn written(&self) -> u64 {
        self.written
    }

    async fn commit(mut self, sha256: Option<[u8; 32]>) -> Result<Written, StorageError> {
        match self.finish(sha256).await {
            Ok(w) => {
                if let Some(key) = self.key.take() {
                    let after = Version {
                        folder: false,
                        size: self.written,
                        id: None,
                    };
                    let kind = match w {
                        Written::Replaced => ChangeKind::Replaced,
                        Written::Created => ChangeKind::Created,
                    };
                    self.storage
                        .changes
                        .emit(Change::new(kind, key, None, Some(after)));
                }
                Ok(w)
            }
            Err(e) => {
                self.abort_now().await;
                Err(e)
            }
        }
    }

    async fn abort(mut self) {
        self.abort_now().await;
    }
}

impl Drop for S3Upload {
    /// Dropped unfinished (the request's task ended): abort the multipart
    /// upload in the background so its parts do not linger in the bucket.
    fn drop(&mut self) {
        self.parts.abort_all();
        if let Some(mut mp) = self.multipart.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let path = self.path.clone();
                rt.spawn(async move {
                    if let Err(e) = mp.abort().await {
                        tracing::warn!(%path, error = %e, "could not abort an S3 multipart upload");
                    }
                });
            }
        }
    }
}
