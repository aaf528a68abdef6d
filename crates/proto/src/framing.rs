//! Message body length (RFC 9112 §6.3) and the strict Content-Length parser
//! (RFC 9110 §8.6) — the seed 001 fix.
//!
//! Every ambiguous framing is an error, never a guess: two lengths that
//! differ, a length next to Transfer-Encoding, a coding list we cannot
//! decode. Those are the inputs request smuggling is made of.

use crate::abnf::{is_tchar, trim_ows};
use crate::{ProtoError, RequestHead, ResponseHead, Version};

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
/// anything else → `InvalidContentLength`. Leading zeros are digits like any
/// other ("007" is 7). Empty list elements ("5,", ",") are invalid.
///
/// When a list is both malformed and conflicting, malformed wins.
#[inline]
pub fn parse_content_length(value: &[u8]) -> Result<u64, ProtoError> {
    // Fast path: the value is what every real client sends, 1–19 plain
    // digits. 19 digits cannot overflow u64 (max is 20 digits), so no
    // per-digit checks are needed.
    if !value.is_empty() && value.len() <= MAX_SAFE_DIGITS {
        if let Some(v) = parse_digits_unchecked(value) {
            return Ok(v);
        }
    }
    parse_content_length_slow(value)
}

/// Digits that always fit in a u64: 10^19 - 1 < 2^64 - 1 < 10^20 - 1.
const MAX_SAFE_DIGITS: usize = 19;

const ASCII_ZEROS: u64 = u64::from_ne_bytes([b'0'; 8]);

/// Whether all eight bytes of `chunk` are ASCII digits: the high nibble must
/// be 3, and adding 6 must not carry into it (that would mean a low nibble
/// above 9). A carry from a lower lane can only come from a byte >= 0xFA,
/// which already fails the first test, so lanes cannot mask each other.
#[inline(always)]
fn all_digits(chunk: u64) -> bool {
    const HIGH: u64 = u64::from_ne_bytes([0xF0; 8]);
    const SIX: u64 = u64::from_ne_bytes([0x06; 8]);
    const THREES: u64 = u64::from_ne_bytes([0x33; 8]);
    ((chunk & HIGH) | ((chunk.wrapping_add(SIX) & HIGH) >> 4)) == THREES
}

/// The value of eight ASCII digits loaded little-endian (first digit in the
/// lowest byte), combining neighbours pairwise: 8×1 → 4×2 → 2×4 → 1×8 digits.
#[inline(always)]
fn eight_digits(chunk: u64) -> u64 {
    let v = chunk.wrapping_sub(ASCII_ZEROS);
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    (v.wrapping_mul(10_000) + (v >> 32)) & 0xFFFF_FFFF
}

const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The last `k` (0..=8) bytes of `s` (`s.len() >= 8`) as an eight-digit
/// chunk, front-padded with '0': load the final eight bytes (overlapping
/// bytes counted elsewhere) and overwrite the low `8 - k` of them with '0'.
/// `k == 0` gives "00000000".
#[inline(always)]
fn tail_chunk(s: &[u8], k: usize) -> Option<u64> {
    let last = u64::from_le_bytes(*s.last_chunk::<8>()?);
    let pad = 8 * (8 - k) as u32; // 0..=64 bits
    let keep = u64::MAX.checked_shl(pad).unwrap_or(0);
    Some((last & keep) | (ASCII_ZEROS & !keep))
}

