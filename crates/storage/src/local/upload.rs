//! Writing an upload: a temporary file next to its target, write-back
//! started during the transfer, fsync and `renameat` at commit, and the
//! guard that removes the temporary file (and folders the upload created)
//! on any failure.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, OFlags};
use rustix::io::Errno;

use super::meta::meta_of;
use crate::changes::{Change, ChangeKind, Changes, Version};
use crate::digest_store::{self, DigestStore, Identity};
use crate::resolve::Root;
use crate::{CommitCheck, Kind, StorageError, Upload, Written};
use wirespeed_path::RelPath;

/// Deletes the temporary file (and parent directories this upload created,
/// if still empty) unless disarmed by a successful commit.
pub(super) struct TempGuard {
    pub(super) root: Arc<Root>,
    pub(super) dir: Arc<OwnedFd>,
    pub(super) tmp: Option<String>,
    pub(super) created: Vec<Vec<String>>,
}

impl TempGuard {
    fn cleanup(&mut self) {
        if let Some(name) = self.tmp.take() {
            match rustix::fs::unlinkat(&*self.dir, name.as_str(), AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(e) => {
                    tracing::warn!(name, error = %e, "could not remove a temporary upload file")
                }
            }
        }
        // Innermost first; rmdir refuses non-empty directories, so
        // directories another upload filled meanwhile stay.
        for dir in self.created.drain(..).rev() {
            let Some((last, parent)) = dir.split_last() else {
                continue;
            };
            if let Ok(p) = self.root.open_at(parent, OFlags::PATH | OFlags::DIRECTORY) {
                let _ = rustix::fs::unlinkat(&p, last.as_str(), AtFlags::REMOVEDIR);
            }
        }
    }

