//! Seeded object contents: byte `i` of object `id` is a pure function of
//! (seed, id, i), so a PUT can be generated on the fly and any GET or range
//! answer checked without keeping a copy.
//!
//! Counter mode: 64-bit word `w` of an object is `wymix(key + (w+1)·P0)`
//! (wyrand's output function over a counter), little-endian. One 128-bit
//! multiply per 8 bytes keeps generation far above loopback speeds.

const P0: u64 = 0xa076_1d64_78bd_642f;
const P1: u64 = 0xe703_7ed1_a0b4_28db;
const P2: u64 = 0x8ebc_6af0_9c88_c6e3;

/// wyrand's mixing step: a 64×64→128 multiply folded to 64 bits.
#[inline(always)]
pub fn wymix(a: u64, b: u64) -> u64 {
    let t = (a as u128).wrapping_mul(b as u128);
    ((t >> 64) as u64) ^ (t as u64)
}

/// The key of object `id` under `seed`; every derived value starts here.
pub fn object_key(seed: u64, id: u64) -> u64 {
    let a = wymix(seed ^ P0, id.wrapping_add(P1));
    wymix(a ^ P2, a.wrapping_add(P0))
}

/// The contents of one object (unbounded: the caller knows its size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Content {
    key: u64,
}

impl Content {
    pub fn new(seed: u64, id: u64) -> Content {
        Content {
            key: object_key(seed, id),
        }
    }

    #[inline(always)]
    fn word(&self, index: u64) -> u64 {
        let s = self
            .key
            .wrapping_add(index.wrapping_add(1).wrapping_mul(P0));
        wymix(s, s ^ P1)
    }

    /// Write the bytes at `offset..offset + out.len()` into `out`.
    pub fn fill(&self, offset: u64, out: &mut [u8]) {
        let lead = ((8 - offset % 8) % 8) as usize;
        let lead = lead.min(out.len());
        if lead > 0 {
            let w = self.word(offset / 8).to_le_bytes();
            let r = (offset % 8) as usize;
            out[..lead].copy_from_slice(&w[r..r + lead]);
        }
        let mut index = (offset + lead as u64) / 8;
        let mut words = out[lead..].chunks_exact_mut(8);
        for c in &mut words {
            c.copy_from_slice(&self.word(index).to_le_bytes());
            index += 1;
        }
        let tail = words.into_remainder();
        if !tail.is_empty() {
            let n = tail.len();
            tail.copy_from_slice(&self.word(index).to_le_bytes()[..n]);
        }
    }

    /// How many bytes of `got` differ from the bytes at `offset..`: 0 means
    /// verified. Compares word by word without a scratch buffer.
    pub fn mismatches(&self, offset: u64, got: &[u8]) -> u64 {
        let lead = (((8 - offset % 8) % 8) as usize).min(got.len());
        let mut bad = 0u64;
        if lead > 0 {
            let w = self.word(offset / 8).to_le_bytes();
            let r = (offset % 8) as usize;
            bad += differing(&w[r..r + lead], &got[..lead]);
        }
        let mut index = (offset + lead as u64) / 8;
        let mut words = got[lead..].chunks_exact(8);
        for c in &mut words {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            let x = u64::from_le_bytes(a) ^ self.word(index);
            if x != 0 {
                bad += x.to_le_bytes().iter().filter(|&&b| b != 0).count() as u64;
            }
            index += 1;
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            bad += differing(&self.word(index).to_le_bytes()[..tail.len()], tail);
        }
        bad
    }
}

fn differing(want: &[u8], got: &[u8]) -> u64 {
    want.iter().zip(got).filter(|(a, b)| a != b).count() as u64
}

/// A small PRNG for workload choices (wyrand), one per connection.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64, stream: u64) -> Rng {
        Rng(object_key(seed ^ P2, stream))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(P0);
        wymix(self.0, self.0 ^ P1)
    }

    /// Uniform in `0..n` (`n > 0`); the modulo bias is below 2^-40 for the
    /// sizes used here.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn whole(c: &Content, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        c.fill(0, &mut v);
        v
    }

    #[test]
    fn deterministic_and_distinct() {
        let a = whole(&Content::new(1, 7), 4096);
        assert_eq!(a, whole(&Content::new(1, 7), 4096));
        assert_ne!(a, whole(&Content::new(1, 8), 4096), "other object");
        assert_ne!(a, whole(&Content::new(2, 7), 4096), "other seed");
        // Not degenerate: all 256 byte values show up in 4 KiB.
        let mut seen = [false; 256];
        a.iter().for_each(|&b| seen[b as usize] = true);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn empty_and_tiny_slices() {
        let c = Content::new(3, 3);
        let all = whole(&c, 64);
        for off in 0..40u64 {
            for len in 0..17usize {
                let mut v = vec![0u8; len];
                c.fill(off, &mut v);
                assert_eq!(v, all[off as usize..off as usize + len]);
                assert_eq!(c.mismatches(off, &v), 0);
            }
        }
    }

    proptest! {
        #[test]
        fn any_offset_is_the_tail_of_the_whole(seed: u64, id: u64, off in 0usize..3000, len in 0usize..3000) {
            let c = Content::new(seed, id);
            let all = whole(&c, off + len);
            let mut part = vec![0u8; len];
            c.fill(off as u64, &mut part);
            prop_assert_eq!(&part[..], &all[off..]);
            prop_assert_eq!(c.mismatches(off as u64, &part), 0);
        }

        #[test]
        fn one_flipped_bit_anywhere_is_caught(seed: u64, off in 0u64..100, len in 1usize..2000, pos: prop::sample::Index, bit in 0u8..8) {
            let c = Content::new(seed, 5);
            let mut v = vec![0u8; len];
            c.fill(off, &mut v);
            v[pos.index(len)] ^= 1 << bit;
            prop_assert_eq!(c.mismatches(off, &v), 1);
        }

        #[test]
        fn far_offsets_are_seekable(seed: u64, off in (1u64 << 40)..(1u64 << 41), len in 0usize..100) {
            // Byte `off` is word `off / 8`, byte `off % 8`: no state to replay.
            let c = Content::new(seed, 1);
            let mut a = vec![0u8; len + 9];
            c.fill(off - 9, &mut a);
            let mut b = vec![0u8; len];
            c.fill(off, &mut b);
            prop_assert_eq!(&a[9..], &b[..]);
        }
    }

    #[test]
    fn rng_below_stays_in_range() {
        let mut r = super::Rng::new(9, 0);
        let mut hit = [0u32; 10];
        for _ in 0..10_000 {
            hit[r.below(10) as usize] += 1;
        }
        assert!(hit.iter().all(|&h| h > 800 && h < 1200), "{hit:?}");
    }
}
