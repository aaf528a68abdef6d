//! The local directory backend. Every path is resolved by [`Root::open_at`]
//! (one `openat2` below the root's descriptor), and every change is made
//! relative to a directory descriptor (`mkdirat`, `openat`, `renameat`,
//! `unlinkat`), so no step follows a path that was checked earlier.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

mod concat;
mod listing;
mod meta;
mod object;
mod partial;
mod pass_names;
mod props;
mod small_files;
mod trash;
mod upload;

pub use listing::{LocalListing, LIST_BATCH};
pub use object::LocalObject;
pub use partial::LocalPartial;
pub use small_files::{SmallFiles, RECHECK as SMALL_FILE_RECHECK};
#[cfg(feature = "s3")]
pub(crate) use trash::check_id as check_trash_id;
pub use trash::TRASH_DIR;
pub use upload::LocalUpload;

use listing::ListState;
use meta::meta_of;
pub(crate) use meta::published_mode;
use object::Body;
use upload::TempGuard;

use super::changes::{Change, ChangeKind, Changes, Version};
use super::digest_store::{self, DigestStore, Identity};
use super::resolve::Root;
use super::sweep::{sweep_stale_temp_files, Sweep, STALE_TEMP_AGE, SWEEP_MAX_ENTRIES};
use super::{Kind, Meta, Storage, StorageError, Written};
use wirespeed_path::{RelPath, TEMP_PREFIX};

/// A directory on the local filesystem.
///
/// Every key is a [`RelPath`] (plain names), opened below the root's
/// descriptor so that a symlink pointing out of the root is refused (403)
/// rather than followed; symlinks that stay inside the root work.
#[derive(Debug, Clone)]
pub struct LocalStorage {
    root: Arc<Root>,
    fsync: bool,
    digests: DigestStore,
    /// Small files kept in memory for GET/HEAD (`None`: opened every time).
    small: Option<Arc<SmallFiles>>,
    changes: Changes,
    /// Asked before an upload is published (`gate.rs`).
    gate: Option<Arc<dyn crate::gate::PublishGate>>,
    /// Keeps what an upload replaces (the trash, `gate.rs`).
    keep: Option<Arc<dyn crate::gate::KeepReplaced>>,
}

