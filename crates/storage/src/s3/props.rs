//! WebDAV dead properties on S3, as object metadata: the `dav` module's
//! serialized set, base64 (metadata values are ASCII header text), in
//! `x-amz-meta-wirespeed-dav`.
//!
//! - A file's set lives on its object. S3 cannot change an object's
//!   metadata in place, and object_store 0.14 has no `CopyObject` with
//!   `x-amz-metadata-directive: REPLACE`, so a set is written by rewriting
//!   the object: its bytes read back (reads pinned to the ETag) into a new
//!   upload with the new metadata (its sha-256 kept), published only if the
//!   object is still the version read. Files over [`MAX_REWRITE`] are
//!   refused (403 per property) rather than streamed through the server.
//! - A folder's set lives on its `.wirespeed-folder` marker (made if the
//!   folder had none: a folder that exists only as a prefix gains one).
//! - S3 keeps at most 2 KB of user metadata per object (keys and values):
//!   a bigger set is refused, [`StorageError::TooLarge`] (507 per property,
//!   RFC 4918's insufficient storage).
//! - The metadata goes where the object goes: `MOVE` (`CopyObject` keeps
//!   it; with `Overwrite: F` the copy is a multipart copy, which does not,
//!   so the destination is rewritten with it), `COPY` (the route copies the
//!   set), `DELETE`; a new upload over the
//!   name starts without properties, as a new file does on disk.

use base64::Engine as _;
use object_store::{
    Attribute, Attributes, GetOptions, ObjectStore, PutMode, PutOptions, PutPayload,
};

use super::object::{S3Object, DAV_KEY};
use super::{DirState, S3Storage, PART_SIZE};
use crate::{Object, StorageError, Upload};
use wirespeed_path::RelPath;

/// S3's limit on one object's user metadata, keys and values together.
const MAX_METADATA: usize = 2048;
/// What the object's other metadata may take (`sha256` and its 64 hex digits).
const OTHER_METADATA: usize = 6 + 64;
/// Largest file whose properties are set (each set rewrites it).
pub const MAX_REWRITE: u64 = 1 << 30;

/// The stored form of `blob`, or why it cannot be stored.
fn encode(blob: &[u8]) -> Result<String, StorageError> {
    let text = base64::engine::general_purpose::STANDARD.encode(blob);
    if DAV_KEY.len() + text.len() + OTHER_METADATA > MAX_METADATA {
        return Err(StorageError::TooLarge(
            "S3 keeps at most 2 KB of metadata per object, and these properties need more",
        ));
    }
    Ok(text)
}

fn decode(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
}

/// Where a key's properties live.
enum Holder {
    File(object_store::path::Path),
    Folder(object_store::path::Path),
}

impl S3Storage {
    async fn holder(&self, key: &RelPath) -> Result<Holder, StorageError> {
        if !key.is_root() {
            let path = self.path(key)?;
            if self.head_opt(&path).await?.is_some() {
                return Ok(Holder::File(path));
            }
            if matches!(self.dir_state(key).await?, DirState::Absent) {
                return Err(StorageError::NotFound);
            }
        }
        Ok(Holder::Folder(self.folder_marker(key)?))
    }

    pub(super) async fn read_props(&self, key: &RelPath) -> Result<Option<Vec<u8>>, StorageError> {
        let text = match self.holder(key).await? {
            Holder::File(path) => S3Object::open(self, path).await?.dav,
            Holder::Folder(marker) => {
                let opts = GetOptions {
                    head: true,
                    ..GetOptions::default()
                };
                match self.store.get_opts(&marker, opts).await {
                    Ok(got) => got
                        .attributes
                        .get(&Attribute::Metadata(DAV_KEY.into()))
                        .map(|v| v.as_ref().to_string()),
                    Err(object_store::Error::NotFound { .. }) => None,
                    Err(e) => return Err(self.error(e)),
                }
            }
        };
        Ok(text.as_deref().and_then(decode))
    }

    pub(super) async fn write_props(
        &self,
        key: &RelPath,
        blob: Option<&[u8]>,
    ) -> Result<(), StorageError> {
        let text = blob.map(encode).transpose()?;
        match self.holder(key).await? {
            Holder::Folder(marker) => {
                let mut attributes = Attributes::new();
                if let Some(text) = text {
                    attributes.insert(Attribute::Metadata(DAV_KEY.into()), text.into());
                }
                let opts = PutOptions {
                    mode: PutMode::Overwrite,
                    attributes,
                    ..PutOptions::default()
                };
                self.store
                    .put_opts(&marker, PutPayload::default(), opts)
                    .await
                    .map_err(|e| self.error(e))?;
                Ok(())
            }
            Holder::File(path) => self.rewrite(path, text, None).await,
        }
    }

    /// The object at `path` again, with `dav` as its properties and its
    /// sha-256 kept (or `sha256`, when it has none).
    pub(super) async fn rewrite(
        &self,
        path: object_store::path::Path,
        dav: Option<String>,
        sha256: Option<[u8; 32]>,
    ) -> Result<(), StorageError> {
        let mut obj = S3Object::open(self, path.clone()).await?;
        let sha256 = obj.stored_sha256().or(sha256);
        if obj.dav == dav && obj.stored_sha256() == sha256 {
            return Ok(());
        }
        let opened = *obj.meta();
        if opened.size > MAX_REWRITE {
            return Err(StorageError::Unsupported(
                "WebDAV properties on S3 files over 1 GiB (setting them rewrites the object)",
            ));
        }
        let mut up = super::S3Upload::new(self.clone(), path, PART_SIZE);
        up.dav = dav;
        up.owner = obj.owner.clone();
        if let Some(sum) = sha256 {
            up.expect_sha256(sum);
        }
        // Published only over the version read (else another write won).
        up.check_before_commit(Box::new(move |now| now == Some(&opened)));
        let mut buf = vec![0u8; 256 << 10];
        let mut offset = 0;
        loop {
            let n = obj.read_at(offset, &mut buf).await?;
            if n == 0 {
                break;
            }
            up.write(&buf[..n]).await?;
            offset += n as u64;
        }
        if offset != opened.size {
            up.abort().await;
            return Err(StorageError::Conflict(
                "the file changed or went away while it was read",
            ));
        }
        up.commit(None).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_round_trip_within_the_metadata_limit() {
        let blob = br#"[["urn:x","a","<b>\u00e9</b>"]]"#;
        let text = encode(blob).unwrap();
        assert!(text.is_ascii());
        assert_eq!(decode(&text).unwrap(), blob);
        assert!(matches!(
            encode(&[b'x'; 1500]),
            Err(StorageError::TooLarge(_))
        ));
        assert!(encode(&[b'x'; 1400]).is_ok());
        assert_eq!(decode("!!"), None);
    }
}
