//! The table of active locks (RFC 4918 §6–7), sans-IO: conflicts, cover,
//! refresh, timeouts.
//!
//! In memory: on a folder, per server process (a lock lives until UNLOCK,
//! its timeout, or a restart); on a store that shares lock records (S3),
//! this node's copy of the bucket's record (`shared`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The longest lock granted; `Infinite` asks get this too (a forgotten
/// lock must end some day).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// The timeout of a LOCK that names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);
/// The most locks held at once (each is a few hundred bytes).
pub const MAX_LOCKS: usize = 100_000;
/// The most locks one principal holds at once (every anonymous client
/// counts as one): no one fills the table for everyone else.
pub const MAX_LOCKS_EACH: usize = 1_000;

/// One active lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// `urn:uuid:…`.
    pub token: String,
    /// The locked resource's segments.
    pub root: Vec<String>,
    /// Its URL (`DAV:lockroot`).
    pub root_url: String,
    /// `Depth: infinity` (else 0).
    pub infinite: bool,
    pub exclusive: bool,
    /// The client's `DAV:owner` content (standalone XML).
    pub owner: Option<String>,
    /// Who took it ([`super::creator`]): only they may submit its token,
    /// refresh or remove it, and see the token in `lockdiscovery`. `None`:
    /// taken without credentials, so the token alone is the proof.
    pub creator: Option<String>,
    pub timeout: Duration,
    pub expires: SystemTime,
    /// The LOCK made its resource (an empty file at an unmapped name): its
    /// creator may fill that file even without the right to replace.
    pub created: bool,
}

impl Lock {
    /// Whether this lock covers `path`: its root, or below it with depth infinity.
    pub fn covers(&self, path: &[String]) -> bool {
        path.starts_with(&self.root) && (path.len() == self.root.len() || self.infinite)
    }
}

/// Why a LOCK was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockRefused {
    /// An exclusive lock, or a shared one against an exclusive (423).
    Conflict,
    /// [`MAX_LOCKS`] are held (503).
    Full,
    /// The asker already holds [`MAX_LOCKS_EACH`] (503).
    TooManyOfYours,
}

/// The active locks.
#[derive(Debug, Default)]
pub struct LockTable {
    locks: Mutex<Held>,
    /// Locks held, as of the last change (expired ones count until the
    /// next look): read without the mutex, so a write on a server without
    /// locks costs one atomic load.
    held: AtomicUsize,
    /// What this node knows of the records a shared store keeps.
    pub(super) shared: super::record_copy::SharedState,
}

/// The locks, indexed so that every question is answered without a scan
/// of the whole table: by token, by root (a sorted map, so a folder's
/// subtree is one range), and counted per creator (each principal's
/// share of [`MAX_LOCKS`]). Expired locks are dropped in one pass when the
/// earliest expiry has passed, not on every look.
#[derive(Debug, Default)]
struct Held {
    by_token: HashMap<String, Lock>,
    by_root: BTreeMap<Vec<String>, Vec<String>>,
    per_creator: HashMap<Option<String>, usize>,
    /// No lock expires before this (`None`: no lock).
    next_expiry: Option<SystemTime>,
}

impl Held {
    fn insert(&mut self, l: Lock) {
        self.next_expiry = Some(self.next_expiry.map_or(l.expires, |e| e.min(l.expires)));
        self.by_root
            .entry(l.root.clone())
            .or_default()
            .push(l.token.clone());
        *self.per_creator.entry(l.creator.clone()).or_default() += 1;
        if let Some(old) = self.by_token.insert(l.token.clone(), l) {
            self.unindex(&old);
        }
    }

    fn remove(&mut self, token: &str) -> Option<Lock> {
        let l = self.by_token.remove(token)?;
        self.unindex(&l);
        Some(l)
    }

    fn unindex(&mut self, l: &Lock) {
        if let Some(tokens) = self.by_root.get_mut(&l.root) {
            tokens.retain(|t| *t != l.token);
            if tokens.is_empty() {
                self.by_root.remove(&l.root);
            }
        }
        if let Some(n) = self.per_creator.get_mut(&l.creator) {
            *n -= 1;
            if *n == 0 {
                self.per_creator.remove(&l.creator);
            }
        }
    }

