use std::io;
use wirespeed_proto::ProtoError;

use crate::observe::Timeout;

/// What a handler (or the body reader) can fail with. Each error maps to the
/// status it is answered with, if no response has been started yet.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A deliberate HTTP error answer: status and a short message for the body.
    #[error("{message}")]
    Status { status: u16, message: String },
    /// The request violated the protocol (framing, limits).
    #[error(transparent)]
    Proto(#[from] ProtoError),
    /// The peer did not send or accept bytes in time.
    #[error("timed out {0}")]
    Timeout(Timeout),
    /// The peer closed the connection before the request body ended.
    #[error("connection closed before the request body ended")]
    UnexpectedEof,
    /// Any other I/O failure (socket or storage).
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
}

impl Error {
    /// An error answered with `status` and `message`.
    pub fn status(status: u16, message: impl Into<String>) -> Self {
        Error::Status {
            status,
            message: message.into(),
        }
    }

    /// The status this error is answered with.
    pub fn http_status(&self) -> u16 {
        match self {
            Error::Status { status, .. } => *status,
            Error::Proto(e) => e.status(),
            Error::Timeout(_) => 408,
            Error::UnexpectedEof => 400,
            Error::Io(_) => 500,
        }
    }

    /// Errors that mean the connection itself is unusable (nothing to answer).
    pub fn is_connection_lost(&self) -> bool {
        match self {
            Error::UnexpectedEof => true,
            Error::Io(e) => matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::UnexpectedEof
            ),
            _ => false,
        }
    }
}
