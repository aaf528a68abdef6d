//! What share links and browser sessions have in common: tokens signed
//! with one key (`BASE64(payload).BASE64(HMAC-SHA256)`, checked in constant
//! time), a table of rows by id kept in a JSON file when one is given
//! (read at start, written atomically), and an outbox through which
//! revocations reach the other nodes sharing a bucket. The key never shows
//! in `Debug`. What a row is, and what its payload says, are
//! `shares.rs`'s and `sessions.rs`'s.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::revoked::{Kind, Outbox, Revocation};
use super::table_file::{self, TableError};

/// Why a presented token is refused (logged; the client learns no more
/// than its route says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Malformed,
    BadSignature,
    Expired,
    Revoked,
}

/// A row of the table file: found again by its id.
pub(crate) trait Row: serde::Serialize + serde::de::DeserializeOwned {
    fn id(&self) -> u64;
}

/// The signing key, the rows, the file they are kept in, and the outbox.
pub(crate) struct SignedTable<R> {
    key: [u8; 32],
    rows: Mutex<HashMap<u64, R>>,
    file: Option<PathBuf>,
    /// What this table's revocations are, to the other nodes.
    kind: Kind,
    outbox: OnceLock<Arc<Outbox>>,
}

impl<R> std::fmt::Debug for SignedTable<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("SignedTable")
            .field("kind", &self.kind)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl<R: Row> SignedTable<R> {
    /// A table signing with `key`, kept in memory only.
    pub fn new(key: [u8; 32], kind: Kind) -> Self {
        SignedTable {
            key,
            rows: Mutex::new(HashMap::new()),
            file: None,
            kind,
            outbox: OnceLock::new(),
        }
    }

    /// A table signing with `key`, its rows kept in `file` and read from it
    /// now (a missing file is an empty table; an unreadable or damaged one
    /// an error: its revocations must not be forgotten).
    pub fn kept_in(key: [u8; 32], kind: Kind, file: PathBuf) -> Result<Self, TableError> {
        let rows: Vec<R> = match table_file::read(&file)? {
            Some(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| table_file::damaged(&file, e))?
            }
            None => Vec::new(),
        };
        let t = Self::new(key, kind);
        *t.rows() = rows.into_iter().map(|r| (r.id(), r)).collect();
        Ok(SignedTable {
            file: Some(file),
            ..t
        })
    }

    /// The rows, locked (a poisoned lock is taken over: the map stays
    /// consistent between statements).
    pub fn rows(&self) -> MutexGuard<'_, HashMap<u64, R>> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write the rows `keep` keeps (atomically: a temp file renamed over
    /// the table); a failure is logged, the table in memory still holds.
    pub fn save(&self, keep: impl Fn(&R) -> bool) {
        let Some(file) = &self.file else {
            return;
        };
        let bytes = {
            let rows = self.rows();
            let kept: Vec<&R> = rows.values().filter(|r| keep(r)).collect();
            serde_json::to_vec(&kept)
        };
        let Ok(bytes) = bytes else {
            return;
        };
        if let Err(e) = table_file::replace(file, &bytes) {
            match self.kind {
                Kind::Session => {
                    tracing::warn!(target: "wirespeed::signin", error = %e, file = %file.display(), "cannot save the sign-out table")
                }
                Kind::Link => {
                    tracing::warn!(target: "wirespeed::share", error = %e, file = %file.display(), "cannot save the share links table")
                }
            }
        }
    }

    /// Send revocations to `outbox` from now on (set once).
    pub fn publish_to(&self, outbox: Arc<Outbox>) {
        let _ = self.outbox.set(outbox);
    }

    /// Tell the other nodes (through the outbox, when one is set) that
    /// `id`, alive until `expires`, is revoked (`owner`: whose it was,
    /// 0 when that does not matter).
    pub fn announce(&self, id: u64, expires: u64, owner: u64) {
        if let Some(outbox) = self.outbox.get() {
            outbox.push(Revocation {
                kind: self.kind,
                id,
                expires,
                owner,
            });
        }
    }

    /// `payload`, signed.
    pub fn sign(&self, payload: &[u8]) -> String {
        sign_payload(&self.key, payload)
    }

    /// The payload of a signed token whose tag holds.
    pub fn open(&self, token: &str) -> Result<Vec<u8>, Refusal> {
        open_payload(&self.key, token)
    }

    /// A key derived from this one for another use (`label` says which):
    /// a token of one kind never passes for the other.
    pub fn derive_key(&self, label: &[u8]) -> [u8; 32] {
        let mut mac = mac_of(&self.key);
        mac.update(label);
        mac.finalize().into_bytes().into()
    }
}

/// A fresh random id (64 bits) for a new row.
pub(crate) fn new_id() -> Result<u64, String> {
    let mut id = [0u8; 8];
    getrandom::getrandom(&mut id).map_err(|e| format!("no randomness: {e}"))?;
    Ok(u64::from_le_bytes(id))
}

fn mac_of(key: &[u8; 32]) -> Hmac<Sha256> {
    // HMAC takes a key of any length: this never fails.
    <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts any key length")
}

/// `BASE64(payload).BASE64(HMAC-SHA256(key, payload))`: URL- and
/// cookie-safe characters only.
fn sign_payload(key: &[u8; 32], payload: &[u8]) -> String {
    let mut mac = mac_of(key);
    mac.update(payload);
    let tag = mac.finalize().into_bytes();
    format!("{}.{}", B64.encode(payload), B64.encode(tag))
}

/// The payload of a [`sign_payload`] value whose tag holds under `key`
/// (compared in constant time).
fn open_payload(key: &[u8; 32], token: &str) -> Result<Vec<u8>, Refusal> {
    let (p, t) = token.split_once('.').ok_or(Refusal::Malformed)?;
    let payload = B64.decode(p).map_err(|_| Refusal::Malformed)?;
    let tag = B64.decode(t).map_err(|_| Refusal::Malformed)?;
    let mut mac = mac_of(key);
    mac.update(&payload);
    mac.verify_slice(&tag).map_err(|_| Refusal::BadSignature)?;
    Ok(payload)
}
