//! Sans-IO HTTP/1.1 for wirespeed: bytes in, decisions out.
//!
//! Nothing here touches a socket or an executor. The I/O layer (`wirespeed-net`)
//! feeds byte slices in and acts on what comes back, so every rule below can be
//! tested exhaustively with plain slices.
//!
//! - [`head`]: parsing request and response heads (httparse underneath) with limits.
//! - [`write`]: writing heads (status/request lines, sanitized fields, reason phrases).
//! - [`framing`]: the body-length decision of RFC 9112 §6.3 with a dedicated,
//!   strict Content-Length parser (seed 001) and Transfer-Encoding rules.
//! - [`framing`] also decides how a server frames each response
//!   ([`server_response_framing`]) and which `Connection` field it carries.
//! - [`body`]: the one body decoder (Content-Length, chunked, until close)
//!   shared by the server's request bodies and the client's responses.
//! - [`chunked`]: a streaming chunked decoder and the encoder's chunk framing.
//! - `abnf` (private): the RFC grammar rules the parsers share.
//! - [`error`]: every rejection, with the status and reason it maps to.

mod abnf;
pub mod body;
pub mod chunked;
pub mod error;
pub mod forwarded;
pub mod framing;
pub mod head;
pub mod host;
pub mod write;

pub use body::BodyDecoder;
pub use chunked::{chunk_head, ChunkHead, ChunkedDecoder, Decoded, CHUNK_END, LAST_CHUNK};
pub use error::ProtoError;
pub use framing::{
    connection_field, parse_content_length, request_framing, response_framing,
    server_response_framing, status_has_no_body, BodyEncoding, BodyFraming, BodySize, FramingField,
    ResponseFraming,
};
pub use head::{parse_request_head, parse_response_head, RequestHead, ResponseHead, Version};
pub use host::is_valid_host;
pub use write::{reason_phrase, write_request_head, write_response_head};

/// Limits applied while parsing. Defaults (like nginx and hyper): a 16 KiB
/// head, 100 header fields, an 8 KiB request target.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Maximum bytes of a request/response head including the empty line → 431.
    pub max_head_bytes: usize,
    /// Maximum number of header fields → 431.
    pub max_headers: usize,
    /// Maximum length of the request target → 414.
    pub max_target_len: usize,
    /// Maximum bytes of one chunk's extensions (`;name=value…`) → 400.
    pub max_chunk_ext_bytes: usize,
    /// Maximum total bytes of a chunked body's trailer section → 431.
    pub max_trailer_bytes: usize,
    /// Maximum number of trailer fields → 431.
    pub max_trailer_fields: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 16 * 1024,
            max_headers: 100,
            max_target_len: 8 * 1024,
            max_chunk_ext_bytes: 1024,
            max_trailer_bytes: 8 * 1024,
            max_trailer_fields: 32,
        }
    }
}
