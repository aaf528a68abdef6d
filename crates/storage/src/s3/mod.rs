//! The S3-compatible backend (AWS S3, MinIO, Ceph RGW, Garage, R2): keys
//! are `PREFIX/segments…` in one bucket, folders are key prefixes (plus the
//! `dir/` marker objects other tools leave), and nothing that matters is
//! kept on the node, so several servers on one bucket see each other's
//! writes at once.
//!
//! Built on `object_store` (feature `aws`) rather than the AWS SDK: one
//! small client with the multipart, paginated-list and conditional-put calls
//! this needs, on reqwest + rustls (ring, as the server's TLS), with a
//! fraction of the SDK's build time.
//!
//! - [`S3Object`] (`object.rs`): `HEAD` at open, then one streamed ranged
//!   `GET` (pinned to the opened ETag) read sequentially; a jump elsewhere
//!   starts a new one.
//! - [`S3Upload`] (`upload.rs`): bodies up to one part are a single
//!   `PutObject` at commit; bigger ones a multipart upload with
//!   [`PART_SIZE`] parts, at most [`PARTS_IN_FLIGHT`] uploading, aborted on
//!   failure or drop.
//! - [`S3Listing`]: `ListObjectsV2` pages with delimiter `/`.
//! - [`S3Partial`] (`partial.rs`): resumable uploads, one multipart upload
//!   each, their records in `PREFIX/.wirespeed-uploads/`.
//! - `folders.rs`: `MKCOL` (a hidden `.wirespeed-folder` marker) and
//!   `MOVE` (server-side copy, then delete; bounded for folders).
//! - `lock_records.rs`: the WebDAV locks of every server on the bucket, one
//!   object written with conditional requests.
//! - `props.rs`: WebDAV dead properties as object metadata
//!   (`x-amz-meta-wirespeed-dav`; a folder's on its marker).
//!
//! Digests: a sha-256 known when the object is written is stored as the
//! object's metadata `x-amz-meta-sha256` and read back by the `HEAD` at
//! open (always the object's own, so never stale).

mod concat;
mod config;
mod copy;
mod folders;
mod listing;
mod lock_records;
mod object;
mod owners;
mod partial;
mod props;
mod staging;
mod state;
mod trash;
mod upload;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut, S3CopyIfNotExists};
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path as ObjPath;
use object_store::{ClientOptions, ObjectMeta, ObjectStoreExt, RetryConfig};

pub use config::S3Config;
pub use folders::MAX_FOLDER_MOVE;
pub use listing::S3Listing;
pub use object::S3Object;
pub use partial::S3Partial;
pub use upload::S3Upload;

use crate::changes::{Change, ChangeKind, Changes, Version};
use crate::{Kind, Meta, Storage, StorageError, Written};
use wirespeed_path::RelPath;

/// Bytes per multipart part: big enough that a part's request overhead is
/// small, small enough that an upload's memory stays bounded.
pub const PART_SIZE: usize = 8 << 20;
/// Parts of one upload sent at once (memory per upload: one filling part
/// plus these).
pub const PARTS_IN_FLIGHT: usize = 4;
/// Entries asked per listing page (S3's maximum).
pub(crate) const LIST_PAGE: usize = 1000;

/// Files in an S3 bucket below a prefix.
#[derive(Clone)]
pub struct S3Storage {
    pub(crate) store: Arc<AmazonS3>,
    /// `PREFIX/` or empty.
    prefix: String,
    /// What the errors name: `s3://bucket/prefix at endpoint`.
    pub(crate) place: Arc<str>,
    pub(crate) changes: Changes,
    /// Requests object_store cannot make (`copy.rs`).
    pub(crate) raw: Arc<copy::Raw>,
    /// The owners learnt (`owners.rs`), for users' quotas.
    owners: Arc<owners::Owners>,
    /// Asked before an upload is published (`staging.rs`).
    gate: Option<Arc<dyn crate::gate::PublishGate>>,
    /// Keeps what a publication replaces in the trash (`trash.rs`).
    keep: Option<Arc<dyn crate::gate::KeepReplaced>>,
}

impl std::fmt::Debug for S3Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.place)
    }
}

