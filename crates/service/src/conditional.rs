//! Conditional requests and byte ranges (RFC 9110 §13 and §14), sans-IO.
//!
//! [`evaluate`] takes the request's precondition and range headers, the
//! representation's validators and its size, and decides what to answer:
//! the whole thing, one range, 304, 412 or 416. Preconditions are evaluated
//! in the order of RFC 9110 §13.2.2.
//!
//! Deliberate choices:
//! - Only `GET` has range semantics (§14.2); `HEAD` with `Range` gets the
//!   headers of a full `GET`.
//! - A request for several ranges is answered with the whole representation
//!   (200), which §14.2 allows; multipart/byteranges costs complexity for a
//!   feature download tools do not need. If none of the ranges can be
//!   satisfied the answer is 416.
//! - A syntactically invalid `Range` is ignored (200), as §14.2 requires.
//! - An `If-Range` date matches only the exact `Last-Modified` second.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::storage::Meta;

/// A strong ETag from size and modification time (nanoseconds): any
/// completed upload renames a new inode in, with a new mtime.
pub fn etag(meta: &Meta) -> String {
    ETagText::of(meta).as_str().to_owned()
}

/// [`etag`] formatted on the stack (the small-GET path makes one per
/// request; `format!`'s hex cost ~450 instructions and an allocation).
#[derive(Clone, Copy)]
pub struct ETagText {
    buf: [u8; 2 + 16 + 1 + 32],
    len: usize,
}

impl ETagText {
    pub fn of(meta: &Meta) -> ETagText {
        let nanos = meta
            .modified
            .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let mut t = ETagText {
            buf: [0; 51],
            len: 0,
        };
        t.push(b'"');
        t.push_hex(u128::from(meta.size));
        t.push(b'-');
        t.push_hex(nanos);
        t.push(b'"');
        t
    }

    fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    /// Lower-case hex without leading zeros, as `{:x}` writes it.
    fn push_hex(&mut self, v: u128) {
        let digits = (128 - v.leading_zeros()).div_ceil(4).max(1);
        for i in (0..digits).rev() {
            self.push(b"0123456789abcdef"[((v >> (i * 4)) & 0xf) as usize]);
        }
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII is pushed; the fallback is unreachable.
        std::str::from_utf8(self.buf.get(..self.len).unwrap_or_default()).unwrap_or_default()
    }
}

/// Request headers that influence the answer (raw values, `None` if absent).
#[derive(Debug, Clone, Copy, Default)]
pub struct Conditions<'a> {
    pub if_match: Option<&'a str>,
    pub if_none_match: Option<&'a str>,
    pub if_modified_since: Option<&'a str>,
    pub if_unmodified_since: Option<&'a str>,
    pub if_range: Option<&'a str>,
    pub range: Option<&'a str>,
}

/// The current representation's validators.
#[derive(Debug, Clone, Copy)]
pub struct Validators<'a> {
    /// Strong entity tag including its quotes, e.g. `"1f-5a3c"`.
    pub etag: &'a str,
    /// Last modification, if known (compared at one-second resolution).
    pub last_modified: Option<SystemTime>,
}

/// What to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// 200 with the whole representation.
    Full,
    /// 206 with bytes `start..=end` (inclusive, `end < size`).
    Partial { start: u64, end: u64 },
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    PreconditionFailed,
    /// 416 Range Not Satisfiable (answer with `Content-Range: bytes */size`).
    Unsatisfiable,
}

/// A parsed `Range` header against a representation of known size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeSpec {
    /// Absent, another unit, or invalid syntax: ignore it.
    Ignore,
    /// One satisfiable range, inclusive bounds.
    Single { start: u64, end: u64 },
    /// More than one range, at least one satisfiable.
    Multiple,
    /// No range can be satisfied.
    Unsatisfiable,
}

