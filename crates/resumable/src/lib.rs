//! Resumable uploads without I/O: tus 1.0.0 and the IETF draft "Resumable
//! Uploads for HTTP" (interop version 8), reduced to decisions over one
//! upload state, so both protocols share one partial-upload store.
//!
//! The service reads request fields into [`tus::Fields`] or [`ietf::Fields`],
//! asks this crate whether to accept (an [`Append`] plan) or what to answer
//! instead (a [`Refusal`]), moves the bytes itself, then reports what arrived
//! with [`UploadState::record`]. Nothing here touches a socket or a file.

pub mod client;
pub mod concat;
mod id;
pub mod ietf;
mod state;
pub mod tus;

pub use id::UploadId;
pub use state::{Progress, Protocol, StateError, UploadState};

/// Server-wide limits on resumable uploads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest representation one upload may reach, in bytes.
    pub max_size: u64,
    /// Largest request body one append may carry (`None`: up to `max_size`).
    pub max_append_size: Option<u64>,
    /// Seconds an upload lives after its creation before the sweep removes it.
    pub lifetime_secs: u64,
}

impl Limits {
    /// Most bytes one request may add to an upload of `length` (unknown: up
    /// to `max_size`) that holds `offset`: what is left of it, capped by
    /// `max_append_size`. tus and the IETF draft both answer with this.
    pub fn room(&self, length: Option<u64>, offset: u64) -> u64 {
        length
            .unwrap_or(self.max_size)
            .min(self.max_size)
            .saturating_sub(offset)
            .min(self.max_append_size.unwrap_or(u64::MAX))
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_size: 1 << 40,
            max_append_size: None,
            lifetime_secs: 24 * 3600,
        }
    }
}

/// An accepted request that carries upload bytes: where they go and how many
/// may come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Append {
    /// Offset the request's first content byte lands at.
    pub offset: u64,
    /// Most bytes this request may add; more is refused as too large.
    pub max_bytes: u64,
    /// A length this request makes known (a deferred length, or the IETF
    /// `Upload-Length`/`Upload-Complete: ?1` with `Content-Length`).
    pub set_length: Option<u64>,
    /// The client says this request's content ends the upload (IETF
    /// `Upload-Complete: ?1`); tus uploads complete when offset reaches length.
    pub completes: bool,
    /// A checksum over this request's content to verify before the bytes
    /// count (tus checksum extension); a mismatch discards them.
    pub checksum: Option<Checksum>,
}

/// A digest algorithm the tus checksum extension may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumAlgorithm {
    Sha1,
    Sha256,
}

impl ChecksumAlgorithm {
    /// The name as tus writes it in `Upload-Checksum`.
    pub fn name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Sha1 => "sha1",
            ChecksumAlgorithm::Sha256 => "sha256",
        }
    }
}

/// An expected digest of one request's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksum {
    pub algorithm: ChecksumAlgorithm,
    pub digest: Vec<u8>,
}

/// Why a request is refused; [`Refusal::status`] gives the HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// tus: missing or unsupported `Tus-Resumable` (412).
    UnsupportedVersion,
    /// A required field is missing or malformed (400).
    BadField,
    /// The content type is not the protocol's append type (415).
    WrongContentType,
    /// `Upload-Offset` differs from the upload's offset (409).
    OffsetMismatch,
    /// Lengths given by different fields or requests disagree (400).
    InconsistentLength,
    /// The upload or this request's content is larger than allowed (413).
    TooLarge,
    /// The upload is complete; nothing more can be appended (400).
    AlreadyComplete,
    /// The asker may not use what it named (403): another principal's
    /// partial upload, or appending to a final upload.
    Forbidden,
    /// The upload is in a state that excludes the request (409): a partial
    /// upload already part of a final one.
    Conflict,
}

/// What to answer instead of accepting a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: Reason,
    /// One line for a person: what was wrong.
    pub message: String,
    /// Fields the answer must carry (e.g. the right `Upload-Offset`).
    pub headers: Vec<(&'static str, String)>,
    /// An RFC 9457 problem document (`application/problem+json`) to send as
    /// the body instead of the message, where the protocol defines one.
    pub problem: Option<String>,
}

impl Refusal {
    pub(crate) fn new(reason: Reason, message: impl Into<String>) -> Self {
        Refusal {
            reason,
            message: message.into(),
            headers: Vec::new(),
            problem: None,
        }
    }

    fn with(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The HTTP status of the answer.
    pub fn status(&self) -> u16 {
        match self.reason {
            Reason::UnsupportedVersion => 412,
            Reason::BadField | Reason::InconsistentLength | Reason::AlreadyComplete => 400,
            Reason::WrongContentType => 415,
            Reason::OffsetMismatch | Reason::Conflict => 409,
            Reason::Forbidden => 403,
            Reason::TooLarge => 413,
        }
    }
}

/// Whether a `Content-Type` value names `expected` (parameters ignored,
/// case-insensitive, as RFC 9110 §8.3.1 compares media types).
pub(crate) fn media_type_is(value: Option<&[u8]>, expected: &str) -> bool {
    value
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(expected))
}

/// Parses a decimal byte count as tus writes it (`1*DIGIT`): no sign, no
/// spaces, at most 19 digits so it fits `u64` without overflow checks failing.
pub(crate) fn parse_decimal(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    value.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_accepts_digits_only() {
        assert_eq!(parse_decimal(b"0"), Some(0));
        assert_eq!(parse_decimal(b"1234567890"), Some(1_234_567_890));
        assert_eq!(parse_decimal(b"9223372036854775807"), Some(i64::MAX as u64));
        for bad in [
            &b""[..],
            b"-1",
            b"+1",
            b" 1",
            b"1 ",
            b"1.0",
            b"0x10",
            b"99999999999999999999",
        ] {
            assert_eq!(
                parse_decimal(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn media_types_compare_without_parameters_or_case() {
        let t = "application/partial-upload";
        assert!(media_type_is(Some(b"application/partial-upload"), t));
        assert!(media_type_is(Some(b"Application/Partial-Upload; x=1"), t));
        assert!(!media_type_is(Some(b"application/partial-uploads"), t));
        assert!(!media_type_is(Some(b"\xff"), t));
        assert!(!media_type_is(None, t));
    }

    #[test]
    fn each_reason_has_its_status() {
        let s = |r| Refusal::new(r, "").status();
        assert_eq!(s(Reason::UnsupportedVersion), 412);
        assert_eq!(s(Reason::OffsetMismatch), 409);
        assert_eq!(s(Reason::WrongContentType), 415);
        assert_eq!(s(Reason::TooLarge), 413);
        assert_eq!(s(Reason::BadField), 400);
    }
}
