//! Uploads that expire: the sweep that removes them, and the loop that
//! runs it (`serve` and the tests' harness run the same one).

use super::*;

impl<S: Storage + PartialUploads + Clone> Uploads<S> {
    /// Remove expired partial uploads (and their in-process state), and
    /// unusable ones seen by two sweeps in a row; returns how many were
    /// removed. Uploads with an append running are left for the next sweep.
    pub async fn sweep_expired(&self) -> usize {
        // Joins that ended while nobody asked: their parts are let go here.
        self.settle_joins();
        let list = match self.storage.list_partials().await {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list partial uploads for the expiry sweep");
                return 0;
            }
        };
        let t = now();
        let mut removed = 0;
        let before = std::mem::take(&mut *self.unusable.lock().unwrap_or_else(|e| e.into_inner()));
        let mut unusable = std::collections::HashSet::new();
        for (id, state) in list {
            let expired = match state {
                Some(state) => state.expired(t) || self.empty_and_idle(&state, t),
                None if self.slots().contains_key(&id) => false,
                None if before.contains(&id) => true,
                None => {
                    unusable.insert(id);
                    false
                }
            };
            if !expired {
                continue;
            }
            let slot = self.slots().get(&id).cloned();
            if slot.as_ref().is_some_and(|s| is_taken(&s.snapshot())) {
                continue; // a final upload is joining it
            }
            let _held = match &slot {
                Some(s) => match s.append.try_lock() {
                    Ok(g) => Some(g),
                    Err(_) => continue,
                },
                None => None,
            };
            self.forget(&id);
            match self.storage.delete_partial(&id).await {
                Ok(()) => removed += 1,
                Err(e) => tracing::warn!(%id, error = %e, "could not remove an expired upload"),
            }
        }
        *self.unusable.lock().unwrap_or_else(|e| e.into_inner()) = unusable;
        if removed > 0 {
            tracing::info!(removed, "removed expired partial uploads");
        }
        removed
    }

    /// An upload that never received a byte for `empty_expiry_secs`.
    pub(super) fn empty_and_idle(&self, state: &UploadState, now: u64) -> bool {
        !state.complete
            && state.offset == 0
            && state.length != Some(0)
            && now >= state.created.saturating_add(self.ucfg.empty_expiry_secs)
    }

    /// How often [`Uploads::spawn_sweeper`] should sweep: a quarter of an
    /// upload's lifetime, between 1 s and 10 min.
    pub fn sweep_period(&self) -> Duration {
        Duration::from_secs((self.ucfg.limits.lifetime_secs / 4).clamp(1, 600))
    }

    /// Runs [`Uploads::sweep_expired`] now and then every `every` on the
    /// current runtime, for as long as it lives.
    pub fn spawn_sweeper(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()>
    where
        S: 'static,
    {
        let uploads = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                uploads.sweep_expired().await;
                // The trash empties itself on this beat too (at most once
                // a minute), so a server that only overwrites sheds too.
                if uploads.cfg.trash_days > 0 {
                    crate::trash::now_and_then_sweep(&uploads.storage, &uploads.cfg).await;
                }
            }
        })
    }
}
