//! Receiving an upload body into storage, hashing it when a digest was
//! asked for.
//!
//! Two paths, chosen by [`UploadPath`]:
//! - `Copy`: `read_body` lends slices of the connection buffer (256 KiB by
//!   default); each is written (and hashed, if asked). One copy
//!   kernel→user, one user→page cache.
//! - `Splice`: on plain TCP with a Content-Length body and a local file,
//!   splice(2) socket → pipe → file, so the body never enters user space;
//!   when a digest is asked for, [`ReadBehind`] hashes the stored bytes from
//!   the page cache right behind the writer, in short blocking steps.

use sha2::{Digest, Sha256};
use wirespeed_net::{Error, Exchange};

use crate::answers::storage_answer;
use crate::storage::Upload;

/// How upload bodies reach storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadPath {
    /// Read into the connection buffer, hash, write (works everywhere).
    Copy,
    /// splice(2) socket → pipe → file, then hash the file (plain TCP, known
    /// length, local storage; anything else falls back to `Copy`).
    Splice,
}

impl Default for UploadPath {
    /// Splice: no user-space copy and no per-connection body buffer; with
    /// the digest off the default path it was re-measured against the copy
    /// loop at several buffer sizes and kept (`bench/RESULTS.md`).
    fn default() -> Self {
        UploadPath::Splice
    }
}

/// Where the sha-256 of an upload is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashMode {
    /// On the connection's task, over each piece as it arrives (copy path)
    /// or over the stored file after the transfer (splice path).
    Inline,
    /// On a blocking-pool thread that reads the stored file (page cache)
    /// right behind the writer, so hashing overlaps with receiving. Needs a
    /// local file; otherwise inline. Used for bodies of unknown length or of
    /// at least [`CONCURRENT_MIN`] bytes.
    #[default]
    Concurrent,
}

/// Smallest body hashed concurrently (below, a thread hand-off costs more
/// than it saves).
pub const CONCURRENT_MIN: u64 = 4 << 20;

/// Receive the whole body into `up`; with `hash`, returns the sha-256 of
/// the bytes stored (computed where `hash` says).
pub async fn receive<U: Upload>(
    ex: &mut Exchange,
    up: &mut U,
    path: UploadPath,
    hash: Option<HashMode>,
) -> Result<Option<[u8; 32]>, Error> {
    let big = ex.content_length().is_none_or(|n| n >= CONCURRENT_MIN);
    let mut behind = match (hash, big) {
        (Some(HashMode::Concurrent), true) => up
            .as_file()
            .and_then(|f| f.try_clone().ok())
            .map(ReadBehind::start),
        _ => None,
    };
    if path == UploadPath::Splice {
        if let Some(sum) = splice::receive(ex, up, hash.is_some(), behind.as_mut()).await? {
            return Ok(sum);
        }
    }
    match (hash, behind) {
        (None, _) => {
            while let Some(piece) = ex.read_body().await? {
                up.write(piece).await.map_err(storage_answer)?;
            }
            Ok(None)
        }
        (Some(_), Some(mut rb)) => {
            while let Some(piece) = ex.read_body().await? {
                up.write(piece).await.map_err(storage_answer)?;
                rb.advance(up.written());
            }
            rb.finish(up.written()).await.map(Some)
        }
        (Some(_), None) => {
            let mut hasher = Sha256::new();
            while let Some(piece) = ex.read_body().await? {
                hasher.update(piece);
                up.write(piece).await.map_err(storage_answer)?;
            }
            Ok(Some(hasher.finalize().into()))
        }
    }
}

/// Feed `[from, to)` of `file` into `hasher` with positional reads (1 MiB
/// at a time); `stop`, when set, ends it early with an error. Blocking: call
/// it on a blocking thread. The one read-and-hash loop of the service
/// (read-behind steps, the splice path's read-back, digests computed on GET).
pub(crate) fn hash_file_range(
    file: &std::fs::File,
    hasher: &mut Sha256,
    from: u64,
    to: u64,
    stop: Option<&std::sync::atomic::AtomicBool>,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; (to.saturating_sub(from) as usize).clamp(1, 1 << 20)];
    let mut pos = from;
    while pos < to {
        if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
            return Err(std::io::Error::other("upload aborted"));
        }
        let want = ((to - pos) as usize).min(buf.len());
        let n = file.read_at(&mut buf[..want], pos)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "file shorter than expected while hashing it",
            ));
        }
        hasher.update(&buf[..n]);
        pos += n as u64;
    }
    Ok(())
}

