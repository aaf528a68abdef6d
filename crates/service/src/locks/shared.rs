//! Lock records shared through the store, so several servers on one bucket
//! honour each other's locks ([`Storage::shares_locks`]: S3).
//!
//! The whole table is one record (JSON) in the store. A change — LOCK,
//! refresh, UNLOCK, a DELETE or MOVE dropping the locks below — reads the
//! record afresh, decides on it (so two nodes never both grant conflicting
//! locks) and writes it back only if nobody wrote it meanwhile (a
//! conditional write on the version read; a lost race reads again and
//! redecides). A check before a write uses this node's copy while it is
//! younger than [`WINDOW`], then asks the store again (a conditional read:
//! "unchanged" is a bodiless answer): a lock taken on another node holds
//! here within [`WINDOW`], and a write on a server without locks costs one
//! small request per [`WINDOW`], not one per write.
//!
//! On a store that does not share locks (a folder), the table is the
//! server's memory and nothing here does any I/O.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::table::{Lock, LockTable};
use crate::storage::{LockRecords, Storage, StorageError};

/// How long a node trusts its copy of the records before a write's check
/// asks the store again.
pub const WINDOW: Duration = Duration::from_secs(1);
/// Attempts of one change against other nodes' concurrent changes.
const TRIES: usize = 8;

/// One lock as stored (times in Unix milliseconds, meaningful on any node).
#[derive(serde::Serialize, serde::Deserialize)]
struct Record {
    token: String,
    root: Vec<String>,
    root_url: String,
    infinite: bool,
    exclusive: bool,
    owner: Option<String>,
    creator: Option<String>,
    timeout_secs: u64,
    expires_ms: u64,
    #[serde(default)]
    created: bool,
}

fn to_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The stored form of `locks`.
pub fn encode(locks: &[Lock]) -> Vec<u8> {
    let records: Vec<Record> = locks
        .iter()
        .map(|l| Record {
            token: l.token.clone(),
            root: l.root.clone(),
            root_url: l.root_url.clone(),
            infinite: l.infinite,
            exclusive: l.exclusive,
            owner: l.owner.clone(),
            creator: l.creator.clone(),
            timeout_secs: l.timeout.as_secs(),
            expires_ms: to_ms(l.expires),
            created: l.created,
        })
        .collect();
    serde_json::to_vec(&records).unwrap_or_default()
}

/// The locks in a stored record; an unreadable one holds none (and is
/// replaced by the next change).
pub fn decode(blob: &[u8]) -> Vec<Lock> {
    let records: Vec<Record> = match serde_json::from_slice(blob) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "the shared lock records are unreadable; taken as empty");
            return Vec::new();
        }
    };
    records
        .into_iter()
        .map(|r| Lock {
            token: r.token,
            root: r.root,
            root_url: r.root_url,
            infinite: r.infinite,
            exclusive: r.exclusive,
            owner: r.owner,
            creator: r.creator,
            timeout: Duration::from_secs(r.timeout_secs),
            expires: UNIX_EPOCH + Duration::from_millis(r.expires_ms),
            created: r.created,
        })
        .collect()
}

impl LockTable {
    /// Bring this node's copy up to date with the store's record when it is
    /// older than [`WINDOW`] (or always, with `force`). Nothing on a store
    /// that does not share locks.
    pub async fn sync<S: Storage>(&self, storage: &S, force: bool) -> Result<(), StorageError> {
        if !storage.shares_locks() {
            return Ok(());
        }
        let known = {
            let seen = self.shared.seen();
            if !force && seen.fetched.is_some_and(|t| t.elapsed() < WINDOW) {
                return Ok(());
            }
            // A forced read takes the record whole (this copy may hold a
            // change that was never written).
            if force {
                None
            } else {
                seen.version.clone()
            }
        };
        let found = storage.load_locks(known).await?;
        let mut seen = self.shared.seen();
        match found {
            LockRecords::Unchanged => {}
            LockRecords::Absent => {
                self.replace_all(Vec::new());
                seen.version = None;
            }
            LockRecords::Found { blob, version } => {
                self.replace_all(decode(&blob));
                seen.version = Some(version);
            }
        }
        seen.fetched = Some(Instant::now());
        Ok(())
    }

    /// Apply `change` to the table: directly in memory, or on a store that
    /// shares locks, to the record read afresh, written back only over the
    /// version read (retried when another node wrote first).
    pub async fn modify<S: Storage, R>(
        &self,
        storage: &S,
        change: impl Fn(&LockTable) -> R,
    ) -> Result<R, StorageError> {
        if !storage.shares_locks() {
            return Ok(change(self));
        }
        let _one = self.shared.one_writer().await;
        for _ in 0..TRIES {
            self.sync(storage, true).await?;
            let before = encode(&self.all());
            let out = change(self);
            let after = encode(&self.all());
            if before == after {
                return Ok(out);
            }
            let version = self.shared.seen().version.clone();
            match storage.save_locks(after, version).await {
                Ok(v) => {
                    let mut seen = self.shared.seen();
                    seen.version = Some(v);
                    seen.fetched = Some(Instant::now());
                    return Ok(out);
                }
                // Another node changed the record first: read it, decide again.
                Err(StorageError::PreconditionFailed) => continue,
                Err(e) => {
                    // This copy holds a change the store does not: read again next time.
                    self.shared.seen().fetched = None;
                    return Err(e);
                }
            }
        }
        self.shared.seen().fetched = None;
        Err(StorageError::Busy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_to_the_millisecond() {
        let l = Lock {
            token: "urn:uuid:1".into(),
            root: vec!["a".into(), "b c".into()],
            root_url: "/a/b%20c".into(),
            infinite: true,
            exclusive: false,
            owner: Some("<D:href>x</D:href>".into()),
            creator: Some("user:alice".into()),
            timeout: Duration::from_secs(60),
            expires: UNIX_EPOCH + Duration::from_millis(1_900_000_000_123),
            created: true,
        };
        let blob = encode(std::slice::from_ref(&l));
        assert_eq!(decode(&blob), vec![l]);
        assert!(decode(b"not json").is_empty());
    }
}
