//! Uploads that completed here, remembered until they would have expired.
//! tus core answers HEAD with the offset "even if the upload is already
//! considered completed", and the draft's offset retrieval likewise: a
//! client whose last append lost its answer asks, finds offset = length,
//! and is done instead of starting over.

use std::collections::VecDeque;

use super::*;

/// Most completed uploads remembered (each its target and sizes, without
/// metadata); the oldest go first.
pub(super) const MAX_COMPLETED: usize = 4096;

#[derive(Default)]
pub(super) struct Completed {
    states: HashMap<UploadId, UploadState>,
    /// In order of completion, for eviction.
    order: VecDeque<UploadId>,
}

impl Completed {
    /// Remember `id`, completed with `length` bytes at `now`.
    pub(super) fn insert(&mut self, id: UploadId, state: &UploadState, length: u64, now: u64) {
        while let Some(old) = self.order.front() {
            let stale = self.states.get(old).is_none_or(|s| now >= s.expires);
            if !stale && self.order.len() < MAX_COMPLETED {
                break;
            }
            if let Some(old) = self.order.pop_front() {
                self.states.remove(&old);
            }
        }
        let mut kept = state.clone();
        kept.metadata = None;
        kept.sha256 = None;
        kept.offset = length;
        kept.length = Some(length);
        kept.complete = true;
        if self.states.insert(id, kept).is_none() {
            self.order.push_back(id);
        }
    }

    /// The completed upload `id`, unless it expired.
    pub(super) fn get(&self, id: &UploadId, now: u64) -> Option<UploadState> {
        self.states.get(id).filter(|s| now < s.expires).cloned()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.states.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> UploadId {
        UploadId::from_random([n; 16])
    }

    fn state(expires: u64) -> UploadState {
        let mut s = UploadState::new(Protocol::Tus, "/a.bin".into(), Some(5), 0, expires);
        s.metadata = Some("filename YS5iaW4=".into());
        s
    }

    #[test]
    fn kept_until_expiry_then_gone_and_bounded() {
        let mut c = Completed::default();
        c.insert(id(1), &state(100), 5, 10);
        let got = c.get(&id(1), 99).unwrap();
        assert_eq!((got.offset, got.length, got.complete), (5, Some(5), true));
        assert_eq!(got.metadata, None);
        assert!(c.get(&id(1), 100).is_none());
        // Expired ones are dropped as new ones come.
        c.insert(id(2), &state(1000), 5, 200);
        assert_eq!(c.len(), 1);
        for n in 0..=MAX_COMPLETED {
            let mut bytes = [0u8; 16];
            bytes[..8].copy_from_slice(&(n as u64).to_le_bytes());
            bytes[15] = 9;
            c.insert(UploadId::from_random(bytes), &state(1000), 5, 200);
        }
        assert_eq!(c.len(), MAX_COMPLETED);
        assert!(c.get(&id(2), 300).is_none(), "the oldest went first");
    }
}