/// Hashes a file behind the writer: whenever at least [`BEHIND_STEP`] new
/// bytes are in the file and no step is running, one short blocking task
/// reads them (hot in the page cache) and hashes them, so the hash overlaps
/// with receiving on another core. No thread is held between steps: a
/// client that trickles its body costs no thread of the shared pool.
pub(crate) struct ReadBehind {
    file: std::sync::Arc<std::fs::File>,
    /// The hash and how far it got, while no step runs.
    idle: Option<(Sha256, u64)>,
    running: Option<tokio::task::JoinHandle<std::io::Result<(Sha256, u64)>>>,
    cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Smallest amount of new data worth a blocking task.
const BEHIND_STEP: u64 = 8 << 20;

impl ReadBehind {
    pub(crate) fn start(file: std::fs::File) -> Self {
        Self::start_at(file, Sha256::new(), 0)
    }

    /// Continue a hash that already covers the file's first `pos` bytes.
    pub(crate) fn start_at(file: std::fs::File, hasher: Sha256, pos: u64) -> Self {
        ReadBehind {
            file: std::sync::Arc::new(file),
            idle: Some((hasher, pos)),
            running: None,
            cancel: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }
    }

    /// Hash `[pos, to)` of the file on a blocking task.
    fn spawn(&mut self, mut hasher: Sha256, pos: u64, to: u64) {
        let file = self.file.clone();
        let stop = self.cancel.clone();
        self.running = Some(tokio::task::spawn_blocking(move || {
            hash_file_range(&file, &mut hasher, pos, to, Some(&stop))?;
            Ok((hasher, to))
        }));
    }

    /// Bytes up to `written` are in the file: start a step if one is due.
    /// A finished step's result is collected without waiting.
    pub(crate) fn advance(&mut self, written: u64) {
        if let Some(handle) = self.running.as_mut() {
            if !handle.is_finished() {
                return;
            }
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            match std::future::Future::poll(std::pin::Pin::new(handle), &mut cx) {
                std::task::Poll::Ready(Ok(Ok(state))) => {
                    self.running = None;
                    self.idle = Some(state);
                }
                // A failed step: leave it for `finish` to report.
                _ => return,
            }
        }
        if let Some((_, pos)) = &self.idle {
            if written.saturating_sub(*pos) >= BEHIND_STEP {
                if let Some((hasher, pos)) = self.idle.take() {
                    self.spawn(hasher, pos, written);
                }
            }
        }
    }

    /// The last watermark; wait for the digest.
    pub(crate) async fn finish(&mut self, written: u64) -> Result<[u8; 32], Error> {
        let join = |r: Result<std::io::Result<(Sha256, u64)>, tokio::task::JoinError>| match r {
            Ok(r) => r.map_err(|e| storage_answer(crate::storage::StorageError::from(e))),
            Err(e) => Err(Error::Io(std::io::Error::other(e))),
        };
        if let Some(handle) = self.running.take() {
            self.idle = Some(join(handle.await)?);
        }
        let Some((hasher, pos)) = self.idle.take() else {
            return Err(Error::status(500, "upload digest already taken"));
        };
        let (hasher, _) = if pos < written {
            self.spawn(hasher, pos, written);
            match self.running.take() {
                Some(handle) => join(handle.await)?,
                None => return Err(Error::status(500, "upload digest step vanished")),
            }
        } else {
            (hasher, pos)
        };
        Ok(hasher.finalize().into())
    }
}

/// The sha-256 of what an upload stores, for routes that write decoded or
/// demultiplexed bytes piece by piece (forms, SOAP/JSON base64, MTOM). It
/// hashes inline while the file is small and, with [`HashMode::Concurrent`],
/// hands the hash over to a [`ReadBehind`] once the file reaches
/// [`CONCURRENT_MIN`], so a big file's hash overlaps with receiving and
/// decoding instead of running in series with them; many small files never
/// pay for a thread. With no mode (nobody asked for a digest) it does
/// nothing and finishes with `None`.
pub(crate) struct StoredHasher {
    mode: Option<HashMode>,
    inline: Option<Sha256>,
    behind: Option<ReadBehind>,
}

impl StoredHasher {
    pub(crate) fn new(mode: Option<HashMode>) -> Self {
        StoredHasher {
            mode,
            inline: mode.map(|_| Sha256::new()),
            behind: None,
        }
    }

    /// `data` was just written to `up` (so `up.written()` includes it).
    pub(crate) fn wrote<U: Upload>(&mut self, data: &[u8], up: &mut U) {
        if let Some(rb) = &mut self.behind {
            rb.advance(up.written());
            return;
        }
        let Some(h) = self.inline.as_mut() else {
            return;
        };
        h.update(data);
        if self.mode == Some(HashMode::Concurrent) && up.written() >= CONCURRENT_MIN {
            if let Some(file) = up.as_file().and_then(|f| f.try_clone().ok()) {
                if let Some(h) = self.inline.take() {
                    self.behind = Some(ReadBehind::start_at(file, h, up.written()));
                }
            }
        }
    }