/// `s` (1..=19 bytes) as a decimal number, or None if any byte is not a digit.
///
/// SWAR: eight digits are validated and combined with a handful of integer
/// operations instead of eight dependent multiply-adds. Every length is
/// covered by at most three (overlapping) eight-byte loads, so there is no
/// per-digit loop above three digits, just a branch on the length class.
#[inline(always)]
fn parse_digits_unchecked(s: &[u8]) -> Option<u64> {
    let len = s.len();
    if len < 4 {
        // 1–3 digits: too short for a wide load.
        let mut acc = 0u64;
        for &b in s {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            acc = acc * 10 + u64::from(d);
        }
        return Some(acc);
    }
    if len < 8 {
        // 4–7 digits: the first four and the last four bytes overlap; keep
        // the low (len - 4) bytes of the first load, shifted up behind '0'
        // padding, and the last four bytes as the high half.
        let first = u64::from(u32::from_le_bytes(*s.first_chunk::<4>()?));
        let last = u64::from(u32::from_le_bytes(*s.last_chunk::<4>()?));
        let pad = 8 * (8 - len) as u32; // 8..=32 bits
        let low = ((first << pad) & 0xFFFF_FFFF) | (ASCII_ZEROS >> (64 - pad));
        let chunk = low | (last << 32);
        return all_digits(chunk).then(|| eight_digits(chunk));
    }
    let first = u64::from_le_bytes(*s.first_chunk::<8>()?);
    if len <= 16 {
        // 8–16 digits: the first eight, then the last len - 8 (0..=8).
        let k = len - 8;
        let tail = tail_chunk(s, k)?;
        if !all_digits(first) || !all_digits(tail) {
            return None;
        }
        return Some(eight_digits(first) * POW10[k] + eight_digits(tail));
    }
    // 17–19 digits: two full chunks and a 1–3 digit tail.
    let mid = u64::from_le_bytes(*s.get(8..16)?.first_chunk::<8>()?);
    let k = len - 16;
    let tail = tail_chunk(s, k)?;
    if !all_digits(first) || !all_digits(mid) || !all_digits(tail) {
        return None;
    }
    // < 10^19: no overflow.
    Some((eight_digits(first) * 100_000_000 + eight_digits(mid)) * POW10[k] + eight_digits(tail))
}

/// One list element, OWS already trimmed: non-empty ASCII digits, checked.
fn parse_element(e: &[u8]) -> Result<u64, ProtoError> {
    if e.is_empty() {
        return Err(ProtoError::InvalidContentLength);
    }
    let mut acc: u64 = 0;
    for &b in e {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(ProtoError::InvalidContentLength);
        }
        acc = acc
            .checked_mul(10)
            .and_then(|a| a.checked_add(u64::from(d)))
            .ok_or(ProtoError::InvalidContentLength)?;
    }
    Ok(acc)
}

/// Everything the fast path does not take: OWS, lists, 20+ digit values,
/// and every invalid input.
#[cold]
fn parse_content_length_slow(value: &[u8]) -> Result<u64, ProtoError> {
    let mut first: Option<u64> = None;
    let mut conflict = false;
    for element in value.split(|&b| b == b',') {
        let v = parse_element(trim_ows(element))?;
        match first {
            None => first = Some(v),
            Some(f) => conflict |= f != v,
        }
    }
    match (first, conflict) {
        (Some(_), true) => Err(ProtoError::ConflictingContentLength),
        (Some(v), false) => Ok(v),
        // `split` yields at least one element, so this is unreachable.
        (None, _) => Err(ProtoError::InvalidContentLength),
    }
}

/// All Content-Length fields of a message as one value; repeated fields must
/// agree like list elements do. `None` when there is no such field.
fn content_length<'a>(values: impl Iterator<Item = &'a [u8]>) -> Result<Option<u64>, ProtoError> {
    let mut found: Option<u64> = None;
    for v in values {
        let n = parse_content_length(v)?;
        match found {
            Some(f) if f != n => return Err(ProtoError::ConflictingContentLength),
            _ => found = Some(n),
        }
    }
    Ok(found)
}

