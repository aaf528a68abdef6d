//! `parse_content_length` against a plain reference implementation of its
//! documented grammar: OWS-trimmed comma list of 1*DIGIT elements fitting a
//! u64, all equal; malformed beats conflicting.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirespeed_proto::{parse_content_length, ProtoError};

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

fn reference(value: &[u8]) -> Result<u64, ProtoError> {
    let mut values = Vec::new();
    for element in value.split(|&b| b == b',') {
        let e = trim(element);
        if e.is_empty() || !e.iter().all(u8::is_ascii_digit) {
            return Err(ProtoError::InvalidContentLength);
        }
        let s = std::str::from_utf8(e).unwrap();
        match s.parse::<u64>() {
            Ok(v) => values.push(v),
            Err(_) => return Err(ProtoError::InvalidContentLength),
        }
    }
    if values.iter().all(|&v| v == values[0]) {
        Ok(values[0])
    } else {
        Err(ProtoError::ConflictingContentLength)
    }
}

fuzz_target!(|data: &[u8]| {
    assert_eq!(
        parse_content_length(data),
        reference(data),
        "value {:?}",
        String::from_utf8_lossy(data)
    );
});
