//! The IETF draft "Resumable Uploads for HTTP" (draft-ietf-httpbis-
//! resumable-upload, interop version 8): upload creation from any request
//! carrying `Upload-Complete`, offset retrieval, append with
//! `application/partial-upload`, cancellation, `Upload-Limit`.

use sfv::{BareItem, ListEntry, Parser};

use crate::{media_type_is, Append, Limits, Reason, Refusal, UploadState};

/// The draft iteration this implementation follows.
pub const INTEROP_VERSION: i64 = 8;
/// The content type of an append.
pub const CONTENT_TYPE: &str = "application/partial-upload";
/// The problem type of a 409 on a wrong offset.
pub const MISMATCHING_OFFSET: &str =
    "https://iana.org/assignments/http-problem-types#mismatching-upload-offset";
/// The problem type of a 400 on lengths that disagree.
pub const INCONSISTENT_LENGTH: &str =
    "https://iana.org/assignments/http-problem-types#inconsistent-upload-length";

/// The request fields the draft looks at, raw as received.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fields<'a> {
    pub interop_version: Option<&'a [u8]>,
    pub upload_complete: Option<&'a [u8]>,
    pub upload_offset: Option<&'a [u8]>,
    pub upload_length: Option<&'a [u8]>,
    pub content_type: Option<&'a [u8]>,
    /// `Content-Length`, when the request has one (None: chunked or no body).
    pub content_length: Option<u64>,
}

impl Fields<'_> {
    /// The request asks for a resumable upload: it carries a valid
    /// `Upload-Complete` and the interop version this server implements.
    /// Other requests are plain uploads (the draft forbids a 104 to a
    /// client of another draft iteration).
    pub fn wants_resumable(&self) -> bool {
        self.upload_complete.and_then(boolean).is_some()
            && self.interop_version.and_then(integer) == Some(INTEROP_VERSION)
    }
}

/// An accepted creation: the upload resource to make, and the first append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Creation {
    pub length: Option<u64>,
    pub first: Append,
}

/// Decides an upload creation (the request to the target resource).
pub fn create(fields: &Fields, limits: &Limits) -> Result<Creation, Refusal> {
    let complete = required_boolean(fields.upload_complete)?;
    let length = lengths(fields, complete, 0, None)?;
    if let Some(length) = length {
        if length > limits.max_size {
            return Err(too_large(
                format!("an upload of {length} bytes is larger than the limit"),
                limits,
            ));
        }
    }
    let max = limits.room(length, 0);
    check_content_length(fields, max, limits)?;
    Ok(Creation {
        length,
        first: Append {
            offset: 0,
            max_bytes: max,
            set_length: length,
            completes: complete,
            checksum: None,
        },
    })
}

/// Decides an append (PATCH to the upload resource).
pub fn append(fields: &Fields, state: &UploadState, limits: &Limits) -> Result<Append, Refusal> {
    let ok_type = media_type_is(fields.content_type, CONTENT_TYPE);
    if !ok_type {
        return Err(Refusal::new(
            Reason::WrongContentType,
            format!("an append needs Content-Type: {CONTENT_TYPE}"),
        )
        .with("Upload-Complete", "?0"));
    }
    let complete = required_boolean(fields.upload_complete)?;
    let offset = match fields.upload_offset.and_then(integer) {
        Some(o) if o >= 0 => o as u64,
        _ => {
            return Err(Refusal::new(
                Reason::BadField,
                "an append needs Upload-Offset (a non-negative integer)",
            ))
        }
    };
    if state.complete {
        return Err(Refusal::new(
            Reason::AlreadyComplete,
            "the upload is complete; nothing can be appended",
        )
        .with("Upload-Complete", "?0"));
    }
    if offset != state.offset {
        let problem = format!(
            "{{\"type\":\"{MISMATCHING_OFFSET}\",\"title\":\"offset from request does not match offset of resource\",\"expected-offset\":{},\"provided-offset\":{offset}}}",
            state.offset
        );
        let mut r = Refusal::new(
            Reason::OffsetMismatch,
            format!(
                "Upload-Offset is {offset} but the upload has {} bytes",
                state.offset
            ),
        )
        .with("Upload-Complete", "?0")
        .with("Upload-Offset", state.offset.to_string());
        r.problem = Some(problem);
        return Err(r);
    }
    let length = lengths(fields, complete, offset, state.length)?;
    if let Some(length) = length.filter(|&l| l > limits.max_size) {
        // Recorded, it could never be reached: refuse now, not at max-size.
        return Err(too_large(
            format!("an upload of {length} bytes is larger than the limit"),
            limits,
        ));
    }
    let max = limits.room(length, offset);
    check_content_length(fields, max, limits)?;
    Ok(Append {
        offset,
        max_bytes: max,
        set_length: length.filter(|_| state.length.is_none()),
        completes: complete,
        checksum: None,
    })
}

