//! Multipart helpers shared by the integration tests (the generic ones are
//! the kit's, re-exported).
#![allow(dead_code, unused_imports)]

use wirespeed_multipart::{parse_chunks, Limits, MultipartError, Part};
pub use wirespeed_testkit::corpus::{b64_decode, b64_encode};
pub use wirespeed_testkit::data::{split_at, Rng};

/// Parses `body` delivered in pieces cut at `points`.
pub fn parse_split(
    boundary: &str,
    limits: Limits,
    body: &[u8],
    points: &[usize],
) -> Result<Vec<Part>, MultipartError> {
    parse_chunks(boundary.as_bytes(), limits, split_at(body, points))
}

/// Random split points: between 1 and 8 cuts.
pub fn random_points(rng: &mut Rng, len: usize) -> Vec<usize> {
    let k = 1 + rng.below(8);
    (0..k).map(|_| rng.below(len + 1)).collect()
}

/// Parses with 1-byte chunks.
pub fn parse_bytewise(
    boundary: &str,
    limits: Limits,
    body: &[u8],
) -> Result<Vec<Part>, MultipartError> {
    parse_chunks(boundary.as_bytes(), limits, body.chunks(1))
}

/// A form-data body from (name, filename, data) triples.
pub fn build_body(boundary: &str, parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    for (name, filename, data) in parts {
        b.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").as_bytes(),
        );
        if let Some(f) = filename {
            b.extend_from_slice(
                format!("; filename=\"{f}\"\r\nContent-Type: application/octet-stream").as_bytes(),
            );
        }
        b.extend_from_slice(b"\r\n\r\n");
        b.extend_from_slice(data);
        b.extend_from_slice(b"\r\n");
    }
    b.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    b
}