/// Decide the answer to a `GET`/`HEAD` (`is_get` false means `HEAD`; other
/// methods are not served by this module).
pub fn evaluate(is_get: bool, c: &Conditions<'_>, v: &Validators<'_>, size: u64) -> Outcome {
    let lm = v.last_modified.map(truncate_to_secs);
    // §13.2.2 step 1/2: If-Match, else If-Unmodified-Since.
    if let Some(im) = c.if_match {
        if !etag_list_matches(im, v.etag, true) {
            return Outcome::PreconditionFailed;
        }
    } else if let (Some(ius), Some(lm)) = (c.if_unmodified_since.and_then(parse_date), lm) {
        if lm > ius {
            return Outcome::PreconditionFailed;
        }
    }
    // Step 3/4: If-None-Match, else If-Modified-Since (GET/HEAD only here).
    if let Some(inm) = c.if_none_match {
        if etag_list_matches(inm, v.etag, false) {
            return Outcome::NotModified;
        }
    } else if let (Some(ims), Some(lm)) = (c.if_modified_since.and_then(parse_date), lm) {
        if lm <= ims {
            return Outcome::NotModified;
        }
    }
    // Step 5: Range, gated by If-Range.
    if !is_get {
        return Outcome::Full;
    }
    let Some(range) = c.range else {
        return Outcome::Full;
    };
    if let Some(ir) = c.if_range {
        if !if_range_matches(ir, v.etag, lm) {
            return Outcome::Full;
        }
    }
    match parse_range(range, size) {
        RangeSpec::Ignore | RangeSpec::Multiple => Outcome::Full,
        RangeSpec::Single { start, end } => Outcome::Partial { start, end },
        RangeSpec::Unsatisfiable => Outcome::Unsatisfiable,
    }
}

fn truncate_to_secs(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(_) => t,
    }
}

fn parse_date(s: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(s.trim()).ok()
}

/// If-Range: an entity tag must match strongly; a date must equal
/// Last-Modified exactly.
fn if_range_matches(ir: &str, etag: &str, lm: Option<SystemTime>) -> bool {
    let ir = ir.trim();
    if ir.starts_with('"') || ir.starts_with("W/") {
        return match parse_etag(ir) {
            Some((tag, false, rest)) if rest.trim().is_empty() => etag_eq(tag, false, etag, true),
            _ => false,
        };
    }
    match (parse_date(ir), lm) {
        (Some(d), Some(lm)) => d == lm,
        _ => false,
    }
}

/// Parse one entity tag at the start of `s`: (opaque tag with quotes, weak, rest).
fn parse_etag(s: &str) -> Option<(&str, bool, &str)> {
    let (weak, s) = match s.strip_prefix("W/") {
        Some(r) => (true, r),
        None => (false, s),
    };
    let body = s.strip_prefix('"')?;
    let close = body.find('"')?;
    Some((&s[..close + 2], weak, &body[close + 1..]))
}

fn etag_eq(tag: &str, weak: bool, current: &str, strong: bool) -> bool {
    if strong && weak {
        return false;
    }
    let current = current.strip_prefix("W/").unwrap_or(current);
    tag == current
}

/// Whether `*` or any tag in the comma-separated list matches `current`
/// (strong comparison for If-Match, weak for If-None-Match). A malformed list
/// matches nothing.
pub fn etag_list_matches(list: &str, current: &str, strong: bool) -> bool {
    let list = list.trim();
    if list == "*" {
        return true;
    }
    let mut rest = list;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return false;
        }
        let Some((tag, weak, after)) = parse_etag(rest) else {
            return false;
        };
        if etag_eq(tag, weak, current, strong) {
            return true;
        }
        rest = after;
    }
}

