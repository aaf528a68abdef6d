//! The last word before an upload is published: a gate the folder backend
//! asks with the finished temporary file, right before the rename that
//! makes it visible (a virus scanner, a naming rule: `serve
//! --hook-command` with `upload.before`). Every write front reaches the
//! storage through [`Upload::commit`](crate::Upload::commit) or a resumable
//! upload's publication, so asking there covers PUT, form and encoded
//! POSTs, WebDAV PUT and tus/IETF completion alike. A refusal publishes
//! nothing (the temporary file is removed) and is
//! [`StorageError::Refused`](crate::StorageError::Refused), 422, with the
//! gate's message. On S3 an upload is staged under a hidden key, the gate
//! is given that key and a presigned URL ([`Staged`]), and only a yes
//! copies it (server-side) to its name; a no deletes it.

use std::path::Path;

use wirespeed_path::RelPath;

/// Asked on a blocking thread (it may run a program); must bound its own
/// time.
pub trait PublishGate: Send + Sync + std::fmt::Debug + 'static {
    /// `Ok` publishes `file` (the complete bytes, not yet visible) as
    /// `key`; `Err(message)` refuses it with that message.
    fn check(&self, key: &RelPath, file: &Path, size: u64) -> Result<(), String>;
    /// On S3: `Ok` publishes the upload `staged` (complete, in the bucket
    /// under a hidden staging key, not yet under its name) as `key`. The
    /// default refuses: a gate that needs a local file cannot judge it.
    fn check_staged(&self, _key: &RelPath, _staged: &Staged, _size: u64) -> Result<(), String> {
        Err("the server's upload check reads local files only".into())
    }
}

/// What keeps the file an upload replaces (the trash): asked by the folder
/// backend right before the new file renames over an existing plain file,
/// after the gate and any precondition (`If-Match`) said yes. Every front
/// publishes through that one rename, so none can skip it.
pub trait KeepReplaced: Send + Sync + std::fmt::Debug + 'static {
    /// The trash entry for the file at `key` (`size` bytes) that `by`
    /// (the change stream's name of the principal, if any) is replacing:
    /// its id (letters, digits, `-`) and its record; `None` keeps nothing.
    fn entry(&self, key: &RelPath, size: u64, by: Option<&str>) -> Option<(String, Vec<u8>)>;
}

/// An upload staged in an object store for the gate: where it is, and a
/// presigned URL that reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staged {
    pub bucket: String,
    /// Its object key (below the served prefix's `.wirespeed-staging/`).
    pub key: String,
    /// A presigned `GET` of it, valid for [`STAGED_URL_SECS`].
    pub url: String,
}

/// How long a staged upload's presigned URL reads it.
pub const STAGED_URL_SECS: u64 = 900;
