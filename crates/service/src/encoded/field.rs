//! `POST /path?element=NAME` (XML/SOAP) and `POST /path?field=NAME` (JSON):
//! the base64 text of one field, decoded and stored at `/path`.
//!
//! Seed 003 is the reason for the shape: the document streams through the
//! extractor, whose sink pipes the field's text through one streaming
//! base64 decoder (line breaks — literal CRLF, `&#13;`, `\r\n` — are on its
//! fast path), and the decoded bytes go to the upload, piece by piece. No
//! copy of the document or of the file is ever held.
//!
//! The file is committed only if the whole document was well-formed (the
//! extractor checks everything, including what follows the field), the
//! field was found, and its base64 was valid and complete; otherwise the
//! upload is aborted and the answer is 400 with the reason. DTDs are
//! refused by the extractor (no entity expansion), so a DOCTYPE is a 400.

use crate::answers::{storage_answer, IntoAnswer as _};
use crate::upload::{HashMode, StoredHasher};
use wirespeed_base64::Decoder;
use wirespeed_extract::{ExtractError, FieldExtractor};
use wirespeed_net::{Error, Exchange};

use super::{extract_error, Checks, RequestDigest};
use crate::path::RelPath;
use crate::respond::{respond_stored, WriteGuard};
use crate::storage::{Storage, Upload};

/// Store the decoded field of the request body at `key`.
pub(crate) async fn post<S: Storage, E: FieldExtractor + Send>(
    storage: &S,
    guard: &WriteGuard,
    ex: &mut Exchange,
    key: RelPath,
    extractor: E,
    checks: Checks,
) -> Result<(), Error> {
    super::require_file_path(&key)?;
    let Checks { hash, mut digest } = checks;
    let mut up = guard.create(storage, &key, None).await?;
    let sum = match receive(ex, &mut up, extractor, &mut digest, hash).await {
        Ok(sum) => match digest.verify() {
            Ok(()) => sum,
            Err(e) => {
                up.abort().await;
                return Err(e);
            }
        },
        Err(e) => {
            up.abort().await;
            return Err(e);
        }
    };
    let written = up
        .commit(sum)
        .await
        .map_err(|e| guard.explain(e.on_write(&key).into_answer()))?;
    respond_stored(storage, ex, &key, written, sum.as_ref()).await
}

/// Stream the body through extractor → decoder → upload; the sha-256 of
/// the decoded bytes when `hash`.
async fn receive<U: Upload, E: FieldExtractor>(
    ex: &mut Exchange,
    up: &mut U,
    mut extractor: E,
    digest: &mut RequestDigest,
    hash: Option<HashMode>,
) -> Result<Option<[u8; 32]>, Error> {
    let mut decoder = Decoder::new();
    // Decoded output of one body piece (≤ 3/4 of it); reused, so after the
    // first piece there is no allocation per read.
    let mut out: Vec<u8> = Vec::with_capacity(192 * 1024 + 64);
    let mut hasher = StoredHasher::new(hash);
    while let Some(piece) = ex.read_body().await? {
        digest.update(piece);
        extractor
            .feed(piece, &mut |text: &[u8]| {
                decoder.decode(text, &mut out).map_err(ExtractError::sink)
            })
            .map_err(extract_error)?;
        if !out.is_empty() {
            up.write(&out).await.map_err(storage_answer)?;
            hasher.wrote(&out, up);
            out.clear();
        }
    }
    extractor.finish().map_err(extract_error)?;
    decoder
        .finish()
        .map_err(|e| Error::status(400, format!("invalid base64 in the field: {e}")))?;
    hasher.finish(up.written()).await
}
