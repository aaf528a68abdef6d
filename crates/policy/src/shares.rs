//! Share links: a signed grant of `r` (a file, or a folder and below) or
//! `w` (an upload link: new names in a folder, a drop box) until an expiry.
//! The link carries its grant (`?share=PAYLOAD.MAC`, HMAC-SHA256 over id,
//! expiry, rights and path, compared in constant time), so any server with
//! the key verifies it; a small table keeps the live links so that one can
//! be listed and revoked. Token format and checks are sans-IO; the table is
//! kept in a JSON file beside the key when one is given.

use std::path::PathBuf;
use std::sync::Arc;

use super::revoked::{Kind, Outbox};
use super::signed_table::{new_id, Row, SignedTable};
use super::Rights;
use wirespeed_path::RelPath;

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
    /// Who minted it: a user's name, or [`TOKEN_MINTER`]. Signed with the
    /// rest, so every node knows for whom a link acts: at each use it holds
    /// at most its letters intersected with its minter's rights *then*, at
    /// each path. Empty only for a link signed before minters were signed,
    /// whose minter the table may still know (else it acts for nobody).
    #[serde(default)]
    pub by: String,
}

/// The minter of a link made with the `--token`: it keeps the server-wide cap.
pub const TOKEN_MINTER: &str = "--token";

impl Grant {
    /// Whether `path` is reachable through this link: the file itself, or
    /// anything at or below the folder.
    pub fn covers(&self, path: &RelPath) -> bool {
        let Ok(own) = wirespeed_path::parse_request_path(&self.path) else {
            return false;
        };
        if own.trailing_slash() || own.is_root() {
            path.segments().starts_with(own.segments())
        } else {
            path.segments() == own.segments() && !path.trailing_slash()
        }
    }

