//! Moving file bytes to and from TCP sockets: the kernel moves them, they
//! never enter user space.
//!
//! - [`send_file`]: sendfile(2), page cache → socket.
//! - [`receive_to_file`]: splice(2), socket → pipe → file.
//! - [`copy_file`]: the user-space fallback for streams that must see the
//!   bytes (TLS encrypts them).
//! - [`Cork`]: TCP_CORK while a head and a file body go out, so the head
//!   rides in the first full segment.
//!
//! Every call takes a per-step timeout; an expired one is an
//! `io::ErrorKind::TimedOut` error, mapped by the caller to its own type.

use std::fs::File;
use std::future::Future;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::Pace;

/// Buffer of the read/write fallback: 1 MiB keeps syscalls rare while TLS
/// splits it into maximum-size records.
const COPY_BUFFER: usize = 1024 * 1024;

async fn timed<T>(limit: Duration, fut: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

fn shrank() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank while being sent")
}

/// Holds TCP_CORK on a socket while alive; uncorking (on drop, on every exit
/// path) pushes out the last partial segment. It keeps its own duplicate of
/// the descriptor, so it borrows nothing from the connection.
pub struct Cork {
    socket: socket2::Socket,
}

impl Cork {
    /// Cork `tcp`, or `None` if the option cannot be set (then nothing changes).
    pub fn new(tcp: &TcpStream) -> Option<Cork> {
        use std::os::fd::AsFd;
        let fd = tcp.as_fd().try_clone_to_owned().ok()?;
        let socket = socket2::Socket::from(fd);
        socket.set_tcp_cork(true).ok()?;
        Some(Cork { socket })
    }
}

impl Drop for Cork {
    fn drop(&mut self) {
        let _ = self.socket.set_tcp_cork(false);
    }
}

/// sendfile(2) `len` bytes of `file` from `offset` to `tcp`, at most `step`
/// bytes per call (at most a pace's chunk when paced, each step reserved
/// first); `sent` hears each step's byte count. A file shorter than
/// promised is `UnexpectedEof`.
#[allow(clippy::too_many_arguments)]
pub async fn send_file(
    tcp: &TcpStream,
    file: &File,
    offset: u64,
    len: u64,
    step: usize,
    timeout: Duration,
    pace: Option<&Pace>,
    mut sent: impl FnMut(u64),
) -> io::Result<()> {
    use tokio::io::Interest;
    let end = offset
        .checked_add(len)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "file range overflows"))?;
    let step = pace.map_or(step, |p| p.chunk().min(step)).max(1);
    let mut pos = offset;
    while pos < end {
        let want = (end - pos).min(step as u64) as usize;
        if let Some(p) = pace {
            p.reserve(want as u64).await;
        }
        let mut off = pos;
        let n = timed(
            timeout,
            tcp.async_io(Interest::WRITABLE, || {
                rustix::fs::sendfile(tcp, file, Some(&mut off), want).map_err(io::Error::from)
            }),
        )
        .await;
        if let Some(p) = pace {
            p.refund((want - *n.as_ref().unwrap_or(&0)) as u64);
        }
        let n = n?;
        if n == 0 {
            return Err(shrank());
        }
        pos += n as u64;
        sent(n as u64);
    }
    Ok(())
}

/// Read/write loop with a large buffer, for streams that must see the
/// bytes. Reads are positional (`pread`) and inline: for page-cache hits
/// they cost microseconds per MiB, the trade nginx makes without aio.
/// `sent` hears each write's byte count (a cut transfer is counted as far
/// as it went).
pub async fn copy_file<W: AsyncWrite + Unpin + ?Sized>(
    w: &mut W,
    file: &File,
    offset: u64,
    len: u64,
    timeout: Duration,
    pace: Option<&Pace>,
    sent: impl FnMut(u64),
) -> io::Result<()> {
    copy_file_with(w, file, offset, len, timeout, pace, sent, &mut Vec::new()).await
}

