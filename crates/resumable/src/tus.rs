//! tus 1.0.0 (<https://tus.io/protocols/resumable-upload>): the core protocol
//! and the creation, creation-with-upload, creation-defer-length,
//! termination, expiration, checksum and concatenation extensions
//! (the last where the store can assemble: [`discovery_fields`]).

use base64::Engine as _;

use crate::concat::{self, Concat};
use crate::{
    media_type_is, parse_decimal, Append, Checksum, ChecksumAlgorithm, Limits, Reason, Refusal,
    UploadState,
};

/// The only protocol version there is.
pub const VERSION: &str = "1.0.0";
/// `Tus-Extension` of an OPTIONS answer.
pub const EXTENSIONS: &str =
    "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum";
/// The concatenation extension's name, added to [`EXTENSIONS`] where the
/// store can assemble final uploads.
pub const CONCATENATION: &str = "concatenation";
/// `Tus-Checksum-Algorithm` of an OPTIONS answer.
pub const CHECKSUM_ALGORITHMS: &str = "sha1,sha256";
/// The content type of a PATCH.
pub const CONTENT_TYPE: &str = "application/offset+octet-stream";
/// tus' status for a checksum mismatch ("460 Checksum Mismatch").
pub const CHECKSUM_MISMATCH: u16 = 460;

/// `Upload-Metadata` pairs: a key and its decoded value, if any.
pub type Metadata = Vec<(String, Option<Vec<u8>>)>;

/// The request fields tus looks at, raw as received.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fields<'a> {
    pub tus_resumable: Option<&'a [u8]>,
    pub content_type: Option<&'a [u8]>,
    /// `Content-Length`, when the request has one (None: chunked or no body).
    pub content_length: Option<u64>,
    /// The request has a body (a Content-Length above zero, or chunked).
    pub has_body: bool,
    pub upload_offset: Option<&'a [u8]>,
    pub upload_length: Option<&'a [u8]>,
    pub upload_defer_length: Option<&'a [u8]>,
    pub upload_metadata: Option<&'a [u8]>,
    pub upload_checksum: Option<&'a [u8]>,
    pub upload_concat: Option<&'a [u8]>,
}

/// An accepted creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Creation {
    /// `None`: the length is deferred.
    pub length: Option<u64>,
    /// `Upload-Metadata` as given (validated), kept to echo on HEAD.
    pub metadata: Option<String>,
    /// The `filename` metadata value, when there is one and it is UTF-8.
    pub filename: Option<String>,
    /// The request carries the first bytes (creation-with-upload).
    pub first: Option<Append>,
    /// `Upload-Concat`: a partial upload, or a final one of these URLs
    /// (its length is then the sum of theirs, and it carries no bytes).
    pub concat: Option<concat::Request>,
}

/// Every request but OPTIONS must name version 1.0.0; others get 412.
pub fn check_version(fields: &Fields) -> Result<(), Refusal> {
    match fields.tus_resumable {
        Some(v) if v == VERSION.as_bytes() => Ok(()),
        Some(v) => Err(Refusal::new(
            Reason::UnsupportedVersion,
            format!(
                "Tus-Resumable {} is not supported; this server speaks {VERSION}",
                String::from_utf8_lossy(v)
            ),
        )
        .with("Tus-Version", VERSION)),
        None => Err(Refusal::new(
            Reason::UnsupportedVersion,
            "a tus request needs Tus-Resumable: 1.0.0",
        )
        .with("Tus-Version", VERSION)),
    }
}

