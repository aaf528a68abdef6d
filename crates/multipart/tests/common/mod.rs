//! Helpers shared by the integration tests.
#![allow(dead_code)]

use wirespeed_multipart::{parse_chunks, Limits, MultipartError, Part};

/// Small deterministic PRNG (xorshift64*): reproducible splits without a
/// `rand` dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Splits `body` at the sorted, deduplicated `points`.
pub fn split_at<'a>(body: &'a [u8], points: &[usize]) -> Vec<&'a [u8]> {
    let mut pts: Vec<usize> = points.iter().map(|&p| p.min(body.len())).collect();
    pts.sort_unstable();
    pts.dedup();
    let mut out = Vec::new();
    let mut prev = 0;
    for p in pts {
        out.push(&body[prev..p]);
        prev = p;
    }
    out.push(&body[prev..]);
    out
}

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

pub fn b64_encode(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub fn b64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64 in corpus: {c}"),
    };
    let mut out = Vec::new();
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    for c in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &b) in c.iter().enumerate() {
            n |= (val(b) as u32) << (18 - 6 * i);
        }
        for i in 0..c.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
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
