//! Byte-moving primitives: the transport trait, an all-or-error vectored
//! write, and deadlines.

use std::future::Future;
use std::io::{self, IoSlice};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{Error, Timeout};

/// A connection's byte stream. Plain TCP exposes its socket so file bodies can
/// go out with sendfile(2); TLS streams do not.
pub trait Transport: AsyncRead + AsyncWrite + Unpin + Send {
    /// The underlying TCP socket when bytes on it are plaintext.
    fn plain_tcp(&self) -> Option<&TcpStream> {
        None
    }
    /// The TCP socket under the stream whatever its bytes are (TLS records
    /// too), only to watch whether the peer has closed it: reading or
    /// writing it would tear a TLS stream's records.
    fn socket(&self) -> Option<&TcpStream> {
        self.plain_tcp()
    }
}

impl Transport for TcpStream {
    fn plain_tcp(&self) -> Option<&TcpStream> {
        Some(self)
    }
}

/// Write every byte of `bufs`, using vectored writes (one syscall for head +
/// chunk header + data + CRLF in the common case).
pub(crate) async fn write_all_vectored<W: AsyncWrite + Unpin + ?Sized>(
    io: &mut W,
    mut bufs: &mut [IoSlice<'_>],
) -> io::Result<()> {
    // Drop leading empties so we never issue a zero-length write.
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        let n = io.write_vectored(bufs).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut bufs, n);
    }
    Ok(())
}

/// Flush a transport (a no-op for TCP, needed for TLS buffering).
pub(crate) async fn flush<W: AsyncWrite + Unpin + ?Sized>(io: &mut W) -> io::Result<()> {
    io.flush().await
}

/// Run `fut` with a deadline, mapping expiry to `Error::Timeout(what)`.
pub(crate) async fn deadline<T>(
    limit: Duration,
    what: Timeout,
    fut: impl Future<Output = io::Result<T>>,
) -> Result<T, Error> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map_err(Error::from),
        Err(_) => Err(Error::Timeout(what)),
    }
}
