//! Upload resource names: 128 random bits as 32 lowercase hex digits, so a
//! name is unguessable and always a safe file name.

use std::fmt;

/// The name of one upload resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UploadId([u8; 16]);

impl UploadId {
    /// An id from 16 random bytes (the caller supplies the randomness, so
    /// this crate stays free of I/O).
    pub fn from_random(bytes: [u8; 16]) -> Self {
        UploadId(bytes)
    }

    /// Parses the 32-hex-digit form; anything else (upper case, other
    /// lengths, dots, slashes) is not an id.
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            out[i] = (hex_value(pair[0])? << 4) | hex_value(pair[1])?;
        }
        Some(UploadId(out))
    }
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for UploadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn display_then_parse_round_trips(bytes in any::<[u8; 16]>()) {
            let id = UploadId::from_random(bytes);
            let text = id.to_string();
            prop_assert_eq!(text.len(), 32);
            prop_assert_eq!(UploadId::parse(&text), Some(id));
        }

        #[test]
        fn parse_never_accepts_path_characters(text in "\\PC{0,40}") {
            if let Some(id) = UploadId::parse(&text) {
                prop_assert_eq!(id.to_string(), text);
            }
        }
    }

    #[test]
    fn rejects_non_canonical_forms() {
        let good = "0123456789abcdef0123456789abcdef";
        assert!(UploadId::parse(good).is_some());
        for bad in [
            "0123456789ABCDEF0123456789abcdef",
            "0123456789abcdef0123456789abcde",
            "0123456789abcdef0123456789abcdef0",
            "../3456789abcdef0123456789abcdef",
            "",
        ] {
            assert_eq!(UploadId::parse(bad), None, "{bad}");
        }
    }
}
