//! Pacing body bytes to a rate shared by many connections.
//!
//! A [`Bucket`] is the sans-IO rule (the generic cell rate algorithm, a
//! token bucket kept as one "theoretical arrival time"): each reservation of
//! `n` bytes pushes that time `n / rate` further; a reservation made while
//! it is more than the burst ahead of now waits for the difference. Time is
//! passed in, so tests run it on a made-up clock.
//!
//! A [`Pace`] is what a transfer holds: the buckets its bytes count against
//! (a principal's and the server's total), shared by every connection of
//! that principal. The copy loops ask it before each step of at most
//! [`Pace::chunk`] bytes and give back what the step did not move; nothing
//! is buffered beyond what the loop already holds. The kernel's
//! `SO_MAX_PACING_RATE` paces one socket and cannot sum connections, so the
//! bucket is the truth.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Smallest and largest step a paced loop takes: small enough that sixteen
/// connections sharing a few MB/s stay smooth over a second, large enough
/// that a fast rate costs a handful of clock reads per MiB.
const MIN_CHUNK: u64 = 16 * 1024;
const MAX_CHUNK: u64 = 256 * 1024;

/// How far ahead of its rate a bucket may run: a tenth of a second of it,
/// at least one step (an idle principal starts at once, and the burst is
/// under 1% of a ten-second transfer).
fn burst_for(rate: u64) -> u64 {
    (rate / 10).max(chunk_for(rate))
}

fn chunk_for(rate: u64) -> u64 {
    (rate / 32).clamp(MIN_CHUNK, MAX_CHUNK)
}

/// One rate's state (sans-IO). `rate` is bytes per second, at least 1.
#[derive(Debug, Clone)]
pub struct Bucket {
    rate: u64,
    /// When the bytes reserved so far would all have passed at the rate.
    tat: Option<Instant>,
}

impl Bucket {
    pub fn new(rate: u64) -> Self {
        Bucket {
            rate: rate.max(1),
            tat: None,
        }
    }

    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// A new rate from now on (a reloaded rules file); what was reserved at
    /// the old rate stays reserved.
    pub fn set_rate(&mut self, rate: u64) {
        self.rate = rate.max(1);
    }

    /// How long `n` bytes take at the rate, rounded up to the nanosecond
    /// (rounded down, many small steps would add up to more than the rate).
    fn cost(&self, n: u64) -> Duration {
        let ns = (u128::from(n) * 1_000_000_000).div_ceil(u128::from(self.rate));
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Reserve `n` bytes at `now`: how long to wait before sending them.
    pub fn reserve(&mut self, now: Instant, n: u64) -> Duration {
        let start = self.tat.map_or(now, |t| t.max(now));
        let tat = start + self.cost(n);
        self.tat = Some(tat);
        let tolerance = self.cost(burst_for(self.rate));
        tat.saturating_duration_since(now + tolerance)
    }

    /// Give back `n` reserved bytes that were not moved (rounded down).
    pub fn refund(&mut self, n: u64) {
        let cost = Duration::from_nanos(
            u64::try_from(u128::from(n) * 1_000_000_000 / u128::from(self.rate)).unwrap_or(0),
        );
        if let Some(t) = &mut self.tat {
            *t = t.checked_sub(cost).unwrap_or(*t);
        }
    }
}

/// A bucket shared by every connection of one principal (or the server).
#[derive(Debug)]
pub struct SharedBucket(Mutex<Bucket>);

impl SharedBucket {
    pub fn new(rate: u64) -> Arc<Self> {
        Arc::new(SharedBucket(Mutex::new(Bucket::new(rate))))
    }

    fn with<T>(&self, f: impl FnOnce(&mut Bucket) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn rate(&self) -> u64 {
        self.with(|b| b.rate())
    }

    pub fn set_rate(&self, rate: u64) {
        self.with(|b| b.set_rate(rate));
    }
}

/// The buckets one direction of one transfer counts against.
#[derive(Debug, Clone)]
pub struct Pace {
    buckets: Vec<Arc<SharedBucket>>,
    chunk: usize,
}

impl Pace {
    /// `None` when there is no bucket: an unpaced transfer pays nothing.
    pub fn new(buckets: Vec<Arc<SharedBucket>>) -> Option<Pace> {
        let slowest = buckets.iter().map(|b| b.rate()).min()?;
        Some(Pace {
            chunk: chunk_for(slowest) as usize,
            buckets,
        })
    }

