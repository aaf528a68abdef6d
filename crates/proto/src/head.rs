//! Request and response heads. Parsing sits on httparse; this module adds the
//! limits, the version rule (HTTP/1.x only), strict field checks, and owns the
//! parsed head so the I/O layer can reuse its read buffer.
//!
//! What httparse already rejects with its default (strict) `ParserConfig`, and
//! what this module checks on top:
//!
//! | rule | who |
//! |---|---|
//! | invalid method / field-name bytes, empty field name | httparse |
//! | whitespace between field name and colon | httparse (strict config) |
//! | obs-fold (a line starting with SP/HTAB) | httparse (strict config) |
//! | NUL, CTLs, DEL, bare CR inside values | httparse |
//! | bare LF as a line terminator | here (httparse accepts it) |
//! | non-ASCII bytes in the request target | here (httparse accepts obs-text) |
//! | HTTP/1.2 … HTTP/1.9 in a request read as HTTP/1.1 (RFC 9110 §6.2) | here (httparse knows only 1.0/1.1) |
//! | HTTP/x.y with a major version other than 1 → 505 | here (httparse says "invalid version") |
//! | multi-digit versions (`HTTP/1.10`, `HTTP/11.0`) → 400: RFC 9112 §2.3 has one DIGIT each | here |
//! | limits, also on partial input | here |
//! | exactly one Host in HTTP/1.1, at most one in 1.0 | here |
//! | Host value is `host [":" port]` (RFC 9112 §3.2; empty allowed) → else 400 | here ([`crate::host`]) |

use crate::abnf::{is_tchar, list_has, trim_ows};
use crate::{Limits, ProtoError};
use std::mem::MaybeUninit;
use std::ops::Range;

mod response;
pub use response::{parse_response_head, ResponseHead};

/// HTTP version of a message. Only major version 1 is accepted (others → 505);
/// a request's minor version above 1 is read as 1.1.
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
    /// The method when it is one of the common ones: routes ask for it a
    /// few dozen times per request, and a `&'static str` needs no UTF-8
    /// check each time (about 1,000 instructions of a 31,000-instruction
    /// small GET; bench/RESULTS.md).
    known_method: Option<&'static str>,
    method: Range<usize>,
    target: Range<usize>,
    /// Where the target's `?` is in `raw`, if it has one: found once here,
    /// as routes ask for the path about six times per request.
    query_at: Option<usize>,
    version: Version,
    headers: Vec<(Range<usize>, Range<usize>)>,
    /// A bit per (length, first letter) of every field name present
    /// ([`name_bit`]): most lookups are for absent fields (a small GET asks
    /// for about 14, nearly all absent), answered here without a scan.
    name_bits: u64,
}

/// The bit of [`RequestHead::name_bits`] a field name sets (case-insensitive).
fn name_bit(name: &[u8]) -> u64 {
    let first = name.first().map_or(0, u8::to_ascii_lowercase);
    1 << ((name.len() * 7 + usize::from(first)) % 64)
}

/// The common methods as static text (case-sensitive, RFC 9110 §9.1).
fn known_method(m: &[u8]) -> Option<&'static str> {
    Some(match m {
        b"GET" => "GET",
        b"HEAD" => "HEAD",
        b"PUT" => "PUT",
        b"POST" => "POST",
        b"DELETE" => "DELETE",
        b"OPTIONS" => "OPTIONS",
        b"PATCH" => "PATCH",
        b"PROPFIND" => "PROPFIND",
        _ => return None,
    })
}

/// `raw[range]` as text. Every range handed to this was checked to be ASCII
/// while parsing, so the fallback is unreachable; it exists so that no input
/// can make an accessor panic.
fn ascii<'a>(raw: &'a [u8], range: &Range<usize>) -> &'a str {
    raw.get(range.clone())
        .and_then(|b| std::str::from_utf8(b).ok())
        .unwrap_or("")
}

