//! Small state objects that every node on one backend sees: the reserved
//! `.wirespeed-state/` folder of a shared bucket (never listed, served or
//! written through the file routes). The sign-outs and link revocations
//! of several nodes meet there (see `revocations.rs` at the crate top).

use std::future::Future;

use super::StorageError;

/// The reserved folder's name (a `.wirespeed-` name: never served).
pub const STATE_DIR: &str = ".wirespeed-state";

/// Empty marker objects under [`STATE_DIR`], named by the caller: a name
/// carries all it says (one listing reads them all, no object is opened).
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
}