    /// Drop the expired locks, when some may have expired.
    fn expire(&mut self, now: SystemTime) {
        if self.next_expiry.is_none_or(|e| e > now) {
            return;
        }
        let gone: Vec<String> = self
            .by_token
            .values()
            .filter(|l| l.expires <= now)
            .map(|l| l.token.clone())
            .collect();
        for t in gone {
            self.remove(&t);
        }
        self.next_expiry = self.by_token.values().map(|l| l.expires).min();
    }

    fn rooted_at(&self, root: &[String]) -> impl Iterator<Item = &Lock> {
        self.by_root
            .get(root)
            .into_iter()
            .flatten()
            .filter_map(|t| self.by_token.get(t))
    }

    /// Locks covering `path`: rooted at it, or at an ancestor with depth
    /// infinity (one look-up per segment).
    fn covering(&self, path: &[String]) -> Vec<&Lock> {
        (0..=path.len())
            .flat_map(|n| self.rooted_at(&path[..n]))
            .filter(|l| l.covers(path))
            .collect()
    }

    /// Locks rooted strictly below `path` (one range of the sorted roots).
    fn below(&self, path: &[String]) -> Vec<&Lock> {
        self.by_root
            .range(path.to_vec()..)
            .skip_while(|(root, _)| root.len() == path.len())
            .take_while(|(root, _)| root.starts_with(path))
            .flat_map(|(_, tokens)| tokens.iter().filter_map(|t| self.by_token.get(t)))
            .collect()
    }
}

/// The table, locked, with its expired locks gone; the count follows it.
struct Guard<'a> {
    t: std::sync::MutexGuard<'a, Held>,
    held: &'a AtomicUsize,
}

impl std::ops::Deref for Guard<'_> {
    type Target = Held;
    fn deref(&self) -> &Self::Target {
        &self.t
    }
}

impl std::ops::DerefMut for Guard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.t
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.held.store(self.t.by_token.len(), Ordering::Relaxed);
    }
}

impl LockTable {
    fn table(&self) -> Guard<'_> {
        let mut t = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        t.expire(SystemTime::now());
        Guard {
            t,
            held: &self.held,
        }
    }

    /// Whether no lock is held (the early-out of every write's check).
    pub fn is_empty(&self) -> bool {
        self.held.load(Ordering::Relaxed) == 0
    }

    /// Every lock held, in token order.
    pub fn all(&self) -> Vec<Lock> {
        let mut v: Vec<Lock> = self.table().by_token.values().cloned().collect();
        v.sort_by(|a, b| a.token.cmp(&b.token));
        v
    }

    /// Hold exactly `locks` (the shared store's records, just read).
    pub fn replace_all(&self, locks: Vec<Lock>) {
        let mut t = self.table();
        *t = Held::default();
        let now = SystemTime::now();
        for l in locks.into_iter().filter(|l| l.expires > now) {
            t.insert(l);
        }
    }

    /// The lock `token`, if held.
    pub fn get(&self, token: &str) -> Option<Lock> {
        self.table().by_token.get(token).cloned()
    }

    /// Locks covering `path`.
    pub fn covering(&self, path: &[String]) -> Vec<Lock> {
        self.table().covering(path).into_iter().cloned().collect()
    }

    /// Locks rooted strictly below `path`.
    pub fn below(&self, path: &[String]) -> Vec<Lock> {
        self.table().below(path).into_iter().cloned().collect()
    }

    /// Take a new lock, unless it conflicts with one held, or its creator
    /// already holds [`MAX_LOCKS_EACH`], or the table is full.
    pub fn lock(&self, new: Lock) -> Result<Lock, LockRefused> {
        let mut t = self.table();
        let mut near = t.covering(&new.root);
        if new.infinite {
            near.extend(t.below(&new.root));
        }
        let clash = near.iter().any(|l| {
            let overlap = l.covers(&new.root)
                || (new.infinite && l.root.starts_with(&new.root))
                || new.covers(&l.root);
            overlap && (l.exclusive || new.exclusive)
        });
        if clash {
            return Err(LockRefused::Conflict);
        }
        if t.per_creator.get(&new.creator).copied().unwrap_or(0) >= MAX_LOCKS_EACH {
            return Err(LockRefused::TooManyOfYours);
        }
        if t.by_token.len() >= MAX_LOCKS {
            return Err(LockRefused::Full);
        }
        t.insert(new.clone());
        Ok(new)
    }

    /// Extend the lock `token` if it covers `path`.
    pub fn refresh(&self, token: &str, path: &[String], timeout: Duration) -> Option<Lock> {
        let mut t = self.table();
        let l = t.by_token.get_mut(token).filter(|l| l.covers(path))?;
        l.timeout = timeout;
        // Later than before: the table's earliest expiry stays a lower bound.
        l.expires = SystemTime::now() + timeout;
        Some(l.clone())
    }

    /// Remove the lock `token` if it covers `path`.
    pub fn unlock(&self, token: &str, path: &[String]) -> bool {
        let mut t = self.table();
        if t.by_token.get(token).is_some_and(|l| l.covers(path)) {
            t.remove(token);
            true
        } else {
            false
        }
    }

    /// The resource at `path` is gone (DELETE, the source of a MOVE): its
    /// locks and those below go too.
    pub fn forget(&self, path: &[String]) {
        let mut t = self.table();
        let gone: Vec<String> = t
            .rooted_at(path)
            .chain(t.below(path))
            .map(|l| l.token.clone())
            .collect();
        for token in gone {
            t.remove(&token);
        }
    }
}

