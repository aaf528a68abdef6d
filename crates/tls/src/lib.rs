//! TLS for wirespeed, on rustls.
//!
//! - Server: [`server_from_files`] (PEM certificate chain + private key) and
//!   [`server_self_signed`] (a fresh certificate for `localhost`, `127.0.0.1`
//!   and `::1`, written to a file so clients can trust it with `--cacert`),
//!   or [`server_self_signed_kept`], which keeps the certificate and its key
//!   in a folder and reuses them while they are valid, so clients pin once.
//!   Both give an [`Acceptor`] that plugs into `wirespeed_net::Server::serve_with`
//!   (feature `server`; the client builds without the server).
//! - Client: [`client_config`] with the Mozilla roots shipped by
//!   `webpki-roots` (no system store is needed, so it works offline), extra
//!   roots from a `--cacert` file (whose certificates are also accepted when
//!   the server presents one of them as is, see [`PinnedOrWebPki`]), or
//!   [`ClientTls::insecure_accept_anything`]
//!   for tests (the verifier is named `DangerousAcceptAnyCertificate`).
//!
//! ALPN is `http/1.1` on both sides.
//!
//! # Crypto provider
//!
//! The default is **aws-lc-rs** (feature `aws-lc`, also rustls' own
//! default); `ring` is the alternative (`--no-default-features --features
//! ring`). aws-lc-rs was ahead in bulk throughput of full 16 KiB records in 5
//! of 6 runs, by 2–12% (`cargo run --release -p wirespeed-tls --features ring
//! --example tls_bulk -- 4096`; table in `bench/RESULTS.md`).
//! The price is build time (aws-lc-sys compiles a C library once); if it
//! ever fails to build somewhere, `ring` is a feature switch away.
//!
//! # Record size
//!
//! rustls fragments plaintext into records of at most 16 KiB (the TLS
//! maximum). Records are only full when writes are large: the server's file
//! path writes 1 MiB at a time and the client writes its 256 KiB buffer, so
//! bulk data goes out in full-size records and per-record overhead (header,
//! tag, one AEAD call) stays at ~0.2 %.
//!
//! # Failures
//!
//! A handshake that fails — garbage, a client that hangs up mid-handshake, a
//! plaintext HTTP request on the TLS port — is an `Err` from
//! [`Acceptor`]'s `accept`; the server logs it at debug level and drops only
//! that connection. A plaintext HTTP request additionally gets a short
//! `400` in plaintext saying the port speaks TLS, so a person with curl sees
//! why instead of an empty reply.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

mod pinned;
pub use pinned::{describe_tls_error, validity, PinnedCertError, PinnedOrWebPki};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
#[cfg(feature = "server")]
use wirespeed_net::{Accept, Transport};

/// The ALPN protocol both sides offer.
pub const ALPN_HTTP11: &[u8] = b"http/1.1";

/// File name of the certificate written by [`server_self_signed`].
pub const SELF_SIGNED_CERT_FILE: &str = "wirespeed-self-signed.pem";

/// File name of the private key kept by [`server_self_signed_kept`] (mode 0600).
pub const SELF_SIGNED_KEY_FILE: &str = "wirespeed-self-signed-key.pem";

/// The names a self-signed certificate is made for.
const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// A kept certificate this close to its end is replaced at start, so a
/// server started today does not stop working tomorrow.
const RENEW_BEFORE_SECS: i64 = 7 * 24 * 3600;

