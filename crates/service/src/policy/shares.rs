//! Share links: a signed grant of `r` (a file, or a folder and below) or
//! `w` (an upload link: new names in a folder, a drop box) until an expiry.
//! The link carries its grant (`?share=PAYLOAD.MAC`, HMAC-SHA256 over id,
//! expiry, rights and path, compared in constant time), so any server with
//! the key verifies it; a small table keeps the live links so that one can
//! be listed and revoked. Token format and checks are sans-IO; the table is
//! kept in a JSON file beside the key when one is given.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::revoked::{Kind, Outbox, Revocation};
use super::Rights;
use crate::path::RelPath;

/// A share link's id (random, 64 bits): what a revocation names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShareId(pub u64);

/// What a link grants.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Grant {
    pub id: u64,
    /// Unix seconds after which the link is dead.
    pub expires: u64,
    /// `r` or `w` letters.
    pub rights: String,
    /// The shared path as a URL path: `/a/b.txt` (a file) or `/a/` (a
    /// folder and everything below).
    pub path: String,
}

impl Grant {
    /// Whether `path` is reachable through this link: the file itself, or
    /// anything at or below the folder.
    pub fn covers(&self, path: &RelPath) -> bool {
        let Ok(own) = crate::path::parse_request_path(&self.path) else {
            return false;
        };
        if own.trailing_slash() || own.is_root() {
            path.segments().starts_with(own.segments())
        } else {
            path.segments() == own.segments() && !path.trailing_slash()
        }
    }

    pub fn rights(&self) -> Rights {
        super::rules::parse_letters(&self.rights).unwrap_or(Rights::NONE)
    }
}

/// A live link in the table.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Live {
    pub grant: Grant,
    /// Who minted it (a user's name, or `--token`).
    pub by: String,
    pub revoked: bool,
}

/// Why a presented link is refused (logged; the client sees only 404).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Malformed,
    BadSignature,
    Expired,
    Revoked,
}

/// Links at most in the table (beyond: the expired go first, then minting
/// is refused).
pub const MAX_LIVE: usize = 10_000;

/// The key, the live links, and where they are kept.
pub struct Shares {
    key: [u8; 32],
    /// Longest expiry a link may ask for, in seconds.
    pub max_expiry: u64,
    live: Mutex<HashMap<u64, Live>>,
    table_file: Option<PathBuf>,
    /// Where revocations go for other nodes to learn (a shared bucket).
    outbox: OnceLock<Arc<Outbox>>,
}

impl std::fmt::Debug for Shares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("Shares")
            .field("max_expiry", &self.max_expiry)
            .field("table_file", &self.table_file)
            .finish_non_exhaustive()
    }
}

/// Seven days, the default expiry of a link.
pub const DEFAULT_EXPIRY: u64 = 7 * 24 * 3600;
/// Thirty days, the default longest expiry.
pub const DEFAULT_MAX_EXPIRY: u64 = 30 * 24 * 3600;

impl Shares {
    /// Links signed with `key`; the table kept in `table_file` (read now
    /// if it exists) when given.
    pub fn new(key: [u8; 32], max_expiry: u64, table_file: Option<PathBuf>) -> Self {
        let live = table_file
            .as_ref()
            .and_then(|f| std::fs::read(f).ok())
            .and_then(|bytes| serde_json::from_slice::<Vec<Live>>(&bytes).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|l| (l.grant.id, l))
            .collect();
        Shares {
            key,
            max_expiry,
            live: Mutex::new(live),
            table_file,
            outbox: OnceLock::new(),
        }
    }

    /// The `share=` value of `grant`.
    pub fn sign(&self, grant: &Grant) -> String {
        sign_payload(&self.key, &payload(grant))
    }

    /// The key session cookies are signed with: derived from the link key
    /// (so every node holding that key accepts a session another minted),
    /// but a different key, so a link can never pass for a session or a
    /// session for a link.
    pub fn session_key(&self) -> [u8; 32] {
        let mut mac = mac_of(&self.key);
        mac.update(b"wirespeed session cookies v1");
        mac.finalize().into_bytes().into()
    }

    /// The grant of a presented `share=` value, checked: signature
    /// (constant time), expiry at `now`, revocation.
    pub fn verify(&self, token: &str, now: u64) -> Result<Grant, Refusal> {
        let payload = open_payload(&self.key, token)?;
        let grant = parse_payload(&payload).ok_or(Refusal::Malformed)?;
        if grant.expires <= now {
            return Err(Refusal::Expired);
        }
        if lock(&self.live).get(&grant.id).is_some_and(|l| l.revoked) {
            return Err(Refusal::Revoked);
        }
        Ok(grant)
    }

    /// The id of a link whose signature holds (expired or revoked alike):
    /// what a revocation names.
    pub fn id_of(&self, token: &str) -> Option<u64> {
        let payload = open_payload(&self.key, token).ok()?;
        parse_payload(&payload).map(|g| g.id)
    }

    /// A verified grant by id (what a `Principal::Link` stands for).
    pub fn grant(&self, id: ShareId) -> Option<Grant> {
        lock(&self.live).get(&id.0).map(|l| l.grant.clone())
    }