/// The fields of a HEAD answer on the upload resource.
pub fn offset_fields(
    state: &UploadState,
    limits: &Limits,
    now: u64,
) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("Upload-Offset", state.offset.to_string()),
        (
            "Upload-Complete",
            if state.complete { "?1" } else { "?0" }.to_string(),
        ),
        (
            "Upload-Limit",
            limit_field(limits, Some(state.expires.saturating_sub(now))),
        ),
        ("Cache-Control", "no-store".to_string()),
    ];
    if let Some(l) = state.length {
        out.push(("Upload-Length", l.to_string()));
    }
    out
}

/// The fields of the 104 (Upload Resumption Supported) announcing an upload.
pub fn interim_fields(location: &str, limits: &Limits) -> Vec<(&'static str, String)> {
    vec![
        ("Location", location.to_string()),
        (
            "Upload-Limit",
            limit_field(limits, Some(limits.lifetime_secs)),
        ),
        ("Upload-Draft-Interop-Version", INTEROP_VERSION.to_string()),
    ]
}

/// `Upload-Limit`: the maximum size, the append cap and the remaining
/// lifetime (the draft asks for `min-size=0` rather than an empty field).
pub fn limit_field(limits: &Limits, max_age: Option<u64>) -> String {
    // Larger values are not sf-integers, and would void the whole field.
    let sf = |n: u64| n.min(SF_INTEGER_MAX);
    let mut out = format!("max-size={}", sf(limits.max_size));
    if let Some(cap) = limits.max_append_size {
        out.push_str(&format!(", max-append-size={}", sf(cap)));
    }
    if let Some(age) = max_age {
        out.push_str(&format!(", max-age={}", sf(age)));
    }
    out
}

/// The largest sf-integer (RFC 9651 §3.3.1: at most 15 digits).
const SF_INTEGER_MAX: u64 = 999_999_999_999_999;

/// Reads an `Upload-Limit` dictionary (the client side of discovery).
/// Unknown keys are ignored; a known key with a non-integer value makes the
/// whole field void, as the draft requires.
pub fn parse_limit(raw: &[u8]) -> Option<ParsedLimit> {
    let dict = Parser::parse_dictionary(raw).ok()?;
    let mut out = ParsedLimit::default();
    for (key, entry) in &dict {
        let slot = match key.as_str() {
            "max-size" => &mut out.max_size,
            "min-size" => &mut out.min_size,
            "max-append-size" => &mut out.max_append_size,
            "min-append-size" => &mut out.min_append_size,
            "max-age" => &mut out.max_age,
            _ => continue,
        };
        match entry {
            ListEntry::Item(item) => match item.bare_item {
                BareItem::Integer(n) if n >= 0 => *slot = Some(n as u64),
                _ => return None,
            },
            ListEntry::InnerList(_) => return None,
        }
    }
    Some(out)
}

/// An `Upload-Limit` as a client reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParsedLimit {
    pub max_size: Option<u64>,
    pub min_size: Option<u64>,
    pub max_append_size: Option<u64>,
    pub min_append_size: Option<u64>,
    pub max_age: Option<u64>,
}

/// An sf-boolean item (`?0`/`?1`, parameters allowed); anything else is
/// ignored per the draft.
pub fn boolean(raw: &[u8]) -> Option<bool> {
    match Parser::parse_item(raw).ok()?.bare_item {
        BareItem::Boolean(b) => Some(b),
        _ => None,
    }
}