/// [`copy_file`] through `buf`, grown to at most 1 MiB and kept by the
/// caller: a body of many file ranges (a folder archive) allocates and
/// zeroes it once, not once per file. Paced, each read is at most the
/// pace's chunk and reserved before it is written.
#[allow(clippy::too_many_arguments)]
pub async fn copy_file_with<W: AsyncWrite + Unpin + ?Sized>(
    w: &mut W,
    file: &File,
    offset: u64,
    len: u64,
    timeout: Duration,
    pace: Option<&Pace>,
    mut sent: impl FnMut(u64),
    buf: &mut Vec<u8>,
) -> io::Result<()> {
    let end = offset
        .checked_add(len)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "file range overflows"))?;
    let want = len.clamp(1, COPY_BUFFER as u64) as usize;
    if buf.len() < want {
        buf.resize(want, 0);
    }
    let buf = &mut buf[..want];
    let step = pace.map_or(buf.len(), |p| p.chunk().min(buf.len()));
    let mut pos = offset;
    while pos < end {
        let want = ((end - pos) as usize).min(step);
        let n = file.read_at(&mut buf[..want], pos)?;
        if n == 0 {
            return Err(shrank());
        }
        if let Some(p) = pace {
            // A cut write leaves the connection unusable: nothing to refund.
            p.reserve(n as u64).await;
        }
        let mut done = 0;
        while done < n {
            let k = timed(timeout, w.write(&buf[done..n])).await?;
            if k == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            done += k;
            sent(k as u64);
        }
        pos += n as u64;
    }
    timed(timeout, w.flush()).await
}

/// Pipe capacity asked for with F_SETPIPE_SZ (1 MiB is the default
/// /proc/sys/fs/pipe-max-size; if refused, the 64 KiB default works, slower).
const PIPE_SIZE: usize = 1024 * 1024;

/// Why a [`receive_to_file`] stopped early.
#[derive(Debug)]
pub enum ReceiveError {
    /// Reading the socket failed (or timed out: `TimedOut`).
    Socket(io::Error),
    /// The peer closed the connection before `len` bytes arrived.
    Closed,
    /// Writing the file failed (ENOSPC, EIO …): the storage's error.
    File(io::Error),
}

/// What a [`receive_to_file`] moved: `taken` bytes left the socket,
/// `stored` reached the file. They differ only after a failure, by what was
/// stuck in the pipe; the caller must then not reuse the connection.
#[derive(Debug)]
pub struct Received {
    pub taken: u64,
    pub stored: u64,
    pub result: Result<(), ReceiveError>,
}

