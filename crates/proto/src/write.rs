//! Writing heads, the outbound direction: status and request lines, header
//! fields with CR/LF/NUL neutralized, reason phrases.

use crate::head::Version;

/// Append `bytes`, replacing CR, LF and NUL with SP. Writers take names and
/// values from callers who may have copied them from untrusted input; a CRLF
/// slipping through would split the message (response splitting), and
/// RFC 9110 §5.5 lets us replace such bytes with SP.
fn push_sanitized(out: &mut Vec<u8>, bytes: &[u8]) {
    // CR, LF and NUL are all below 14: one min-reduction (vectorized, no
    // early exit) clears nearly every name and value; memchr3's set-up cost
    // more than the scan on these short strings (small-GET profile, bench/RESULTS.md).
    let lowest = bytes.iter().fold(u8::MAX, |m, &b| m.min(b));
    if lowest >= 14 || !bytes.iter().any(|&b| matches!(b, b'\r' | b'\n' | 0)) {
        out.extend_from_slice(bytes);
    } else {
        out.extend(bytes.iter().map(|&b| {
            if matches!(b, b'\r' | b'\n' | 0) {
                b' '
            } else {
                b
            }
        }));
    }
}

fn push_headers(headers: &[(&str, &[u8])], out: &mut Vec<u8>) {
    for (name, value) in headers {
        push_sanitized(out, name.as_bytes());
        out.extend_from_slice(b": ");
        push_sanitized(out, value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Append one header line `name: value\r\n` (CR, LF and NUL replaced by SP).
pub fn push_field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    push_sanitized(out, name.as_bytes());
    out.extend_from_slice(b": ");
    push_sanitized(out, value);
    out.extend_from_slice(b"\r\n");
}

/// Append a status line `HTTP/1.x NNN Reason\r\n`.
pub fn write_status_line(version: Version, status: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(version.as_str().as_bytes());
    out.push(b' ');
    // status-code is three digits (RFC 9110 §15); pad/limit so the line stays valid.
    let s = status.min(999);
    out.extend_from_slice(&[
        b'0' + (s / 100) as u8,
        b'0' + (s / 10 % 10) as u8,
        b'0' + (s % 10) as u8,
    ]);
    out.push(b' ');
    out.extend_from_slice(reason_phrase(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Append a response head (status line, headers, empty line) to `out`.
/// `headers` are written as given (CR, LF and NUL replaced by SP so that no
/// value can split the message); the caller supplies framing headers.
pub fn write_response_head(
    version: Version,
    status: u16,
    headers: &[(&str, &[u8])],
    out: &mut Vec<u8>,
) {
    write_status_line(version, status, out);
    push_headers(headers, out);
}

/// Append a request head (request line, headers, empty line) to `out`.
/// Always HTTP/1.1. CR, LF and NUL in any part are replaced by SP.
pub fn write_request_head(
    method: &str,
    target: &str,
    headers: &[(&str, &[u8])],
    out: &mut Vec<u8>,
) {
    push_sanitized(out, method.as_bytes());
    out.push(b' ');
    push_sanitized(out, target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    push_headers(headers, out);
}

/// The standard reason phrase for a status code ("OK", "Not Found", …; "" if unknown).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        104 => "Upload Resumption Supported",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "",
    }
}

#[cfg(test)]
mod sanitize_tests {
    use super::push_field;
    use proptest::prelude::*;

    proptest! {
        /// Whatever a name or value holds, the line has one CRLF (its end),
        /// no NUL, and every other byte as given.
        #[test]
        fn a_field_line_never_splits(name in "[ -~\r\n\0]{0,40}", value in proptest::collection::vec(any::<u8>(), 0..100)) {
            let mut out = Vec::new();
            push_field(&mut out, &name, &value);
            prop_assert!(out.ends_with(b"\r\n"));
            let line = &out[..out.len() - 2];
            prop_assert!(!line.iter().any(|&b| matches!(b, b'\r' | b'\n' | 0)));
            let want: Vec<u8> = name.bytes().chain(*b": ").chain(value.iter().copied())
                .map(|b| if matches!(b, b'\r' | b'\n' | 0) { b' ' } else { b })
                .collect();
            prop_assert_eq!(line, &want[..]);
        }
    }
}
