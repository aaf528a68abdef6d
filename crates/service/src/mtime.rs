//! `X-OC-Mtime`: the modification time an uploader asks the stored file to
//! get, in Unix seconds (what rclone, ownCloud and Nextcloud clients send
//! with a PUT). Sans-IO: the field's value in, a time or a refusal out.
//!
//! Grammar (strict): optional spaces, `1*DIGIT [ "." 1*9DIGIT ]`, optional
//! spaces; at most year 9999. A fraction is accepted (Nextcloud accepts it)
//! and dropped: the protocol carries whole seconds. Anything else is a 400
//! before the body is read, like Nextcloud's "X-OC-MTime header must be an
//! integer": a client that asked for a time and silently did not get it
//! would believe the copy matches.
//!
//! The stored time is the asked second plus the server's own fraction of
//! the current second ([`stamp`]): `Last-Modified` and every second-precision
//! comparison (rclone, wget, `curl -R`) see exactly the asked time, while two
//! uploads of the same size with the same asked time still get different
//! ETags (size + mtime in nanoseconds), so a cache or an `If-Range` resume
//! never mistakes one for the other.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The request field (lower case, as the exchange looks fields up).
pub const FIELD: &str = "x-oc-mtime";
/// The answer's field name and its value when the time was applied.
pub const ANSWER: (&str, &str) = ("X-OC-Mtime", "accepted");
/// 9999-12-31T23:59:59Z: the last second an HTTP date can show.
pub const MAX_SECS: u64 = 253_402_300_799;

/// Why an `X-OC-Mtime` value is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MtimeError {
    #[error("X-OC-Mtime must be Unix seconds (digits, optionally a fraction), e.g. 1700000000")]
    Syntax,
    #[error("X-OC-Mtime is after year 9999")]
    TooLate,
}

/// The whole seconds in an `X-OC-Mtime` value.
pub fn parse(value: &[u8]) -> Result<u64, MtimeError> {
    let v = value.trim_ascii();
    let (whole, fraction) = match v.iter().position(|&b| b == b'.') {
        Some(i) => (&v[..i], Some(&v[i + 1..])),
        None => (v, None),
    };
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    if !digits(whole) || fraction.is_some_and(|f| !digits(f) || f.len() > 9) {
        return Err(MtimeError::Syntax);
    }
    let mut secs: u64 = 0;
    for &d in whole {
        secs = secs
            .checked_mul(10)
            .and_then(|s| s.checked_add(u64::from(d - b'0')))
            .ok_or(MtimeError::TooLate)?;
    }
    if secs > MAX_SECS {
        return Err(MtimeError::TooLate);
    }
    Ok(secs)
}

/// The time to store for `secs`: that second, with `now`'s fraction (see
/// the module comment for why).
pub fn stamp(secs: u64, now: SystemTime) -> SystemTime {
    let nanos = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    UNIX_EPOCH + Duration::new(secs, nanos)
}

/// The time a request asks for: `Ok(None)` without the field, a 400 for a
/// malformed one.
pub fn requested(
    ex: &mut wirespeed_net::Exchange,
) -> Result<Option<SystemTime>, wirespeed_net::Error> {
    let Some(v) = ex.header(FIELD) else {
        return Ok(None);
    };
    match parse(v) {
        Ok(secs) => Ok(Some(stamp(secs, SystemTime::now()))),
        Err(e) => {
            crate::respond::close_if_body(ex);
            Err(wirespeed_net::Error::status(
                400,
                format!("{e}; nothing was stored"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_values() {
        assert_eq!(parse(b"1700000000"), Ok(1_700_000_000));
        assert_eq!(parse(b" 0 "), Ok(0));
        assert_eq!(parse(b"0001"), Ok(1));
        assert_eq!(parse(b"1700000000.5"), Ok(1_700_000_000));
        assert_eq!(parse(b"1700000000.123456789"), Ok(1_700_000_000));
        assert_eq!(parse(b"253402300799"), Ok(MAX_SECS));
    }

    #[test]
    fn refused_values() {
        for bad in [
            &b""[..],
            b" ",
            b"-1",
            b"+1",
            b"1e9",
            b"0x10",
            b"12 34",
            b"1.",
            b".5",
            b"1.1234567890",
            b"1,5",
            b"abc",
            b"\xff",
            b"1700000000\r\n1",
        ] {
            assert_eq!(parse(bad), Err(MtimeError::Syntax), "{bad:?}");
        }
        assert_eq!(parse(b"253402300800"), Err(MtimeError::TooLate));
        assert_eq!(parse(b"99999999999999999999999"), Err(MtimeError::TooLate));
    }

    #[test]
    fn the_stamp_keeps_the_second_and_takes_the_fraction_of_now() {
        let now = UNIX_EPOCH + Duration::new(5, 123_456_789);
        let t = stamp(1_700_000_000, now);
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap(),
            Duration::new(1_700_000_000, 123_456_789)
        );
        assert_eq!(httpdate::fmt_http_date(t), "Tue, 14 Nov 2023 22:13:20 GMT");
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_agrees_with_a_reference(v in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            let got = parse(&v);
            let text = std::str::from_utf8(&v).ok().map(|s| s.trim_matches(|c: char| c.is_ascii_whitespace()));
            let reference = text.and_then(|s| {
                let (w, f) = s.split_once('.').map_or((s, None), |(w, f)| (w, Some(f)));
                let ok = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
                (ok(w) && f.is_none_or(|f| ok(f) && f.len() <= 9)).then_some(w)
            });
            match reference {
                None => proptest::prop_assert_eq!(got, Err(MtimeError::Syntax)),
                Some(w) => match w.parse::<u64>() {
                    Ok(n) if n <= MAX_SECS => proptest::prop_assert_eq!(got, Ok(n)),
                    _ => proptest::prop_assert_eq!(got, Err(MtimeError::TooLate)),
                },
            }
        }

        #[test]
        fn every_valid_second_round_trips(secs in 0..=MAX_SECS, frac in proptest::option::of(0u32..1_000_000_000)) {
            let text = match frac {
                Some(f) => format!("{secs}.{f:09}"),
                None => secs.to_string(),
            };
            proptest::prop_assert_eq!(parse(text.as_bytes()), Ok(secs));
        }
    }
}