/// Everything that can go wrong while setting TLS up (the cause is the
/// `source`, not repeated in the message).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}")]
    Read { path: PathBuf, source: io::Error },
    #[error("writing {path}")]
    Write { path: PathBuf, source: io::Error },
    #[error("{path}: no PEM certificate found")]
    NoCertificate { path: PathBuf },
    #[error("{path}: no PEM private key found (PKCS#8, PKCS#1 or SEC1)")]
    NoPrivateKey { path: PathBuf },
    #[error("{path}: invalid certificate for a trust store")]
    BadCaCert {
        path: PathBuf,
        source: rustls::Error,
    },
    #[error("TLS configuration")]
    Rustls(#[from] rustls::Error),
    #[error("generating a self-signed certificate")]
    Generate(#[from] rcgen::Error),
}

/// The crypto provider this build uses (see the crate docs for the choice).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    #[cfg(feature = "aws-lc")]
    {
        Arc::new(rustls::crypto::aws_lc_rs::default_provider())
    }
    #[cfg(all(feature = "ring", not(feature = "aws-lc")))]
    {
        Arc::new(rustls::crypto::ring::default_provider())
    }
    #[cfg(not(any(feature = "aws-lc", feature = "ring")))]
    compile_error!("wirespeed-tls needs a crypto provider: enable feature `aws-lc` or `ring`");
}

/// The name of the provider in use, for logs and benchmarks.
pub fn provider_name() -> &'static str {
    if cfg!(feature = "aws-lc") {
        "aws-lc-rs"
    } else {
        "ring"
    }
}

// ---- server ---------------------------------------------------------------

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

/// The server side of a TLS connection: a `wirespeed_net::Transport` that
/// does not expose its socket (bytes on it are ciphertext), so file bodies use
/// the large-buffer read/encrypt/write loop instead of sendfile.
pub struct ServerTlsStream(tokio_rustls::server::TlsStream<TcpStream>);

impl ServerTlsStream {
    /// The negotiated ALPN protocol, if any.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.0.get_ref().1.alpn_protocol()
    }
}

#[cfg(feature = "server")]
impl Transport for ServerTlsStream {}

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

fn read_file(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Every certificate in a PEM file.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read_file(path)?;
    let certs = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The first private key in a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read_file(path)?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|source| TlsError::Read {
            path: path.to_path_buf(),
            source,
        })?
        .ok_or_else(|| TlsError::NoPrivateKey {
            path: path.to_path_buf(),
        })
}

/// A rustls server config for a certificate chain and key.
pub fn server_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<ServerConfig, TlsError> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
    Ok(config)
}

/// `serve --tls-cert FILE --tls-key FILE`: an acceptor from PEM files.
pub fn server_from_files(cert: &Path, key: &Path) -> Result<Acceptor, TlsError> {
    Ok(Acceptor::new(server_config(
        load_certs(cert)?,
        load_key(key)?,
    )?))
}

/// A freshly generated self-signed certificate.
pub struct SelfSigned {
    pub config: ServerConfig,
    /// Where the certificate (PEM) was written; pass it to clients as `--cacert`.
    pub cert_path: PathBuf,
    /// SHA-256 of the certificate (DER), `AB:CD:…` as `openssl x509 -fingerprint -sha256` prints it.
    pub fingerprint: String,
}

/// Generate a certificate for `localhost`, `127.0.0.1` and `::1`, write it
/// (not the key, which stays in memory) to `dir/wirespeed-self-signed.pem`.
pub fn self_signed(dir: &Path) -> Result<SelfSigned, TlsError> {
    let (cert, key) = generate()?;
    let cert_path = dir.join(SELF_SIGNED_CERT_FILE);
    write_atomically(dir, SELF_SIGNED_CERT_FILE, cert.pem().as_bytes(), 0o644)?;
    finish(cert.der().clone(), key.serialize_der(), cert_path)
}

fn generate() -> Result<(rcgen::Certificate, rcgen::KeyPair), TlsError> {
    let names = SELF_SIGNED_NAMES
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>();
    let rcgen::CertifiedKey { cert, key_pair } = rcgen::generate_simple_self_signed(names)?;
    Ok((cert, key_pair))
}

fn finish(
    der: CertificateDer<'static>,
    key_der: Vec<u8>,
    cert_path: PathBuf,
) -> Result<SelfSigned, TlsError> {
    let fingerprint = fingerprint(&der);
    let key = PrivateKeyDer::try_from(key_der)
        .map_err(|e| TlsError::Rustls(rustls::Error::General(e.to_string())))?;
    let config = server_config(vec![der], key)?;
    Ok(SelfSigned {
        config,
        cert_path,
        fingerprint,
    })
}

