//! The sans-IO half of a transfer split into pieces over parallel
//! connections, shared by both directions: `get` by ranges (`ranged.rs`,
//! its record kept on the partial file) and `put` by tus partial uploads
//! (`parts.rs`, its record kept in the upload's state file). Decided here:
//! how a file is cut ([`piece_size`]), which pieces are done ([`Pieces`],
//! recorded so a rerun moves only the missing ones) and when to open
//! another connection ([`Adapt`]).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Files at least this large may take more than one connection: below it
/// a transfer at 200 Mbit/s is over in under three seconds, mostly slow
/// start, before a second connection would show what it adds. At 64 MiB
/// there are already 16 pieces to share. (Smaller files larger than
/// [`SMALLEST_PIECE`] are fetched by ranges too, over one connection.)
pub const RANGED_FROM: u64 = 64 << 20;

/// Most connections when the user does not say: more only take a larger
/// share of a shared bottleneck from everyone else (aria2 allows 16,
/// rclone uses 4).
pub const DEFAULT_MAX_CONNECTIONS: usize = 8;

/// The smallest piece size: the first request of a download, made before
/// the size is known, asks this much, the first piece or its start.
pub const SMALLEST_PIECE: u64 = 4 << 20;

/// The piece size for a file of `size` bytes: small enough that a cut
/// loses little and several connections find work (at least 64 pieces up
/// to 256 MiB pieces' files), large enough that one request's round trip is
/// a small share of its transfer (4 MiB at 200 Mbit/s: 0.17 s; 64 MiB caps
/// the work lost per connection at a cut).
pub fn piece_size(size: u64) -> u64 {
    (size / 64)
        .clamp(SMALLEST_PIECE, 64 << 20)
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

/// How often the transfers feed [`Adapt`] their total rate.
pub const TICK: std::time::Duration = std::time::Duration::from_millis(500);

/// When to open more connections, judged on the total rate sampled every
/// [`TICK`]: start with one; after each change let the new flows leave
/// slow start ([`Adapt::SETTLE`] ticks), then average the total over
/// [`Adapt::MEASURE`] ticks and compare it with the average before the
/// change, in shares of one flow (the earlier total over its count). Where
/// the added connections brought at least a third of a share each (a
/// loss-limited link: N flows carry N times one), open as many again (1,
/// 2, 4, 8: the gain to judge grows with the step, so a flow's noise
/// matters less); where they brought less but a third together, add
/// one at a time; where not even that, measure as long again once (a CUBIC
/// flow's rate swings by a third from one second to the next) and then
/// stay. Never more than `max`. A link one flow fills gets one probe of a
/// second connection (which stays: closing it again would leave the first
/// flow to grow back into the share it gave up, seconds on CUBIC), or none
/// where the sender's counters show the one filling a clean link: two CUBIC
/// flows there carry less than one (on the emulated 200 Mbit/s, 20 ms link
/// without loss, 23.0–24.3 MB/s against 24.5, overflowing the router's
/// buffer in turn). The first judgement waits longer
/// ([`Adapt::FIRST_SETTLE`]): a first flow's slow start and the bytes
/// filling its socket buffer count as sent before the link carried them.
#[derive(Debug, Clone)]
pub struct Adapt {
    max: usize,
    open: usize,
    /// Connections added by the last change.
    added: usize,
    /// The mean total rate before the last change, with its count.
    before: Option<(f64, usize)>,
    /// Ticks since the last change, and the rates summed after settling.
    ticks: u32,
    sum: f64,
    samples: u32,
    stopped: bool,
}

impl Adapt {
    /// Ticks after a change not judged: the new flows' slow start.
    pub const SETTLE: u32 = 2;
    /// Ticks not judged at the start.
    pub const FIRST_SETTLE: u32 = 4;
    /// Ticks averaged for a judgement (doubled once when it falls short).
    pub const MEASURE: u32 = 4;
    /// Added connections are worth as many more when each brought at
    /// least this share of one flow, and one more while all of them
    /// together brought this much (a third: a gain well clear of the
    /// noise of a few seconds' mean, well short of a flow's share).
    const WORTH: f64 = 0.35;

    pub fn new(max: usize) -> Adapt {
        Adapt {
            max: max.max(1),
            open: 1,
            added: 1,
            before: None,
            ticks: 0,
            sum: 0.0,
            samples: 0,
            stopped: max <= 1,
        }
    }

    pub fn open(&self) -> usize {
        self.open
    }

    /// The total rate over the last [`TICK`] (bytes/s), and whether the
    /// one connection open is known to fill a clean link (its sender's TCP
    /// counters say so, or a sender still reading them asks to wait: then
    /// no second is tried while that holds); how many connections to open
    /// now (0: none).
    pub fn tick(&mut self, rate: f64, one_fills: bool) -> usize {
        if self.stopped {
            return 0;
        }
        self.ticks += 1;
        let settle = if self.before.is_none() {
            Self::FIRST_SETTLE
        } else {
            Self::SETTLE
        };
        if self.ticks <= settle {
            return 0;
        }
        self.sum += rate.max(0.0);
        self.samples += 1;
        if !self.samples.is_multiple_of(Self::MEASURE) {
            return 0;
        }
        let mean = self.sum / f64::from(self.samples);
        let step = match self.before {
            // One connection filling a clean link: measured again later.
            None if one_fills => {
                self.sum = 0.0;
                self.samples = 0;
                return 0;
            }
            // One connection measured: try a second.
            None => 1,
            Some((b, n)) => {
                let share = b / n as f64;
                let gained = if share > 0.0 {
                    (mean - b) / share
                } else if mean > 0.0 {
                    f64::INFINITY
                } else {
                    0.0
                };
                if gained >= Self::WORTH * self.added as f64 {
                    self.open
                } else if gained >= Self::WORTH {
                    1
                } else if self.samples < 2 * Self::MEASURE {
                    // Short of a third of a share: measure as long again.
                    return 0;
                } else {
                    // Stay. (Not back to the count before: the rate before
                    // may have been a first flow's slow start and the bytes
                    // filling its socket buffer, not what the link carried.)
                    self.stopped = true;
                    return 0;
                }
            }
        };
        let step = step.min(self.max - self.open);
        if step == 0 {
            self.stopped = true;
            return 0;
        }
        self.before = Some((mean, self.open));
        self.open += step;
        self.added = step;
        self.ticks = 0;
        self.sum = 0.0;
        self.samples = 0;
        step
    }
}

/// The connections at work, counted by their workers.
#[derive(Debug, Default)]
pub struct Crew {
    open: AtomicUsize,
    most: AtomicUsize,
}

impl Crew {
    /// A worker starts.
    pub fn join(&self) {
        let now = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.most.fetch_max(now, Ordering::Relaxed);
    }

    /// A worker ends (no piece left, a failure).
    pub fn quit(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Workers at work now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// The most workers at once.
    pub fn most(&self) -> usize {
        self.most.load(Ordering::Relaxed).max(1)
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

    /// Feeds `ticks` ticks of `rate` (the same each tick).
    fn feed(a: &mut Adapt, ticks: u32, rate: impl Fn(usize) -> f64) -> usize {
        (0..ticks).map(|_| a.tick(rate(a.open()), false)).sum()
    }

    #[test]
    fn adapt_doubles_while_each_flow_adds_its_share_and_stays_at_the_ceiling() {
        let judged = Adapt::SETTLE + Adapt::MEASURE;
        let first = Adapt::FIRST_SETTLE + Adapt::MEASURE;
        // Each flow 1.0 up to a ceiling of 2.5: 1, 2, 4, then one at a time.
        let mut a = Adapt::new(8);
        let link = |n: usize| (n as f64).min(2.5);
        assert_eq!(feed(&mut a, first - 1, link), 0, "not before a judgement");
        assert_eq!(a.tick(link(1), false), 1);
        assert_eq!(a.open(), 2);
        assert_eq!(feed(&mut a, judged, link), 2, "the second flow doubled it");
        assert_eq!(a.open(), 4);
        assert_eq!(
            feed(&mut a, judged, link),
            1,
            "two flows added half: one more"
        );
        assert_eq!(a.open(), 5);
        // The fifth added nothing: measured as long again, then it stays.
        assert_eq!(feed(&mut a, 2 * judged + 100, link), 0);
        assert_eq!(a.open(), 5);
        // A window that swung low is forgiven when the longer one grew.
        let mut noisy = Adapt::new(8);
        feed(&mut noisy, first, |_| 10.0);
        assert_eq!(noisy.open(), 2);
        feed(&mut noisy, judged, |_| 11.0);
        assert_eq!(noisy.open(), 2, "a tenth more: not yet");
        feed(&mut noisy, Adapt::MEASURE, |_| 30.0);
        assert_eq!(noisy.open(), 4, "the longer mean showed the gain");
        // A link one flow fills: one probe of a second.
        let mut full = Adapt::new(8);
        assert_eq!(feed(&mut full, 10 * judged, |n| 5.0 + n as f64 * 0.01), 1);
        assert_eq!(full.open(), 2);
        // The cap holds; one connection never adds.
        let mut capped = Adapt::new(3);
        assert_eq!(feed(&mut capped, 10 * judged, |n| n as f64), 2);
        assert_eq!(capped.open(), 3);
        // One connection filling a clean link: no second while that holds;
        // once it no longer does, the probe follows at the next judgement.
        let mut filled = Adapt::new(8);
        assert_eq!(
            (0..10 * judged)
                .map(|_| filled.tick(5.0, true))
                .sum::<usize>(),
            0
        );
        assert_eq!(filled.open(), 1);
        let probe = (0..Adapt::MEASURE)
            .map(|_| filled.tick(5.0, false))
            .sum::<usize>();
        assert_eq!((probe, filled.open()), (1, 2));
        let mut one = Adapt::new(1);
        assert_eq!(feed(&mut one, 10 * judged, |n| n as f64), 0);
        assert_eq!(one.open(), 1);
    }

    /// A simulated link: each flow carries one share (its rate swinging by
    /// up to `swing` either way from one tick to the next, as a
    /// loss-limited CUBIC flow's does; half of it in its first tick), the
    /// total at most what `fill` flows carry at their lowest (swinging by
    /// 5%). Returns the connections kept after `ticks` and whether any was
    /// opened in the last half.
    fn simulate(seed: u64, fill: f64, swing: f64, max: usize, ticks: u32) -> (usize, bool) {
        let ceiling = fill * (1.0 - swing);
        let mut x = seed | 1;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let mut a = Adapt::new(max);
        let mut ages: Vec<u32> = vec![0];
        let mut late = false;
        for t in 0..ticks {
            let flows: f64 = ages
                .iter()
                .map(|&age| (1.0 + swing * rnd()) * if age == 0 { 0.5 } else { 1.0 })
                .sum();
            let rate = flows.min(ceiling * (1.0 + 0.05 * rnd()));
            ages.iter_mut().for_each(|age| *age += 1);
            let opened = a.tick(rate, false);
            ages.extend(std::iter::repeat_n(0, opened));
            // Those over the count kept leave (the newest first here).
            ages.truncate(a.open());
            late |= opened > 0 && t >= ticks / 2;
        }
        (a.open(), late)
    }

    #[test]
    fn the_crew_counts_its_workers_and_the_most_at_once() {
        let crew = Crew::default();
        (0..3).for_each(|_| crew.join());
        crew.quit();
        crew.quit();
        crew.join();
        assert_eq!((crew.open(), crew.most()), (2, 3));
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
        fn adapt_reaches_the_cap_where_flows_add_up(seed in any::<u64>(), max in 2usize..=8) {
            // Loss-limited flows on a wide link: N flows carry N shares.
            // Within 20 s of 0.5 s ticks every allowed connection is open.
            let (open, _) = simulate(seed, 100.0, 0.3, max, 40);
            prop_assert_eq!(open, max);
        }

        #[test]
        fn adapt_stops_at_a_full_link(seed in any::<u64>(), fill in 1usize..=4) {
            // `fill` flows fill the link (at their lowest): it keeps enough
            // to carry most of it, at most one doubling past the power of
            // two above `fill`, and then opens no more.
            let (open, late) = simulate(seed, fill as f64, 0.3, 8, 400);
            let ceiling = fill as f64 * 0.7;
            prop_assert!((open as f64).min(ceiling) >= 0.7 * ceiling, "{} kept for {}", open, fill);
            prop_assert!(open <= (2 * fill.next_power_of_two()).min(8), "{} kept for {}", open, fill);
            prop_assert!(!late, "still opening connections after 100 s");
        }

        #[test]
        fn garbage_is_no_record(s in ".{0,80}") {
            let _ = Pieces::decode(&s, 1 << 30);
        }
    }
}
