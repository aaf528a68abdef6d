//! The WebDAV lock records of every server on the bucket (`crate::locks`
//! `shared`): one object, `PREFIX/.wirespeed-locks.json`, read with
//! `If-None-Match` on the version known (S3 answers 304 without a body
//! while it is unchanged) and written with `If-Match` on the version read,
//! or `If-None-Match: *` when there was none, so two servers' changes never
//! overwrite each other.

use object_store::path::Path as ObjPath;
use object_store::{GetOptions, ObjectStore, PutMode, PutOptions, PutPayload, UpdateVersion};

use super::S3Storage;
use crate::{LockRecords, StorageError};

/// The record's name below the prefix (reserved: never listed nor served).
const RECORD: &str = ".wirespeed-locks.json";
/// The most a record may hold (a table of some thousand locks).
const MAX_RECORD: usize = 16 << 20;

impl S3Storage {
    fn lock_record(&self) -> Result<ObjPath, StorageError> {
        ObjPath::parse(format!("{}{RECORD}", self.prefix)).map_err(|_| StorageError::Forbidden)
    }

    pub(super) async fn read_lock_records(
        &self,
        known: Option<String>,
    ) -> Result<LockRecords, StorageError> {
        self.read_shared_record(&self.lock_record()?, known, MAX_RECORD)
            .await
    }

    /// The object at `path` (at most `max` bytes), unless its version is
    /// still `known`: what every node of the bucket shares as one record.
    pub(super) async fn read_shared_record(
        &self,
        path: &ObjPath,
        known: Option<String>,
        max: usize,
    ) -> Result<LockRecords, StorageError> {
        let opts = GetOptions {
            if_none_match: known,
            ..GetOptions::default()
        };
        let got = match self.store.get_opts(path, opts).await {
            Ok(got) => got,
            Err(object_store::Error::NotModified { .. }) => return Ok(LockRecords::Unchanged),
            Err(object_store::Error::NotFound { .. }) => return Ok(LockRecords::Absent),
            Err(e) => return Err(self.error(e)),
        };
        if got.meta.size > max as u64 {
            return Err(StorageError::Backend(format!(
                "{}: the record {path} is larger than {max} bytes",
                self.place
            )));
        }
        let version = got.meta.e_tag.clone().unwrap_or_default();
        let blob = got.bytes().await.map_err(|e| self.error(e))?;
        Ok(LockRecords::Found {
            blob: blob.to_vec(),
            version,
        })
    }

    pub(super) async fn write_lock_records(
        &self,
        blob: Vec<u8>,
        version: Option<String>,
    ) -> Result<String, StorageError> {
        if blob.len() > MAX_RECORD {
            return Err(StorageError::TooLarge(
                "the lock records would exceed 16 MiB; release some locks",
            ));
        }
        self.write_shared_record(&self.lock_record()?, blob, version)
            .await
    }

    /// Replace the object at `path` with `blob` if its version is still
    /// `version` (`None`: if there is none), else
    /// [`StorageError::PreconditionFailed`]; the new version.
    pub(super) async fn write_shared_record(
        &self,
        path: &ObjPath,
        blob: Vec<u8>,
        version: Option<String>,
    ) -> Result<String, StorageError> {
        let mode = match version {
            Some(e_tag) => PutMode::Update(UpdateVersion {
                e_tag: Some(e_tag),
                version: None,
            }),
            None => PutMode::Create,
        };
        let opts = PutOptions {
            mode,
            ..PutOptions::default()
        };
        let put = self
            .store
            .put_opts(path, PutPayload::from(blob), opts)
            .await
            .map_err(|e| self.error(e))?;
        Ok(put.e_tag.unwrap_or_default())
    }
}
