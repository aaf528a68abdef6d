//! The sans-IO half of a transfer split into pieces over parallel
//! connections, shared by both directions: `get` by ranges (`ranged.rs`,
//! its record kept on the partial file) and `put` by tus partial uploads
//! (`parts.rs`, its record kept in the upload's state file). Decided here:
//! how a file is cut ([`piece_size`]), which pieces are done ([`Pieces`],
//! recorded so a rerun moves only the missing ones) and when to open
//! another connection ([`Adapt`]).

/// Files at least this large are fetched by ranges: below it a transfer at
/// 200 Mbit/s is over in under three seconds, mostly slow start, and the
/// extra HEAD and per-range requests would cost more than a second
/// connection gains. At 64 MiB there are already 16 pieces to share.
pub const RANGED_FROM: u64 = 64 << 20;

/// Most connections when the user does not say: more only take a larger
/// share of a shared bottleneck from everyone else (aria2 allows 16,
/// rclone uses 4).
pub const DEFAULT_MAX_CONNECTIONS: usize = 8;

/// The piece size for a file of `size` bytes: small enough that a cut
/// loses little and several connections find work (at least 64 pieces up
/// to 256 MiB pieces' files), large enough that one request's round trip is
/// a small share of its transfer (4 MiB at 200 Mbit/s: 0.17 s; 64 MiB caps
/// the work lost per connection at a cut).
pub fn piece_size(size: u64) -> u64 {
    (size / 64)
        .clamp(4 << 20, 64 << 20)
        .next_multiple_of(1 << 20)
}

/// [`piece_size`], raised so the file is cut into at most `count` pieces
/// (a tus final upload names at most so many partial uploads).
pub fn piece_size_at_most(size: u64, count: usize) -> u64 {
    let fewest = size.div_ceil(count.max(1) as u64).next_multiple_of(1 << 20);
    piece_size(size).max(fewest)
}

/// Which pieces of a `size`-byte file are done (on disk, or on the server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pieces {
    pub size: u64,
    pub piece: u64,
    done: Vec<bool>,
}

impl Pieces {
    pub fn new(size: u64) -> Pieces {
        Pieces::sized(size, piece_size(size))
    }

    /// A file cut into pieces of `piece` bytes (the last may be shorter).
    pub fn sized(size: u64, piece: u64) -> Pieces {
        let piece = piece.max(1);
        Pieces {
            size,
            piece,
            done: vec![false; size.div_ceil(piece) as usize],
        }
    }

    pub fn count(&self) -> usize {
        self.done.len()
    }

    /// Piece `i`'s bytes: `start..end` (end exclusive).
    pub fn range(&self, i: usize) -> (u64, u64) {
        let start = i as u64 * self.piece;
        (start, (start + self.piece).min(self.size))
    }

    pub fn mark(&mut self, i: usize) {
        if let Some(d) = self.done.get_mut(i) {
            *d = true;
        }
    }

    pub fn is_done(&self, i: usize) -> bool {
        self.done.get(i).copied().unwrap_or(false)
    }

    pub fn missing(&self) -> impl Iterator<Item = usize> + '_ {
        self.done
            .iter()
            .enumerate()
            .filter(|(_, d)| !**d)
            .map(|(i, _)| i)
    }

    pub fn done_bytes(&self) -> u64 {
        (0..self.count())
            .filter(|&i| self.done[i])
            .map(|i| {
                let (s, e) = self.range(i);
                e - s
            })
            .sum()
    }

    pub fn complete(&self) -> bool {
        self.done.iter().all(|d| *d)
    }

    /// `SIZE PIECE HEX-BITS`: the record kept on the partial file.
    pub fn encode(&self) -> String {
        let mut bits = vec![0u8; self.done.len().div_ceil(8)];
        for (i, d) in self.done.iter().enumerate() {
            if *d {
                bits[i / 8] |= 1 << (i % 8);
            }
        }
        let hex: String = bits.iter().map(|b| format!("{b:02x}")).collect();
        format!("{} {} {hex}", self.size, self.piece)
    }

    /// A record for a file of `size` bytes; anything else (another size,
    /// another piece size, garbage) is no record.
    pub fn decode(s: &str, size: u64) -> Option<Pieces> {
        Pieces::decode_sized(s, size, piece_size(size))
    }

    /// [`decode`](Self::decode) for pieces of `piece` bytes.
    pub fn decode_sized(s: &str, size: u64, piece: u64) -> Option<Pieces> {
        let mut it = s.split(' ');
        let (sz, recorded, hex) = (it.next()?, it.next()?, it.next()?);
        if it.next().is_some() || sz.parse::<u64>().ok()? != size {
            return None;
        }
        let mut p = Pieces::sized(size, piece);
        let piece = recorded;
        if piece.parse::<u64>().ok()? != p.piece || hex.len() != p.count().div_ceil(8) * 2 {
            return None;
        }
        for i in 0..p.count() {
            let byte = u8::from_str_radix(hex.get(i / 8 * 2..i / 8 * 2 + 2)?, 16).ok()?;
            if byte & (1 << (i % 8)) != 0 {
                p.mark(i);
            }
        }
        Some(p)
    }
}

