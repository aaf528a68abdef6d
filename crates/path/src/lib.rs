//! Request paths → storage keys, sans-IO.
//!
//! The request target is split on `/` *before* percent-decoding, and each
//! segment is decoded exactly once. A decoded segment that contains `/`, `\`
//! or NUL, or that is `.`/`..`, is refused: such a segment can never name a
//! file inside the root, and accepting it would let `%2e%2e`, `%2f` or `%5c`
//! smuggle a traversal past a check done on the encoded form. Names the
//! server reserves (temporary uploads, digest records: `.wirespeed-…`) are
//! refused too, so a half-written upload can never be read, listed, replaced
//! or deleted through the API.
//!
//! What this module guarantees — every segment of a [`RelPath`] is a plain
//! file name — is what lets the storage backend join segments onto its root
//! without re-checking them. Symlinks are the backend's business (it is the
//! only one that can see them).

use std::fmt;

/// Names with this prefix belong to the server (temporary uploads, digest
/// records): never served, listed, overwritten or deleted through the API.
pub const RESERVED_PREFIX: &str = ".wirespeed-";

/// Prefix of the temporary files uploads are written to before the rename.
pub const TEMP_PREFIX: &str = ".wirespeed-tmp-";

/// Longest name a segment may have, in bytes: Linux filesystems' NAME_MAX.
pub const MAX_NAME_BYTES: usize = 255;

/// Whether a file name is one of our temporary upload files.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

/// Whether a file name is reserved for the server (see [`RESERVED_PREFIX`]),
/// in any case: on a case-insensitive filesystem `.WIRESPEED-uploads` is
/// the same folder.
pub fn is_reserved_name(name: &str) -> bool {
    name.as_bytes()
        .get(..RESERVED_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(RESERVED_PREFIX.as_bytes()))
}

/// Why a request path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path must start with '/'")]
    NotAbsolute,
    #[error("malformed percent-encoding in the path")]
    BadEscape,
    #[error("the path is not valid UTF-8 once decoded")]
    NotUtf8,
    #[error("the path contains a NUL byte")]
    Nul,
    #[error("the path contains a backslash")]
    Backslash,
    #[error("the path contains a control character (names may not)")]
    ControlChar,
    #[error("the path contains an encoded '/' inside a name")]
    EncodedSlash,
    #[error("the path contains a '.' or '..' segment")]
    DotSegment,
    #[error("the path contains an empty segment ('//')")]
    EmptySegment,
    #[error("a name in the path is longer than 255 bytes")]
    NameTooLong,
    /// A temporary upload file or the control namespace: answered as missing.
    #[error("not found")]
    Hidden,
}

impl PathError {
    /// The status this rejection is answered with: hidden names look missing
    /// (404), everything else is a malformed request (400).
    pub fn status(self) -> u16 {
        match self {
            PathError::Hidden => 404,
            _ => 400,
        }
    }
}

/// A validated path relative to the storage root: zero or more plain names.
/// Zero segments is the root itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RelPath {
    segments: Vec<String>,
    /// The request path ended in `/` (asks for a directory).
    trailing_slash: bool,
}

impl RelPath {
    /// The root directory.
    pub fn root() -> Self {
        RelPath {
            segments: Vec::new(),
            trailing_slash: true,
        }
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// The request named a directory (`/dir/`, or `/`).
    pub fn trailing_slash(&self) -> bool {
        self.trailing_slash || self.segments.is_empty()
    }

    /// The last segment (the file name), if any.
    pub fn name(&self) -> Option<&str> {
        self.segments.last().map(String::as_str)
    }

    /// The parent directory's segments.
    pub fn parent(&self) -> &[String] {
        match self.segments.split_last() {
            Some((_, parent)) => parent,
            None => &[],
        }
    }

    /// The path of `segments` (each checked as [`RelPath::join`] does).
    pub fn from_segments(segments: &[String]) -> Result<RelPath, PathError> {
        segments.iter().try_fold(RelPath::root(), |p, s| p.join(s))
    }

    /// This path with one more name appended (used for listings' links).
    pub fn join(&self, name: &str) -> Result<RelPath, PathError> {
        check_segment(name)?;
        // `/-` is the control namespace, as in `parse_request_path`.
        if self.segments.is_empty() && name == "-" {
            return Err(PathError::Hidden);
        }
        let mut segments = self.segments.clone();
        segments.push(name.to_string());
        Ok(RelPath {
            segments,
            trailing_slash: false,
        })
    }

    /// The canonical URL path of this key, percent-encoded; `dir` adds the
    /// trailing slash.
    pub fn to_url(&self, dir: bool) -> String {
        let mut out = String::from("/");
        for (i, s) in self.segments.iter().enumerate() {
            if i > 0 {
                out.push('/');
            }
            encode_segment_into(s, &mut out);
        }
        if dir && !self.segments.is_empty() {
            out.push('/');
        }
        out
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_url(self.trailing_slash))
    }
}