/// Write `dir/name` through a temporary file and a rename, so a reader never
/// sees half a file; `mode` applies from the first byte (keys: 0600).
fn write_atomically(dir: &Path, name: &str, data: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(name);
    let write_err = |source| TlsError::Write {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(write_err)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    opts.mode(mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = opts.open(&tmp).map_err(write_err)?;
    f.write_all(data).map_err(write_err)?;
    f.sync_all().map_err(write_err)?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(write_err)
}

/// What [`server_self_signed_kept`] did with the folder's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeptCert {
    /// The stored one was valid and is used again; valid until (UNIX seconds).
    Reused { not_after: i64 },
    /// A new one was made and stored, for this reason.
    Created(Renewal),
}

/// Why a new certificate was made instead of reusing the stored one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renewal {
    /// No certificate and key in the folder yet.
    Missing,
    /// Expired, not yet valid, or ending within a week (end, UNIX seconds).
    Expired { not_after: i64 },
    /// It does not name localhost, 127.0.0.1 and ::1.
    OtherNames,
    /// Unreadable, a key that does not match it, or a key others may read.
    Unusable(String),
}

impl std::fmt::Display for KeptCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeptCert::Reused { not_after } => write!(
                f,
                "reused the stored certificate (valid until {})",
                pinned::format_time(*not_after)
            ),
            KeptCert::Created(Renewal::Missing) => {
                f.write_str("made a new certificate (none stored yet)")
            }
            KeptCert::Created(Renewal::Expired { not_after }) => write!(
                f,
                "made a new certificate (the stored one ends {}); clients must trust the new one",
                pinned::format_time(*not_after)
            ),
            KeptCert::Created(Renewal::OtherNames) => f.write_str(
                "made a new certificate (the stored one does not name localhost, 127.0.0.1 and ::1); \
                 clients must trust the new one",
            ),
            KeptCert::Created(Renewal::Unusable(why)) => write!(
                f,
                "made a new certificate (the stored one is unusable: {why}); clients must trust the new one"
            ),
        }
    }
}

/// The certificate and key stored in `dir`, if they can serve now.
fn stored(dir: &Path, now: i64) -> Result<(SelfSigned, i64), Renewal> {
    let cert_path = dir.join(SELF_SIGNED_CERT_FILE);
    let key_path = dir.join(SELF_SIGNED_KEY_FILE);
    if !cert_path.exists() || !key_path.exists() {
        return Err(Renewal::Missing);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_path)
            .map_err(|e| Renewal::Unusable(e.to_string()))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(Renewal::Unusable(format!(
                "its key file is open to other users (mode {:o})",
                mode & 0o777
            )));
        }
    }
    let der = load_certs(&cert_path)
        .map_err(|e| Renewal::Unusable(e.to_string()))?
        .swap_remove(0);
    let (not_before, not_after) = validity(&der).map_err(|e| Renewal::Unusable(e.to_string()))?;
    if now < not_before || now + RENEW_BEFORE_SECS >= not_after {
        return Err(Renewal::Expired { not_after });
    }
    let cert =
        webpki::EndEntityCert::try_from(&der).map_err(|e| Renewal::Unusable(format!("{e:?}")))?;
    for name in SELF_SIGNED_NAMES {
        let name = ServerName::try_from(name).map_err(|e| Renewal::Unusable(e.to_string()))?;
        if cert.verify_is_valid_for_subject_name(&name).is_err() {
            return Err(Renewal::OtherNames);
        }
    }
    let key = load_key(&key_path).map_err(|e| Renewal::Unusable(e.to_string()))?;
    let fp = fingerprint(&der);
    // rustls refuses a key that does not belong to the certificate.
    let config = server_config(vec![der], key)
        .map_err(|e| Renewal::Unusable(format!("the key does not fit the certificate ({e})")))?;
    Ok((
        SelfSigned {
            config,
            cert_path,
            fingerprint: fp,
        },
        not_after,
    ))
}

