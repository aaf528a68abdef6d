//! Resumable (tus / IETF draft) uploads on S3: one S3 multipart upload per
//! partial upload, created on the target key, and a record in the bucket,
//! so an upload survives a restart and resumes on any node (nothing that
//! matters is kept on the node).
//!
//! - `PREFIX/.wirespeed-uploads/<id>.json`: the upload's state (target,
//!   length, metadata, expiry) plus the multipart upload id, the parts sent
//!   (size and ETag each) and the tail (below).
//! - S3 wants every part but the last to be at least 5 MiB, while appends
//!   can be any size: bytes past the last full part wait in memory (one
//!   part buffer per running append) and, when the append ends, in a hidden
//!   tail object `<id>.<gen>.tail` that the next append reads back and
//!   prepends. A full part goes out as soon as it fills.
//! - The record is rewritten after each part and each tail is durable, so
//!   the offset after a crash is what the record says (the parts and tail it
//!   names), never more. Tails get a new generation each time and an old one
//!   is deleted only once no record can name it again, so a refused append
//!   can go back to the state it started from.
//! - Completion sends the tail as the last part and completes the multipart
//!   upload onto the target key: the file appears whole, at once. Cancel
//!   and expiry abort the multipart upload and delete the record and tails.
//!
//! Appends to one upload are serialised per process (the routes' lock);
//! two nodes appending to the same upload at the same time are not (the
//! last record written wins): docs/resumable-uploads.md says so.

use bytes::{Bytes, BytesMut};
use futures_util::TryStreamExt;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use wirespeed_resumable::{UploadId, UploadState};

use super::{file_meta, DirState, S3Storage, PART_SIZE};
use crate::changes::{Change, ChangeKind, Version};
use crate::partial::{PartialData, PartialUploads, UPLOADS_DIR};
use crate::{CommitCheck, StorageError, Written};
use wirespeed_path::{parse_request_path, RelPath};

/// S3's smallest part but the last: every part but the last is PART_SIZE.
const _: () = assert!(PART_SIZE >= 5 << 20);
/// Largest record read back.
const MAX_RECORD: usize = 1 << 20;

/// The S3 side of one upload, as its record names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Multipart {
    pub(super) id: String,
    /// Size and ETag of each part sent, in order.
    pub(super) parts: Vec<(u64, String)>,
    /// Bytes in the tail object `<id>.<gen>.tail` (0: none).
    pub(super) tail: u64,
    pub(super) gen: u64,
    /// The generation the next tail gets (never reused).
    pub(super) next: u64,
    /// Written under `<id>.staged` for the publish gate (`staging.rs`),
    /// not on the target key.
    pub(super) staged: bool,
    /// Completed into the object at the staging key (a part joined by a
    /// final upload, `concat.rs`): no multipart upload is left.
    pub(super) sealed: bool,
}

impl Multipart {
    fn parts_len(&self) -> u64 {
        self.parts.iter().map(|(n, _)| n).sum()
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "multipart": self.id,
            "parts": self.parts.iter().map(|(n, e)| serde_json::json!([n, e])).collect::<Vec<_>>(),
            "tail": self.tail,
            "gen": self.gen,
            "next": self.next,
            "staged": self.staged,
            "sealed": self.sealed,
        })
    }

    fn from_json(v: &serde_json::Value) -> Option<Multipart> {
        let parts = v["parts"]
            .as_array()?
            .iter()
            .map(|p| Some((p[0].as_u64()?, p[1].as_str()?.to_string())))
            .collect::<Option<Vec<_>>>()?;
        Some(Multipart {
            id: v["multipart"].as_str()?.to_string(),
            parts,
            tail: v["tail"].as_u64()?,
            gen: v["gen"].as_u64()?,
            next: v["next"].as_u64()?,
            staged: v["staged"].as_bool().unwrap_or(false),
            sealed: v["sealed"].as_bool().unwrap_or(false),
        })
    }
}

impl S3Storage {
    pub(super) fn uploads_path(&self, name: &str) -> Result<ObjPath, StorageError> {
        ObjPath::parse(format!("{}{UPLOADS_DIR}/{name}", self.prefix))
            .map_err(|_| StorageError::Forbidden)
    }

