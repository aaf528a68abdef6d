//! Where files live. The routes talk to a [`Storage`]; [`LocalStorage`] (a
//! directory) is the embedded default, and an S3-compatible backend can be
//! added later without touching the routes:
//!
//! | operation            | local directory                    | S3-compatible                      |
//! |----------------------|------------------------------------|------------------------------------|
//! | [`Storage::open`] + [`Object::read_at`] | `open` + `pread`  | `HEAD` + ranged `GET`              |
//! | [`Storage::create`] → [`Upload`] | temp file, `write`        | multipart upload, `UploadPart`     |
//! | [`Upload::commit`]   | `fsync` + `rename` over the target | `CompleteMultipartUpload`          |
//! | [`Upload::abort`] / drop | unlink the temp file           | `AbortMultipartUpload`             |
//! | [`Storage::list`]    | `read_dir` on a blocking thread    | `ListObjectsV2` pages              |
//! | [`Storage::delete`]  | `unlink` / `rmdir`                 | `DeleteObject`                     |
//!
//! Fast paths are optional capabilities, not separate code paths in the
//! routes: [`Object::as_file`] hands a `std::fs::File` to the engine's
//! sendfile(2), and [`Upload::as_file`] lets an upload splice(2) socket bytes
//! straight into the file. Backends without a local file return `None` and the
//! routes fall back to plain reads and writes.

use std::fs::{self, File, OpenOptions};
use std::future::Future;
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::path::{is_temp_name, RelPath, TEMP_PREFIX};

/// File or directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
}

/// What a listing or a `stat` tells about an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    /// Size in bytes (0 for directories).
    pub size: u64,
    pub modified: Option<SystemTime>,
}

/// One listing entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub meta: Meta,
}

/// How a committed upload landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// No file existed at the key (201).
    Created,
    /// An existing file was replaced (204).
    Replaced,
}

/// Storage failures, each with the HTTP status it maps to.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("not found")]
    NotFound,
    /// The key names a directory where a file was expected.
    #[error("is a directory")]
    IsDir,
    /// The key names a file where a directory was expected.
    #[error("not a directory")]
    NotDir,
    /// Outside the root (a symlink pointing out), or not permitted.
    #[error("forbidden")]
    Forbidden,
    #[error("directory not empty")]
    NotEmpty,
    /// The operation clashes with what exists (e.g. a parent is a file).
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("storage full")]
    Full,
    #[error("name too long")]
    NameTooLong,
    #[error("storage I/O error: {0}")]
    Io(io::Error),
}

impl StorageError {
    pub fn status(&self) -> u16 {
        match self {
            StorageError::NotFound | StorageError::NotDir => 404,
            StorageError::IsDir | StorageError::NotEmpty | StorageError::Conflict(_) => 409,
            StorageError::Forbidden => 403,
            StorageError::Full => 507,
            StorageError::NameTooLong => 414,
            StorageError::Io(_) => 500,
        }
    }
}

impl From<io::Error> for StorageError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::NotFound => return StorageError::NotFound,
            io::ErrorKind::PermissionDenied => return StorageError::Forbidden,
            io::ErrorKind::DirectoryNotEmpty => return StorageError::NotEmpty,
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => return StorageError::Full,
            io::ErrorKind::NotADirectory => return StorageError::NotDir,
            io::ErrorKind::IsADirectory => return StorageError::IsDir,
            _ => {}
        }
        match e.raw_os_error() {
            Some(libc::ENAMETOOLONG) => StorageError::NameTooLong,
            Some(libc::ELOOP) => StorageError::Forbidden,
            _ => StorageError::Io(e),
        }
    }
}

