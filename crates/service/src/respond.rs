//! Response pieces shared by the file routes (`files`) and the encoded
//! upload routes (`encoded`), so neither route module imports the other for
//! them.

use std::time::UNIX_EPOCH;

use wirespeed_net::{Error, Exchange, Response};

use crate::digest::format_sha256;
use crate::path::RelPath;
use crate::storage::{Kind, Meta, Storage, StorageError, Written};
use crate::ServiceConfig;

/// A strong ETag from size and modification time (nanoseconds): any
/// completed upload renames a new inode in, with a new mtime.
pub fn etag(meta: &Meta) -> String {
    let nanos = meta
        .modified
        .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("\"{:x}-{:x}\"", meta.size, nanos)
}

/// The answer to a stored single-file upload (PUT, and the single-file
/// POSTs): 201 (with Location) or 204, `Repr-Digest` of the stored bytes
/// when they were hashed, and the ETag.
pub(crate) async fn respond_stored<S: Storage>(
    storage: &S,
    ex: &mut Exchange,
    key: &RelPath,
    written: Written,
    sum: Option<&[u8; 32]>,
) -> Result<(), Error> {
    let mut resp = Response::new(match written {
        Written::Created => 201,
        Written::Replaced => 204,
    });
    if let Some(sum) = sum {
        resp = resp.header("Repr-Digest", format_sha256(sum));
    }
    if written == Written::Created {
        resp = resp.header("Location", key.to_url(false));
    }
    if let Ok(meta) = storage.stat(key).await {
        if meta.kind == Kind::File {
            resp = resp.header("ETag", etag(&meta));
        }
    }
    ex.send(resp, b"").await
}

/// Refuse an upload whose announced length exceeds the storage's free
/// space (507, before a byte of the body is read), and apply `--max-body`.
pub(crate) async fn check_room<S: Storage>(
    storage: &S,
    cfg: &ServiceConfig,
    ex: &mut Exchange,
) -> Result<(), Error> {
    if let Some(max) = cfg.max_body {
        ex.limit_body(max)?;
    }
    if let Some(needed) = ex.content_length() {
        if let Some(available) = storage.available().await {
            if needed > available {
                return Err(StorageError::NoRoom { needed, available }.into());
            }
        }
    }
    Ok(())
}
