//! Part headers: line validation and the interpreted fields.

use crate::params::{decode_ext_value, is_tchar, split_params, trim};
use crate::MultipartError;

/// The headers of one part, parsed once when the part starts.
///
/// `name`, `filename`, `content_type` and `content_id` are the interpreted
/// values; `raw` keeps every header line (name as sent, value trimmed) in
/// order for anything else (e.g. `Content-Transfer-Encoding`, which RFC 7578
/// §4.7 deprecates and which this crate therefore does not apply).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartHeaders {
    /// Every header line in order: (name as sent, value without OWS).
    pub raw: Vec<(String, Vec<u8>)>,
    /// Content-Disposition type, lower-cased (`form-data`, `attachment`, ..).
    pub disposition: Option<String>,
    /// Content-Disposition `name`.
    pub name: Option<String>,
    /// Content-Disposition `filename*` (RFC 8187, UTF-8 or ISO-8859-1,
    /// percent-decoded) if present and decodable, else `filename`. Raw
    /// UTF-8 in a quoted `filename` (what browsers send) is kept; invalid
    /// UTF-8 is replaced with U+FFFD rather than failing the upload.
    pub filename: Option<String>,
    /// Content-Type value (trimmed), if any.
    pub content_type: Option<String>,
    /// Content-ID value as sent (trimmed, angle brackets kept); see
    /// [`PartHeaders::cid`] for the MTOM/XOP form.
    pub content_id: Option<String>,
}

impl PartHeaders {
    /// First value of header `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.raw
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// A file part is one with a `filename` (RFC 7578 §4.2); everything else
    /// is a form field and subject to [`crate::Limits::max_field_bytes`].
    pub fn is_file(&self) -> bool {
        self.filename.is_some()
    }

    /// Content-ID without the surrounding `<>`, which is what an XOP
    /// `href="cid:..."` refers to (RFC 2392).
    pub fn cid(&self) -> Option<&str> {
        let id = self.content_id.as_deref()?;
        Some(
            id.strip_prefix('<')
                .and_then(|s| s.strip_suffix('>'))
                .unwrap_or(id),
        )
    }
}

/// Validates one header line (without its CRLF): `token ":" OWS value OWS`
/// where the value holds only HTAB, SP, VCHAR and obs-text. Obs-fold (a line
/// starting with whitespace) is refused like RFC 9112 §5.2 allows.
pub(crate) fn validate_line(line: &[u8]) -> Result<(), MultipartError> {
    let colon =
        memchr::memchr(b':', line).ok_or(MultipartError::MalformedHeader("line without ':'"))?;
    if colon == 0 {
        return Err(MultipartError::MalformedHeader("empty header name"));
    }
    if !line[..colon].iter().all(|&b| is_tchar(b)) {
        return Err(MultipartError::MalformedHeader(
            "header name is not a token (or obs-fold)",
        ));
    }
    let value_ok = line[colon + 1..]
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80);
    if !value_ok {
        return Err(MultipartError::MalformedHeader(
            "control byte in header value",
        ));
    }
    Ok(())
}

/// Builds [`PartHeaders`] from a header block whose lines were all accepted by
/// [`validate_line`] (each ends in CRLF; the terminating empty line is not
/// included).
pub(crate) fn parse_block(block: &[u8]) -> Result<PartHeaders, MultipartError> {
    let mut h = PartHeaders::default();
    for line in block.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        // validate_line already guaranteed the colon.
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let name = &line[..colon];
        let value = trim(&line[colon + 1..]);
        // Header names are tchars, i.e. ASCII: this never replaces anything.
        let name_s = String::from_utf8_lossy(name).into_owned();
        if name.eq_ignore_ascii_case(b"content-disposition") && h.disposition.is_none() {
            apply_disposition(&mut h, value)?;
        } else if name.eq_ignore_ascii_case(b"content-type") && h.content_type.is_none() {
            h.content_type = Some(String::from_utf8_lossy(value).into_owned());
        } else if name.eq_ignore_ascii_case(b"content-id") && h.content_id.is_none() {
            h.content_id = Some(String::from_utf8_lossy(value).into_owned());
        }
        h.raw.push((name_s, value.to_vec()));
    }
    Ok(h)
}