    /// The most a paced step should move at once.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Wait until `n` more bytes may go (or come) now, and count them.
    pub async fn reserve(&self, n: u64) {
        if n == 0 {
            return;
        }
        // tokio's clock, so a test with paused time paces on it too.
        let now = tokio::time::Instant::now().into_std();
        let wait = self
            .buckets
            .iter()
            .map(|b| b.with(|b| b.reserve(now, n)))
            .max()
            .unwrap_or_default();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Give back `n` reserved bytes a step did not move.
    pub fn refund(&self, n: u64) {
        if n > 0 {
            for b in &self.buckets {
                b.with(|b| b.refund(n));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Connections taking turns on one bucket, each sending as soon as it
    /// may, on a made-up clock: what went by the end, and when each step went.
    fn run(rate: u64, conns: usize, chunk: u64, secs: u64) -> (u64, Vec<(Duration, u64)>) {
        let t0 = Instant::now();
        let mut b = Bucket::new(rate);
        // Each connection's next send time.
        let mut next = vec![t0; conns];
        let mut sent = 0;
        let mut log = Vec::new();
        let end = t0 + Duration::from_secs(secs);
        loop {
            let (i, &at) = next.iter().enumerate().min_by_key(|(_, t)| **t).unwrap();
            if at >= end {
                return (sent, log);
            }
            let wait = b.reserve(at, chunk);
            // Counted when it goes, not when reserved: the last steps
            // reserved before the end may go after it.
            if at + wait < end {
                sent += chunk;
                log.push(((at + wait) - t0, sent));
            }
            next[i] = at + wait;
        }
    }

    #[test]
    fn sixteen_connections_get_one_rate() {
        for conns in [1, 4, 16] {
            let (sent, _) = run(5_000_000, conns, chunk_for(5_000_000), 10);
            let ratio = sent as f64 / 50e6;
            assert!((0.99..1.03).contains(&ratio), "{conns}: {ratio} ({sent})");
        }
    }

    #[test]
    fn a_refund_gives_the_time_back() {
        let t0 = Instant::now();
        let mut b = Bucket::new(1_000_000);
        assert_eq!(b.reserve(t0, 50_000), Duration::ZERO);
        let w = b.reserve(t0, 1_000_000);
        assert!(w > Duration::ZERO);
        b.refund(1_000_000);
        assert_eq!(b.reserve(t0, 50_000), Duration::ZERO);
    }

    #[test]
    fn an_idle_bucket_starts_at_once_and_keeps_no_credit() {
        let t0 = Instant::now();
        let mut b = Bucket::new(1_000_000);
        assert_eq!(b.reserve(t0, 100_000), Duration::ZERO);
        // A minute idle buys no more than the burst.
        let later = t0 + Duration::from_secs(60);
        let mut free = 0;
        while b.reserve(later, 10_000).is_zero() {
            free += 10_000;
        }
        assert!(free <= burst_for(1_000_000), "{free}");
    }

    proptest! {
        // Each case runs thousands of steps.
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever the rate, connections and step, what may be sent by any
        /// time never passes rate × time + burst + one step.
        #[test]
        fn never_ahead_of_the_rate(
            rate in 1_000u64..500_000_000,
            conns in 1usize..32,
            chunk in 1u64..1_000_000,
        ) {
            let secs = 3;
            let (_, log) = run(rate, conns, chunk, secs);
            for (at, sent) in log {
                let allowed = rate as f64 * at.as_secs_f64() + burst_for(rate) as f64 + chunk as f64;
                prop_assert!(sent as f64 <= allowed * 1.000_001 + 1.0, "{} > {}", sent, allowed);
            }
        }

        /// A long run reaches the rate whatever the step (within the one
        /// step and burst a run may end on).
        #[test]
        fn reaches_the_rate(rate in 100_000u64..100_000_000, conns in 1usize..17) {
            let chunk = chunk_for(rate);
            let (sent, _) = run(rate, conns, chunk, 5);
            let expect = rate as f64 * 5.0;
            let slack = (burst_for(rate) + chunk * conns as u64) as f64;
            prop_assert!((sent as f64) >= expect - chunk as f64 && (sent as f64) <= expect + slack,
                "{} vs {}", sent, expect);
        }
    }
}