/// A storage backend. Keys are validated [`RelPath`]s: plain names only.
pub trait Storage: Send + Sync + 'static {
    type Object: Object;
    type Upload: Upload;
    type Listing: Listing;

    /// Metadata of a file or directory.
    fn stat(&self, key: &RelPath) -> impl Future<Output = Result<Meta, StorageError>> + Send;
    /// Open a file for (ranged) reading; [`StorageError::IsDir`] for a directory.
    fn open(
        &self,
        key: &RelPath,
    ) -> impl Future<Output = Result<Self::Object, StorageError>> + Send;
    /// Start writing a file; nothing is visible at `key` until
    /// [`Upload::commit`]. Missing parent directories are created.
    fn create(
        &self,
        key: &RelPath,
    ) -> impl Future<Output = Result<Self::Upload, StorageError>> + Send;
    /// List a directory in batches.
    fn list(
        &self,
        key: &RelPath,
    ) -> impl Future<Output = Result<Self::Listing, StorageError>> + Send;
    /// Remove a file, or an empty directory.
    fn delete(&self, key: &RelPath) -> impl Future<Output = Result<(), StorageError>> + Send;
}

/// An open file.
pub trait Object: Send {
    fn meta(&self) -> &Meta;
    /// Read at `offset` into `buf`; `Ok(0)` at the end.
    fn read_at(
        &mut self,
        offset: u64,
        buf: &mut [u8],
    ) -> impl Future<Output = Result<usize, StorageError>> + Send;
    /// The local file behind this object, for sendfile(2).
    fn as_file(&self) -> Option<&File> {
        None
    }
}

/// A file being written. Dropping it without [`commit`](Self::commit) aborts.
pub trait Upload: Send {
    /// Append bytes.
    fn write(&mut self, data: &[u8]) -> impl Future<Output = Result<(), StorageError>> + Send;
    /// The local file being written, positioned at the end of what was
    /// written so far, for zero-copy receive (splice(2)). A caller that
    /// writes through it must report the count with
    /// [`wrote_directly`](Self::wrote_directly).
    fn as_file(&mut self) -> Option<&File> {
        None
    }
    /// Account for `n` bytes written through [`as_file`](Self::as_file).
    fn wrote_directly(&mut self, _n: u64) {}
    /// Bytes written so far.
    fn written(&self) -> u64;
    /// Make the bytes visible at the key, atomically.
    fn commit(self) -> impl Future<Output = Result<Written, StorageError>> + Send;
    /// Throw the bytes away.
    fn abort(self) -> impl Future<Output = ()> + Send;
}

/// A directory listing, fetched in batches (bounded memory for any size).
pub trait Listing: Send {
    /// The next batch, or `None` at the end.
    fn next_batch(
        &mut self,
    ) -> impl Future<Output = Result<Option<Vec<Entry>>, StorageError>> + Send;
}

// ---- local directory --------------------------------------------------

/// Entries per listing batch handed from the directory-reading thread.
pub const LIST_BATCH: usize = 1024;

/// A directory on the local filesystem.
///
/// Every path handed in is a [`RelPath`] (plain names), and every path that
/// already exists is canonicalized and checked to be inside the canonical
/// root before use, so a symlink pointing out of the root is refused (403)
/// rather than followed. Symlinks that stay inside the root work.
///
/// Known limit: the checks and the later open are separate system calls, so
/// someone with write access to the directory *on the host* could swap a
/// checked directory for a symlink in between. Clients of the HTTP API cannot
/// create symlinks, so this is outside the API's threat model.
#[derive(Debug, Clone)]
pub struct LocalStorage {
    root: PathBuf,
    fsync: bool,
}