/// RFC 9110 §13.1.1–2 for a state-changing request (PUT): whether it may
/// proceed, given the ETag of the current file (`None`: there is none).
/// `If-Match` needs a file whose ETag matches strongly (`*`: any file);
/// `If-None-Match` refuses when the file's ETag matches weakly (`*`: any
/// file, i.e. "create only").
pub fn write_allowed(
    if_match: Option<&str>,
    if_none_match: Option<&str>,
    current: Option<&str>,
) -> bool {
    if let Some(im) = if_match {
        match current {
            Some(tag) if etag_list_matches(im, tag, true) => {}
            _ => return false,
        }
    }
    if let (Some(inm), Some(tag)) = (if_none_match, current) {
        if etag_list_matches(inm, tag, false) {
            return false;
        }
    }
    true
}

/// Parse a `Range` header against `size` bytes (RFC 9110 §14.1.2).
pub fn parse_range(header: &str, size: u64) -> RangeSpec {
    let header = header.trim();
    let Some((unit, set)) = header.split_once('=') else {
        return RangeSpec::Ignore;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return RangeSpec::Ignore;
    }
    let mut count = 0usize;
    let mut first_ok: Option<(u64, u64)> = None;
    let mut any_ok = false;
    for spec in set.split(',') {
        let spec = spec.trim();
        if spec.is_empty() {
            continue; // RFC 9110 list syntax tolerates empty elements
        }
        count += 1;
        let Some((a, b)) = spec.split_once('-') else {
            return RangeSpec::Ignore;
        };
        let r = if a.is_empty() {
            // Suffix: the last N bytes.
            let Some(n) = parse_digits(b) else {
                return RangeSpec::Ignore;
            };
            if n == 0 || size == 0 {
                None
            } else {
                Some((size - n.min(size), size - 1))
            }
        } else {
            let Some(first) = parse_digits(a) else {
                return RangeSpec::Ignore;
            };
            let last = if b.is_empty() {
                u64::MAX
            } else {
                match parse_digits(b) {
                    Some(l) if l >= first => l,
                    _ => return RangeSpec::Ignore,
                }
            };
            (first < size).then(|| (first, last.min(size - 1)))
        };
        if let Some(r) = r {
            any_ok = true;
            first_ok.get_or_insert(r);
        }
    }
    match (count, first_ok) {
        (0, _) => RangeSpec::Ignore,
        (1, Some((start, end))) => RangeSpec::Single { start, end },
        _ if any_ok => RangeSpec::Multiple,
        _ => RangeSpec::Unsatisfiable,
    }
}

/// 1*DIGIT, no sign, no whitespace inside; huge numbers saturate (a last-pos
/// past any real size means "to the end"; a first-pos past it is unsatisfiable).
fn parse_digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

#[cfg(test)]
mod tests {

    #[test]
    fn write_preconditions() {
        let t = Some("\"a\"");
        // No header: always.
        assert!(write_allowed(None, None, None) && write_allowed(None, None, t));
        // Create only.
        assert!(write_allowed(None, Some("*"), None));
        assert!(!write_allowed(None, Some("*"), t));
        // Update only what was read.
        assert!(write_allowed(Some("\"a\""), None, t));
        assert!(!write_allowed(Some("\"b\""), None, t));
        assert!(
            !write_allowed(Some("W/\"a\""), None, t),
            "If-Match compares strongly"
        );
        assert!(!write_allowed(Some("*"), None, None));
        assert!(write_allowed(Some("*"), None, t));
        assert!(
            !write_allowed(None, Some("W/\"a\""), t),
            "If-None-Match compares weakly"
        );
    }

    use super::*;
    use proptest::prelude::*;

    const ETAG: &str = "\"10-abc\"";

    proptest! {
        #[test]
        fn etag_text_is_what_format_writes(
            size in any::<u64>(),
            secs in 0u64..(1 << 40),
            nanos in 0u32..1_000_000_000,
            none in any::<bool>(),
        ) {
            let modified = (!none).then(|| UNIX_EPOCH + std::time::Duration::new(secs, nanos));
            let meta = Meta { kind: crate::storage::Kind::File, size, modified };
            let n = modified.map_or(0, |m| m.duration_since(UNIX_EPOCH).unwrap().as_nanos());
            let tag = ETagText::of(&meta);
            prop_assert_eq!(tag.as_str(), format!("\"{size:x}-{n:x}\""));
        }
    }

