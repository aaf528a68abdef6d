//! How many password guesses get as far as argon2. Sans-IO: the caller
//! passes the clock and does the verifying.
//!
//! Guessing is bounded twice: per source (an IPv4 address, or an IPv6 /64,
//! which one host usually holds whole) and per target account, so neither
//! many guesses from one place nor a few from each of many places get far.
//! Attempts still being verified count as failures until they are known
//! not to be: a parallel burst gets no more through than a sequence.
//! Past its free budget a source or account gets one attempt at a time,
//! spaced by a doubling back-off; an attempt that may not go yet is refused
//! at once with how long to wait (HTTP 429 + `Retry-After`), never held
//! on the server.
//!
//! A good sign-in clears the failures of its account only (knowing the
//! password is proof enough there) and never those of its source: an
//! attacker with an account of their own cannot wash an address's count.
//! Both tables are bounded. A full source table forgets the sources whose
//! last failure is oldest (those that stopped guessing); accounts are a
//! table of their own, so filling the source table clears no account's
//! count. Names that are no account are kept apart in that table and the
//! only ones of it ever evicted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How one kind of counter (per source, per account) slows guessing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Failures (plus attempts in flight) let through before any wait.
    pub free: u32,
    /// The first wait past the free budget; it doubles per failure.
    pub first_wait: Duration,
    /// The longest wait.
    pub max_wait: Duration,
}

/// Per source: five tries, then 250 ms doubling up to 30 s.
pub const PER_SOURCE: Bound = Bound {
    free: 5,
    first_wait: Duration::from_millis(250),
    max_wait: Duration::from_secs(30),
};

/// Per account, whatever the source: ten tries, then 1 s doubling up to a
/// minute: at most about 1,500 guesses a day against one account from any
/// number of addresses, while its owner waits a minute at worst.
pub const PER_ACCOUNT: Bound = Bound {
    free: 10,
    first_wait: Duration::from_secs(1),
    max_wait: Duration::from_secs(60),
};

/// A counter with no failure for this long starts again from zero.
pub const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);

/// Sources remembered at most.
pub const MAX_SOURCES: usize = 65_536;
/// Names that are not accounts remembered at most (accounts are bounded by
/// the rules file and never evicted).
pub const MAX_UNKNOWN_NAMES: usize = 65_536;

impl Bound {
    /// The wait after `failures` failures (zero within the free budget).
    pub fn wait_after(&self, failures: u32) -> Duration {
        if failures < self.free {
            return Duration::ZERO;
        }
        let doublings = (failures - self.free).min(20);
        self.first_wait
            .saturating_mul(1 << doublings)
            .min(self.max_wait)
    }
}

/// A wait as a `Retry-After` value: whole seconds, rounded up, at least 1.
pub fn whole_seconds(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

/// Where a guess comes from, as the limiter counts it: an IPv6 address by
/// its /64, an IPv4-mapped one as the IPv4 address.
pub fn source_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut o = v6.octets();
                o[8..].fill(0);
                IpAddr::V6(o.into())
            }
        },
    }
}

#[derive(Debug, Clone, Copy)]
struct Tally {
    failures: u32,
    in_flight: u32,
    last_failure: Instant,
}

impl Tally {
    fn new(now: Instant) -> Tally {
        Tally {
            failures: 0,
            in_flight: 0,
            last_failure: now,
        }
    }

    fn forget_if_quiet(&mut self, now: Instant) {
        if self.in_flight == 0 && now.saturating_duration_since(self.last_failure) >= FORGET_AFTER {
            self.failures = 0;
        }
    }

    /// How long a new attempt must wait (`None`: it may go now).
    fn wait(&self, bound: &Bound, now: Instant) -> Option<Duration> {
        if self.failures.saturating_add(self.in_flight) < bound.free {
            return None;
        }
        if self.in_flight > 0 {
            // Past the free budget only one attempt is out at a time.
            return Some(bound.first_wait);
        }
        let until = self.last_failure + bound.wait_after(self.failures);
        (now < until).then(|| until - now)
    }

    fn idle(&self) -> bool {
        self.in_flight == 0 && self.failures == 0
    }
}

/// An attempt let through: hand it back to [`Limiter::finish`].
#[derive(Debug, PartialEq, Eq)]
pub struct Ticket {
    source: IpAddr,
    account: String,
    known: bool,
    /// Neither its source nor its account had a failure: it may take the
    /// fast lane.
    pub clean: bool,
}

