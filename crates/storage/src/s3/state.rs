//! [`SharedState`] in the bucket: empty objects under
//! `PREFIX/.wirespeed-state/FOLDER/`, beside the resumable uploads' records.

use object_store::path::Path as ObjPath;
use object_store::{ObjectStoreExt, PutPayload};

use super::S3Storage;
use crate::state::{SharedState, STATE_DIR};
use crate::{LockRecords, StorageError};

impl S3Storage {
    fn state_path(&self, folder: &str, name: &str) -> Result<ObjPath, StorageError> {
        ObjPath::parse(format!("{}{STATE_DIR}/{folder}/{name}", self.prefix))
            .map_err(|_| StorageError::Forbidden)
    }
}

impl SharedState for S3Storage {
    async fn put_marker(&self, folder: &str, name: &str) -> Result<(), StorageError> {
        self.store
            .put(&self.state_path(folder, name)?, PutPayload::default())
            .await
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    async fn list_markers(&self, folder: &str) -> Result<Vec<String>, StorageError> {
        self.names_under(&self.state_path(folder, "")?).await
    }

    async fn remove_marker(&self, folder: &str, name: &str) -> Result<(), StorageError> {
        self.delete_if_present(&self.state_path(folder, name)?)
            .await
    }

    async fn load_record(
        &self,
        name: &str,
        known: Option<String>,
        max: usize,
    ) -> Result<LockRecords, StorageError> {
        self.read_shared_record(&self.state_path("records", name)?, known, max)
            .await
    }

    async fn save_record(
        &self,
        name: &str,
        blob: Vec<u8>,
        version: Option<String>,
    ) -> Result<String, StorageError> {
        self.write_shared_record(&self.state_path("records", name)?, blob, version)
            .await
    }
}
