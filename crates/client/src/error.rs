use std::io;
use std::path::PathBuf;

use wirespeed_proto::ProtoError;

/// Everything a request can fail with. Messages are written for the person
/// at the terminal: what failed, where, and (for HTTP errors) what the server said.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: &'static str },
    #[error("cannot resolve {host}: {source}")]
    Resolve { host: String, source: io::Error },
    #[error("connection refused by {addr} (is the server running?)")]
    ConnectionRefused { addr: String },
    #[error("cannot connect to {addr}: {source}")]
    Connect { addr: String, source: io::Error },
    #[error("TLS handshake with {host} failed: {message}")]
    Tls { host: String, message: String },
    #[error("TLS setup: {0}")]
    TlsConfig(#[from] wirespeed_tls::TlsError),
    /// The server answered with an error status; `message` is its body (trimmed, bounded).
    #[error("server answered {status} {reason}{}", colon(message))]
    Status {
        status: u16,
        reason: String,
        message: String,
    },
    #[error("the server closed the connection without answering")]
    NoResponse,
    /// A redirect that is not followed (another origin, or too many).
    #[error("{0}")]
    Redirect(String),
    #[error("the connection closed mid-body: got {received} of {} bytes", expected.map_or("the".to_string(), |e| e.to_string()))]
    Truncated {
        received: u64,
        expected: Option<u64>,
    },
    #[error("invalid response from the server: {0}")]
    Proto(#[from] ProtoError),
    #[error("timed out {0}")]
    Timeout(&'static str),
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        source: io::Error,
    },
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: io::Error },
    /// The sha-256 of what we sent or received is not what the server says.
    #[error("{what} corrupted: sha-256 here is {ours}, the server's Repr-Digest says {theirs}")]
    DigestMismatch {
        what: &'static str,
        ours: String,
        theirs: String,
    },
    #[error("the request body gave {got} bytes but {announced} were announced (file changed while sending?)")]
    BodyLength { announced: u64, got: u64 },
}

fn colon(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

impl Error {
    /// The HTTP status for [`Error::Status`].
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub(crate) fn io(context: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Io { context, source }
    }
}