impl S3Storage {
    /// A client for `cfg` (no request is made: see [`check`](Self::check)).
    pub fn new(cfg: &S3Config) -> Result<S3Storage, StorageError> {
        // reqwest is built without a provider of its own (one crypto library
        // in the binary, not two): it takes the process default, ring, the
        // one the server's TLS uses. Installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut b = AmazonS3Builder::from_env().with_bucket_name(&cfg.bucket);
        if let Some((id, secret)) = &cfg.credentials {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
        }
        if let Some(region) = &cfg.region {
            b = b.with_region(region);
        }
        if let Some(endpoint) = &cfg.endpoint {
            b = b.with_endpoint(endpoint);
        }
        let path_style = cfg.path_style.unwrap_or(cfg.endpoint.is_some());
        let http = cfg
            .endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"));
        // No request timeout over a whole (long) download: a stalled read
        // times out instead, and a dead endpoint fails at connect.
        let client = ClientOptions::new()
            .with_timeout_disabled()
            .with_connect_timeout(Duration::from_secs(5))
            .with_read_timeout(Duration::from_secs(60))
            .with_allow_http(
                cfg.endpoint
                    .as_deref()
                    .is_some_and(|e| e.starts_with("http://")),
            );
        // A couple of retries ride out a blip; the default (ten, over three
        // minutes) would hold every request of a dead endpoint that long.
        let retry = RetryConfig {
            max_retries: 2,
            retry_timeout: Duration::from_secs(10),
            ..RetryConfig::default()
        };
        // Over TLS the body needs no sha-256 of its own in the signature
        // (~0.7 CPU-s per GiB); over plain HTTP it is signed, as boto3 does.
        let store = b
            .with_unsigned_payload(!http)
            .with_virtual_hosted_style_request(!path_style)
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            // `MOVE` with `Overwrite: F`: S3 completes the copy only if
            // nothing is at the destination.
            .with_copy_if_not_exists(S3CopyIfNotExists::Multipart)
            .with_client_options(client)
            .with_retry(retry)
            .build()
            .map_err(|e| StorageError::Backend(format!("S3 configuration: {e}")))?;
        let endpoint = cfg.endpoint.as_deref().unwrap_or("AWS");
        let place = if cfg.prefix.is_empty() {
            format!("s3://{} at {endpoint}", cfg.bucket)
        } else {
            format!("s3://{}/{} at {endpoint}", cfg.bucket, cfg.prefix)
        };
        Ok(S3Storage {
            store: Arc::new(store),
            prefix: if cfg.prefix.is_empty() {
                String::new()
            } else {
                format!("{}/", cfg.prefix)
            },
            place: place.into(),
            changes: Changes::default(),
            raw: Arc::new(copy::Raw::new(cfg)?),
            owners: Arc::default(),
            gate: None,
            keep: None,
        })
    }

    /// Emits a change once `result` says it landed. An object store answers
    /// no inode: versions carry sizes where the call knew them, and a moved
    /// or replaced object's former version is not fetched for the stream.
    fn emit_if_ok<T>(
        &self,
        result: &Result<T, StorageError>,
        kind: ChangeKind,
        key: &RelPath,
        before: Option<Version>,
        after: Option<Version>,
    ) {
        if result.is_ok() {
            self.changes
                .emit(Change::new(kind, key.clone(), before, after));
        }
    }

    /// The stream of changes made through this storage (every clone of it).
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    /// Where this storage points, for logs and errors.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// One listing of one key: fails with a message that says what is
    /// wrong (endpoint down, credentials refused, bucket missing).
    pub async fn check(&self) -> Result<(), StorageError> {
        let opts = PaginatedListOptions {
            delimiter: Some("/".into()),
            max_keys: Some(1),
            ..PaginatedListOptions::default()
        };
        let prefix = (!self.prefix.is_empty()).then_some(self.prefix.as_str());
        match self.store.list_paginated(prefix, opts).await {
            Ok(_) => Ok(()),
            Err(object_store::Error::NotFound { .. }) => Err(StorageError::Backend(format!(
                "{}: the bucket does not exist",
                self.place
            ))),
            Err(e) => Err(self.error(e)),
        }
    }

    fn path(&self, key: &RelPath) -> Result<ObjPath, StorageError> {
        let mut raw = self.prefix.clone();
        raw.push_str(&key.segments().join("/"));
        // RelPath names never hold '/', control characters, '.' or '..'.
        ObjPath::parse(&raw).map_err(|_| StorageError::Forbidden)
    }