    pub fn rights(&self) -> Rights {
        super::rights::parse_letters(&self.rights).unwrap_or(Rights::NONE)
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

impl Row for Live {
    fn id(&self) -> u64 {
        self.grant.id
    }
}

/// Why a presented link is refused (logged; the client sees only 404).
pub use super::signed_table::Refusal;

/// Links at most in the table (beyond: the expired go first, then minting
/// is refused).
pub const MAX_LIVE: usize = 10_000;

/// The key, the live links, where they are kept, and where their
/// revocations go for other nodes to learn (a shared bucket).
#[derive(Debug)]
pub struct Shares {
    /// Longest expiry a link may ask for, in seconds.
    pub max_expiry: u64,
    live: SignedTable<Live>,
}

/// Seven days, the default expiry of a link.
pub const DEFAULT_EXPIRY: u64 = 7 * 24 * 3600;
/// Thirty days, the default longest expiry.
pub const DEFAULT_MAX_EXPIRY: u64 = 30 * 24 * 3600;

/// A link's lifetime for people, in the units `--expires` and
/// `--share-max-expiry` are written in, largest first and at most two of them: `30 days`,
/// `1 week 2 days`, `2 hours 30 minutes`, `90 seconds` → `1 minute 30
/// seconds`. A limit said in raw seconds (2592000) makes people count
/// digits.
pub fn human_duration(secs: u64) -> String {
    const UNITS: [(u64, &str); 5] = [
        (604_800, "week"),
        (86_400, "day"),
        (3_600, "hour"),
        (60, "minute"),
        (1, "second"),
    ];
    if secs == 0 {
        return "0 seconds".to_string();
    }
    let (mut rest, mut parts) = (secs, Vec::new());
    for (size, name) in UNITS {
        // Whole weeks only when no days are left over: `30 days` reads
        // better than `4 weeks 2 days`.
        if size == 604_800 && rest % size != 0 {
            continue;
        }
        let n = rest / size;
        if n > 0 && parts.len() < 2 {
            parts.push(format!("{n} {name}{}", if n == 1 { "" } else { "s" }));
            rest %= size;
        }
    }
    parts.join(" ")
}

impl Shares {
    /// Links signed with `key`, their table kept in memory only.
    pub fn new(key: [u8; 32], max_expiry: u64) -> Self {
        Shares {
            max_expiry,
            live: SignedTable::new(key, Kind::Link),
        }
    }

    /// Links signed with `key`, their table kept in `table_file` and read
    /// now: a missing file is no links yet; an unreadable or damaged one is
    /// an error (starting without it would make revoked links work again).
    pub fn open(
        key: [u8; 32],
        max_expiry: u64,
        table_file: PathBuf,
    ) -> Result<Self, crate::TableError> {
        Ok(Shares {
            max_expiry,
            live: SignedTable::kept_in(key, Kind::Link, table_file)?,
        })
    }

    /// The `share=` value of `grant`.
    pub fn sign(&self, grant: &Grant) -> String {
        self.live.sign(&payload(grant))
    }

    /// The key session cookies are signed with: derived from the link key
    /// (so every node holding that key accepts a session another minted),
    /// but a different key, so a link can never pass for a session or a
    /// session for a link.
    pub fn session_key(&self) -> [u8; 32] {
        self.live.derive_key(b"wirespeed session cookies v1")
    }

    /// The grant of a presented `share=` value, checked: signature
    /// (constant time), expiry at `now`, revocation.
    pub fn verify(&self, token: &str, now: u64) -> Result<Grant, Refusal> {
        let payload = self.live.open(token)?;
        let mut grant = parse_payload(&payload).ok_or(Refusal::Malformed)?;
        if grant.expires <= now {
            return Err(Refusal::Expired);
        }
        let rows = self.live.rows();
        let row = rows.get(&grant.id);
        if row.is_some_and(|l| l.revoked) {
            return Err(Refusal::Revoked);
        }
        if grant.by.is_empty() {
            // Signed before minters were: the table that minted it knows.
            grant.by = row.map(|l| l.by.clone()).unwrap_or_default();
        }
        Ok(grant)
    }

    /// The id of a link whose signature holds (expired or revoked alike):
    /// what a revocation names.
    pub fn id_of(&self, token: &str) -> Option<u64> {
        let payload = self.live.open(token).ok()?;
        parse_payload(&payload).map(|g| g.id)
    }

    /// A verified grant by id (what a `Principal::Link` stands for).
    pub fn grant(&self, id: ShareId) -> Option<Grant> {
        self.live.rows().get(&id.0).map(|l| {
            let mut g = l.grant.clone();
            if g.by.is_empty() {
                g.by = l.by.clone();
            }
            g
        })
    }

    /// Remember a verified grant (a link another server minted included).
    pub fn remember(&self, grant: &Grant) {
        let mut live = self.live.rows();
        if !live.contains_key(&grant.id) && live.len() < MAX_LIVE * 2 {
            live.insert(
                grant.id,
                Live {
                    grant: grant.clone(),
                    // Known from its signature, not minted here: listed and
                    // saved only where it was minted.
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
        let live = self.new_link(path, rights, secs, by, now)?;
        {
            let mut rows = self.live.rows();
            if rows.len() >= MAX_LIVE {
                rows.retain(|_, l| l.grant.expires > now);
            }
            if rows.len() >= MAX_LIVE {
                return Err(format!("{MAX_LIVE} links are live; revoke some first"));
            }
            rows.insert(live.grant.id, live.clone());
        }
        self.save();
        let token = self.sign(&live.grant);
        Ok((live.grant, token))
    }

    /// A new link, not yet in any table (a shared table takes it first:
    /// `link_records::Change::Mint`).
    pub fn new_link(
        &self,
        path: &str,
        rights: Rights,
        secs: u64,
        by: &str,
        now: u64,
    ) -> Result<Live, String> {
        let grant = Grant {
            id: new_id()?,
            expires: now.saturating_add(secs.min(self.max_expiry)),
            rights: rights.letters(),
            path: path.to_string(),
            by: by.to_string(),
        };
        Ok(Live {
            grant,
            by: by.to_string(),
            revoked: false,
        })
    }

    /// The minted links are `shared`'s, the table every node on a bucket
    /// reads, and its revocations hold here. Kept besides: a link known
    /// here only by its signature or as revoked by another node, a
    /// revocation made here, and a live link minted here that the shared
    /// table has not heard of (one minted before the table was shared:
    /// [`Shares::minted_here`] hands it to the next change).
    pub fn adopt(&self, shared: Vec<Live>, now: u64) {
        let mut rows = self.live.rows();
        let known: std::collections::HashSet<u64> = shared.iter().map(|l| l.grant.id).collect();
        rows.retain(|id, l| {
            l.by.is_empty() || l.revoked || (!known.contains(id) && l.grant.expires > now)
        });
        for l in shared {
            let revoked = l.revoked || rows.get(&l.grant.id).is_some_and(|k| k.revoked);
            rows.insert(l.grant.id, Live { revoked, ..l });
        }
    }

    /// The unexpired links this table holds with a minter (what a shared
    /// table takes in when it lacks them).
    pub fn minted_here(&self, now: u64) -> Vec<Live> {
        let rows = self.live.rows();
        let minted = rows
            .values()
            .filter(|l| !l.by.is_empty() && l.grant.expires > now);
        minted.cloned().collect()
    }

    /// The live links under `path` minted by `by` (every minter's: `None`).
    pub fn list(&self, under: &RelPath, by: Option<&str>, now: u64) -> Vec<Live> {
        self.list_where(under, |l| by.is_none_or(|b| l.by == b), now)
    }

    /// The live links under `path` that `keep` keeps.
    pub fn list_where(&self, under: &RelPath, keep: impl Fn(&Live) -> bool, now: u64) -> Vec<Live> {
        let mut out: Vec<Live> = self
            .live
            .rows()
            .values()
            .filter(|l| !l.revoked && l.grant.expires > now && !l.by.is_empty())
            .filter(|l| keep(l))
            .filter(|l| {
                wirespeed_path::parse_request_path(&l.grant.path)
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
        self.revoke_if(id, |l| by.is_none_or(|b| l.by == b))
    }

    /// Revoke link `id` if `may` allows it; whether it was.
    pub fn revoke_if(&self, id: u64, may: impl Fn(&Live) -> bool) -> bool {
        let expires = {
            let mut live = self.live.rows();
            match live.get_mut(&id) {
                Some(l) if !l.revoked && may(l) => {
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
        self.live.announce(id, expires, 0);
        true
    }

    /// Send revocations to `outbox` from now on (set once).
    pub fn publish_to(&self, outbox: Arc<Outbox>) {
        self.live.publish_to(outbox);
    }

    /// A revocation another node made: link `id` is refused here too.
    pub fn apply_revoked(&self, id: u64, expires: u64, now: u64) {
        if expires <= now {
            return;
        }
        let mut live = self.live.rows();
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
                            by: String::new(),
                        },
                        by: String::new(),
                        revoked: true,
                    },
                );
            }
            None => {}
        }
    }

    /// Write the minted links (a link known only from another node, or
    /// only as revoked there, has no minter and stays out).
    fn save(&self) {
        self.live.save(|l| !l.by.is_empty());
    }
}

/// Marks a payload that names its minter (byte 17; a path, which the
/// first format put there, always starts with `/`).
const WITH_MINTER: u8 = 0;

/// id, expiry, rights (one byte), then [`WITH_MINTER`], the minter's
/// length (one byte) and name, then the path: what the MAC covers.
fn payload(g: &Grant) -> Vec<u8> {
    let by = &g.by.as_bytes()[..g.by.len().min(255)];
    let mut out = Vec::with_capacity(19 + by.len() + g.path.len());
    out.extend_from_slice(&g.id.to_be_bytes());
    out.extend_from_slice(&g.expires.to_be_bytes());
    out.push(super::rights::parse_letters(&g.rights).map_or(0, |r| r.bits()));
    out.push(WITH_MINTER);
    out.push(by.len() as u8);
    out.extend_from_slice(by);
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
    let (by, path) = if p[17] == WITH_MINTER {
        let len = usize::from(*p.get(18)?);
        let by = p.get(19..19 + len)?;
        (std::str::from_utf8(by).ok()?, p.get(19 + len..)?)
    } else {
        ("", &p[17..])
    };
    let path = std::str::from_utf8(path).ok()?.to_string();
    wirespeed_path::parse_request_path(&path).ok()?;
    Some(Grant {
        id,
        expires,
        rights: rights.letters(),
        path,
        by: by.to_string(),
    })
}

/// `share=VALUE` from a query string.
pub fn from_query(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|kv| kv.strip_prefix("share="))
}

/// The header that carries a link for clients that cannot keep a query
/// string on every URL they derive (rclone's `http` backend drops any
/// listed href with a `?`, and its `--http-url` cannot carry one): set once
/// (`--http-headers`), it goes with every request.
pub const HEADER: &str = "x-wirespeed-share";

/// The link a request presents: in its query (`?share=`), else in
/// [`HEADER`].
pub fn presented<'a>(query: Option<&'a str>, header: Option<&'a str>) -> Option<&'a str> {
    from_query(query).or(header.map(str::trim))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_for_people() {
        assert_eq!(human_duration(30 * 86_400), "30 days");
        assert_eq!(human_duration(604_800), "1 week");
        assert_eq!(human_duration(14 * 86_400), "2 weeks");
        assert_eq!(human_duration(9_000), "2 hours 30 minutes");
        assert_eq!(human_duration(90), "1 minute 30 seconds");
        assert_eq!(human_duration(1), "1 second");
        assert_eq!(human_duration(0), "0 seconds");
        assert_eq!(human_duration(86_400 + 3_600 + 1), "1 day 1 hour");
        assert_eq!(human_duration(u64::MAX).split(' ').count(), 4);
    }
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    use base64::Engine as _;
    use wirespeed_path::parse_request_path as p;

    fn shares() -> Shares {
        Shares::new([7; 32], DEFAULT_MAX_EXPIRY)
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
        let other = Shares::new([8; 32], DEFAULT_MAX_EXPIRY);
        assert_eq!(other.verify(&token, 1050), Err(Refusal::BadSignature));
        assert!(!s.revoke(g.id, Some("bob")), "only the minter");
        assert!(s.revoke(g.id, Some("alice")));
        assert_eq!(s.verify(&token, 1050), Err(Refusal::Revoked));
        // Expiry is capped.
        let (g, _) = s.mint("/a", Rights::READ, u64::MAX, "alice", 1000).unwrap();
        assert_eq!(g.expires, 1000 + DEFAULT_MAX_EXPIRY);
    }

    #[test]
    fn the_minter_is_signed_and_old_links_find_theirs_in_the_table() {
        let s = shares();
        let (g, token) = s.mint("/team/", Rights::READ, 100, "alice", 1000).unwrap();
        assert_eq!(s.verify(&token, 1001).unwrap().by, "alice");
        // Another node with the key knows the minter from the link alone.
        let other = shares();
        assert_eq!(other.verify(&token, 1001).unwrap().by, "alice");
        // A link signed in the first format (no minter after the rights)
        // acts for whoever the minting table says, and for nobody elsewhere.
        let mut old = Vec::new();
        old.extend_from_slice(&g.id.to_be_bytes());
        old.extend_from_slice(&g.expires.to_be_bytes());
        old.push(Rights::READ.bits());
        old.extend_from_slice(b"/team/");
        let old_token = s.live.sign(&old);
        let here = s.verify(&old_token, 1001).unwrap();
        assert_eq!((here.by.as_str(), here.path.as_str()), ("alice", "/team/"));
        assert_eq!(other.verify(&old_token, 1001).unwrap().by, "");
        // A minter's name cannot be altered without breaking the signature.
        let (payload, tag) = token.split_once('.').unwrap();
        let mut raw = B64.decode(payload).unwrap();
        raw[19] = b'b';
        let forged = format!("{}.{tag}", B64.encode(&raw));
        assert_eq!(s.verify(&forged, 1001), Err(Refusal::BadSignature));
    }

    #[test]
    fn what_a_link_covers() {
        let g = |path: &str| Grant {
            id: 1,
            expires: 9,
            rights: "r".into(),
            path: path.into(),
            by: "alice".into(),
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
        let s = Shares::open([1; 32], DEFAULT_MAX_EXPIRY, file.clone()).unwrap();
        let (g, token) = s.mint("/x", Rights::READ, 100, "alice", 1000).unwrap();
        assert!(s.revoke(g.id, None));
        let again = Shares::open([1; 32], DEFAULT_MAX_EXPIRY, file.clone()).unwrap();
        assert_eq!(again.verify(&token, 1001), Err(Refusal::Revoked));
        // A damaged table is an error, not an empty table under which the
        // revoked link would verify again.
        let kept = std::fs::read(&file).unwrap();
        std::fs::write(&file, &kept[..kept.len() / 2]).unwrap();
        let err = Shares::open([1; 32], DEFAULT_MAX_EXPIRY, file.clone()).unwrap_err();
        assert!(matches!(err, crate::TableError::Damaged { .. }), "{err}");
        // Missing is simply no links yet.
        std::fs::remove_file(&file).unwrap();
        assert!(Shares::open([1; 32], DEFAULT_MAX_EXPIRY, file).is_ok());
    }

    #[test]
    fn query() {
        assert_eq!(
            from_query(Some("format=json&share=abc.def")),
            Some("abc.def")
        );
        assert_eq!(from_query(Some("format=json")), None);
        assert_eq!(from_query(None), None);
        assert_eq!(presented(Some("share=q"), Some("h")), Some("q"));
        assert_eq!(presented(Some("format=json"), Some(" h ")), Some("h"));
        assert_eq!(presented(None, None), None);
    }
}
