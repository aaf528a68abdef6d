//! The multipart parser over a body delivered in three pieces (cuts chosen
//! by the input). Input: two cut seeds, the boundary up to the first LF,
//! then the body. Invariant: the same parts (or the same error) whatever
//! the cuts.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirespeed_fuzz::{take_u16, three_pieces};
use wirespeed_multipart::{parse_all, parse_chunks, Limits};

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let a = take_u16(&mut data);
    let b = take_u16(&mut data);
    let Some(lf) = data.iter().position(|&c| c == b'\n') else {
        return;
    };
    let (boundary, body) = (&data[..lf], &data[lf + 1..]);
    let limits = Limits {
        max_header_bytes: 512,
        max_parts: 16,
        max_field_bytes: 4096,
    };
    let whole = parse_all(boundary, limits, body);
    let split = parse_chunks(boundary, limits, three_pieces(body, a, b));
    assert_eq!(whole, split);
    let bytewise = parse_chunks(boundary, limits, body.chunks(1));
    assert_eq!(whole, bytewise);
});
