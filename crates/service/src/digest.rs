//! RFC 9530 integrity fields: read the sha-256 a client announced in
//! `Repr-Digest` / `Content-Digest`, and format ours. Sans-IO apart from
//! [`expected_from`], which only reads the two headers of an exchange.
//!
//! The fields are Structured Field Dictionaries (RFC 8941):
//! `sha-256=:BASE64:, sha-512=:BASE64:`. We only verify sha-256; other
//! algorithms are skipped. A sha-256 member that is not a well-formed
//! 32-byte byte sequence is a client error (400), not something to ignore:
//! the client asked for integrity checking and would otherwise get none.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// Why an integrity field was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    #[error("malformed {0} header: sha-256 must be a byte sequence like sha-256=:BASE64:")]
    Malformed(&'static str),
    #[error("{0} sha-256 is not 32 bytes")]
    WrongLength(&'static str),
    #[error("{0} and another digest field disagree on sha-256")]
    Conflict(&'static str),
}

/// The sha-256 announced in one field value, if it has a sha-256 member.
/// `field` names the header in errors.
pub fn sha256_member(field: &'static str, value: &str) -> Result<Option<[u8; 32]>, DigestError> {
    let mut found = None;
    // Base64 never contains ',' so a plain split finds the members.
    for member in value.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        let (key, rest) = member.split_once('=').unwrap_or((member, ""));
        if key.trim() != "sha-256" {
            continue;
        }
        // Parameters (`;k=v`) may follow the item; they carry nothing for us.
        let item = rest.split(';').next().unwrap_or("").trim();
        let b64 = item
            .strip_prefix(':')
            .and_then(|s| s.strip_suffix(':'))
            .ok_or(DigestError::Malformed(field))?;
        let bytes = STANDARD
            .decode(b64)
            .map_err(|_| DigestError::Malformed(field))?;
        let sum: [u8; 32] = bytes
            .try_into()
            .map_err(|_| DigestError::WrongLength(field))?;
        // RFC 8941: a repeated key's last value wins.
        found = Some(sum);
    }
    Ok(found)
}

/// The sha-256 the client expects the stored bytes to have, from
/// `Repr-Digest` and/or `Content-Digest` (without content codings the two
/// describe the same bytes; if both carry sha-256 they must agree).
pub fn expected_sha256(
    repr: Option<&str>,
    content: Option<&str>,
) -> Result<Option<[u8; 32]>, DigestError> {
    let r = repr
        .map(|v| sha256_member("Repr-Digest", v))
        .transpose()?
        .flatten();
    let c = content
        .map(|v| sha256_member("Content-Digest", v))
        .transpose()?
        .flatten();
    match (r, c) {
        (Some(a), Some(b)) if a != b => Err(DigestError::Conflict("Repr-Digest")),
        (a, b) => Ok(a.or(b)),
    }
}

/// [`expected_sha256`] from a request's `Repr-Digest` and `Content-Digest`
/// headers (the one place that touches an exchange): a field that is not
/// text, or a refused value, is a 400.
pub fn expected_from(
    ex: &wirespeed_net::Exchange,
) -> Result<Option<[u8; 32]>, wirespeed_net::Error> {
    use wirespeed_net::Error;
    let field = |name: &str| -> Result<Option<&str>, Error> {
        match ex.header(name) {
            None => Ok(None),
            Some(v) => std::str::from_utf8(v)
                .map(Some)
                .map_err(|_| Error::status(400, format!("{name} is not text"))),
        }
    };
    expected_sha256(field("repr-digest")?, field("content-digest")?)
        .map_err(|e| Error::status(400, e.to_string()))
}

/// When the server computes the sha-256 of what it stores and serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DigestPolicy {
    /// Only when a request asks (RFC 9530 §4: `Want-Repr-Digest` or
    /// `Want-Content-Digest` naming sha-256), or announces a digest to
    /// verify. An unhashed upload runs at the speed of the disk; the hash
    /// costs about 0.7 CPU-seconds per GiB.
    #[default]
    OnRequest,
    /// Every upload is hashed and its digest recorded.
    Always,
}

