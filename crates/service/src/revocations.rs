//! Sign-outs and link revocations across the nodes of one bucket: each
//! node writes its own as markers in the bucket's shared state folder as
//! they happen (`policy/revoked.rs` names them), and reads everyone's every
//! `every` (a listing of one folder, no object opened), so a sign-out or a
//! revocation made on one node is refused on all within `every` plus a
//! listing. Markers of things that expired anyway are removed by whichever
//! node sees them first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::policy::revoked::{Kind, Outbox, Revocation};
use crate::policy::{Sessions, Shares};
use crate::storage::state::SharedState;

/// The folder of the markers, under the state folder.
pub const FOLDER: &str = "revoked";

/// How often a node reads the others' revocations unless told otherwise
/// (`serve --revocation-sync`): twice a minute, so one made elsewhere is
/// refused here within a minute, for one listing per node per 30 s.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(30);

/// A marker stays this long past its expiry (clocks of nodes differ).
const KEEP_AFTER_EXPIRY: u64 = 3600;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Publish this node's revocations to `state` and apply everyone's, for
/// ever (spawn it; it ends with the runtime).
pub async fn run_sync<S: SharedState>(
    state: S,
    shares: Option<Arc<Shares>>,
    sessions: Option<Arc<Sessions>>,
    every: Duration,
) {
    let outbox = Arc::new(Outbox::default());
    if let Some(s) = &shares {
        s.publish_to(outbox.clone());
    }
    if let Some(s) = &sessions {
        s.publish_to(outbox.clone());
    }
    let mut next_read = Instant::now();
    loop {
        publish(&state, &outbox).await;
        if Instant::now() >= next_read {
            read(&state, shares.as_deref(), sessions.as_deref()).await;
            next_read = Instant::now() + every;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(next_read.into()) => {}
            _ = outbox.wake.notified() => {}
        }
    }
}

/// Write what waits in the outbox; what fails waits for the next round.
async fn publish<S: SharedState>(state: &S, outbox: &Outbox) {
    let mut failed = Vec::new();
    for r in outbox.take() {
        if let Err(e) = state.put_marker(FOLDER, &r.name()).await {
            tracing::warn!(target: "wirespeed::signin", error = %e, "cannot share a sign-out or link revocation with the other nodes yet; retrying");
            failed.push(r);
        }
    }
    outbox.requeue(failed);
}

/// Apply every node's revocations; remove the markers of the long expired.
async fn read<S: SharedState>(state: &S, shares: Option<&Shares>, sessions: Option<&Sessions>) {
    let names = match state.list_markers(FOLDER).await {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(target: "wirespeed::signin", error = %e, "cannot read the other nodes' sign-outs and link revocations");
            return;
        }
    };
    let now = unix_now();
    for name in names {
        let Some(r) = Revocation::parse(&name) else {
            continue;
        };
        if r.expires.saturating_add(KEEP_AFTER_EXPIRY) < now {
            let _ = state.remove_marker(FOLDER, &name).await;
            continue;
        }
        match (r.kind, shares, sessions) {
            (Kind::Link, Some(s), _) => s.apply_revoked(r.id, r.expires, now),
            (Kind::Session, _, Some(s)) => s.apply_revoked(r.id, r.expires, r.owner, now),
            _ => {}
        }
    }
}
