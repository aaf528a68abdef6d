//! A whole file upload: in parallel parts (`parts.rs`) when it is large and
//! the server can join them, else resumable (`resume.rs`) when it is big
//! and the server can, else a plain PUT retried from byte 0 (`put.rs`). The
//! one place that chooses, so neither protocol module calls back into the
//! other.

use std::path::Path;

use wirespeed_resumable::client::ClientProtocol;

use crate::transfer::put::{put_retrying, upload_url, ProtocolChoice, UploadOptions, UploadReport};
use crate::transfer::{parts, resume};
use crate::{Client, Error, Url};

/// Upload a file: resumably when it is big and the server can (see
/// [`ProtocolChoice`]), else with a PUT retried from byte 0. A file is
/// checked end to end unless `verify` is off.
pub async fn upload_file(
    client: &Client,
    url: &Url,
    path: &Path,
    opts: &UploadOptions,
) -> Result<UploadReport, Error> {
    let url = upload_url(url, path)?;
    let len = std::fs::metadata(path)
        .map_err(|source| Error::File {
            path: path.to_path_buf(),
            source,
        })?
        .len();
    let resumable = match opts.protocol {
        ProtocolChoice::Force(p) => p != ClientProtocol::Put,
        ProtocolChoice::Auto => len >= opts.resumable_from || opts.continue_saved,
    };
    // -n needs the server's atomic create-only check, which only a PUT has.
    if resumable && !opts.no_clobber {
        if let Some(rep) = parts::upload(client, &url, path, len, opts).await? {
            return Ok(rep);
        }
        return resume::upload(client, &url, path, len, opts).await;
    }
    put_retrying(client, &url, path, opts).await
}
