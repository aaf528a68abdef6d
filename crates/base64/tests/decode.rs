//! Conformance, strictness, streaming and differential (SIMD vs scalar) tests.

use base64::Engine as _;
use proptest::prelude::*;
use wirespeed_base64::{decode, DecodeError, DecodeErrorKind, Decoder, Engine};

fn std_encode(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn std_decode(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("reference base64 must decode")
}

/// Decode through the streaming API, splitting the input at `splits`.
fn stream(engine: Engine, input: &[u8], splits: &[usize]) -> Result<Vec<u8>, DecodeError> {
    let mut d = Decoder::with_engine(engine);
    let mut out = Vec::new();
    let mut pos = 0;
    for &s in splits {
        let s = s.clamp(pos, input.len());
        d.decode(&input[pos..s], &mut out)?;
        pos = s;
    }
    d.decode(&input[pos..], &mut out)?;
    d.finish()?;
    Ok(out)
}

type Outcome = Result<Vec<u8>, DecodeError>;

fn err(offset: u64, kind: DecodeErrorKind) -> Outcome {
    Err(DecodeError { offset, kind })
}

/// Wrap `text` at `line` characters with `eol`.
fn wrap(text: &str, line: usize, eol: &str) -> Vec<u8> {
    let mut v = Vec::new();
    for chunk in text.as_bytes().chunks(line) {
        v.extend_from_slice(chunk);
        v.extend_from_slice(eol.as_bytes());
    }
    v
}

fn payload(len: usize) -> Vec<u8> {
    // xorshift: deterministic, incompressible-looking bytes.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn rfc4648_vectors_decode() {
    let cases: [(&str, &str); 7] = [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ];
    for (plain, enc) in cases {
        assert_eq!(decode(enc.as_bytes()).unwrap(), plain.as_bytes(), "{enc}");
        for engine in [Engine::Simd, Engine::Scalar] {
            for split in 0..=enc.len() {
                assert_eq!(
                    stream(engine, enc.as_bytes(), &[split]).unwrap(),
                    plain.as_bytes()
                );
            }
        }
    }
}

#[test]
fn invalid_inputs_are_rejected_at_the_right_offset() {
    use DecodeErrorKind::*;
    let cases: &[(&[u8], Outcome)] = &[
        (b"ab!d", err(2, InvalidCharacter(b'!'))),
        (b"ab=d", err(3, DataAfterPadding(b'd'))),
        (b"ab=c", err(3, DataAfterPadding(b'c'))),
        (b"a===", err(1, InvalidPadding)),
        (b"=abc", err(0, InvalidPadding)),
        (b"abcd=", err(4, InvalidPadding)),
        (b"abcd=abc", err(4, InvalidPadding)),
        (b"ab==cd==", err(4, DataAfterPadding(b'c'))),
        (b"abc=abcd", err(4, DataAfterPadding(b'a'))),
        (b"ab===", err(4, DataAfterPadding(b'='))),
        (b"abc= \r\n x", err(8, DataAfterPadding(b'x'))),
        (b"a", err(1, IncompleteGroup)),
        (b"ab", err(2, IncompleteGroup)),
        (b"abc", err(3, IncompleteGroup)),
        (b"ab=", err(3, IncompleteGroup)),
        (b"abcd\r\nab\r\n", err(10, IncompleteGroup)),
        (b"ab\x0ccd", err(2, InvalidCharacter(0x0c))),
        (b"ab\x0bcd", err(2, InvalidCharacter(0x0b))),
        (b"abcd\x00", err(4, InvalidCharacter(0))),
        (b"ab-_", err(2, InvalidCharacter(b'-'))),
        (b"ab\xc2\xa0cd", err(2, InvalidCharacter(0xc2))),
    ];
    for (input, want) in cases {
        assert_eq!(&decode(input), want, "{:?}", String::from_utf8_lossy(input));
        // Same error, same absolute offset, whatever the engine and split,
        // and with a long valid prefix that puts it on the SIMD path.
        let prefix = wrap(&std_encode(&payload(3000)), 76, "\r\n");
        let mut long = prefix.clone();
        long.extend_from_slice(input);
        let want_long = want.clone().map_err(|e| DecodeError {
            offset: e.offset + prefix.len() as u64,
            ..e
        });
        for engine in [Engine::Simd, Engine::Scalar] {
            for split in 0..=input.len() {
                let r = stream(engine, input, &[split]);
                assert_eq!(&r, want, "{engine:?} split {split}");
                let r = stream(engine, &long, &[prefix.len() / 2, prefix.len() + split]);
                assert_eq!(
                    r.map_err(|e| e.offset),
                    want_long.clone().map_err(|e| e.offset)
                );
            }
        }
    }
}

#[test]
fn display_mentions_byte_and_offset() {
    let e = decode(b"abcd\r\nab\x0ccd").unwrap_err();
    assert_eq!(e.to_string(), "invalid base64 character 0x0c at byte 8");
}

#[test]
fn errors_are_sticky() {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    let e = d.decode(b"ab!c", &mut out).unwrap_err();
    assert_eq!(d.decode(b"abcd", &mut out), Err(e.clone()));
    assert_eq!(d.finish(), Err(e));
}

#[test]
fn nonzero_trailing_bits_are_accepted() {
    // Documented choice (matches the WPT strict verdicts): "ab==" -> 0x69.
    let prefix = std_encode(&payload(300));
    for tail in ["ab==", "abd=", "AB==", "/z=="] {
        let want = {
            let mut d = Decoder::with_engine(Engine::Scalar);
            let mut v = Vec::new();
            d.decode(tail.as_bytes(), &mut v).unwrap();
            d.finish().unwrap();
            v
        };
        let input = format!("{prefix}{tail}");
        let mut expect = payload(300);
        expect.extend_from_slice(&want);
        assert_eq!(stream(Engine::Simd, input.as_bytes(), &[]).unwrap(), expect);
    }
    assert_eq!(decode(b"ab==").unwrap(), [0x69]);
}

#[test]
fn wpt_corpus_strict_verdicts_hold_at_every_split() {
    let mut n = 0;
    for case in wirespeed_testkit::corpus::cases("base64_wpt.jsonl") {
        let id = case["id"].as_str().unwrap();
        let input = case["input"].as_str().unwrap().as_bytes();
        let verdict = case["expect_strict"].as_str().unwrap();
        for engine in [Engine::Simd, Engine::Scalar] {
            for split in 0..=input.len() {
                let got = stream(engine, input, &[split]);
                match verdict {
                    "ok" => {
                        let want = std_decode(case["strict_bytes_b64"].as_str().unwrap());
                        assert_eq!(
                            got.as_deref(),
                            Ok(&want[..]),
                            "{id} {engine:?} split {split}"
                        );
                    }
                    "error" => assert!(got.is_err(), "{id} {engine:?} split {split}: {got:?}"),
                    other => panic!("{id}: unknown expect_strict {other:?}"),
                }
            }
        }
        n += 1;
    }
    assert_eq!(n, 71, "corpus size changed");
}

#[test]
fn line_breaks_every_73_chars_decode_on_the_fast_path() {
    let data = payload(1 << 20);
    let flat = std_encode(&data);
    let broken = wrap(&flat, 73, "\r\n");
    assert_eq!(decode(flat.as_bytes()).unwrap(), data);
    assert_eq!(decode(&broken).unwrap(), data);
    // And the line breaks did not push the work onto the slow path.
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for chunk in broken.chunks(65_536 + 7) {
        d.decode(chunk, &mut out).unwrap();
    }
    d.finish().unwrap();
    assert_eq!(out, data);
    let chunks = broken.len() / (65_536 + 7) + 1;
    assert!(
        // Per call the scalar path sees a carried group and a tail shorter
        // than the SIMD threshold (64 bytes) plus a partial group.
        d.scalar_bytes() < (chunks * 80) as u64,
        "scalar path took {} bytes",
        d.scalar_bytes()
    );
}

#[test]
fn reused_vec_appends() {
    let data = payload(10_000);
    let text = wrap(&std_encode(&data), 64, "\n");
    let mut d = Decoder::new();
    let mut out = Vec::with_capacity(1 << 16);
    let mut all = Vec::new();
    for chunk in text.chunks(1000) {
        out.clear();
        out.extend_from_slice(b"hdr");
        d.decode(chunk, &mut out).unwrap();
        assert_eq!(&out[..3], b"hdr");
        all.extend_from_slice(&out[3..]);
    }
    d.finish().unwrap();
    assert_eq!(all, data);
}

/// Tail lengths 0..64 around the SIMD threshold and whitespace at every position.
#[test]
fn every_short_tail_and_whitespace_position_decodes() {
    for len in 0..=64usize {
        let data = payload(len);
        let enc = std_encode(&data);
        for ws in ["\n", "\r\n", " ", "\t"] {
            for pos in 0..=enc.len() {
                let mut input = enc.as_bytes().to_vec();
                input.splice(pos..pos, ws.bytes());
                let mut long_in = std_encode(&payload(96)).into_bytes();
                long_in.extend_from_slice(&input);
                let mut long_out = payload(96);
                long_out.extend_from_slice(&data);
                for engine in [Engine::Simd, Engine::Scalar] {
                    assert_eq!(stream(engine, &input, &[]).unwrap(), data);
                    assert_eq!(stream(engine, &long_in, &[]).unwrap(), long_out);
                    assert_eq!(stream(engine, &long_in, &[pos + 100]).unwrap(), long_out);
                }
            }
        }
    }
}

/// Every short tail over a small alphabet after a long valid prefix: the SIMD
/// engine (with its strictness glue) must agree with the scalar reference on
/// the verdict, the bytes and the error offset.
#[test]
fn simd_and_scalar_agree_on_every_short_tail() {
    let alphabet: &[u8] = b"Ab= \n\x0c-";
    let prefix = wrap(&std_encode(&payload(150)), 64, "\n");
    let mut tail = Vec::new();
    for len in 0..=5u32 {
        for mut code in 0..alphabet.len().pow(len) {
            tail.clear();
            for _ in 0..len {
                tail.push(alphabet[code % alphabet.len()]);
                code /= alphabet.len();
            }
            for pre in [&prefix[..], &prefix[..prefix.len() - 1], &prefix[..0]] {
                let mut input = pre.to_vec();
                input.extend_from_slice(&tail);
                let want = stream(Engine::Scalar, &input, &[]);
                assert_eq!(stream(Engine::Simd, &input, &[]), want, "{input:?}");
                let mid = pre.len().saturating_sub(3);
                assert_eq!(stream(Engine::Simd, &input, &[mid]), want, "{input:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip_with_line_breaks_and_splits(
        data in proptest::collection::vec(any::<u8>(), 0..3000),
        line in 1usize..100,
        crlf in any::<bool>(),
        spaces in any::<bool>(),
        splits in proptest::collection::vec(0usize..5000, 0..8),
    ) {
        let enc = std_encode(&data);
        let mut input = Vec::new();
        for (i, chunk) in enc.as_bytes().chunks(line).enumerate() {
            input.extend_from_slice(chunk);
            if spaces && i % 3 == 1 {
                input.extend_from_slice(b" \t");
            }
            input.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        }
        let mut splits = splits;
        splits.sort_unstable();
        for engine in [Engine::Simd, Engine::Scalar] {
            prop_assert_eq!(&stream(engine, &input, &splits).unwrap(), &data);
        }
    }

    #[test]
    fn arbitrary_bytes_simd_matches_scalar(
        input in proptest::collection::vec(
            prop_oneof![Just(b'A'), Just(b'z'), Just(b'='), Just(b'\n'), Just(b' '), any::<u8>()],
            0..400,
        ),
        splits in proptest::collection::vec(0usize..400, 0..4),
    ) {
        let mut splits = splits;
        splits.sort_unstable();
        let want = stream(Engine::Scalar, &input, &[]);
        prop_assert_eq!(stream(Engine::Scalar, &input, &splits), want.clone());
        prop_assert_eq!(stream(Engine::Simd, &input, &splits), want);
    }
}

/// The SIMD path works in 4 KiB blocks: corrupt, truncate or end the stream
/// around block boundaries and check it agrees with the scalar reference.
#[test]
fn simd_and_scalar_agree_around_block_boundaries() {
    let data = payload(40_000); // 40_000 % 3 == 1: ends with "=="
    let good = wrap(&std_encode(&data), 76, "\r\n");
    for engine in [Engine::Simd, Engine::Scalar] {
        for split in [0, 1, 4_095, 4_096, 4_097, 16_384, 30_000, good.len() - 3] {
            assert_eq!(stream(engine, &good, &[split]).unwrap(), data);
        }
    }
    for base in [4_096usize, 16_384, 49_152] {
        for p in base - 48..base + 48 {
            for bad in [0x0c, b'!', b'=', b' '] {
                let mut input = good.clone();
                input[p] = bad;
                let want = stream(Engine::Scalar, &input, &[]);
                assert_eq!(stream(Engine::Simd, &input, &[]), want, "{p} {bad}");
                assert_eq!(stream(Engine::Simd, &input, &[1000]), want, "{p} {bad}");
            }
            for tail in [&b"ab=="[..], b"abc=", b"ab=", b"a", b"ab== x"] {
                let mut input = good[..p].to_vec();
                input.extend_from_slice(tail);
                let want = stream(Engine::Scalar, &input, &[]);
                assert_eq!(stream(Engine::Simd, &input, &[]), want, "{p} {tail:?}");
            }
        }
    }
}

/// Long whitespace runs (whole SIMD blocks without a group) stay correct.
#[test]
fn long_whitespace_runs_decode_correctly() {
    let data = payload(20_000);
    let enc = std_encode(&data);
    let (a, b) = enc.split_at(9_999);
    let mut input = vec![b' '; 10_000];
    input.extend_from_slice(a.as_bytes());
    input.extend(std::iter::repeat_n(b'\n', 9_000));
    input.extend_from_slice(b.as_bytes());
    input.extend(std::iter::repeat_n(b'\t', 9_000));
    for engine in [Engine::Simd, Engine::Scalar] {
        for split in [0, 5_000, 19_999, 20_001, 30_000] {
            assert_eq!(stream(engine, &input, &[split]).unwrap(), data);
        }
    }
}

#[test]
fn max_decoded_len_bounds_output() {
    use wirespeed_base64::max_decoded_len;
    assert_eq!(max_decoded_len(0), 0);
    assert_eq!(max_decoded_len(3), 0);
    assert_eq!(max_decoded_len(4), 3);
    assert_eq!(max_decoded_len(78), 57);
    for len in 0..200 {
        let enc = std_encode(&payload(len));
        assert!(max_decoded_len(enc.len()) >= len);
    }
}
