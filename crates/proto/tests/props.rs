//! Property tests: chunked round trips under arbitrary read splits, the
//! Content-Length parser against an obviously-correct reference, and the
//! head parser's robustness and split invariance.

use proptest::prelude::*;
use wirespeed_proto::{
    chunk_head, parse_content_length, parse_request_head, ChunkedDecoder, Limits, ProtoError,
    CHUNK_END, LAST_CHUNK,
};

// ---------------------------------------------------------------- chunked

/// One chunk extension, valid per RFC 9112 §7.1.1.
fn extension() -> impl Strategy<Value = String> {
    let name = "[a-zA-Z0-9!#$%&'*+.^_`|~-]{1,8}";
    let value = prop_oneof![
        Just(String::new()),
        "[a-zA-Z0-9-]{1,8}".prop_map(|v| format!("={v}")),
        "[ a-zA-Z;=,]{0,8}".prop_map(|v| format!("=\"{v}\"")),
        Just("=\"a\\\"b\\\\\"".to_string()),
    ];
    let bws = prop_oneof![Just(""), Just(" "), Just("\t ")];
    (bws.clone(), name, value, bws).prop_map(|(b1, n, v, b2)| format!("{b1};{b2}{n}{v}"))
}

#[derive(Debug, Clone)]
struct Encoded {
    wire: Vec<u8>,
    body: Vec<u8>,
    trailers: Vec<(String, String)>,
}

fn chunked_message() -> impl Strategy<Value = Encoded> {
    (
        prop::collection::vec(prop::collection::vec(any::<u8>(), 1..300), 0..8),
        prop::collection::vec(prop::option::weighted(0.3, extension()), 8),
        prop::option::weighted(0.3, extension()),
        prop::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,10}", "[ -~]{0,20}"), 0..3),
        any::<bool>(),
    )
        .prop_map(|(chunks, exts, last_ext, trailers, upper)| {
            let mut wire = Vec::new();
            let mut body = Vec::new();
            for (i, data) in chunks.iter().enumerate() {
                let head = chunk_head(data.len());
                let head = head.as_ref();
                let size = &head[..head.len() - 2];
                if upper {
                    wire.extend(size.iter().map(u8::to_ascii_uppercase));
                } else {
                    wire.extend_from_slice(size);
                }
                if let Some(e) = &exts[i] {
                    wire.extend_from_slice(e.as_bytes());
                }
                wire.extend_from_slice(b"\r\n");
                wire.extend_from_slice(data);
                wire.extend_from_slice(CHUNK_END);
                body.extend_from_slice(data);
            }
            let trailers: Vec<(String, String)> = trailers
                .into_iter()
                .map(|(n, v)| (n, v.trim_matches([' ', '\t']).to_string()))
                .collect();
            if last_ext.is_none() && trailers.is_empty() {
                wire.extend_from_slice(LAST_CHUNK);
            } else {
                wire.push(b'0');
                if let Some(e) = &last_ext {
                    wire.extend_from_slice(e.as_bytes());
                }
                wire.extend_from_slice(b"\r\n");
                for (n, v) in &trailers {
                    wire.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
                }
                wire.extend_from_slice(b"\r\n");
            }
            Encoded {
                wire,
                body,
                trailers,
            }
        })
}

/// Body, trailers, and bytes left over after the end of the body.
type Decoded = (Vec<u8>, Vec<(String, Vec<u8>)>, usize);

