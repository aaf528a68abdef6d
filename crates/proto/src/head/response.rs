//! Response heads, read by the client: the same limits and strict checks
//! as a request head (the helpers are its parent's), with a status line.

use super::{
    classify_version, has_bare_lf, head_window, keep_alive, map_httparse_error, over_limit_prefix,
    parser_config, partial_field_lines, with_header_slots, Version, VersionToken,
};
use crate::abnf::list_has;
use crate::{Limits, ProtoError};

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
    /// Every value of a header (repeated fields), name matched case-insensitively.
    pub fn header_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + Clone + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
    /// Whether any `Connection` field lists `token` (case-insensitive, comma lists).
    pub fn connection_has(&self, token: &str) -> bool {
        list_has(self.header_all("connection"), token)
    }
    /// Whether the server lets the connection stay open after this response:
    /// HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
    /// `Connection: keep-alive`. (Whether the body framing allows reuse, e.g.
    /// read-until-close, is the framing decision's business.)
    pub fn keep_alive(&self) -> bool {
        keep_alive(self.version, self.header_all("connection"))
    }
}

/// Parse a response head from the start of `buf` (same contract as
/// [`parse_request_head`](super::parse_request_head); the client uses it).
/// Leading empty lines are skipped.
pub fn parse_response_head(
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<(ResponseHead, usize)>, ProtoError> {
    let (skip, window) = head_window(buf, limits)?;
    let config = parser_config();

    let parse = |bytes| {
        with_header_slots(limits.max_headers, |slots| {
            let mut resp = httparse::Response::new(&mut []);
            match config.parse_response_with_uninit_headers(&mut resp, bytes, slots) {
                Ok(httparse::Status::Complete(n)) => {
                    let headers: Vec<(String, Vec<u8>)> = resp
                        .headers
                        .iter()
                        .map(|h| (h.name.to_owned(), h.value.to_vec()))
                        .collect();
                    Ok(Some((
                        n,
                        resp.version,
                        resp.code,
                        resp.reason.unwrap_or("").to_owned(),
                        headers,
                    )))
                }
                Ok(httparse::Status::Partial) => Ok(None),
                Err(e) => Err(e),
            }
        })
    };
    let outcome = parse(window);
    let partial = || {
        if buf.len() - skip > limits.max_head_bytes {
            Err(ProtoError::HeadTooLarge)
        } else if partial_field_lines(window) > limits.max_headers {
            Err(ProtoError::TooManyHeaders)
        } else {
            Ok(None)
        }
    };
    let (n, version, code, reason, headers) = match outcome {
        Ok(Some(parts)) => parts,
        Ok(None) => return partial(),
        Err(httparse::Error::Version) => {
            return match classify_version(window) {
                VersionToken::Unsupported => Err(ProtoError::VersionNotSupported),
                VersionToken::Incomplete => partial(),
                VersionToken::Garbage => Err(ProtoError::MalformedHead("invalid HTTP version")),
            }
        }
        Err(e) => {
            // As for requests: a prefix over the field-line limit decides.
            let over = over_limit_prefix(window, limits.max_headers);
            if over.is_some_and(|p| matches!(parse(p), Ok(None))) {
                return Err(ProtoError::TooManyHeaders);
            }
            return Err(map_httparse_error(e));
        }
    };
    if headers.len() > limits.max_headers {
        return Err(ProtoError::TooManyHeaders);
    }
    let (Some(v), Some(status)) = (version, code) else {
        return Err(ProtoError::MalformedHead("incomplete status line"));
    };
    if has_bare_lf(&window[..n]) {
        return Err(ProtoError::MalformedHead("bare LF line ending"));
    }
    let version = if v == 0 {
        Version::Http10
    } else {
        Version::Http11
    };
    Ok(Some((
        ResponseHead {
            version,
            status,
            reason,
            headers,
        },
        skip + n,
    )))
}