/// An sf-integer item.
pub fn integer(raw: &[u8]) -> Option<i64> {
    match Parser::parse_item(raw).ok()?.bare_item {
        BareItem::Integer(n) => Some(n),
        _ => None,
    }
}

fn required_boolean(raw: Option<&[u8]>) -> Result<bool, Refusal> {
    raw.and_then(boolean).ok_or_else(|| {
        Refusal::new(
            Reason::BadField,
            "the request needs Upload-Complete: ?0 or ?1",
        )
    })
}

/// The length this request states (`Upload-Length`, or `Upload-Complete:
/// ?1` with `Content-Length`), checked against itself and `known`.
/// `complete`: the request's `Upload-Complete`, parsed once by the caller.
fn lengths(
    fields: &Fields,
    complete: bool,
    offset: u64,
    known: Option<u64>,
) -> Result<Option<u64>, Refusal> {
    let stated = match fields.upload_length {
        None => None,
        Some(raw) => match integer(raw) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => {
                return Err(Refusal::new(
                    Reason::BadField,
                    "Upload-Length must be a non-negative integer",
                ))
            }
        },
    };
    let implied = fields
        .content_length
        .filter(|_| complete)
        .map(|n| offset.saturating_add(n));
    let mut length = known;
    for candidate in [stated, implied].into_iter().flatten() {
        match length {
            Some(l) if l != candidate => return Err(inconsistent(l, candidate)),
            _ => length = Some(candidate),
        }
    }
    if let Some(l) = length {
        if l < offset {
            return Err(inconsistent(l, offset));
        }
    }
    Ok(length)
}

fn check_content_length(fields: &Fields, max: u64, limits: &Limits) -> Result<(), Refusal> {
    if let Some(n) = fields.content_length {
        if n > max {
            return Err(too_large(
                format!("this request carries {n} bytes; the upload takes at most {max} more"),
                limits,
            ));
        }
        if let Some(cap) = limits.max_append_size {
            if n > cap {
                return Err(too_large(
                    format!("one append may carry at most {cap} bytes"),
                    limits,
                ));
            }
        }
    }
    Ok(())
}

fn too_large(message: String, limits: &Limits) -> Refusal {
    Refusal::new(Reason::TooLarge, message).with("Upload-Limit", limit_field(limits, None))
}