/// Whether a `Want-Repr-Digest`/`Want-Content-Digest` value asks for
/// sha-256: a dictionary of algorithm = preference 0–10 (RFC 9530 §4),
/// where 0 means "not acceptable". A malformed preference counts as not
/// asking (the field is a hint).
pub fn wants_sha256(value: &str) -> bool {
    value.split(',').any(|member| {
        let member = member.trim_matches([' ', '\t']);
        let (key, rest) = member.split_once('=').unwrap_or((member, "?1"));
        if key.trim() != "sha-256" {
            return false;
        }
        let item = rest.split(';').next().unwrap_or("").trim();
        match item {
            // A bare key is boolean true in a structured dictionary.
            "?1" => true,
            v => v.parse::<u8>().is_ok_and(|w| (1..=10).contains(&w)),
        }
    })
}

/// Whether a request asks for the sha-256 of the representation (either
/// `Want-*-Digest` field names it).
pub fn asked_for(ex: &wirespeed_net::Exchange) -> bool {
    ["want-repr-digest", "want-content-digest"]
        .iter()
        .any(|f| ex.header_str(f).is_some_and(wants_sha256))
}

/// Whether an upload must be hashed: the policy says always, the client
/// asked, or the client announced a digest to verify (`expected`).
pub fn hash_upload(
    policy: DigestPolicy,
    ex: &wirespeed_net::Exchange,
    expected: Option<&[u8; 32]>,
) -> bool {
    policy == DigestPolicy::Always || expected.is_some() || asked_for(ex)
}

/// Lowercase hex, as `sha256sum` prints it (the form answer's `sha256`, the
/// recorded digests): the storage's digest records define it.
pub use wirespeed_storage::digest_store::hex;

/// `sha-256=:BASE64:` for a response's `Repr-Digest`.
pub fn format_sha256(sum: &[u8; 32]) -> String {
    format!("sha-256=:{}:", STANDARD.encode(sum))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn sum(b: &[u8]) -> [u8; 32] {
        Sha256::digest(b).into()
    }

    #[test]
    fn parse_and_format() {
        let s = sum(b"hello");
        let f = format_sha256(&s);
        assert_eq!(f, "sha-256=:LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=:");
        assert_eq!(sha256_member("R", &f), Ok(Some(s)));
        let dict = format!("sha-512=:AAAA:, {f};p=1, unixsum=:AA==:");
        assert_eq!(sha256_member("R", &dict), Ok(Some(s)));
        assert_eq!(sha256_member("R", "sha-512=:AAAA:"), Ok(None));
        assert_eq!(sha256_member("R", ""), Ok(None));
        assert!(matches!(
            sha256_member("R", "sha-256=abc"),
            Err(DigestError::Malformed(_))
        ));
        assert!(matches!(
            sha256_member("R", "sha-256=:!!!:"),
            Err(DigestError::Malformed(_))
        ));
        assert!(matches!(
            sha256_member("R", "sha-256=:AAAA:"),
            Err(DigestError::WrongLength(_))
        ));
        assert!(matches!(
            sha256_member("R", "sha-256"),
            Err(DigestError::Malformed(_))
        ));
    }

    #[test]
    fn want_digest_preferences() {
        for yes in [
            "sha-256=10",
            "sha-256=1",
            "sha-512=3, sha-256=5",
            "sha-256",
            "sha-256=3;x=1",
            " sha-256=7 ",
        ] {
            assert!(wants_sha256(yes), "{yes}");
        }
        for no in [
            "",
            "sha-256=0",
            "sha-512=10",
            "sha-256=11",
            "sha-256=x",
            "sha-256=-1",
            "sha-2560=5",
        ] {
            assert!(!wants_sha256(no), "{no}");
        }
    }

    proptest::proptest! {
        #[test]
        fn want_digest_never_panics(s in ".{0,80}") {
            let _ = wants_sha256(&s);
        }
    }

    #[test]
    fn both_fields() {
        let a = format_sha256(&sum(b"a"));
        let b = format_sha256(&sum(b"b"));
        assert_eq!(expected_sha256(None, None), Ok(None));
        assert_eq!(expected_sha256(Some(&a), None), Ok(Some(sum(b"a"))));
        assert_eq!(expected_sha256(None, Some(&b)), Ok(Some(sum(b"b"))));
        assert_eq!(expected_sha256(Some(&a), Some(&a)), Ok(Some(sum(b"a"))));
        assert!(expected_sha256(Some(&a), Some(&b)).is_err());
        assert_eq!(
            expected_sha256(Some("md5=:AA==:"), Some(&b)),
            Ok(Some(sum(b"b")))
        );
    }
}
