//! `GET FILE?thumbnail`: a JPEG of at most 512 px on its longest side for a
//! JPEG, PNG, GIF or WebP picture, or a video's frame where `ffmpeg` is
//! installed; 415 for anything else.
//!
//! The front door admits the request exactly as the file's GET (same
//! action, same path, symlinks judged where they lead, hidden names,
//! share links), then hands it here. Thumbnails are made on a small pool
//! of threads ([`pool`]), kept on disk by the file's version ([`cache`]),
//! and revalidated by their own ETag (a replaced file has a new one).

mod cache;
pub mod make;
mod pool;
mod video;

use std::sync::Arc;

use wirespeed_net::{Error, Exchange, Response};

use crate::answers::storage_answer;
use crate::path::RelPath;
use crate::storage::{Object, Storage, StorageError};

pub use cache::DiskCache;

/// Waiting jobs past which a request is answered 503: a screenful of a
/// grid, a few times over.
const QUEUE_CAP: usize = 64;

/// MiB of remote pictures held in memory at once (see `Inner`).
const REMOTE_BUDGET_MIB: usize = 256;

/// The largest picture file read to make a thumbnail; bigger is 415.
const MAX_SOURCE: u64 = 64 << 20;

/// The thumbnails of one server: its threads and its disk cache (shared by
/// clones, as the config is cloned per front).
#[derive(Clone)]
pub struct Thumbnails {
    inner: Arc<Inner>,
}

struct Inner {
    pool: pool::Pool,
    cache: Option<DiskCache>,
    /// MiB of pictures read from a backend without local files (S3) and
    /// held in memory until their thumbnail is made: a request past it
    /// waits, so a grid of large pictures cannot fill memory.
    remote_budget: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for Thumbnails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Thumbnails")
            .field("threads", &self.inner.pool.threads())
            .field("cache", &self.inner.cache)
            .finish()
    }
}

impl Default for Thumbnails {
    /// Made each time they are asked for (no disk cache).
    fn default() -> Self {
        Thumbnails::new(None)
    }
}

impl Thumbnails {
    /// Thumbnails made on this machine's pool, kept in `cache` if given.
    pub fn new(cache: Option<DiskCache>) -> Self {
        Thumbnails {
            inner: Arc::new(Inner {
                pool: pool::Pool::sized_for_machine(QUEUE_CAP),
                cache,
                remote_budget: Arc::new(tokio::sync::Semaphore::new(REMOTE_BUDGET_MIB)),
            }),
        }
    }
}

/// Whether the query asks for a thumbnail (`?thumbnail`, with or without a
/// value, among other parameters such as `share`).
pub fn wanted(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .any(|p| p == "thumbnail" || p.starts_with("thumbnail="))
    })
}

/// What a thumbnail is made from.
enum Source {
    Bytes(Vec<u8>),
    /// Read from a remote backend, holding its share of the budget.
    Remote {
        bytes: Vec<u8>,
        _held: tokio::sync::OwnedSemaphorePermit,
    },
    File(std::fs::File),
    Video(std::fs::File),
}

/// Answers `GET`/`HEAD KEY?thumbnail` for an admitted principal.
pub(crate) async fn send<S: Storage>(
    storage: &S,
    thumbnails: &Thumbnails,
    ex: &mut Exchange,
    key: &RelPath,
) -> Result<(), Error> {
    let obj = match storage.open_for_download(key).await {
        Ok(obj) => obj,
        Err(StorageError::IsDir) => return Err(unsupported("a folder has no thumbnail")),
        Err(e) => return Err(storage_answer(e)),
    };
    let meta = *obj.meta();
    let file_tag = crate::conditional::ETagText::of(&meta);
    // The inode too: a file replaced within the clock's resolution by one of
    // the same size still differs there.
    let inode = obj.as_file().and_then(|f| f.metadata().ok()).map(|m| {
        use std::os::unix::fs::MetadataExt as _;
        format!("{}:{}", m.dev(), m.ino())
    });
    let name = cache::name_for(&[
        key.to_url(false).as_bytes(),
        file_tag.as_str().as_bytes(),
        inode.as_deref().unwrap_or("").as_bytes(),
    ]);
    let tag = format!("\"th-{}\"", &name[..32]);
    let revalidated = ex
        .header_str("if-none-match")
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag || t.trim() == "*"));
    if revalidated {
        return ex.send(headers(Response::new(304), &tag), b"").await;
    }
    let thumbs = &thumbnails.inner;
    if let Some(bytes) = thumbs.cache.as_ref().and_then(|c| c.get(&name)) {
        return send_jpeg(ex, &tag, &bytes).await;
    }
    let source = source(key, obj, meta.size, &thumbs.remote_budget).await?;
    let inner = thumbnails.inner.clone();
    let job = move || {
        // Asked for by several viewers at once, it is made once: the jobs
        // queued behind the first find it kept.
        if let Some(bytes) = inner.cache.as_ref().and_then(|c| c.get(&name)) {
            return Ok(bytes);
        }
        let made = match source {
            Source::Bytes(bytes) | Source::Remote { bytes, .. } => make::thumbnail(&bytes),
            Source::File(f) => read_capped(&f).and_then(|b| make::thumbnail(&b)),
            Source::Video(f) => video::frame(&f).and_then(|png| make::thumbnail(&png)),
        };
        if let (Ok(bytes), Some(cache)) = (&made, &inner.cache) {
            cache.put(&name, bytes);
        }
        made
    };
    let Ok(answer) = thumbs.pool.submit(job) else {
        let resp = Response::new(503)
            .header("Retry-After", "1")
            .header("Content-Type", "text/plain; charset=utf-8");
        return ex
            .send(resp, b"busy making thumbnails: try again in a moment\n")
            .await;
    };
    // A viewer who scrolled away closed the connection: the job, still
    // queued, is dropped with the receiver.
    let made = tokio::select! {
        made = answer => made,
        () = ex.peer_gone() => {
            return Err(Error::Io(std::io::ErrorKind::ConnectionAborted.into()));
        }
    };
    match made {
        Ok(Ok(bytes)) => send_jpeg(ex, &tag, &bytes).await,
        Ok(Err(e)) => Err(unsupported(&e.to_string())),
        Err(_) => Err(Error::status(500, "the thumbnail could not be made")),
    }
}

