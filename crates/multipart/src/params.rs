//! Header-value syntax shared by Content-Type and Content-Disposition:
//! `value *( OWS ";" OWS name "=" ( token / quoted-string ) )` (RFC 9110
//! §5.6.6), plus boundary validation (RFC 2046 §5.1.1).

use crate::MultipartError;

/// RFC 9110 `tchar`.
pub(crate) fn is_tchar(b: u8) -> bool {
    matches!(b,
        b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.'
        | b'^' | b'_' | b'`' | b'|' | b'~' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn skip_ows(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_ows(s[i]) {
        i += 1;
    }
    i
}

/// One parsed parameter: lower-cased name, unescaped value bytes.
pub(crate) type Param = (String, Vec<u8>);

/// Splits `s` into its leading value (up to the first `;`, trimmed) and its
/// parameters. Quoted-string values are unescaped (`\x` -> `x`). Unquoted
/// values run to the next `;` and are trimmed: real clients send
/// `name=field1` and sometimes `name=a b`, and refusing those gains nothing.
pub(crate) fn split_params(s: &[u8]) -> Result<(&[u8], Vec<Param>), &'static str> {
    let first_end = memchr::memchr(b';', s).unwrap_or(s.len());
    let head = trim(&s[..first_end]);
    let mut params = Vec::new();
    let mut i = first_end;
    while i < s.len() {
        // s[i] == b';'
        i = skip_ows(s, i + 1);
        if i == s.len() {
            break; // trailing ';' is harmless
        }
        if s[i] == b';' {
            continue; // empty parameter (";;")
        }
        let name_start = i;
        while i < s.len() && is_tchar(s[i]) {
            i += 1;
        }
        if i == name_start {
            return Err("parameter name is not a token");
        }
        let name = String::from_utf8_lossy(&s[name_start..i]).to_ascii_lowercase();
        i = skip_ows(s, i);
        if i == s.len() || s[i] != b'=' {
            return Err("parameter without '='");
        }
        i = skip_ows(s, i + 1);
        let value = if i < s.len() && s[i] == b'"' {
            let mut v = Vec::new();
            i += 1;
            loop {
                match s.get(i) {
                    None => return Err("unterminated quoted-string"),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => match s.get(i + 1) {
                        Some(&c) => {
                            v.push(c);
                            i += 2;
                        }
                        None => return Err("unterminated quoted-string"),
                    },
                    Some(&c) => {
                        v.push(c);
                        i += 1;
                    }
                }
            }
            i = skip_ows(s, i);
            if i < s.len() && s[i] != b';' {
                return Err("junk after quoted-string");
            }
            v
        } else {
            let end = memchr::memchr(b';', &s[i..]).map_or(s.len(), |e| i + e);
            let v = trim(&s[i..end]).to_vec();
            i = end;
            v
        };
        params.push((name, value));
    }
    Ok((head, params))
}

pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if is_ows(*first) {
            s = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = s {
        if is_ows(*last) {
            s = rest;
        } else {
            break;
        }
    }
    s
}

/// RFC 2046 `bcharsnospace` plus space (space not allowed last), 1–70 bytes.
pub(crate) fn validate_boundary(b: &[u8]) -> Result<(), MultipartError> {
    if b.is_empty() {
        return Err(MultipartError::InvalidBoundary("empty"));
    }
    if b.len() > 70 {
        return Err(MultipartError::InvalidBoundary("longer than 70 bytes"));
    }
    if b[b.len() - 1] == b' ' {
        return Err(MultipartError::InvalidBoundary("ends with a space"));
    }
    let ok = b.iter().all(|&c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'\''
                    | b'('
                    | b')'
                    | b'+'
                    | b'_'
                    | b','
                    | b'-'
                    | b'.'
                    | b'/'
                    | b':'
                    | b'='
                    | b'?'
                    | b' '
            )
    });
    if !ok {
        return Err(MultipartError::InvalidBoundary(
            "byte outside RFC 2046 bchars",
        ));
    }
    Ok(())
}

/// A parsed media type (`Content-Type` value): lower-cased essence plus
/// parameters. For `multipart/related` the `type`, `start` and `start-info`
/// parameters are reachable through [`MediaType::param`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    essence: String,
    params: Vec<(String, String)>,
}

impl MediaType {
    /// Parses `type "/" subtype *( OWS ";" OWS parameter )`.
    pub fn parse(value: &str) -> Result<Self, MultipartError> {
        let (head, raw) =
            split_params(value.as_bytes()).map_err(MultipartError::MalformedContentType)?;
        let slash = memchr::memchr(b'/', head)
            .ok_or(MultipartError::MalformedContentType("no '/' in media type"))?;
        let (ty, sub) = (&head[..slash], &head[slash + 1..]);
        if ty.is_empty()
            || sub.is_empty()
            || !ty.iter().all(|&b| is_tchar(b))
            || !sub.iter().all(|&b| is_tchar(b))
        {
            return Err(MultipartError::MalformedContentType(
                "type/subtype are not tokens",
            ));
        }
        let essence = String::from_utf8_lossy(head).to_ascii_lowercase();
        let params = raw
            .into_iter()
            .map(|(n, v)| (n, String::from_utf8_lossy(&v).into_owned()))
            .collect();
        Ok(Self { essence, params })
    }

    /// `type/subtype`, lower-cased, e.g. `multipart/form-data`.
    pub fn essence(&self) -> &str {
        &self.essence
    }

    /// True for any `multipart/*`.
    pub fn is_multipart(&self) -> bool {
        self.essence.starts_with("multipart/")
    }

