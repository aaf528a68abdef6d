//! Folders and moves on S3, where neither exists natively.
//!
//! - A folder made by `MKCOL` is a hidden, empty marker object
//!   `dir/.wirespeed-folder` (object_store cannot name the `dir/` key other
//!   tools use): it keeps the folder listed while empty, never shows in a
//!   listing, and goes with a `DELETE` of the otherwise empty folder.
//! - A file move is a server-side `CopyObject` then `DeleteObject`: not
//!   atomic (between the two both names exist; a failure of the delete
//!   leaves both), and limited to CopyObject's 5 GiB. `Overwrite: F` uses
//!   a copy that S3 itself refuses over an existing key.
//! - A folder move copies every object below it, then deletes the
//!   originals: at most [`MAX_FOLDER_MOVE`] objects (one listing page), so
//!   its time and a crash's leftovers (a second copy, nothing lost) stay
//!   bounded; bigger folders get a 501 before anything is copied.

use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::{DirState, S3Storage};
use crate::{Kind, Storage, StorageError, Written};
use wirespeed_path::RelPath;

/// Name of the marker object of a folder made through this server.
pub(super) const FOLDER_MARKER: &str = ".wirespeed-folder";

/// Most objects one folder move copies.
pub const MAX_FOLDER_MOVE: usize = 1000;

/// Largest object one `CopyObject` can copy.
const MAX_COPY: u64 = 5 << 30;

/// Copies (and deletes) in flight during a folder move.
const MOVES_IN_FLIGHT: usize = 8;

fn parent_of(key: &RelPath) -> Result<RelPath, StorageError> {
    let mut p = RelPath::root();
    for s in key.parent() {
        p = p.join(s).map_err(|_| StorageError::Forbidden)?;
    }
    Ok(p)
}

impl S3Storage {
    /// The folder `key` is in must exist (else a conflict, as WebDAV wants).
    async fn parent_exists(&self, key: &RelPath) -> Result<(), StorageError> {
        let parent = parent_of(key)?;
        match self.stat(&parent).await {
            Ok(m) if m.kind == Kind::Dir => Ok(()),
            Ok(_) => Err(StorageError::Conflict("a file is in the way of this path")),
            Err(StorageError::NotFound) => {
                Err(StorageError::Conflict("the parent folder does not exist"))
            }
            Err(e) => Err(e),
        }
    }

    pub(super) fn folder_marker(&self, key: &RelPath) -> Result<ObjPath, StorageError> {
        ObjPath::parse(format!("{}{FOLDER_MARKER}", self.dir_prefix(key)))
            .map_err(|_| StorageError::Forbidden)
    }

    pub(super) async fn make_folder(&self, key: &RelPath) -> Result<(), StorageError> {
        if key.is_root() {
            return Err(StorageError::Exists);
        }
        self.parent_exists(key).await?;
        if self.stat(key).await.is_ok() {
            return Err(StorageError::Exists);
        }
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .store
            .put_opts(&self.folder_marker(key)?, PutPayload::default(), opts)
            .await
        {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Err(StorageError::Exists),
            Err(e) => Err(self.error(e)),
        }
    }

    pub(super) async fn move_key(
        &self,
        from: &RelPath,
        to: &RelPath,
        overwrite: bool,
    ) -> Result<Written, StorageError> {
        if from.is_root() || to.is_root() {
            return Err(StorageError::Forbidden);
        }
        let src = self.path(from)?;
        let dst = self.path(to)?;
        let source = self.head_opt(&src).await?;
        if source.is_none() && matches!(self.dir_state(from).await?, DirState::Absent) {
            return Err(StorageError::NotFound);
        }
        self.parent_exists(to).await?;
        // The destination is looked at once: what it is, and for a folder
        // whether it holds anything (only an empty one may be replaced).
        let (existing, dst_not_empty) = match self.head_opt(&dst).await? {
            Some(_) => (Some(Kind::File), false),
            None => match self.dir_state(to).await? {
                DirState::Absent => (None, false),
                DirState::Empty { .. } => (Some(Kind::Dir), false),
                DirState::NotEmpty => (Some(Kind::Dir), true),
            },
        };
        let written = if existing.is_some() {
            Written::Replaced
        } else {
            Written::Created
        };
        match (source, existing) {
            (_, Some(_)) if !overwrite => Err(StorageError::Exists),
            (Some(_), Some(Kind::Dir)) | (None, Some(Kind::File)) => Err(StorageError::Conflict(
                "a folder cannot move into itself, nor replace or be replaced by a file",
            )),
            (Some(meta), _) => {
                if meta.size > MAX_COPY {
                    return Err(StorageError::Unsupported(
                        "moving files over 5 GiB on S3 (a server-side copy stops there)",
                    ));
                }
                // CopyObject keeps the metadata; the multipart copy of
                // copy-if-not-exists does not, so it is put back after (a
                // server-side copy of the object onto itself).
                let kept = if overwrite {
                    None
                } else {
                    Some(self.metadata_of(&src).await?)
                };
                let copied = if overwrite {
                    self.store.copy(&src, &dst).await
                } else {
                    self.store.copy_if_not_exists(&src, &dst).await
                };
                match copied {
                    Ok(()) => {}
                    Err(object_store::Error::AlreadyExists { .. }) => {
                        return Err(StorageError::Exists)
                    }
                    Err(e) => return Err(self.error(e)),
                }
                if let Some(meta) = kept.filter(|m| !m.is_empty()) {
                    if let Err(e) = self.replace_metadata(&dst, &meta).await {
                        // The bytes moved; only their properties, digest or owner record are lost.
                        tracing::warn!(path = %dst, error = %e, "S3 move: metadata not kept");
                    }
                }
                self.store.delete(&src).await.map_err(|e| self.error(e))?;
                Ok(written)
            }
            (None, _) => {
                self.move_folder(from, to, dst_not_empty).await?;
                Ok(written)
            }
        }
    }