/// `raw[range]` of the request target as text, without a UTF-8 check.
///
/// Measured: the target was read about eight times per small GET, and its
/// checks cost ~900 of the request's ~24,000 instructions (bench/RESULTS.md,
/// small-GET profile).
fn target_text(raw: &[u8], range: Range<usize>) -> &str {
    let bytes = raw.get(range).unwrap_or(&[]);
    debug_assert!(bytes.is_ascii());
    // SAFETY: `parse_request_head`, the only place a `RequestHead` is made,
    // refuses a head whose target holds a non-ASCII byte; `raw` is never
    // changed after it, and every range read here lies within the target.
    // ASCII is UTF-8. (`head::tests::target_parts_are_ascii_and_rejoin`.)
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

impl RequestHead {
    /// The method token, e.g. "GET" (case-sensitive per RFC 9110).
    pub fn method(&self) -> &str {
        match self.known_method {
            Some(m) => m,
            None => ascii(&self.raw, &self.method),
        }
    }
    /// The request target exactly as sent (origin-form, absolute-form, `*`).
    /// Always ASCII: non-ASCII bytes are rejected while parsing.
    pub fn target(&self) -> &str {
        target_text(&self.raw, self.target.clone())
    }
    /// The target's path: everything before the first `?` (still
    /// percent-encoded).
    pub fn path(&self) -> &str {
        target_text(
            &self.raw,
            self.target.start..self.query_at.unwrap_or(self.target.end),
        )
    }
    /// The query after the first `?`, if any (still percent-encoded).
    pub fn query(&self) -> Option<&str> {
        self.query_at
            .map(|q| target_text(&self.raw, q + 1..self.target.end))
    }
    pub fn version(&self) -> Version {
        self.version
    }
    /// All header fields in order, names as sent.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.headers
            .iter()
            .map(|(n, v)| (ascii(&self.raw, n), self.raw.get(v.clone()).unwrap_or(&[])))
    }
    /// The first value of a header, name matched case-insensitively.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        if self.name_bits & name_bit(name.as_bytes()) == 0 {
            return None;
        }
        self.headers.iter().find_map(|(n, v)| {
            let field = self.raw.get(n.clone())?;
            field
                .eq_ignore_ascii_case(name.as_bytes())
                .then(|| self.raw.get(v.clone()).unwrap_or(&[]))
        })
    }
    /// Every value of a header (repeated fields), name matched case-insensitively.
    pub fn header_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.fields(name)
    }
    /// `header_all`, cloneable (the framing rules look at a list twice).
    pub(crate) fn fields<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a [u8]> + Clone + 'a {
        let present = self.name_bits & name_bit(name.as_bytes()) != 0;
        let headers = if present { &self.headers[..] } else { &[] };
        headers.iter().filter_map(move |(n, v)| {
            let field = self.raw.get(n.clone())?;
            field
                .eq_ignore_ascii_case(name.as_bytes())
                .then(|| self.raw.get(v.clone()).unwrap_or(&[]))
        })
    }
    /// Whether any `Connection` field lists `token` (case-insensitive, comma lists).
    pub fn connection_has(&self, token: &str) -> bool {
        list_has(self.fields("connection"), token)
    }
    /// Whether the connection may stay open after this request: HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    pub fn keep_alive(&self) -> bool {
        keep_alive(self.version, self.fields("connection"))
    }
    /// `Expect: 100-continue` present (HTTP/1.1 only; case-insensitive).
    pub fn expects_continue(&self) -> bool {
        self.version == Version::Http11
            && self
                .header_all("expect")
                .any(|v| trim_ows(v).eq_ignore_ascii_case(b"100-continue"))
    }
    /// Total size of the head in bytes (including the final CRLFCRLF).
    /// Empty lines skipped before the request line are not counted; the
    /// consumed length returned by [`parse_request_head`] includes them.
    pub fn len(&self) -> usize {
        self.raw.len()
    }
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

/// The persistence rule of RFC 9112 §9.3, given the `Connection` field values.
fn keep_alive<'a>(version: Version, connection: impl Iterator<Item = &'a [u8]> + Clone) -> bool {
    if list_has(connection.clone(), "close") {
        return false;
    }
    match version {
        Version::Http11 => true,
        Version::Http10 => list_has(connection, "keep-alive"),
    }
}

/// Strict parser settings. Every leniency defaults to off; spelled out so a
/// future httparse default change cannot loosen us silently.
fn parser_config() -> httparse::ParserConfig {
    let mut c = httparse::ParserConfig::default();
    c.allow_spaces_after_header_name_in_responses(false)
        .allow_obsolete_multiline_headers_in_responses(false)
        .allow_multiple_spaces_in_request_line_delimiters(false)
        .allow_multiple_spaces_in_response_status_delimiters(false)
        .allow_space_before_first_header_name(false)
        .ignore_invalid_headers_in_responses(false)
        .ignore_invalid_headers_in_requests(false);
    c
}

/// Header slots on the stack for the common limit; larger limits use the heap.
const STACK_HEADERS: usize = 128;