    fn record_path(&self, id: &UploadId) -> Result<ObjPath, StorageError> {
        self.uploads_path(&format!("{id}.json"))
    }

    fn tail_path(&self, id: &UploadId, gen: u64) -> Result<ObjPath, StorageError> {
        self.uploads_path(&format!("{id}.{gen}.tail"))
    }

    fn target_path(&self, state: &UploadState) -> Result<ObjPath, StorageError> {
        let key = parse_request_path(&state.target).map_err(|_| StorageError::NotFound)?;
        self.path(&key)
    }

    /// Where the upload's multipart upload is: its target, or with a
    /// publish gate its staging key.
    fn multipart_path(
        &self,
        id: &UploadId,
        state: &UploadState,
        mp: &Multipart,
    ) -> Result<ObjPath, StorageError> {
        if mp.staged {
            self.uploads_path(&format!("{id}.staged"))
        } else {
            self.target_path(state)
        }
    }

    pub(super) async fn write_record(
        &self,
        id: &UploadId,
        state: &UploadState,
        mp: &Multipart,
    ) -> Result<(), StorageError> {
        let mut state = state.clone();
        state.offset = mp.parts_len() + mp.tail;
        let mut v: serde_json::Value =
            serde_json::from_slice(&state.to_record()).map_err(|e| StorageError::Io(e.into()))?;
        v["s3"] = mp.to_json();
        let bytes = serde_json::to_vec(&v).map_err(|e| StorageError::Io(e.into()))?;
        self.store
            .put(&self.record_path(id)?, PutPayload::from(bytes))
            .await
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    pub(super) async fn read_record(
        &self,
        id: &UploadId,
    ) -> Result<(UploadState, Multipart), StorageError> {
        let got = self
            .store
            .get(&self.record_path(id)?)
            .await
            .map_err(|e| self.error(e))?;
        if got.meta.size > MAX_RECORD as u64 {
            return Err(StorageError::NotFound);
        }
        let bytes = got.bytes().await.map_err(|e| self.error(e))?;
        let unusable = |why: &dyn std::fmt::Display| {
            tracing::warn!(%id, error = %why, "an upload record cannot be used");
            StorageError::NotFound
        };
        let mut state = UploadState::from_record(&bytes).map_err(|e| unusable(&e))?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| unusable(&e))?;
        let mp = Multipart::from_json(&v["s3"]).ok_or_else(|| unusable(&"no S3 part list"))?;
        state
            .reconcile(mp.parts_len() + mp.tail)
            .map_err(|e| unusable(&e))?;
        Ok((state, mp))
    }

    /// Every tail object of `id`, and its record, removed (absent is fine).
    pub(super) async fn delete_upload_objects(&self, id: &UploadId) -> Result<(), StorageError> {
        let dir = self.uploads_path("")?;
        let stem = format!("{id}.");
        let names: Vec<ObjPath> = self
            .store
            .list(Some(&dir))
            .try_filter(|o| {
                let mine = o.location.filename().is_some_and(|f| f.starts_with(&stem));
                async move { mine }
            })
            .map_ok(|o| o.location)
            .try_collect()
            .await
            .map_err(|e| self.list_error(e))?;
        let record = self.record_path(id)?;
        // The record last: until it goes, a sweep can still find the rest.
        for p in names.iter().filter(|p| **p != record).chain([&record]) {
            self.delete_if_present(p).await?;
        }
        Ok(())
    }

    /// Names of the objects in the uploads folder.
    async fn upload_names(&self) -> Result<Vec<String>, StorageError> {
        self.names_under(&self.uploads_path("")?).await
    }
}

fn id_of(name: &str) -> Option<UploadId> {
    UploadId::parse(name.split('.').next()?)
}

impl PartialUploads for S3Storage {
    type Data = S3Partial;

