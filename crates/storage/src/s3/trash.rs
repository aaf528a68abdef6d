//! The trash on S3: `PREFIX/.wirespeed-trash/` (a reserved name: never
//! listed, served or taken by a request), the same entries as the folder
//! backend's: the kept object under its id (a folder: its objects under
//! `ID/`) and the caller's record beside it as `ID.json`.
//!
//! Nothing is downloaded: an object goes in and comes back by a
//! server-side copy (`CopyObject`, which keeps its metadata: its sha-256,
//! WebDAV properties and owner), and only then is the original deleted. A
//! file about to be replaced is copied in and keeps its name until the
//! replacement lands. What S3 cannot keep is the modification time: an
//! object's `Last-Modified` is the time it was written, so a restored file
//! shows the time of its restore (the record keeps when it was deleted).
//! Objects over 5 GiB (where one `CopyObject` stops) are copied in parts
//! (`copy.rs`).

use futures_util::{StreamExt, TryStreamExt};
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStoreExt, PutPayload};

use super::{DirState, S3Storage};
use crate::changes::{Change, ChangeKind, Version};
use crate::local::{check_trash_id as check_id, TRASH_DIR};
use crate::StorageError;
use wirespeed_path::RelPath;

/// The largest record read back.
const MAX_RECORD: usize = 64 * 1024;
/// Copies (and deletes) in flight for a folder.
const IN_FLIGHT: usize = 8;

impl S3Storage {
    /// `PREFIX/.wirespeed-trash/NAME`.
    fn trash_path(&self, name: &str) -> Result<ObjPath, StorageError> {
        ObjPath::parse(format!("{}{TRASH_DIR}/{name}", self.prefix))
            .map_err(|_| StorageError::Forbidden)
    }

    /// Every object below `prefix` (with its trailing `/`), at most
    /// [`MAX_FOLDER_MOVE`] (else a refusal before anything is copied).
    async fn objects_below(&self, prefix: &str) -> Result<Vec<(ObjPath, u64)>, StorageError> {
        let too_many = "keeping folders of more than 1000 objects in the S3 trash (delete their \
                        content in parts)";
        let objects = self.folder_objects(prefix, too_many).await?;
        Ok(objects.into_iter().map(|o| (o.location, o.size)).collect())
    }

