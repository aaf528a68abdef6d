//! Fair bandwidth: the buckets of the rules file's `[rate]`, one per
//! principal and direction, shared by all of that principal's connections,
//! plus the server's total; each admitted request's bodies are paced
//! through them ([`pace`]). The rule itself is `wirespeed_io::Bucket`
//! (sans-IO); the rates and who counts against which are the policy's
//! (`policy::rates`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, Weak};

use crate::policy::rate_keys::{rate_of, RateKey};
use crate::policy::rates::Rates;
use crate::policy::rules::Rules;
use crate::policy::{Policy, Principal};
use wirespeed_net::{Exchange, Pace, SharedBucket};

/// A rate no transfer reaches: a bucket whose rate a reload removed.
const UNPACED: u64 = u64::MAX;

/// Each direction's bucket.
type Pair = [Arc<SharedBucket>; 2];
const DOWN: usize = 0;
const UP: usize = 1;

/// The live buckets, shared by every clone of the service's config.
#[derive(Clone, Default)]
pub struct Bandwidth(Arc<Mutex<State>>);

impl std::fmt::Debug for Bandwidth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bandwidth")
    }
}

#[derive(Default)]
struct State {
    /// The rules file the buckets' rates come from (a reload replaces it).
    seen: Option<Arc<Rules>>,
    total: Option<Pair>,
    /// A principal's buckets live while a transfer holds them; dead entries
    /// are swept once the table doubles, so it stays bounded by the
    /// transfers running.
    by_key: HashMap<RateKey, [Weak<SharedBucket>; 2]>,
    sweep_at: usize,
}

fn pair(rate: u64) -> Pair {
    [SharedBucket::new(rate), SharedBucket::new(rate)]
}

impl State {
    /// Follow a reloaded rules file: live buckets take their new rates.
    fn follow(&mut self, rules: &Arc<Rules>) {
        if self.seen.as_ref().is_some_and(|s| Arc::ptr_eq(s, rules)) {
            return;
        }
        let rates: &Rates = rules.rates();
        let total = rates.total;
        self.total = match (self.total.take(), total) {
            (Some(p), Some(r)) => {
                p.iter().for_each(|b| b.set_rate(r));
                Some(p)
            }
            (Some(p), None) => {
                p.iter().for_each(|b| b.set_rate(UNPACED));
                None
            }
            (None, r) => r.map(pair),
        };
        for (key, buckets) in &self.by_key {
            let rate = rate_of(rules, *key).unwrap_or(UNPACED);
            for b in buckets.iter().filter_map(Weak::upgrade) {
                b.set_rate(rate);
            }
        }
        self.seen = Some(rules.clone());
    }

    fn principal(&mut self, key: RateKey, rate: u64) -> Pair {
        if let Some(live) = self.by_key.get(&key) {
            if let (Some(d), Some(u)) = (live[DOWN].upgrade(), live[UP].upgrade()) {
                return [d, u];
            }
        }
        let p = pair(rate);
        self.by_key
            .insert(key, [Arc::downgrade(&p[DOWN]), Arc::downgrade(&p[UP])]);
        if self.by_key.len() > self.sweep_at {
            self.by_key.retain(|_, b| b[DOWN].strong_count() > 0);
            self.sweep_at = (self.by_key.len() * 2).max(64);
        }
        p
    }

    /// The paces for `key`'s transfers: its own bucket and the total.
    fn paces(&mut self, rules: &Rules, key: Option<RateKey>) -> (Option<Pace>, Option<Pace>) {
        let own = key.and_then(|k| rate_of(rules, k).map(|r| self.principal(k, r)));
        let pick = |d: usize| {
            let buckets = own.iter().chain(self.total.iter()).map(|p| p[d].clone());
            Pace::new(buckets.collect())
        };
        (pick(DOWN), pick(UP))
    }
}

impl Bandwidth {
    /// The paces for `who`'s request from `addr`: `None` when no rate
    /// applies (no rules file, no `[rate]`, or none for this principal and
    /// no total). Costs nothing without `[rate]`.
    pub fn paces(
        &self,
        policy: &Policy,
        who: Principal,
        addr: IpAddr,
    ) -> (Option<Pace>, Option<Pace>) {
        let Some(rules) = policy.rates() else {
            // A reload that removed `[rate]` lets running transfers go.
            self.forget();
            return (None, None);
        };
        let key = policy.rate_key(who, addr);
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        state.follow(&rules);
        state.paces(&rules, key)
    }

