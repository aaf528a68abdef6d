//! The share links table of every node on one bucket: one record,
//! `PREFIX/.wirespeed-state/records/links` (its format and the changes
//! are `policy/link_records.rs`'s). A mint or a revocation reads the
//! record afresh, changes it and writes it back only over the version it
//! read (`If-Match`; `If-None-Match: *` when there is none), again when
//! another node wrote first, so no change is lost. A listing asks the
//! bucket again with the version known (an unchanged record is a bodiless
//! 304), so every node lists the same links; a link presented to a node is
//! checked against its copy while that is younger than [`WINDOW`], so a
//! link revoked on one node is refused on all within a second. Without a bucket (a folder) the table is the node's own
//! (`shares.json`), as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::policy::link_records::{self, Change, RecordError, MAX_RECORD};
use crate::policy::Shares;
use crate::storage::state::SharedState;
use crate::storage::{LockRecords, StorageError};

/// The record's name in the shared state folder.
const RECORD: &str = "links";
/// How long a node trusts its copy before asking the bucket again.
pub const WINDOW: Duration = Duration::from_secs(1);
/// Attempts of one change against other nodes' concurrent changes.
const TRIES: usize = 8;

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why the shared table could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum LinksError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A mint the table has no room for.
    #[error("{0}")]
    Full(String),
}

impl LinksError {
    /// The status a route answers with.
    pub fn status(&self) -> u16 {
        match self {
            LinksError::Storage(e) => e.status(),
            LinksError::Record(_) => 502,
            LinksError::Full(_) => 503,
        }
    }
}

/// A links table kept somewhere every node reads (object-safe, so the
/// routes need not know the storage).
pub trait LinksTable: Send + Sync {
    /// Bring `shares`' minted links up to date with the shared table when
    /// this node's copy is older than `max_age` (a conditional read: an
    /// unchanged table costs a bodiless answer).
    fn refresh<'a>(
        &'a self,
        shares: &'a Shares,
        max_age: Duration,
    ) -> Boxed<'a, Result<(), LinksError>>;
    /// Apply `change` to the shared table (and to `shares`); whether it
    /// changed anything.
    fn change<'a>(
        &'a self,
        shares: &'a Shares,
        change: Change,
    ) -> Boxed<'a, Result<bool, LinksError>>;
}

/// The table shared through a bucket, held by the service's config.
#[derive(Clone)]
pub struct SharedLinks(pub Arc<dyn LinksTable>);

impl std::fmt::Debug for SharedLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedLinks")
    }
}

impl SharedLinks {
    /// The table in `state`'s bucket.
    pub fn in_bucket<S: SharedState>(state: S) -> Self {
        SharedLinks(Arc::new(BucketLinks {
            state,
            seen: Mutex::new(Seen::default()),
            writer: tokio::sync::Mutex::new(()),
        }))
    }
}

struct BucketLinks<S> {
    state: S,
    seen: Mutex<Seen>,
    /// One change at a time from this node (others race through the bucket).
    writer: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Seen {
    version: Option<String>,
    fetched: Option<Instant>,
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl<S: SharedState> BucketLinks<S> {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The record's rows and version, read afresh (`None`: no record yet).
    async fn read(&self) -> Result<(Vec<crate::policy::shares::Live>, Option<String>), LinksError> {
        match self.state.load_record(RECORD, None, MAX_RECORD).await? {
            LockRecords::Found { blob, version } => {
                Ok((link_records::decode(&blob)?, Some(version)))
            }
            LockRecords::Absent | LockRecords::Unchanged => Ok((Vec::new(), None)),
        }
    }

    async fn do_refresh(&self, shares: &Shares, max_age: Duration) -> Result<(), LinksError> {
        let known = {
            let seen = self.seen();
            if seen.fetched.is_some_and(|t| t.elapsed() < max_age) {
                return Ok(());
            }
            seen.version.clone()
        };
        let found = self.state.load_record(RECORD, known, MAX_RECORD).await?;
        let version = match found {
            LockRecords::Unchanged => self.seen().version.clone(),
            LockRecords::Absent => {
                shares.adopt(Vec::new(), unix_now());
                None
            }
            LockRecords::Found { blob, version } => {
                shares.adopt(link_records::decode(&blob)?, unix_now());
                Some(version)
            }
        };
        let mut seen = self.seen();
        seen.version = version;
        seen.fetched = Some(Instant::now());
        Ok(())
    }

    async fn do_change(&self, shares: &Shares, change: Change) -> Result<bool, LinksError> {
        let _one = self.writer.lock().await;
        for _ in 0..TRIES {
            let (mut rows, version) = self.read().await?;
            let now = unix_now();
            // Links this node minted before the table was shared join it.
            let merged = link_records::merge(&mut rows, shares.minted_here(now));
            let changed = link_records::apply(&mut rows, &change, now).map_err(LinksError::Full)?;
            if !changed && !merged {
                shares.adopt(rows, now);
                return Ok(false);
            }
            let blob = link_records::encode(&rows);
            match self.state.save_record(RECORD, blob, version).await {
                Ok(v) => {
                    shares.adopt(rows, now);
                    let mut seen = self.seen();
                    seen.version = Some(v);
                    seen.fetched = Some(Instant::now());
                    return Ok(changed);
                }
                // Another node wrote first: read again, decide again.
                Err(StorageError::PreconditionFailed) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StorageError::Busy.into())
    }
}

impl<S: SharedState> LinksTable for BucketLinks<S> {
    fn refresh<'a>(
        &'a self,
        shares: &'a Shares,
        max_age: Duration,
    ) -> Boxed<'a, Result<(), LinksError>> {
        Box::pin(self.do_refresh(shares, max_age))
    }

    fn change<'a>(
        &'a self,
        shares: &'a Shares,
        change: Change,
    ) -> Boxed<'a, Result<bool, LinksError>> {
        Box::pin(self.do_change(shares, change))
    }
}