/// Decides a creation (POST to the upload endpoint).
pub fn create(fields: &Fields, limits: &Limits) -> Result<Creation, Refusal> {
    check_version(fields)?;
    let concat = fields.upload_concat.map(concat::parse).transpose()?;
    if let Some(concat::Request::Final(_)) = concat {
        if fields.upload_length.is_some() || fields.upload_defer_length.is_some() {
            return Err(bad(
                "a final upload's length is its partial uploads': no Upload-Length",
            ));
        }
        if fields.has_body {
            return Err(Refusal::new(
                Reason::Forbidden,
                "a final upload carries no bytes of its own",
            ));
        }
    }
    let final_upload = matches!(concat, Some(concat::Request::Final(_)));
    let length = match (fields.upload_length, fields.upload_defer_length) {
        (None, None) if final_upload => None,
        (Some(_), Some(_)) => {
            return Err(bad("give Upload-Length or Upload-Defer-Length, not both"))
        }
        (None, None) => {
            return Err(bad(
                "a creation needs Upload-Length (or Upload-Defer-Length: 1)",
            ))
        }
        (Some(v), None) => Some(decimal("Upload-Length", v)?),
        (None, Some(b"1")) => None,
        (None, Some(_)) => return Err(bad("Upload-Defer-Length must be 1")),
    };
    if let Some(length) = length {
        if length > limits.max_size {
            return Err(too_large(length, limits));
        }
    }
    let (metadata, filename) = match fields.upload_metadata {
        None => (None, None),
        Some(raw) => {
            let pairs = parse_metadata(raw)?;
            let filename = match pairs.iter().find(|(k, _)| k == "filename") {
                Some((_, Some(v))) => Some(
                    String::from_utf8(v.clone())
                        .map_err(|_| bad("the filename in Upload-Metadata is not UTF-8 text"))?,
                ),
                _ => None,
            };
            // parse_metadata accepted only ASCII, so this is text.
            (Some(String::from_utf8_lossy(raw).into_owned()), filename)
        }
    };
    let first = if fields.has_body {
        check_content_type(fields)?;
        let max = limits.room(length, 0);
        check_content_length(fields, max)?;
        Some(Append {
            offset: 0,
            max_bytes: max,
            set_length: None,
            completes: false,
            checksum: checksum(fields)?,
        })
    } else {
        None
    };
    Ok(Creation {
        length,
        metadata,
        filename,
        first,
        concat,
    })
}

/// Decides a PATCH against an existing upload.
pub fn append(fields: &Fields, state: &UploadState, limits: &Limits) -> Result<Append, Refusal> {
    check_version(fields)?;
    check_content_type(fields)?;
    let offset = match fields.upload_offset {
        Some(v) => decimal("Upload-Offset", v)?,
        None => return Err(bad("a PATCH needs Upload-Offset")),
    };
    if offset != state.offset {
        return Err(Refusal::new(
            Reason::OffsetMismatch,
            format!(
                "Upload-Offset is {offset} but the upload has {} bytes",
                state.offset
            ),
        )
        .with("Upload-Offset", state.offset.to_string()));
    }
    let set_length = match fields.upload_length {
        None => None,
        Some(v) => {
            let l = decimal("Upload-Length", v)?;
            match state.length {
                Some(known) if known != l => {
                    return Err(Refusal::new(
                        Reason::InconsistentLength,
                        format!("the upload's length is already {known} bytes"),
                    ))
                }
                Some(_) => None,
                None if l < state.offset => {
                    return Err(Refusal::new(
                        Reason::InconsistentLength,
                        format!(
                            "Upload-Length {l} is below the {} bytes already received",
                            state.offset
                        ),
                    ))
                }
                None if l > limits.max_size => return Err(too_large(l, limits)),
                None => Some(l),
            }
        }
    };
    match state.concat {
        Some(Concat::Final { .. }) => {
            return Err(Refusal::new(
                Reason::Forbidden,
                "a final upload is made of its partial uploads; it takes no PATCH",
            ))
        }
        Some(Concat::Partial { used: true }) => {
            return Err(Refusal::new(
                Reason::Conflict,
                "this partial upload is part of a final upload",
            ))
        }
        _ => {}
    }
    let length = set_length.or(state.length);
    if state.complete && fields.has_body {
        return Err(Refusal::new(
            Reason::AlreadyComplete,
            "the upload is complete",
        ));
    }
    let max = limits.room(length, offset);
    check_content_length(fields, max)?;
    Ok(Append {
        offset,
        max_bytes: max,
        set_length,
        completes: false,
        checksum: checksum(fields)?,
    })
}

/// The fields of a HEAD answer (and, without metadata, of a PATCH answer).
pub fn offset_fields(state: &UploadState) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("Tus-Resumable", VERSION.to_string()),
        ("Upload-Offset", state.offset.to_string()),
        ("Cache-Control", "no-store".to_string()),
    ];
    match state.length {
        Some(l) => out.push(("Upload-Length", l.to_string())),
        None => out.push(("Upload-Defer-Length", "1".to_string())),
    }
    if let Some(m) = &state.metadata {
        out.push(("Upload-Metadata", m.clone()));
    }
    if let Some(c) = concat::field(state) {
        out.push(("Upload-Concat", c));
    }
    out
}

