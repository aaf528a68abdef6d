//! Sending file bodies: sendfile(2) on plain TCP (the kernel moves page-cache
//! pages to the socket, no copy through user space), a large-buffer
//! read/write loop elsewhere (TLS must encrypt in user space anyway).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::io::deadline;
use crate::Error;

/// Buffer of the read/write fallback. 1 MiB keeps syscalls rare while TLS
/// splits it into maximum-size records.
const COPY_BUFFER: usize = 1024 * 1024;

/// Holds TCP_CORK on a socket while alive; uncorking (on drop, on every exit
/// path) pushes out the last partial segment.
#[cfg(target_os = "linux")]
pub(crate) struct Cork {
    fd: std::os::fd::RawFd,
}

#[cfg(target_os = "linux")]
impl Cork {
    /// Cork `tcp`, or `None` if the option cannot be set (then nothing changes).
    pub(crate) fn new(tcp: &TcpStream) -> Option<Cork> {
        use std::os::fd::AsRawFd;
        socket2::SockRef::from(tcp).set_tcp_cork(true).ok()?;
        Some(Cork {
            fd: tcp.as_raw_fd(),
        })
    }
}

#[cfg(target_os = "linux")]
impl Drop for Cork {
    fn drop(&mut self) {
        // SAFETY: the guard lives inside `Exchange::send_file`, which holds the
        // connection (and so the socket) for the guard's whole lifetime; the
        // descriptor is therefore open, and BorrowedFd does not close it.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(self.fd) };
        let _ = socket2::SockRef::from(&fd).set_tcp_cork(false);
    }
}

/// Elsewhere corking is not attempted.
#[cfg(not(target_os = "linux"))]
pub(crate) struct Cork;

#[cfg(not(target_os = "linux"))]
impl Cork {
    pub(crate) fn new(_tcp: &TcpStream) -> Option<Cork> {
        None
    }
}

/// sendfile(2) `len` bytes of `file` from `offset` to `tcp`, in steps of `step`.
#[cfg(target_os = "linux")]
pub(crate) async fn send_file(
    tcp: &TcpStream,
    file: &File,
    offset: u64,
    len: u64,
    step: usize,
    timeout: Duration,
) -> Result<(), Error> {
    use std::os::fd::AsRawFd;
    use tokio::io::Interest;

    let sock = tcp.as_raw_fd();
    let fd = file.as_raw_fd();
    let end = offset
        .checked_add(len)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "file range overflows"))?;
    let mut pos = offset;
    while pos < end {
        let want = (end - pos).min(step as u64) as usize;
        let mut off = libc::off_t::try_from(pos)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset too large"))?;
        let n = deadline(timeout, "sending a file", async {
            tcp.async_io(Interest::WRITABLE, || {
                // SAFETY: `sock` and `fd` are open descriptors borrowed for
                // this call (`tcp` and `file` outlive it); `off` is a valid,
                // exclusively borrowed off_t the kernel updates.
                let r = unsafe { libc::sendfile(sock, fd, &mut off, want) };
                if r < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(r as usize)
                }
            })
            .await
        })
        .await?;
        if n == 0 {
            // The file is shorter than promised (truncated while sending).
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shrank while being sent",
            )
            .into());
        }
        pos += n as u64;
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) async fn send_file(
    tcp: &TcpStream,
    file: &File,
    offset: u64,
    len: u64,
    _step: usize,
    timeout: Duration,
) -> Result<(), Error> {
    let mut w = tcp;
    copy_file(&mut w, file, offset, len, timeout).await
}

/// Read/write loop with a large buffer. Reads are positional (`pread`) and
/// done inline: for page-cache hits they cost microseconds per MiB, the same
/// trade nginx makes without aio.
pub(crate) async fn copy_file<W: AsyncWrite + Unpin + ?Sized>(
    w: &mut W,
    file: &File,
    offset: u64,
    len: u64,
    timeout: Duration,
) -> Result<(), Error> {
    let end = offset
        .checked_add(len)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "file range overflows"))?;
    let mut buf = vec![0u8; len.clamp(1, COPY_BUFFER as u64) as usize];
    let mut pos = offset;
    while pos < end {
        let want = ((end - pos) as usize).min(buf.len());
        let n = file.read_at(&mut buf[..want], pos)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shrank while being sent",
            )
            .into());
        }
        deadline(timeout, "sending a file", w.write_all(&buf[..n])).await?;
        pos += n as u64;
    }
    deadline(timeout, "sending a file", w.flush()).await
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::Cork;
    use tokio::net::{TcpListener, TcpStream};

    fn corked(tcp: &TcpStream) -> bool {
        socket2::SockRef::from(tcp).tcp_cork().unwrap()
    }

    #[tokio::test]
    async fn cork_guard_uncorks_on_drop() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        assert!(!corked(&server));
        {
            let _guard = Cork::new(&server).expect("TCP_CORK settable on a TCP socket");
            assert!(corked(&server));
        }
        assert!(!corked(&server), "dropping the guard uncorks");
        drop(client);
    }
}
