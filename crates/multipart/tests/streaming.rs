//! Splits, boundary look-alikes, preamble/epilogue, empty parts, errors,
//! limits, LF-only handling and the retention bound.

mod common;

use common::*;
use wirespeed_multipart::{parse_all, Event, Limits, MultipartError, Parser, MAX_PADDING};

const B: &str = "XyZ";

fn names_and_data(parts: &[wirespeed_multipart::Part]) -> Vec<(Option<String>, Vec<u8>)> {
    parts
        .iter()
        .map(|p| (p.headers.name.clone(), p.data.clone()))
        .collect()
}

fn small_body() -> Vec<u8> {
    build_body(
        B,
        &[
            ("a", None, b"v1"),
            ("f", Some("x.bin"), b"\r\n--XyZ-\r\n--Xy\r"),
            ("e", None, b""),
        ],
    )
}

fn small_expected() -> Vec<(Option<String>, Vec<u8>)> {
    vec![
        (Some("a".into()), b"v1".to_vec()),
        (Some("f".into()), b"\r\n--XyZ-\r\n--Xy\r".to_vec()),
        (Some("e".into()), b"".to_vec()),
    ]
}

#[test]
fn every_single_split_point_gives_the_same_parts() {
    let body = small_body();
    for i in 0..=body.len() {
        let parts = parse_split(B, Limits::default(), &body, &[i])
            .unwrap_or_else(|e| panic!("split {i}: {e}"));
        assert_eq!(names_and_data(&parts), small_expected(), "split at {i}");
    }
}

#[test]
fn every_pair_of_split_points_gives_the_same_parts() {
    let body = small_body();
    for i in 0..=body.len() {
        for j in i..=body.len() {
            let parts = parse_split(B, Limits::default(), &body, &[i, j])
                .unwrap_or_else(|e| panic!("split {i},{j}: {e}"));
            assert_eq!(names_and_data(&parts), small_expected(), "split at {i},{j}");
        }
    }
}

#[test]
fn byte_by_byte_feeding_gives_the_same_parts() {
    let parts = parse_bytewise(B, Limits::default(), &small_body()).unwrap();
    assert_eq!(names_and_data(&parts), small_expected());
}

/// Data events are sub-slices of the input (zero-copy) and never include the
/// CRLF that precedes a delimiter.
#[test]
fn data_is_zero_copy_and_crlf_belongs_to_delimiter() {
    let body = build_body(B, &[("f", Some("a"), b"line1\r\nline2\r\n")]);
    let mut p = Parser::new(B.as_bytes(), Limits::default()).unwrap();
    let range = body.as_ptr_range();
    let mut off = 0;
    let mut data = Vec::new();
    loop {
        let (ev, n) = p.feed(&body[off..]).unwrap();
        off += n;
        match ev {
            Event::Data(d) => {
                assert!(
                    range.contains(&d.as_ptr()),
                    "Data must point into the input"
                );
                data.extend_from_slice(d);
            }
            Event::End => break,
            Event::NeedMore => panic!("whole body given"),
            _ => {}
        }
    }
    p.finish().unwrap();
    assert_eq!(data, b"line1\r\nline2\r\n");
}

#[test]
fn boundary_lookalikes_are_data() {
    let tricky: Vec<&[u8]> = vec![
        b"--XyZ",                 // boundary without preceding CRLF
        b"a--XyZ--b",             // close-delimiter look-alike mid-line
        b"\r\n--XyZa",            // CRLF--boundary + other byte
        b"\r\n--XyZ-x",           // one hyphen
        b"\r\n--XyZ\rx",          // CR not followed by LF
        b"\r\n--XyZ \tq",         // padding then junk
        b"\n--XyZ\r\n",           // LF-only delimiter inside data: data
        b"\r\n--XyZ\n",           // CRLF--boundary LF: data (LF-only refused)
        b"\r\n--Xy\r\n--X\r\r\n", // prefixes
        b"\r",                    // a lone CR right before the delimiter
        b"\r\n",                  // data ending in CRLF
        b"-",
    ];
    for t in tricky {
        let body = build_body(B, &[("f", Some("a.bin"), t), ("g", None, t)]);
        for i in 0..=body.len() {
            let parts = parse_split(B, Limits::default(), &body, &[i])
                .unwrap_or_else(|e| panic!("{t:?} split {i}: {e}"));
            assert_eq!(parts.len(), 2, "{t:?}");
            assert_eq!(parts[0].data, t, "{t:?} split {i}");
            assert_eq!(parts[1].data, t, "{t:?} split {i}");
        }
    }
}

