//! Message body length (RFC 9112 §6.3) and the strict Content-Length parser
//! (RFC 9110 §8.6) — the seed 001 fix.
//!
//! SKELETON: signatures are the contract; bodies to be implemented.

use crate::{ProtoError, RequestHead, ResponseHead};

/// How a message body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body (Content-Length: 0, or none given on a request).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Until the connection closes (responses only).
    UntilClose,
}

/// Parse one Content-Length field value: ASCII digits only (no sign, no inner
/// whitespace, no hex, not empty), overflow-checked into u64. Optional
/// whitespace around the value (OWS, space/tab) is allowed, as are lists of
/// identical values ("5, 5"); differing values → `ConflictingContentLength`;
/// anything else → `InvalidContentLength`.
pub fn parse_content_length(value: &[u8]) -> Result<u64, ProtoError> {
    let _ = value;
    todo!()
}

/// Decide a request's body framing from its head (RFC 9112 §6.3):
/// TE + CL → `TransferEncodingWithContentLength`; TE in 1.0 →
/// `TransferEncodingInHttp10`; TE whose last coding is not chunked, or chunked
/// twice → `ChunkedNotLast`; an unknown coding → `UnknownTransferCoding`;
/// repeated CL fields must agree. No CL and no TE → `Empty`.
pub fn request_framing(head: &RequestHead) -> Result<BodyFraming, ProtoError> {
    let _ = head;
    todo!()
}

/// Decide a response's body framing (client side). `request_method` is the
/// method of the request it answers: HEAD, 1xx, 204 and 304 have no body;
/// a 2xx answer to CONNECT has none either; otherwise chunked, Content-Length,
/// or read until close.
pub fn response_framing(request_method: &str, head: &ResponseHead) -> Result<BodyFraming, ProtoError> {
    let _ = (request_method, head);
    todo!()
}