/// Parse the path part of a request target (no query) into a [`RelPath`].
pub fn parse_request_path(raw: &str) -> Result<RelPath, PathError> {
    let rest = raw.strip_prefix('/').ok_or(PathError::NotAbsolute)?;
    if rest.is_empty() {
        return Ok(RelPath::root());
    }
    let (rest, trailing_slash) = match rest.strip_suffix('/') {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let mut segments = Vec::new();
    for encoded in rest.split('/') {
        if encoded.is_empty() {
            return Err(PathError::EmptySegment);
        }
        let bytes = percent_decode(encoded)?;
        let seg = String::from_utf8(bytes).map_err(|_| PathError::NotUtf8)?;
        check_segment(&seg)?;
        segments.push(seg);
    }
    // `/-/…` is the control namespace (health and friends), never a file.
    if segments.first().is_some_and(|s| s == "-") {
        return Err(PathError::Hidden);
    }
    Ok(RelPath {
        segments,
        trailing_slash,
    })
}

/// Whether one decoded name may appear in a storage key.
pub fn check_segment(seg: &str) -> Result<(), PathError> {
    if seg.is_empty() {
        return Err(PathError::EmptySegment);
    }
    if seg == "." || seg == ".." {
        return Err(PathError::DotSegment);
    }
    if seg.contains('\0') {
        return Err(PathError::Nul);
    }
    if seg.contains('\\') {
        return Err(PathError::Backslash);
    }
    // ESC, BEL, CR/LF, DEL, C1: a name that reaches a terminal or a log
    // must not be able to drive it.
    if seg.chars().any(char::is_control) {
        return Err(PathError::ControlChar);
    }
    if seg.contains('/') {
        return Err(PathError::EncodedSlash);
    }
    if seg.len() > MAX_NAME_BYTES {
        return Err(PathError::NameTooLong);
    }
    if is_reserved_name(seg) {
        return Err(PathError::Hidden);
    }
    Ok(())
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Strict percent-decoding: every `%` must start a two-hex-digit escape.
/// (Lenient decoders pass `%zz` through, which makes the decoded form
/// ambiguous; a 400 is clearer.)
pub fn percent_decode(s: &str) -> Result<Vec<u8>, PathError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hi = b.get(i + 1).copied().and_then(hex_val);
            let lo = b.get(i + 2).copied().and_then(hex_val);
            match (hi, lo) {
                (Some(h), Some(l)) => out.push(h << 4 | l),
                _ => return Err(PathError::BadEscape),
            }
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// Percent-encode one name for use as a URL path segment: everything but
/// RFC 3986 unreserved characters is escaped, so the result is also safe
/// inside an HTML attribute.
pub fn encode_segment_into(name: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in name.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
}

/// [`encode_segment_into`] into a new string.
pub fn encode_segment(name: &str) -> String {
    let mut s = String::with_capacity(name.len());
    encode_segment_into(name, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn segs(p: &str) -> Vec<String> {
        parse_request_path(p).unwrap().segments().to_vec()
    }

    #[test]
    fn plain_paths() {
        assert_eq!(segs("/"), Vec::<String>::new());
        assert!(parse_request_path("/").unwrap().trailing_slash());
        assert_eq!(segs("/a/b.txt"), ["a", "b.txt"]);
        assert!(!parse_request_path("/a/b.txt").unwrap().trailing_slash());
        assert!(parse_request_path("/a/").unwrap().trailing_slash());
        assert_eq!(segs("/a%20b/%C3%A9"), ["a b", "é"]);
        assert_eq!(segs("/.hidden/..x/x..")[0], ".hidden");
        assert_eq!(segs("/a+b"), ["a+b"]);
        // Decoded once: %2525 is the literal name "%25".
        assert_eq!(segs("/%2525"), ["%25"]);
    }

    #[test]
    fn traversal_and_junk_refused() {
        use PathError::*;
        let cases = [
            ("a", NotAbsolute),
            ("", NotAbsolute),
            ("http://x/a", NotAbsolute),
            ("/..", DotSegment),
            ("/../etc/passwd", DotSegment),
            ("/a/../../b", DotSegment),
            ("/a/./b", DotSegment),
            ("/%2e%2e/x", DotSegment),
            ("/%2E%2e", DotSegment),
            ("/.%2e/", DotSegment),
            ("/a%2f..%2fb", EncodedSlash),
            ("/%2f", EncodedSlash),
            ("/..%2fetc", EncodedSlash),
            ("/a%5c..%5cb", Backslash),
            ("/a\\b", Backslash),
            ("/a%00b", Nul),
            ("/a%1b]0;x%07", ControlChar),
            ("/a%0ab", ControlChar),
            ("/dir/%0d", ControlChar),
            ("/%7f", ControlChar),
            ("/%c2%9b", ControlChar),
            ("/a//b", EmptySegment),
            ("//", EmptySegment),
            ("/%zz", BadEscape),
            ("/%4", BadEscape),
            ("/%", BadEscape),
            ("/%ff", NotUtf8),
            ("/.wirespeed-tmp-123", Hidden),
            ("/a/.wirespeed-tmp-x/", Hidden),
            ("/%2Ewirespeed-tmp-1", Hidden),
            ("/.WIRESPEED-uploads/x", Hidden),
            ("/a/.Wirespeed-digests", Hidden),
            ("/-/health", Hidden),
            ("/-", Hidden),
        ];
        for (p, want) in cases {
            assert_eq!(parse_request_path(p), Err(want), "{p}");
        }
        assert_eq!(PathError::Hidden.status(), 404);
        assert_eq!(PathError::DotSegment.status(), 400);
    }

    #[test]
    fn urls_round_trip() {
        let p = parse_request_path("/a%20b/%3Cx%3E%22%27&?#").unwrap();
        assert_eq!(p.segments(), ["a b", "<x>\"'&?#"]);
        let url = p.to_url(false);
        assert_eq!(url, "/a%20b/%3Cx%3E%22%27%26%3F%23");
        assert_eq!(parse_request_path(&url).unwrap(), p);
        assert_eq!(RelPath::root().to_url(true), "/");
        assert_eq!(p.to_url(true), format!("{url}/"));
        assert!(RelPath::root().join("..").is_err());
        assert!(RelPath::root().join("a/b").is_err());
    }

    /// Lexically resolve `segs` under a root the way a filesystem would
    /// without symlinks; `None` means the walk went above the root.
    fn escapes(segs: &[String]) -> bool {
        let mut depth: i64 = 0;
        for s in segs {
            for part in s.split(['/', '\\']) {
                match part {
                    ".." => depth -= 1,
                    "" | "." => {}
                    _ => depth += 1,
                }
                if depth < 0 {
                    return true;
                }
            }
        }
        false
    }

    fn piece() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "a",
            "b",
            ".",
            "..",
            "/",
            "%2e",
            "%2E",
            "%2f",
            "%2F",
            "%5c",
            "%5C",
            "\\",
            "%00",
            "%",
            "%25",
            "2e",
            "e",
            "-",
            ".wirespeed-tmp-",
            ".wirespeed-digests",
            "%c3%a9",
            "%ff",
            " ",
        ])
        .prop_map(str::to_string)
    }

    proptest! {
        #[test]
        fn random_paths_never_escape(pieces in prop::collection::vec(piece(), 0..24)) {
            let raw = format!("/{}", pieces.concat());
            if let Ok(p) = parse_request_path(&raw) {
                prop_assert!(!escapes(p.segments()));
                for s in p.segments() {
                    prop_assert!(check_segment(s).is_ok());
                    prop_assert!(!s.contains('/') && !s.contains('\\') && !s.contains('\0'));
                    prop_assert!(s != "." && s != ".." && !s.is_empty());
                    prop_assert!(!is_reserved_name(s));
                }
                // Our own URLs parse back to the same key.
                prop_assert_eq!(parse_request_path(&p.to_url(p.trailing_slash())).unwrap(), p);
            }
        }

        #[test]
        fn any_string_is_total(raw in ".{0,64}") {
            // Never panics; anything accepted is made of plain names.
            if let Ok(p) = parse_request_path(&raw) {
                prop_assert!(!escapes(p.segments()));
            }
        }

        #[test]
        fn encode_decode_round_trip(name in "[^/\\\\\u{0}]{1,20}") {
            prop_assume!(check_segment(&name).is_ok());
            let enc = encode_segment(&name);
            prop_assert_eq!(percent_decode(&enc).unwrap(), name.as_bytes());
            prop_assert!(enc.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)));
        }
    }
}
