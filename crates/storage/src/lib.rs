//! Where files live. The routes talk to a [`Storage`]; [`LocalStorage`] (a
//! directory) is the embedded default, and `s3::S3Storage` (feature `s3`)
//! the S3-compatible one, without a difference in the routes:
//!
//! | operation            | local directory                    | S3-compatible                      |
//! |----------------------|------------------------------------|------------------------------------|
//! | [`Storage::open`] + [`Object::read_at`] | `openat2` + `pread` | `HEAD` + ranged `GET`          |
//! | [`Storage::create`] → [`Upload`] | temp file, `write`        | multipart upload, `UploadPart`     |
//! | [`Upload::commit`]   | `fsync` + `renameat` over the target | `CompleteMultipartUpload`        |
//! | [`Upload::abort`] / drop | unlink the temp file           | `AbortMultipartUpload`             |
//! | [`Storage::list`]    | `getdents`, a batch per blocking task | `ListObjectsV2` pages              |
//! | [`Storage::delete`]  | `unlinkat`                         | `DeleteObject`                     |
//! | [`Storage::mkdir`]   | `mkdirat`                          | hidden `dir/.wirespeed-folder` marker |
//! | [`Storage::rename`]  | `renameat2` (`RENAME_NOREPLACE` when asked) | `CopyObject` + `DeleteObject` (not atomic) |
//! | [`Object::stored_sha256`] | an extended attribute (or a hidden sidecar) bound to the file's identity | object metadata |
//!
//! Fast paths are optional capabilities, not separate code paths in the
//! routes: [`Object::as_file`] hands a `std::fs::File` to the engine's
//! sendfile(2), and [`Upload::as_file`] lets an upload splice(2) socket bytes
//! straight into the file. Backends without a local file return `None` and the
//! routes fall back to plain reads and writes.
//!
//! - [`local`]: the directory backend.
//! - [`resolve`]: path containment (`openat2(RESOLVE_BENEATH)`, or checks
//!   where the kernel lacks it).
//! - [`digest_store`]: where the local backend keeps computed digests.
//! - [`partial`]: the store of partial (resumable) uploads, its own trait
//!   so a backend offers them only if it can.
//! - [`sweep`]: removal of temporary files a crash left behind.
//! - `s3` (feature `s3`): the S3-compatible backend.

use std::fs::File;
use std::future::Future;
use std::io;
use std::time::SystemTime;

use wirespeed_path::RelPath;

pub mod changes;
pub mod digest_store;
pub mod gate;
pub mod local;
pub mod partial;
pub mod resolve;
#[cfg(feature = "s3")]
pub mod s3;
pub mod state;
pub mod sweep;

pub use local::{LocalListing, LocalObject, LocalPartial, LocalStorage, LocalUpload, LIST_BATCH};
pub use partial::{PartialData, PartialUploads, UPLOADS_DIR};
pub use sweep::{sweep_stale_temp_files, Sweep, STALE_TEMP_AGE, SWEEP_MAX_ENTRIES};

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