/// Move `len` bytes from `tcp` into `file` at its current position with
/// splice(2) socket → pipe → file; `stored` hears each step's byte count
/// (for write-back and hashing behind the writer). The file position
/// advances by what was stored. Paced, each step is at most the pace's
/// chunk, reserved before it leaves the socket (the rest waits in the
/// kernel, where TCP's window holds the sender back).
pub async fn receive_to_file(
    tcp: &TcpStream,
    file: &File,
    len: u64,
    timeout: Duration,
    pace: Option<&Pace>,
    mut stored: impl FnMut(u64),
) -> Received {
    use rustix::pipe::{PipeFlags, SpliceFlags};
    use tokio::io::Interest;

    let mut got = Received {
        taken: 0,
        stored: 0,
        result: Ok(()),
    };
    let (pipe_r, pipe_w) = match rustix::pipe::pipe_with(PipeFlags::CLOEXEC) {
        Ok(p) => p,
        Err(e) => {
            got.result = Err(ReceiveError::File(e.into()));
            return got;
        }
    };
    let pipe_size = rustix::pipe::fcntl_setpipe_size(&pipe_w, PIPE_SIZE).unwrap_or(64 * 1024);
    let step = pace.map_or(pipe_size, |p| p.chunk().min(pipe_size));
    while got.taken < len {
        let want = ((len - got.taken) as usize).min(step);
        if let Some(p) = pace {
            p.reserve(want as u64).await;
        }
        // NONBLOCK: an empty socket gives EAGAIN, which async_io turns into
        // waiting for readiness; the pipe is always empty here.
        let step = timed(
            timeout,
            tcp.async_io(Interest::READABLE, || {
                rustix::pipe::splice(
                    tcp,
                    None,
                    &pipe_w,
                    None,
                    want,
                    SpliceFlags::MOVE | SpliceFlags::NONBLOCK,
                )
                .map_err(io::Error::from)
            }),
        )
        .await;
        if let Some(p) = pace {
            p.refund((want - *step.as_ref().unwrap_or(&0)) as u64);
        }
        let n = match step {
            Ok(0) => {
                got.result = Err(ReceiveError::Closed);
                return got;
            }
            Ok(n) => n,
            Err(e) => {
                got.result = Err(ReceiveError::Socket(e));
                return got;
            }
        };
        got.taken += n as u64;
        // The bytes are in the pipe already: this does not wait on the network.
        let mut left = n;
        while left > 0 {
            match rustix::pipe::splice(&pipe_r, None, file, None, left, SpliceFlags::MOVE) {
                Ok(0) => {
                    got.result = Err(ReceiveError::File(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "splice into the file moved nothing",
                    )));
                    return got;
                }
                Ok(m) => {
                    left -= m;
                    got.stored += m as u64;
                    stored(m as u64);
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    got.result = Err(ReceiveError::File(e.into()));
                    return got;
                }
            }
        }
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (server, client)
    }

    fn corked(tcp: &TcpStream) -> bool {
        socket2::SockRef::from(tcp).tcp_cork().unwrap()
    }

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[tokio::test]
    async fn cork_guard_uncorks_on_drop() {
        let (server, _client) = pair().await;
        assert!(!corked(&server));
        {
            let _guard = Cork::new(&server).expect("TCP_CORK settable on a TCP socket");
            assert!(corked(&server));
        }
        assert!(!corked(&server), "dropping the guard uncorks");
    }

    #[tokio::test]
    async fn sends_a_file_range_in_steps_and_refuses_a_short_file() {
        let data = pattern(300_000);
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&data).unwrap();
        let (server, mut client) = pair().await;
        let reader = tokio::spawn(async move {
            let mut got = vec![0u8; 200_000];
            client.read_exact(&mut got).await.unwrap();
            got
        });
        let mut steps = 0;
        send_file(
            &server,
            &f,
            50_000,
            200_000,
            65_536,
            Duration::from_secs(5),
            None,
            |_| steps += 1,
        )
        .await
        .unwrap();
        assert_eq!(reader.await.unwrap(), data[50_000..250_000]);
        assert!(steps >= 4, "at most one step per 64 KiB: {steps}");

        let e = send_file(
            &server,
            &f,
            299_000,
            2_000,
            65_536,
            Duration::from_secs(5),
            None,
            |_| {},
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[tokio::test]
    async fn receives_exactly_len_bytes_into_the_file_and_leaves_the_rest() {
        let data = pattern(3 * 1024 * 1024 + 17);
        let (server, mut client) = pair().await;
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            client.write_all(&sent).await.unwrap();
            client.write_all(b"NEXT").await.unwrap();
            client
        });
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"prefix").unwrap();
        let mut reported = 0;
        let got = receive_to_file(
            &server,
            &file,
            data.len() as u64,
            Duration::from_secs(5),
            None,
            |n| reported += n,
        )
        .await;
        got.result.unwrap();
        assert_eq!(
            (got.taken, got.stored, reported),
            (data.len() as u64, data.len() as u64, data.len() as u64)
        );
        let _client = writer.await.unwrap();
        file.rewind().unwrap();
        let mut back = Vec::new();
        file.read_to_end(&mut back).unwrap();
        assert_eq!(&back[..6], b"prefix", "written at the file position");
        assert_eq!(back[6..], data);
        let mut next = [0u8; 4];
        let mut server = server;
        server.read_exact(&mut next).await.unwrap();
        assert_eq!(&next, b"NEXT", "bytes after the body stay on the socket");
    }

    #[tokio::test]
    async fn a_peer_that_closes_early_is_reported_with_what_was_stored() {
        let (server, client) = pair().await;
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let mut client = client;
            client.write_all(&pattern(1000)).await.unwrap();
        });
        let file = tempfile::tempfile().unwrap();
        let got = receive_to_file(&server, &file, 5000, Duration::from_secs(5), None, |_| {}).await;
        writer.await.unwrap();
        assert!(
            matches!(got.result, Err(ReceiveError::Closed)),
            "{:?}",
            got.result
        );
        assert_eq!((got.taken, got.stored), (1000, 1000));
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_peer_times_out() {
        let (server, _client) = pair().await;
        let file = tempfile::tempfile().unwrap();
        let got = receive_to_file(&server, &file, 10, Duration::from_secs(3), None, |_| {}).await;
        match got.result {
            Err(ReceiveError::Socket(e)) => assert_eq!(e.kind(), io::ErrorKind::TimedOut),
            other => panic!("expected a timeout, got {other:?}"),
        }
    }
}
