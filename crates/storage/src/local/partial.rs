//! Partial uploads in a directory: `<root>/.wirespeed-uploads/<id>.part`
//! (the bytes so far) and `<id>.json` (the record, replaced by temp file +
//! `renameat` + fsync of the folder). Completion publishes the `.part` by
//! one `renameat` onto the target, so the final name never shows a partial.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use wirespeed_resumable::{UploadId, UploadState};

use super::meta::meta_of;
use super::upload::Landed;
use super::upload::TempGuard;
use super::LocalStorage;
use crate::changes::Version;
use crate::digest_store::{self, Identity};
use crate::partial::{PartialData, PartialUploads, UPLOADS_DIR};
use crate::{CommitCheck, Kind, StorageError, Written};
use wirespeed_path::{RelPath, TEMP_PREFIX};

/// Largest record read back (a record is a few hundred bytes; metadata is
/// bounded by the request head size).
const MAX_RECORD: u64 = 1 << 20;

pub(super) fn data_name(id: &UploadId) -> String {
    format!("{id}.part")
}

pub(super) fn record_name(id: &UploadId) -> String {
    format!("{id}.json")
}

/// Runs blocking storage work off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StorageError> + Send + 'static,
) -> Result<T, StorageError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StorageError::Io(std::io::Error::other(e)))?
}