    fn lm() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_millis(250)
    }

    fn v() -> Validators<'static> {
        Validators {
            etag: ETAG,
            last_modified: Some(lm()),
        }
    }

    fn date(secs: u64) -> String {
        httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
    }

    fn get(c: Conditions<'_>) -> Outcome {
        evaluate(true, &c, &v(), 1000)
    }

    #[test]
    fn ranges() {
        use RangeSpec::*;
        assert_eq!(parse_range("bytes=0-0", 10), Single { start: 0, end: 0 });
        assert_eq!(parse_range("bytes=0-99", 10), Single { start: 0, end: 9 });
        assert_eq!(parse_range("bytes=5-", 10), Single { start: 5, end: 9 });
        assert_eq!(parse_range("bytes=-3", 10), Single { start: 7, end: 9 });
        assert_eq!(parse_range("bytes=-30", 10), Single { start: 0, end: 9 });
        assert_eq!(parse_range("BYTES = 9-9", 10), Single { start: 9, end: 9 });
        assert_eq!(
            parse_range("bytes=0-18446744073709551616", 10),
            Single { start: 0, end: 9 }
        );
        assert_eq!(parse_range("bytes=10-", 10), Unsatisfiable);
        assert_eq!(parse_range("bytes=10-20", 10), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 10), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=-5", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-1,5-6", 10), Multiple);
        assert_eq!(parse_range("bytes=0-1,50-60", 10), Multiple);
        assert_eq!(parse_range("bytes=20-30,50-60", 10), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-1,", 10), Single { start: 0, end: 1 });
        assert_eq!(parse_range("bytes=5-4", 10), Ignore);
        assert_eq!(parse_range("bytes=a-4", 10), Ignore);
        assert_eq!(parse_range("bytes=-", 10), Ignore);
        assert_eq!(parse_range("bytes=+1-2", 10), Ignore);
        assert_eq!(parse_range("bytes=1", 10), Ignore);
        assert_eq!(parse_range("items=0-1", 10), Ignore);
        assert_eq!(parse_range("bytes=", 10), Ignore);
        assert_eq!(parse_range("0-1", 10), Ignore);
    }

    #[test]
    fn preconditions() {
        let none = Conditions::default();
        assert_eq!(get(none), Outcome::Full);
        let c = |f: fn(&mut Conditions<'static>)| {
            let mut c = Conditions::default();
            f(&mut c);
            get(c)
        };
        assert_eq!(c(|c| c.if_none_match = Some(ETAG)), Outcome::NotModified);
        assert_eq!(
            c(|c| c.if_none_match = Some("W/\"10-abc\"")),
            Outcome::NotModified
        );
        assert_eq!(
            c(|c| c.if_none_match = Some("\"x\", \"10-abc\"")),
            Outcome::NotModified
        );
        assert_eq!(c(|c| c.if_none_match = Some("*")), Outcome::NotModified);
        assert_eq!(c(|c| c.if_none_match = Some("\"other\"")), Outcome::Full);
        assert_eq!(c(|c| c.if_none_match = Some("garbage")), Outcome::Full);
        assert_eq!(
            c(|c| c.if_match = Some("\"other\"")),
            Outcome::PreconditionFailed
        );
        assert_eq!(
            c(|c| c.if_match = Some("W/\"10-abc\"")),
            Outcome::PreconditionFailed
        );
        assert_eq!(c(|c| c.if_match = Some(ETAG)), Outcome::Full);
        assert_eq!(c(|c| c.if_match = Some("*")), Outcome::Full);
        // If-None-Match wins over If-Modified-Since.
        let mut cc = Conditions {
            if_none_match: Some("\"other\""),
            ..Default::default()
        };
        let old = date(1_600_000_000);
        let same = date(1_700_000_000);
        let later = date(1_800_000_000);
        cc.if_modified_since = Some(&same);
        assert_eq!(get(cc), Outcome::Full);
        cc.if_none_match = None;
        assert_eq!(get(cc), Outcome::NotModified);
        cc.if_modified_since = Some(&later);
        assert_eq!(get(cc), Outcome::NotModified);
        cc.if_modified_since = Some(&old);
        assert_eq!(get(cc), Outcome::Full);
        cc.if_modified_since = Some("not a date");
        assert_eq!(get(cc), Outcome::Full);
        let cc = Conditions {
            if_unmodified_since: Some(&old),
            ..Default::default()
        };
        assert_eq!(get(cc), Outcome::PreconditionFailed);
        let cc = Conditions {
            if_unmodified_since: Some(&same),
            ..Default::default()
        };
        assert_eq!(get(cc), Outcome::Full);
    }

    #[test]
    fn ranges_and_if_range() {
        let same = date(1_700_000_000);
        let other = date(1_700_000_001);
        let mut c = Conditions {
            range: Some("bytes=10-19"),
            ..Default::default()
        };
        assert_eq!(get(c), Outcome::Partial { start: 10, end: 19 });
        assert_eq!(
            evaluate(false, &c, &v(), 1000),
            Outcome::Full,
            "HEAD ignores Range"
        );
        c.if_range = Some(ETAG);
        assert_eq!(get(c), Outcome::Partial { start: 10, end: 19 });
        c.if_range = Some("W/\"10-abc\"");
        assert_eq!(get(c), Outcome::Full, "weak tags never match If-Range");
        c.if_range = Some("\"old\"");
        assert_eq!(get(c), Outcome::Full);
        c.if_range = Some(&same);
        assert_eq!(get(c), Outcome::Partial { start: 10, end: 19 });
        c.if_range = Some(&other);
        assert_eq!(get(c), Outcome::Full);
        c.if_range = None;
        c.range = Some("bytes=1000-");
        assert_eq!(get(c), Outcome::Unsatisfiable);
        // A 304 beats the range.
        c.if_none_match = Some(ETAG);
        assert_eq!(get(c), Outcome::NotModified);
    }

    proptest! {
        #[test]
        fn single_ranges_stay_inside(size in 0u64..10_000, a in 0u64..12_000, b in 0u64..12_000, form in 0u8..3) {
            let h = match form {
                0 => format!("bytes={a}-{b}"),
                1 => format!("bytes={a}-"),
                _ => format!("bytes=-{b}"),
            };
            match parse_range(&h, size) {
                RangeSpec::Single { start, end } => {
                    prop_assert!(start <= end && end < size);
                    match form {
                        0 => prop_assert!(start == a && end == b.min(size - 1)),
                        1 => prop_assert!(start == a && end == size - 1),
                        _ => prop_assert!(end == size - 1 && end - start + 1 == b.min(size)),
                    }
                }
                RangeSpec::Unsatisfiable => match form {
                    0 | 1 => prop_assert!(a >= size),
                    _ => prop_assert!(b == 0 || size == 0),
                },
                RangeSpec::Ignore => prop_assert!(form == 0 && a > b),
                RangeSpec::Multiple => prop_assert!(false, "one spec parsed as many"),
            }
        }

        #[test]
        fn any_header_is_total(h in ".{0,40}", size in any::<u64>()) {
            if let RangeSpec::Single { start, end } = parse_range(&h, size) {
                prop_assert!(start <= end && end < size);
            }
            let c = Conditions { range: Some(&h), if_range: Some(&h), if_match: None,
                if_none_match: Some(&h), if_modified_since: Some(&h), if_unmodified_since: Some(&h) };
            let _ = evaluate(true, &c, &v(), size);
        }
    }
}