/// Validate the Transfer-Encoding fields (one comma list across repeated
/// fields). The only coding we decode is chunked, so the only acceptable
/// list is a single "chunked" (case-insensitive).
///
/// Precedence: malformed or empty → 400; chunked missing from the end or
/// present twice → 400 `ChunkedNotLast` (RFC 9112 §6.3: the length cannot be
/// determined, the server MUST answer 400); then any other coding in front of
/// a final chunked → 501 `UnknownTransferCoding` (RFC 9112 §6.1, SHOULD).
/// So "gzip" alone is 400, "gzip, chunked" is 501.
fn check_transfer_encoding<'a>(values: impl Iterator<Item = &'a [u8]>) -> Result<(), ProtoError> {
    let mut chunked = 0usize;
    let mut last_is_chunked = false;
    let mut unknown = false;
    for field in values {
        if trim_ows(field).is_empty() {
            return Err(ProtoError::MalformedHead("empty Transfer-Encoding"));
        }
        for element in field.split(|&b| b == b',') {
            let element = trim_ows(element);
            if element.is_empty() {
                // RFC 9110 §5.6.1.2: empty list elements are ignored.
                continue;
            }
            // transfer-coding = token *( OWS ";" OWS transfer-parameter )
            let name = trim_ows(element.split(|&b| b == b';').next().unwrap_or(&[]));
            if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
                return Err(ProtoError::MalformedHead("invalid Transfer-Encoding"));
            }
            if element.eq_ignore_ascii_case(b"chunked") {
                chunked += 1;
                last_is_chunked = true;
            } else {
                unknown = true;
                last_is_chunked = false;
            }
        }
    }
    if chunked != 1 || !last_is_chunked {
        return Err(ProtoError::ChunkedNotLast);
    }
    if unknown {
        return Err(ProtoError::UnknownTransferCoding);
    }
    Ok(())
}

/// The framing rules shared by requests and responses once the no-body
/// cases are out of the way.
fn framing_from_fields<'a, I>(
    version: Version,
    te: I,
    cl: I,
) -> Result<Option<BodyFraming>, ProtoError>
where
    I: Iterator<Item = &'a [u8]> + Clone,
{
    let has_te = te.clone().next().is_some();
    let has_cl = cl.clone().next().is_some();
    if has_te {
        if has_cl {
            return Err(ProtoError::TransferEncodingWithContentLength);
        }
        // RFC 9112 §6.1: TE in a 1.0 message means the framing is faulty.
        if version == Version::Http10 {
            return Err(ProtoError::TransferEncodingInHttp10);
        }
        check_transfer_encoding(te)?;
        return Ok(Some(BodyFraming::Chunked));
    }
    Ok(match content_length(cl)? {
        Some(0) => Some(BodyFraming::Empty),
        Some(n) => Some(BodyFraming::Length(n)),
        None => None,
    })
}

/// Decide a request's body framing from its head (RFC 9112 §6.3):
/// TE + CL → `TransferEncodingWithContentLength`; TE in 1.0 →
/// `TransferEncodingInHttp10`; TE whose last coding is not chunked, or chunked
/// twice → `ChunkedNotLast`; an unknown coding → `UnknownTransferCoding`;
/// repeated CL fields must agree. No CL and no TE → `Empty`.
pub fn request_framing(head: &RequestHead) -> Result<BodyFraming, ProtoError> {
    let framing = framing_from_fields(
        head.version(),
        head.fields("transfer-encoding"),
        head.fields("content-length"),
    )?;
    Ok(framing.unwrap_or(BodyFraming::Empty))
}

/// Decide a response's body framing (client side). `request_method` is the
/// method of the request it answers: HEAD, 1xx, 204 and 304 have no body;
/// a 2xx answer to CONNECT has none either; otherwise chunked, Content-Length,
/// or read until close.
///
/// The client is as strict as the server: TE with CL, TE in HTTP/1.0, or a
/// coding other than a single chunked is an error (we could not decode the
/// body anyway), and so are bad or conflicting lengths.
pub fn response_framing(
    request_method: &str,
    head: &ResponseHead,
) -> Result<BodyFraming, ProtoError> {
    let status = head.status;
    if request_method == "HEAD"
        || status_has_no_body(status)
        || (request_method == "CONNECT" && (200..300).contains(&status))
    {
        return Ok(BodyFraming::Empty);
    }
    let framing = framing_from_fields(
        head.version,
        head.header_all("transfer-encoding"),
        head.header_all("content-length"),
    )?;
    Ok(framing.unwrap_or(BodyFraming::UntilClose))
}