/// The fields of an OPTIONS answer (discovery); `concatenation`: the
/// store can assemble final uploads.
pub fn discovery_fields(limits: &Limits, concatenation: bool) -> Vec<(&'static str, String)> {
    let extensions = if concatenation {
        format!("{EXTENSIONS},{CONCATENATION}")
    } else {
        EXTENSIONS.to_string()
    };
    vec![
        ("Tus-Resumable", VERSION.to_string()),
        ("Tus-Version", VERSION.to_string()),
        ("Tus-Extension", extensions),
        ("Tus-Max-Size", limits.max_size.to_string()),
        ("Tus-Checksum-Algorithm", CHECKSUM_ALGORITHMS.to_string()),
    ]
}

/// Most `Upload-Metadata` pairs accepted (clients send a handful; each
/// pair is kept in the record and echoed on every HEAD).
pub const MAX_METADATA_PAIRS: usize = 64;

/// Parses `Upload-Metadata`: comma-separated `key [base64-value]` pairs,
/// keys unique, ASCII without spaces or commas.
pub fn parse_metadata(raw: &[u8]) -> Result<Metadata, Refusal> {
    let text = std::str::from_utf8(raw).map_err(|_| bad("Upload-Metadata is not ASCII"))?;
    if !text.is_ascii() {
        return Err(bad("Upload-Metadata is not ASCII"));
    }
    let mut pairs: Metadata = Vec::new();
    if text.trim().is_empty() {
        return Ok(pairs);
    }
    if text.split(',').count() > MAX_METADATA_PAIRS {
        return Err(bad(format!(
            "Upload-Metadata has more than {MAX_METADATA_PAIRS} pairs"
        )));
    }
    let mut keys = std::collections::HashSet::new();
    for item in text.split(',') {
        let mut parts = item.trim_matches(' ').splitn(2, ' ');
        let key = parts.next().unwrap_or("");
        if key.is_empty() || key.bytes().any(|b| b.is_ascii_control()) {
            return Err(bad("Upload-Metadata has an empty or invalid key"));
        }
        let value = match parts.next().map(|v| v.trim_matches(' ')) {
            None | Some("") => None,
            Some(v) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .map_err(|_| bad(format!("Upload-Metadata value of {key} is not base64")))?,
            ),
        };
        if !keys.insert(key) {
            return Err(bad(format!("Upload-Metadata names {key} twice")));
        }
        pairs.push((key.to_string(), value));
    }
    Ok(pairs)
}

fn checksum(fields: &Fields) -> Result<Option<Checksum>, Refusal> {
    let Some(raw) = fields.upload_checksum else {
        return Ok(None);
    };
    let text = std::str::from_utf8(raw).map_err(|_| bad("Upload-Checksum is not ASCII"))?;
    let (name, value) = text
        .trim()
        .split_once(' ')
        .ok_or_else(|| bad("Upload-Checksum must be `ALGORITHM BASE64`"))?;
    let algorithm = match name {
        "sha1" => ChecksumAlgorithm::Sha1,
        "sha256" => ChecksumAlgorithm::Sha256,
        other => {
            return Err(bad(format!(
                "checksum algorithm {other} is not supported (use {CHECKSUM_ALGORITHMS})"
            )))
        }
    };
    let digest = base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .map_err(|_| bad("Upload-Checksum digest is not base64"))?;
    let want = match algorithm {
        ChecksumAlgorithm::Sha1 => 20,
        ChecksumAlgorithm::Sha256 => 32,
    };
    if digest.len() != want {
        return Err(bad(format!(
            "a {name} digest has {want} bytes, not {}",
            digest.len()
        )));
    }
    Ok(Some(Checksum { algorithm, digest }))
}

fn check_content_type(fields: &Fields) -> Result<(), Refusal> {
    let ok = media_type_is(fields.content_type, CONTENT_TYPE);
    if ok {
        Ok(())
    } else {
        Err(Refusal::new(
            Reason::WrongContentType,
            format!("upload bytes need Content-Type: {CONTENT_TYPE}"),
        ))
    }
}