    async fn create_partial(
        &self,
        id: &UploadId,
        state: &UploadState,
    ) -> Result<S3Partial, StorageError> {
        let staged = self.gate.is_some() || state.is_partial();
        let target = if staged {
            self.uploads_path(&format!("{id}.staged"))?
        } else {
            self.target_path(state)?
        };
        // The creator owns what it publishes (a user's quota counts it).
        let mut attributes = object_store::Attributes::new();
        if let Some(owner) = crate::changes::actor() {
            attributes.insert(
                object_store::Attribute::Metadata(super::object::OWNER_KEY.into()),
                super::upload::owner_value(&owner).into(),
            );
        }
        let opts = object_store::PutMultipartOptions {
            attributes,
            ..object_store::PutMultipartOptions::default()
        };
        let mp_id = self
            .store
            .create_multipart_opts(&target, opts)
            .await
            .map_err(|e| self.error(e))?;
        let mp = Multipart {
            id: mp_id,
            staged,
            ..Multipart::default()
        };
        if let Err(e) = self.write_record(id, state, &mp).await {
            let _ = self.store.abort_multipart(&target, &mp.id).await;
            return Err(e);
        }
        Ok(S3Partial::new(self.clone(), *id, target, state.clone(), mp))
    }

    async fn load_partial(&self, id: &UploadId) -> Result<UploadState, StorageError> {
        Ok(self.read_record(id).await?.0)
    }

    async fn open_partial(&self, id: &UploadId) -> Result<S3Partial, StorageError> {
        let (state, mp) = self.read_record(id).await?;
        let target = self.multipart_path(id, &state, &mp)?;
        Ok(S3Partial::new(self.clone(), *id, target, state, mp))
    }

    async fn save_partial(&self, id: &UploadId, state: &UploadState) -> Result<(), StorageError> {
        let (_, mp) = self.read_record(id).await?;
        self.write_record(id, state, &mp).await
    }

    async fn complete_partial(
        &self,
        id: &UploadId,
        mut data: S3Partial,
        key: &RelPath,
        check: Option<CommitCheck>,
    ) -> Result<Written, StorageError> {
        if !matches!(self.dir_state(key).await?, DirState::Absent) {
            return Err(StorageError::Conflict("a directory exists at this path"));
        }
        let published = self.target_path(&data.state)?;
        let current = self.head_opt(&published).await?.map(|m| file_meta(&m));
        if let Some(check) = &check {
            if !check(current.as_ref()) {
                return Err(StorageError::PreconditionFailed);
            }
        }
        if !data.cur.staged {
            self.keep_before_publishing(key, current.as_ref()).await?;
        }
        data.load_tail().await?;
        let size = data.size().await?;
        let last = data.buf.take().unwrap_or_default();
        if !last.is_empty() {
            data.send_part(last.freeze()).await?;
        }
        let mp = &data.cur;
        if mp.parts.is_empty() {
            // S3 completes no upload of zero parts: an empty file is one PUT.
            self.store
                .abort_multipart(&data.target, &mp.id)
                .await
                .map_err(|e| self.error(e))?;
            self.store
                .put(&data.target, PutPayload::default())
                .await
                .map_err(|e| self.error(e))?;
        } else {
            let parts = mp
                .parts
                .iter()
                .map(|(_, e)| PartId {
                    content_id: e.clone(),
                })
                .collect();
            self.store
                .complete_multipart(&data.target, &mp.id, parts)
                .await
                .map_err(|e| self.error(e))?;
        }
        data.done = true;
        // Staged for the gate: published only if it says yes; either way
        // the upload is over once its objects are gone.
        let gated = if data.cur.staged {
            self.publish_staged(key, &data.target, &published, size)
                .await
        } else {
            Ok(())
        };
        if let Err(e) = self.delete_upload_objects(id).await {
            tracing::warn!(%id, error = %e, "could not remove a finished upload's record");
        }
        gated?;
        let after = Version {
            folder: false,
            size,
            id: None,
        };
        let before = current.as_ref().map(|m| Version {
            folder: false,
            size: m.size,
            id: None,
        });
        let kind = match before {
            Some(_) => ChangeKind::Replaced,
            None => ChangeKind::Created,
        };
        self.changes
            .emit(Change::new(kind, key.clone(), before, Some(after)));
        Ok(if current.is_some() {
            Written::Replaced
        } else {
            Written::Created
        })
    }

