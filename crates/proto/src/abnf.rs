//! RFC grammar shared by the parsers: one home for the character classes and
//! list rules, so `head`, `framing` and `chunked` depend on it and never on
//! each other.

/// `tchar` (RFC 9110 §5.6.2):
/// `"!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA`.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

/// Strip `OWS = *( SP / HTAB )` (RFC 9110 §5.6.3) from both ends.
pub(crate) fn trim_ows(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |i| i + 1);
    &v[start..end]
}

/// Whether any of the comma-separated lists in `values` (`#element`, RFC 9110
/// §5.6.1, repeated fields joined) contains `token`, case-insensitively.
pub(crate) fn list_has<'a>(values: impl Iterator<Item = &'a [u8]>, token: &str) -> bool {
    values
        .flat_map(|v| v.split(|&b| b == b','))
        .any(|item| trim_ows(item).eq_ignore_ascii_case(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tchar_is_exactly_the_rfc_set() {
        let rfc: Vec<u8> = (0u8..=255)
            .filter(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b))
            .collect();
        let ours: Vec<u8> = (0u8..=255).filter(|&b| is_tchar(b)).collect();
        assert_eq!(ours, rfc);
    }

    #[test]
    fn ows_is_space_and_tab_only() {
        assert_eq!(trim_ows(b" \t a b \t "), b"a b");
        assert_eq!(trim_ows(b"\r\na\r\n"), b"\r\na\r\n");
        assert_eq!(trim_ows(b"  "), b"");
    }

    #[test]
    fn list_membership_spans_repeated_fields() {
        let fields: [&[u8]; 2] = [b"foo, Keep-Alive", b" close "];
        assert!(list_has(fields.iter().copied(), "close"));
        assert!(list_has(fields.iter().copied(), "keep-alive"));
        assert!(!list_has(fields.iter().copied(), "upgrade"));
        assert!(!list_has([&b"closed"[..]].into_iter(), "close"));
    }
}