    fn forget(&self) {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if state.seen.is_some() {
            let empty = Arc::new(Rules::default());
            state.follow(&empty);
            state.by_key.clear();
            state.seen = None;
        }
    }
}

/// Pace `ex`'s bodies for `who`, as the rules file's `[rate]` says.
pub(crate) fn pace(bandwidth: &Bandwidth, policy: &Policy, ex: &mut Exchange, who: Principal) {
    let (down, up) = bandwidth.paces(policy, who, ex.client_ip());
    if down.is_some() || up.is_some() {
        ex.set_pacing(down, up);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Policy {
        let users = crate::policy::Users::from_text("rules.toml", text).unwrap();
        Policy::from_presets(&Default::default(), Default::default()).with_users(Arc::new(users))
    }

    const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$GpZ3sK/oH9p7VIiV56G/64Zo/8GDdQbVdtVbHL5i4nE";

    fn rate(p: &Option<Pace>) -> Option<usize> {
        p.as_ref().map(Pace::chunk)
    }

    #[test]
    fn no_rate_section_no_pace() {
        let b = Bandwidth::default();
        let p = policy(&format!("[users]\nalice = \"{HASH}\"\n"));
        let alice = Principal::User(p.users().unwrap().rules().user("alice").unwrap().0);
        let (d, u) = b.paces(&p, alice, "127.0.0.1".parse().unwrap());
        assert!(d.is_none() && u.is_none());
    }

    #[tokio::test]
    async fn connections_of_one_principal_share_its_bucket() {
        let b = Bandwidth::default();
        let p = policy(&format!(
            "[users]\nalice = \"{HASH}\"\nbob = \"{HASH}\"\n[rate.user]\nalice = \"1M\"\n\"*\" = \"64K\"\n"
        ));
        let rules = p.users().unwrap().rules();
        let alice = Principal::User(rules.user("alice").unwrap().0);
        let bob = Principal::User(rules.user("bob").unwrap().0);
        let here = "10.0.0.1".parse().unwrap();
        let there = "10.0.0.2".parse().unwrap();
        let (a1, _) = b.paces(&p, alice, here);
        let (a2, _) = b.paces(&p, alice, there);
        assert_eq!(rate(&a1), Some(32 * 1024));
        // One bucket: a reservation on one connection delays the other.
        let a1 = a1.unwrap();
        let a2 = a2.unwrap();
        futures_util::FutureExt::now_or_never(a1.reserve(100_000)).expect("within the burst");
        let wait = futures_util::FutureExt::now_or_never(a2.reserve(1 << 20));
        assert!(
            wait.is_none(),
            "a second connection waits for the first's bytes"
        );
        // Bob is not paced; anonymous addresses each get their own.
        assert!(b.paces(&p, bob, here).0.is_none());
        let (x, _) = b.paces(&p, Principal::Anyone, here);
        let (y, _) = b.paces(&p, Principal::Anyone, there);
        let x = x.unwrap();
        futures_util::FutureExt::now_or_never(x.reserve(1 << 20));
        assert!(
            futures_util::FutureExt::now_or_never(y.unwrap().reserve(16 * 1024)).is_some(),
            "another address has its own bucket"
        );
    }

    #[tokio::test]
    async fn a_total_paces_everyone_and_a_reload_changes_it() {
        let b = Bandwidth::default();
        let text = format!("[users]\nalice = \"{HASH}\"\n[rate]\ntotal = \"200M\"\n");
        let p = policy(&text);
        let (d, u) = b.paces(&p, Principal::TokenHolder, "10.0.0.1".parse().unwrap());
        assert_eq!(rate(&d), Some(256 * 1024));
        assert_eq!(rate(&u), Some(256 * 1024));
        // Without [rate] after a reload, running transfers are let go.
        let q = policy(&format!("[users]\nalice = \"{HASH}\"\n"));
        assert!(b
            .paces(&q, Principal::TokenHolder, "10.0.0.1".parse().unwrap())
            .0
            .is_none());
        let d = d.unwrap();
        for _ in 0..100 {
            assert!(futures_util::FutureExt::now_or_never(d.reserve(100 << 20)).is_some());
        }
    }
}