/// What [`Storage::load_locks`] (or [`state::SharedState::load_record`]) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockRecords {
    /// The version the caller knows is still the current one.
    Unchanged,
    /// No records are kept (no lock was ever taken, or the store keeps none).
    Absent,
    /// The records and their version (for a conditional write).
    Found { blob: Vec<u8>, version: String },
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
    /// Not permitted (the root itself, a special file).
    #[error("forbidden")]
    Forbidden,
    /// The path leads outside the served folder through a symlink.
    #[error(
        "forbidden: this path leads outside the served folder through a symlink \
         (serve --allow-symlink follows such links)"
    )]
    Outside,
    /// The filesystem refused the server (EACCES/EPERM) while reading.
    #[error("the server cannot read this (permission denied)")]
    Denied,
    /// The filesystem refused the server (EACCES/EPERM) while writing: a
    /// matter for the operator, unlike an auth refusal.
    #[error("the server cannot write here (permission denied)")]
    WriteDenied,
    #[error("directory not empty")]
    NotEmpty,
    /// Too much is in flight (e.g. big listings nobody reads): try later.
    #[error("the server is busy with other large listings; try again shortly")]
    Busy,
    /// The operation clashes with what exists (e.g. a parent is a file).
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("storage full")]
    Full,
    /// Refused before any byte was read: the announced size exceeds the
    /// free space.
    #[error(
        "not enough space: the upload is {} and the storage has {} free",
        wirespeed_units::human_size(*needed),
        wirespeed_units::human_size(*available)
    )]
    NoRoom { needed: u64, available: u64 },
    /// What was to be kept with a file exceeds what the backend can keep
    /// there (S3's 2 KB of object metadata for WebDAV properties).
    #[error("too large for this storage: {0}")]
    TooLarge(&'static str),
    /// ENAMETOOLONG: a name or the whole path is too long for the filesystem.
    #[error("name too long for the server's filesystem (names up to 255 bytes)")]
    NameTooLong,
    /// A commit's precondition did not hold (the target changed).
    #[error("precondition failed: the file changed (If-Match / If-None-Match)")]
    PreconditionFailed,
    /// Something already exists where a folder or a move should land
    /// (the routes answer 405 for MKCOL, 412 for MOVE with `Overwrite: F`).
    #[error("already exists")]
    Exists,
    /// The backend cannot do this operation at all.
    #[error("not supported by this storage: {0}")]
    Unsupported(&'static str),
    #[error("storage I/O error: {0}")]
    Io(io::Error),
    /// A remote store answered with a failure the server cannot fix (bad
    /// credentials, missing bucket, refused request): the message says which.
    #[error("{0}")]
    Backend(String),
    /// A remote store cannot be reached (connection refused, timeout).
    #[error("{0}")]
    Unavailable(String),
    /// The publish gate (`gate.rs`) refused the upload: its message.
    #[error("the upload was refused before publication: {0}")]
    Refused(String),
}

impl StorageError {
    pub fn status(&self) -> u16 {
        match self {
            StorageError::NotFound | StorageError::NotDir => 404,
            StorageError::IsDir | StorageError::NotEmpty | StorageError::Conflict(_) => 409,
            StorageError::Forbidden
            | StorageError::Outside
            | StorageError::Denied
            | StorageError::WriteDenied => 403,
            StorageError::Full | StorageError::NoRoom { .. } | StorageError::TooLarge(_) => 507,
            StorageError::Busy => 503,
            // A long name is a bad request, not a long URI (RFC 9110 §15.5.15).
            StorageError::NameTooLong => 400,
            StorageError::PreconditionFailed | StorageError::Exists => 412,
            StorageError::Unsupported(_) => 501,
            StorageError::Io(_) => 500,
            StorageError::Backend(_) => 502,
            StorageError::Unavailable(_) => 503,
            StorageError::Refused(_) => 422,
        }
    }
}

impl From<io::Error> for StorageError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::NotFound => return StorageError::NotFound,
            io::ErrorKind::PermissionDenied => return StorageError::Denied,
            io::ErrorKind::DirectoryNotEmpty => return StorageError::NotEmpty,
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => return StorageError::Full,
            io::ErrorKind::NotADirectory => return StorageError::NotDir,
            io::ErrorKind::IsADirectory => return StorageError::IsDir,
            _ => {}
        }
        match e.raw_os_error() {
            Some(libc::ENAMETOOLONG) => StorageError::NameTooLong,
            // ELOOP: a symlink where none may be; EXDEV: openat2 refused a
            // step out of the root.
            Some(libc::ELOOP) => StorageError::Forbidden,
            Some(libc::EXDEV) => StorageError::Outside,
            _ => StorageError::Io(e),
        }
    }
}

impl StorageError {
    /// This failure as the outcome of a write to `key`: a permission refusal
    /// becomes [`StorageError::WriteDenied`] and is logged with the path.
    pub fn on_write(self, key: &RelPath) -> StorageError {
        match self {
            StorageError::Denied | StorageError::WriteDenied => {
                tracing::warn!(path = %key, "the filesystem refused a write (permission denied)");
                StorageError::WriteDenied
            }
            other => other,
        }
    }
}

