//! Receiving an upload body into storage, hashing it when a digest was
//! asked for.
//!
//! Two paths, chosen by [`UploadPath`]:
//! - `Copy`: `read_body` lends slices of the connection buffer (256 KiB by
//!   default); each is written (and hashed, if asked). One copy
//!   kernel→user, one user→page cache.
//! - `Splice`: on plain TCP with a Content-Length body and a local file,
//!   splice(2) socket → pipe → file, so the body never enters user space;
//!   when a digest is asked for, a [`ReadBehind`] thread hashes the stored
//!   bytes from the page cache right behind the writer.

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

/// Hashes a file on a blocking thread, reading it behind the writer up to
/// the watermark the writer announces. The bytes are hot in the page cache,
/// so the read costs a memcpy; in exchange the hash (≈1 s/GiB here) runs on
/// another core instead of in series with the network.
pub(crate) struct ReadBehind {
    tx: Option<std::sync::mpsc::Sender<u64>>,
    cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    done: tokio::task::JoinHandle<std::io::Result<[u8; 32]>>,
}

impl ReadBehind {
    pub(crate) fn start(file: std::fs::File) -> Self {
        Self::start_at(file, Sha256::new(), 0)
    }

    /// Continue a hash that already covers the file's first `pos` bytes.
    pub(crate) fn start_at(file: std::fs::File, mut hasher: Sha256, mut pos: u64) -> Self {
        use std::os::unix::fs::FileExt;
        use std::sync::atomic::Ordering;
        let (tx, rx) = std::sync::mpsc::channel::<u64>();
        let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = cancel.clone();
        let done = tokio::task::spawn_blocking(move || {
            let mut buf = vec![0u8; 1 << 20];
            // Each message is a watermark; the channel closing means the
            // last one was final.
            while let Ok(mut mark) = rx.recv() {
                while let Ok(m) = rx.try_recv() {
                    mark = m; // coalesce: only the newest watermark matters
                }
                while pos < mark {
                    if stop.load(Ordering::Relaxed) {
                        return Err(std::io::Error::other("upload aborted"));
                    }
                    let want = ((mark - pos) as usize).min(buf.len());
                    let n = file.read_at(&mut buf[..want], pos)?;
                    if n == 0 {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "stored file shorter than written",
                        ));
                    }
                    hasher.update(&buf[..n]);
                    pos += n as u64;
                }
            }
            Ok(hasher.finalize().into())
        });
        ReadBehind {
            tx: Some(tx),
            cancel,
            done,
        }
    }

    /// Bytes up to `written` are in the file.
    pub(crate) fn advance(&mut self, written: u64) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(written);
        }
    }

    /// The last watermark; wait for the digest.
    pub(crate) async fn finish(&mut self, written: u64) -> Result<[u8; 32], Error> {
        self.advance(written);
        self.tx = None;
        match (&mut self.done).await {
            Ok(r) => Ok(r?),
            Err(e) => Err(Error::Io(std::io::Error::other(e))),
        }
    }
}

/// The sha-256 of what an upload stores, for routes that write decoded or
/// demultiplexed bytes piece by piece (forms, SOAP/JSON base64, MTOM). It
/// hashes inline while the file is small and, with [`HashMode::Concurrent`],
/// hands the hash over to a [`ReadBehind`] thread once the file reaches
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
        // On abort the thread stops at its next step instead of hashing a
        // file that is about to be deleted.
        self.cancel
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(target_os = "linux")]
mod splice {
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::fs::FileExt;

    use sha2::{Digest, Sha256};
    use tokio::io::Interest;
    use wirespeed_net::{Error, Exchange};

    use crate::storage::{StorageError, Upload};

    /// Pipe capacity asked for with F_SETPIPE_SZ (1 MiB is the default
    /// /proc/sys/fs/pipe-max-size; if refused, the 64 KiB default works, slower).
    const PIPE_SIZE: usize = 1024 * 1024;
    /// Read-back buffer for hashing the stored file.
    const HASH_BUF: usize = 1024 * 1024;

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
        let mut buf = vec![0u8; HASH_BUF.min(len as usize).max(1)];
        let mut pos = 0;
        while pos < len {
            let want = ((len - pos) as usize).min(buf.len());
            let n = file.read_at(&mut buf[..want], pos)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "stored file shorter than received",
                ));
            }
            hasher.update(&buf[..n]);
            pos += n as u64;
        }
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
