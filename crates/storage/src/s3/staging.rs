//! The publish gate on S3 (`gate.rs`): with a gate, an upload is written
//! under a hidden staging key, `PREFIX/.wirespeed-staging/…` (a reserved
//! name: never listed or served), complete and durable there but not under
//! its name. The gate is asked with that key and a presigned `GET` URL;
//! a yes copies it server-side to its name (no byte passes through the
//! server again) and deletes the staging key, a no deletes it: nothing is
//! published. A crash in between leaves a staging object behind (in no
//! listing, and removable with an S3 tool), never a half-published file.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use object_store::path::Path as ObjPath;
use object_store::signer::Signer as _;

use super::S3Storage;
use crate::gate::{PublishGate, Staged, STAGED_URL_SECS};
use crate::StorageError;
use wirespeed_path::RelPath;

/// The staging folder's name under the prefix.
pub const STAGING_DIR: &str = ".wirespeed-staging";

impl S3Storage {
    /// Ask `gate` before each upload is published (see the module doc).
    pub fn with_publish_gate(mut self, gate: Arc<dyn PublishGate>) -> S3Storage {
        self.gate = Some(gate);
        self
    }

    /// A fresh staging key (time, process and a counter: unique across the
    /// nodes on a bucket).
    pub(super) fn staging_path(&self) -> Result<ObjPath, StorageError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("{nanos:x}-{:x}-{n:x}", std::process::id());
        ObjPath::parse(format!("{}{STAGING_DIR}/{name}", self.prefix))
            .map_err(|_| StorageError::Forbidden)
    }

    /// The complete upload at `staged` (`size` bytes) becomes `key` at
    /// `target` if the gate says yes; the staging object goes either way.
    pub(super) async fn publish_staged(
        &self,
        key: &RelPath,
        staged: &ObjPath,
        target: &ObjPath,
        size: u64,
    ) -> Result<(), StorageError> {
        let asked = self.ask_gate(key, staged, size).await;
        let published = match asked {
            Ok(()) => self.keep_and_copy(key, staged, target, size).await,
            Err(e) => Err(e),
        };
        if let Err(e) = self.delete_if_present(staged).await {
            tracing::warn!(path = %staged, error = %e, "a staged upload was not removed");
        }
        published
    }

    /// What the name holds now goes to the trash (when kept), then the
    /// staged object takes the name.
    async fn keep_and_copy(
        &self,
        key: &RelPath,
        staged: &ObjPath,
        target: &ObjPath,
        size: u64,
    ) -> Result<(), StorageError> {
        let current = self.head_opt(target).await?.map(|m| super::file_meta(&m));
        self.keep_before_publishing(key, current.as_ref()).await?;
        self.copy_object(staged, target, size).await
    }

    async fn ask_gate(
        &self,
        key: &RelPath,
        staged: &ObjPath,
        size: u64,
    ) -> Result<(), StorageError> {
        let Some(gate) = self.gate.clone() else {
            return Ok(());
        };
        let url = self
            .store
            .signed_url(
                http::Method::GET,
                staged,
                Duration::from_secs(STAGED_URL_SECS),
            )
            .await
            .map_err(|e| self.error(e))?;
        let staged = Staged {
            bucket: self.raw.bucket.clone(),
            key: staged.to_string(),
            url: url.to_string(),
        };
        let key = key.clone();
        // The gate may run a program: off the async workers.
        tokio::task::spawn_blocking(move || gate.check_staged(&key, &staged, size))
            .await
            .map_err(|e| StorageError::Io(std::io::Error::other(e)))?
            .map_err(StorageError::Refused)
    }
}