    async fn delete_partial(&self, id: &UploadId) -> Result<(), StorageError> {
        match self.read_record(id).await {
            // Sealed: no multipart upload is left, only objects.
            Ok((_, mp)) if mp.sealed => {}
            Ok((state, mp)) => {
                let target = self.multipart_path(id, &state, &mp)?;
                match self.store.abort_multipart(&target, &mp.id).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(self.error(e)),
                }
            }
            Err(StorageError::NotFound) => {}
            Err(e) => return Err(e),
        }
        self.delete_upload_objects(id).await
    }

    async fn list_partials(&self) -> Result<Vec<(UploadId, Option<UploadState>)>, StorageError> {
        let mut ids: Vec<UploadId> = self
            .upload_names()
            .await?
            .iter()
            .filter_map(|n| id_of(n))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            // Only an unusable record is `None` (removed after two sweeps);
            // a failing S3 request fails the listing instead.
            let state = match self.read_record(&id).await {
                Ok((s, _)) => Some(s),
                Err(StorageError::NotFound) => None,
                Err(e) => return Err(e),
            };
            out.push((id, state));
        }
        Ok(out)
    }

    async fn count_partials(&self) -> Result<usize, StorageError> {
        let names = self.upload_names().await?;
        Ok(names.iter().filter(|n| n.ends_with(".json")).count())
    }

    fn concatenates(&self) -> bool {
        true
    }

    async fn concat_partials(
        &self,
        parts: &[UploadId],
        key: &RelPath,
        check: Option<CommitCheck>,
        _mtime: Option<std::time::SystemTime>,
    ) -> Result<Written, StorageError> {
        // (S3 sets an object's time itself: a requested mtime is not kept.)
        self.concat_s3(parts, key, check).await
    }

    fn shared(&self) -> bool {
        true
    }
}

/// One partial upload on S3, open for appending (see the module doc).
pub struct S3Partial {
    storage: S3Storage,
    id: UploadId,
    pub(super) target: ObjPath,
    state: UploadState,
    /// The S3 side as it was opened: what a refused append goes back to.
    base: Multipart,
    /// The S3 side now (its `tail` is stale while `buf` holds the bytes).
    pub(super) cur: Multipart,
    /// Bytes after the last part, once read back from the tail object.
    pub(super) buf: Option<BytesMut>,
    /// `buf` holds bytes the tail object does not.
    tail_dirty: bool,
    /// The record in the bucket does not describe `cur` yet.
    record_dirty: bool,
    /// Bytes the record in the bucket names (parts and tail).
    durable: u64,
    /// Tail generations that may exist in the bucket.
    tails: Vec<u64>,
    pub(super) done: bool,
}

impl S3Partial {
    fn new(
        storage: S3Storage,
        id: UploadId,
        target: ObjPath,
        state: UploadState,
        mp: Multipart,
    ) -> S3Partial {
        let tails = if mp.tail > 0 {
            vec![mp.gen]
        } else {
            Vec::new()
        };
        let durable = mp.parts_len() + mp.tail;
        S3Partial {
            durable,
            storage,
            id,
            target,
            state,
            base: mp.clone(),
            cur: mp,
            buf: None,
            tail_dirty: false,
            record_dirty: false,
            tails,
            done: false,
        }
    }

    /// Read the tail object into `buf` (once).
    pub(super) async fn load_tail(&mut self) -> Result<(), StorageError> {
        if self.buf.is_some() {
            return Ok(());
        }
        let mut buf = BytesMut::with_capacity(PART_SIZE);
        if self.cur.tail > 0 {
            let path = self.storage.tail_path(&self.id, self.cur.gen)?;
            let got = self
                .storage
                .store
                .get(&path)
                .await
                .map_err(|e| self.storage.error(e))?;
            let bytes = got.bytes().await.map_err(|e| self.storage.error(e))?;
            if bytes.len() as u64 != self.cur.tail {
                tracing::warn!(id = %self.id, "an upload's tail object does not match its record");
                return Err(StorageError::NotFound);
            }
            buf.extend_from_slice(&bytes);
        }
        self.buf = Some(buf);
        Ok(())
    }

    /// Send `part` as the next part and count it.
    pub(super) async fn send_part(&mut self, part: Bytes) -> Result<(), StorageError> {
        let len = part.len() as u64;
        let idx = self.cur.parts.len();
        let id = self
            .storage
            .store
            .put_part(&self.target, &self.cur.id, idx, PutPayload::from(part))
            .await
            .map_err(|e| self.storage.error(e))?;
        self.cur.parts.push((len, id.content_id));
        self.cur.tail = 0;
        self.record_dirty = true;
        Ok(())
    }