/// When to open another connection: start with one; after each addition,
/// once a window has passed, compare the total rate with the rate before
/// it; while it keeps growing (by at least [`Adapt::GAIN`]) add another,
/// up to `max`; once it stops, stay. A new connection gets a second window
/// before it is judged useless: a loss-limited (CUBIC) flow's rate swings
/// by more than a tenth from one window to the next, and a flow just out
/// of slow start has not shown its share yet.
#[derive(Debug, Clone)]
pub struct Adapt {
    max: usize,
    open: usize,
    /// The rate with one connection fewer (bytes/s), after the first window.
    before: Option<f64>,
    /// The last connection added has had one window without growth.
    missed: bool,
    stopped: bool,
}

impl Adapt {
    /// A connection must add a tenth to be worth keeping on opening more.
    pub const GAIN: f64 = 1.10;

    pub fn new(max: usize) -> Adapt {
        Adapt {
            max: max.max(1),
            open: 1,
            before: None,
            missed: false,
            stopped: max <= 1,
        }
    }

    pub fn open(&self) -> usize {
        self.open
    }

    /// The total rate over the last window with `open()` connections;
    /// whether to open one more.
    pub fn window(&mut self, rate: f64) -> bool {
        if self.stopped {
            return false;
        }
        let grew = self.before.is_none_or(|b| rate >= b * Self::GAIN);
        if !grew && !self.missed && self.open < self.max {
            self.missed = true;
            return false;
        }
        if !grew || self.open >= self.max {
            self.stopped = true;
            return false;
        }
        self.missed = false;
        self.before = Some(rate);
        self.open += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pieces_cover_the_file_once() {
        let p = Pieces::new((64 << 20) + 5);
        assert_eq!(p.piece, 4 << 20);
        assert_eq!(p.count(), 17);
        assert_eq!(p.range(16), (64 << 20, (64 << 20) + 5));
        let big = Pieces::new(100 << 30);
        assert_eq!(big.piece, 64 << 20);
    }

    #[test]
    fn at_most_caps_the_count_only_where_needed() {
        assert_eq!(piece_size_at_most(64 << 20, 256), 4 << 20);
        let huge = 100u64 << 30;
        let piece = piece_size_at_most(huge, 256);
        assert!(huge.div_ceil(piece) <= 256 && piece > 64 << 20 && piece.is_multiple_of(1 << 20));
        assert_eq!(
            Pieces::sized(huge, piece).count(),
            huge.div_ceil(piece) as usize
        );
    }

    #[test]
    fn adapt_adds_while_the_total_grows() {
        let mut a = Adapt::new(8);
        assert!(a.window(10.0));
        assert_eq!(a.open(), 2);
        assert!(a.window(19.0));
        assert!(a.window(27.0));
        assert_eq!(a.open(), 4);
        assert!(
            !a.window(28.0),
            "a fourth added under a tenth: one more window"
        );
        assert!(!a.window(29.0), "and again: it stops");
        assert!(!a.window(100.0), "once stopped, stays");
        assert_eq!(a.open(), 4);
        // A window that swung low is forgiven when the next one grew.
        let mut noisy = Adapt::new(8);
        assert!(noisy.window(10.0));
        assert!(!noisy.window(9.0));
        assert!(noisy.window(15.0), "the second window showed the gain");
        assert_eq!(noisy.open(), 3);
        assert!(!noisy.window(15.0));
        assert!(!noisy.window(15.0));
        assert_eq!(noisy.open(), 3);
        let mut capped = Adapt::new(2);
        assert!(capped.window(1.0));
        assert!(!capped.window(10.0));
        assert_eq!(capped.open(), 2);
        let mut one = Adapt::new(1);
        assert!(!one.window(1.0));
    }

    proptest! {
        #[test]
        fn records_round_trip(size in 1u64..(1 << 40), marks in proptest::collection::vec(any::<u16>(), 0..40)) {
            let mut p = Pieces::new(size);
            for m in marks {
                p.mark(m as usize % p.count());
            }
            let back = Pieces::decode(&p.encode(), size);
            prop_assert_eq!(back.as_ref(), Some(&p));
            prop_assert_eq!(Pieces::decode(&p.encode(), size + 1), None);
            let other = Pieces::sized(size, piece_size_at_most(size, 256));
            prop_assert!(other.count() <= 256);
            prop_assert_eq!(Pieces::decode_sized(&other.encode(), size, other.piece), Some(other));
            let total: u64 = (0..p.count()).map(|i| { let (s, e) = p.range(i); e - s }).sum();
            prop_assert_eq!(total, size);
        }

        #[test]
        fn garbage_is_no_record(s in ".{0,80}") {
            let _ = Pieces::decode(&s, 1 << 30);
        }
    }
}