fn inconsistent(known: u64, other: u64) -> Refusal {
    let mut r = Refusal::new(
        Reason::InconsistentLength,
        format!("the upload's length is {known} bytes, this request implies {other}"),
    )
    .with("Upload-Complete", "?0");
    r.problem = Some(format!(
        "{{\"type\":\"{INCONSISTENT_LENGTH}\",\"title\":\"inconsistent length values for upload\"}}"
    ));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Progress, Protocol};
    use proptest::prelude::*;

    fn creation(complete: &'static [u8], len: Option<u64>) -> Fields<'static> {
        Fields {
            interop_version: Some(b"8"),
            upload_complete: Some(complete),
            content_length: len,
            ..Fields::default()
        }
    }

    fn patch(offset: &'static [u8], complete: &'static [u8], len: u64) -> Fields<'static> {
        Fields {
            upload_complete: Some(complete),
            upload_offset: Some(offset),
            content_type: Some(b"application/partial-upload"),
            content_length: Some(len),
            ..Fields::default()
        }
    }

    fn state(offset: u64, length: Option<u64>) -> UploadState {
        let mut s = UploadState::new(Protocol::Ietf, "t".into(), length, 0, 3600);
        s.offset = offset;
        s
    }

    #[test]
    fn only_the_matching_interop_version_is_resumable() {
        assert!(creation(b"?1", None).wants_resumable());
        let other = Fields {
            interop_version: Some(b"6"),
            ..creation(b"?1", None)
        };
        assert!(!other.wants_resumable());
        let plain = Fields {
            upload_complete: None,
            ..creation(b"?1", None)
        };
        assert!(!plain.wants_resumable());
        let garbage = Fields {
            upload_complete: Some(b"yes"),
            ..creation(b"?1", None)
        };
        assert!(!garbage.wants_resumable());
    }

    /// Example A of the draft: the whole representation in the creation.
    #[test]
    fn example_a_complete_creation_knows_its_length() {
        let f = Fields {
            upload_length: Some(b"123456789"),
            ..creation(b"?1", Some(123_456_789))
        };
        let c = create(&f, &Limits::default()).unwrap();
        assert_eq!(c.length, Some(123_456_789));
        assert!(c.first.completes);
        let mut s = state(0, c.length);
        assert_eq!(
            s.record(&c.first, 123_456_789, true),
            Ok(Progress::Complete {
                length: 123_456_789
            })
        );
    }

    /// Example B: part of the representation, then appends.
    #[test]
    fn example_b_partial_creation_then_appends() {
        let f = Fields {
            upload_length: Some(b"100"),
            ..creation(b"?0", Some(30))
        };
        let c = create(&f, &Limits::default()).unwrap();
        let mut s = state(0, c.length);
        assert_eq!(
            s.record(&c.first, 30, true),
            Ok(Progress::Partial { offset: 30 })
        );
        let a = append(&patch(b"30", b"?1", 70), &s, &Limits::default()).unwrap();
        assert_eq!(
            s.record(&a, 70, true),
            Ok(Progress::Complete { length: 100 })
        );
    }

    #[test]
    fn lengths_that_disagree_are_inconsistent() {
        let f = Fields {
            upload_length: Some(b"10"),
            ..creation(b"?1", Some(9))
        };
        let err = create(&f, &Limits::default()).unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(err.problem.unwrap().contains("inconsistent-upload-length"));
        let err = append(
            &patch(b"5", b"?1", 4),
            &state(5, Some(10)),
            &Limits::default(),
        )
        .unwrap_err();
        assert_eq!(err.reason, Reason::InconsistentLength);
    }

    #[test]
    fn wrong_offset_is_409_with_problem_details() {
        let err = append(&patch(b"3", b"?0", 1), &state(5, None), &Limits::default()).unwrap_err();
        assert_eq!(err.status(), 409);
        assert!(err.headers.contains(&("Upload-Offset", "5".to_string())));
        assert!(err.headers.contains(&("Upload-Complete", "?0".to_string())));
        let problem: serde_json::Value = serde_json::from_str(&err.problem.unwrap()).unwrap();
        assert_eq!(problem["type"], MISMATCHING_OFFSET);
        assert_eq!(problem["expected-offset"], 5);
        assert_eq!(problem["provided-offset"], 3);
    }

    #[test]
    fn append_needs_its_type_complete_and_offset() {
        let limits = Limits::default();
        let s = state(0, None);
        let untyped = Fields {
            content_type: Some(b"application/octet-stream"),
            ..patch(b"0", b"?0", 1)
        };
        assert_eq!(append(&untyped, &s, &limits).unwrap_err().status(), 415);
        let no_complete = Fields {
            upload_complete: None,
            ..patch(b"0", b"?0", 1)
        };
        assert_eq!(append(&no_complete, &s, &limits).unwrap_err().status(), 400);
        let no_offset = Fields {
            upload_offset: None,
            ..patch(b"0", b"?0", 1)
        };
        assert_eq!(append(&no_offset, &s, &limits).unwrap_err().status(), 400);
        let mut done = state(4, Some(4));
        done.complete = true;
        assert_eq!(
            append(&patch(b"4", b"?1", 0), &done, &limits)
                .unwrap_err()
                .reason,
            Reason::AlreadyComplete
        );
    }

    #[test]
    fn limits_are_enforced_and_announced() {
        let limits = Limits {
            max_size: 100,
            max_append_size: Some(10),
            lifetime_secs: 60,
        };
        let err = create(
            &Fields {
                upload_length: Some(b"101"),
                ..creation(b"?0", None)
            },
            &limits,
        )
        .unwrap_err();
        assert_eq!(err.status(), 413);
        assert!(err
            .headers
            .iter()
            .any(|(k, v)| *k == "Upload-Limit" && v.contains("max-size=100")));
        let err = append(&patch(b"0", b"?0", 11), &state(0, None), &limits).unwrap_err();
        assert_eq!(err.status(), 413);
        let parsed = parse_limit(limit_field(&limits, Some(60)).as_bytes()).unwrap();
        assert_eq!(parsed.max_size, Some(100));
        assert_eq!(parsed.max_append_size, Some(10));
        assert_eq!(parsed.max_age, Some(60));
    }

    #[test]
    fn an_append_cannot_announce_a_length_over_the_limit() {
        let limits = Limits {
            max_size: 100,
            ..Limits::default()
        };
        let over = Fields {
            upload_length: Some(b"101"),
            ..patch(b"4", b"?0", 0)
        };
        let err = append(&over, &state(4, None), &limits).unwrap_err();
        assert_eq!(err.status(), 413);
        let within = Fields {
            upload_length: Some(b"100"),
            ..patch(b"4", b"?0", 0)
        };
        let plan = append(&within, &state(4, None), &limits).unwrap();
        assert_eq!(plan.set_length, Some(100));
    }

    #[test]
    fn huge_limits_still_make_a_valid_upload_limit() {
        let limits = Limits {
            max_size: u64::MAX,
            max_append_size: Some(u64::MAX),
            lifetime_secs: u64::MAX,
        };
        let field = limit_field(&limits, Some(u64::MAX));
        let parsed = parse_limit(field.as_bytes()).expect("a valid dictionary");
        let most = Some(999_999_999_999_999);
        assert_eq!(
            (parsed.max_size, parsed.max_append_size, parsed.max_age),
            (most, most, most)
        );
    }

    #[test]
    fn limit_parsing_follows_the_draft() {
        assert_eq!(
            parse_limit(b"max-size=5, future-key=\"x\"")
                .unwrap()
                .max_size,
            Some(5)
        );
        assert_eq!(
            parse_limit(b"max-size=\"5\""),
            None,
            "a known key of the wrong type voids the field"
        );
        assert_eq!(parse_limit(b"max-size=(1 2)"), None);
        assert_eq!(parse_limit(b"min-size=0").unwrap().min_size, Some(0));
    }

    #[test]
    fn head_reports_offset_completeness_and_limits() {
        let f = offset_fields(&state(25, Some(100)), &Limits::default(), 100);
        assert!(f.contains(&("Upload-Offset", "25".to_string())));
        assert!(f.contains(&("Upload-Complete", "?0".to_string())));
        assert!(f.contains(&("Upload-Length", "100".to_string())));
        assert!(f.contains(&("Cache-Control", "no-store".to_string())));
        assert!(f
            .iter()
            .any(|(k, v)| *k == "Upload-Limit" && v.contains("max-age=3500")));
    }

    #[test]
    fn structured_items_follow_rfc_9651() {
        assert_eq!(boolean(b"?1"), Some(true));
        assert_eq!(boolean(b"?0;foo=bar"), Some(false));
        assert_eq!(boolean(b"1"), None);
        assert_eq!(boolean(b"?2"), None);
        assert_eq!(integer(b"42"), Some(42));
        assert_eq!(integer(b"4.2"), None);
        assert_eq!(
            integer(b"1234567890123456"),
            None,
            "sf-integer has at most 15 digits"
        );
    }

    proptest! {
        #[test]
        fn parsers_never_panic(raw in proptest::collection::vec(any::<u8>(), 0..60)) {
            let _ = boolean(&raw);
            let _ = integer(&raw);
            let _ = parse_limit(&raw);
        }

        #[test]
        fn append_refuses_every_offset_but_the_current(current in 0u64..1_000_000, given in 0u64..1_000_000) {
            let raw = given.to_string();
            let f = Fields { upload_offset: Some(raw.as_bytes()), ..patch(b"0", b"?0", 0) };
            let r = append(&f, &state(current, None), &Limits::default());
            prop_assert_eq!(r.is_ok(), current == given);
        }
    }
}