impl LocalStorage {
    /// Serve `root`, which must exist and be a directory.
    pub fn new(root: impl AsRef<std::path::Path>) -> io::Result<Self> {
        let root = Root::open(root.as_ref()).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOTDIR) {
                io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "storage root is not a directory",
                )
            } else {
                e
            }
        })?;
        let digests = digest_store::probe(root.fd());
        let small = SmallFiles::new(&root, digests).map(Arc::new);
        Ok(LocalStorage {
            root: Arc::new(root),
            fsync: true,
            digests,
            small,
            changes: Changes::default(),
            gate: None,
            keep: None,
        })
    }

    /// Ask `gate` before each upload is published (`gate.rs`).
    pub fn with_publish_gate(mut self, gate: Arc<dyn crate::gate::PublishGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Whether uploads are fsync'd before the rename (default on). Off trades
    /// crash safety (a power loss may leave an empty or short file under the
    /// new name) for speed.
    /// Follow symlinks that lead outside the root (`serve --allow-symlink`;
    /// refused by default).
    pub fn with_symlinks_outside(self, on: bool) -> Self {
        self.root.follow_symlinks_outside(on);
        self
    }

    pub fn with_fsync(mut self, on: bool) -> Self {
        self.fsync = on;
        self
    }

    /// Keep digests in `store` instead of what the start-up probe chose
    /// (tests use it to exercise the sidecar on filesystems with xattrs).
    pub fn with_digest_store(mut self, store: DigestStore) -> Self {
        self.digests = store;
        if store != DigestStore::Xattr {
            self.small = None;
        }
        self
    }

    /// Whether small files are kept in memory for GET/HEAD (default on
    /// where it can be exact: see [`SmallFiles`]).
    pub fn with_small_files(mut self, on: bool) -> Self {
        self.small = if on {
            SmallFiles::new(&self.root, self.digests).map(Arc::new)
        } else {
            None
        };
        self
    }

    /// The small files kept in memory, if that is on.
    pub fn small_files(&self) -> Option<&SmallFiles> {
        self.small.as_deref()
    }

    /// The stream of changes made through this storage.
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    /// Where digests are kept.
    pub fn digest_store(&self) -> DigestStore {
        self.digests
    }

    /// Resolve paths by canonicalize-then-check instead of openat2 (the
    /// fallback for kernels without it; tests use it to cover that path).
    pub fn with_path_checks(mut self) -> Self {
        self.root.force_checks();
        self.small = None;
        self
    }

    /// Whether paths are resolved with openat2 (false: the fallback checks).
    pub fn uses_openat2(&self) -> bool {
        self.root.uses_openat2()
    }

    /// The canonical root.
    pub fn root(&self) -> &std::path::Path {
        self.root.path()
    }

    /// Start removing temporary upload files a crash or `kill -9` left
    /// behind ([`STALE_TEMP_AGE`] or older; see [`sweep_stale_temp_files`])
    /// on a blocking thread; logs the count. Call once at start-up, inside a
    /// Tokio runtime.
    pub fn spawn_temp_sweep(&self) -> tokio::task::JoinHandle<Sweep> {
        let root = self.root.path().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let sweep = sweep_stale_temp_files(&root, STALE_TEMP_AGE, SWEEP_MAX_ENTRIES);
            tracing::info!(
                removed = sweep.removed,
                visited = sweep.visited,
                truncated = sweep.truncated,
                "swept stale temporary upload files"
            );
            sweep
        })
    }

    /// Open the parent directory of an upload, creating missing directories
    /// (each below the root, by `mkdirat` in its parent's descriptor).
    /// Returns the parent (read-only, for `openat`/`renameat`/`fsync`) and
    /// the directories created (removed again if the upload is aborted).
    fn make_parents(
        &self,
        segments: &[String],
    ) -> Result<(OwnedFd, Vec<Vec<String>>), StorageError> {
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY;
        match self.root.open_at(segments, dir_flags) {
            Ok(fd) => return Ok((fd, Vec::new())),
            Err(StorageError::NotFound) => {}
            Err(e) => return Err(parent_error(e)),
        }
        let mut created = Vec::new();
        for depth in 1..=segments.len() {
            let prefix = &segments[..depth];
            // Two tries: a directory created concurrently by another upload
            // is fine (EEXIST), then we look again.
            let mut tries = 0;
            loop {
                tries += 1;
                match self.root.open_at(prefix, OFlags::PATH | OFlags::DIRECTORY) {
                    Ok(_) => break,
                    Err(StorageError::NotFound) if tries <= 2 => {
                        let parent = self
                            .root
                            .open_at(&segments[..depth - 1], OFlags::PATH | OFlags::DIRECTORY)
                            .map_err(parent_error)?;
                        match rustix::fs::mkdirat(
                            &parent,
                            prefix[depth - 1].as_str(),
                            Mode::from_raw_mode(0o755),
                        ) {
                            Ok(()) => created.push(prefix.to_vec()),
                            Err(Errno::EXIST) => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                    Err(StorageError::NotFound) => {
                        return Err(StorageError::Conflict("a parent path is a dangling link"))
                    }
                    Err(e) => return Err(parent_error(e)),
                }
            }
        }
        let fd = self
            .root
            .open_at(segments, dir_flags)
            .map_err(parent_error)?;
        Ok((fd, created))
    }

    /// The directory a new entry at `key` goes in, which must exist: a
    /// missing parent (or a file in its place) is a conflict.
    fn open_parent(&self, key: &RelPath) -> Result<OwnedFd, StorageError> {
        match self
            .root
            .open_at(key.parent(), OFlags::PATH | OFlags::DIRECTORY)
        {
            Ok(fd) => Ok(fd),
            Err(StorageError::NotFound) => {
                Err(StorageError::Conflict("the parent folder does not exist"))
            }
            Err(e) => Err(parent_error(e)),
        }
    }

    /// A symlink is usable only if it resolves inside the root (dangling
    /// links and links out are refused).
    fn check_link(&self, segments: &[String]) -> Result<(), StorageError> {
        match self.root.open_at(segments, OFlags::PATH) {
            Ok(_) => Ok(()),
            Err(_) => Err(StorageError::Forbidden),
        }
    }
}

/// "Not a directory" on the way to a file means a parent is a file.
fn parent_error(e: StorageError) -> StorageError {
    match e {
        StorageError::NotDir => StorageError::Conflict("a parent path is a file"),
        other => other,
    }
}

/// A per-process unpredictable number for temp names (std's RandomState is
/// seeded from the OS; mixing a counter and the time keeps values distinct).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

impl Storage for LocalStorage {
    type Object = LocalObject;
    type Upload = LocalUpload;
    type Listing = LocalListing;

    async fn stat(&self, key: &RelPath) -> Result<Meta, StorageError> {
        let fd = self.root.open_at(key.segments(), OFlags::PATH)?;
        meta_of(&rustix::fs::fstat(&fd)?).ok_or(StorageError::Forbidden)
    }

    async fn open(&self, key: &RelPath) -> Result<LocalObject, StorageError> {
        // O_NONBLOCK: a FIFO in the tree must not hang a worker on open (no
        // effect on regular files). One open, one fstat.
        let fd = self
            .root
            .open_at(key.segments(), OFlags::RDONLY | OFlags::NONBLOCK)?;
        let st = rustix::fs::fstat(&fd)?;
        let meta = meta_of(&st).ok_or(StorageError::Forbidden)?;
        if meta.kind == Kind::Dir {
            return Err(StorageError::IsDir);
        }
        Ok(LocalObject {
            body: Body::File(File::from(fd)),
            meta,
            id: Identity::of(&st),
            root: self.root.clone(),
            digests: self.digests,
        })
    }

    async fn open_for_download(&self, key: &RelPath) -> Result<LocalObject, StorageError> {
        let Some(small) = &self.small else {
            return self.open(key).await;
        };
        if let Some(kept) = small.get(&self.root, key.segments()) {
            return Ok(LocalObject {
                meta: kept.meta,
                id: kept.id,
                body: Body::Memory(kept),
                root: self.root.clone(),
                digests: self.digests,
            });
        }
        let obj = self.open(key).await?;
        small.offer(&self.root, key.segments(), obj.meta.size);
        Ok(obj)
    }

    async fn create(&self, key: &RelPath) -> Result<LocalUpload, StorageError> {
        let Some(name) = key.name() else {
            return Err(StorageError::IsDir);
        };
        let (dir, created) = self.make_parents(key.parent())?;
        let dir = Arc::new(dir);
        let mut guard = TempGuard {
            root: self.root.clone(),
            dir: dir.clone(),
            tmp: None,
            created,
        };
        match rustix::fs::statat(&*dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => {
                    return Err(StorageError::Conflict("a directory exists at this path"))
                }
                // The rename would replace the link itself, harmless, but a
                // link out of the root is treated as forbidden by every
                // method alike.
                FileType::Symlink => self.check_link(key.segments())?,
                _ => {}
            },
            Err(Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
        let mut tries = 0;
        let (file, tmp) = loop {
            let tmp = format!("{TEMP_PREFIX}{:016x}", random_u64());
            match rustix::fs::openat(
                &*dir,
                tmp.as_str(),
                OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o666),
            ) {
                Ok(f) => break (File::from(f), tmp),
                Err(Errno::EXIST) if tries < 8 => tries += 1,
                Err(e) => return Err(e.into()),
            }
        };
        guard.tmp = Some(tmp);
        Ok(LocalUpload {
            file: Some(file),
            guard,
            name: name.to_string(),
            fsync: self.fsync,
            digests: self.digests,
            written: 0,
            writeback_from: 0,
            check: None,
            modified: None,
            key: key.clone(),
            changes: self.changes.clone(),
            gate: self
                .gate
                .clone()
                .map(|g| (g, self.root.path().to_path_buf())),
            keep: self.keep.clone(),
        })
    }

    async fn list(&self, key: &RelPath) -> Result<LocalListing, StorageError> {
        let dir = self
            .root
            .open_at(key.segments(), OFlags::RDONLY | OFlags::DIRECTORY)?;
        Ok(LocalListing {
            state: Some(ListState::new(
                rustix::fs::Dir::new(dir)?,
                self.root.clone(),
                key.segments().to_vec(),
            )),
        })
    }

    async fn delete(&self, key: &RelPath) -> Result<(), StorageError> {
        let Some(name) = key.name() else {
            return Err(StorageError::Forbidden); // the root itself
        };
        let parent = self
            .root
            .open_at(key.parent(), OFlags::PATH | OFlags::DIRECTORY)?;
        let st = rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                rustix::fs::unlinkat(&parent, name, AtFlags::REMOVEDIR).map_err(|e| match e {
                    // EEXIST is what some filesystems say for "not empty".
                    Errno::EXIST | Errno::NOTEMPTY => StorageError::NotEmpty,
                    e => e.into(),
                })?;
                self.changes.emit(Change::new(
                    ChangeKind::Deleted,
                    key.clone(),
                    Some(Version::folder()),
                    None,
                ));
                Ok(())
            }
            ft => {
                if ft == FileType::Symlink {
                    // A dangling link (its target deleted first, as a
                    // folder's DELETE may do) is removed like any name; a
                    // link out of the root stays refused as everywhere.
                    match self.root.open_at(key.segments(), OFlags::PATH) {
                        Ok(_) | Err(StorageError::NotFound) => {}
                        Err(_) => return Err(StorageError::Forbidden),
                    }
                }
                // A symlink is removed itself, never its target.
                rustix::fs::unlinkat(&parent, name, AtFlags::empty())?;
                if ft == FileType::RegularFile {
                    digest_store::forget(self.digests, self.root.fd(), &Identity::of(&st));
                }
                self.changes.emit(Change::new(
                    ChangeKind::Deleted,
                    key.clone(),
                    Some(Version::of_stat(&st)),
                    None,
                ));
                Ok(())
            }
        }
    }

    async fn mkdir(&self, key: &RelPath) -> Result<(), StorageError> {
        let Some(name) = key.name() else {
            return Err(StorageError::Exists); // the root
        };
        let parent = self.open_parent(key)?;
        match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o755)) {
            Ok(()) => {
                let change = Change::new(
                    ChangeKind::Created,
                    key.clone(),
                    None,
                    Some(Version::folder()),
                );
                self.changes.emit(change);
                Ok(())
            }
            Err(Errno::EXIST) => Err(StorageError::Exists),
            Err(e) => Err(e.into()),
        }
    }

    async fn rename(
        &self,
        from: &RelPath,
        to: &RelPath,
        overwrite: bool,
    ) -> Result<Written, StorageError> {
        let (Some(src_name), Some(dst_name)) = (from.name(), to.name()) else {
            return Err(StorageError::Forbidden); // the root itself
        };
        let src_dir = self
            .root
            .open_at(from.parent(), OFlags::PATH | OFlags::DIRECTORY)?;
        let st = rustix::fs::statat(&src_dir, src_name, AtFlags::SYMLINK_NOFOLLOW)?;
        if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
            self.check_link(from.segments())?;
        }
        let dst_dir = self.open_parent(to)?;
        let existing = match rustix::fs::statat(&dst_dir, dst_name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Some(st),
            Err(Errno::NOENT) => None,
            Err(e) => return Err(e.into()),
        };
        // A symlink at the destination that leads out of the root is not
        // ours to replace (as for PUT).
        if overwrite
            && existing.is_some_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
        {
            self.check_link(to.segments())?;
        }
        let flags = if overwrite {
            RenameFlags::empty()
        } else {
            RenameFlags::NOREPLACE
        };
        match rustix::fs::renameat_with(&src_dir, src_name, &dst_dir, dst_name, flags) {
            Ok(()) => {}
            Err(Errno::EXIST) => return Err(StorageError::Exists),
            // A folder moved into itself (EINVAL), or a file and a folder
            // swapped for each other.
            Err(Errno::INVAL) | Err(Errno::ISDIR) | Err(Errno::NOTDIR) => {
                return Err(StorageError::Conflict(
                    "a folder cannot move into itself, nor replace or be replaced by a file",
                ))
            }
            Err(Errno::NOTEMPTY) => return Err(StorageError::NotEmpty),
            Err(e) => return Err(e.into()),
        }
        self.changes.emit(Change::new(
            ChangeKind::Moved { from: from.clone() },
            to.clone(),
            existing.as_ref().map(Version::of_stat),
            Some(Version::of_stat(&st)),
        ));
        match existing {
            Some(old) => {
                if FileType::from_raw_mode(old.st_mode) == FileType::RegularFile {
                    digest_store::forget(self.digests, self.root.fd(), &Identity::of(&old));
                }
                Ok(Written::Replaced)
            }
            None => Ok(Written::Created),
        }
    }

    fn changes(&self) -> Option<&Changes> {
        Some(&self.changes)
    }

    async fn available(&self) -> Option<u64> {
        let vfs = rustix::fs::fstatvfs(self.root.fd()).ok()?;
        Some(vfs.f_bavail.saturating_mul(vfs.f_frsize))
    }

    async fn used(&self) -> Option<u64> {
        let vfs = rustix::fs::fstatvfs(self.root.fd()).ok()?;
        Some(
            vfs.f_blocks
                .saturating_sub(vfs.f_bfree)
                .saturating_mul(vfs.f_frsize),
        )
    }

    async fn is_symlink(&self, key: &RelPath) -> bool {
        self.link_at(key)
    }

    async fn real_path(
        &self,
        key: &RelPath,
        follow_last: bool,
    ) -> Result<Option<RelPath>, StorageError> {
        let segments = key.segments();
        let (walk, last) = match (follow_last, segments.split_last()) {
            (false, Some((last, parent))) => (parent, Some(last)),
            _ => (segments, None),
        };
        let Some(mut real) = self.root.real_segments(walk) else {
            return Ok(None);
        };
        real.extend(last.cloned());
        let path = RelPath::from_segments(&real).map_err(|_| StorageError::Forbidden)?;
        Ok(Some(if key.trailing_slash() && !path.is_root() {
            wirespeed_path::parse_request_path(&path.to_url(true)).unwrap_or(path)
        } else {
            path
        }))
    }

    async fn dead_props(&self, key: &RelPath) -> Result<Option<Vec<u8>>, StorageError> {
        self.read_props(key)
    }

    async fn owner(&self, key: &RelPath) -> Option<String> {
        self.read_owner(key)
    }

    async fn trash(&self, key: &RelPath, id: &str, record: &[u8]) -> Result<(), StorageError> {
        self.trash_entry(key, id, record)
    }

    async fn trash_replaced(
        &self,
        key: &RelPath,
        id: &str,
        record: &[u8],
    ) -> Result<(), StorageError> {
        self.trash_link(key, id, record)
    }

    fn keep_replaced_in_trash(&mut self, keep: Arc<dyn crate::gate::KeepReplaced>) -> bool {
        self.keep = Some(keep);
        true
    }

    fn keeps_replaced(&self) -> bool {
        self.keep.is_some()
    }

    async fn trash_records(&self, max: usize) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.trash_records(max)
    }

    async fn untrash(&self, id: &str, to: &RelPath) -> Result<(), StorageError> {
        LocalStorage::untrash(self, id, to)
    }

    async fn purge_trash(&self, id: &str) -> Result<(), StorageError> {
        LocalStorage::purge_trash(self, id)
    }

    async fn set_dead_props(&self, key: &RelPath, blob: Option<&[u8]>) -> Result<(), StorageError> {
        self.write_props(key, blob)
    }

    async fn set_modified(&self, key: &RelPath, t: SystemTime) -> Result<(), StorageError> {
        self.touch(key, t)
    }
}