impl LocalStorage {
    /// The uploads folder below the root (never through a symlink),
    /// created on demand.
    pub(super) fn uploads_dir(&self, create: bool) -> Result<OwnedFd, StorageError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::openat(self.root.fd(), UPLOADS_DIR, flags, Mode::empty()) {
            Ok(fd) => Ok(fd),
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(self.root.fd(), UPLOADS_DIR, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                Ok(rustix::fs::openat(
                    self.root.fd(),
                    UPLOADS_DIR,
                    flags,
                    Mode::empty(),
                )?)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Replace the record of `id` (temp file, rename, fsync of the folder
    /// when syncing). Without fsync the offset is written as 0: the data may
    /// then lose its tail in a power cut, and a record claiming more than the
    /// data holds would make the upload unusable.
    fn write_record(
        &self,
        dir: &OwnedFd,
        id: &UploadId,
        state: &UploadState,
    ) -> Result<(), StorageError> {
        let mut state = state.clone();
        if !self.fsync {
            state.offset = 0;
        }
        let tmp = format!("{TEMP_PREFIX}{id}.json");
        let fd = rustix::fs::openat(
            dir,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut f = File::from(fd);
        f.write_all(&state.to_record())?;
        if self.fsync {
            f.sync_all()?;
        }
        drop(f);
        rustix::fs::renameat(dir, tmp.as_str(), dir, record_name(id).as_str())?;
        if self.fsync {
            rustix::fs::fsync(dir)?;
        }
        Ok(())
    }

    fn read_state(&self, dir: &OwnedFd, id: &UploadId) -> Result<UploadState, StorageError> {
        let fd = rustix::fs::openat(
            dir,
            record_name(id).as_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut bytes = Vec::new();
        File::from(fd).take(MAX_RECORD).read_to_end(&mut bytes)?;
        let mut state = UploadState::from_record(&bytes).map_err(|e| {
            tracing::warn!(%id, error = %e, "an upload record cannot be used");
            StorageError::NotFound
        })?;
        let st = rustix::fs::statat(dir, data_name(id).as_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(StorageError::NotFound);
        }
        state.reconcile(st.st_size as u64).map_err(|e| {
            tracing::warn!(%id, error = %e, "an upload's data does not match its record");
            StorageError::NotFound
        })?;
        Ok(state)
    }
}

impl PartialUploads for LocalStorage {
    type Data = LocalPartial;

    async fn create_partial(
        &self,
        id: &UploadId,
        state: &UploadState,
    ) -> Result<LocalPartial, StorageError> {
        let (this, id, state) = (self.clone(), *id, state.clone());
        blocking(move || {
            let dir = this.uploads_dir(true)?;
            let fd = rustix::fs::openat(
                &dir,
                data_name(&id).as_str(),
                OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            let file = File::from(fd);
            if let Err(e) = this.write_record(&dir, &id, &state) {
                let _ = rustix::fs::unlinkat(&dir, data_name(&id).as_str(), AtFlags::empty());
                return Err(e);
            }
            Ok(LocalPartial {
                file,
                fsync: this.fsync,
            })
        })
        .await
    }

    async fn load_partial(&self, id: &UploadId) -> Result<UploadState, StorageError> {
        let dir = match self.uploads_dir(false) {
            Err(StorageError::NotFound) => return Err(StorageError::NotFound),
            other => other?,
        };
        self.read_state(&dir, id)
    }

    async fn open_partial(&self, id: &UploadId) -> Result<LocalPartial, StorageError> {
        let dir = self.uploads_dir(false)?;
        let fd = rustix::fs::openat(
            &dir,
            data_name(id).as_str(),
            OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut file = File::from(fd);
        file.seek(SeekFrom::End(0))?;
        Ok(LocalPartial {
            file,
            fsync: self.fsync,
        })
    }

    async fn save_partial(&self, id: &UploadId, state: &UploadState) -> Result<(), StorageError> {
        let (this, id, state) = (self.clone(), *id, state.clone());
        blocking(move || {
            let dir = this.uploads_dir(false)?;
            this.write_record(&dir, &id, &state)
        })
        .await
    }

    async fn complete_partial(
        &self,
        id: &UploadId,
        data: LocalPartial,
        key: &RelPath,
        check: Option<CommitCheck>,
    ) -> Result<Written, StorageError> {
        let (this, id, target) = (self.clone(), *id, key.clone());
        // Who replaces a file, for its trash record (known here, not on
        // the blocking thread).
        let owner = crate::changes::actor();
        let landed = blocking(move || {
            let key = target;
            let Some(name) = key.name() else {
                return Err(StorageError::IsDir);
            };
            let file = data.file;
            // Published like a PUT's file, not with the partial's 0600.
            rustix::fs::fchmod(&file, Mode::from_raw_mode(super::published_mode()))?;
            if this.fsync {
                file.sync_all()?;
            }
            let after = rustix::fs::fstat(&file)
                .ok()
                .map(|st| Version::of_stat(&st));
            drop(file);
            if let Some(gate) = &this.gate {
                let at = this.root.path().join(UPLOADS_DIR).join(data_name(&id));
                let size = after.as_ref().map_or(0, |v| v.size);
                gate.check(&key, &at, size).map_err(StorageError::Refused)?;
            }
            let uploads = this.uploads_dir(false)?;
            let (parent, created) = this.make_parents(key.parent())?;
            let parent = Arc::new(parent);
            // Removes the folders made for this target if publishing fails.
            let mut guard = TempGuard {
                root: this.root.clone(),
                dir: parent.clone(),
                tmp: None,
                created,
            };
            let old = match rustix::fs::statat(&*parent, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                    FileType::Directory => {
                        return Err(StorageError::Conflict("a directory exists at this path"))
                    }
                    FileType::Symlink => {
                        this.check_link(key.segments())?;
                        Some(st)
                    }
                    _ => Some(st),
                },
                Err(Errno::NOENT) => None,
                Err(e) => return Err(e.into()),
            };
            if let Some(check) = &check {
                let current = rustix::fs::statat(&*parent, name, AtFlags::empty())
                    .ok()
                    .and_then(|st| meta_of(&st))
                    .filter(|m| m.kind == Kind::File);
                if !check(current.as_ref()) {
                    return Err(StorageError::PreconditionFailed);
                }
            }
            if let (Some(keep), Some(st)) = (&this.keep, &old) {
                let by = owner.as_deref();
                let dir = parent.as_fd();
                super::trash::keep_replaced(&**keep, &this.root, dir, name, &key, st, by)?;
            }
            rustix::fs::renameat(&uploads, data_name(&id).as_str(), &*parent, name).map_err(
                |e| match e {
                    Errno::XDEV => StorageError::Conflict(
                        "the target is on another filesystem than the uploads folder",
                    ),
                    e => e.into(),
                },
            )?;
            guard.created.clear();
            if let Some(st) = &old {
                if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile {
                    digest_store::forget(this.digests, this.root.fd(), &Identity::of(st));
                }
            }
            match rustix::fs::unlinkat(&uploads, record_name(&id).as_str(), AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(e) => tracing::warn!(%id, error = %e, "could not remove an upload record"),
            }
            if this.fsync {
                for dir in [&*parent, &uploads] {
                    if let Err(e) = rustix::fs::fsync(dir) {
                        tracing::warn!(error = %e, "fsync of a directory failed");
                    }
                }
            }
            Ok(Landed {
                before: old.as_ref().map(Version::of_stat),
                after,
            })
        })
        .await?;
        Ok(landed.emit(&self.changes, key))
    }

    fn concatenates(&self) -> bool {
        true
    }

    async fn concat_partials(
        &self,
        parts: &[UploadId],
        key: &RelPath,
        check: Option<CommitCheck>,
        mtime: Option<std::time::SystemTime>,
    ) -> Result<Written, StorageError> {
        self.concat_local(parts, key, check, mtime).await
    }

    async fn delete_partial(&self, id: &UploadId) -> Result<(), StorageError> {
        let dir = match self.uploads_dir(false) {
            Err(StorageError::NotFound) => return Ok(()),
            other => other?,
        };
        for name in [data_name(id), record_name(id)] {
            match rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn list_partials(&self) -> Result<Vec<(UploadId, Option<UploadState>)>, StorageError> {
        let this = self.clone();
        blocking(move || {
            let Some((dir, ids)) = this.partial_ids()? else {
                return Ok(Vec::new());
            };
            Ok(ids
                .into_iter()
                .map(|id| {
                    let state = this.read_state(&dir, &id).ok();
                    (id, state)
                })
                .collect())
        })
        .await
    }

    /// One folder read, no record read: creations call this under a lock.
    async fn count_partials(&self) -> Result<usize, StorageError> {
        let this = self.clone();
        blocking(move || Ok(this.partial_ids()?.map_or(0, |(_, ids)| ids.len()))).await
    }
}

impl LocalStorage {
    /// The uploads folder and the ids of the uploads in it (a `.part` or a
    /// `.json`, or both); `None` when no upload was ever made.
    fn partial_ids(&self) -> Result<Option<(OwnedFd, BTreeSet<UploadId>)>, StorageError> {
        let dir = match self.uploads_dir(false) {
            Err(StorageError::NotFound) => return Ok(None),
            other => other?,
        };
        let mut ids = BTreeSet::new();
        let fd = rustix::fs::openat(
            &dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        for entry in rustix::fs::Dir::new(fd)?.flatten() {
            let name = entry.file_name().to_string_lossy();
            let stem = name
                .strip_suffix(".part")
                .or_else(|| name.strip_suffix(".json"));
            if let Some(id) = stem.and_then(UploadId::parse) {
                ids.insert(id);
            }
        }
        Ok(Some((dir, ids)))
    }
}

/// The data file of one partial upload, open for appending.
pub struct LocalPartial {
    file: File,
    fsync: bool,
}

impl LocalPartial {
    pub(super) fn of(file: File, fsync: bool) -> Self {
        LocalPartial { file, fsync }
    }
}

impl PartialData for LocalPartial {
    fn as_file(&self) -> Option<&File> {
        Some(&self.file)
    }

    async fn write(&mut self, data: &[u8]) -> Result<(), StorageError> {
        self.file.write_all(data)?;
        Ok(())
    }

    async fn size(&mut self) -> Result<u64, StorageError> {
        Ok(self.file.metadata()?.len())
    }

    async fn truncate(&mut self, len: u64) -> Result<(), StorageError> {
        self.file.set_len(len)?;
        self.file.seek(SeekFrom::End(0))?;
        // Refused bytes (a checksum mismatch) must not come back after a
        // power cut and count in the offset: make the new length durable.
        self.sync().await
    }

    async fn sync(&mut self) -> Result<(), StorageError> {
        if !self.fsync {
            return Ok(());
        }
        let file = self.file.try_clone()?;
        blocking(move || Ok(file.sync_data()?)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_resumable::Protocol;

    fn id(n: u8) -> UploadId {
        UploadId::from_random([n; 16])
    }

    /// After a restart the offset is the data's length; a record claiming
    /// more than the data holds, or garbage, makes the upload unknown.
    #[tokio::test]
    async fn reopened_store_reports_the_data_length() {
        let tmp = tempfile::tempdir().unwrap();
        let storage = LocalStorage::new(tmp.path()).unwrap();
        let state = UploadState::new(Protocol::Tus, "/a/b.bin".into(), Some(10), 0, u64::MAX / 2);
        let mut data = storage.create_partial(&id(1), &state).await.unwrap();
        data.write(b"12345").await.unwrap();
        data.sync().await.unwrap();
        drop(data);

        let again = LocalStorage::new(tmp.path()).unwrap();
        let loaded = again.load_partial(&id(1)).await.unwrap();
        assert_eq!((loaded.offset, loaded.length), (5, Some(10)));
        let mut data = again.open_partial(&id(1)).await.unwrap();
        data.write(b"67890").await.unwrap();
        assert_eq!(data.size().await.unwrap(), 10);
        let key = wirespeed_path::parse_request_path("/a/b.bin").unwrap();
        let w = again
            .complete_partial(&id(1), data, &key, None)
            .await
            .unwrap();
        assert_eq!(w, Written::Created);
        assert_eq!(
            std::fs::read(tmp.path().join("a/b.bin")).unwrap(),
            b"1234567890"
        );
        assert!(again.list_partials().await.unwrap().is_empty());

        let mut long = state.clone();
        long.offset = 7;
        drop(storage.create_partial(&id(2), &long).await.unwrap());
        assert!(matches!(
            storage.load_partial(&id(2)).await,
            Err(StorageError::NotFound)
        ));
        std::fs::write(
            tmp.path().join(UPLOADS_DIR).join(format!("{}.json", id(2))),
            b"{",
        )
        .unwrap();
        assert!(matches!(
            storage.load_partial(&id(2)).await,
            Err(StorageError::NotFound)
        ));
        let listed = storage.list_partials().await.unwrap();
        assert_eq!(listed, vec![(id(2), None)]);
        storage.delete_partial(&id(2)).await.unwrap();
        assert!(storage.list_partials().await.unwrap().is_empty());
    }
}