    /// `PREFIX/key/`: what lists a folder's content.
    fn dir_prefix(&self, key: &RelPath) -> String {
        let mut raw = self.prefix.clone();
        for s in key.segments() {
            raw.push_str(s);
            raw.push('/');
        }
        raw
    }

    /// Whether anything lies below `key/`, and which markers (a `key/`
    /// object from another tool, our `.wirespeed-folder`) do.
    async fn dir_state(&self, key: &RelPath) -> Result<DirState, StorageError> {
        let prefix = self.dir_prefix(key);
        let opts = PaginatedListOptions {
            delimiter: Some("/".into()),
            max_keys: Some(3),
            ..PaginatedListOptions::default()
        };
        let page = self
            .store
            .list_paginated(Some(&prefix), opts)
            .await
            .map_err(|e| self.list_error(e))?;
        let marker = prefix.trim_end_matches('/');
        let (mut slash_marker, mut folder_marker) = (false, false);
        let mut content = !page.result.common_prefixes.is_empty();
        for o in &page.result.objects {
            if o.location.as_ref() == marker {
                slash_marker = true;
            } else if o.location.filename() == Some(folders::FOLDER_MARKER) {
                folder_marker = true;
            } else {
                content = true;
            }
        }
        Ok(match (content, slash_marker || folder_marker) {
            (true, _) => DirState::NotEmpty,
            (false, true) => DirState::Empty { slash_marker },
            (false, false) => DirState::Absent,
        })
    }

    /// A failure of a listing: a missing bucket is the operator's problem
    /// (502), not a missing folder.
    fn list_error(&self, e: object_store::Error) -> StorageError {
        match e {
            object_store::Error::NotFound { .. } => {
                StorageError::Backend(format!("{}: the bucket does not exist", self.place))
            }
            e => self.error(e),
        }
    }

    /// The object's metadata, `None` when there is no such object (a folder
    /// or nothing: callers that care ask [`S3Storage::dir_state`]).
    pub(crate) async fn head_opt(
        &self,
        path: &ObjPath,
    ) -> Result<Option<ObjectMeta>, StorageError> {
        match self.store.head(path).await {
            Ok(m) => Ok(Some(m)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(e)),
        }
    }

    /// The names (last segments) of the objects below `dir`, recursively:
    /// a flat folder of records or markers.
    pub(crate) async fn names_under(&self, dir: &ObjPath) -> Result<Vec<String>, StorageError> {
        use futures_util::TryStreamExt as _;
        use object_store::ObjectStore as _;
        self.store
            .list(Some(dir))
            .map_ok(|o| o.location.filename().unwrap_or_default().to_string())
            .try_collect()
            .await
            .map_err(|e| self.list_error(e))
    }

    /// Delete the object at `path`; one already gone is deleted too (a
    /// sweep or another node got there first).
    pub(crate) async fn delete_if_present(&self, path: &ObjPath) -> Result<(), StorageError> {
        match self.store.delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error(e)),
        }
    }

    /// An object_store failure as a storage error saying which part failed.
    pub(crate) fn error(&self, e: object_store::Error) -> StorageError {
        error_at(&self.place, e)
    }
}

enum DirState {
    Absent,
    /// Only markers: `slash_marker` says one is a `key/` object.
    Empty {
        slash_marker: bool,
    },
    NotEmpty,
}