#[cfg(test)]
mod tests {
    use super::upload::WRITEBACK_STEP;
    use super::*;
    use crate::{Listing, Object, Upload, Written};
    use std::io::Write;
    use std::time::Duration;
    use wirespeed_path::parse_request_path;

    /// An fsync'd upload well past several write-back steps, fed through
    /// both `write` and `wrote_directly` (the splice path's way): every byte
    /// arrives, in order, and the write-back hints never disturb the data.
    #[tokio::test]
    async fn progressive_writeback_keeps_every_byte() {
        let tmp = tempfile::tempdir().unwrap();
        let storage = LocalStorage::new(tmp.path()).unwrap().with_fsync(true);
        let key = parse_request_path("/wb/big.bin").unwrap();
        let mut up = storage.create(&key).await.unwrap();
        let data: Vec<u8> = (0..(3 * WRITEBACK_STEP as usize + 12345))
            .map(|i| (i % 251) as u8)
            .collect();
        let (first, rest) = data.split_at(data.len() / 2);
        for piece in first.chunks(256 * 1024) {
            up.write(piece).await.unwrap();
        }
        assert!(
            up.writeback_from > 0,
            "write-back started during the upload"
        );
        for piece in rest.chunks(1 << 20) {
            up.as_file().unwrap().write_all(piece).unwrap();
            up.wrote_directly(piece.len() as u64);
        }
        assert_eq!(up.written(), data.len() as u64);
        assert!(up.writeback_from > first.len() as u64);
        assert_eq!(up.commit(None).await.unwrap(), Written::Created);
        assert_eq!(std::fs::read(tmp.path().join("wb/big.bin")).unwrap(), data);
    }