    /// Remember a verified grant (a link another server minted included).
    pub fn remember(&self, grant: &Grant) {
        let mut live = lock(&self.live);
        if !live.contains_key(&grant.id) && live.len() < MAX_LIVE * 2 {
            live.insert(
                grant.id,
                Live {
                    grant: grant.clone(),
                    by: String::new(),
                    revoked: false,
                },
            );
        }
    }

    /// A new link for `path` with `rights`, minted by `by`, for `secs`.
    pub fn mint(
        &self,
        path: &str,
        rights: Rights,
        secs: u64,
        by: &str,
        now: u64,
    ) -> Result<(Grant, String), String> {
        let mut id = [0u8; 8];
        getrandom::getrandom(&mut id).map_err(|e| format!("no randomness: {e}"))?;
        let grant = Grant {
            id: u64::from_le_bytes(id),
            expires: now.saturating_add(secs.min(self.max_expiry)),
            rights: rights.letters(),
            path: path.to_string(),
        };
        {
            let mut live = lock(&self.live);
            if live.len() >= MAX_LIVE {
                live.retain(|_, l| l.grant.expires > now);
            }
            if live.len() >= MAX_LIVE {
                return Err(format!("{MAX_LIVE} links are live; revoke some first"));
            }
            live.insert(
                grant.id,
                Live {
                    grant: grant.clone(),
                    by: by.to_string(),
                    revoked: false,
                },
            );
        }
        self.save();
        let token = self.sign(&grant);
        Ok((grant, token))
    }