/// Feed `wire` to a decoder in pieces ending at `cuts` (sorted positions),
/// the way an I/O loop does: keep the unconsumed bytes, append the next read.
/// Returns the body, the trailers and how many bytes were left after `done`.
fn decode_with_cuts(wire: &[u8], cuts: &[usize]) -> Result<Decoded, ProtoError> {
    let mut dec = ChunkedDecoder::new(&Limits::default());
    let mut body = Vec::new();
    let mut buf = Vec::new();
    let mut fed = 0;
    let mut cuts = cuts.iter().copied().chain(std::iter::once(wire.len()));
    loop {
        let d = dec.decode(&buf)?;
        assert!(d.data.start <= d.data.end && d.data.end <= d.consumed && d.consumed <= buf.len());
        body.extend_from_slice(&buf[d.data.clone()]);
        buf.drain(..d.consumed);
        if d.done {
            return Ok((
                body,
                dec.trailers().to_vec(),
                buf.len() + (wire.len() - fed),
            ));
        }
        if d.consumed == 0 && d.data.is_empty() {
            let next = cuts.by_ref().find(|&c| c > fed).unwrap_or(wire.len());
            assert!(
                next > fed,
                "decoder wants more, but the message is complete"
            );
            buf.extend_from_slice(&wire[fed..next]);
            fed = next;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn chunked_round_trip(msg in chunked_message(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12)) {
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(msg.wire.len() + 1)).collect();
        cuts.sort_unstable();
        let (body, trailers, left) = decode_with_cuts(&msg.wire, &cuts).unwrap();
        prop_assert_eq!(body, msg.body);
        prop_assert_eq!(left, 0);
        let want: Vec<(String, Vec<u8>)> =
            msg.trailers.iter().map(|(n, v)| (n.clone(), v.as_bytes().to_vec())).collect();
        prop_assert_eq!(trailers, want);
    }

    /// Every split point at once, one byte per read: the hardest schedule
    /// (every CRLF and size line is split).
    #[test]
    fn chunked_byte_at_a_time(msg in chunked_message()) {
        let cuts: Vec<usize> = (1..msg.wire.len()).collect();
        let (body, _, _) = decode_with_cuts(&msg.wire, &cuts).unwrap();
        prop_assert_eq!(body, msg.body);
    }

    /// Arbitrary bytes never panic, and the verdict does not depend on how
    /// the input is split.
    #[test]
    fn chunked_garbage_split_invariant(
        wire in prop::collection::vec(prop::sample::select(b"0123456789abcdefABCDEF;= \"\\\r\nxX:\t".to_vec()), 0..64),
        cut in any::<prop::sample::Index>(),
    ) {
        let whole = run_to_end(&wire, &[]);
        let split = run_to_end(&wire, &[cut.index(wire.len() + 1)]);
        prop_assert_eq!(whole, split);
    }
}

/// Decode as far as the input goes: `Ok((body, done))` or the error.
fn run_to_end(wire: &[u8], cuts: &[usize]) -> Result<(Vec<u8>, bool), ProtoError> {
    let mut dec = ChunkedDecoder::new(&Limits::default());
    let mut body = Vec::new();
    let mut buf = Vec::new();
    let mut fed = 0;
    let mut cuts = cuts.iter().copied().chain(std::iter::once(wire.len()));
    loop {
        let d = dec.decode(&buf)?;
        body.extend_from_slice(&buf[d.data.clone()]);
        buf.drain(..d.consumed);
        if d.done {
            return Ok((body, true));
        }
        if d.consumed == 0 && d.data.is_empty() {
            if fed == wire.len() {
                return Ok((body, false));
            }
            let next = cuts.by_ref().find(|&c| c > fed).unwrap_or(wire.len());
            buf.extend_from_slice(&wire[fed..next]);
            fed = next;
        }
    }
}

// ---------------------------------------------------------- Content-Length

/// The rule, written as plainly as possible: split on commas, trim SP/HTAB,
/// each element non-empty ASCII digits that fit in u64 (checked by the
/// standard library on a pure-digit string), all elements equal.
fn reference_content_length(value: &[u8]) -> Result<u64, ProtoError> {
    let mut values = Vec::new();
    for element in value.split(|&b| b == b',') {
        let trimmed: &[u8] = {
            let mut e = element;
            while let [b' ' | b'\t', rest @ ..] = e {
                e = rest;
            }
            while let [rest @ .., b' ' | b'\t'] = e {
                e = rest;
            }
            e
        };
        if trimmed.is_empty() || !trimmed.iter().all(u8::is_ascii_digit) {
            return Err(ProtoError::InvalidContentLength);
        }
        let text = std::str::from_utf8(trimmed).unwrap();
        values.push(
            text.parse::<u64>()
                .map_err(|_| ProtoError::InvalidContentLength)?,
        );
    }
    if values.iter().any(|&v| v != values[0]) {
        return Err(ProtoError::ConflictingContentLength);
    }
    Ok(values[0])
}

fn cl_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        8 => prop::sample::select(b"0123456789".to_vec()),
        2 => Just(b' '),
        1 => Just(b'\t'),
        2 => Just(b','),
        1 => any::<u8>(),
    ];
    prop_oneof![
        prop::collection::vec(byte, 0..26),
        // Values around the u64 boundary and lists of them.
        (any::<u64>(), 0..3usize).prop_map(|(v, n)| {
            let s = v.to_string();
            vec![s.as_str(); n + 1].join(", ").into_bytes()
        }),
        (18_446_744_073_709_551_000u128..18_446_744_073_709_552_000u128)
            .prop_map(|v| v.to_string().into_bytes()),
        "0{0,5}[0-9]{1,20}".prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn content_length_matches_reference(value in cl_bytes()) {
        prop_assert_eq!(parse_content_length(&value), reference_content_length(&value), "{:?}", String::from_utf8_lossy(&value));
    }
}