    /// See the module doc: bounded, copies first, originals deleted last.
    async fn move_folder(
        &self,
        from: &RelPath,
        to: &RelPath,
        dst_not_empty: bool,
    ) -> Result<(), StorageError> {
        if to.segments().starts_with(from.segments()) {
            return Err(StorageError::Conflict(
                "a folder cannot move into itself, nor replace or be replaced by a file",
            ));
        }
        if dst_not_empty {
            // Only an empty folder may be replaced, as rename(2) allows.
            return Err(StorageError::NotEmpty);
        }
        let src_prefix = self.dir_prefix(from);
        let dst_prefix = self.dir_prefix(to);
        let too_many =
            "moving folders of more than 1000 objects on S3 (move their content in parts)";
        let objects = self.folder_objects(&src_prefix, too_many).await?;
        if objects.iter().any(|o| o.size > MAX_COPY) {
            return Err(StorageError::Unsupported(
                "moving folders holding files over 5 GiB on S3 (a server-side copy stops there)",
            ));
        }
        let mut pairs = Vec::with_capacity(objects.len());
        for o in &objects {
            // A `dir/` marker another tool made cannot be named here: skipped.
            let Some(rest) = o.location.as_ref().strip_prefix(src_prefix.as_str()) else {
                continue;
            };
            let target = ObjPath::parse(format!("{dst_prefix}{rest}"))
                .map_err(|_| StorageError::Forbidden)?;
            pairs.push((o.location.clone(), target));
        }
        let store = &self.store;
        let copied = futures_util::stream::iter(pairs.clone())
            .map(|(a, b)| {
                let store = store.clone();
                async move { store.copy(&a, &b).await }
            })
            .buffer_unordered(MOVES_IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await;
        if let Err(e) = copied {
            // Nothing of the source was touched: take the copies back.
            futures_util::stream::iter(pairs)
                .map(|(_, b)| {
                    let store = store.clone();
                    async move { store.delete(&b).await }
                })
                .buffer_unordered(MOVES_IN_FLIGHT)
                .for_each(|_| async {})
                .await;
            return Err(self.error(e));
        }
        futures_util::stream::iter(pairs)
            .map(|(a, _)| {
                let store = store.clone();
                async move { store.delete(&a).await }
            })
            .buffer_unordered(MOVES_IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await
            .map_err(|e| self.error(e))?;
        Ok(())
    }
}

impl S3Storage {
    /// Every object below `prefix` (with its trailing `/`), at most
    /// [`MAX_FOLDER_MOVE`]: beyond that `too_many` refuses the operation
    /// before anything is copied (one bounded listing for moves and the
    /// trash alike).
    pub(super) async fn folder_objects(
        &self,
        prefix: &str,
        too_many: &'static str,
    ) -> Result<Vec<object_store::ObjectMeta>, StorageError> {
        let listed = ObjPath::parse(prefix).map_err(|_| StorageError::Forbidden)?;
        let objects: Vec<_> = self
            .store
            .list(Some(&listed))
            .take(MAX_FOLDER_MOVE + 1)
            .try_collect()
            .await
            .map_err(|e| self.list_error(e))?;
        if objects.len() > MAX_FOLDER_MOVE {
            return Err(StorageError::Unsupported(too_many));
        }
        Ok(objects)
    }
}
