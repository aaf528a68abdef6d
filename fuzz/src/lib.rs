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

/// The extractor check shared by the XML and JSON targets: the document in
/// `data` (after two cut seeds) is fed whole and in three pieces; the
/// verdict must be the same, and on success the text too (text already
/// delivered before an error legitimately depends on the cuts).
pub fn check_extractor_split_invariance<X: wirespeed_extract::FieldExtractor>(
    new: impl Fn() -> X,
    data: &[u8],
) {
    fn run<X: wirespeed_extract::FieldExtractor>(
        mut x: X,
        pieces: &[&[u8]],
    ) -> (Vec<u8>, Result<(), String>) {
        let mut text = Vec::new();
        let mut sink = |t: &[u8]| {
            text.extend_from_slice(t);
            Ok(())
        };
        let mut verdict = Ok(());
        for p in pieces {
            if let Err(e) = x.feed(p, &mut sink) {
                verdict = Err(format!("{e:?}"));
                break;
            }
        }
        if verdict.is_ok() {
            verdict = x.finish().map_err(|e| format!("{e:?}"));
        }
        (text, verdict)
    }
    let mut data = data;
    let a = take_u16(&mut data);
    let b = take_u16(&mut data);
    let whole = run(new(), &[data]);
    let split = run(new(), &three_pieces(data, a, b));
    assert_eq!(whole.1, split.1, "verdict");
    if whole.1.is_ok() {
        assert_eq!(whole.0, split.0, "text");
    }
}