    /// The digest of everything written (`written` bytes in all); `None`
    /// when not hashing.
    pub(crate) async fn finish(&mut self, written: u64) -> Result<Option<[u8; 32]>, Error> {
        if self.mode.is_none() {
            return Ok(None);
        }
        match (self.behind.take(), self.inline.take()) {
            (Some(mut rb), _) => rb.finish(written).await.map(Some),
            (None, Some(h)) => Ok(Some(h.finalize().into())),
            (None, None) => Err(Error::status(500, "upload digest already taken")),
        }
    }
}

impl Drop for ReadBehind {
    fn drop(&mut self) {
        // On abort a running step stops at its next read instead of
        // hashing a file that is about to be deleted.
        self.cancel
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The zero-copy path: the exchange splices the body into the upload's
/// file (`Exchange::receive_body_into`); this side keeps the upload's count
/// and the read-behind hasher in step.
mod splice {
    use std::io;

    use sha2::{Digest, Sha256};
    use wirespeed_net::{Error, Exchange, FileBodyError};

    use crate::answers::{storage_answer, IntoAnswer as _};
    use crate::storage::{StorageError, Upload};

    fn hash_file(file: &std::fs::File, len: u64) -> io::Result<[u8; 32]> {
        let mut hasher = Sha256::new();
        super::hash_file_range(file, &mut hasher, 0, len, None)?;
        Ok(hasher.finalize().into())
    }

    /// `Ok(None)`: not applicable here (TLS, chunked, non-local storage).
    /// `Ok(Some(sum))`: received, with the sha-256 when `hash` (from
    /// `behind`, or by reading the file back).
    pub(super) async fn receive<U: Upload>(
        ex: &mut Exchange,
        up: &mut U,
        hash: bool,
        mut behind: Option<&mut super::ReadBehind>,
    ) -> Result<Option<Option<[u8; 32]>>, Error> {
        // The exchange writes through its own handle (a dup of the upload's
        // descriptor, sharing its file position), so the upload can be told
        // of every step while the transfer runs: write-back starts early.
        let Some(file) = up.as_file().map(|f| f.try_clone()) else {
            return Ok(None);
        };
        let file = file.map_err(StorageError::from).map_err(storage_answer)?;
        let base = up.written();
        let mut stored = 0u64;
        let received = ex
            .receive_body_into(&file, |n| {
                stored += n;
                up.wrote_directly(n);
                if let Some(b) = behind.as_deref_mut() {
                    b.advance(base + stored);
                }
            })
            .await;
        match received {
            Ok(None) => return Ok(None),
            Ok(Some(_)) => {}
            // A failure writing the file is the storage's (ENOSPC → 507, as
            // on the copy path), not the connection's.
            Err(FileBodyError::File(e)) => return Err(StorageError::from(e).into_answer()),
            Err(FileBodyError::Body(e)) => return Err(e),
        }
        if !hash {
            return Ok(Some(None));
        }
        // Hash what was stored (page cache; the bytes never reached us).
        let len = up.written();
        if let Some(b) = behind {
            return Ok(Some(Some(b.finish(len).await?)));
        }
        // Reading back and hashing a large file takes ≈1 s/GiB: off the
        // async workers.
        let sum = tokio::task::spawn_blocking(move || hash_file(&file, len))
            .await
            .map_err(|e| Error::Io(io::Error::other(e)))?
            .map_err(StorageError::from)
            .map_err(storage_answer)?;
        Ok(Some(Some(sum)))
    }
}

#[cfg(test)]
mod read_behind_tests {
    use super::*;
    use std::io::Write;

    /// Progressive writes with watermarks, some steps overlapping the
    /// writer: the digest is the file's. A trickle of small writes starts
    /// no step (no blocking thread) until `finish`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hashes_behind_the_writer_in_steps() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        let mut w = std::fs::File::create(&path).unwrap();
        let mut rb = ReadBehind::start(std::fs::File::open(&path).unwrap());
        let data: Vec<u8> = (0..(3 * BEHIND_STEP as usize + 4321))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let mut written = 0u64;
        for piece in data.chunks(1 << 20) {
            w.write_all(piece).unwrap();
            written += piece.len() as u64;
            rb.advance(written);
            tokio::task::yield_now().await;
        }
        let want: [u8; 32] = Sha256::digest(&data).into();
        assert_eq!(rb.finish(written).await.unwrap(), want);

        let path = tmp.path().join("trickle");
        let mut w = std::fs::File::create(&path).unwrap();
        let mut rb = ReadBehind::start(std::fs::File::open(&path).unwrap());
        for i in 0..1000u64 {
            w.write_all(b"0123456789").unwrap();
            rb.advance((i + 1) * 10);
            assert!(rb.running.is_none(), "no step for a trickle");
        }
        let want: [u8; 32] = Sha256::digest(b"0123456789".repeat(1000)).into();
        assert_eq!(rb.finish(10_000).await.unwrap(), want);
    }
}
