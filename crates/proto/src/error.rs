//! Every way a message can be rejected, and the status it maps to.

/// A protocol error. Each variant maps to one status code ([`ProtoError::status`])
/// and a short human reason ([`ProtoError::reason`], also the `Display` text) that
/// the server puts in the response body. After any request error the server
/// answers and closes the connection: framing is no longer trustworthy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// The head is larger than `Limits::max_head_bytes` (431).
    #[error("request header section too large")]
    HeadTooLarge,
    /// More header fields than `Limits::max_headers` (431).
    #[error("too many header fields")]
    TooManyHeaders,
    /// The request target is longer than `Limits::max_target_len` (414).
    #[error("request target too long")]
    UriTooLong,
    /// An HTTP major version other than 1 (505); HTTP/1.2 to 1.9 are read as 1.1.
    #[error("HTTP version not supported")]
    VersionNotSupported,
    /// A syntactically malformed head; the string says what (400).
    #[error("malformed message head: {0}")]
    MalformedHead(&'static str),
    /// An HTTP/1.1 request without Host, or with more than one (400).
    #[error("missing or repeated Host header")]
    BadHost,
    /// A Host value that is not `host [":" port]` per RFC 3986 (400).
    #[error("invalid Host header")]
    InvalidHost,
    /// A Content-Length value that is not a plain decimal u64 (400).
    #[error("invalid Content-Length")]
    InvalidContentLength,
    /// Several Content-Length values that differ (400).
    #[error("conflicting Content-Length values")]
    ConflictingContentLength,
    /// Transfer-Encoding together with Content-Length (400, close).
    #[error("Transfer-Encoding together with Content-Length")]
    TransferEncodingWithContentLength,
    /// Transfer-Encoding in an HTTP/1.0 message (400).
    #[error("Transfer-Encoding in an HTTP/1.0 request")]
    TransferEncodingInHttp10,
    /// A transfer coding other than chunked (501).
    #[error("unsupported transfer coding")]
    UnknownTransferCoding,
    /// Transfer-Encoding whose final coding is not chunked, or chunked applied twice (400).
    #[error("chunked is not the final transfer coding")]
    ChunkedNotLast,
    /// A malformed chunk size line: empty, non-hex, overflow (400).
    #[error("invalid chunk size")]
    InvalidChunkSize,
    /// Chunk extensions longer than `Limits::max_chunk_ext_bytes` (400).
    #[error("chunk extension too long")]
    ChunkExtensionTooLong,
    /// A bare CR or bare LF, or missing CRLF, in chunked framing (400).
    #[error("invalid line ending in chunked body")]
    BadChunkLineEnding,
    /// Trailer section larger than the limits (431).
    #[error("trailer section too large")]
    TrailersTooLarge,
    /// A malformed trailer field (400).
    #[error("malformed trailer field")]
    MalformedTrailer,
    /// A body larger than the configured maximum (413). Raised by the I/O layer.
    #[error("request body too large")]
    BodyTooLarge,
}

impl ProtoError {
    /// The HTTP status this error is answered with.
    pub fn status(&self) -> u16 {
        use ProtoError::*;
        match self {
            HeadTooLarge | TooManyHeaders | TrailersTooLarge => 431,
            UriTooLong => 414,
            VersionNotSupported => 505,
            UnknownTransferCoding => 501,
            BodyTooLarge => 413,
            MalformedHead(_)
            | BadHost
            | InvalidHost
            | InvalidContentLength
            | ConflictingContentLength
            | TransferEncodingWithContentLength
            | TransferEncodingInHttp10
            | ChunkedNotLast
            | InvalidChunkSize
            | ChunkExtensionTooLong
            | BadChunkLineEnding
            | MalformedTrailer => 400,
        }
    }

    /// Short reason used in the response body (same as `Display`).
    pub fn reason(&self) -> String {
        self.to_string()
    }
}