    /// The value of parameter `name` (case-insensitive); the first one wins
    /// if a parameter is repeated.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// All parameters in order, names lower-cased.
    pub fn params(&self) -> impl Iterator<Item = (&str, &str)> {
        self.params.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The validated `boundary` parameter (requires `multipart/*`).
    pub fn boundary(&self) -> Result<&str, MultipartError> {
        if !self.is_multipart() {
            return Err(MultipartError::NotMultipart);
        }
        let b = self
            .param("boundary")
            .ok_or(MultipartError::MissingBoundary)?;
        validate_boundary(b.as_bytes())?;
        Ok(b)
    }
}

/// Convenience: the validated boundary of a `multipart/*` Content-Type value.
pub fn boundary_from_content_type(content_type: &str) -> Result<String, MultipartError> {
    MediaType::parse(content_type)?
        .boundary()
        .map(str::to_owned)
}

/// Decodes an RFC 8187 ext-value (`charset'lang'pct-encoded`). Only UTF-8 and
/// ISO-8859-1 are required by the RFC; anything else (or a broken encoding)
/// yields `None` so the caller falls back to the plain `filename`.
pub(crate) fn decode_ext_value(v: &[u8]) -> Option<String> {
    let q1 = memchr::memchr(b'\'', v)?;
    let q2 = q1 + 1 + memchr::memchr(b'\'', &v[q1 + 1..])?;
    let charset = &v[..q1];
    let enc = &v[q2 + 1..];
    let mut out = Vec::with_capacity(enc.len());
    let mut i = 0;
    while i < enc.len() {
        if enc[i] == b'%' {
            let hi = hex(*enc.get(i + 1)?)?;
            let lo = hex(*enc.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(enc[i]);
            i += 1;
        }
    }
    if charset.eq_ignore_ascii_case(b"utf-8") {
        String::from_utf8(out).ok()
    } else if charset.eq_ignore_ascii_case(b"iso-8859-1") {
        Some(out.iter().map(|&b| char::from(b)).collect())
    } else {
        None
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_quoted_and_plain() {
        assert_eq!(
            boundary_from_content_type("multipart/form-data; boundary=abc123").unwrap(),
            "abc123"
        );
        assert_eq!(
            boundary_from_content_type("Multipart/Form-Data ; charset=utf-8; BOUNDARY=\"a b:c?\"")
                .unwrap(),
            "a b:c?"
        );
        assert_eq!(
            boundary_from_content_type("multipart/form-data; boundary=\"\""),
            Err(MultipartError::InvalidBoundary("empty"))
        );
        assert!(matches!(
            boundary_from_content_type(&format!("multipart/mixed; boundary={}", "a".repeat(71))),
            Err(MultipartError::InvalidBoundary(_))
        ));
        assert!(boundary_from_content_type(&format!(
            "multipart/mixed; boundary={}",
            "a".repeat(70)
        ))
        .is_ok());
        assert!(matches!(
            boundary_from_content_type("multipart/form-data; boundary=\"ab \""),
            Err(MultipartError::InvalidBoundary(_))
        ));
        assert!(matches!(
            boundary_from_content_type("multipart/form-data; boundary=a@b"),
            Err(MultipartError::InvalidBoundary(_))
        ));
        assert_eq!(
            boundary_from_content_type("text/plain; boundary=abc"),
            Err(MultipartError::NotMultipart)
        );
        assert_eq!(
            boundary_from_content_type("multipart/form-data"),
            Err(MultipartError::MissingBoundary)
        );
        assert!(matches!(
            boundary_from_content_type("multipart/form-data; boundary=\"abc"),
            Err(MultipartError::MalformedContentType(_))
        ));
        assert!(matches!(
            boundary_from_content_type("multipart; boundary=abc"),
            Err(MultipartError::MalformedContentType(_))
        ));
    }

    #[test]
    fn related_params() {
        let mt = MediaType::parse(
            "multipart/related; type=\"application/xop+xml\"; start=\"<root.message@cxf.apache.org>\"; start-info=\"text/xml\"; boundary=\"uuid:0ca0e16e\"",
        )
        .unwrap();
        assert_eq!(mt.essence(), "multipart/related");
        assert_eq!(mt.param("TYPE"), Some("application/xop+xml"));
        assert_eq!(mt.param("start"), Some("<root.message@cxf.apache.org>"));
        assert_eq!(mt.param("start-info"), Some("text/xml"));
        assert_eq!(mt.boundary().unwrap(), "uuid:0ca0e16e");
        assert_eq!(mt.params().count(), 4);
    }

    #[test]
    fn quoted_string_escapes() {
        let (head, p) = split_params(br#"form-data; name="a\"b\\c"; x=y ;"#).unwrap();
        assert_eq!(head, b"form-data");
        assert_eq!(p[0], ("name".to_string(), br#"a"b\c"#.to_vec()));
        assert_eq!(p[1], ("x".to_string(), b"y".to_vec()));
        assert!(split_params(br#"form-data; name="abc"#).is_err());
        assert!(split_params(br#"form-data; name="abc" junk"#).is_err());
        assert!(split_params(b"form-data; =x").is_err());
        assert!(split_params(b"form-data; name").is_err());
    }

    #[test]
    fn ext_value() {
        assert_eq!(
            decode_ext_value(b"UTF-8''%e2%82%ac%20rates.txt").as_deref(),
            Some("\u{20ac} rates.txt")
        );
        assert_eq!(
            decode_ext_value(b"iso-8859-1'en'%A3.txt").as_deref(),
            Some("\u{a3}.txt")
        );
        assert_eq!(decode_ext_value(b"UTF-8''%zz"), None);
        assert_eq!(decode_ext_value(b"UTF-8''%e2%8"), None);
        assert_eq!(decode_ext_value(b"UTF-8''%ff"), None);
        assert_eq!(decode_ext_value(b"koi8-r''abc"), None);
        assert_eq!(decode_ext_value(b"no-quotes"), None);
    }
}
