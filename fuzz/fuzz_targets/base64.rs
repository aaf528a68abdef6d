//! `wirespeed_base64` against the `base64` crate (STANDARD engine). Our
//! decoder skips CR, LF, space and tab anywhere and accepts non-zero
//! trailing bits; otherwise it is strict standard base64. Invariants: when
//! the base64 crate accepts the input with that whitespace removed, we
//! decode the same bytes; when we accept, the base64 crate (with trailing
//! bits allowed) decodes the same bytes; a stream cut in two decodes like
//! the whole; nothing panics.
#![no_main]
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::{alphabet, Engine as _};
use libfuzzer_sys::fuzz_target;
use wirespeed_base64::{decode, Decoder};
use wirespeed_fuzz::{cut, take_u16};

const LENIENT_BITS: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let k = cut(take_u16(&mut data), data.len());
    let ours = decode(data);
    let stripped: Vec<u8> = data
        .iter()
        .copied()
        .filter(|b| !matches!(b, b'\r' | b'\n' | b' ' | b'\t'))
        .collect();
    if let Ok(theirs) = STANDARD.decode(&stripped) {
        assert_eq!(ours.as_ref().ok(), Some(&theirs), "base64 crate accepts");
    }
    if let Ok(ours) = &ours {
        assert_eq!(
            LENIENT_BITS.decode(&stripped).ok().as_ref(),
            Some(ours),
            "we accept"
        );
    }
    // The same stream in two calls.
    let mut d = Decoder::new();
    let mut out = Vec::new();
    let split = d
        .decode(&data[..k], &mut out)
        .and_then(|()| d.decode(&data[k..], &mut out))
        .and_then(|()| d.finish())
        .map(|()| out);
    assert_eq!(ours, split, "cut at {k}");
});
