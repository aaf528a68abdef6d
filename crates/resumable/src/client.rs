//! The client side, without I/O: which protocol a server announces, when a
//! failed request is worth retrying, how long to wait before the next try,
//! and how big the next append may be.

use std::time::Duration;

use base64::Engine as _;

use crate::ietf::{self, ParsedLimit};
use crate::tus;

/// How a file is uploaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientProtocol {
    /// The IETF draft (interop version [`ietf::INTEROP_VERSION`]).
    Ietf,
    /// tus 1.0.0.
    Tus,
    /// A plain PUT: cannot resume, a retry starts from byte 0.
    Put,
}

impl ClientProtocol {
    /// The name used on the command line and in state files.
    pub fn name(self) -> &'static str {
        match self {
            ClientProtocol::Ietf => "ietf",
            ClientProtocol::Tus => "tus",
            ClientProtocol::Put => "put",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "ietf" => Some(ClientProtocol::Ietf),
            "tus" => Some(ClientProtocol::Tus),
            "put" => Some(ClientProtocol::Put),
            _ => None,
        }
    }
}

/// What a discovery (`OPTIONS`) answer announces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Announced {
    /// The IETF draft: an `Upload-Limit` field, or our interop version.
    pub ietf: Option<ParsedLimit>,
    /// tus 1.0.0 in `Tus-Version`.
    pub tus: bool,
    /// `Tus-Max-Size`, when tus is announced with one.
    pub tus_max_size: Option<u64>,
    /// tus with the concatenation extension in `Tus-Extension`: a file may
    /// go up as partial uploads in parallel, joined by a final one.
    pub tus_concatenation: bool,
}

impl Announced {
    /// Reads the fields of an `OPTIONS` answer; `field` looks one up by name
    /// (case-insensitive, raw value).
    pub fn from_fields<'a>(field: impl Fn(&str) -> Option<&'a [u8]>) -> Announced {
        let interop = field("Upload-Draft-Interop-Version").and_then(ietf::integer)
            == Some(ietf::INTEROP_VERSION);
        let limit = field("Upload-Limit").and_then(ietf::parse_limit);
        let ietf = match (limit, interop) {
            (Some(l), _) => Some(l),
            (None, true) => Some(ParsedLimit::default()),
            (None, false) => None,
        };
        let tus = field("Tus-Version")
            .and_then(|v| std::str::from_utf8(v).ok())
            .is_some_and(|v| v.split(',').any(|x| x.trim() == tus::VERSION));
        let tus_max_size = field("Tus-Max-Size")
            .filter(|_| tus)
            .and_then(crate::parse_decimal);
        let tus_concatenation = tus
            && field("Tus-Extension")
                .and_then(|v| std::str::from_utf8(v).ok())
                .is_some_and(|v| v.split(',').any(|x| x.trim() == tus::CONCATENATION));
        Announced {
            ietf,
            tus,
            tus_max_size,
            tus_concatenation,
        }
    }

    /// The protocol to use: the IETF draft first, then tus, else PUT.
    pub fn choose(&self) -> ClientProtocol {
        if self.ietf.is_some() {
            ClientProtocol::Ietf
        } else if self.tus {
            ClientProtocol::Tus
        } else {
            ClientProtocol::Put
        }
    }
}

/// Whether a final status is worth another try: server errors, timeouts,
/// rate limits and offset conflicts (the offset is asked again first);
/// other client errors would fail the same way again.
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 423 | 429) || (500..600).contains(&status)
}

/// Exponential back-off with full jitter: attempt `n` (0-based) waits a
/// uniformly random time in `[0, min(cap, base * 2^n)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    /// The ceiling for attempt `n`: `min(cap, base * 2^n)`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The wait before retry `attempt`, given a uniformly random `u64`.
    pub fn delay(&self, attempt: u32, random: u64) -> Duration {
        let ceiling = self.ceiling(attempt).as_nanos() as u64;
        // `random % (ceiling + 1)` keeps the ceiling itself reachable.
        Duration::from_nanos(random % ceiling.saturating_add(1))
    }
}

/// The length of the next append from `offset` of a `total`-byte upload:
/// the rest, capped by the server's `max-append-size` and by the client's
/// own cap (shrunk after appends that were cut without progress). Zero
/// only when nothing is left.
pub fn next_append(offset: u64, total: u64, server_cap: Option<u64>, own_cap: u64) -> u64 {
    let rest = total.saturating_sub(offset);
    let cap = server_cap.unwrap_or(u64::MAX).min(own_cap).max(1);
    rest.min(cap)
}

