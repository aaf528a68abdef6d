//! XML character classes and reference decoding, the tokenizer's byte-level
//! helpers (no state: each answers for the bytes it is given).

pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// XML NameStartChar, approximated for bytes: every non-ASCII byte is
/// accepted (as part of some UTF-8 name character).
pub(crate) fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':' || b >= 0x80
}

pub(crate) fn is_name_char(b: u8) -> bool {
    is_name_start(b) || b.is_ascii_digit() || b == b'-' || b == b'.'
}

fn is_xml_char(c: u32) -> bool {
    matches!(c, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

/// The part of a qualified name after the prefix.
pub(crate) fn local_name(qname: &[u8]) -> &[u8] {
    match memchr::memrchr(b':', qname) {
        Some(i) => &qname[i + 1..],
        None => qname,
    }
}

/// Why a reference (`&...;`) cannot be decoded; the tokenizer adds the offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadRef {
    /// `&#...;` that is not a number naming an XML character.
    CharRef,
    /// A well-formed entity name other than the five predefined ones.
    UnknownEntity,
    /// Neither a character reference nor an entity name.
    Malformed,
}

/// Decodes a reference body (the bytes between `&` and `;`) to UTF-8: the
/// bytes and their length.
pub(crate) fn decode_ref(r: &[u8]) -> Result<([u8; 4], u8), BadRef> {
    let one = |b: u8| Ok(([b, 0, 0, 0], 1));
    // Line breaks first: encoders emit one per base64 line, so this is
    // on the per-line path (measured: generic parsing was ~15% of it).
    match r {
        b"#13" | b"#xD" | b"#xd" => return one(b'\r'),
        b"#10" | b"#xA" | b"#xa" => return one(b'\n'),
        _ => {}
    }
    if let Some(num) = r.strip_prefix(b"#") {
        let (digits, radix) = match num.strip_prefix(b"x") {
            Some(hex) => (hex, 16),
            None => (num, 10),
        };
        if digits.is_empty() {
            return Err(BadRef::CharRef);
        }
        let mut v: u32 = 0;
        for &d in digits {
            let d = (d as char).to_digit(radix).ok_or(BadRef::CharRef)?;
            v = v
                .checked_mul(radix)
                .and_then(|v| v.checked_add(d))
                .ok_or(BadRef::CharRef)?;
        }
        if !is_xml_char(v) {
            return Err(BadRef::CharRef);
        }
        let c = char::from_u32(v).ok_or(BadRef::CharRef)?;
        let mut buf = [0u8; 4];
        let len = c.encode_utf8(&mut buf).len() as u8;
        return Ok((buf, len));
    }
    match r {
        b"amp" => one(b'&'),
        b"lt" => one(b'<'),
        b"gt" => one(b'>'),
        b"quot" => one(b'"'),
        b"apos" => one(b'\''),
        _ if r.first().is_some_and(|&b| is_name_start(b)) => Err(BadRef::UnknownEntity),
        _ => Err(BadRef::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_decode_to_utf8() {
        assert_eq!(decode_ref(b"#13"), Ok(([b'\r', 0, 0, 0], 1)));
        assert_eq!(decode_ref(b"#x41"), Ok(([b'A', 0, 0, 0], 1)));
        assert_eq!(decode_ref(b"#x20AC"), Ok(([0xE2, 0x82, 0xAC, 0], 3)));
        assert_eq!(decode_ref(b"amp"), Ok(([b'&', 0, 0, 0], 1)));
        assert_eq!(decode_ref(b"#"), Err(BadRef::CharRef));
        assert_eq!(decode_ref(b"#x0"), Err(BadRef::CharRef));
        assert_eq!(decode_ref(b"#99999999999"), Err(BadRef::CharRef));
        assert_eq!(decode_ref(b"#xD800"), Err(BadRef::CharRef));
        assert_eq!(decode_ref(b"nbsp"), Err(BadRef::UnknownEntity));
        assert_eq!(decode_ref(b"1x"), Err(BadRef::Malformed));
    }
}
