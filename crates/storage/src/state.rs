//! Small state objects that every node on one backend sees: the reserved
//! `.wirespeed-state/` folder of a shared bucket (never listed, served or
//! written through the file routes). The sign-outs and link revocations
//! of several nodes meet there (see `revocations.rs` at the crate top).

use std::future::Future;

use super::{LockRecords, StorageError};

/// The reserved folder's name (a `.wirespeed-` name: never served).
pub const STATE_DIR: &str = ".wirespeed-state";

/// Empty marker objects under [`STATE_DIR`], named by the caller: a name
/// carries all it says (one listing reads them all, no object is opened);
/// and records, objects replaced whole by conditional writes.
pub trait SharedState: Send + Sync + 'static {
    /// Create (or keep) the marker `folder/name`.
    fn put_marker(
        &self,
        folder: &str,
        name: &str,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// The names of the markers in `folder`.
    fn list_markers(
        &self,
        folder: &str,
    ) -> impl Future<Output = Result<Vec<String>, StorageError>> + Send;

    /// Remove the marker `folder/name` (gone already is fine).
    fn remove_marker(
        &self,
        folder: &str,
        name: &str,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// The record `name` (at most `max` bytes), unless its version is
    /// still `known`: one object every node reads and replaces whole.
    fn load_record(
        &self,
        name: &str,
        known: Option<String>,
        max: usize,
    ) -> impl Future<Output = Result<LockRecords, StorageError>> + Send;

    /// Replace the record `name` with `blob` if its version is still
    /// `version` (`None`: if there is none), else
    /// [`StorageError::PreconditionFailed`]; the new version.
    fn save_record(
        &self,
        name: &str,
        blob: Vec<u8>,
        version: Option<String>,
    ) -> impl Future<Output = Result<String, StorageError>> + Send;
}
