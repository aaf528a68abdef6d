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
//! The default is **ring** (feature `ring`); `aws-lc-rs` is the alternative
//! (`--features aws-lc`, which wins when both are on). aws-lc-rs used to be
//! the default for its small edge in bulk throughput of full 16 KiB records;
//! a later side-by-side run found the two level within the noise, both far
//! above any NIC this server meets, and aws-lc was a large share of the
//! binary while ring is a fraction of that (`bench/RESULTS.md`: "TLS
//! provider" and "Binary size"), so the shipped build uses ring, alone (the
//! S3 client's reqwest takes the same provider). Measure with
//! `cargo run --release -p wirespeed-tls --features aws-lc --example tls_bulk -- 4096`.
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

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

mod acceptor;
mod config;
mod pinned;
mod self_signed;
mod stream;

pub use acceptor::{server_from_files, Acceptor};
pub use config::{
    client_config, load_certs, load_key, server_config, ClientTls, DangerousAcceptAnyCertificate,
};
pub use pinned::{describe_tls_error, validity, PinnedCertError, PinnedOrWebPki};
pub use self_signed::{
    fingerprint, self_signed, self_signed_for, self_signed_kept, self_signed_kept_for,
    server_self_signed, server_self_signed_for, server_self_signed_kept, KeptCert, Renewal,
    SelfSigned, SELF_SIGNED_CERT_FILE, SELF_SIGNED_KEY_FILE,
};
pub use stream::{connect, ClientTlsStream, ServerTlsStream};

/// The ALPN protocol both sides offer.
pub const ALPN_HTTP11: &[u8] = b"http/1.1";

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
