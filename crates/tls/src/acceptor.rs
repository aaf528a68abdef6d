//! The server side of the handshake: [`Acceptor`] (its `wirespeed_net::Accept`
//! impl is behind feature `server`) and [`server_from_files`].

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use tokio::net::TcpStream;
#[cfg(feature = "server")]
use wirespeed_net::{Accept, Transport};

use crate::config::{load_certs, load_key, server_config};
use crate::stream::ServerTlsStream;
use crate::{TlsError, ALPN_HTTP11};

/// A TLS acceptor for `wirespeed_net::Server::serve_with`.
#[derive(Clone)]
pub struct Acceptor {
    inner: tokio_rustls::TlsAcceptor,
    config: Arc<ServerConfig>,
}

impl Acceptor {
    /// Wrap a rustls server config (ALPN is set to http/1.1 if empty).
    pub fn new(mut config: ServerConfig) -> Self {
        if config.alpn_protocols.is_empty() {
            config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
        }
        let config = Arc::new(config);
        Acceptor {
            inner: tokio_rustls::TlsAcceptor::from(config.clone()),
            config,
        }
    }

    pub fn config(&self) -> &Arc<ServerConfig> {
        &self.config
    }

    /// Handshake on `tcp`. Also usable without the server (tests, tools).
    pub async fn handshake(&self, tcp: TcpStream) -> io::Result<ServerTlsStream> {
        refuse_plaintext_http(&tcp).await?;
        let stream = self.inner.accept(tcp).await?;
        Ok(ServerTlsStream(stream))
    }
}

#[cfg(feature = "server")]
impl Accept for Acceptor {
    async fn accept(&self, tcp: TcpStream) -> io::Result<Box<dyn Transport>> {
        Ok(Box::new(self.handshake(tcp).await?))
    }
}

/// A TLS record starts with content type 22 (handshake). A request line starts
/// with an uppercase method token: answer it in plaintext so the person sees
/// why, then fail the handshake (the server logs it at debug and moves on).
async fn refuse_plaintext_http(tcp: &TcpStream) -> io::Result<()> {
    let mut first = [0u8; 1];
    let n = tcp.peek(&mut first).await?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "client closed before the TLS handshake",
        ));
    }
    if first[0].is_ascii_uppercase() {
        const MSG: &[u8] =
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
Content-Length: 44\r\nConnection: close\r\n\r\nThis port speaks TLS: use https:// instead.\n";
        // `peek` left the request unread; write through a shared reference
        // (try_write) so we do not need to own the stream here. Best effort:
        // a full socket buffer just means no explanation.
        let _ = tcp.try_write(MSG);
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "plaintext HTTP request on the TLS port (answered 400)",
        ));
    }
    Ok(())
}

/// `serve --tls-cert FILE --tls-key FILE`: an acceptor from PEM files.
pub fn server_from_files(cert: &Path, key: &Path) -> Result<Acceptor, TlsError> {
    Ok(Acceptor::new(server_config(
        load_certs(cert)?,
        load_key(key)?,
    )?))
}
