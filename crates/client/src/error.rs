use std::io;
use std::path::PathBuf;

use wirespeed_proto::ProtoError;

/// Everything a request can fail with. Messages are written for the person
/// at the terminal: what failed, where, and (for HTTP errors) what the server said.
/// An underlying error is the `source`, never repeated in the message, so a
/// chain printed with `{:#}` names each cause once.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: &'static str },
    #[error("cannot resolve {host}")]
    Resolve { host: String, source: io::Error },
    #[error("connection refused by {addr} (is the server running?)")]
    ConnectionRefused { addr: String },
    #[error("cannot connect to {addr}")]
    Connect { addr: String, source: io::Error },
    #[error("TLS handshake with {host} failed: {message}{}", tls_hint(message))]
    Tls { host: String, message: String },
    #[error("TLS setup")]
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
    #[error("invalid response from the server")]
    Proto(#[from] ProtoError),
    #[error("timed out {0}")]
    Timeout(&'static str),
    #[error("{context}")]
    Io {
        context: &'static str,
        source: io::Error,
    },
    #[error("{}", path.display())]
    File { path: PathBuf, source: io::Error },
    /// The sha-256 of what we sent or received is not what the server says.
    #[error("{what} corrupted: sha-256 here is {ours}, the server's Repr-Digest says {theirs}")]
    DigestMismatch {
        what: &'static str,
        ours: String,
        theirs: String,
    },
    /// `--no-clobber`: the server kept its file (412 to `If-None-Match: *`).
    #[error("{url} exists, not replaced")]
    Exists { url: String },
    /// `ls` of a URL that is a file.
    #[error("{url} is a file, not a folder; use `wirespeed get` to download it")]
    NotAFolder { url: String },
    /// A folder answer that is not a JSON listing (another kind of server).
    #[error("{url} did not answer a JSON listing (Content-Type {content_type:?}); is it a wirespeed server?")]
    NotAListing { url: String, content_type: String },
    /// A resumable upload the server did not set up as the protocol says.
    #[error("{0}")]
    Resumable(String),
    /// A remote tree larger than the walk's limits (a hostile or huge listing).
    #[error("the remote folder has more than {limit} {what}; nothing was transferred")]
    WalkLimit { what: &'static str, limit: u64 },
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

/// What to do about a certificate the client does not trust.
fn tls_hint(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    if m.contains("cert") && !m.contains("--cacert") {
        " (if you trust this server, pass its certificate or CA with --cacert FILE, or -k to \
         skip verification)"
    } else {
        ""
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
