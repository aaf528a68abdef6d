//! The two ends of a TLS connection as tokio streams: [`ServerTlsStream`]
//! (a `wirespeed_net::Transport` with feature `server`) and
//! [`ClientTlsStream`], which [`connect`] makes.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
#[cfg(feature = "server")]
use wirespeed_net::Transport;

/// The server side of a TLS connection: a `wirespeed_net::Transport` that
/// does not expose its socket (bytes on it are ciphertext), so file bodies use
/// the large-buffer read/encrypt/write loop instead of sendfile.
pub struct ServerTlsStream(pub(crate) tokio_rustls::server::TlsStream<TcpStream>);

impl ServerTlsStream {
    /// The negotiated ALPN protocol, if any.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.0.get_ref().1.alpn_protocol()
    }
}

#[cfg(feature = "server")]
impl Transport for ServerTlsStream {
    /// Watched only (whether the client closed it); never read or written
    /// past the TLS stream.
    fn socket(&self) -> Option<&TcpStream> {
        Some(self.0.get_ref().0)
    }
}

macro_rules! delegate_io {
    ($t:ty) => {
        impl AsyncRead for $t {
            fn poll_read(
                mut self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                Pin::new(&mut self.0).poll_read(cx, buf)
            }
        }
        impl AsyncWrite for $t {
            fn poll_write(
                mut self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                Pin::new(&mut self.0).poll_write(cx, buf)
            }
            fn poll_write_vectored(
                mut self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
            }
            fn is_write_vectored(&self) -> bool {
                self.0.is_write_vectored()
            }
            fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Pin::new(&mut self.0).poll_flush(cx)
            }
            fn poll_shutdown(
                mut self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<io::Result<()>> {
                Pin::new(&mut self.0).poll_shutdown(cx)
            }
        }
    };
}
delegate_io!(ServerTlsStream);

/// The client side of a TLS connection.
pub struct ClientTlsStream(tokio_rustls::client::TlsStream<TcpStream>);
delegate_io!(ClientTlsStream);

impl ClientTlsStream {
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.0.get_ref().1.alpn_protocol()
    }
}

/// The TCP socket under the TLS (a client watches it for an early answer
/// while its request body goes out).
impl std::os::fd::AsFd for ClientTlsStream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.0.get_ref().0.as_fd()
    }
}

/// Connect TLS over `tcp` to `host` (a DNS name or an IP literal).
pub async fn connect(
    config: Arc<ClientConfig>,
    host: &str,
    tcp: TcpStream,
) -> io::Result<ClientTlsStream> {
    let name = ServerName::try_from(
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
    )
    .map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid TLS server name {host:?}: {e}"),
        )
    })?;
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await?;
    Ok(ClientTlsStream(stream))
}

impl ClientTlsStream {
    /// Send close_notify and FIN (best effort).
    pub async fn close(mut self) {
        let _ = self.0.shutdown().await;
    }
}
