//! Reading an object: its metadata from one `HEAD`, its bytes from one
//! streamed ranged `GET` per sequential run.

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::{Attribute, GetOptions, GetRange, ObjectStore};

use super::{error_at, file_meta, S3Storage};
use crate::{Meta, Object, StorageError};

/// What the first `GET` of a read asks for: a range request reads little
/// past its end, a download goes on with one more request for the rest.
const FIRST_WINDOW: u64 = 8 << 20;

/// The metadata key under which a sha-256 (lowercase hex) is stored
/// (`x-amz-meta-sha256`).
pub(super) const SHA256_KEY: &str = "sha256";
/// The metadata key under which a file's WebDAV dead properties are
/// stored (`x-amz-meta-wirespeed-dav`; their form is `props.rs`'s).
pub(super) const DAV_KEY: &str = "wirespeed-dav";
/// The metadata key naming a file's owner, the principal whose request
/// wrote it (`x-amz-meta-wirespeed-owner`, percent-encoded: metadata is
/// header text).
pub(super) const OWNER_KEY: &str = "wirespeed-owner";

/// An object opened by `HEAD`; reads are pinned to its ETag, so a reader
/// never mixes two versions.
pub struct S3Object {
    storage: S3Storage,
    path: ObjPath,
    meta: Meta,
    etag: Option<String>,
    sha256: Option<[u8; 32]>,
    /// The WebDAV dead properties kept with it (`props.rs`), as stored.
    pub(super) dav: Option<String>,
    /// Who wrote it (`OWNER_KEY`), decoded.
    pub(super) owner: Option<String>,
    reader: Option<Reader>,
}

/// A ranged `GET` consumed in order: the response body (socket buffers and
/// the client's) is the read-ahead, so a sequential read is one request for
/// its first [`FIRST_WINDOW`] bytes and one for the rest, however small the
/// caller's buffer; a short range reads at most the first window.
struct Reader {
    pos: u64,
    /// Where this request's range ends.
    end: u64,
    stream: BoxStream<'static, object_store::Result<Bytes>>,
    pending: Bytes,
}

impl S3Object {
    pub(super) async fn open(storage: &S3Storage, path: ObjPath) -> Result<S3Object, StorageError> {
        let opts = GetOptions {
            head: true,
            ..GetOptions::default()
        };
        let got = storage
            .store
            .get_opts(&path, opts)
            .await
            .map_err(|e| storage.error(e))?;
        let sha256 = got
            .attributes
            .get(&Attribute::Metadata(SHA256_KEY.into()))
            .and_then(|v| parse_hex32(v.as_ref()));
        let dav = got
            .attributes
            .get(&Attribute::Metadata(DAV_KEY.into()))
            .map(|v| v.as_ref().to_string());
        let owner = got
            .attributes
            .get(&Attribute::Metadata(OWNER_KEY.into()))
            .and_then(|v| {
                let raw = percent_encoding::percent_decode_str(v.as_ref());
                raw.decode_utf8().ok().map(|s| s.into_owned())
            });
        Ok(S3Object {
            dav,
            owner,
            storage: storage.clone(),
            meta: file_meta(&got.meta),
            etag: got.meta.e_tag.clone(),
            path,
            sha256,
            reader: None,
        })
    }

    async fn start(&mut self, offset: u64, end: u64) -> Result<(), StorageError> {
        let opts = GetOptions {
            if_match: self.etag.clone(),
            range: Some(GetRange::Bounded(offset..end)),
            ..GetOptions::default()
        };
        let got = self
            .storage
            .store
            .get_opts(&self.path, opts)
            .await
            .map_err(|e| self.read_error(e))?;
        self.reader = Some(Reader {
            pos: offset,
            end,
            stream: got.into_stream(),
            pending: Bytes::new(),
        });
        Ok(())
    }

    fn read_error(&self, e: object_store::Error) -> StorageError {
        match e {
            object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. } => {
                StorageError::Conflict("the file changed or went away while it was read")
            }
            e => error_at(&self.storage.place, e),
        }
    }
}

impl Object for S3Object {
    fn meta(&self) -> &Meta {
        &self.meta
    }

    async fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, StorageError> {
        if offset >= self.meta.size || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.meta.size - offset).unwrap_or(usize::MAX));
        let size = self.meta.size;
        if self.reader.as_ref().is_none_or(|r| r.pos != offset) {
            self.start(offset, size.min(offset + FIRST_WINDOW)).await?;
        }
        let mut got = 0;
        let mut retried = false;
        while got < want {
            let Some(r) = self.reader.as_mut() else {
                break;
            };
            if r.pending.is_empty() {
                match r.stream.next().await {
                    Some(Ok(chunk)) => {
                        r.pending = chunk;
                        continue;
                    }
                    // A cut connection mid-object: one fresh GET from here.
                    Some(Err(e)) if !retried => {
                        tracing::debug!(error = %e, "S3 read cut; resuming");
                        retried = true;
                        let (pos, end) = (r.pos, r.end);
                        self.start(pos, end).await?;
                        continue;
                    }
                    Some(Err(e)) => return Err(self.read_error(e)),
                    // The first window read through: the rest in one request.
                    None if r.pos == r.end && r.end < size => {
                        let pos = r.pos;
                        self.start(pos, size).await?;
                        continue;
                    }
                    None => break,
                }
            }
            let n = r.pending.len().min(want - got);
            buf[got..got + n].copy_from_slice(&r.pending.split_to(n));
            r.pos += n as u64;
            got += n;
        }
        Ok(got)
    }

    fn stored_sha256(&self) -> Option<[u8; 32]> {
        self.sha256
    }

    /// S3 cannot add metadata to an object without rewriting it, so nothing
    /// is recorded: the sum (of the opened version, every read being pinned
    /// to its ETag) is vouched for while that version is still the current
    /// one, and computed again on the next request that asks.
    async fn store_sha256(&mut self, _sum: &[u8; 32]) -> Result<bool, StorageError> {
        let current = self.storage.head_opt(&self.path).await?;
        Ok(current.is_some_and(|m| m.e_tag.is_some() && m.e_tag == self.etag))
    }
}

/// 64 hex digits as 32 bytes.
pub(super) fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    let s = s.trim().as_bytes();
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in s.chunks(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        out[i] = (hi * 16 + lo) as u8;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::parse_hex32;
    use crate::digest_store::hex as to_hex;

    #[test]
    fn hex_round_trip() {
        let sum: [u8; 32] = std::array::from_fn(|i| (i * 7) as u8);
        assert_eq!(parse_hex32(&to_hex(&sum)), Some(sum));
        assert_eq!(parse_hex32("zz"), None);
        assert_eq!(parse_hex32(&"g".repeat(64)), None);
    }
}