    fn disarm(&mut self) {
        self.tmp = None;
        self.created.clear();
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// An upload into a temporary file next to its target.
pub struct LocalUpload {
    pub(super) file: Option<File>,
    pub(super) guard: TempGuard,
    /// The target's name in the guard's directory.
    pub(super) name: String,
    pub(super) fsync: bool,
    pub(super) digests: DigestStore,
    pub(super) written: u64,
    /// Bytes before this offset have had write-back started.
    pub(super) writeback_from: u64,
    /// Precondition on the target, checked right before the rename.
    pub(super) check: Option<CommitCheck>,
    /// The modification time to give the file before the rename (`X-OC-Mtime`).
    pub(super) modified: Option<std::time::SystemTime>,
    /// Where it lands, for the change it emits.
    pub(super) key: RelPath,
    pub(super) changes: Changes,
    /// The publish gate, and the served folder's path (the gate is given
    /// the temporary file by path).
    pub(super) gate: Option<(Arc<dyn crate::gate::PublishGate>, std::path::PathBuf)>,
    /// Keeps the file this upload replaces (the trash).
    pub(super) keep: Option<Arc<dyn crate::gate::KeepReplaced>>,
}

impl LocalUpload {
    fn file(&mut self) -> Result<&mut File, StorageError> {
        self.file
            .as_mut()
            .ok_or(StorageError::Conflict("upload already finished"))
    }
}

/// Start write-back of an upload every this many bytes (see
/// [`LocalUpload::start_writeback`]).
pub(super) const WRITEBACK_STEP: u64 = 8 << 20;

impl LocalUpload {
    /// With fsync on, ask the kernel to start writing the last
    /// [`WRITEBACK_STEP`] bytes to disk now (sync_file_range WRITE: initiate,
    /// don't wait), so the disk works while the body is still arriving and
    /// the fsync before the rename finds little left to do. Without it that
    /// fsync writes the whole file after the transfer, in series.
    fn start_writeback(&mut self) {
        if !self.fsync || self.written - self.writeback_from < WRITEBACK_STEP {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(f) = &self.file {
            use std::os::fd::AsRawFd;
            let (from, len) = (self.writeback_from, self.written - self.writeback_from);
            // SAFETY: plain syscall on an open descriptor we own; the range
            // is within what was written. Failure only loses the head start
            // (the fsync at commit still makes the file durable).
            let r = unsafe {
                libc::sync_file_range(
                    f.as_raw_fd(),
                    from as libc::off64_t,
                    len as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                )
            };
            if r != 0 {
                tracing::debug!(error = %io::Error::last_os_error(), "sync_file_range failed");
            }
        }
        self.writeback_from = self.written;
    }
}

impl Upload for LocalUpload {
    async fn write(&mut self, data: &[u8]) -> Result<(), StorageError> {
        // Inline write into the page cache: microseconds per 256 KiB, the
        // same trade nginx makes. (Dirty-page throttling can stall it under
        // heavy write-back; spawn_blocking per piece would cost more than it
        // saves at these sizes.)
        self.file()?.write_all(data)?;
        self.written += data.len() as u64;
        self.start_writeback();
        Ok(())
    }

    fn as_file(&mut self) -> Option<&File> {
        self.file.as_ref()
    }

    fn wrote_directly(&mut self, n: u64) {
        self.written += n;
        self.start_writeback();
    }

    fn check_before_commit(&mut self, check: CommitCheck) {
        self.check = Some(check);
    }

    fn set_modified(&mut self, t: std::time::SystemTime) -> bool {
        self.modified = Some(t);
        true
    }

    fn written(&self) -> u64 {
        self.written
    }

    async fn commit(mut self, sha256: Option<[u8; 32]>) -> Result<Written, StorageError> {
        let file = self
            .file
            .take()
            .ok_or(StorageError::Conflict("upload already finished"))?;
        let mut guard = TempGuard {
            root: self.guard.root.clone(),
            dir: self.guard.dir.clone(),
            tmp: self.guard.tmp.take(),
            created: std::mem::take(&mut self.guard.created),
        };
        let (name, fsync, digests) = (std::mem::take(&mut self.name), self.fsync, self.digests);
        let check = self.check.take();
        let modified = self.modified;
        let (gate, key, size) = (self.gate.take(), self.key.clone(), self.written);
        let keep = self.keep.take();
        // Who owns the file: the principal whose request wrote it (a
        // user's quota counts the files they own).
        let owner = crate::changes::actor();
        // fsync of a large file takes as long as the disk needs: off the
        // async workers. The guard moves along, so any failure in here
        // (or a panic) still removes the temporary file.
        let done = tokio::task::spawn_blocking(move || -> Result<Landed, StorageError> {
            if let Some(t) = modified {
                // Before the digest record (bound to the mtime) and the
                // fsync, so the file appears with its time, durably.
                file.set_modified(t)?;
            }
            if let Some(sum) = sha256 {
                // After the last write, so the record is bound to the final
                // size and mtime; before the fsync, so it is durable with it.
                let id = digest_store::identity(&file)?;
                if let Err(e) =
                    digest_store::write(digests, guard.root.fd(), file.as_fd(), &id, &sum)
                {
                    tracing::warn!(error = %e, "could not record the upload's digest");
                }
            }
            if let Some(owner) = &owner {
                super::props::record_owner(&file, owner);
            }
            if fsync {
                file.sync_all()?;
            }
            let after = rustix::fs::fstat(&file)
                .ok()
                .map(|st| Version::of_stat(&st));
            drop(file);
            let Some(tmp) = guard.tmp.clone() else {
                return Err(StorageError::Conflict("upload already finished"));
            };
            let dir = guard.dir.clone();
            if let Some((gate, root)) = &gate {
                // The temporary file sits next to its target.
                let mut at = root.clone();
                at.extend(key.parent());
                at.push(tmp.as_str());
                gate.check(&key, &at, size).map_err(StorageError::Refused)?;
            }
            if let Some(check) = &check {
                // The same descriptor walk as the rename below, microseconds
                // before it (the window another writer could use).
                let current = rustix::fs::statat(&*dir, name.as_str(), AtFlags::empty())
                    .ok()
                    .and_then(|st| meta_of(&st))
                    .filter(|m| m.kind == Kind::File);
                if !check(current.as_ref()) {
                    return Err(StorageError::PreconditionFailed);
                }
            }
            let old = match rustix::fs::statat(&*dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                    return Err(StorageError::Conflict("a directory exists at this path"))
                }
                Ok(st) => Some(st),
                Err(_) => None,
            };
            if let (Some(keep), Some(st)) = (&keep, &old) {
                // Linked, not moved: the name is never empty in between.
                let by = owner.as_deref();
                let root = &guard.root;
                super::trash::keep_replaced(&**keep, root, dir.as_fd(), &name, &key, st, by)?;
            }
            rustix::fs::renameat(&*dir, tmp.as_str(), &*dir, name.as_str())?;
            guard.disarm();
            if let Some(st) = &old {
                if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile {
                    digest_store::forget(digests, guard.root.fd(), &Identity::of(st));
                }
            }
            if fsync {
                // Make the rename itself durable.
                if let Err(e) = rustix::fs::fsync(&*dir) {
                    tracing::warn!(error = %e, "fsync of the directory failed");
                }
            }
            Ok(Landed {
                before: old.as_ref().map(Version::of_stat),
                after,
            })
        })
        .await;
        let landed = match done {
            Ok(r) => r?,
            Err(e) => return Err(StorageError::Io(io::Error::other(e))),
        };
        Ok(landed.emit(&self.changes, &self.key))
    }

    async fn abort(mut self) {
        self.file = None;
        self.guard.cleanup();
    }
}

/// What a committed file replaced, and what it is: for the change it emits.
pub(super) struct Landed {
    pub(super) before: Option<Version>,
    pub(super) after: Option<Version>,
}

impl Landed {
    /// Emits the change at `key` (outside the blocking task, where the
    /// request's actor is known) and says what was written.
    pub(super) fn emit(self, changes: &Changes, key: &RelPath) -> Written {
        let (kind, written) = match self.before {
            Some(_) => (ChangeKind::Replaced, Written::Replaced),
            None => (ChangeKind::Created, Written::Created),
        };
        changes.emit(Change::new(kind, key.clone(), self.before, self.after));
        written
    }
}