/// See [`S3Storage::error`].
pub(crate) fn error_at(place: &str, e: object_store::Error) -> StorageError {
    use object_store::Error as E;
    let text = format!("{e:?} {e}");
    match e {
        E::NotFound { .. } => StorageError::NotFound,
        E::Precondition { .. } | E::AlreadyExists { .. } => StorageError::PreconditionFailed,
        _ if text.contains("InvalidAccessKeyId")
            || text.contains("SignatureDoesNotMatch")
            || matches!(e, E::Unauthenticated { .. }) =>
        {
            StorageError::Backend(format!(
                "{place}: S3 refused the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
            ))
        }
        E::PermissionDenied { .. } => StorageError::Backend(format!(
            "{place}: S3 denied access to the bucket (permissions)"
        )),
        _ if text.contains("NoSuchBucket") => {
            StorageError::Backend(format!("{place}: the bucket does not exist"))
        }
        _ if text.contains("ParentIsObject") || text.contains("XMinioObjectExistsAsDirectory") => {
            StorageError::Conflict("a file is in the way of this path")
        }
        // Without keys object_store asks the instance-metadata service
        // (IMDS) for credentials: its silence is no sign of the endpoint's.
        _ if text.contains("/latest/api/token") || text.contains("/latest/meta-data") => {
            StorageError::Backend(format!(
                "{place}: no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
                 (without them the instance-metadata service was asked for credentials, and it \
                 did not answer)"
            ))
        }
        _ if text.contains("error sending request")
            || text.contains("onnect")
            || text.contains("timed out")
            || text.contains("dns error") =>
        {
            tracing::warn!(error = %e, "S3 endpoint unreachable");
            StorageError::Unavailable(format!("{place}: the S3 endpoint cannot be reached"))
        }
        _ if text.contains("StorageFull") || text.contains("XMinioStorageFull") => {
            StorageError::Full
        }
        e => {
            tracing::error!(error = ?e, "S3 request failed");
            // S3's error code (e.g. `SlowDown`) tells the operator what failed.
            let code = text
                .split_once("<Code>")
                .and_then(|(_, rest)| rest.split_once("</Code>"))
                .map(|(code, _)| code)
                .filter(|c| c.len() < 64 && c.bytes().all(|b| b.is_ascii_alphanumeric()));
            match code {
                Some(code) => {
                    StorageError::Backend(format!("{place}: the S3 request failed ({code})"))
                }
                None => StorageError::Backend(format!("{place}: the S3 request failed")),
            }
        }
    }
}

/// A listed or `HEAD`ed object as a file's [`Meta`]. Last-Modified has
/// one-second resolution, so the sub-second part carries a hash of the S3
/// ETag: the route's ETag (size and modification time) then changes with
/// every version, and Last-Modified (whole seconds) is unchanged.
pub(crate) fn file_meta(m: &ObjectMeta) -> Meta {
    let secs = u64::try_from(m.last_modified.timestamp()).unwrap_or(0);
    let nanos = m.e_tag.as_deref().map_or(0, |t| {
        // FNV-1a: stable across processes and nodes (RandomState is not).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in t.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        (h % 1_000_000_000) as u32
    });
    Meta {
        kind: Kind::File,
        size: m.size,
        modified: Some(SystemTime::UNIX_EPOCH + Duration::new(secs, nanos)),
    }
}

pub(crate) const DIR_META: Meta = Meta {
    kind: Kind::Dir,
    size: 0,
    modified: None,
};

impl Storage for S3Storage {
    type Object = S3Object;
    type Upload = S3Upload;
    type Listing = S3Listing;

    async fn stat(&self, key: &RelPath) -> Result<Meta, StorageError> {
        if key.is_root() {
            return Ok(DIR_META);
        }
        let path = self.path(key)?;
        match self.head_opt(&path).await? {
            Some(m) => Ok(file_meta(&m)),
            None => match self.dir_state(key).await? {
                DirState::Absent => Err(StorageError::NotFound),
                _ => Ok(DIR_META),
            },
        }
    }

    async fn open(&self, key: &RelPath) -> Result<S3Object, StorageError> {
        if key.is_root() {
            return Err(StorageError::IsDir);
        }
        let path = self.path(key)?;
        match S3Object::open(self, path).await {
            Err(StorageError::NotFound) => match self.dir_state(key).await? {
                DirState::Absent => Err(StorageError::NotFound),
                _ => Err(StorageError::IsDir),
            },
            other => other,
        }
    }

    async fn create(&self, key: &RelPath) -> Result<S3Upload, StorageError> {
        if key.is_root() {
            return Err(StorageError::IsDir);
        }
        let path = self.path(key)?;
        if !matches!(self.dir_state(key).await?, DirState::Absent) {
            return Err(StorageError::Conflict("a directory exists at this path"));
        }
        let mut up = S3Upload::of_file(self.clone(), path, key);
        if self.gate.is_some() {
            up.stage_at(self.staging_path()?);
        }
        Ok(up)
    }

    async fn list(&self, key: &RelPath) -> Result<S3Listing, StorageError> {
        Ok(S3Listing {
            storage: self.clone(),
            prefix: self.dir_prefix(key),
            root: key.is_root(),
            token: None,
            first: true,
            done: false,
        })
    }