/// Statuses whose responses never have a body, whatever their fields say
/// (RFC 9112 §6.3 rule 1): 1xx, 204 No Content, 304 Not Modified.
pub fn status_has_no_body(status: u16) -> bool {
    (100..200).contains(&status) || status == 204 || status == 304
}

/// What a server knows about a response body when its head must be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodySize {
    /// Exactly this many bytes (a buffer, a file range, a body that ended
    /// while still buffered).
    Known(u64),
    /// The body is streamed and its end is not known yet.
    Streamed,
}

/// The framing field a response head carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramingField {
    /// Neither Content-Length nor Transfer-Encoding.
    None,
    ContentLength(u64),
    Chunked,
}

/// How the body bytes that follow a response head go on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEncoding {
    /// Nothing follows the head (HEAD request, or a status without body).
    Nothing,
    /// The bytes as they are: their length was announced, or the connection
    /// closes after them.
    Raw,
    /// Chunked transfer coding.
    Chunked,
}

/// The server's framing decision for one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseFraming {
    pub field: FramingField,
    pub body: BodyEncoding,
    /// The body is delimited by closing the connection, so it must close.
    pub close_delimited: bool,
}

/// Decide how a server frames a response (RFC 9112 §6.1–6.3 from the
/// sender's side), the mirror of [`response_framing`]:
/// - 1xx/204/304: no framing field and no body;
/// - a known size: Content-Length (also on HEAD, which sends no body);
/// - a streamed body: chunked for an HTTP/1.1 request; an HTTP/1.0 peer
///   cannot decode chunked, so raw bytes ended by closing the connection
///   (a HEAD then carries no framing field at all).
pub fn server_response_framing(
    head_request: bool,
    request_version: Version,
    status: u16,
    size: BodySize,
) -> ResponseFraming {
    let is_head = head_request;
    let body = |encoding| {
        if is_head {
            BodyEncoding::Nothing
        } else {
            encoding
        }
    };
    if status_has_no_body(status) {
        return ResponseFraming {
            field: FramingField::None,
            body: BodyEncoding::Nothing,
            close_delimited: false,
        };
    }
    match (size, request_version) {
        (BodySize::Known(n), _) => ResponseFraming {
            field: FramingField::ContentLength(n),
            body: body(BodyEncoding::Raw),
            close_delimited: false,
        },
        (BodySize::Streamed, Version::Http11) => ResponseFraming {
            field: FramingField::Chunked,
            body: body(BodyEncoding::Chunked),
            close_delimited: false,
        },
        (BodySize::Streamed, Version::Http10) => ResponseFraming {
            field: FramingField::None,
            body: body(BodyEncoding::Raw),
            close_delimited: !is_head,
        },
    }
}

