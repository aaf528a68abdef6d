//! Deterministic test data, so failures reproduce.

/// Pseudo-random bytes (xorshift; not all zeros, not periodic at small
/// scale); different seeds give different streams.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(n);
    v
}

/// Small deterministic PRNG (xorshift64*): reproducible choices without a
/// `rand` dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// `body` cut at `points` (sorted, deduplicated, clamped to its length).
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