    async fn delete(&self, key: &RelPath) -> Result<(), StorageError> {
        if key.is_root() {
            return Err(StorageError::Forbidden);
        }
        let path = self.path(key)?;
        if self.head_opt(&path).await?.is_none() {
            return match self.dir_state(key).await? {
                DirState::Absent => Err(StorageError::NotFound),
                DirState::NotEmpty => Err(StorageError::NotEmpty),
                // A `dir/` marker made by another tool: object_store
                // paths never end in '/', so it cannot be named to
                // DeleteObject.
                DirState::Empty { slash_marker: true } => Err(StorageError::Conflict(
                    "this folder is an S3 folder marker; remove it with an S3 tool",
                )),
                DirState::Empty {
                    slash_marker: false,
                } => {
                    let gone = self
                        .store
                        .delete(&self.folder_marker(key)?)
                        .await
                        .map_err(|e| self.error(e));
                    let before = Some(Version::folder());
                    self.emit_if_ok(&gone, ChangeKind::Deleted, key, before, None);
                    gone
                }
            };
        }
        let gone = self.store.delete(&path).await.map_err(|e| self.error(e));
        let before = Version {
            folder: false,
            size: 0,
            id: None,
        };
        self.emit_if_ok(&gone, ChangeKind::Deleted, key, Some(before), None);
        gone
    }

    async fn mkdir(&self, key: &RelPath) -> Result<(), StorageError> {
        let made = self.make_folder(key).await;
        self.emit_if_ok(
            &made,
            ChangeKind::Created,
            key,
            None,
            Some(Version::folder()),
        );
        made
    }

    async fn rename(
        &self,
        from: &RelPath,
        to: &RelPath,
        overwrite: bool,
    ) -> Result<Written, StorageError> {
        let moved = self.move_key(from, to, overwrite).await;
        let kind = ChangeKind::Moved { from: from.clone() };
        self.emit_if_ok(&moved, kind, to, None, None);
        moved
    }

    fn changes(&self) -> Option<&Changes> {
        Some(&self.changes)
    }

    async fn trash(&self, key: &RelPath, id: &str, record: &[u8]) -> Result<(), StorageError> {
        self.keep_in_trash(key, id, record, false).await
    }

    async fn trash_replaced(
        &self,
        key: &RelPath,
        id: &str,
        record: &[u8],
    ) -> Result<(), StorageError> {
        self.keep_in_trash(key, id, record, true).await
    }

    async fn trash_records(&self, max: usize) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.read_trash_records(max).await
    }

    fn keep_replaced_in_trash(&mut self, keep: Arc<dyn crate::gate::KeepReplaced>) -> bool {
        self.keep = Some(keep);
        true
    }

    fn keeps_replaced(&self) -> bool {
        self.keep.is_some()
    }

    async fn owner(&self, key: &RelPath) -> Option<String> {
        self.read_owner(key).await
    }

    async fn owner_listed(&self, key: &RelPath, meta: &Meta) -> Option<String> {
        self.listed_owner(key, meta).await
    }

    async fn untrash(&self, id: &str, to: &RelPath) -> Result<(), StorageError> {
        self.restore_from_trash(id, to).await
    }

    async fn purge_trash(&self, id: &str) -> Result<(), StorageError> {
        self.purge_from_trash(id).await
    }

    async fn dead_props(&self, key: &RelPath) -> Result<Option<Vec<u8>>, StorageError> {
        self.read_props(key).await
    }

    async fn set_dead_props(&self, key: &RelPath, blob: Option<&[u8]>) -> Result<(), StorageError> {
        self.write_props(key, blob).await
    }

    fn shares_locks(&self) -> bool {
        true
    }

    async fn load_locks(&self, known: Option<String>) -> Result<crate::LockRecords, StorageError> {
        self.read_lock_records(known).await
    }

    async fn save_locks(
        &self,
        blob: Vec<u8>,
        version: Option<String>,
    ) -> Result<String, StorageError> {
        self.write_lock_records(blob, version).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(text: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: text.to_string().into(),
        }
    }

    #[test]
    fn missing_credentials_are_not_an_unreachable_endpoint() {
        let imds = generic(
            "Error performing PUT http://169.254.169.254/latest/api/token in 248ms, after 2 \
             retries - HTTP error: error sending request",
        );
        let said = error_at("s3://b", imds).to_string();
        assert!(said.contains("no S3 credentials"), "{said}");
        assert!(said.contains("AWS_ACCESS_KEY_ID"), "{said}");
        let down = generic("Error performing GET http://127.0.0.1:9000/b - error sending request");
        let said = error_at("s3://b", down).to_string();
        assert!(said.contains("cannot be reached"), "{said}");
    }
}