/// The `Connection` field a response needs (RFC 9112 §9.3, §9.6): `close`
/// when the connection will not carry another request, `keep-alive` for an
/// HTTP/1.0 peer that keeps it open, nothing otherwise (the default).
pub fn connection_field(request_version: Version, keep_alive: bool) -> &'static [u8] {
    match (keep_alive, request_version) {
        (false, _) => b"Connection: close\r\n",
        (true, Version::Http10) => b"Connection: keep-alive\r\n",
        (true, Version::Http11) => b"",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_request_head, parse_response_head, Limits};

    const BAD: &[&[u8]] = &[
        b"",
        b" ",
        b"\t",
        b"+1",
        b"-1",
        b"1 2",
        b"1\t2",
        b"0x10",
        b"1.0",
        b"1e3",
        "١".as_bytes(),
        "٣٤".as_bytes(),
        b"\x00",
        b"1\x00",
        b"1\x0b",
        b"\x0b1",
        b"1\x0c",
        b"1\r",
        b"1\n",
        b"1\r\n2",
        b"18446744073709551616",
        b"99999999999999999999",
        b"100000000000000000000000",
        b"5,6",
        b"5, 6",
        b",",
        b"5,",
        b",5",
        b"5,,5",
        b"5, 5,",
        b"abc",
        b"12345678a",
        b"1234567890123456789a",
        b"123456789012345678/",
        b"1234567:",
    ];

    #[test]
    fn content_length_rejects_every_bad_value() {
        for &v in BAD {
            let r = parse_content_length(v);
            assert!(
                r.is_err(),
                "{:?} accepted as {:?}",
                String::from_utf8_lossy(v),
                r
            );
            assert_eq!(r.unwrap_err().status(), 400);
        }
    }

    #[test]
    fn content_length_conflict_is_its_own_error() {
        for v in [&b"5,6"[..], b"5, 6", b" 1 ,2", b"0,00001"] {
            assert_eq!(
                parse_content_length(v),
                Err(ProtoError::ConflictingContentLength),
                "{v:?}"
            );
        }
        // Malformed wins over conflicting.
        assert_eq!(
            parse_content_length(b"5,6,x"),
            Err(ProtoError::InvalidContentLength)
        );
    }

    #[test]
    fn content_length_accepts_good_values() {
        let good: &[(&[u8], u64)] = &[
            (b"0", 0),
            (b"1", 1),
            (b"18446744073709551615", u64::MAX),
            (b"018446744073709551615", u64::MAX),
            (b"9999999999999999999", 9_999_999_999_999_999_999),
            (b"10000000000000000000", 10_000_000_000_000_000_000),
            (b" 42 ", 42),
            (b"\t42\t ", 42),
            (b"5, 5", 5),
            (b"5,5,5", 5),
            (b"007", 7),
            (b"00000000000000000000000000007", 7),
            (b"12345678", 12_345_678),
            (b"123456789", 123_456_789),
            (b"1234567890123456", 1_234_567_890_123_456),
            (b"12345678901234567", 12_345_678_901_234_567),
        ];
        for &(v, n) in good {
            assert_eq!(
                parse_content_length(v),
                Ok(n),
                "{:?}",
                String::from_utf8_lossy(v)
            );
        }
    }

    #[test]
    fn content_length_fast_path_every_length() {
        // Each length 1..=19 with each digit in each position exercises the
        // SWAR chunk boundaries and the overlapping tail load.
        for len in 1..=19usize {
            for d in b'0'..=b'9' {
                for pos in 0..len {
                    let mut s = vec![b'1'; len];
                    s[pos] = d;
                    let want: u64 = std::str::from_utf8(&s).unwrap().parse().unwrap();
                    assert_eq!(parse_content_length(&s), Ok(want));
                    // And a non-digit at that position is refused.
                    for bad in [b'/', b':', b' ', 0u8, 0xFF, b'a'] {
                        s[pos] = bad;
                        if bad == b' ' && (pos == 0 || pos == len - 1) {
                            continue; // OWS at the ends is allowed
                        }
                        assert!(parse_content_length(&s).is_err(), "{s:?}");
                    }
                }
            }
        }
    }

    fn req(raw: &str) -> RequestHead {
        parse_request_head(raw.as_bytes(), &Limits::default())
            .expect("parse")
            .expect("complete")
            .0
    }

    fn framing(raw: &str) -> Result<BodyFraming, ProtoError> {
        request_framing(&req(raw))
    }

    #[test]
    fn request_without_length_is_empty() {
        assert_eq!(
            framing("GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(BodyFraming::Empty)
        );
        assert_eq!(
            framing("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"),
            Ok(BodyFraming::Empty)
        );
        assert_eq!(
            framing("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n"),
            Ok(BodyFraming::Length(12))
        );
    }

    #[test]
    fn repeated_content_length_fields() {
        assert_eq!(
            framing("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n"),
            Ok(BodyFraming::Length(5))
        );
        assert_eq!(
            framing("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
            Err(ProtoError::ConflictingContentLength)
        );
        assert_eq!(
            framing("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n"),
            Err(ProtoError::ConflictingContentLength)
        );
        assert_eq!(
            framing("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: x\r\n\r\n"),
            Err(ProtoError::InvalidContentLength)
        );
    }

    #[test]
    fn transfer_encoding_rules() {
        let te = |v: &str| {
            framing(&format!(
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: {v}\r\n\r\n"
            ))
        };
        assert_eq!(te("chunked"), Ok(BodyFraming::Chunked));
        assert_eq!(te("Chunked"), Ok(BodyFraming::Chunked));
        assert_eq!(te("CHUNKED "), Ok(BodyFraming::Chunked));
        assert_eq!(te("gzip, chunked"), Err(ProtoError::UnknownTransferCoding));
        assert_eq!(
            te("pigeons, chunked"),
            Err(ProtoError::UnknownTransferCoding)
        );
        assert_eq!(te("chunked, gzip"), Err(ProtoError::ChunkedNotLast));
        assert_eq!(te("chunked, chunked"), Err(ProtoError::ChunkedNotLast));
        assert_eq!(te("gzip"), Err(ProtoError::ChunkedNotLast));
        assert_eq!(te("chunkedchunked"), Err(ProtoError::ChunkedNotLast));
        assert_eq!(te("chunked, "), Ok(BodyFraming::Chunked));
        assert_eq!(te("chu nked").map_err(|e| e.status()), Err(400));
        assert_eq!(te("\"chunked\"").map_err(|e| e.status()), Err(400));
        assert_eq!(te(",").map_err(|e| e.status()), Err(400));
        assert_eq!(te("").map_err(|e| e.status()), Err(400));
        assert_eq!(te("gzip, chunked").unwrap_err().status(), 501);
    }

    #[test]
    fn repeated_transfer_encoding_fields_are_one_list() {
        let two = |a: &str, b: &str| {
            framing(&format!(
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: {a}\r\nTransfer-Encoding: {b}\r\n\r\n"
            ))
        };
        assert_eq!(
            two("gzip", "chunked"),
            Err(ProtoError::UnknownTransferCoding)
        );
        assert_eq!(two("chunked", "gzip"), Err(ProtoError::ChunkedNotLast));
        assert_eq!(two("chunked", "chunked"), Err(ProtoError::ChunkedNotLast));
        assert_eq!(two("", "chunked").map_err(|e| e.status()), Err(400));
    }

    #[test]
    fn transfer_encoding_with_content_length() {
        assert_eq!(
            framing("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"),
            Err(ProtoError::TransferEncodingWithContentLength)
        );
        assert_eq!(
            framing("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(ProtoError::TransferEncodingWithContentLength)
        );
    }

    #[test]
    fn transfer_encoding_in_http10() {
        assert_eq!(
            framing("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(ProtoError::TransferEncodingInHttp10)
        );
    }

    fn resp(raw: &str) -> ResponseHead {
        parse_response_head(raw.as_bytes(), &Limits::default())
            .unwrap()
            .unwrap()
            .0
    }

    #[test]
    fn response_framing_rules() {
        let ok_cl = resp("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n");
        assert_eq!(response_framing("GET", &ok_cl), Ok(BodyFraming::Length(7)));
        assert_eq!(response_framing("HEAD", &ok_cl), Ok(BodyFraming::Empty));
        let ok_te = resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(response_framing("GET", &ok_te), Ok(BodyFraming::Chunked));
        assert_eq!(response_framing("CONNECT", &ok_te), Ok(BodyFraming::Empty));
        let bare = resp("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(response_framing("GET", &bare), Ok(BodyFraming::UntilClose));
        for status in [
            "100 Continue",
            "101 Switching Protocols",
            "204 No Content",
            "304 Not Modified",
        ] {
            let r = resp(&format!("HTTP/1.1 {status}\r\nContent-Length: 7\r\n\r\n"));
            assert_eq!(
                response_framing("GET", &r),
                Ok(BodyFraming::Empty),
                "{status}"
            );
        }
        let not_found = resp("HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\n");
        assert_eq!(
            response_framing("CONNECT", &not_found),
            Ok(BodyFraming::Length(3))
        );
        let zero = resp("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(response_framing("GET", &zero), Ok(BodyFraming::Empty));
        let both =
            resp("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(
            response_framing("GET", &both),
            Err(ProtoError::TransferEncodingWithContentLength)
        );
        let conflict = resp("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n");
        assert_eq!(
            response_framing("GET", &conflict),
            Err(ProtoError::ConflictingContentLength)
        );
    }

    /// The server side of RFC 9112 §6.1–6.3: what the head says and what
    /// follows it, for every status class, HEAD, both versions, known and
    /// streamed sizes.
    #[test]
    fn server_frames_each_response_kind() {
        use BodyEncoding::{Chunked as Ch, Nothing, Raw};
        use BodySize::{Known, Streamed};
        use FramingField::{Chunked, ContentLength as Cl, None as NoField};
        use Version::{Http10 as V10, Http11 as V11};
        let frame = |head: bool, v, status, size| {
            let f = server_response_framing(head, v, status, size);
            (f.field, f.body, f.close_delimited)
        };
        assert_eq!(frame(false, V11, 200, Known(5)), (Cl(5), Raw, false));
        assert_eq!(frame(false, V11, 200, Known(0)), (Cl(0), Raw, false));
        assert_eq!(frame(false, V11, 200, Streamed), (Chunked, Ch, false));
        assert_eq!(frame(false, V10, 200, Streamed), (NoField, Raw, true));
        assert_eq!(frame(false, V10, 200, Known(5)), (Cl(5), Raw, false));
        assert_eq!(frame(true, V11, 200, Known(5)), (Cl(5), Nothing, false));
        assert_eq!(frame(true, V11, 200, Streamed), (Chunked, Nothing, false));
        assert_eq!(frame(true, V10, 200, Streamed), (NoField, Nothing, false));
        assert_eq!(frame(false, V11, 204, Known(5)), (NoField, Nothing, false));
        assert_eq!(frame(false, V11, 304, Streamed), (NoField, Nothing, false));
        assert_eq!(frame(false, V11, 100, Known(0)), (NoField, Nothing, false));
        assert_eq!(frame(false, V11, 201, Known(0)), (Cl(0), Raw, false));
        assert_eq!(frame(false, V11, 404, Streamed), (Chunked, Ch, false));
    }

    /// What the server writes, the client reads back as the same body.
    #[test]
    fn server_framing_round_trips_through_the_client_rule() {
        for status in [200u16, 204, 304, 404] {
            let f = server_response_framing(false, Version::Http11, status, BodySize::Known(3));
            let field = match f.field {
                FramingField::ContentLength(n) => format!("Content-Length: {n}\r\n"),
                FramingField::Chunked => "Transfer-Encoding: chunked\r\n".into(),
                FramingField::None => String::new(),
            };
            let wire = format!("HTTP/1.1 {status} X\r\n{field}\r\n");
            let (head, _) = parse_response_head(wire.as_bytes(), &Limits::default())
                .unwrap()
                .unwrap();
            let back = response_framing("GET", &head).unwrap();
            let expect = if f.body == BodyEncoding::Nothing {
                BodyFraming::Empty
            } else {
                BodyFraming::Length(3)
            };
            assert_eq!(back, expect, "status {status}");
        }
    }

    #[test]
    fn connection_field_follows_version_and_persistence() {
        assert_eq!(connection_field(Version::Http11, true), b"");
        assert_eq!(
            connection_field(Version::Http11, false),
            b"Connection: close\r\n"
        );
        assert_eq!(
            connection_field(Version::Http10, true),
            b"Connection: keep-alive\r\n"
        );
        assert_eq!(
            connection_field(Version::Http10, false),
            b"Connection: close\r\n"
        );
    }
}
