//! Bounds the whole-file hashing a `Want-Repr-Digest` read can cause:
//! concurrent requests for one version of one file share one hash (the
//! others wait for it), and at most `max` hashes run at once. A request
//! over the cap gets its answer without `Repr-Digest` (the field is a
//! preference, RFC 9530 §4) rather than a 503: the download itself is
//! cheap, only the extra hash is refused.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{OnceCell, Semaphore};

type Cell = Arc<OnceCell<Option<[u8; 32]>>>;

/// Hashes in flight, by file version.
pub struct HashGate {
    inflight: Mutex<HashMap<String, Cell>>,
    permits: Semaphore,
}

impl std::fmt::Debug for HashGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashGate")
            .field("available", &self.permits.available_permits())
            .finish()
    }
}

impl HashGate {
    /// At most `max` hashes at once (at least one).
    pub fn new(max: usize) -> Self {
        HashGate {
            inflight: Mutex::new(HashMap::new()),
            permits: Semaphore::new(max.max(1)),
        }
    }

    /// The default cap: one hash per core.
    pub fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
    }

    /// The digest of the file version `key` (its path and ETag): computed
    /// by `hash` unless a hash of the same version is running, whose
    /// result is then shared; `Ok(None)` when every permit is taken.
    pub async fn digest<E, F>(&self, key: String, hash: F) -> Result<Option<[u8; 32]>, E>
    where
        F: Future<Output = Result<Option<[u8; 32]>, E>>,
    {
        let cell = {
            let mut map = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(key.clone()).or_default().clone()
        };
        let result = cell
            .get_or_try_init(|| async {
                let Ok(_permit) = self.permits.try_acquire() else {
                    return Ok(None);
                };
                hash.await
            })
            .await
            .copied();
        // The first one done removes the entry: a later request (the file
        // may have changed without changing its ETag) hashes afresh.
        let mut map = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
        if map.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            map.remove(&key);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn concurrent_requests_share_one_hash() {
        let gate = Arc::new(HashGate::new(4));
        let runs = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let (gate, runs) = (gate.clone(), runs.clone());
            tasks.push(tokio::spawn(async move {
                gate.digest("/a\0\"1\"".into(), async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    Ok::<_, ()>(Some([7u8; 32]))
                })
                .await
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), Ok(Some([7u8; 32])));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(gate.inflight.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn over_the_cap_answers_without_a_digest() {
        let gate = Arc::new(HashGate::new(1));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let g = gate.clone();
        let slow = tokio::spawn(async move {
            g.digest("/a".into(), async {
                let _ = rx.await;
                Ok::<_, ()>(Some([1u8; 32]))
            })
            .await
        });
        tokio::task::yield_now().await;
        while gate.permits.available_permits() != 0 {
            tokio::task::yield_now().await;
        }
        let other = gate
            .digest("/b".into(), async { Ok::<_, ()>(Some([2u8; 32])) })
            .await;
        assert_eq!(other, Ok(None));
        tx.send(()).unwrap();
        assert_eq!(slow.await.unwrap(), Ok(Some([1u8; 32])));
        let again = gate
            .digest("/b".into(), async { Ok::<_, ()>(Some([2u8; 32])) })
            .await;
        assert_eq!(again, Ok(Some([2u8; 32])));
    }
}