impl LocalStorage {
    /// Serve `root`, which must exist and be a directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = fs::canonicalize(root)?;
        if !fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "storage root is not a directory",
            ));
        }
        Ok(LocalStorage { root, fsync: true })
    }

    /// Whether uploads are fsync'd before the rename (default on). Off trades
    /// crash safety (a power loss may leave an empty or short file under the
    /// new name) for speed.
    pub fn with_fsync(mut self, on: bool) -> Self {
        self.fsync = on;
        self
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Start removing temporary upload files a crash or `kill -9` left
    /// behind ([`STALE_TEMP_AGE`] or older; see [`sweep_stale_temp_files`])
    /// on a blocking thread; logs the count. Call once at start-up, inside a
    /// Tokio runtime.
    pub fn spawn_temp_sweep(&self) -> tokio::task::JoinHandle<Sweep> {
        let root = self.root.clone();
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

    fn lexical(&self, segments: &[String]) -> PathBuf {
        let mut p = self.root.clone();
        p.extend(segments);
        p
    }

    /// Canonicalize an existing key and check it stays inside the root and
    /// does not land on a temporary upload file.
    fn resolve(&self, segments: &[String]) -> Result<PathBuf, StorageError> {
        let canon = fs::canonicalize(self.lexical(segments))?;
        let Ok(rel) = canon.strip_prefix(&self.root) else {
            return Err(StorageError::Forbidden);
        };
        if rel
            .components()
            .any(|c| c.as_os_str().to_str().is_none_or(is_temp_name))
        {
            return Err(StorageError::NotFound);
        }
        Ok(canon)
    }

    /// A symlink is usable only if it resolves inside the root (dangling
    /// links and links out are refused).
    fn check_link(&self, link: &Path) -> Result<(), StorageError> {
        match fs::canonicalize(link) {
            Ok(t) if t.starts_with(&self.root) => Ok(()),
            _ => Err(StorageError::Forbidden),
        }
    }

    /// Walk (and create) the parent directories of an upload, refusing any
    /// step that leaves the root. Returns the canonical parent and the
    /// directories created (removed again if the upload is aborted).
    fn make_parents(&self, segments: &[String]) -> Result<(PathBuf, Vec<PathBuf>), StorageError> {
        let mut dir = self.root.clone();
        let mut created = Vec::new();
        for seg in segments {
            let next = dir.join(seg);
            // Two tries: a directory created concurrently by another upload
            // is fine (AlreadyExists), then we look again.
            let mut tries = 0;
            loop {
                tries += 1;
                match fs::symlink_metadata(&next) {
                    Ok(m) if m.is_dir() => {
                        dir = next;
                        break;
                    }
                    Ok(m) if m.file_type().is_symlink() => {
                        let target = fs::canonicalize(&next)
                            .map_err(|_| StorageError::Conflict("a parent is a dangling link"))?;
                        if !target.starts_with(&self.root) {
                            return Err(StorageError::Forbidden);
                        }
                        if !target.is_dir() {
                            return Err(StorageError::Conflict("a parent path is a file"));
                        }
                        dir = target;
                        break;
                    }
                    Ok(_) => return Err(StorageError::Conflict("a parent path is a file")),
                    Err(e) if e.kind() == io::ErrorKind::NotFound && tries <= 2 => {
                        match fs::create_dir(&next) {
                            Ok(()) => created.push(next.clone()),
                            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        // Belt and braces: the final parent, canonical, is inside the root.
        let canon = fs::canonicalize(&dir)?;
        if !canon.starts_with(&self.root) {
            return Err(StorageError::Forbidden);
        }
        Ok((canon, created))
    }
}

/// Temporary upload files older than this (by mtime) are leftovers of a
/// crashed or killed server: a live upload writes (and so touches its file)
/// far more often than that, and gives up after the body timeout anyway.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(15 * 60);
/// Most directory entries one sweep looks at, so a huge tree costs bounded
/// start-up work (the rest is swept at the next start).
pub const SWEEP_MAX_ENTRIES: u64 = 1_000_000;

/// What a sweep of stale temporary files did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    /// Stale temporary files removed.
    pub removed: u64,
    /// Directory entries looked at.
    pub visited: u64,
    /// Stopped at the entry limit before the whole tree was seen.
    pub truncated: bool,
}

/// Remove temporary upload files (our prefix, regular files) whose mtime is
/// more than `max_age` ago, anywhere under `root`, looking at no more than
/// `max_entries` entries. Symlinks are never followed (a link to a directory
/// is not descended into, a link named like a temp file is left alone).
/// Blocking; errors on single entries are logged and skipped.
pub fn sweep_stale_temp_files(root: &Path, max_age: Duration, max_entries: u64) -> Sweep {
    let mut sweep = Sweep::default();
    let cutoff = SystemTime::now().checked_sub(max_age);
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "temp sweep cannot read a directory");
                continue;
            }
        };
        for de in rd.flatten() {
            if sweep.visited >= max_entries {
                sweep.truncated = true;
                return sweep;
            }
            sweep.visited += 1;
            let Ok(ft) = de.file_type() else { continue };
            if ft.is_dir() {
                dirs.push(de.path());
                continue;
            }
            if !ft.is_file() || !de.file_name().to_str().is_some_and(is_temp_name) {
                continue;
            }
            let stale = match (cutoff, de.metadata().and_then(|m| m.modified())) {
                (Some(cutoff), Ok(mtime)) => mtime < cutoff,
                _ => false,
            };
            if !stale {
                continue;
            }
            let path = de.path();
            match fs::remove_file(&path) {
                Ok(()) => sweep.removed += 1,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "could not remove a stale temporary upload file")
                }
            }
        }
    }
    sweep
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