#[test]
fn transport_padding_after_a_boundary_is_ignored() {
    let body = b"--XyZ \t \r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ  \r\n\r\nw\r\n--XyZ--  \r\n";
    let parts = parse_all(B.as_bytes(), Limits::default(), body).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0].data, b"v");
    assert_eq!(parts[1].data, b"w");
    assert!(parts[1].headers.raw.is_empty());

    let mut long = b"--XyZ".to_vec();
    long.extend(std::iter::repeat_n(b' ', MAX_PADDING + 1));
    long.extend_from_slice(b"\r\n\r\nv\r\n--XyZ--");
    assert_eq!(
        parse_all(B.as_bytes(), Limits::default(), &long),
        Err(MultipartError::PaddingTooLong { limit: MAX_PADDING })
    );
}

#[test]
fn preamble_and_epilogue_are_ignored() {
    let body = b"This is the preamble.\r\n--XyZ-not\r\n--XyZ\r\n\r\nbody\r\n--XyZ--\r\nepilogue --XyZ\r\n\r\n--XyZ\r\nmore";
    for i in 0..=body.len() {
        let parts = parse_split(B, Limits::default(), body, &[i]).unwrap();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].data, b"body");
    }
}

#[test]
fn empty_parts_and_an_empty_form_are_parsed() {
    // Part with no headers and no body.
    let body = b"--XyZ\r\n\r\n\r\n--XyZ\r\n\r\n\r\n--XyZ--";
    let parts = parse_all(B.as_bytes(), Limits::default(), body).unwrap();
    assert_eq!(parts.len(), 2);
    assert!(parts
        .iter()
        .all(|p| p.data.is_empty() && p.headers.raw.is_empty()));
    // Close delimiter only: an empty form.
    assert_eq!(
        parse_all(B.as_bytes(), Limits::default(), b"--XyZ--").unwrap(),
        vec![]
    );
}

#[test]
fn missing_final_boundary_is_an_error() {
    let full = small_body();
    let cut_points = [
        0,
        3,
        full.len() - 20,
        full.len() - 9, // inside "\r\n--XyZ--\r\n"
        full.len() - 4, // "\r\n--XyZ" without "--"
        full.len() - 3, // "--XyZ-"
    ];
    for cut in cut_points {
        assert_eq!(
            parse_all(B.as_bytes(), Limits::default(), &full[..cut]),
            Err(MultipartError::MissingFinalBoundary),
            "cut at {cut}"
        );
    }
    // Nothing but a non-final delimiter.
    assert_eq!(
        parse_all(B.as_bytes(), Limits::default(), b"--XyZ\r\n\r\ndata"),
        Err(MultipartError::MissingFinalBoundary)
    );
    let mut p = Parser::new(B.as_bytes(), Limits::default()).unwrap();
    assert_eq!(p.finish(), Err(MultipartError::MissingFinalBoundary));
    assert_eq!(p.feed(b"").unwrap(), (Event::NeedMore, 0));
}

#[test]
fn filename_star_takes_precedence_over_filename() {
    let body = "--XyZ\r\nContent-Disposition: form-data; name=\"up\"; filename=\"fallback.txt\"; filename*=UTF-8''na%C3%AFve%20file.txt\r\n\r\nx\r\n--XyZ--";
    let parts = parse_all(B.as_bytes(), Limits::default(), body.as_bytes()).unwrap();
    assert_eq!(
        parts[0].headers.filename.as_deref(),
        Some("na\u{ef}ve file.txt")
    );
    assert_eq!(parts[0].headers.name.as_deref(), Some("up"));
}