/// Run `f` with an uninitialised header array of `max_headers + 1` slots: one
/// more than allowed, so that httparse's `TooManyHeaders` means "over the
/// limit" rather than "over our array".
fn with_header_slots<'b, R>(
    max_headers: usize,
    f: impl for<'h> FnOnce(&'h mut [MaybeUninit<httparse::Header<'b>>]) -> R,
) -> R {
    let n = max_headers.saturating_add(1);
    if n <= STACK_HEADERS {
        let mut slots = [const { MaybeUninit::<httparse::Header<'b>>::uninit() }; STACK_HEADERS];
        f(&mut slots[..n])
    } else {
        let mut slots = Vec::with_capacity(n);
        slots.resize_with(n, MaybeUninit::uninit);
        f(&mut slots)
    }
}

/// Number of leading CRLF pairs (empty lines before the start line, which
/// RFC 9112 §2.2 says a server SHOULD ignore). Bare LFs are not skipped here:
/// they are left for the parser and then rejected as bare LF.
fn leading_empty_lines(buf: &[u8]) -> usize {
    let mut i = 0;
    while buf.len() >= i + 2 && buf[i] == b'\r' && buf[i + 1] == b'\n' {
        i += 2;
    }
    i
}

/// RFC 9112 allows a recipient to accept a bare LF as a line terminator, but
/// a front end that does not would see different field boundaries (the
/// "missing CR between headers" smuggling vector), so we reject it.
fn has_bare_lf(head: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', head).any(|i| i == 0 || head[i - 1] != b'\r')
}

/// What the version token at the start of `rest` (ending at SP, CR, LF or the
/// end of input) says, once httparse has refused it.
enum VersionToken {
    /// "HTTP/d.d" with digits other than 1.0/1.1 → 505.
    Unsupported,
    /// Input ends inside something that could still become "HTTP/d.d".
    Incomplete,
    /// Anything else → 400.
    Garbage,
}

fn classify_version(rest: &[u8]) -> VersionToken {
    const PATTERN: &[u8] = b"HTTP/d.d";
    let end = rest.iter().position(|&b| matches!(b, b' ' | b'\r' | b'\n'));
    let token = &rest[..end.unwrap_or(rest.len())];
    let fits = token.len() <= PATTERN.len()
        && token.iter().zip(PATTERN).all(|(&b, &p)| match p {
            b'd' => b.is_ascii_digit(),
            _ => b == p,
        });
    match (fits, end) {
        (false, _) => VersionToken::Garbage,
        (true, None) => VersionToken::Incomplete,
        (true, Some(_)) if token.len() == PATTERN.len() => VersionToken::Unsupported,
        (true, Some(_)) => VersionToken::Garbage,
    }
}

/// Offset of the version token in a request line ("method SP target SP
/// version"), if the line has its two spaces yet.
fn request_version_at(window: &[u8]) -> Option<usize> {
    let line_end = window
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(window.len());
    let line = &window[..line_end];
    let a = memchr::memchr(b' ', line)?;
    memchr::memchr(b' ', &line[a + 1..]).map(|b| a + 1 + b + 1)
}

/// Index of the minor digit in "HTTP/1.d".
const MINOR_DIGIT: usize = 7;

/// "HTTP/1.2" to "HTTP/1.9" (possibly followed by more bytes, which the
/// parser then judges): the minor versions RFC 9110 §6.2 has us read as 1.1.
/// "HTTP/1.10" is not among them: RFC 9112 §2.3 allows one digit, so 400.
fn newer_minor_of_1(rest: &[u8]) -> bool {
    rest.starts_with(b"HTTP/1.")
        && rest
            .get(MINOR_DIGIT)
            .is_some_and(|d| (b'2'..=b'9').contains(d))
}

/// What httparse found in a request head, as ranges into the parsed bytes
/// (so the caller may parse a copy and still index the same offsets).
type RequestRanges = (
    usize,
    Option<Range<usize>>,
    Option<Range<usize>>,
    Option<u8>,
    Option<Vec<(Range<usize>, Range<usize>)>>,
);

fn parse_request_ranges(
    config: &httparse::ParserConfig,
    window: &[u8],
    limits: &Limits,
) -> Result<Option<RequestRanges>, httparse::Error> {
    with_header_slots(limits.max_headers, |slots| {
        let mut req = httparse::Request::new(&mut []);
        match config.parse_request_with_uninit_headers(&mut req, window, slots) {
            Ok(httparse::Status::Complete(n)) => {
                let method = req.method.and_then(|m| offset_in(window, m.as_bytes()));
                let target = req.path.and_then(|p| offset_in(window, p.as_bytes()));
                let version = req.version;
                let headers: Option<Vec<_>> = req
                    .headers
                    .iter()
                    .map(|h| {
                        Some((
                            offset_in(window, h.name.as_bytes())?,
                            offset_in(window, h.value)?,
                        ))
                    })
                    .collect();
                Ok(Some((n, method, target, version, headers)))
            }
            Ok(httparse::Status::Partial) => Ok(None),
            Err(e) => Err(e),
        }
    })
}

/// Length of the request target as far as it goes in `buf` (possibly cut
/// off by the end of input). Counted only where httparse would get that far:
/// after a valid method token, over bytes httparse accepts in a target.
fn request_line_target_len(buf: &[u8]) -> usize {
    let Some(sp) = memchr::memchr(b' ', buf) else {
        return 0;
    };
    if sp == 0 || !buf[..sp].iter().all(|&b| is_tchar(b)) {
        return 0;
    }
    buf[sp + 1..]
        .iter()
        .take_while(|&&b| matches!(b, 0x21..=0x7E | 0x80..=0xFF))
        .count()
}

/// Complete field lines in a partial head (lines after the start line).
/// The CR and LF bytes before the start line are empty lines httparse skips
/// (bare LFs included; the whole head then fails on its own terms), not
/// field lines.
fn partial_field_lines(buf: &[u8]) -> usize {
    let start = buf
        .iter()
        .position(|&b| !matches!(b, b'\r' | b'\n'))
        .unwrap_or(buf.len());
    memchr::memchr_iter(b'\n', &buf[start..])
        .count()
        .saturating_sub(1)
}

/// The shortest prefix of `window` with more field lines than `max_headers`
/// (as [`partial_field_lines`] counts them), if the window is that long: a
/// message whose error lies beyond it was already over the limit there.
fn over_limit_prefix(window: &[u8], max_headers: usize) -> Option<&[u8]> {
    let start = window.iter().position(|&b| !matches!(b, b'\r' | b'\n'))?;
    let line_ends = memchr::memchr_iter(b'\n', &window[start..]);
    let end = line_ends.into_iter().nth(max_headers.checked_add(1)?)?;
    Some(&window[..start + end + 1])
}

fn map_httparse_error(e: httparse::Error) -> ProtoError {
    use httparse::Error as E;
    match e {
        E::TooManyHeaders => ProtoError::TooManyHeaders,
        E::HeaderName => ProtoError::MalformedHead("invalid header field name"),
        E::HeaderValue => ProtoError::MalformedHead("invalid header field value"),
        E::NewLine => ProtoError::MalformedHead("invalid line ending"),
        E::Status => ProtoError::MalformedHead("invalid status line"),
        E::Token => ProtoError::MalformedHead("invalid token in start line"),
        E::Version => ProtoError::MalformedHead("invalid HTTP version"),
    }
}

/// Where `part` lies inside `base`. httparse hands out sub-slices of the
/// buffer it parsed, so the address difference is the offset; checked, so
/// that a slice from anywhere else (say, a static string in some future
/// httparse) becomes an error instead of a wrong range.
fn offset_in(base: &[u8], part: &[u8]) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(base.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= base.len()).then_some(start..end)
}

/// The part of `buf` a head may occupy: leading empty lines skipped (RFC 9112
/// §2.2), and never more than `max_head_bytes` after them, since a head that
/// has not ended by then is too large whatever follows. Returns the skipped
/// count and the window. The skipped lines count against the limit too: an
/// endless run of them is a head that never ends.
fn head_window<'b>(buf: &'b [u8], limits: &Limits) -> Result<(usize, &'b [u8]), ProtoError> {
    let skip = leading_empty_lines(buf);
    if skip > limits.max_head_bytes {
        return Err(ProtoError::HeadTooLarge);
    }
    let rest = &buf[skip..];
    Ok((skip, &rest[..rest.len().min(limits.max_head_bytes)]))
}