fn meta_of(m: &fs::Metadata) -> Option<Meta> {
    let kind = if m.is_dir() {
        Kind::Dir
    } else if m.is_file() {
        Kind::File
    } else {
        // FIFOs, sockets, devices: never served (opening a FIFO would block).
        return None;
    };
    Some(Meta {
        kind,
        size: if kind == Kind::File { m.len() } else { 0 },
        modified: m.modified().ok(),
    })
}

impl Storage for LocalStorage {
    type Object = LocalObject;
    type Upload = LocalUpload;
    type Listing = LocalListing;

    async fn stat(&self, key: &RelPath) -> Result<Meta, StorageError> {
        let p = self.resolve(key.segments())?;
        meta_of(&fs::metadata(p)?).ok_or(StorageError::Forbidden)
    }

    async fn open(&self, key: &RelPath) -> Result<LocalObject, StorageError> {
        let p = self.resolve(key.segments())?;
        let meta = meta_of(&fs::metadata(&p)?).ok_or(StorageError::Forbidden)?;
        if meta.kind == Kind::Dir {
            return Err(StorageError::IsDir);
        }
        // O_NONBLOCK: if the file was swapped for a FIFO since the stat, the
        // open must not hang a worker (it has no effect on regular files).
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)?;
        let meta = meta_of(&file.metadata()?).ok_or(StorageError::Forbidden)?;
        Ok(LocalObject { file, meta })
    }

    async fn create(&self, key: &RelPath) -> Result<LocalUpload, StorageError> {
        let Some(name) = key.name() else {
            return Err(StorageError::IsDir);
        };
        let (dir, created_dirs) = self.make_parents(key.parent())?;
        let mut guard = TempGuard {
            path: None,
            created_dirs,
        };
        let target = dir.join(name);
        match fs::symlink_metadata(&target) {
            Ok(m) if m.is_dir() => {
                return Err(StorageError::Conflict("a directory exists at this path"))
            }
            // The rename would replace the link itself, harmless, but a link
            // out of the root is treated as forbidden by every method alike.
            Ok(m) if m.file_type().is_symlink() => self.check_link(&target)?,
            _ => {}
        }
        let mut tries = 0;
        let (file, tmp) = loop {
            let tmp = dir.join(format!("{TEMP_PREFIX}{:016x}", random_u64()));
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(&tmp)
            {
                Ok(f) => break (f, tmp),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
                Err(e) => return Err(e.into()),
            }
        };
        guard.path = Some(tmp);
        Ok(LocalUpload {
            file: Some(file),
            guard,
            target,
            dir,
            fsync: self.fsync,
            written: 0,
            writeback_from: 0,
        })
    }

    async fn list(&self, key: &RelPath) -> Result<LocalListing, StorageError> {
        let p = self.resolve(key.segments())?;
        let rd = fs::read_dir(&p)?;
        let root = self.root.clone();
        let at_root = key.is_root();
        // read_dir + one lstat per entry are blocking calls: they run on a
        // blocking thread that hands batches over a 2-deep channel, so memory
        // stays bounded (a slow client stops the reader) and no async worker
        // stalls on a 100k-entry directory.
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        tokio::task::spawn_blocking(move || {
            let mut batch = Vec::with_capacity(LIST_BATCH);
            for de in rd {
                let de = match de {
                    Ok(de) => de,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(StorageError::from(e)));
                        return;
                    }
                };
                let Ok(name) = de.file_name().into_string() else {
                    tracing::debug!(name = ?de.file_name(), "listing skips a name that is not UTF-8");
                    continue;
                };
                if is_temp_name(&name) || (at_root && name == "-") {
                    continue;
                }
                let Some(meta) = entry_meta(&de, &root) else {
                    continue;
                };
                batch.push(Entry { name, meta });
                if batch.len() == LIST_BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(LIST_BATCH));
                    if tx.blocking_send(Ok(full)).is_err() {
                        return; // the client went away
                    }
                }
            }
            if !batch.is_empty() {
                let _ = tx.blocking_send(Ok(batch));
            }
        });
        Ok(LocalListing { rx })
    }

    async fn delete(&self, key: &RelPath) -> Result<(), StorageError> {
        let Some(name) = key.name() else {
            return Err(StorageError::Forbidden); // the root itself
        };
        let parent = self.resolve(key.parent())?;
        let target = parent.join(name);
        let m = fs::symlink_metadata(&target)?;
        if m.file_type().is_symlink() {
            self.check_link(&target)?;
        }
        if m.is_dir() {
            fs::remove_dir(&target).map_err(|e| match StorageError::from(e) {
                // EEXIST is what some filesystems say for "not empty".
                StorageError::Io(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    StorageError::NotEmpty
                }
                other => other,
            })
        } else {
            // A symlink is removed itself, never its target.
            fs::remove_file(&target).map_err(Into::into)
        }
    }
}