/// A fresh lock token.
pub fn new_token() -> String {
    let mut b = [0u8; 16];
    // A failing OS random source leaves zeros plus the time: still unique
    // within the process, which is what the table needs.
    if getrandom::getrandom(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b = t.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The `Timeout` header's first usable value (RFC 4918 §10.7), capped.
pub fn parse_timeout(value: Option<&str>) -> Duration {
    let Some(value) = value else {
        return DEFAULT_TIMEOUT;
    };
    for part in value.split(',').map(str::trim) {
        if part.eq_ignore_ascii_case("infinite") {
            return MAX_TIMEOUT;
        }
        if let Some(n) = part
            .get(..7)
            .filter(|p| p.eq_ignore_ascii_case("second-"))
            .and_then(|_| part[7..].parse::<u64>().ok())
        {
            return Duration::from_secs(n.max(1)).min(MAX_TIMEOUT);
        }
    }
    DEFAULT_TIMEOUT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(root: &[&str], infinite: bool, exclusive: bool) -> Lock {
        Lock {
            token: new_token(),
            root: root.iter().map(|s| s.to_string()).collect(),
            root_url: String::new(),
            infinite,
            exclusive,
            owner: None,
            creator: None,
            timeout: DEFAULT_TIMEOUT,
            expires: SystemTime::now() + DEFAULT_TIMEOUT,
            created: false,
        }
    }

    fn p(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn conflicts_and_cover() {
        let t = LockTable::default();
        assert!(t.is_empty());
        let a = t.lock(lock(&["a"], true, true)).unwrap();
        assert!(!t.is_empty());
        assert_eq!(t.get(&a.token), Some(a.clone()));
        assert_eq!(
            t.lock(lock(&["a", "b"], false, false)),
            Err(LockRefused::Conflict)
        );
        assert_eq!(t.lock(lock(&[], true, false)), Err(LockRefused::Conflict));
        assert!(t.lock(lock(&["b"], false, true)).is_ok());
        assert_eq!(t.covering(&p(&["a", "x", "y"])).len(), 1);
        assert_eq!(t.below(&p(&[])).len(), 2);
        assert!(!t.unlock(&a.token, &p(&["b"])));
        assert!(t.refresh(&a.token, &p(&["a", "z"]), MAX_TIMEOUT).is_some());
        assert!(t.unlock(&a.token, &p(&["a", "z"])));
        let s1 = t.lock(lock(&["c"], false, false)).unwrap();
        assert!(t.lock(lock(&["c"], false, false)).is_ok());
        assert_eq!(
            t.lock(lock(&["c"], false, true)),
            Err(LockRefused::Conflict)
        );
        assert!(t.covering(&p(&["c", "d"])).is_empty());
        t.forget(&p(&["c"]));
        assert!(!t.unlock(&s1.token, &p(&["c"])));
        t.forget(&p(&[]));
        assert!(t.is_empty());
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout(None), DEFAULT_TIMEOUT);
        assert_eq!(parse_timeout(Some("Second-10")), Duration::from_secs(10));
        assert_eq!(
            parse_timeout(Some("Infinite, Second-4100000000")),
            MAX_TIMEOUT
        );
        assert_eq!(parse_timeout(Some("Second-99999999999")), MAX_TIMEOUT);
        assert_eq!(parse_timeout(Some("junk")), DEFAULT_TIMEOUT);
        assert!(new_token().starts_with("urn:uuid:"));
        assert_eq!(new_token().len(), 9 + 36);
    }

    use proptest::prelude::*;

    fn root() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec(prop::sample::select(vec!["a", "b"]), 0..4)
            .prop_map(|v| v.into_iter().map(str::to_owned).collect())
    }

    proptest! {
        /// The indexed table answers as a scan of every lock would: what
        /// covers a path, what lies below it, and which new lock clashes.
        #[test]
        fn the_index_answers_as_a_scan(
            taken in prop::collection::vec((root(), any::<bool>(), any::<bool>(), 0u8..3), 0..24),
            probe in root(),
        ) {
            let t = LockTable::default();
            let mut held: Vec<Lock> = Vec::new();
            for (root, infinite, exclusive, who) in taken {
                let mut l = lock(&[], infinite, exclusive);
                l.root = root;
                l.creator = Some(format!("user:{who}"));
                let scan_clash = held.iter().any(|h| {
                    (h.covers(&l.root) || (l.infinite && h.root.starts_with(&l.root)) || l.covers(&h.root))
                        && (h.exclusive || l.exclusive)
                });
                match t.lock(l.clone()) {
                    Ok(_) => { prop_assert!(!scan_clash); held.push(l); }
                    Err(LockRefused::Conflict) => prop_assert!(scan_clash),
                    Err(e) => prop_assert!(false, "{e:?}"),
                }
            }
            let tokens = |v: Vec<Lock>| {
                let mut v: Vec<String> = v.into_iter().map(|l| l.token).collect();
                v.sort();
                v
            };
            let scan_cover: Vec<Lock> = held.iter().filter(|l| l.covers(&probe)).cloned().collect();
            prop_assert_eq!(tokens(t.covering(&probe)), tokens(scan_cover));
            let scan_below: Vec<Lock> = held
                .iter()
                .filter(|l| l.root.len() > probe.len() && l.root.starts_with(&probe))
                .cloned()
                .collect();
            prop_assert_eq!(tokens(t.below(&probe)), tokens(scan_below));
            t.forget(&probe);
            let kept: Vec<Lock> = held.into_iter().filter(|l| !l.root.starts_with(&probe)).collect();
            prop_assert_eq!(tokens(t.all()), tokens(kept));
        }
    }

    #[test]
    fn one_principal_fills_only_its_share() {
        let t = LockTable::default();
        for i in 0..MAX_LOCKS_EACH {
            let mut l = lock(&["f", &i.to_string()], false, true);
            l.creator = Some("user:mallory".into());
            t.lock(l).unwrap();
        }
        let mut l = lock(&["f", "one-more"], false, true);
        l.creator = Some("user:mallory".into());
        assert_eq!(t.lock(l), Err(LockRefused::TooManyOfYours));
        let mut l = lock(&["f", "alice's"], false, true);
        l.creator = Some("user:alice".into());
        t.lock(l.clone()).unwrap();
        // Unlocking gives the share back.
        let first = t.covering(&p(&["f", "0"])).pop().unwrap();
        assert!(t.unlock(&first.token, &first.root));
        let mut l = lock(&["f", "again"], false, true);
        l.creator = Some("user:mallory".into());
        t.lock(l).unwrap();
    }

    #[test]
    fn expired_locks_leave_the_index() {
        let t = LockTable::default();
        let mut l = lock(&["x"], true, true);
        l.expires = SystemTime::now() - Duration::from_secs(1);
        t.lock(l).unwrap();
        assert!(t.covering(&p(&["x", "y"])).is_empty());
        assert!(t.all().is_empty());
        t.lock(lock(&["x"], true, true)).unwrap();
    }
}