    async fn save_record(&mut self) -> Result<(), StorageError> {
        self.storage
            .write_record(&self.id, &self.state, &self.cur)
            .await?;
        self.record_dirty = false;
        self.durable = self.cur.parts_len() + self.cur.tail;
        Ok(())
    }
}

impl PartialData for S3Partial {
    async fn write(&mut self, mut data: &[u8]) -> Result<(), StorageError> {
        self.load_tail().await?;
        let part = PART_SIZE;
        while !data.is_empty() {
            let Some(buf) = self.buf.as_mut() else {
                return Ok(());
            };
            let n = (part - buf.len()).min(data.len());
            buf.extend_from_slice(&data[..n]);
            self.tail_dirty = true;
            data = &data[n..];
            if buf.len() == part {
                let full = buf.split().freeze();
                if let Err(e) = self.send_part(full.clone()).await {
                    // Not counted: the bytes stay pending.
                    if let Some(buf) = self.buf.as_mut() {
                        buf.extend_from_slice(&full);
                    }
                    return Err(e);
                }
                self.save_record().await?;
            }
        }
        Ok(())
    }

    async fn size(&mut self) -> Result<u64, StorageError> {
        let pending = self.buf.as_ref().map_or(self.cur.tail, |b| b.len() as u64);
        Ok(self.cur.parts_len() + pending)
    }

    async fn truncate(&mut self, len: u64) -> Result<(), StorageError> {
        if len >= self.size().await? {
            return Ok(());
        }
        if len < self.cur.parts_len() {
            if len < self.base.parts_len() {
                return Err(StorageError::Conflict(
                    "an S3 upload cannot be cut inside the parts it stored",
                ));
            }
            // Back to the state this append started from.
            let next = self.cur.next;
            self.cur = self.base.clone();
            self.cur.next = next;
            self.buf = None;
            self.save_record().await?;
        }
        self.load_tail().await?;
        let keep = (len - self.cur.parts_len()) as usize;
        if let Some(buf) = self.buf.as_mut() {
            buf.truncate(keep);
        }
        self.tail_dirty = true;
        if len < self.durable {
            // The record names the bytes cut off: after a restart they
            // would count, so the shorter tail is stored now.
            self.sync().await?;
        }
        Ok(())
    }

    async fn sync(&mut self) -> Result<(), StorageError> {
        if self.tail_dirty {
            let pending = self.buf.as_ref().map(|b| Bytes::copy_from_slice(b));
            if let Some(bytes) = pending {
                if bytes.is_empty() {
                    self.cur.tail = 0;
                } else {
                    let gen = self.cur.next;
                    self.cur.next += 1;
                    self.tails.push(gen);
                    let path = self.storage.tail_path(&self.id, gen)?;
                    let len = bytes.len() as u64;
                    self.storage
                        .store
                        .put(&path, PutPayload::from(bytes))
                        .await
                        .map_err(|e| self.storage.error(e))?;
                    self.cur.tail = len;
                    self.cur.gen = gen;
                }
                self.record_dirty = true;
            }
            self.tail_dirty = false;
        }
        if self.record_dirty {
            self.save_record().await?;
        }
        Ok(())
    }
}

impl Drop for S3Partial {
    /// Tails no record names any more are deleted in the background.
    fn drop(&mut self) {
        let keep = (!self.done && !self.record_dirty && self.cur.tail > 0).then_some(self.cur.gen);
        let stale: Vec<u64> = self
            .tails
            .iter()
            .copied()
            .filter(|g| Some(*g) != keep)
            .collect();
        // With the record not written, what it names is unknown: keep all.
        if stale.is_empty() || (self.record_dirty && !self.done) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let paths: Vec<ObjPath> = stale
            .iter()
            .filter_map(|g| self.storage.tail_path(&self.id, *g).ok())
            .collect();
        let storage = self.storage.clone();
        rt.spawn(async move {
            for p in paths {
                let _ = storage.store.delete(&p).await;
            }
        });
    }
}