/// Listing metadata of one entry; symlinks are followed only when they stay
/// inside the root (others are left out, as GET would refuse them anyway).
fn entry_meta(de: &fs::DirEntry, root: &Path) -> Option<Meta> {
    let ft = de.file_type().ok()?;
    if ft.is_symlink() {
        let target = fs::canonicalize(de.path()).ok()?;
        if !target.starts_with(root) {
            return None;
        }
        return meta_of(&fs::metadata(target).ok()?);
    }
    meta_of(&de.metadata().ok()?)
}

/// An open local file.
pub struct LocalObject {
    file: File,
    meta: Meta,
}

impl Object for LocalObject {
    fn meta(&self) -> &Meta {
        &self.meta
    }

    async fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, StorageError> {
        Ok(self.file.read_at(buf, offset)?)
    }

    fn as_file(&self) -> Option<&File> {
        Some(&self.file)
    }
}

/// Deletes the temporary file (and parent directories this upload created,
/// if still empty) unless disarmed by a successful commit.
struct TempGuard {
    path: Option<PathBuf>,
    created_dirs: Vec<PathBuf>,
}

impl TempGuard {
    fn cleanup(&mut self) {
        if let Some(p) = self.path.take() {
            if let Err(e) = fs::remove_file(&p) {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(path = %p.display(), error = %e, "could not remove a temporary upload file");
                }
            }
        }
        // Innermost first; remove_dir refuses non-empty directories, so
        // directories another upload filled meanwhile stay.
        for d in self.created_dirs.drain(..).rev() {
            let _ = fs::remove_dir(d);
        }
    }

    fn disarm(&mut self) {
        self.path = None;
        self.created_dirs.clear();
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// An upload into a temporary file next to its target.
pub struct LocalUpload {
    file: Option<File>,
    guard: TempGuard,
    target: PathBuf,
    dir: PathBuf,
    fsync: bool,
    written: u64,
    /// Bytes before this offset have had write-back started.
    writeback_from: u64,
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
const WRITEBACK_STEP: u64 = 8 << 20;

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

    fn written(&self) -> u64 {
        self.written
    }

    async fn commit(mut self) -> Result<Written, StorageError> {
        let file = self
            .file
            .take()
            .ok_or(StorageError::Conflict("upload already finished"))?;
        let mut guard = std::mem::replace(
            &mut self.guard,
            TempGuard {
                path: None,
                created_dirs: Vec::new(),
            },
        );
        let (target, dir, fsync) = (self.target.clone(), self.dir.clone(), self.fsync);
        // fsync of a large file takes as long as the disk needs: off the
        // async workers. The guard moves along, so any failure in here
        // (or a panic) still removes the temporary file.
        let done = tokio::task::spawn_blocking(move || -> Result<Written, StorageError> {
            if fsync {
                file.sync_all()?;
            }
            drop(file);
            let Some(tmp) = guard.path.clone() else {
                return Err(StorageError::Conflict("upload already finished"));
            };
            let existed = match fs::symlink_metadata(&target) {
                Ok(m) if m.is_dir() => return Err(StorageError::Conflict("a directory exists at this path")),
                Ok(_) => true,
                Err(_) => false,
            };
            fs::rename(&tmp, &target)?;
            guard.disarm();
            if fsync {
                // Make the rename itself durable.
                if let Err(e) = File::open(&dir).and_then(|d| d.sync_all()) {
                    tracing::warn!(dir = %dir.display(), error = %e, "fsync of the directory failed");
                }
            }
            Ok(if existed { Written::Replaced } else { Written::Created })
        })
        .await;
        match done {
            Ok(r) => r,
            Err(e) => Err(StorageError::Io(io::Error::other(e))),
        }
    }

    async fn abort(mut self) {
        self.file = None;
        self.guard.cleanup();
    }
}

/// Batches from the directory-reading thread.
pub struct LocalListing {
    rx: tokio::sync::mpsc::Receiver<Result<Vec<Entry>, StorageError>>,
}

impl Listing for LocalListing {
    async fn next_batch(&mut self) -> Result<Option<Vec<Entry>>, StorageError> {
        self.rx.recv().await.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn age(path: &Path, by: Duration) {
        let f = File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - by).unwrap();
    }

    /// An fsync'd upload well past several write-back steps, fed through
    /// both `write` and `wrote_directly` (the splice path's way): every byte
    /// arrives, in order, and the write-back hints never disturb the data.
    #[tokio::test]
    async fn progressive_writeback_keeps_every_byte() {
        use std::io::Write as _;
        let tmp = tempfile::tempdir().unwrap();
        let storage = LocalStorage::new(tmp.path()).unwrap().with_fsync(true);
        let key = crate::path::parse_request_path("/wb/big.bin").unwrap();
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
        assert_eq!(up.commit().await.unwrap(), Written::Created);
        assert_eq!(std::fs::read(tmp.path().join("wb/big.bin")).unwrap(), data);
    }

    #[tokio::test]
    async fn startup_sweep_removes_only_stale_temp_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fs::create_dir_all(root.join("a/b")).unwrap();
        let old_tmp = root.join(format!("a/b/{TEMP_PREFIX}00000000deadbeef"));
        let fresh_tmp = root.join(format!("a/{TEMP_PREFIX}00000000cafebabe"));
        let old_plain = root.join("a/old.txt");
        for p in [&old_tmp, &fresh_tmp, &old_plain] {
            fs::write(p, b"x").unwrap();
        }
        age(&old_tmp, Duration::from_secs(3600));
        age(&old_plain, Duration::from_secs(3600));
        // Just under the limit: kept.
        age(&fresh_tmp, STALE_TEMP_AGE - Duration::from_secs(60));
        // A directory named like a temp file is not a temp file.
        let tmp_dir = root.join(format!("{TEMP_PREFIX}dir"));
        fs::create_dir(&tmp_dir).unwrap();

        let storage = LocalStorage::new(root).unwrap();
        let sweep = storage.spawn_temp_sweep().await.unwrap();
        assert_eq!(sweep.removed, 1);
        assert!(!sweep.truncated);
        assert!(!old_tmp.exists());
        assert!(fresh_tmp.exists());
        assert!(old_plain.exists());
        assert!(tmp_dir.exists());
    }

    #[test]
    fn sweep_work_is_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..10 {
            let p = tmp.path().join(format!("{TEMP_PREFIX}{i:016x}"));
            fs::write(&p, b"x").unwrap();
            age(&p, Duration::from_secs(3600));
        }
        let sweep = sweep_stale_temp_files(tmp.path(), STALE_TEMP_AGE, 4);
        assert_eq!(sweep.visited, 4);
        assert!(sweep.truncated);
        assert_eq!(sweep.removed, 4);
        let sweep = sweep_stale_temp_files(tmp.path(), STALE_TEMP_AGE, 100);
        assert_eq!((sweep.removed, sweep.truncated), (6, false));
    }
}