/// How a let-through attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The password was right.
    Good,
    /// Wrong password, or no such user.
    Bad,
    /// Not decided (the client left, the queue was full, the rules file
    /// changed meanwhile): counts neither way.
    Void,
}

/// The two tables.
#[derive(Debug)]
pub struct Limiter {
    sources: HashMap<IpAddr, Tally>,
    /// Names the rules file has: bounded by it, never evicted.
    accounts: HashMap<String, Tally>,
    /// Names that are no account.
    strangers: HashMap<String, Tally>,
    max_sources: usize,
    max_unknown: usize,
}

impl Default for Limiter {
    fn default() -> Self {
        Limiter::with_caps(MAX_SOURCES, MAX_UNKNOWN_NAMES)
    }
}

impl Limiter {
    /// A limiter remembering at most `max_sources` sources and
    /// `max_unknown` names that are no account.
    pub fn with_caps(max_sources: usize, max_unknown: usize) -> Limiter {
        Limiter {
            sources: HashMap::new(),
            accounts: HashMap::new(),
            strangers: HashMap::new(),
            max_sources: max_sources.max(1),
            max_unknown: max_unknown.max(1),
        }
    }

    /// May a guess from `client` for `account` (`known`: the rules file
    /// has it) go now? A ticket if so, else how long to wait first.
    pub fn begin(
        &mut self,
        client: IpAddr,
        account: &str,
        known: bool,
        now: Instant,
    ) -> Result<Ticket, Duration> {
        let source = source_of(client);
        let by_source = self.sources.get_mut(&source).and_then(|t| {
            t.forget_if_quiet(now);
            t.wait(&PER_SOURCE, now)
        });
        let names = if known {
            &mut self.accounts
        } else {
            &mut self.strangers
        };
        let by_account = names.get_mut(account).and_then(|t| {
            t.forget_if_quiet(now);
            t.wait(&PER_ACCOUNT, now)
        });
        if let Some(wait) = by_source.max(by_account) {
            return Err(wait);
        }
        let clean = known
            && self.sources.get(&source).is_none_or(|t| t.failures == 0)
            && self.accounts.get(account).is_none_or(|t| t.failures == 0);
        if !self.sources.contains_key(&source) && self.sources.len() >= self.max_sources {
            evict(&mut self.sources, self.max_sources, now);
        }
        self.sources
            .entry(source)
            .or_insert_with(|| Tally::new(now))
            .in_flight += 1;
        if !known
            && !self.strangers.contains_key(account)
            && self.strangers.len() >= self.max_unknown
        {
            evict(&mut self.strangers, self.max_unknown, now);
        }
        let names = if known {
            &mut self.accounts
        } else {
            &mut self.strangers
        };
        names
            .entry(account.to_string())
            .or_insert_with(|| Tally::new(now))
            .in_flight += 1;
        Ok(Ticket {
            source,
            account: account.to_string(),
            known,
            clean,
        })
    }

    /// Count how `ticket`'s attempt ended.
    pub fn finish(&mut self, ticket: Ticket, outcome: Outcome, now: Instant) {
        let names = if ticket.known {
            &mut self.accounts
        } else {
            &mut self.strangers
        };
        for t in [
            self.sources.get_mut(&ticket.source),
            names.get_mut(&ticket.account),
        ]
        .into_iter()
        .flatten()
        {
            t.in_flight = t.in_flight.saturating_sub(1);
            if outcome == Outcome::Bad {
                t.failures = t.failures.saturating_add(1);
                t.last_failure = now;
            }
        }
        if outcome == Outcome::Good {
            if let Some(t) = names.get_mut(&ticket.account) {
                t.failures = 0;
            }
        }
        if names.get(&ticket.account).is_some_and(Tally::idle) {
            names.remove(&ticket.account);
        }
        if self.sources.get(&ticket.source).is_some_and(Tally::idle) {
            self.sources.remove(&ticket.source);
        }
    }

    /// Failures counted against `client`'s source (tests, logs).
    pub fn source_failures(&self, client: IpAddr) -> u32 {
        self.sources
            .get(&source_of(client))
            .map_or(0, |t| t.failures)
    }