    /// Both resolution paths create parents, refuse a parent that is a
    /// file, and leave no directories behind when an upload is aborted.
    #[tokio::test]
    async fn create_and_abort_on_both_paths() {
        for checks in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            let mut storage = LocalStorage::new(tmp.path()).unwrap();
            if checks {
                storage = storage.with_path_checks();
            }
            std::fs::write(tmp.path().join("file"), b"x").unwrap();
            let key = parse_request_path("/file/below").unwrap();
            assert!(matches!(
                storage.create(&key).await,
                Err(StorageError::Conflict(_))
            ));
            let key = parse_request_path("/a/b/c/new.txt").unwrap();
            let up = storage.create(&key).await.unwrap();
            assert!(tmp.path().join("a/b/c").is_dir());
            up.abort().await;
            assert!(
                !tmp.path().join("a").exists(),
                "created parents removed (checks: {checks})"
            );
            let mut up = storage.create(&key).await.unwrap();
            up.write(b"hello").await.unwrap();
            assert_eq!(up.commit(None).await.unwrap(), Written::Created);
            assert_eq!(
                std::fs::read(tmp.path().join("a/b/c/new.txt")).unwrap(),
                b"hello"
            );
            storage.delete(&key).await.unwrap();
            assert!(!tmp.path().join("a/b/c/new.txt").exists());
        }
    }

    /// A listing nobody reads holds no thread of the blocking pool: with a
    /// pool of one thread, other blocking work still runs while a 5,000-entry
    /// listing sits half-read. (The reader thread used to park in a channel
    /// send until the client read on.)
    #[test]
    fn unread_listing_holds_no_blocking_thread() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..5000 {
            std::fs::write(tmp.path().join(format!("f{i:05}")), b"").unwrap();
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let storage = LocalStorage::new(tmp.path()).unwrap();
            let mut listing = storage.list(&RelPath::root()).await.unwrap();
            let first = listing.next_batch().await.unwrap().unwrap();
            assert_eq!(first.len(), LIST_BATCH);
            let other =
                tokio::time::timeout(Duration::from_secs(10), tokio::task::spawn_blocking(|| 42))
                    .await
                    .expect("the blocking pool is free while the listing waits");
            assert_eq!(other.unwrap(), 42);
            let mut total = first.len();
            while let Some(b) = listing.next_batch().await.unwrap() {
                total += b.len();
            }
            assert_eq!(total, 5000);
        });
    }

    /// A precondition is checked again right before the rename: a file that
    /// appeared during the upload is not overwritten by a create-only PUT.
    #[tokio::test]
    async fn commit_check_sees_a_file_created_during_the_upload() {
        let tmp = tempfile::tempdir().unwrap();
        let storage = LocalStorage::new(tmp.path()).unwrap();
        let key = parse_request_path("/race.txt").unwrap();
        let mut up = storage.create(&key).await.unwrap();
        up.check_before_commit(Box::new(|current| current.is_none()));
        up.write(b"mine").await.unwrap();
        std::fs::write(tmp.path().join("race.txt"), b"theirs").unwrap();
        assert!(matches!(
            up.commit(None).await,
            Err(StorageError::PreconditionFailed)
        ));
        assert_eq!(
            std::fs::read(tmp.path().join("race.txt")).unwrap(),
            b"theirs"
        );
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "temporary file removed");
    }

    /// A digest recorded at commit is read back on open, in both stores, and
    /// goes away with an overwrite.
    #[tokio::test]
    async fn committed_digest_is_read_back_until_replaced() {
        for store in [DigestStore::Xattr, DigestStore::Sidecar] {
            let tmp = tempfile::tempdir().unwrap();
            let storage = LocalStorage::new(tmp.path()).unwrap();
            if store == DigestStore::Xattr && storage.digest_store() != DigestStore::Xattr {
                eprintln!("no user xattrs on this filesystem; skipping the xattr half");
                continue;
            }
            let storage = storage.with_digest_store(store);
            let key = parse_request_path("/d.bin").unwrap();
            let mut up = storage.create(&key).await.unwrap();
            up.write(b"data").await.unwrap();
            up.commit(Some([5; 32])).await.unwrap();
            let obj = storage.open(&key).await.unwrap();
            assert_eq!(obj.stored_sha256(), Some([5; 32]), "{store:?}");
            let mut up = storage.create(&key).await.unwrap();
            up.write(b"data").await.unwrap();
            assert_eq!(up.commit(None).await.unwrap(), Written::Replaced);
            let obj = storage.open(&key).await.unwrap();
            assert_eq!(
                obj.stored_sha256(),
                None,
                "{store:?}: no digest after an overwrite"
            );
            if store == DigestStore::Sidecar {
                let left = std::fs::read_dir(tmp.path().join(digest_store::SIDECAR_DIR))
                    .unwrap()
                    .count();
                assert_eq!(left, 0, "the replaced file's sidecar record is removed");
            }
        }
    }
}
