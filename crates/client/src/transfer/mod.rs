//! Whole-file operations on top of [`Client`]: upload with end-to-end
//! sha-256 checking, resumable download into a temporary file, multipart
//! form upload, listing and delete. The CLI is a thin shell over these.
//!
//! One file per concern: `upload.rs` (PUT and form POST), `download.rs`
//! (GET into a file or a writer; `ranged.rs` and `ranges.rs`: a large file
//! by ranges over parallel connections), `parts.rs` (a large upload as tus
//! partial uploads over parallel connections, planned by `ranges.rs` too),
//! `remote.rs` (listing, walking, delete).
//! What they share lives here: progress, digests, redirect following.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::{Client, Error, Request, Response, Url};

mod download;
mod file_upload;
pub mod mtime;
mod pace;
mod parts;
mod parts_final;
mod put;
mod ranged;
pub use ranged::{download_file, record_received};
pub mod ranges;
mod remote;
mod resume;
pub mod retry;
pub mod saved;
pub mod search;
pub mod validators;

pub use download::{
    download_to, is_current, is_part_name, parse_content_range, part_path, DownloadOptions,
    DownloadReport, OUTPUT_CONTEXT, PART_PREFIX,
};
pub use file_upload::upload_file;
pub use put::{
    form_framing, upload_form, upload_stream, upload_url, Parallel, ProtocolChoice, UploadOptions,
    UploadReport,
};
pub use remote::{
    delete, list, list_following, parse_listing_time, refuse_name, reserved_name, safe_name, walk,
    Entry, RemoteEntry, Walk, WalkLimits, MAX_DEPTH, RESERVED_PREFIX,
};
pub use wirespeed_resumable::client::ClientProtocol;

/// Progress of one transfer (a progress bar implements it).
pub trait TransferProgress: Send + Sync {
    /// The transfer starts: `total` bytes if known, `already` of them present (resume).
    fn start(&self, total: Option<u64>, already: u64);
    /// `n` more bytes went by.
    fn advance(&self, n: u64);
    /// The last byte went out; the answer is awaited (a body of unknown
    /// length says so here; a known one when it reaches its total).
    fn finishing(&self) {}
}

/// `sha-256=:BASE64:` (RFC 9530).
pub fn format_sha256(sum: &[u8; 32]) -> String {
    format!("sha-256=:{}:", STANDARD.encode(sum))
}

/// The sha-256 member of a `Repr-Digest` value, if there is a well-formed one.
pub fn parse_sha256(value: &str) -> Option<[u8; 32]> {
    value.split(',').find_map(|member| {
        let (k, v) = member.trim().split_once('=')?;
        if k.trim() != "sha-256" {
            return None;
        }
        let item = v.split(';').next()?.trim();
        let b64 = item.strip_prefix(':')?.strip_suffix(':')?;
        STANDARD.decode(b64).ok()?.try_into().ok()
    })
}

pub fn hex(sum: &[u8; 32]) -> String {
    sum.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha-256 of a whole file (or its first `limit` bytes), on a blocking thread.
pub async fn hash_file(
    path: &Path,
    limit: Option<u64>,
    progress: Option<Arc<dyn TransferProgress>>,
) -> Result<Sha256, Error> {
    let p = path.to_path_buf();
    tokio::task::spawn_blocking(move || -> io::Result<Sha256> {
        let mut f = File::open(&p)?;
        let mut h = Sha256::new();
        let mut left = limit.unwrap_or(u64::MAX);
        let mut buf = vec![0u8; 1 << 20];
        while left > 0 {
            let want = (buf.len() as u64).min(left) as usize;
            let n = f.read(&mut buf[..want])?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            left -= n as u64;
            if let Some(p) = &progress {
                p.advance(n as u64);
            }
        }
        Ok(h)
    })
    .await
    .map_err(|e| Error::Io {
        context: "hashing",
        source: io::Error::other(e.to_string()),
    })?
    .map_err(|source| Error::File {
        path: path.to_path_buf(),
        source,
    })
}

/// Most redirects a GET follows.
pub const MAX_REDIRECTS: usize = 10;

/// Send a GET built by `build` for `url`, following up to
/// [`MAX_REDIRECTS`] redirects (301, 302, 303, 307, 308) on the same origin;
/// a redirect to another origin is an error (the token must not travel
/// there). Returns the final response (any status) and its URL.
pub async fn get_following(
    client: &Client,
    url: &Url,
    build: impl Fn(&Url) -> Request,
) -> Result<(Response, Url), Error> {
    let mut url = url.clone();
    for _ in 0..=MAX_REDIRECTS {
        let resp = client.send(build(&url)).await?;
        if !matches!(resp.status(), 301 | 302 | 303 | 307 | 308) {
            return Ok((resp, url));
        }
        let Some(location) = resp.header("Location").map(str::to_string) else {
            return Ok((resp, url));
        };
        let next = url.resolve(&location)?;
        if !next.same_origin(&url) {
            return Err(Error::Redirect(format!(
                "{url} redirects to another origin, {}; not followed (the token must not \
                 travel there): use that URL if you trust it",
                crate::terminal_safe(&location, 300)
            )));
        }
        let _ = resp.bytes(64 * 1024).await;
        // A share link's holder follows the server's redirect with the link.
        url = next.with_share_of(&url);
    }
    Err(Error::Redirect(format!(
        "more than {MAX_REDIRECTS} redirects starting at {url}"
    )))
}
