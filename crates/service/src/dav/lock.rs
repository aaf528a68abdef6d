//! WebDAV write locks (RFC 4918 §6–7): the server's table of active locks.
//!
//! In memory, per server process: a lock lives until UNLOCK, its timeout, or
//! a restart (clients refresh or take a new one). An S3 deployment of several
//! nodes would need the table in the bucket; this round it is per process.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::xml::escape_into;

/// The longest lock granted; `Infinite` asks get this too (a forgotten
/// lock must end some day).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// The timeout of a LOCK that names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);
/// The most locks held at once (each is a few hundred bytes).
pub const MAX_LOCKS: usize = 100_000;

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
    pub timeout: Duration,
    pub expires: Instant,
}

impl Lock {
    /// Whether this lock covers `path`: its root, or below it with depth infinity.
    pub fn covers(&self, path: &[String]) -> bool {
        path.starts_with(&self.root) && (path.len() == self.root.len() || self.infinite)
    }

    /// `DAV:activelock` text.
    pub fn write_active(&self, now: Instant, out: &mut String) {
        out.push_str("<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope>");
        out.push_str(if self.exclusive {
            "<D:exclusive/>"
        } else {
            "<D:shared/>"
        });
        out.push_str("</D:lockscope><D:depth>");
        out.push_str(if self.infinite { "infinity" } else { "0" });
        out.push_str("</D:depth>");
        if let Some(owner) = &self.owner {
            out.push_str("<D:owner>");
            out.push_str(owner);
            out.push_str("</D:owner>");
        }
        let left = self.expires.saturating_duration_since(now).as_secs();
        out.push_str(&format!("<D:timeout>Second-{left}</D:timeout>"));
        out.push_str("<D:locktoken><D:href>");
        escape_into(&self.token, out);
        out.push_str("</D:href></D:locktoken><D:lockroot><D:href>");
        escape_into(&self.root_url, out);
        out.push_str("</D:href></D:lockroot></D:activelock>");
    }
}

/// Why a LOCK was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockRefused {
    /// An exclusive lock, or a shared one against an exclusive (423).
    Conflict,
    /// [`MAX_LOCKS`] are held (503).
    Full,
}

/// The active locks.
#[derive(Debug, Default)]
pub struct LockTable {
    locks: Mutex<HashMap<String, Lock>>,
}

impl LockTable {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Lock>> {
        let mut t = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        t.retain(|_, l| l.expires > now);
        t
    }

    /// Locks covering `path`.
    pub fn covering(&self, path: &[String]) -> Vec<Lock> {
        self.table()
            .values()
            .filter(|l| l.covers(path))
            .cloned()
            .collect()
    }

    /// Locks rooted strictly below `path`.
    pub fn below(&self, path: &[String]) -> Vec<Lock> {
        self.table()
            .values()
            .filter(|l| l.root.len() > path.len() && l.root.starts_with(path))
            .cloned()
            .collect()
    }

    /// Take a new lock, unless it conflicts with one held.
    pub fn lock(&self, new: Lock) -> Result<Lock, LockRefused> {
        let mut t = self.table();
        let clash = t.values().any(|l| {
            let overlap = l.covers(&new.root)
                || (new.infinite && l.root.starts_with(&new.root))
                || new.covers(&l.root);
            overlap && (l.exclusive || new.exclusive)
        });
        if clash {
            return Err(LockRefused::Conflict);
        }
        if t.len() >= MAX_LOCKS {
            return Err(LockRefused::Full);
        }
        t.insert(new.token.clone(), new.clone());
        Ok(new)
    }

    /// Extend the lock `token` if it covers `path`.
    pub fn refresh(&self, token: &str, path: &[String], timeout: Duration) -> Option<Lock> {
        let mut t = self.table();
        let l = t.get_mut(token).filter(|l| l.covers(path))?;
        l.timeout = timeout;
        l.expires = Instant::now() + timeout;
        Some(l.clone())
    }

    /// Remove the lock `token` if it covers `path`.
    pub fn unlock(&self, token: &str, path: &[String]) -> bool {
        let mut t = self.table();
        if t.get(token).is_some_and(|l| l.covers(path)) {
            t.remove(token);
            true
        } else {
            false
        }
    }

    /// The resource at `path` is gone (DELETE, the source of a MOVE): its
    /// locks and those below go too.
    pub fn forget(&self, path: &[String]) {
        self.table().retain(|_, l| !l.root.starts_with(path));
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
            timeout: DEFAULT_TIMEOUT,
            expires: Instant::now() + DEFAULT_TIMEOUT,
        }
    }

    fn p(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn conflicts_and_cover() {
        let t = LockTable::default();
        let a = t.lock(lock(&["a"], true, true)).unwrap();
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
}