impl From<rustix::io::Errno> for StorageError {
    fn from(e: rustix::io::Errno) -> Self {
        io::Error::from(e).into()
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
    /// Open a file to answer a GET or HEAD: as [`open`](Self::open), but a
    /// backend may answer small files it keeps in memory
    /// ([`Object::in_memory`]), never changed since they were read.
    fn open_for_download(
        &self,
        key: &RelPath,
    ) -> impl Future<Output = Result<Self::Object, StorageError>> + Send {
        self.open(key)
    }
    /// Start writing a file; nothing is visible at `key` until
    /// [`Upload::commit`]. Missing parent directories are created.
    fn create(
        &self,
        key: &RelPath,
    ) -> impl Future<Output = Result<Self::Upload, StorageError>> + Send;
    /// List a directory in batches, sorted by name (byte order).
    fn list(
        &self,
        key: &RelPath,
    ) -> impl Future<Output = Result<Self::Listing, StorageError>> + Send;
    /// Remove a file, or an empty directory.
    fn delete(&self, key: &RelPath) -> impl Future<Output = Result<(), StorageError>> + Send;
    /// Create one directory; its parent must exist (else
    /// [`StorageError::Conflict`]), and nothing may be at `key` (else
    /// [`StorageError::Exists`]).
    fn mkdir(&self, _key: &RelPath) -> impl Future<Output = Result<(), StorageError>> + Send {
        async { Err(StorageError::Unsupported("creating folders")) }
    }
    /// Move a file or directory to `to`, whose parent must exist (else
    /// [`StorageError::Conflict`]). With `overwrite` false an existing `to`
    /// is left alone ([`StorageError::Exists`]); with it true a file there
    /// is replaced ([`Written::Replaced`]).
    fn rename(
        &self,
        _from: &RelPath,
        _to: &RelPath,
        _overwrite: bool,
    ) -> impl Future<Output = Result<Written, StorageError>> + Send {
        async { Err(StorageError::Unsupported("moving and renaming")) }
    }
    /// The stream of changes this backend emits ([`changes`]); `None`: it
    /// emits none.
    fn changes(&self) -> Option<&changes::Changes> {
        None
    }
    /// Bytes a new upload can still use, if the backend knows (a local
    /// filesystem's free space; object stores: `None`).
    fn available(&self) -> impl Future<Output = Option<u64>> + Send {
        async { None }
    }
    /// Where `key` really is when a symlink on the way leads elsewhere in
    /// the served tree (the last name followed only when `follow_last`:
    /// writes, deletes and moves act on a link itself, reads on its
    /// target); `None` when it is where it is named. Rights follow the
    /// bytes: the policy asks here before a path through a link is used.
    /// An error when it leads to a place no path names (a reserved name).
    fn real_path(
        &self,
        _key: &RelPath,
        _follow_last: bool,
    ) -> impl Future<Output = Result<Option<RelPath>, StorageError>> + Send {
        async { Ok(None) }
    }
    /// Whether `key` is a symbolic link (a COPY does not descend into a
    /// linked folder: a link to an ancestor would copy forever).
    fn is_symlink(&self, _key: &RelPath) -> impl Future<Output = bool> + Send {
        async { false }
    }
    /// Bytes in use on the storage, if the backend knows (WebDAV's
    /// `quota-used-bytes`).
    fn used(&self) -> impl Future<Output = Option<u64>> + Send {
        async { None }
    }
    /// Move `key` (a file, or a folder with everything in it) into the
    /// trash whole, as entry `id` (letters, digits, `-`), with `record`
    /// (the caller's) kept beside it; emitted as a delete.
    fn trash(
        &self,
        _key: &RelPath,
        _id: &str,
        _record: &[u8],
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        async { Err(StorageError::Unsupported("a trash")) }
    }
    /// Keep the file `key` in the trash as entry `id` without taking its
    /// name away (the caller is about to replace it, and a reader must
    /// find the old file or the new one, never nothing); not emitted.
    fn trash_replaced(
        &self,
        _key: &RelPath,
        _id: &str,
        _record: &[u8],
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        async { Err(StorageError::Unsupported("a trash")) }
    }
    /// From now on keep each plain file an upload replaces in the trash as
    /// `keep` names it, at the publication itself (so no front can skip
    /// it); `false` when this backend cannot (the caller then keeps it
    /// with [`trash_replaced`](Self::trash_replaced) before committing).
    fn keep_replaced_in_trash(&mut self, _keep: std::sync::Arc<dyn gate::KeepReplaced>) -> bool {
        false
    }
    /// Whether [`keep_replaced_in_trash`](Self::keep_replaced_in_trash)
    /// is on.
    fn keeps_replaced(&self) -> bool {
        false
    }
    /// The trash's entries as (id, record), at most `max`, in no order.
    fn trash_records(
        &self,
        _max: usize,
    ) -> impl Future<Output = Result<Vec<(String, Vec<u8>)>, StorageError>> + Send {
        async { Ok(Vec::new()) }
    }
    /// Move entry `id` back to `to` (missing folders on the way are made),
    /// never over an existing name ([`StorageError::Exists`]).
    fn untrash(
        &self,
        _id: &str,
        _to: &RelPath,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        async { Err(StorageError::Unsupported("a trash")) }
    }
    /// Remove entry `id` for good.
    fn purge_trash(&self, _id: &str) -> impl Future<Output = Result<(), StorageError>> + Send {
        async { Err(StorageError::Unsupported("a trash")) }
    }
    /// Who owns the file at `key`: the principal (as the change stream
    /// names it) whose request wrote it, where the backend records one.
    fn owner(&self, _key: &RelPath) -> impl Future<Output = Option<String>> + Send {
        async { None }
    }
    /// [`owner`](Self::owner) of a file a listing just gave as `meta`: a
    /// backend that must ask per file (S3: a `HEAD`) may answer from what
    /// it learnt of that very version.
    fn owner_listed(
        &self,
        key: &RelPath,
        _meta: &Meta,
    ) -> impl Future<Output = Option<String>> + Send {
        self.owner(key)
    }
    /// The WebDAV dead properties recorded with `key` (the `dav` module's
    /// serialized set), `None` when there are none.
    fn dead_props(
        &self,
        _key: &RelPath,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, StorageError>> + Send {
        async { Ok(None) }
    }
    /// Replace the dead properties of `key` with `blob` (`None`: remove
    /// them), all at once.
    fn set_dead_props(
        &self,
        _key: &RelPath,
        _blob: Option<&[u8]>,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        async { Err(StorageError::Unsupported("WebDAV properties")) }
    }
    /// Whether WebDAV lock records are kept in the store, for every server
    /// on it ([`load_locks`](Self::load_locks)); else each server keeps its
    /// locks in memory.
    fn shares_locks(&self) -> bool {
        false
    }
    /// The lock records (the `locks` module's serialized table), unless
    /// their version is still `known`.
    fn load_locks(
        &self,
        _known: Option<String>,
    ) -> impl Future<Output = Result<LockRecords, StorageError>> + Send {
        async { Ok(LockRecords::Absent) }
    }
    /// Replace the lock records with `blob` if their version is still
    /// `version` (`None`: if there are none), else
    /// [`StorageError::PreconditionFailed`]; returns the new version.
    fn save_locks(
        &self,
        _blob: Vec<u8>,
        _version: Option<String>,
    ) -> impl Future<Output = Result<String, StorageError>> + Send {
        async { Err(StorageError::Unsupported("shared lock records")) }
    }
    /// Set the modification time of a file or folder (WebDAV clients set
    /// it with PROPPATCH after a save).
    fn set_modified(
        &self,
        _key: &RelPath,
        _t: SystemTime,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        async { Err(StorageError::Unsupported("setting modification times")) }
    }
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
    /// All of this object's bytes, where the backend holds them in memory
    /// (sent with the head in one write).
    fn in_memory(&self) -> Option<&[u8]> {
        None
    }
    /// The sha-256 recorded for exactly these bytes, if one was recorded
    /// and the object has not changed since (never a stale one).
    fn stored_sha256(&self) -> Option<[u8; 32]> {
        None
    }
    /// Whether [`store_sha256`](Self::store_sha256) keeps the sum for the
    /// next request (a hash that is never recorded is redone each time).
    fn records_sha256(&self) -> bool {
        false
    }
    /// Record `sum`, computed over the bytes of this object as opened.
    /// Returns `false` (and records nothing) if the object changed since it
    /// was opened, so the sum may describe bytes that are gone.
    fn store_sha256(
        &mut self,
        _sum: &[u8; 32],
    ) -> impl Future<Output = Result<bool, StorageError>> + Send {
        async { Ok(false) }
    }
}

/// A test on what is at an upload's key when it commits (see
/// [`Upload::check_before_commit`]).
pub type CommitCheck = Box<dyn Fn(Option<&Meta>) -> bool + Send + Sync>;

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
    /// Check `check` against what is at the key (`None`: nothing) right
    /// before the commit makes the upload visible, and fail the commit with
    /// [`StorageError::PreconditionFailed`] if it says no. Backends that
    /// cannot check at commit ignore it (the route checks before the body).
    fn check_before_commit(&mut self, _check: CommitCheck) {}
    /// Account for `n` bytes written through [`as_file`](Self::as_file).
    fn wrote_directly(&mut self, _n: u64) {}
    /// The sha-256 the client announced for the whole body, known before
    /// the first byte: a backend that must attach metadata when the upload
    /// starts (S3 multipart) records it then. The route aborts the upload
    /// if the received bytes do not match, so it is never recorded wrongly.
    fn expect_sha256(&mut self, _sum: [u8; 32]) {}
    /// Give the file modification time `t` when it commits (`X-OC-Mtime`),
    /// before it becomes visible. `false`: this backend cannot, and the
    /// route does not claim it did.
    fn set_modified(&mut self, _t: SystemTime) -> bool {
        false
    }
    /// Bytes written so far.
    fn written(&self) -> u64;
    /// Make the bytes visible at the key, atomically; `sha256`, when the
    /// caller computed it, is recorded with the file.
    fn commit(
        self,
        sha256: Option<[u8; 32]>,
    ) -> impl Future<Output = Result<Written, StorageError>> + Send;
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