    /// The live links under `path` minted by `by` (every minter's: `None`).
    pub fn list(&self, under: &RelPath, by: Option<&str>, now: u64) -> Vec<Live> {
        let mut out: Vec<Live> = lock(&self.live)
            .values()
            .filter(|l| !l.revoked && l.grant.expires > now && !l.by.is_empty())
            .filter(|l| by.is_none_or(|b| l.by == b))
            .filter(|l| {
                crate::path::parse_request_path(&l.grant.path)
                    .is_ok_and(|p| p.segments().starts_with(under.segments()))
            })
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            a.grant
                .path
                .cmp(&b.grant.path)
                .then(a.grant.id.cmp(&b.grant.id))
        });
        out
    }

    /// Revoke link `id` if `by` minted it (any: `None`); whether it was.
    pub fn revoke(&self, id: u64, by: Option<&str>) -> bool {
        let expires = {
            let mut live = lock(&self.live);
            match live.get_mut(&id) {
                Some(l) if !l.revoked && by.is_none_or(|b| l.by == b) => {
                    l.revoked = true;
                    Some(l.grant.expires)
                }
                _ => None,
            }
        };
        let Some(expires) = expires else {
            return false;
        };
        self.save();
        if let Some(outbox) = self.outbox.get() {
            outbox.push(Revocation {
                kind: Kind::Link,
                id,
                expires,
            });
        }
        true
    }

    /// Send revocations to `outbox` from now on (set once).
    pub fn publish_to(&self, outbox: Arc<Outbox>) {
        let _ = self.outbox.set(outbox);
    }

    /// A revocation another node made: link `id` is refused here too.
    pub fn apply_revoked(&self, id: u64, expires: u64, now: u64) {
        if expires <= now {
            return;
        }
        let mut live = lock(&self.live);
        let room = live.len() < MAX_LIVE * 2;
        match live.get_mut(&id) {
            Some(l) => l.revoked = true,
            None if room => {
                // Known only as revoked: nothing to list, nothing to save.
                live.insert(
                    id,
                    Live {
                        grant: Grant {
                            id,
                            expires,
                            rights: String::new(),
                            path: String::new(),
                        },
                        by: String::new(),
                        revoked: true,
                    },
                );
            }
            None => {}
        }
    }

    /// Write the table (atomically: a temp file renamed over it).
    fn save(&self) {
        let Some(file) = &self.table_file else {
            return;
        };
        let all: Vec<Live> = lock(&self.live)
            .values()
            .filter(|l| !l.by.is_empty())
            .cloned()
            .collect();
        let Ok(bytes) = serde_json::to_vec(&all) else {
            return;
        };
        let tmp = file.with_extension("json.tmp");
        let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, file));
        if let Err(e) = written {
            tracing::warn!(target: "wirespeed::share", error = %e, file = %file.display(), "cannot save the share links table");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn mac_of(key: &[u8; 32]) -> Hmac<Sha256> {
    // HMAC takes a key of any length: this never fails.
    <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts any key length")
}

/// `BASE64(payload).BASE64(HMAC-SHA256(key, payload))`: the signed form of
/// share links and session cookies (URL- and cookie-safe characters only).
pub(crate) fn sign_payload(key: &[u8; 32], payload: &[u8]) -> String {
    let mut mac = mac_of(key);
    mac.update(payload);
    let tag = mac.finalize().into_bytes();
    format!("{}.{}", B64.encode(payload), B64.encode(tag))
}

/// The payload of a [`sign_payload`] value whose tag holds under `key`
/// (compared in constant time).
pub(crate) fn open_payload(key: &[u8; 32], token: &str) -> Result<Vec<u8>, Refusal> {
    let (p, t) = token.split_once('.').ok_or(Refusal::Malformed)?;
    let payload = B64.decode(p).map_err(|_| Refusal::Malformed)?;
    let tag = B64.decode(t).map_err(|_| Refusal::Malformed)?;
    let mut mac = mac_of(key);
    mac.update(&payload);
    mac.verify_slice(&tag).map_err(|_| Refusal::BadSignature)?;
    Ok(payload)
}

/// id, expiry, rights (one byte), path: what the MAC covers.
fn payload(g: &Grant) -> Vec<u8> {
    let mut out = Vec::with_capacity(17 + g.path.len());
    out.extend_from_slice(&g.id.to_be_bytes());
    out.extend_from_slice(&g.expires.to_be_bytes());
    out.push(super::rules::parse_letters(&g.rights).map_or(0, |r| r.bits()));
    out.extend_from_slice(g.path.as_bytes());
    out
}

fn parse_payload(p: &[u8]) -> Option<Grant> {
    if p.len() < 18 {
        return None;
    }
    let id = u64::from_be_bytes(p[..8].try_into().ok()?);
    let expires = u64::from_be_bytes(p[8..16].try_into().ok()?);
    let rights = Rights::from_bits(p[16])?;
    let path = std::str::from_utf8(&p[17..]).ok()?.to_string();
    crate::path::parse_request_path(&path).ok()?;
    Some(Grant {
        id,
        expires,
        rights: rights.letters(),
        path,
    })
}

/// `share=VALUE` from a query string.
pub fn from_query(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|kv| kv.strip_prefix("share="))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::parse_request_path as p;

    fn shares() -> Shares {
        Shares::new([7; 32], DEFAULT_MAX_EXPIRY, None)
    }

    #[test]
    fn sign_verify_alter_expire_revoke() {
        let s = shares();
        let (g, token) = s.mint("/team/", Rights::READ, 100, "alice", 1000).unwrap();
        assert_eq!(s.verify(&token, 1050), Ok(g.clone()));
        assert_eq!(s.verify(&token, 1100), Err(Refusal::Expired));
        // Any altered byte of payload or tag fails the signature.
        let (payload, tag) = token.split_once('.').unwrap();
        let mut raw = B64.decode(payload).unwrap();
        raw[16] = Rights::ALL.bits();
        let forged = format!("{}.{tag}", B64.encode(&raw));
        assert_eq!(s.verify(&forged, 1050), Err(Refusal::BadSignature));
        let mut raw = B64.decode(payload).unwrap();
        raw.truncate(raw.len() - 1);
        let shorter = format!("{}.{tag}", B64.encode(&raw));
        assert_eq!(s.verify(&shorter, 1050), Err(Refusal::BadSignature));
        assert_eq!(s.verify("nonsense", 1050), Err(Refusal::Malformed));
        let other = Shares::new([8; 32], DEFAULT_MAX_EXPIRY, None);
        assert_eq!(other.verify(&token, 1050), Err(Refusal::BadSignature));
        assert!(!s.revoke(g.id, Some("bob")), "only the minter");
        assert!(s.revoke(g.id, Some("alice")));
        assert_eq!(s.verify(&token, 1050), Err(Refusal::Revoked));
        // Expiry is capped.
        let (g, _) = s.mint("/a", Rights::READ, u64::MAX, "alice", 1000).unwrap();
        assert_eq!(g.expires, 1000 + DEFAULT_MAX_EXPIRY);
    }

    #[test]
    fn what_a_link_covers() {
        let g = |path: &str| Grant {
            id: 1,
            expires: 9,
            rights: "r".into(),
            path: path.into(),
        };
        assert!(g("/team/").covers(&p("/team/").unwrap()));
        assert!(g("/team/").covers(&p("/team/a/b.txt").unwrap()));
        assert!(!g("/team/").covers(&p("/teamx/a").unwrap()));
        assert!(!g("/team/").covers(&p("/").unwrap()));
        assert!(g("/team/t.txt").covers(&p("/team/t.txt").unwrap()));
        assert!(!g("/team/t.txt").covers(&p("/team/u.txt").unwrap()));
        assert!(!g("/team/t.txt").covers(&p("/team/").unwrap()));
        assert!(!g("/team/t.txt").covers(&p("/team/t.txt/").unwrap()));
    }

    #[test]
    fn the_table_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shares.json");
        let s = Shares::new([1; 32], DEFAULT_MAX_EXPIRY, Some(file.clone()));
        let (g, token) = s.mint("/x", Rights::READ, 100, "alice", 1000).unwrap();
        assert!(s.revoke(g.id, None));
        let again = Shares::new([1; 32], DEFAULT_MAX_EXPIRY, Some(file));
        assert_eq!(again.verify(&token, 1001), Err(Refusal::Revoked));
    }

    #[test]
    fn query() {
        assert_eq!(
            from_query(Some("format=json&share=abc.def")),
            Some("abc.def")
        );
        assert_eq!(from_query(Some("format=json")), None);
        assert_eq!(from_query(None), None);
    }
}