fn apply_disposition(h: &mut PartHeaders, value: &[u8]) -> Result<(), MultipartError> {
    let (kind, params) = split_params(value)
        .map_err(|_| MultipartError::MalformedHeader("bad Content-Disposition"))?;
    if kind.is_empty() || !kind.iter().all(|&b| is_tchar(b)) {
        return Err(MultipartError::MalformedHeader(
            "Content-Disposition type is not a token",
        ));
    }
    h.disposition = Some(String::from_utf8_lossy(kind).to_ascii_lowercase());
    let mut filename_star = None;
    for (n, v) in params {
        match n.as_str() {
            "name" if h.name.is_none() => h.name = Some(String::from_utf8_lossy(&v).into_owned()),
            "filename" if h.filename.is_none() => {
                h.filename = Some(String::from_utf8_lossy(&v).into_owned())
            }
            // RFC 6266 §4.3: filename* wins over filename when both are
            // present and the recipient understands it.
            "filename*" if filename_star.is_none() => filename_star = decode_ext_value(&v),
            _ => {}
        }
    }
    if filename_star.is_some() {
        h.filename = filename_star;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(s: &str) -> PartHeaders {
        parse_block(s.as_bytes()).unwrap()
    }

    #[test]
    fn disposition_fields() {
        let h = block("Content-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n");
        assert_eq!(h.disposition.as_deref(), Some("form-data"));
        assert_eq!(h.name.as_deref(), Some("f"));
        assert_eq!(h.filename.as_deref(), Some("a.txt"));
        assert_eq!(h.content_type.as_deref(), Some("text/plain"));
        assert!(h.is_file());
        assert_eq!(h.get("CONTENT-TYPE"), Some(&b"text/plain"[..]));
        assert_eq!(h.raw.len(), 2);
    }

    #[test]
    fn filename_star_wins_either_order() {
        for v in [
            "form-data; name=f; filename=\"plain.txt\"; filename*=UTF-8''%E2%82%AC.txt",
            "form-data; name=f; filename*=utf-8''%e2%82%ac.txt; filename=\"plain.txt\"",
        ] {
            let h = block(&format!("Content-Disposition: {v}\r\n"));
            assert_eq!(h.filename.as_deref(), Some("\u{20ac}.txt"), "{v}");
        }
        // Undecodable filename* falls back to filename.
        let h =
            block("Content-Disposition: form-data; filename=\"p.txt\"; filename*=UTF-8''%zz\r\n");
        assert_eq!(h.filename.as_deref(), Some("p.txt"));
    }

    #[test]
    fn quoted_escapes_and_raw_utf8() {
        let h =
            block("content-disposition: form-data; name=\"a\\\"q\"; filename=\"\u{3053}.txt\"\r\n");
        assert_eq!(h.name.as_deref(), Some("a\"q"));
        assert_eq!(h.filename.as_deref(), Some("\u{3053}.txt"));
    }

    #[test]
    fn content_id() {
        let h =
            block("Content-ID: <part1@example.org>\r\nContent-Type: application/octet-stream\r\n");
        assert_eq!(h.content_id.as_deref(), Some("<part1@example.org>"));
        assert_eq!(h.cid(), Some("part1@example.org"));
        assert!(!h.is_file());
    }

    #[test]
    fn line_validation() {
        assert!(validate_line(b"X-A: b").is_ok());
        assert!(validate_line(b"X-A:").is_ok());
        assert!(validate_line(b": b").is_err());
        assert!(validate_line(b"X A: b").is_err());
        assert!(validate_line(b" X: b").is_err());
        assert!(validate_line(b"X-A b").is_err());
        assert!(validate_line(b"X: a\rb").is_err());
        assert!(validate_line(b"X: a\0b").is_err());
        assert!(parse_block(b"Content-Disposition: form-data; name=\"x\r\n").is_err());
    }
}
