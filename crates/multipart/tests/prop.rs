//! Property: any parts (binary data salted with boundary fragments) built
//! into a body parse back identically, whatever the input splits.

mod common;

use common::*;
use proptest::prelude::*;
use wirespeed_multipart::{Limits, MAX_PADDING};

/// RFC 2046 bchars (space allowed except last).
const BCHARS: &[u8] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ";

fn boundary() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(BCHARS), 1..=70).prop_map(|mut v| {
        if v[v.len() - 1] == b' ' {
            *v.last_mut().unwrap() = b'x';
        }
        String::from_utf8(v).unwrap()
    })
}

/// Data made of random bytes and pieces of `CRLF--boundary--`.
fn data(b: String) -> impl Strategy<Value = Vec<u8>> {
    let delim = format!("\r\n--{b}--  \r\n").into_bytes();
    let frag = (0..delim.len(), 0..delim.len()).prop_map(move |(i, j)| {
        let (i, j) = (i.min(j), i.max(j) + 1);
        delim[i..j].to_vec()
    });
    let token = prop_oneof![
        3 => proptest::collection::vec(any::<u8>(), 0..24),
        3 => frag,
        1 => Just(b"\r\n".to_vec()),
        1 => Just(b"\r".to_vec()),
        1 => Just(b"-".to_vec()),
    ];
    proptest::collection::vec(token, 0..12).prop_map(|v| v.concat())
}

/// True if `data`, followed in the body by `CRLF--boundary`, would contain a
/// real delimiter (or one with too much padding): such data cannot be sent.
fn has_real_delimiter(data: &[u8], b: &str) -> bool {
    let needle = format!("\r\n--{b}").into_bytes();
    let mut s = data.to_vec();
    s.extend_from_slice(b"\r\n--");
    (0..data.len()).any(|p| {
        s[p..].starts_with(&needle) && {
            let after = &s[p + needle.len()..];
            let pad = after
                .iter()
                .take_while(|&&c| c == b' ' || c == b'\t')
                .count();
            after.starts_with(b"--") || after[pad..].starts_with(b"\r\n") || pad > MAX_PADDING
        }
    })
}

/// (boundary, parts as (is_file, data), split points).
type Case = (String, Vec<(bool, Vec<u8>)>, Vec<usize>);

fn case() -> impl Strategy<Value = Case> {
    boundary().prop_flat_map(|b| {
        let parts = proptest::collection::vec((any::<bool>(), data(b.clone())), 0..6);
        let splits = proptest::collection::vec(0usize..4096, 0..10);
        (Just(b), parts, splits)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn roundtrip_random_splits((b, parts, splits) in case()) {
        prop_assume!(parts.iter().all(|(_, d)| !has_real_delimiter(d, &b)));
        let names: Vec<String> = (0..parts.len()).map(|i| format!("p{i}")).collect();
        let spec: Vec<(&str, Option<&str>, &[u8])> = parts
            .iter()
            .zip(&names)
            .map(|((file, d), n)| (n.as_str(), file.then_some("f.bin"), d.as_slice()))
            .collect();
        let mut body = b"preamble\r\n".to_vec();
        body.extend_from_slice(&build_body(&b, &spec));
        body.extend_from_slice(b"epilogue");
        let points: Vec<usize> = splits.iter().map(|&s| s % (body.len() + 1)).collect();
        let got = parse_split(&b, Limits::default(), &body, &points).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(got.len(), parts.len());
        for (i, (g, (file, d))) in got.iter().zip(&parts).enumerate() {
            prop_assert_eq!(&g.data, d, "part {}", i);
            prop_assert_eq!(g.headers.is_file(), *file);
            prop_assert_eq!(g.headers.name.as_deref(), Some(names[i].as_str()));
        }
    }
}