/// Like [`self_signed`], but the certificate and its key (mode 0600) are
/// kept in `dir` and reused while valid for at least a week and naming
/// `localhost`, `127.0.0.1` and `::1`; otherwise a new pair replaces them.
/// Says which happened. Give it only a folder that only this user can write.
pub fn self_signed_kept(dir: &Path) -> Result<(SelfSigned, KeptCert), TlsError> {
    let now = UnixTime::now().as_secs() as i64;
    let why = match stored(dir, now) {
        Ok((s, not_after)) => return Ok((s, KeptCert::Reused { not_after })),
        Err(why) => why,
    };
    let (cert, key) = generate()?;
    let key_der = key.serialize_der();
    // The key first: a crash between the two writes leaves a pair that does
    // not match, which the next start replaces.
    write_atomically(
        dir,
        SELF_SIGNED_KEY_FILE,
        key.serialize_pem().as_bytes(),
        0o600,
    )?;
    write_atomically(dir, SELF_SIGNED_CERT_FILE, cert.pem().as_bytes(), 0o644)?;
    let s = finish(cert.der().clone(), key_der, dir.join(SELF_SIGNED_CERT_FILE))?;
    Ok((s, KeptCert::Created(why)))
}

/// `serve --tls-self-signed`: an acceptor, the certificate's path and its
/// SHA-256 fingerprint (print both so users can `--cacert` or compare).
pub fn server_self_signed(dir: &Path) -> Result<(Acceptor, PathBuf, String), TlsError> {
    let s = self_signed(dir)?;
    Ok((Acceptor::new(s.config), s.cert_path, s.fingerprint))
}

/// `serve --tls-self-signed --tls-cert-dir DIR`: [`self_signed_kept`] as an
/// acceptor, with the certificate's path, fingerprint and what was done.
pub fn server_self_signed_kept(
    dir: &Path,
) -> Result<(Acceptor, PathBuf, String, KeptCert), TlsError> {
    let (s, kept) = self_signed_kept(dir)?;
    Ok((Acceptor::new(s.config), s.cert_path, s.fingerprint, kept))
}

/// SHA-256 fingerprint of a DER certificate, uppercase hex pairs joined by `:`.
pub fn fingerprint(der: &[u8]) -> String {
    let digest = Sha256::digest(der);
    let mut out = String::with_capacity(95);
    for (i, b) in digest.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        let _ = write!(out, "{b:02X}");
    }
    out
}

// ---- client ---------------------------------------------------------------

/// How the client decides whom to trust.
#[derive(Debug, Clone, Default)]
pub struct ClientTls {
    /// Extra trusted certificates (PEM): `--cacert FILE`. Added to the
    /// built-in Mozilla roots.
    pub cacert: Option<PathBuf>,
    /// Accept any certificate (`--insecure`): encryption without
    /// authentication. For tests and throwaway setups only.
    pub insecure_accept_anything: bool,
}

/// A rustls client config: webpki roots (+ `cacert`), ALPN http/1.1.
pub fn client_config(opts: &ClientTls) -> Result<Arc<ClientConfig>, TlsError> {
    let builder =
        ClientConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let mut config = if opts.insecure_accept_anything {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(DangerousAcceptAnyCertificate(provider())))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        match &opts.cacert {
            None => builder.with_root_certificates(roots).with_no_client_auth(),
            Some(path) => {
                let certs = load_certs(path)?;
                for cert in &certs {
                    roots
                        .add(cert.clone())
                        .map_err(|source| TlsError::BadCaCert {
                            path: path.clone(),
                            source,
                        })?;
                }
                let verifier = PinnedOrWebPki::new(certs, Arc::new(roots), provider())?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(verifier))
                    .with_no_client_auth()
            }
        }
    };
    config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
    Ok(Arc::new(config))
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

/// A certificate verifier that accepts every certificate and every
/// signature. **Dangerous**: anyone on the path can impersonate the server.
/// Only `--insecure` installs it.
#[derive(Debug)]
pub struct DangerousAcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for DangerousAcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