#[test]
fn mtom_related_part_headers_are_parsed() {
    let body = "--uuid:1\r\nContent-Type: application/xop+xml; type=\"text/xml\"\r\nContent-ID: <root@x>\r\n\r\n<env/>\r\n--uuid:1\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <att1@x>\r\n\r\nBIN\r\n--uuid:1--\r\n";
    let parts = parse_all(b"uuid:1", Limits::default(), body.as_bytes()).unwrap();
    assert_eq!(parts[0].headers.cid(), Some("root@x"));
    assert_eq!(
        parts[0].headers.content_type.as_deref(),
        Some("application/xop+xml; type=\"text/xml\"")
    );
    assert_eq!(parts[1].headers.cid(), Some("att1@x"));
    assert_eq!(
        parts[1].headers.get("content-transfer-encoding"),
        Some(&b"binary"[..])
    );
    assert_eq!(parts[1].data, b"BIN");
}

#[test]
fn lf_only_bodies_are_rejected() {
    let body = b"--XyZ\nContent-Disposition: form-data; name=a\n\nv\n--XyZ--\n";
    assert_eq!(
        parse_all(B.as_bytes(), Limits::default(), body),
        Err(MultipartError::BareLf)
    );
    // CRLF delimiter but LF-only header lines.
    let body = b"--XyZ\r\nContent-Disposition: form-data; name=a\n\nv\r\n--XyZ--\r\n";
    assert_eq!(
        parse_all(B.as_bytes(), Limits::default(), body),
        Err(MultipartError::BareLf)
    );
}

#[test]
fn malformed_part_headers_are_rejected() {
    for h in [
        "Content-Disposition form-data\r\n",
        ": x\r\n",
        " folded: x\r\n",
        "X: a\rb\r\n",
        "Content-Disposition: form-data; name=\"unterminated\r\n",
        "Content-Disposition: ; name=a\r\n",
    ] {
        let body = format!("--XyZ\r\n{h}\r\nv\r\n--XyZ--");
        assert!(
            matches!(
                parse_all(B.as_bytes(), Limits::default(), body.as_bytes()),
                Err(MultipartError::MalformedHeader(_))
            ),
            "{h:?}"
        );
    }
}

#[test]
fn part_headers_over_the_limit_are_rejected() {
    let limits = Limits {
        max_header_bytes: 64,
        ..Limits::default()
    };
    let ok = format!("--XyZ\r\nX: {}\r\n\r\nv\r\n--XyZ--", "a".repeat(64 - 7));
    assert!(
        parse_all(B.as_bytes(), limits, ok.as_bytes()).is_ok(),
        "exactly at the limit"
    );
    let big = format!("--XyZ\r\nX: {}\r\n\r\nv\r\n--XyZ--", "a".repeat(64 - 6));
    assert_eq!(
        parse_all(B.as_bytes(), limits, big.as_bytes()),
        Err(MultipartError::HeadersTooLarge { limit: 64 })
    );
    // An unterminated header block is refused once it passes the limit, even
    // in 1-byte chunks (bounded retention).
    let endless = format!("--XyZ\r\nX: {}", "a".repeat(1000));
    assert_eq!(
        parse_bytewise(B, limits, endless.as_bytes()),
        Err(MultipartError::HeadersTooLarge { limit: 64 })
    );
    // Found by the `multipart` fuzz target: a line ending past the limit is
    // too large whatever ends it; it was `BareLf` when seen whole but
    // `HeadersTooLarge` when the first chunk stopped before it.
    let late_lf = format!("--XyZ\r\nX: {}\n\r\n\r\nv\r\n--XyZ--", "a".repeat(100));
    assert_eq!(
        parse_all(B.as_bytes(), limits, late_lf.as_bytes()),
        Err(MultipartError::HeadersTooLarge { limit: 64 })
    );
    assert_eq!(
        parse_bytewise(B, limits, late_lf.as_bytes()),
        Err(MultipartError::HeadersTooLarge { limit: 64 })
    );
    // Default is 8 KiB.
    assert_eq!(Limits::default().max_header_bytes, 8 * 1024);
}

