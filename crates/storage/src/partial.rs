//! Partial uploads: the store behind the resumable routes (tus 1.0 and the
//! IETF draft), kept apart from [`Storage`](super::Storage) so a backend
//! offers resumable uploads only if it implements this trait too.
//!
//! An upload is a data object that only grows (bytes arrive in order) and
//! a small record (`UploadState`, from `wirespeed-resumable`). After a
//! restart the data's length is the offset (reconciled with the record), so
//! an upload resumes from what reached storage.

use std::fs::File;
use std::future::Future;

use wirespeed_resumable::{UploadId, UploadState};

use super::{CommitCheck, StorageError, Written};
use wirespeed_path::RelPath;

/// Name of the folder below the root that holds partial uploads (reserved:
/// never served, listed or addressable through the file routes).
pub const UPLOADS_DIR: &str = ".wirespeed-uploads";

/// A store of partial uploads.
pub trait PartialUploads: Send + Sync + 'static {
    type Data: PartialData;

    /// Create an empty upload `id` with its first record.
    fn create_partial(
        &self,
        id: &UploadId,
        state: &UploadState,
    ) -> impl Future<Output = Result<Self::Data, StorageError>> + Send;
    /// The record of `id`, reconciled with the data that reached storage
    /// ([`StorageError::NotFound`] for an unknown or unusable upload).
    fn load_partial(
        &self,
        id: &UploadId,
    ) -> impl Future<Output = Result<UploadState, StorageError>> + Send;
    /// The data of `id`, positioned at its end, for appending.
    fn open_partial(
        &self,
        id: &UploadId,
    ) -> impl Future<Output = Result<Self::Data, StorageError>> + Send;
    /// Make `state` the durable record (its length or metadata changed).
    fn save_partial(
        &self,
        id: &UploadId,
        state: &UploadState,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;
    /// Publish the data under `key` atomically (missing parent folders are
    /// created), and forget the upload. `check`
    /// (as for [`Upload::check_before_commit`](super::Upload::check_before_commit))
    /// runs against what is at `key` right before.
    fn complete_partial(
        &self,
        id: &UploadId,
        data: Self::Data,
        key: &RelPath,
        check: Option<CommitCheck>,
    ) -> impl Future<Output = Result<Written, StorageError>> + Send;
    /// Whether [`concat_partials`](Self::concat_partials) works here (the
    /// tus concatenation extension is offered only then).
    fn concatenates(&self) -> bool {
        false
    }
    /// Publish the bytes of the complete uploads `parts`, one after the
    /// other, under `key` atomically (as [`complete_partial`](Self::complete_partial)
    /// does for one, `mtime` given to the file first), then forget them.
    /// The bytes are not copied where the store can avoid it. On failure
    /// the parts stay as they were, so a final upload can be tried again.
    fn concat_partials(
        &self,
        parts: &[UploadId],
        key: &RelPath,
        check: Option<CommitCheck>,
        mtime: Option<std::time::SystemTime>,
    ) -> impl Future<Output = Result<Written, StorageError>> + Send {
        let _ = (parts, key, check, mtime);
        async {
            Err(StorageError::Unsupported(
                "assembling uploads (tus concatenation)",
            ))
        }
    }
    /// Remove the upload (data and record); an unknown id is not an error.
    fn delete_partial(
        &self,
        id: &UploadId,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;
    /// Every upload the store holds, with its record when it is readable
    /// (`None`: a record that cannot be used, or data without a record).
    fn list_partials(
        &self,
    ) -> impl Future<Output = Result<Vec<(UploadId, Option<UploadState>)>, StorageError>> + Send;
    /// How many uploads the store holds (a creation's limit check), without
    /// reading every record where the store can.
    fn count_partials(&self) -> impl Future<Output = Result<usize, StorageError>> + Send {
        async { Ok(self.list_partials().await?.len()) }
    }
    /// Whether other servers may change the records too (a shared bucket):
    /// the routes then read a record again rather than trust what they hold.
    fn shared(&self) -> bool {
        false
    }
}

/// The data of one partial upload, open for appending.
pub trait PartialData: Send {
    /// The local file, positioned at the end, for zero-copy appends; writes
    /// through it are seen by [`size`](Self::size).
    fn as_file(&self) -> Option<&File> {
        None
    }
    /// Append bytes.
    fn write(&mut self, data: &[u8]) -> impl Future<Output = Result<(), StorageError>> + Send;
    /// Bytes the data holds now (after any append, complete or cut short).
    fn size(&mut self) -> impl Future<Output = Result<u64, StorageError>> + Send;
    /// Drop everything after the first `len` bytes (a refused append),
    /// durably when the store syncs appends.
    fn truncate(&mut self, len: u64) -> impl Future<Output = Result<(), StorageError>> + Send;
    /// Make the bytes durable before their offset is acknowledged (a no-op
    /// when the store does not sync).
    fn sync(&mut self) -> impl Future<Output = Result<(), StorageError>> + Send;
}