/// `Upload-Metadata` for tus: `key base64(value)` pairs, comma-separated.
pub fn encode_metadata(pairs: &[(&str, &[u8])]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                (*k).to_string()
            } else {
                format!(
                    "{k} {}",
                    base64::engine::general_purpose::STANDARD.encode(v)
                )
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The offset an answer reports in `Upload-Offset` (tus: decimal; IETF:
/// an sf-integer), if it is a valid one.
pub fn parse_offset(protocol: ClientProtocol, raw: &[u8]) -> Option<u64> {
    match protocol {
        ClientProtocol::Tus => crate::parse_decimal(raw),
        _ => ietf::integer(raw).and_then(|n| u64::try_from(n).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fields<'a>(list: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a [u8]> + 'a {
        move |name| {
            list.iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_bytes())
        }
    }

    #[test]
    fn discovery_prefers_the_draft_then_tus_then_put() {
        let both = [
            ("Tus-Version", "1.0.0"),
            ("Upload-Limit", "max-size=100, max-append-size=10"),
        ];
        let a = Announced::from_fields(fields(&both));
        assert_eq!(a.choose(), ClientProtocol::Ietf);
        assert_eq!(a.ietf.unwrap().max_append_size, Some(10));
        let tus = [("Tus-Version", "0.2.2, 1.0.0"), ("Tus-Max-Size", "77")];
        let a = Announced::from_fields(fields(&tus));
        assert_eq!(
            (a.choose(), a.tus_max_size),
            (ClientProtocol::Tus, Some(77))
        );
        let interop = [("upload-draft-interop-version", "8")];
        assert_eq!(
            Announced::from_fields(fields(&interop)).choose(),
            ClientProtocol::Ietf
        );
        let other = [
            ("Upload-Draft-Interop-Version", "6"),
            ("Tus-Version", "0.2"),
        ];
        assert_eq!(
            Announced::from_fields(fields(&other)).choose(),
            ClientProtocol::Put
        );
        assert_eq!(
            Announced::from_fields(fields(&[])).choose(),
            ClientProtocol::Put
        );
    }

    #[test]
    fn concatenation_is_read_from_tus_extension() {
        let with = [
            ("Tus-Version", "1.0.0"),
            ("Tus-Extension", "creation,termination, concatenation"),
        ];
        assert!(Announced::from_fields(fields(&with)).tus_concatenation);
        let without = [
            ("Tus-Version", "1.0.0"),
            ("Tus-Extension", "creation,concatenation-unfinished"),
        ];
        assert!(!Announced::from_fields(fields(&without)).tus_concatenation);
        let no_tus = [("Tus-Extension", "concatenation")];
        assert!(!Announced::from_fields(fields(&no_tus)).tus_concatenation);
    }

    #[test]
    fn statuses_worth_retrying() {
        for s in [408, 409, 429, 500, 502, 503, 504] {
            assert!(retryable_status(s), "{s}");
        }
        for s in [200, 201, 204, 400, 401, 403, 404, 410, 412, 413, 415] {
            assert!(!retryable_status(s), "{s}");
        }
    }

    #[test]
    fn appends_split_at_the_smallest_cap() {
        assert_eq!(next_append(0, 100, None, u64::MAX), 100);
        assert_eq!(next_append(90, 100, Some(30), u64::MAX), 10);
        assert_eq!(next_append(0, 100, Some(30), 20), 20);
        assert_eq!(next_append(100, 100, Some(30), 20), 0);
        assert_eq!(next_append(0, 100, Some(0), 0), 1, "a zero cap still moves");
    }

    #[test]
    fn metadata_round_trips_through_the_servers_parser() {
        let m = encode_metadata(&[("filename", "ünï 1.bin".as_bytes()), ("flag", b"")]);
        let parsed = tus::parse_metadata(m.as_bytes()).unwrap();
        assert_eq!(
            parsed,
            vec![
                (
                    "filename".to_string(),
                    Some("ünï 1.bin".as_bytes().to_vec())
                ),
                ("flag".to_string(), None)
            ]
        );
    }

    #[test]
    fn offsets_per_protocol() {
        assert_eq!(parse_offset(ClientProtocol::Tus, b"42"), Some(42));
        assert_eq!(parse_offset(ClientProtocol::Tus, b"-1"), None);
        assert_eq!(parse_offset(ClientProtocol::Ietf, b"42"), Some(42));
        assert_eq!(parse_offset(ClientProtocol::Ietf, b"-1"), None);
        assert_eq!(parse_offset(ClientProtocol::Ietf, b"x"), None);
        for p in [
            ClientProtocol::Ietf,
            ClientProtocol::Tus,
            ClientProtocol::Put,
        ] {
            assert_eq!(ClientProtocol::from_name(p.name()), Some(p));
        }
    }

    #[test]
    fn backoff_grows_to_its_cap() {
        let b = Backoff::default();
        assert_eq!(b.ceiling(0), Duration::from_millis(500));
        assert_eq!(b.ceiling(1), Duration::from_secs(1));
        assert_eq!(b.ceiling(5), Duration::from_secs(16));
        assert_eq!(b.ceiling(6), Duration::from_secs(30));
        assert_eq!(b.ceiling(u32::MAX), Duration::from_secs(30));
        assert_eq!(b.delay(3, u64::MAX), b.delay(3, u64::MAX));
    }

    proptest! {
        #[test]
        fn backoff_delays_stay_within_their_ceiling(
            attempt in 0u32..200,
            random: u64,
            base_ms in 1u64..5_000,
            cap_ms in 1u64..600_000,
        ) {
            let b = Backoff {
                base: Duration::from_millis(base_ms),
                cap: Duration::from_millis(cap_ms),
            };
            let d = b.delay(attempt, random);
            prop_assert!(d <= b.ceiling(attempt));
            prop_assert!(b.ceiling(attempt) <= b.cap);
            prop_assert!(b.ceiling(attempt) >= b.ceiling(attempt.saturating_sub(1)));
        }
    }
}
