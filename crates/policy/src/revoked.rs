//! Sign-outs and link revocations as other nodes learn them: each is one
//! empty marker named `KIND-ID-EXPIRES` in the shared state folder of a
//! bucket (`revocations.rs` at the crate top writes and reads them). This module is the
//! sans-IO part: the names, and the outbox a revocation waits in until it
//! is written.

use std::sync::Mutex;

/// What was revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A browser session (a sign-out).
    Session,
    /// A share link.
    Link,
}

/// One revocation: its kind, id, and when the thing would have expired
/// anyway (after that, the marker can go); for a session, whose it was
/// (a digest of the user's name; 0: not said), so that a node whose table
/// is full can fold it into that user's floor and never drop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Revocation {
    pub kind: Kind,
    pub id: u64,
    pub expires: u64,
    pub owner: u64,
}

impl Revocation {
    /// The marker's name: `s-` or `l-`, the id in 16 hex digits, `-`, the
    /// expiry in Unix seconds, then (when known) `-` and the owner in 16
    /// hex digits.
    pub fn name(&self) -> String {
        let k = match self.kind {
            Kind::Session => 's',
            Kind::Link => 'l',
        };
        if self.owner == 0 {
            format!("{k}-{:016x}-{}", self.id, self.expires)
        } else {
            format!("{k}-{:016x}-{}-{:016x}", self.id, self.expires, self.owner)
        }
    }

    /// The revocation a marker's name stands for (`None`: not one).
    pub fn parse(name: &str) -> Option<Revocation> {
        let mut parts = name.split('-');
        let kind = match parts.next()? {
            "s" => Kind::Session,
            "l" => Kind::Link,
            _ => return None,
        };
        let id = parts.next().filter(|h| h.len() == 16)?;
        let id = u64::from_str_radix(id, 16).ok()?;
        let expires = parts.next()?.parse().ok()?;
        let owner = match parts.next() {
            None => 0,
            Some(h) if h.len() == 16 => u64::from_str_radix(h, 16).ok()?,
            Some(_) => return None,
        };
        if parts.next().is_some() {
            return None;
        }
        Some(Revocation {
            kind,
            id,
            expires,
            owner,
        })
    }
}

/// Revocations waiting to be written, and the bell that says there are.
#[derive(Debug, Default)]
pub struct Outbox {
    pending: Mutex<Vec<Revocation>>,
    /// Rung by each [`Outbox::push`]: the writer wakes at once.
    pub wake: tokio::sync::Notify,
}

/// Waiting revocations at most (a bucket down for long): beyond, the
/// oldest wait no more (each still holds on the node that made it).
const MAX_PENDING: usize = 10_000;

impl Outbox {
    pub fn push(&self, r: Revocation) {
        {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if p.len() >= MAX_PENDING {
                p.remove(0);
            }
            p.push(r);
        }
        self.wake.notify_one();
    }

    /// Everything waiting, emptied.
    pub fn take(&self) -> Vec<Revocation> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Put back what could not be written (tried again later).
    pub fn requeue(&self, again: Vec<Revocation>) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let room = MAX_PENDING.saturating_sub(p.len());
        p.extend(again.into_iter().take(room));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_round_trip() {
        let mut r = Revocation {
            kind: Kind::Session,
            id: 0xdead_beef,
            expires: 1_700_000_000,
            owner: 0,
        };
        assert_eq!(r.name(), "s-00000000deadbeef-1700000000");
        assert_eq!(Revocation::parse(&r.name()), Some(r));
        let owned = Revocation { owner: 7, ..r };
        assert_eq!(
            owned.name(),
            "s-00000000deadbeef-1700000000-0000000000000007"
        );
        assert_eq!(Revocation::parse(&owned.name()), Some(owned));
        r.owner = 0;
        for bad in [
            "",
            "x-00000000deadbeef-1",
            "s-dead-1",
            "s-00000000deadbeef",
            "s-00000000deadbeef-1-2",
            "s-00000000deadbeef-1-0000000000000007-x",
            "l-00000000deadbeef-z",
        ] {
            assert_eq!(Revocation::parse(bad), None, "{bad}");
        }
        let o = Outbox::default();
        o.push(r);
        assert_eq!(o.take(), vec![r]);
        assert!(o.take().is_empty());
        o.requeue(vec![r]);
        assert_eq!(o.take().len(), 1);
    }

    proptest! {
        #[test]
        fn any_revocation_round_trips(id in any::<u64>(), expires in any::<u64>(), owner in any::<u64>(), link in any::<bool>()) {
            let kind = if link { Kind::Link } else { Kind::Session };
            let r = Revocation { kind, id, expires, owner };
            prop_assert_eq!(Revocation::parse(&r.name()), Some(r));
        }

        #[test]
        fn never_panics(s in ".{0,60}") {
            let _ = Revocation::parse(&s);
        }
    }
}