/// Parse a request head from the start of `buf`.
///
/// - `Ok(Some((head, n)))`: a complete head occupying `buf[..n]`.
/// - `Ok(None)`: incomplete; read more. Limits are enforced on partial input
///   too: a partial head already past `max_head_bytes` is `HeadTooLarge`, a
///   request line whose target is already past `max_target_len` is `UriTooLong`.
/// - `Err(e)`: reject with `e.status()`.
///
/// Rules: HTTP/1.0 and 1.1, with 1.2–1.9 read as 1.1, other major versions
/// → 505; header count > max → 431; obs-fold, whitespace before the colon,
/// invalid name bytes, NUL/CR/LF in values → 400; HTTP/1.1 without exactly
/// one Host, or a Host value that is not `host [":" port]` → 400. Leading empty lines
/// before the request line (RFC 9112 §2.2) are skipped. Bare LF line endings
/// and non-ASCII bytes in the target → 400.
///
/// The result depends only on the bytes seen: a prefix of a message gives
/// `None` or the same error as the whole message (tests check this).
pub fn parse_request_head(
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<(RequestHead, usize)>, ProtoError> {
    let (skip, window) = head_window(buf, limits)?;
    let config = parser_config();
    let mut outcome = parse_request_ranges(&config, window, limits);
    // RFC 9110 §6.2: a higher minor version of a major version we implement
    // is processed as the highest minor we know. httparse only knows 1.0 and
    // 1.1, so parse a copy whose minor digit reads 1; only these rare
    // requests pay for the copy.
    let rewritten;
    let window = match (&outcome, request_version_at(window)) {
        (Err(httparse::Error::Version), Some(at)) if newer_minor_of_1(&window[at..]) => {
            let mut copy = window.to_vec();
            copy[at + MINOR_DIGIT] = b'1';
            rewritten = copy;
            outcome = parse_request_ranges(&config, &rewritten, limits);
            &rewritten[..]
        }
        _ => window,
    };

    // 414 outranks anything found later in the head, on every path, so that
    // a prefix of a message and the whole message get the same answer.
    let target_len = match &outcome {
        Ok(Some((_, _, Some(t), _, _))) => t.len(),
        _ => request_line_target_len(window),
    };
    if target_len > limits.max_target_len {
        return Err(ProtoError::UriTooLong);
    }
    let partial_checks = || -> Result<Option<(RequestHead, usize)>, ProtoError> {
        if buf.len() - skip > limits.max_head_bytes {
            return Err(ProtoError::HeadTooLarge);
        }
        if partial_field_lines(window) > limits.max_headers {
            return Err(ProtoError::TooManyHeaders);
        }
        Ok(None)
    };

    let (n, method, target, version, headers) = match outcome {
        Ok(Some(parts)) => parts,
        Ok(None) => return partial_checks(),
        Err(httparse::Error::Version) => {
            let Some(at) = request_version_at(window) else {
                return Err(ProtoError::MalformedHead("invalid HTTP version"));
            };
            return match classify_version(&window[at..]) {
                VersionToken::Unsupported => Err(ProtoError::VersionNotSupported),
                VersionToken::Incomplete => partial_checks(),
                VersionToken::Garbage => Err(ProtoError::MalformedHead("invalid HTTP version")),
            };
        }
        Err(e) => {
            // A prefix holding too many field lines is 431, so the whole is too.
            let over = over_limit_prefix(window, limits.max_headers);
            if over.is_some_and(|p| matches!(parse_request_ranges(&config, p, limits), Ok(None))) {
                return Err(ProtoError::TooManyHeaders);
            }
            return Err(map_httparse_error(e));
        }
    };

    let (Some(method), Some(target), Some(v), Some(headers)) = (method, target, version, headers)
    else {
        return Err(ProtoError::MalformedHead("unparseable request head"));
    };
    // The slot array has room for one field more than allowed.
    if headers.len() > limits.max_headers {
        return Err(ProtoError::TooManyHeaders);
    }
    let head = &window[..n];
    if has_bare_lf(head) {
        return Err(ProtoError::MalformedHead("bare LF line ending"));
    }
    if !head.get(target.clone()).is_some_and(|t| t.is_ascii()) {
        return Err(ProtoError::MalformedHead(
            "non-ASCII byte in request target",
        ));
    }
    let version = if v == 0 {
        Version::Http10
    } else {
        Version::Http11
    };
    let hosts = headers
        .iter()
        .filter(|(name, _)| {
            head.get(name.clone())
                .is_some_and(|n| n.eq_ignore_ascii_case(b"host"))
        })
        .count();
    // RFC 9112 §3.2: 1.1 needs exactly one; more than one is always ambiguous.
    if hosts > 1 || (hosts == 0 && version == Version::Http11) {
        return Err(ProtoError::BadHost);
    }
    // RFC 9112 §3.2: a Host value that is not `host [":" port]` → 400.
    let host_value = headers.iter().find_map(|(name, value)| {
        head.get(name.clone())
            .filter(|n| n.eq_ignore_ascii_case(b"host"))
            .and_then(|_| head.get(value.clone()))
    });
    if host_value.is_some_and(|v| !crate::host::is_valid_host(trim_ows(v))) {
        return Err(ProtoError::InvalidHost);
    }

    let known_method = head.get(method.clone()).and_then(known_method);
    let query_at = head
        .get(target.clone())
        .and_then(|t| memchr::memchr(b'?', t))
        .map(|i| target.start + i);
    let name_bits = headers.iter().fold(0, |bits, (n, _)| {
        bits | head.get(n.clone()).map_or(0, name_bit)
    });
    let parsed = RequestHead {
        name_bits,
        raw: head.to_vec(),
        known_method,
        method,
        target,
        query_at,
        version,
        headers,
    };
    Ok(Some((parsed, skip + n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::*;

    fn parse(raw: &[u8]) -> Result<Option<(RequestHead, usize)>, ProtoError> {
        parse_request_head(raw, &Limits::default())
    }

    fn status(raw: &[u8]) -> u16 {
        match parse(raw) {
            Ok(Some(_)) => 200,
            Ok(None) => 0,
            Err(e) => e.status(),
        }
    }

    proptest::proptest! {
        /// The edge of `target_text`'s unchecked conversion: whatever bytes
        /// the target holds, a head is only made when they are ASCII, and
        /// its path and query are the target's parts around the first `?`.
        #[test]
        fn target_parts_are_ascii_and_rejoin(
            target in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::num::u8::ANY,
                    proptest::sample::select(b"/?a%=&#".to_vec())
                ],
                1..40,
            )
        ) {
            let mut raw = b"GET ".to_vec();
            raw.extend_from_slice(&target);
            raw.extend_from_slice(b" HTTP/1.1\r\nHost: a\r\n\r\n");
            if let Ok(Some((head, _))) = parse(&raw) {
                let t = head.target();
                proptest::prop_assert!(t.is_ascii());
                proptest::prop_assert_eq!(t.as_bytes(), &target[..]);
                match t.split_once('?') {
                    Some((p, q)) => {
                        proptest::prop_assert_eq!(head.path(), p);
                        proptest::prop_assert_eq!(head.query(), Some(q));
                    }
                    None => {
                        proptest::prop_assert_eq!(head.path(), t);
                        proptest::prop_assert_eq!(head.query(), None);
                    }
                }
            } else {
                // A whole head is answered: made, or refused, never awaited.
                proptest::prop_assert!(parse(&raw).is_err());
            }
        }
    }

    proptest::proptest! {
        /// The `name_bits` shortcut never hides a field: every lookup,
        /// in any case, finds what a plain scan finds.
        #[test]
        fn header_lookups_match_a_scan(
            names in proptest::collection::vec("[A-Za-z][A-Za-z0-9-]{0,20}", 0..12),
            asked in proptest::collection::vec("[A-Za-z][A-Za-z0-9-]{0,20}", 0..12),
        ) {
            let mut raw = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
            for (i, n) in names.iter().enumerate() {
                if n.eq_ignore_ascii_case("host") || n.eq_ignore_ascii_case("content-length")
                    || n.eq_ignore_ascii_case("transfer-encoding") {
                    continue;
                }
                raw.extend_from_slice(format!("{n}: v{i}\r\n").as_bytes());
            }
            raw.extend_from_slice(b"\r\n");
            let Ok(Some((head, _))) = parse(&raw) else {
                return Err(proptest::test_runner::TestCaseError::fail("head refused"));
            };
            let scan = |name: &str| {
                head.headers().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
            };
            for name in names.iter().chain(&asked) {
                for variant in [name.clone(), name.to_ascii_uppercase(), name.to_ascii_lowercase()] {
                    proptest::prop_assert_eq!(head.header(&variant), scan(&variant));
                    proptest::prop_assert_eq!(
                        head.header_all(&variant).count(),
                        head.headers().filter(|(n, _)| n.eq_ignore_ascii_case(&variant)).count()
                    );
                }
            }
        }
    }

    #[test]
    fn a_target_with_non_ascii_bytes_is_refused() {
        for t in [&b"/caf\xc3\xa9"[..], b"/\x80", b"/a?\xff"] {
            let mut raw = b"GET ".to_vec();
            raw.extend_from_slice(t);
            raw.extend_from_slice(b" HTTP/1.1\r\nHost: a\r\n\r\n");
            assert_eq!(status(&raw), 400, "{t:?}");
        }
    }

    #[test]
    fn parses_a_simple_request() {
        let raw = b"GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nX-Empty:\r\n\r\nBODY";
        let (head, n) = parse(raw).unwrap().unwrap();
        assert_eq!(n, raw.len() - 4);
        assert_eq!(head.len(), n);
        assert_eq!(head.method(), "GET");
        assert_eq!(head.target(), "/index.html?q=1");
        assert_eq!(head.path(), "/index.html");
        assert_eq!(head.query(), Some("q=1"));
        assert_eq!(head.version(), Version::Http11);
        assert_eq!(head.header("host"), Some(&b"example.com"[..]));
        assert_eq!(head.header("ACCEPT"), Some(&b"*/*"[..]));
        assert_eq!(head.header("x-empty"), Some(&b""[..]));
        assert_eq!(head.header("missing"), None);
        let names: Vec<_> = head.headers().map(|(n, _)| n).collect();
        assert_eq!(names, ["Host", "Accept", "X-Empty"]);
    }

    #[test]
    fn partial_head_needs_more() {
        let raw = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        for i in 0..raw.len() {
            assert!(parse(&raw[..i]).unwrap().is_none(), "prefix {i}");
        }
    }

    #[test]
    fn major_version_1_only() {
        assert_eq!(status(b"GET / HTTP/1.0\r\n\r\n"), 200);
        for v in ["HTTP/2.0", "HTTP/0.9", "HTTP/0.1", "HTTP/3.0", "HTTP/5.6"] {
            let raw = format!("GET / {v}\r\nHost: a\r\n\r\n");
            assert_eq!(
                parse(raw.as_bytes()).unwrap_err(),
                ProtoError::VersionNotSupported,
                "{v}"
            );
        }
        for v in [
            "HTTP/1.10",
            "HTTP/1.20",
            "HTTP/1.2x",
            "HTTP/11",
            "http/1.1",
            "HTTP/1.x",
            "HTTPS/1.1",
            "HTTP/1.1x",
            "IHTTP/1.0",
            "HTTP/2",
        ] {
            let raw = format!("GET / {v}\r\nHost: a\r\n\r\n");
            assert_eq!(status(raw.as_bytes()), 400, "{v}");
        }
        // A version cut off mid-way is not decided yet.
        assert!(parse(b"GET / HTTP/2").unwrap().is_none());
        assert!(parse(b"GET / HTTP/2.").unwrap().is_none());
        assert!(parse(b"GET / HTTP/2.0").unwrap().is_none());
        assert_eq!(
            parse(b"GET / HTTP/2.0\r").unwrap_err(),
            ProtoError::VersionNotSupported
        );
    }

    #[test]
    fn newer_minor_versions_are_read_as_1_1() {
        for d in b'2'..=b'9' {
            let raw = format!("GET /x HTTP/1.{}\r\nHost: a\r\n\r\n", d as char);
            let (head, n) = parse(raw.as_bytes()).unwrap().unwrap();
            assert_eq!(n, raw.len());
            assert_eq!(head.version(), Version::Http11, "{raw}");
            assert_eq!(head.target(), "/x");
            assert_eq!(head.header("host"), Some(&b"a"[..]));
            assert!(head.keep_alive());
        }
        // Read as 1.1, so Host is required as in 1.1.
        assert_eq!(
            parse(b"GET / HTTP/1.2\r\n\r\n").unwrap_err(),
            ProtoError::BadHost
        );
        // Every prefix is still undecided.
        let raw = b"GET / HTTP/1.5\r\nHost: a\r\n\r\n";
        for i in 0..raw.len() {
            assert!(parse(&raw[..i]).unwrap().is_none(), "prefix {i}");
        }
        // Leading empty lines shift the offsets; the rewrite follows them.
        let raw = b"\r\nPOST / HTTP/1.9\r\nHost: a\r\nContent-Length: 0\r\n\r\n";
        let (head, n) = parse(raw).unwrap().unwrap();
        assert_eq!((head.method(), n), ("POST", raw.len()));
    }

    #[test]
    fn host_value_must_be_host_and_port() {
        for h in ["a", "example.com:8080", "[::1]:80", "127.0.0.1", "", "a.b "] {
            let raw = format!("GET / HTTP/1.1\r\nHost: {h}\r\n\r\n");
            assert!(parse(raw.as_bytes()).unwrap().is_some(), "{h:?}");
        }
        for h in ["a b", "a/b", "user@a", "a:b", "[::1", "a:80:80", "\"a\""] {
            let raw = format!("GET / HTTP/1.1\r\nHost: {h}\r\n\r\n");
            assert_eq!(
                parse(raw.as_bytes()).unwrap_err(),
                ProtoError::InvalidHost,
                "{h:?}"
            );
            assert_eq!(status(raw.as_bytes()), 400);
            // HTTP/1.0 does not need Host, but one that is sent must be valid.
            let raw = format!("GET / HTTP/1.0\r\nhost: {h}\r\n\r\n");
            assert_eq!(status(raw.as_bytes()), 400, "{h:?}");
        }
    }

    #[test]
    fn response_version_rule() {
        let l = Limits::default();
        assert_eq!(
            parse_response_head(b"HTTP/2.0 200 OK\r\n\r\n", &l).unwrap_err(),
            ProtoError::VersionNotSupported
        );
        assert_eq!(
            parse_response_head(b"HTTQ/1.1 200 OK\r\n\r\n", &l)
                .unwrap_err()
                .status(),
            400
        );
        assert!(parse_response_head(b"HTTP/2", &l).unwrap().is_none());
    }

    /// Found by the `request_head` fuzz target: bare LFs before the start
    /// line were counted as field lines, so a prefix of them was
    /// `TooManyHeaders` while the whole message was a different 400.
    #[test]
    fn leading_bare_lfs_are_not_field_lines() {
        let l = Limits::default();
        let lfs = b"\n".repeat(l.max_headers + 10);
        assert!(parse(&lfs).unwrap().is_none());
        let mut whole = lfs.clone();
        whole.extend_from_slice(b"HTTh)3.1\r\n\r\n");
        let err = parse(&whole).unwrap_err();
        assert_ne!(err, ProtoError::TooManyHeaders);
        assert!(parse_response_head(&lfs, &l).unwrap().is_none());
        // Real field lines still count.
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        many.extend(b"a: b\r\n".repeat(l.max_headers + 1));
        assert_eq!(parse(&many).unwrap_err(), ProtoError::TooManyHeaders);
    }

    /// Found by the split-invariance property: field lines past the limit
    /// followed by a malformed one were 431 as a prefix but 400 whole.
    #[test]
    fn too_many_field_lines_outrank_a_later_malformed_line() {
        let l = Limits {
            max_headers: 3,
            ..Limits::default()
        };
        let whole = b"GET / HTTP/1.1\r\nX: y\r\nX: y\r\nHost: a\r\nX: y\r\nA\r\n";
        let prefix = &whole[..whole.len() - 3];
        assert_eq!(
            parse_request_head(prefix, &l).unwrap_err(),
            ProtoError::TooManyHeaders
        );
        assert_eq!(
            parse_request_head(whole, &l).unwrap_err(),
            ProtoError::TooManyHeaders
        );
        // A malformed line within the limit stays a 400, whatever follows.
        let early = b"GET / HTTP/1.1\r\nA\r\nX: y\r\nX: y\r\nX: y\r\nX: y\r\n";
        assert!(matches!(
            parse_request_head(early, &l),
            Err(ProtoError::MalformedHead(_))
        ));
        let resp = b"HTTP/1.1 200 OK\r\nX: y\r\nX: y\r\nX: y\r\nX: y\r\nA\r\n";
        assert_eq!(
            parse_response_head(resp, &l).unwrap_err(),
            ProtoError::TooManyHeaders
        );
    }

    #[test]
    fn leading_empty_lines_are_skipped() {
        let raw = b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
        let (head, n) = parse(raw).unwrap().unwrap();
        assert_eq!(n, raw.len());
        assert_eq!(head.len(), raw.len() - 4);
        assert_eq!(head.method(), "GET");
        // ...but not endlessly.
        let many = b"\r\n".repeat(Limits::default().max_head_bytes);
        assert_eq!(parse(&many).unwrap_err(), ProtoError::HeadTooLarge);
    }

    #[test]
    fn host_rules() {
        assert_eq!(
            parse(b"GET / HTTP/1.1\r\n\r\n").unwrap_err(),
            ProtoError::BadHost
        );
        assert_eq!(
            parse(b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n").unwrap_err(),
            ProtoError::BadHost
        );
        assert_eq!(
            parse(b"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n").unwrap_err(),
            ProtoError::BadHost
        );
        assert_eq!(status(b"GET / HTTP/1.0\r\n\r\n"), 200);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHOST: a\r\n\r\n"), 200);
    }

    #[test]
    fn head_size_limit_complete_and_partial() {
        let limits = Limits {
            max_head_bytes: 64,
            ..Limits::default()
        };
        let pad = "x".repeat(40);
        let raw = format!("GET / HTTP/1.1\r\nHost: a\r\nX: {pad}\r\n\r\n");
        assert!(raw.len() > 64);
        assert_eq!(
            parse_request_head(raw.as_bytes(), &limits).unwrap_err(),
            ProtoError::HeadTooLarge
        );
        // Partial, already past the limit: an error, not "need more".
        assert_eq!(
            parse_request_head(&raw.as_bytes()[..65], &limits).unwrap_err(),
            ProtoError::HeadTooLarge
        );
        assert!(parse_request_head(&raw.as_bytes()[..64], &limits)
            .unwrap()
            .is_none());
        // Exactly at the limit is fine.
        let exact = format!(
            "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
            "x".repeat(64 - 32)
        );
        assert_eq!(exact.len(), 64);
        assert!(parse_request_head(exact.as_bytes(), &limits)
            .unwrap()
            .is_some());
    }

    #[test]
    fn header_count_limit() {
        let limits = Limits {
            max_headers: 3,
            ..Limits::default()
        };
        let ok = b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";
        assert!(parse_request_head(ok, &limits).unwrap().is_some());
        let over = b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
        let e = parse_request_head(over, &limits).unwrap_err();
        assert_eq!((e.clone(), e.status()), (ProtoError::TooManyHeaders, 431));
        // Partial input already over the count.
        assert_eq!(
            parse_request_head(&over[..over.len() - 2], &limits).unwrap_err(),
            ProtoError::TooManyHeaders
        );
        // Default limit (100) and a heap-allocated slot array (> 128).
        let mut raw = String::from("GET / HTTP/1.1\r\nHost: a\r\n");
        for i in 0..100 {
            raw.push_str(&format!("X-{i}: v\r\n"));
        }
        raw.push_str("\r\n");
        assert_eq!(
            parse(raw.as_bytes()).unwrap_err(),
            ProtoError::TooManyHeaders
        );
        let big = Limits {
            max_headers: 500,
            ..Limits::default()
        };
        assert!(parse_request_head(raw.as_bytes(), &big).unwrap().is_some());
    }

    #[test]
    fn target_length_limit_complete_and_partial() {
        let limits = Limits {
            max_target_len: 10,
            ..Limits::default()
        };
        assert!(
            parse_request_head(b"GET /123456789 HTTP/1.1\r\nHost: a\r\n\r\n", &limits)
                .unwrap()
                .is_some()
        );
        let long = b"GET /1234567890 HTTP/1.1\r\nHost: a\r\n\r\n";
        let e = parse_request_head(long, &limits).unwrap_err();
        assert_eq!((e.clone(), e.status()), (ProtoError::UriTooLong, 414));
        // Partial: the target alone is already too long.
        assert_eq!(
            parse_request_head(&long[..15], &limits).unwrap_err(),
            ProtoError::UriTooLong
        );
        assert!(parse_request_head(&long[..14], &limits).unwrap().is_none());
    }

    #[test]
    fn field_syntax_is_strict() {
        let cases: &[&[u8]] = &[
            // obs-fold
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n",
            // whitespace between name and colon
            b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX\t: a\r\n\r\n",
            // invalid name bytes
            b"GET / HTTP/1.1\r\nHost: a\r\nFo@: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX\x01: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\n: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: a\r\n\r\n",
            // NUL / CR / LF / CTL in values
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\nb: c\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x0cb\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fb\r\n\r\n",
            // bare LF line endings
            b"GET / HTTP/1.1\nHost: a\n\n",
            b"GET / HTTP/1.1\r\nHost: a\n\r\n",
            b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
            // space before the first field, in the request line
            b"GET / HTTP/1.1\r\n Host: a\r\n\r\n",
            b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n",
            // non-ASCII target
            b"GET /\xce\xb4 HTTP/1.1\r\nHost: a\r\n\r\n",
            // invalid method
            b"G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
        ];
        for &raw in cases {
            assert_eq!(status(raw), 400, "{:?}", String::from_utf8_lossy(raw));
        }
        // obs-text in a value is allowed (RFC 9110 §5.5).
        assert_eq!(
            status(b"GET / HTTP/1.1\r\nHost: a\r\nX: D\xc3\xbcsseldorf\r\n\r\n"),
            200
        );
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\tb\r\n\r\n"), 200);
    }

    #[test]
    fn keep_alive_rules() {
        let ka = |raw: &[u8]| parse(raw).unwrap().unwrap().0.keep_alive();
        assert!(ka(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert!(!ka(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        ));
        assert!(!ka(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, CLOSE\r\n\r\n"
        ));
        assert!(!ka(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: x\r\nConnection: close \r\n\r\n"
        ));
        assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!ka(
            b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"
        ));
        let head = parse(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: a, b ,c\r\n\r\n")
            .unwrap()
            .unwrap()
            .0;
        assert!(head.connection_has("B") && head.connection_has("c") && !head.connection_has("d"));
    }

    #[test]
    fn expects_continue_rules() {
        let ec = |raw: &[u8]| parse(raw).unwrap().unwrap().0.expects_continue();
        assert!(ec(
            b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n"
        ));
        assert!(ec(
            b"PUT / HTTP/1.1\r\nHost: a\r\nexpect: 100-Continue\r\n\r\n"
        ));
        assert!(!ec(b"PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n"));
        assert!(!ec(b"PUT / HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert!(!ec(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n"));
    }

    #[test]
    fn header_all_and_order() {
        let head = parse(b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nY: 2\r\nx: 3\r\n\r\n")
            .unwrap()
            .unwrap()
            .0;
        let xs: Vec<_> = head.header_all("X").collect();
        assert_eq!(xs, [&b"1"[..], b"3"]);
        assert_eq!(head.header("x"), Some(&b"1"[..]));
    }

    #[test]
    fn response_head_parsing() {
        let l = Limits::default();
        let raw = b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc";
        let (r, n) = parse_response_head(raw, &l).unwrap().unwrap();
        assert_eq!(n, raw.len() - 3);
        assert_eq!(
            (r.version, r.status, r.reason.as_str()),
            (Version::Http11, 404, "Not Found")
        );
        assert_eq!(r.header("content-length"), Some(&b"3"[..]));
        assert!(!r.keep_alive());
        let (r, _) = parse_response_head(b"HTTP/1.0 200 OK\r\n\r\n", &l)
            .unwrap()
            .unwrap();
        assert!(!r.keep_alive());
        let (r, _) = parse_response_head(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", &l)
            .unwrap()
            .unwrap();
        assert!(r.keep_alive());
        let (r, _) = parse_response_head(b"HTTP/1.1 200 OK\r\n\r\n", &l)
            .unwrap()
            .unwrap();
        assert!(r.keep_alive());
        assert!(parse_response_head(b"HTTP/1.1 200 OK\r\nX: 1\r\n", &l)
            .unwrap()
            .is_none());
        assert_eq!(
            parse_response_head(b"HTTP/1.1 200 OK\nX: 1\n\n", &l)
                .unwrap_err()
                .status(),
            400
        );
        assert_eq!(
            parse_response_head(b"HTTP/1.1 2000 OK\r\n\r\n", &l)
                .unwrap_err()
                .status(),
            400
        );
        let small = Limits {
            max_head_bytes: 16,
            ..Limits::default()
        };
        assert_eq!(
            parse_response_head(b"HTTP/1.1 200 OK\r\nX: 1\r\n", &small).unwrap_err(),
            ProtoError::HeadTooLarge
        );
    }

    #[test]
    fn writers_round_trip() {
        let mut out = Vec::new();
        write_response_head(
            Version::Http11,
            200,
            &[("Content-Length", b"5"), ("X-A", b"b")],
            &mut out,
        );
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\n"
        );
        let (r, n) = parse_response_head(&out, &Limits::default())
            .unwrap()
            .unwrap();
        assert_eq!((n, r.status, r.reason.as_str()), (out.len(), 200, "OK"));

        out.clear();
        write_response_head(Version::Http10, 599, &[], &mut out);
        assert_eq!(out, b"HTTP/1.0 599 \r\n\r\n");
        assert!(parse_response_head(&out, &Limits::default())
            .unwrap()
            .is_some());

        out.clear();
        write_request_head(
            "PUT",
            "/x?y=1",
            &[("Host", b"h"), ("Content-Length", b"0")],
            &mut out,
        );
        assert_eq!(
            out,
            b"PUT /x?y=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
        );
        let (h, _) = parse(&out).unwrap().unwrap();
        assert_eq!((h.method(), h.target()), ("PUT", "/x?y=1"));
    }

    #[test]
    fn writers_cannot_split_messages() {
        let mut out = Vec::new();
        write_response_head(
            Version::Http11,
            302,
            &[("Location", b"/a\r\nSet-Cookie: x=1\0")],
            &mut out,
        );
        assert_eq!(
            out,
            b"HTTP/1.1 302 Found\r\nLocation: /a  Set-Cookie: x=1 \r\n\r\n"
        );
    }

    #[test]
    fn reason_phrases() {
        assert_eq!(reason_phrase(200), "OK");
        assert_eq!(reason_phrase(404), "Not Found");
        assert_eq!(reason_phrase(431), "Request Header Fields Too Large");
        assert_eq!(reason_phrase(505), "HTTP Version Not Supported");
        assert_eq!(reason_phrase(799), "");
    }

    #[test]
    fn every_error_maps_to_its_status() {
        use ProtoError::*;
        let l = Limits::default();
        let cases: &[(&[u8], ProtoError, u16)] = &[
            (b"GET / HTTP/1.1\r\n\r\n", BadHost, 400),
            (
                b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
                VersionNotSupported,
                505,
            ),
        ];
        for (raw, want, code) in cases {
            let e = parse_request_head(raw, &l).unwrap_err();
            assert_eq!((&e, e.status()), (want, *code));
            assert_eq!(e.reason(), e.to_string());
        }
    }
}
