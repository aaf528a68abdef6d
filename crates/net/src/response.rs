//! A response head: the builder handlers fill in, and its encoding with the
//! framing field `wirespeed_proto::server_response_framing` chose, `Date` and
//! `Connection`.

use wirespeed_proto::{connection_field, FramingField, Version};

/// A response head under construction: status and headers, set once.
/// Framing headers (Content-Length, Transfer-Encoding) and Date/Connection are
/// added by the server; a handler never writes them. Header lines are encoded
/// as they are added, into one buffer (one allocation per response head
/// instead of one per name and value).
#[derive(Debug, Clone)]
pub struct Response {
    status: u16,
    /// `Name: value\r\n` lines, sanitized.
    fields: Vec<u8>,
}

impl Response {
    pub fn new(status: u16) -> Self {
        Response {
            status,
            fields: Vec::new(),
        }
    }

    /// Add a header (builder style).
    pub fn header(mut self, name: impl AsRef<str>, value: impl AsRef<[u8]>) -> Self {
        self.add_header(name, value);
        self
    }

    /// Add a header. Framing headers are ignored: the server owns framing.
    pub fn add_header(&mut self, name: impl AsRef<str>, value: impl AsRef<[u8]>) {
        let name = name.as_ref();
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            tracing::debug!(%name, "framing header set by a handler ignored");
            return;
        }
        if self.fields.capacity() == 0 {
            self.fields.reserve(256);
        }
        wirespeed_proto::write::push_field(&mut self.fields, name, value.as_ref());
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    /// The value of the first header called `name` (as encoded).
    pub fn get_header(&self, name: &str) -> Option<&[u8]> {
        self.fields.split(|&b| b == b'\n').find_map(|line| {
            let line = line.strip_suffix(b"\r")?;
            let colon = line.iter().position(|&b| b == b':')?;
            line[..colon]
                .eq_ignore_ascii_case(name.as_bytes())
                .then(|| {
                    line[colon + 1..]
                        .strip_prefix(b" ")
                        .unwrap_or(&line[colon + 1..])
                })
        })
    }
}

/// Encode `resp`'s head for a request of `version`, with room for `extra`
/// more bytes (a small body sent along in the same write).
pub(crate) fn encode_head(
    resp: &Response,
    version: Version,
    field: FramingField,
    keep_alive: bool,
    extra: usize,
) -> Vec<u8> {
    use std::io::Write as _;
    let mut out = Vec::with_capacity(160 + resp.fields.len() + extra);
    wirespeed_proto::write::write_status_line(version, resp.status, &mut out);
    out.extend_from_slice(b"Date: ");
    out.extend_from_slice(&http_date());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&resp.fields);
    // An error body is never sniffed into something a browser would run.
    if resp.status >= 400 && resp.get_header("x-content-type-options").is_none() {
        out.extend_from_slice(b"X-Content-Type-Options: nosniff\r\n");
    }
    match field {
        FramingField::ContentLength(n) => {
            // Writing into a Vec cannot fail.
            let _ = write!(out, "Content-Length: {n}\r\n");
        }
        FramingField::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        FramingField::None => {}
    }
    out.extend_from_slice(connection_field(version, keep_alive));
    out.extend_from_slice(b"\r\n");
    out
}

/// The current time as an HTTP date (always 29 bytes), formatted at most once
/// per second per thread: every response carries one.
pub(crate) fn http_date() -> [u8; 29] {
    use std::cell::Cell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local! {
        static CACHE: Cell<(u64, [u8; 29])> = const { Cell::new((u64::MAX, [b' '; 29])) };
    }
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    CACHE.with(|c| {
        let (cached_secs, text) = c.get();
        if cached_secs == secs {
            return text;
        }
        let mut text = [b' '; 29];
        let formatted = httpdate::fmt_http_date(now);
        let n = formatted.len().min(29);
        text[..n].copy_from_slice(&formatted.as_bytes()[..n]);
        c.set((secs, text));
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handlers_cannot_set_framing_fields() {
        let r = Response::new(200)
            .header("Content-Length", "5")
            .header("transfer-encoding", "chunked")
            .header("X-A", "1");
        assert_eq!(r.get_header("x-a"), Some(&b"1"[..]));
        assert_eq!(r.get_header("content-length"), None);
        let head = encode_head(&r, Version::Http11, FramingField::ContentLength(3), true, 0);
        let text = String::from_utf8(head).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\nDate: "), "{text}");
        assert_eq!(text.matches("Content-Length").count(), 1, "{text}");
        assert!(text.contains("Content-Length: 3\r\n") && !text.contains("Transfer-Encoding"));
        assert!(
            text.ends_with("X-A: 1\r\nContent-Length: 3\r\n\r\n"),
            "{text}"
        );
    }

    #[test]
    fn connection_field_is_added_when_needed() {
        let r = Response::new(200);
        let close = encode_head(&r, Version::Http11, FramingField::Chunked, false, 0);
        assert!(String::from_utf8(close)
            .unwrap()
            .ends_with("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"));
        let old = encode_head(&r, Version::Http10, FramingField::None, true, 0);
        let old = String::from_utf8(old).unwrap();
        assert!(
            old.starts_with("HTTP/1.0 200") && old.ends_with("Connection: keep-alive\r\n\r\n"),
            "{old}"
        );
    }

    #[test]
    fn http_date_is_29_bytes() {
        let d = http_date();
        assert_eq!(d.len(), 29);
        assert!(d.ends_with(b" GMT"));
    }
}