#[test]
fn parts_over_the_limit_are_rejected() {
    let limits = Limits {
        max_parts: 3,
        ..Limits::default()
    };
    let three: Vec<(&str, Option<&str>, &[u8])> = vec![("a", None, b"1"); 3];
    assert_eq!(
        parse_all(B.as_bytes(), limits, &build_body(B, &three))
            .unwrap()
            .len(),
        3
    );
    let four: Vec<(&str, Option<&str>, &[u8])> = vec![("a", None, b"1"); 4];
    let e = parse_all(B.as_bytes(), limits, &build_body(B, &four)).unwrap_err();
    assert_eq!(e, MultipartError::TooManyParts { limit: 3 });
    assert!(e.is_limit());
}

#[test]
fn field_limit_applies_to_fields_not_files() {
    let limits = Limits {
        max_field_bytes: 10,
        ..Limits::default()
    };
    let ten = [7u8; 10];
    let eleven = [7u8; 11];
    let big_file = vec![7u8; 1000];
    assert!(parse_all(B.as_bytes(), limits, &build_body(B, &[("a", None, &ten)])).is_ok());
    assert!(parse_all(
        B.as_bytes(),
        limits,
        &build_body(B, &[("a", Some("f"), &big_file)])
    )
    .is_ok());
    for i in 0..40 {
        assert_eq!(
            parse_split(B, limits, &build_body(B, &[("a", None, &eleven)]), &[i]),
            Err(MultipartError::FieldTooLarge { limit: 10 })
        );
    }
}

#[test]
fn errors_are_sticky() {
    let mut p = Parser::new(B.as_bytes(), Limits::default()).unwrap();
    let bad = b"--XyZ\r\n: x\r\n\r\n";
    let e = p.feed(bad).unwrap_err();
    assert_eq!(p.feed(b"--XyZ--").unwrap_err(), e);
    assert_eq!(p.finish().unwrap_err(), e);
}

#[test]
fn end_is_repeated_and_swallows_epilogue() {
    let mut p = Parser::new(B.as_bytes(), Limits::default()).unwrap();
    assert_eq!(p.feed(b"--XyZ--\r\n").unwrap(), (Event::End, 7));
    assert_eq!(p.feed(b"\r\nanything").unwrap(), (Event::End, 10));
    p.finish().unwrap();
}

#[test]
fn invalid_boundaries_rejected_by_new() {
    for b in [
        &b""[..],
        b"a\r",
        b"trailing ",
        &[b'a'; 71][..],
        b"caf\xc3\xa9",
    ] {
        assert!(
            matches!(
                Parser::new(b, Limits::default()),
                Err(MultipartError::InvalidBoundary(_))
            ),
            "{b:?}"
        );
    }
    assert!(Parser::new(&[b'a'; 70], Limits::default()).is_ok());
}

/// The caller never has to retain more than `max_retained()` bytes: feed
/// one byte at a time and check the unconsumed tail after every NeedMore.
#[test]
fn retained_tail_is_bounded() {
    let mut data = Vec::new();
    let mut rng = Rng(7);
    for _ in 0..5000 {
        data.push(b"\r\n-XyZab"[rng.below(8)]);
    }
    let body = build_body(B, &[("f", Some("a"), &data), ("g", None, b"x")]);
    let limits = Limits {
        max_header_bytes: 256,
        ..Limits::default()
    };
    let mut p = Parser::new(B.as_bytes(), limits).unwrap();
    let bound = p.max_retained();
    let mut start = 0;
    let mut got = Vec::new();
    for end in 1..=body.len() {
        loop {
            let (ev, n) = p.feed(&body[start..end]).unwrap();
            start += n;
            match ev {
                Event::Data(d) => got.extend_from_slice(d),
                Event::NeedMore => {
                    assert!(end - start <= bound, "retained {} > {bound}", end - start);
                    break;
                }
                Event::End => break,
                _ => {}
            }
        }
    }
    p.finish().unwrap();
    let mut want = data.clone();
    want.extend_from_slice(b"x");
    assert_eq!(got, want);
}
