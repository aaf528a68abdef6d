//! Request and response heads. Parsing sits on httparse; this module adds the
//! limits, the version rule (1.0/1.1 only), strict field checks, and owns the
//! parsed head so the I/O layer can reuse its read buffer.
//!
//! SKELETON: the public API below is the contract `wirespeed-net` codes against.
//! Bodies marked `todo!()` are to be implemented (issue 2, §1).

use crate::{Limits, ProtoError};
use std::ops::Range;

/// HTTP version of a message. Only 1.0 and 1.1 are accepted (others → 505).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

/// A parsed request head. It owns one copy of the head bytes and keeps ranges
/// into it, so parsing costs one allocation for the bytes and one for the index.
#[derive(Debug, Clone)]
pub struct RequestHead {
    raw: Vec<u8>,
    method: Range<usize>,
    target: Range<usize>,
    version: Version,
    headers: Vec<(Range<usize>, Range<usize>)>,
}

impl RequestHead {
    /// The method token, e.g. "GET" (case-sensitive per RFC 9110).
    pub fn method(&self) -> &str {
        todo!()
    }
    /// The request target exactly as sent (origin-form, absolute-form, `*`).
    pub fn target(&self) -> &str {
        todo!()
    }
    pub fn version(&self) -> Version {
        self.version
    }
    /// All header fields in order, names as sent.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.headers.iter().map(|_| todo!())
    }
    /// The first value of a header, name matched case-insensitively.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        let _ = name;
        todo!()
    }
    /// Every value of a header (repeated fields), name matched case-insensitively.
    pub fn header_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        let _ = name;
        std::iter::empty()
    }
    /// Whether any `Connection` field lists `token` (case-insensitive, comma lists).
    pub fn connection_has(&self, token: &str) -> bool {
        let _ = token;
        todo!()
    }
    /// Whether the connection may stay open after this request: HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    pub fn keep_alive(&self) -> bool {
        todo!()
    }
    /// `Expect: 100-continue` present (HTTP/1.1 only; case-insensitive).
    pub fn expects_continue(&self) -> bool {
        todo!()
    }
    /// Total size of the head in bytes (including the final CRLFCRLF).
    pub fn len(&self) -> usize {
        self.raw.len()
    }
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

/// Parse a request head from the start of `buf`.
///
/// - `Ok(Some((head, n)))`: a complete head occupying `buf[..n]`.
/// - `Ok(None)`: incomplete; read more. Limits are enforced on partial input
///   too: a partial head already past `max_head_bytes` is `HeadTooLarge`, a
///   request line whose target is already past `max_target_len` is `UriTooLong`.
/// - `Err(e)`: reject with `e.status()`.
///
/// Rules (issue 2 §1): version 1.0/1.1 else 505; header count > max → 431;
/// obs-fold, whitespace before the colon, invalid name bytes, NUL/CR/LF in
/// values → 400; HTTP/1.1 without exactly one Host → 400. Leading empty lines
/// before the request line (RFC 9112 §2.2) are skipped.
pub fn parse_request_head(
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<(RequestHead, usize)>, ProtoError> {
    let _ = (buf, limits);
    todo!()
}

/// A parsed response head (used by the client).
#[derive(Debug, Clone)]
pub struct ResponseHead {
    pub version: Version,
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, Vec<u8>)>,
}

impl ResponseHead {
    /// The first value of a header, name matched case-insensitively.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
    /// Whether the server lets the connection stay open after this response.
    pub fn keep_alive(&self) -> bool {
        todo!()
    }
}

/// Parse a response head from the start of `buf` (same contract as
/// [`parse_request_head`]; the client uses it).
pub fn parse_response_head(
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<(ResponseHead, usize)>, ProtoError> {
    let _ = (buf, limits);
    todo!()
}

/// Append a response head (status line, headers, empty line) to `out`.
/// `headers` are written as given; the caller supplies framing headers.
pub fn write_response_head(
    version: Version,
    status: u16,
    headers: &[(&str, &[u8])],
    out: &mut Vec<u8>,
) {
    let _ = (version, status, headers, out);
    todo!()
}

/// Append a request head (request line, headers, empty line) to `out`.
pub fn write_request_head(method: &str, target: &str, headers: &[(&str, &[u8])], out: &mut Vec<u8>) {
    let _ = (method, target, headers, out);
    todo!()
}

/// The standard reason phrase for a status code ("OK", "Not Found", …; "" if unknown).
pub fn reason_phrase(status: u16) -> &'static str {
    let _ = status;
    todo!()
}