/// The picture's bytes (or its open file, read on the pool), or 415 when
/// its name says it is not one we make a thumbnail of.
async fn source<O: Object>(
    key: &RelPath,
    mut obj: O,
    size: u64,
    budget: &Arc<tokio::sync::Semaphore>,
) -> Result<Source, Error> {
    let essence = crate::content_type::of(key.name().unwrap_or(""));
    if essence.starts_with("video/") {
        return match obj.as_file().map(std::fs::File::try_clone) {
            Some(Ok(f)) if video::available() => Ok(Source::Video(f)),
            _ => Err(unsupported(
                "no thumbnail for a video here (ffmpeg is not installed)",
            )),
        };
    }
    if !matches!(
        essence,
        "image/jpeg" | "image/png" | "image/gif" | "image/webp" | "application/octet-stream"
    ) {
        return Err(unsupported("no thumbnail for this kind of file"));
    }
    if size > MAX_SOURCE {
        return Err(unsupported(
            "the picture is too large to make a thumbnail of",
        ));
    }
    if let Some(all) = obj.in_memory() {
        return Ok(Source::Bytes(all.to_vec()));
    }
    if let Some(f) = obj.as_file() {
        return f.try_clone().map(Source::File).map_err(Error::Io);
    }
    let mib = u32::try_from(size.div_ceil(1 << 20).max(1)).unwrap_or(u32::MAX);
    let permit = budget
        .clone()
        .acquire_many_owned(mib)
        .await
        .map_err(|_| Error::status(503, "thumbnails are shutting down"))?;
    let mut bytes = vec![0u8; size as usize];
    let mut at = 0;
    while at < bytes.len() {
        let n = obj
            .read_at(at as u64, &mut bytes[at..])
            .await
            .map_err(storage_answer)?;
        if n == 0 {
            break;
        }
        at += n;
    }
    bytes.truncate(at);
    Ok(Source::Remote {
        bytes,
        _held: permit,
    })
}

fn read_capped(f: &std::fs::File) -> Result<Vec<u8>, make::MakeError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    f.take(MAX_SOURCE)
        .read_to_end(&mut bytes)
        .map_err(|e| make::MakeError::Corrupt(e.to_string()))?;
    Ok(bytes)
}

fn unsupported(why: &str) -> Error {
    Error::status(415, format!("{why}\n"))
}

/// Revalidated by the thumbnail's ETag each time (a replaced file has a new
/// one), private as the file is.
fn headers(resp: Response, tag: &str) -> Response {
    resp.header("ETag", tag)
        .header("Cache-Control", "private, no-cache")
        .header("X-Content-Type-Options", "nosniff")
}

async fn send_jpeg(ex: &mut Exchange, tag: &str, bytes: &[u8]) -> Result<(), Error> {
    let resp = headers(Response::new(200), tag).header("Content-Type", "image/jpeg");
    ex.send(resp, bytes).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_is_found_among_others() {
        assert!(wanted(Some("thumbnail")));
        assert!(wanted(Some("share=abc&thumbnail")));
        assert!(wanted(Some("thumbnail=1&share=abc")));
        assert!(!wanted(Some("thumbnails")));
        assert!(!wanted(Some("share=thumbnail")));
        assert!(!wanted(None));
    }
}