// ------------------------------------------------------------------- heads

fn head_bytes() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        Just(b"GET / HTTP/1.1\r\n".to_vec()),
        Just(b"POST /x?y HTTP/1.0\r\n".to_vec()),
        Just(b"GET / HTTP/2.0\r\n".to_vec()),
        Just(b"Host: a\r\n".to_vec()),
        Just(b"Content-Length: 5\r\n".to_vec()),
        Just(b"Transfer-Encoding: chunked\r\n".to_vec()),
        Just(b"X: y\n".to_vec()),
        Just(b" folded\r\n".to_vec()),
        Just(b"\r\n".to_vec()),
        prop::collection::vec(any::<u8>(), 0..12),
        "[ -~]{0,12}\r\n".prop_map(String::into_bytes),
    ];
    prop::collection::vec(line, 0..8).prop_map(|v| v.concat())
}

fn class(r: &Result<Option<(wirespeed_proto::RequestHead, usize)>, ProtoError>) -> Option<u16> {
    match r {
        Ok(Some(_)) => Some(200),
        Ok(None) => None,
        Err(e) => Some(e.status()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn head_parser_never_panics(raw in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_request_head(&raw, &Limits::default());
        let _ = wirespeed_proto::parse_response_head(&raw, &Limits::default());
    }

    /// A prefix gives "need more" or the same verdict (by status) as the
    /// whole input; with tight limits so the 414/431 paths are exercised.
    #[test]
    fn head_parser_split_invariant(raw in head_bytes(), tight in any::<bool>()) {
        let limits = if tight {
            Limits { max_head_bytes: 48, max_headers: 3, max_target_len: 4, ..Limits::default() }
        } else {
            Limits::default()
        };
        let whole = parse_request_head(&raw, &limits);
        if let Ok(Some((head, n))) = &whole {
            prop_assert!(*n <= raw.len() && head.len() <= *n);
            // The accessors never panic.
            let _ = (head.method(), head.target(), head.keep_alive(), head.expects_continue());
            let _ = wirespeed_proto::request_framing(head);
        }
        for cut in 0..raw.len() {
            let prefix = parse_request_head(&raw[..cut], &limits);
            let c = class(&prefix);
            if let Ok(Some((_, n))) = &prefix {
                // A complete head in a prefix is the same head in the whole.
                prop_assert_eq!(class(&whole), Some(200));
                prop_assert_eq!(Some(*n), whole.as_ref().ok().and_then(|w| w.as_ref().map(|x| x.1)));
            } else {
                prop_assert!(c.is_none() || c == class(&whole),
                    "prefix {:?} -> {:?}, whole -> {:?}", String::from_utf8_lossy(&raw[..cut]), prefix, whole);
            }
        }
    }
}