    /// Failures counted against `name` (an account or not).
    pub fn account_failures(&self, name: &str) -> u32 {
        let t = self.accounts.get(name).or_else(|| self.strangers.get(name));
        t.map_or(0, |t| t.failures)
    }

    /// Sources, accounts and other names remembered.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.sources.len(),
            self.accounts.len(),
            self.strangers.len(),
        )
    }
}

/// Room in a full table: the quiet go first, then the eighth whose last
/// failure is oldest (one scan per eighth of the table: amortised O(1)).
/// Entries with attempts in flight stay.
fn evict<K: Clone + Eq + std::hash::Hash + Ord>(
    table: &mut HashMap<K, Tally>,
    max: usize,
    now: Instant,
) {
    table.retain(|_, t| {
        t.forget_if_quiet(now);
        !t.idle()
    });
    if table.len() < max {
        return;
    }
    let mut idle: Vec<(Instant, K)> = table
        .iter()
        .filter(|(_, t)| t.in_flight == 0)
        .map(|(k, t)| (t.last_failure, k.clone()))
        .collect();
    let n = (max / 8).max(1).min(idle.len());
    if n == 0 {
        return;
    }
    idle.select_nth_unstable(n - 1);
    for (_, k) in &idle[..n] {
        table.remove(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn waits_double_past_the_free_budget() {
        let b = PER_SOURCE;
        assert_eq!(b.wait_after(4), Duration::ZERO);
        assert_eq!(b.wait_after(5), Duration::from_millis(250));
        assert_eq!(b.wait_after(6), Duration::from_millis(500));
        assert_eq!(b.wait_after(9), Duration::from_secs(4));
        assert_eq!(b.wait_after(u32::MAX), Duration::from_secs(30));
        assert_eq!(PER_ACCOUNT.wait_after(1000), Duration::from_secs(60));
    }

    #[test]
    fn ipv6_counts_by_its_64() {
        assert_eq!(source_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(source_of(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(source_of(ip("192.0.2.7")), ip("192.0.2.7"));
        let mut l = Limiter::default();
        let now = Instant::now();
        for i in 0..PER_SOURCE.free {
            let t = l
                .begin(ip(&format!("2001:db8::{i:x}")), "alice", true, now)
                .unwrap();
            l.finish(t, Outcome::Bad, now);
        }
        assert!(l.begin(ip("2001:db8::ffff"), "bob", true, now).is_err());
        assert!(l.begin(ip("2001:db8:0:1::1"), "bob", true, now).is_ok());
    }

    #[test]
    fn a_parallel_burst_gets_no_further_than_a_sequence() {
        let mut l = Limiter::default();
        let now = Instant::now();
        let a = ip("192.0.2.1");
        let tickets: Vec<_> = (0..300)
            .filter_map(|_| l.begin(a, "alice", true, now).ok())
            .collect();
        assert_eq!(tickets.len(), PER_SOURCE.free as usize);
        for t in tickets {
            l.finish(t, Outcome::Bad, now);
        }
        // Refused with how long to wait, and let through after it.
        let wait = l.begin(a, "alice", true, now).unwrap_err();
        assert_eq!(wait, Duration::from_millis(250));
        let t = l.begin(a, "alice", true, now + wait).unwrap();
        assert!(!t.clean);
        // One at a time past the budget.
        assert!(l.begin(a, "alice", true, now + wait).is_err());
        l.finish(t, Outcome::Bad, now + wait);
        assert_eq!(
            l.begin(a, "alice", true, now + wait).unwrap_err(),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn rotating_sources_do_not_escape_the_account_bound() {
        let mut l = Limiter::default();
        let now = Instant::now();
        let mut through = 0;
        for i in 0..10_000u32 {
            let from = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000u32 + i));
            if let Ok(t) = l.begin(from, "alice", true, now) {
                through += 1;
                l.finish(t, Outcome::Bad, now);
            }
        }
        assert_eq!(through, PER_ACCOUNT.free);
        // Another account, from a clean address, is untouched and fast.
        let t = l.begin(ip("198.51.100.9"), "bob", true, now).unwrap();
        assert!(t.clean);
    }

    #[test]
    fn a_good_sign_in_clears_its_account_but_not_its_source() {
        let mut l = Limiter::default();
        let now = Instant::now();
        let a = ip("192.0.2.1");
        for _ in 0..4 {
            let t = l.begin(a, "alice", true, now).unwrap();
            l.finish(t, Outcome::Bad, now);
        }
        let t = l.begin(a, "mallory", true, now).unwrap();
        l.finish(t, Outcome::Good, now);
        assert_eq!(l.source_failures(a), 4);
        assert_eq!(l.account_failures("alice"), 4);
        let t = l.begin(a, "alice", true, now).unwrap();
        l.finish(t, Outcome::Good, now);
        assert_eq!(l.account_failures("alice"), 0);
        assert_eq!(l.source_failures(a), 4);
        // Quiet for long enough, all is forgotten.
        let later = now + FORGET_AFTER;
        assert!(l.begin(a, "alice", true, later).unwrap().clean);
    }

    #[test]
    fn filling_the_tables_clears_no_account_and_only_old_sources() {
        let mut l = Limiter::with_caps(64, 64);
        let t0 = Instant::now();
        let victim = ip("192.0.2.1");
        for i in 0..PER_ACCOUNT.free {
            let from = ip(&format!("203.0.113.{i}"));
            let t = l.begin(from, "alice", true, t0).unwrap();
            l.finish(t, Outcome::Bad, t0);
        }
        let t = l.begin(victim, "nobody", false, t0).unwrap();
        l.finish(t, Outcome::Bad, t0);
        // Thousands of fresh sources and names, each failing once, later.
        for i in 0..5_000u32 {
            let now = t0 + Duration::from_micros(u64::from(i) + 1);
            let from = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000u32 + i));
            if let Ok(t) = l.begin(from, &format!("n{i}"), false, now) {
                l.finish(t, Outcome::Bad, now);
            }
        }
        let (sources, _, strangers) = l.sizes();
        assert!(sources <= 64 && strangers <= 64, "{:?}", l.sizes());
        // alice's lockout holds, whoever asks.
        assert_eq!(l.account_failures("alice"), PER_ACCOUNT.free);
        let now = t0 + Duration::from_micros(5_001);
        assert!(l.begin(ip("198.51.100.1"), "alice", true, now).is_err());
        // The oldest source went, the newest stayed.
        assert_eq!(l.source_failures(victim), 0);
        assert_eq!(l.source_failures(ip("10.0.19.135")), 1);
    }

    #[derive(Debug, Clone)]
    enum Step {
        Begin { from: u8, account: u8 },
        Finish { which: usize, outcome: u8 },
        Tick { ms: u16 },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..6u8, 0..4u8).prop_map(|(from, account)| Step::Begin { from, account }),
            (any::<usize>(), 0..3u8).prop_map(|(which, outcome)| Step::Finish { which, outcome }),
            (0..5000u16).prop_map(|ms| Step::Tick { ms }),
        ]
    }

    proptest! {
        /// Whatever the order of attempts, endings and time: no source and
        /// no account ever has more attempts out than its free budget, and
        /// failures past it are spaced by at least the back-off.
        #[test]
        fn bounds_hold(steps in prop::collection::vec(step(), 0..200)) {
            let mut l = Limiter::with_caps(4, 4);
            let mut now = Instant::now();
            let mut out: Vec<Ticket> = Vec::new();
            for s in steps {
                match s {
                    Step::Begin { from, account } => {
                        let from = IpAddr::from([10, 0, 0, from]);
                        let name = format!("u{account}");
                        if let Ok(t) = l.begin(from, &name, account < 2, now) {
                            out.push(t);
                        }
                    }
                    Step::Finish { which, outcome } if !out.is_empty() => {
                        let t = out.swap_remove(which % out.len());
                        let o = [Outcome::Good, Outcome::Bad, Outcome::Void][outcome as usize];
                        l.finish(t, o, now);
                    }
                    Step::Finish { .. } => {}
                    Step::Tick { ms } => now += Duration::from_millis(ms.into()),
                }
                for from in 0..6u8 {
                    let n = out.iter().filter(|t| t.source == IpAddr::from([10, 0, 0, from])).count();
                    prop_assert!(n <= PER_SOURCE.free as usize);
                }
                for a in 0..4u8 {
                    let n = out.iter().filter(|t| t.account == format!("u{a}")).count();
                    prop_assert!(n <= PER_ACCOUNT.free as usize);
                }
            }
        }
    }
}