    /// Server-side copies of `pairs` (source, target, size), a few at a time.
    async fn copy_all(&self, pairs: Vec<(ObjPath, ObjPath, u64)>) -> Result<(), StorageError> {
        futures_util::stream::iter(pairs)
            .map(|(a, b, size)| {
                let me = self.clone();
                async move { me.copy_object(&a, &b, size).await }
            })
            .buffer_unordered(IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await
            .map(drop)
    }

    async fn delete_all(&self, paths: Vec<ObjPath>) -> Result<(), StorageError> {
        futures_util::stream::iter(paths)
            .map(|p| {
                let me = self.clone();
                async move { me.delete_if_present(&p).await }
            })
            .buffer_unordered(IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await
            .map(drop)
    }

    /// `replaced`: the file stays where it is (its replacement is about to
    /// land), and nothing is emitted.
    /// Keeps the object a publication at `key` is about to replace
    /// (`current`: what is there now) in the trash, when the server keeps
    /// replaced files: asked by every publication (PUT, form and encoded
    /// POSTs, resumable uploads and their joins, `If-Match` writes), so no
    /// front can skip it. The old object stays at its name until the new
    /// one lands. An empty object is not kept (nothing to restore), as on
    /// the folder backend; a failure refuses the publication.
    pub(super) async fn keep_before_publishing(
        &self,
        key: &RelPath,
        current: Option<&crate::Meta>,
    ) -> Result<(), StorageError> {
        let (Some(keep), Some(cur)) = (self.keep.clone(), current) else {
            return Ok(());
        };
        if cur.kind != crate::Kind::File || cur.size == 0 {
            return Ok(());
        }
        let by = crate::changes::actor();
        let Some((id, record)) = keep.entry(key, cur.size, by.as_deref()) else {
            return Ok(());
        };
        self.keep_in_trash(key, &id, &record, true).await
    }

    pub(super) async fn keep_in_trash(
        &self,
        key: &RelPath,
        id: &str,
        record: &[u8],
        replaced: bool,
    ) -> Result<(), StorageError> {
        check_id(id)?;
        if key.is_root() {
            return Err(StorageError::Forbidden);
        }
        let src = self.path(key)?;
        let head = self.head_opt(&src).await?;
        // What goes: the object, or every object of the folder.
        let (pairs, before) = match head {
            Some(m) => {
                let pair = (src.clone(), self.trash_path(id)?, m.size);
                let before = Version {
                    folder: false,
                    size: m.size,
                    id: None,
                };
                (vec![pair], before)
            }
            None if replaced => return Err(StorageError::IsDir),
            None => {
                if matches!(self.dir_state(key).await?, DirState::Absent) {
                    return Err(StorageError::NotFound);
                }
                let from = self.dir_prefix(key);
                let mut pairs = Vec::new();
                for (o, size) in self.objects_below(&from).await? {
                    let Some(rest) = o.as_ref().strip_prefix(from.as_str()) else {
                        continue;
                    };
                    pairs.push((o.clone(), self.trash_path(&format!("{id}/{rest}"))?, size));
                }
                (pairs, Version::folder())
            }
        };
        let json = self.trash_path(&format!("{id}.json"))?;
        self.store
            .put(&json, PutPayload::from(record.to_vec()))
            .await
            .map_err(|e| self.error(e))?;
        let (originals, mut copies): (Vec<_>, Vec<_>) =
            pairs.iter().map(|(a, b, _)| (a.clone(), b.clone())).unzip();
        if let Err(e) = self.copy_all(pairs).await {
            // Nothing of the original was touched: take the copies back.
            copies.push(json);
            let _ = self.delete_all(copies).await;
            return Err(e);
        }
        if replaced {
            return Ok(());
        }
        self.delete_all(originals).await?;
        self.changes.emit(Change::new(
            ChangeKind::Deleted,
            key.clone(),
            Some(before),
            None,
        ));
        Ok(())
    }

    /// The records, a listing page at a time, at most `max`.
    pub(super) async fn read_trash_records(
        &self,
        max: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        let dir = format!("{}{TRASH_DIR}/", self.prefix);
        let mut names = Vec::new();
        let mut token = None;
        loop {
            let opts = PaginatedListOptions {
                delimiter: Some("/".into()),
                max_keys: Some(1000),
                page_token: token.take(),
                ..PaginatedListOptions::default()
            };
            let page = self
                .store
                .list_paginated(Some(&dir), opts)
                .await
                .map_err(|e| self.list_error(e))?;
            for o in &page.result.objects {
                let id = o.location.filename().and_then(|n| n.strip_suffix(".json"));
                if let Some(id) = id.filter(|id| check_id(id).is_ok()) {
                    names.push((id.to_string(), o.location.clone()));
                }
            }
            token = page.page_token;
            if token.is_none() || names.len() >= max {
                break;
            }
        }
        names.truncate(max);
        let mut out = Vec::with_capacity(names.len());
        let reads = futures_util::stream::iter(names)
            .map(|(id, path)| async move {
                let got = self.store.get(&path).await.ok()?;
                let bytes = got.bytes().await.ok()?;
                (bytes.len() <= MAX_RECORD).then(|| (id, bytes.to_vec()))
            })
            .buffer_unordered(IN_FLIGHT);
        futures_util::pin_mut!(reads);
        while let Some(r) = reads.next().await {
            // One deleted meanwhile (a sweep, a restore) is simply left out.
            out.extend(r);
        }
        Ok(out)
    }

    /// What entry `id` holds: one object (its size), or a folder's objects.
    async fn trash_entry(&self, id: &str) -> Result<Entry, StorageError> {
        let path = self.trash_path(id)?;
        if let Some(m) = self.head_opt(&path).await? {
            return Ok(Entry::File(path, m.size));
        }
        let below = self
            .objects_below(&format!("{}{TRASH_DIR}/{id}/", self.prefix))
            .await?;
        if below.is_empty() {
            return Err(StorageError::NotFound);
        }
        Ok(Entry::Folder(below))
    }

    pub(super) async fn restore_from_trash(
        &self,
        id: &str,
        to: &RelPath,
    ) -> Result<(), StorageError> {
        check_id(id)?;
        if to.is_root() {
            return Err(StorageError::Exists);
        }
        let entry = self.trash_entry(id).await?;
        let dst = self.path(to)?;
        // Never over what is there now (a file, or a folder of any kind).
        if self.head_opt(&dst).await?.is_some()
            || !matches!(self.dir_state(to).await?, DirState::Absent)
        {
            return Err(StorageError::Exists);
        }
        let (pairs, after) = match entry {
            Entry::File(path, size) => {
                let after = Version {
                    folder: false,
                    size,
                    id: None,
                };
                (vec![(path, dst, size)], after)
            }
            Entry::Folder(objects) => {
                let from = format!("{}{TRASH_DIR}/{id}/", self.prefix);
                let into = self.dir_prefix(to);
                let mut pairs = Vec::with_capacity(objects.len());
                for (o, size) in objects {
                    let Some(rest) = o.as_ref().strip_prefix(from.as_str()) else {
                        continue;
                    };
                    let target = ObjPath::parse(format!("{into}{rest}"))
                        .map_err(|_| StorageError::Forbidden)?;
                    pairs.push((o.clone(), target, size));
                }
                (pairs, Version::folder())
            }
        };
        // Between the look above and the copy another writer may land
        // there: S3 offers no copy that keeps the metadata and is refused
        // over an existing key (docs/s3.md says so).
        let mut kept: Vec<ObjPath> = pairs.iter().map(|(a, _, _)| a.clone()).collect();
        self.copy_all(pairs).await?;
        kept.push(self.trash_path(&format!("{id}.json"))?);
        self.delete_all(kept).await?;
        self.changes.emit(Change::new(
            ChangeKind::Created,
            to.clone(),
            None,
            Some(after),
        ));
        Ok(())
    }

    pub(super) async fn purge_from_trash(&self, id: &str) -> Result<(), StorageError> {
        check_id(id)?;
        let mut kept = match self.trash_entry(id).await {
            Ok(Entry::File(path, _)) => vec![path],
            Ok(Entry::Folder(objects)) => objects.into_iter().map(|(o, _)| o).collect(),
            Err(StorageError::NotFound) => Vec::new(),
            Err(e) => return Err(e),
        };
        kept.push(self.trash_path(&format!("{id}.json"))?);
        self.delete_all(kept).await
    }
}

enum Entry {
    File(ObjPath, u64),
    Folder(Vec<(ObjPath, u64)>),
}