fn check_content_length(fields: &Fields, max: u64) -> Result<(), Refusal> {
    match fields.content_length {
        Some(n) if n > max => Err(Refusal::new(
            Reason::TooLarge,
            format!("this request carries {n} bytes; the upload takes at most {max} more"),
        )),
        _ => Ok(()),
    }
}

fn decimal(name: &str, v: &[u8]) -> Result<u64, Refusal> {
    parse_decimal(v).ok_or_else(|| bad(format!("{name} must be a non-negative decimal number")))
}

fn too_large(length: u64, limits: &Limits) -> Refusal {
    Refusal::new(
        Reason::TooLarge,
        format!(
            "an upload of {length} bytes is larger than this server's limit of {} bytes",
            limits.max_size
        ),
    )
    .with("Tus-Max-Size", limits.max_size.to_string())
}

fn bad(message: impl Into<String>) -> Refusal {
    Refusal::new(Reason::BadField, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Protocol;
    use proptest::prelude::*;

    fn base() -> Fields<'static> {
        Fields {
            tus_resumable: Some(b"1.0.0"),
            ..Fields::default()
        }
    }

    fn patch(offset: &'static [u8], len: u64) -> Fields<'static> {
        Fields {
            content_type: Some(b"application/offset+octet-stream"),
            upload_offset: Some(offset),
            content_length: Some(len),
            has_body: len > 0,
            ..base()
        }
    }

    fn state(offset: u64, length: Option<u64>) -> UploadState {
        let mut s = UploadState::new(Protocol::Tus, "t".into(), length, 0, 60);
        s.offset = offset;
        s
    }

    #[test]
    fn metadata_pairs_are_bounded_and_unique() {
        let many = |n: usize| {
            (0..n)
                .map(|i| format!("k{i} eA=="))
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(
            parse_metadata(many(MAX_METADATA_PAIRS).as_bytes())
                .unwrap()
                .len(),
            MAX_METADATA_PAIRS
        );
        let err = parse_metadata(many(2000).as_bytes()).unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(err.message.contains("more than"), "{}", err.message);
        assert!(parse_metadata(b"a eA==,b,a").is_err());
    }

    #[test]
    fn version_is_required_and_checked() {
        let limits = Limits::default();
        let none = Fields {
            upload_length: Some(b"5"),
            ..Fields::default()
        };
        let err = create(&none, &limits).unwrap_err();
        assert_eq!(err.status(), 412);
        assert_eq!(err.headers, vec![("Tus-Version", "1.0.0".to_string())]);
        let old = Fields {
            tus_resumable: Some(b"0.2.2"),
            ..none
        };
        assert_eq!(create(&old, &limits).unwrap_err().status(), 412);
    }

    #[test]
    fn creation_needs_exactly_one_length_field() {
        let limits = Limits::default();
        assert_eq!(create(&base(), &limits).unwrap_err().status(), 400);
        let both = Fields {
            upload_length: Some(b"5"),
            upload_defer_length: Some(b"1"),
            ..base()
        };
        assert_eq!(create(&both, &limits).unwrap_err().status(), 400);
        let deferred = Fields {
            upload_defer_length: Some(b"1"),
            ..base()
        };
        assert_eq!(create(&deferred, &limits).unwrap().length, None);
        let wrong = Fields {
            upload_defer_length: Some(b"0"),
            ..base()
        };
        assert_eq!(create(&wrong, &limits).unwrap_err().status(), 400);
        let known = Fields {
            upload_length: Some(b"12"),
            ..base()
        };
        assert_eq!(create(&known, &limits).unwrap().length, Some(12));
    }

    #[test]
    fn creation_over_the_limit_is_413_with_the_limit() {
        let limits = Limits {
            max_size: 100,
            ..Limits::default()
        };
        let big = Fields {
            upload_length: Some(b"101"),
            ..base()
        };
        let err = create(&big, &limits).unwrap_err();
        assert_eq!(err.status(), 413);
        assert!(err.headers.contains(&("Tus-Max-Size", "100".to_string())));
    }

    #[test]
    fn creation_with_upload_plans_the_first_bytes() {
        let limits = Limits::default();
        let f = Fields {
            upload_length: Some(b"10"),
            content_type: Some(b"application/offset+octet-stream"),
            content_length: Some(4),
            has_body: true,
            ..base()
        };
        let c = create(&f, &limits).unwrap();
        assert_eq!(c.first.map(|a| (a.offset, a.max_bytes)), Some((0, 10)));
        let too_much = Fields {
            content_length: Some(11),
            ..f
        };
        assert_eq!(create(&too_much, &limits).unwrap_err().status(), 413);
        let untyped = Fields {
            content_type: Some(b"text/plain"),
            ..f
        };
        assert_eq!(create(&untyped, &limits).unwrap_err().status(), 415);
    }

    #[test]
    fn filename_comes_from_metadata() {
        // "filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==" is world_domination_plan.pdf (tus spec example).
        let f = Fields {
            upload_length: Some(b"1"),
            upload_metadata: Some(
                b"relativePath,filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==,is_confidential",
            ),
            ..base()
        };
        let c = create(&f, &Limits::default()).unwrap();
        assert_eq!(c.filename.as_deref(), Some("world_domination_plan.pdf"));
        assert!(c.metadata.unwrap().starts_with("relativePath,"));
        // Not UTF-8: said so, not taken for a missing filename.
        let latin1 = Fields {
            upload_length: Some(b"1"),
            upload_metadata: Some(b"filename 6Q=="),
            ..base()
        };
        let err = create(&latin1, &Limits::default()).unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(err.message.contains("UTF-8"), "{}", err.message);
    }

    #[test]
    fn metadata_errors_are_400() {
        for raw in [&b"a !!!"[..], b"a YQ==,a YQ==", b",", b"k\xff"] {
            assert_eq!(parse_metadata(raw).unwrap_err().status(), 400, "{:?}", raw);
        }
        assert_eq!(parse_metadata(b"").unwrap(), vec![]);
        assert_eq!(parse_metadata(b"k").unwrap(), vec![("k".to_string(), None)]);
    }

    #[test]
    fn patch_at_the_wrong_offset_is_409_with_the_right_one() {
        let err = append(&patch(b"3", 2), &state(5, Some(10)), &Limits::default()).unwrap_err();
        assert_eq!(err.status(), 409);
        assert_eq!(err.headers, vec![("Upload-Offset", "5".to_string())]);
    }

    #[test]
    fn patch_checks_type_offset_and_room() {
        let limits = Limits::default();
        let s = state(5, Some(10));
        assert_eq!(append(&patch(b"5", 5), &s, &limits).unwrap().max_bytes, 5);
        assert_eq!(
            append(&patch(b"5", 6), &s, &limits).unwrap_err().status(),
            413
        );
        let untyped = Fields {
            content_type: None,
            ..patch(b"5", 1)
        };
        assert_eq!(append(&untyped, &s, &limits).unwrap_err().status(), 415);
        let no_offset = Fields {
            upload_offset: None,
            ..patch(b"5", 1)
        };
        assert_eq!(append(&no_offset, &s, &limits).unwrap_err().status(), 400);
        let negative = patch(b"-5", 1);
        assert_eq!(append(&negative, &s, &limits).unwrap_err().status(), 400);
    }

    #[test]
    fn a_deferred_length_arrives_with_a_patch() {
        let limits = Limits::default();
        let s = state(4, None);
        let f = Fields {
            upload_length: Some(b"9"),
            ..patch(b"4", 5)
        };
        let a = append(&f, &s, &limits).unwrap();
        assert_eq!((a.set_length, a.max_bytes), (Some(9), 5));
        let below = Fields {
            upload_length: Some(b"3"),
            ..patch(b"4", 0)
        };
        assert_eq!(append(&below, &s, &limits).unwrap_err().status(), 400);
        let changed = Fields {
            upload_length: Some(b"8"),
            ..patch(b"4", 1)
        };
        assert_eq!(
            append(&changed, &state(4, Some(9)), &limits)
                .unwrap_err()
                .status(),
            400
        );
    }

    #[test]
    fn checksums_parse_and_unknown_algorithms_are_400() {
        let limits = Limits::default();
        let s = state(0, Some(10));
        // sha1("hello") in base64.
        let f = Fields {
            upload_checksum: Some(b"sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00="),
            ..patch(b"0", 5)
        };
        let c = append(&f, &s, &limits).unwrap().checksum.unwrap();
        assert_eq!((c.algorithm, c.digest.len()), (ChecksumAlgorithm::Sha1, 20));
        let md5 = Fields {
            upload_checksum: Some(b"md5 XUFAKrxLKna5cZ2REBfFkg=="),
            ..patch(b"0", 5)
        };
        assert_eq!(append(&md5, &s, &limits).unwrap_err().status(), 400);
        let short = Fields {
            upload_checksum: Some(b"sha256 qvTGHdzF6KLavt4PO0gs2a6pQ00="),
            ..patch(b"0", 5)
        };
        assert_eq!(append(&short, &s, &limits).unwrap_err().status(), 400);
    }

    #[test]
    fn concatenation_creations_and_appends() {
        let limits = Limits::default();
        let partial = Fields {
            upload_length: Some(b"5"),
            upload_concat: Some(b"partial"),
            ..base()
        };
        let c = create(&partial, &limits).unwrap();
        assert_eq!(
            (c.length, c.concat),
            (Some(5), Some(concat::Request::Partial))
        );
        let fin = Fields {
            upload_concat: Some(b"final;/-/uploads/a /-/uploads/b"),
            ..base()
        };
        let c = create(&fin, &limits).unwrap();
        assert_eq!(c.length, None);
        assert!(matches!(c.concat, Some(concat::Request::Final(ref u)) if u.len() == 2));
        let with_length = Fields {
            upload_length: Some(b"5"),
            ..fin
        };
        assert_eq!(create(&with_length, &limits).unwrap_err().status(), 400);
        let with_body = Fields {
            has_body: true,
            content_length: Some(3),
            content_type: Some(b"application/offset+octet-stream"),
            ..fin
        };
        assert_eq!(create(&with_body, &limits).unwrap_err().status(), 403);

        let mut s = state(0, Some(4));
        s.concat = Some(Concat::Partial { used: false });
        assert!(append(&patch(b"0", 4), &s, &limits).is_ok());
        s.concat = Some(Concat::Partial { used: true });
        assert_eq!(
            append(&patch(b"0", 4), &s, &limits).unwrap_err().status(),
            409
        );
        s.concat = Some(Concat::Final { parts: vec![] });
        assert_eq!(
            append(&patch(b"0", 4), &s, &limits).unwrap_err().status(),
            403
        );
        let ext = |c| {
            discovery_fields(&limits, c)
                .into_iter()
                .find(|(n, _)| *n == "Tus-Extension")
                .map(|(_, v)| v.contains("concatenation"))
        };
        assert_eq!((ext(true), ext(false)), (Some(true), Some(false)));
    }

    #[test]
    fn head_fields_say_offset_and_length_or_deferral() {
        let fields = offset_fields(&state(3, None));
        assert!(fields.contains(&("Upload-Offset", "3".to_string())));
        assert!(fields.contains(&("Upload-Defer-Length", "1".to_string())));
        assert!(fields.contains(&("Cache-Control", "no-store".to_string())));
        assert!(offset_fields(&state(3, Some(7))).contains(&("Upload-Length", "7".to_string())));
    }

    proptest! {
        #[test]
        fn metadata_parsing_never_panics(raw in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = parse_metadata(&raw);
        }

        #[test]
        fn metadata_round_trips(pairs in proptest::collection::btree_map("[a-zA-Z0-9_.-]{1,12}", proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)), 0..6)) {
            let raw: Vec<String> = pairs.iter().map(|(k, v)| match v {
                None => k.clone(),
                Some(v) if v.is_empty() => k.clone(),
                Some(v) => format!("{k} {}", base64::engine::general_purpose::STANDARD.encode(v)),
            }).collect();
            let parsed = parse_metadata(raw.join(",").as_bytes()).unwrap();
            let expected: Vec<(String, Option<Vec<u8>>)> = pairs.into_iter().map(|(k, v)| (k, v.filter(|v| !v.is_empty()))).collect();
            prop_assert_eq!(parsed, expected);
        }

        #[test]
        fn append_never_panics(offset in proptest::collection::vec(any::<u8>(), 0..24), len in any::<u64>(), state_offset in any::<u64>()) {
            let f = Fields { upload_offset: Some(&offset), content_length: Some(len), has_body: true, content_type: Some(b"application/offset+octet-stream"), ..base() };
            let _ = append(&f, &state(state_offset, None), &Limits::default());
        }
    }
}
