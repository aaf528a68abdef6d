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
        #[cfg(target_os = "linux")]
        if let Some(sum) = splice::receive(ex, up, hash.is_some(), behind.as_mut()).await? {
            return Ok(sum);
        }
    }
    match (hash, behind) {
        (None, _) => {
            while let Some(piece) = ex.read_body().await? {
                up.write(piece).await?;
            }
            Ok(None)
        }
        (Some(_), Some(mut rb)) => {
            while let Some(piece) = ex.read_body().await? {
                up.write(piece).await?;
                rb.advance(up.written());
            }
            rb.finish(up.written()).await.map(Some)
        }
        (Some(_), None) => {
            let mut hasher = Sha256::new();
            while let Some(piece) = ex.read_body().await? {
                hasher.update(piece);
                up.write(piece).await?;
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
            Ok(r) => r.map_err(|e| Error::from(crate::storage::StorageError::from(e))),
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

#[cfg(target_os = "linux")]
mod splice {
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

    use sha2::{Digest, Sha256};
    use tokio::io::Interest;
    use wirespeed_net::{Error, Exchange};

    use crate::storage::{StorageError, Upload};

    /// Pipe capacity asked for with F_SETPIPE_SZ (1 MiB is the default
    /// /proc/sys/fs/pipe-max-size; if refused, the 64 KiB default works, slower).
    const PIPE_SIZE: usize = 1024 * 1024;

    fn pipe() -> io::Result<(OwnedFd, OwnedFd, usize)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid 2-element array the kernel fills in.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both descriptors are open and owned by
        // nobody else; OwnedFd closes them on drop.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on a descriptor we own; an error only leaves the
        // default size.
        let size =
            unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE as libc::c_int) };
        let size = if size > 0 { size as usize } else { 64 * 1024 };
        Ok((r, w, size))
    }

    /// Move exactly `n` bytes from the pipe into the file at its current
    /// position, adding what reached the file to `stored` as it goes (also
    /// when it fails midway). The bytes are already in the pipe, so this does
    /// not block on the network.
    fn drain_pipe(pipe_r: RawFd, file: RawFd, mut n: usize, stored: &mut u64) -> io::Result<()> {
        while n > 0 {
            // SAFETY: both descriptors are open for the duration of the call
            // (owned by the caller); null offsets mean "current position".
            let m = unsafe {
                libc::splice(
                    pipe_r,
                    std::ptr::null_mut(),
                    file,
                    std::ptr::null_mut(),
                    n,
                    libc::SPLICE_F_MOVE,
                )
            };
            if m < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if m == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "splice into the file moved nothing",
                ));
            }
            n -= m as usize;
            *stored += m as u64;
        }
        Ok(())
    }

    /// Where the spliced bytes went: `taken` left the socket (the request
    /// body is that much further along), `stored` reached the file. They
    /// differ only after a failure, by what was stuck in the pipe.
    #[derive(Debug, Default, Clone, Copy)]
    struct Progress {
        taken: u64,
        stored: u64,
        /// Of `stored`, what the upload was already told (per step, so the
        /// storage can start write-back during the transfer).
        reported: u64,
    }

    /// Account for a splice transfer, whatever its outcome: the upload learns
    /// what reached its file and the exchange what left the socket. After a
    /// failure that took bytes off the socket, the connection must close:
    /// whatever sat in the pipe is gone, so the rest of the stream cannot be
    /// framed as "the remainder of this body" with any confidence.
    fn settle<U: Upload>(
        ex: &mut Exchange,
        up: &mut U,
        p: Progress,
        result: Result<(), Error>,
    ) -> Result<(), Error> {
        up.wrote_directly(p.stored - p.reported);
        let accounted = ex.body_consumed_raw(0, p.taken);
        if (result.is_err() || accounted.is_err()) && p.taken > 0 {
            ex.close_after_response();
        }
        result.and(accounted)
    }

    fn hash_file(file: &File, len: u64) -> io::Result<[u8; 32]> {
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
        if up.as_file().is_none() || ex.raw_body_parts().is_none() {
            return Ok(None);
        }
        ex.accept_body().await?;
        // 1. What already sits in the read buffer goes through write().
        let buffered_len = match ex.raw_body_parts() {
            Some((buffered, _, _)) if !buffered.is_empty() => {
                let n = buffered.len();
                up.write(buffered).await?;
                n
            }
            Some(_) => 0,
            None => return Ok(None),
        };
        ex.body_consumed_raw(buffered_len, 0)?;
        // 2. The rest moves socket → pipe → file inside the kernel.
        let Some(file_fd) = up.as_file().map(|f| f.as_raw_fd()) else {
            return Ok(None);
        };
        let timeout = ex.config().body_timeout;
        let base = up.written();
        let (pipe_r, pipe_w, pipe_size) = pipe()?;
        let mut progress = Progress::default();
        let result: Result<(), Error> = async {
            let Some((_, tcp, remaining)) = ex.raw_body_parts() else {
                return Ok(());
            };
            let sock = tcp.as_raw_fd();
            while progress.taken < remaining {
                let want = ((remaining - progress.taken) as usize).min(pipe_size);
                let n = tokio::time::timeout(
                    timeout,
                    tcp.async_io(Interest::READABLE, || {
                        // SAFETY: `sock` and `pipe_w` are open descriptors
                        // borrowed for this call (the TcpStream and the pipe
                        // outlive it). NONBLOCK: an empty socket gives EAGAIN,
                        // which async_io turns into waiting for readiness; the
                        // pipe is always empty here, so it never blocks on it.
                        let r = unsafe {
                            libc::splice(
                                sock,
                                std::ptr::null_mut(),
                                pipe_w.as_raw_fd(),
                                std::ptr::null_mut(),
                                want,
                                libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
                            )
                        };
                        if r < 0 {
                            Err(io::Error::last_os_error())
                        } else {
                            Ok(r as usize)
                        }
                    }),
                )
                .await
                .map_err(|_| Error::Timeout("reading the request body"))??;
                if n == 0 {
                    return Err(Error::UnexpectedEof);
                }
                progress.taken += n as u64;
                // A failure here is the storage's (ENOSPC → 507, as on the
                // copy path), not the connection's.
                drain_pipe(pipe_r.as_raw_fd(), file_fd, n, &mut progress.stored)
                    .map_err(StorageError::from)?;
                up.wrote_directly(progress.stored - progress.reported);
                progress.reported = progress.stored;
                if let Some(b) = behind.as_deref_mut() {
                    b.advance(base + progress.stored);
                }
            }
            Ok(())
        }
        .await;
        settle(ex, up, progress, result)?;
        if !hash {
            return Ok(Some(None));
        }
        // 3. Hash what was stored (page cache; the bytes never reached us).
        let len = up.written();
        if let Some(b) = behind {
            return Ok(Some(Some(b.finish(len).await?)));
        }
        let Some(file) = up.as_file() else {
            return Err(Error::status(500, "upload file vanished"));
        };
        // Reading back and hashing a large file takes ≈1 s/GiB: off the
        // async workers.
        let file = file.try_clone().map_err(StorageError::from)?;
        let sum = tokio::task::spawn_blocking(move || hash_file(&file, len))
            .await
            .map_err(|e| Error::Io(io::Error::other(e)))?
            .map_err(StorageError::from)?;
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
