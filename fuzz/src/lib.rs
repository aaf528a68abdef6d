//! Helpers shared by the fuzz targets: how a target's input is cut into
//! pieces. The first bytes of the input choose the cut points, the rest is
//! the data under test.

/// Takes one byte from the front of `data` (0 when empty).
pub fn take_byte(data: &mut &[u8]) -> u8 {
    match data.split_first() {
        Some((&b, rest)) => {
            *data = rest;
            b
        }
        None => 0,
    }
}

/// Takes two bytes (little endian) from the front of `data`.
pub fn take_u16(data: &mut &[u8]) -> u16 {
    let lo = take_byte(data);
    let hi = take_byte(data);
    u16::from_le_bytes([lo, hi])
}

/// A cut point in `0..=len` chosen by `seed`.
pub fn cut(seed: u16, len: usize) -> usize {
    usize::from(seed) % (len + 1)
}

/// Cuts `data` at two points chosen by `a` and `b` (in order) into three pieces.
pub fn three_pieces(data: &[u8], a: u16, b: u16) -> [&[u8]; 3] {
    let x = cut(a, data.len());
    let y = cut(b, data.len());
    let (x, y) = (x.min(y), x.max(y));
    [&data[..x], &data[x..y], &data[y..]]
}

/// Piece lengths (1..=max) from a small xorshift generator seeded by `seed`,
/// so one input byte describes a whole sequence of reads.
pub struct Pieces(u32, usize);

impl Pieces {
    pub fn new(seed: u16, max: usize) -> Self {
        Pieces(u32::from(seed) | 0x1_0000, max.max(1))
    }
}

impl Iterator for Pieces {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        Some(1 + (x as usize) % self.1)
    }
}
