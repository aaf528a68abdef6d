//! Browser sessions: the page's sign-in (`POST /-/session`) sets a cookie
//! holding a signed token — user, expiry and a random session id, HMAC'd
//! with a key derived from the share-link key (`Shares::session_key`), so
//! any node holding that key accepts a session another node minted. The
//! expiry is the server's (inside the signed token, checked on every
//! request), not the cookie's; sign-out puts the id in a small revocation
//! table (kept in a JSON file beside the share links' table when one is
//! given) until the session would have expired anyway. Token format,
//! cookie parsing and the `Set-Cookie` values are sans-IO.

use std::path::PathBuf;
use std::sync::Arc;

use super::revoked::{Kind, Outbox};
use super::signed_table::{new_id, Refusal, Row, SignedTable};

/// The cookie's name.
pub const COOKIE: &str = "wirespeed-session";

/// Twelve hours, the default session lifetime: a working day signed in
/// without being asked again, while a browser left signed in on a shared
/// machine is signed out by the next morning.
pub const DEFAULT_LIFETIME: u64 = 12 * 3600;

/// Revoked sessions remembered at most (beyond: the expired go first, then
/// the oldest expiries).
const MAX_REVOKED: usize = 100_000;

/// What a session cookie carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Random, 64 bits: what a sign-out revokes.
    pub id: u64,
    /// Unix seconds after which the session is dead.
    pub expires: u64,
    /// A digest of the user's password hash when signed in: a new
    /// password (a rules file reloaded) ends the user's sessions.
    pub stamp: u64,
    /// The user's name as the rules file spells it.
    pub user: String,
}

/// The [`Session::stamp`] of a password hash as the rules file holds it.
pub fn stamp_of(hash: &str) -> u64 {
    use sha2::Digest as _;
    let d = sha2::Sha256::digest(hash.as_bytes());
    u64::from_be_bytes(d[..8].try_into().unwrap_or_default())
}

/// The session key, the lifetime, the revoked sessions, and where
/// sign-outs go for other nodes to learn (a shared bucket).
#[derive(Debug)]
pub struct Sessions {
    /// Seconds a new session lives.
    pub lifetime: u64,
    /// Cookies get `Secure` (the server speaks TLS).
    pub secure: bool,
    /// Revoked session ids and when each would have expired.
    revoked: SignedTable<Revoked>,
}

/// One revoked session, in memory and in the table file.
#[derive(serde::Serialize, serde::Deserialize)]
struct Revoked {
    id: u64,
    expires: u64,
}

impl Row for Revoked {
    fn id(&self) -> u64 {
        self.id
    }
}

impl Sessions {
    /// Sessions signed with `key` (see `Shares::session_key`) living
    /// `lifetime` seconds; revocations kept in `table_file` (read now if
    /// it exists) when given.
    pub fn new(key: [u8; 32], lifetime: u64, secure: bool, table_file: Option<PathBuf>) -> Self {
        Sessions {
            lifetime,
            secure,
            revoked: SignedTable::new(key, Kind::Session, table_file),
        }
    }

    /// A new session for `user` (whose password hash has `stamp`) from
    /// `now`: it and its cookie value.
    pub fn mint(&self, user: &str, stamp: u64, now: u64) -> Result<(Session, String), String> {
        let session = Session {
            id: new_id()?,
            expires: now.saturating_add(self.lifetime),
            stamp,
            user: user.to_string(),
        };
        let token = self.revoked.sign(&payload(&session));
        Ok((session, token))
    }

    /// The session of a presented cookie value, checked: signature
    /// (constant time), expiry at `now`, revocation.
    pub fn verify(&self, token: &str, now: u64) -> Result<Session, Refusal> {
        let bytes = self.revoked.open(token)?;
        let session = parse_payload(&bytes).ok_or(Refusal::Malformed)?;
        if session.expires <= now {
            return Err(Refusal::Expired);
        }
        if self.revoked.rows().contains_key(&session.id) {
            return Err(Refusal::Revoked);
        }
        Ok(session)
    }

    /// End `session` (a sign-out): from now on its cookie is refused, here
    /// and (through the outbox, when one is set) on every node sharing the
    /// bucket.
    pub fn revoke(&self, session: &Session, now: u64) {
        self.insert_revoked(session.id, session.expires, now);
        // The revocations still in force.
        self.revoked.save(|r| r.expires > now);
        self.revoked.announce(session.id, session.expires);
    }

    /// Send sign-outs to `outbox` from now on (set once).
    pub fn publish_to(&self, outbox: Arc<Outbox>) {
        self.revoked.publish_to(outbox);
    }

    /// A sign-out another node made: session `id` is refused here too.
    pub fn apply_revoked(&self, id: u64, expires: u64, now: u64) {
        if expires > now && !self.revoked.rows().contains_key(&id) {
            self.insert_revoked(id, expires, now);
        }
    }

    fn insert_revoked(&self, id: u64, expires: u64, now: u64) {
        let mut revoked = self.revoked.rows();
        if revoked.len() >= MAX_REVOKED {
            revoked.retain(|_, r| r.expires > now);
        }
        if revoked.len() >= MAX_REVOKED {
            // Still full of live sessions: the soonest to expire go.
            let mut by_expiry: Vec<(u64, u64)> =
                revoked.values().map(|r| (r.expires, r.id)).collect();
            by_expiry.sort_unstable();
            for (_, id) in by_expiry.iter().take(MAX_REVOKED / 10) {
                revoked.remove(id);
            }
        }
        revoked.insert(id, Revoked { id, expires });
    }

    /// The `Set-Cookie` value that signs a browser in with `token`. No
    /// `Max-Age`: the browser forgets it when it closes, and the server
    /// refuses it after the expiry inside it.
    pub fn set_cookie(&self, token: &str, secure: bool) -> String {
        format!(
            "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict{}",
            if secure || self.secure {
                "; Secure"
            } else {
                ""
            }
        )
    }

    /// The `Set-Cookie` value that removes the cookie.
    pub fn clear_cookie(&self, secure: bool) -> String {
        format!(
            "{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{}",
            if secure || self.secure {
                "; Secure"
            } else {
                ""
            }
        )
    }
}

/// id, expiry, stamp, user: what the MAC covers.
fn payload(s: &Session) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + s.user.len());
    out.extend_from_slice(&s.id.to_be_bytes());
    out.extend_from_slice(&s.expires.to_be_bytes());
    out.extend_from_slice(&s.stamp.to_be_bytes());
    out.extend_from_slice(s.user.as_bytes());
    out
}

fn parse_payload(p: &[u8]) -> Option<Session> {
    if p.len() < 25 {
        return None;
    }
    let id = u64::from_be_bytes(p[..8].try_into().ok()?);
    let expires = u64::from_be_bytes(p[8..16].try_into().ok()?);
    let stamp = u64::from_be_bytes(p[16..24].try_into().ok()?);
    let user = std::str::from_utf8(&p[24..]).ok()?.to_string();
    Some(Session {
        id,
        expires,
        stamp,
        user,
    })
}

/// The header the page's script sends on each of its requests: a 401 to
/// them carries no `Basic` challenge (which would open the browser's own
/// dialog), and their 401 is JSON the script acts on. A header a page on
/// another site cannot send without a CORS preflight this server never
/// grants.
pub const PAGE_MARKER: &str = "x-wirespeed-page";

/// Whether a request carries the page's marker ([`PAGE_MARKER`]).
pub fn from_page(marker: Option<&str>) -> bool {
    marker.is_some_and(|v| !v.trim().is_empty())
}

/// Whether a GET that prefers HTML (the only kind the caller asks about)
/// is a browser navigating (a typed URL, a link): it gets the page with its
/// sign-in form, never a `Basic` challenge, whose dialog would cover the
/// form and whose remembered credentials would outlive Sign out. Browsers
/// send `Sec-Fetch-Mode` only in secure contexts (HTTPS, localhost): on
/// plain HTTP to a LAN address no `Sec-Fetch-*` comes at all, so a request
/// without the field counts too. Another mode (`cors`, `no-cors`) is not
/// a navigation; curl, wget, WebDAV clients and scripts do not prefer HTML
/// and keep getting the challenge.
pub fn is_navigation(sec_fetch_mode: Option<&str>) -> bool {
    sec_fetch_mode.is_none_or(|m| m.trim().eq_ignore_ascii_case("navigate"))
}

/// The session cookie's value in a `Cookie` header (RFC 6265 §5.4:
/// `name=value` pairs separated by `; `), if there is one.
pub fn from_cookie_header(header: Option<&str>) -> Option<&str> {
    header?.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name.trim() == COOKIE && !value.is_empty()).then(|| value.trim().trim_matches('"'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sessions() -> Sessions {
        Sessions::new([3; 32], DEFAULT_LIFETIME, false, None)
    }

    #[test]
    fn mint_verify_alter_expire_revoke() {
        let s = sessions();
        let (session, token) = s.mint("bob", 9, 1000).unwrap();
        assert_eq!(session.expires, 1000 + DEFAULT_LIFETIME);
        assert_eq!(s.verify(&token, 1001), Ok(session.clone()));
        assert_eq!(
            s.verify(&token, 1000 + DEFAULT_LIFETIME),
            Err(Refusal::Expired)
        );
        // Another user's name under the same tag fails the signature.
        let (p, tag) = token.split_once('.').unwrap();
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut raw = b64.decode(p).unwrap();
        raw.truncate(24);
        raw.extend_from_slice(b"alice");
        let forged = format!("{}.{tag}", b64.encode(&raw));
        assert_eq!(s.verify(&forged, 1001), Err(Refusal::BadSignature));
        // A key another server holds.
        let other = Sessions::new([4; 32], DEFAULT_LIFETIME, false, None);
        assert_eq!(other.verify(&token, 1001), Err(Refusal::BadSignature));
        assert_eq!(s.verify("x", 1001), Err(Refusal::Malformed));
        s.revoke(&session, 1002);
        assert_eq!(s.verify(&token, 1003), Err(Refusal::Revoked));
        // Sessions of others live on.
        let (_, other_token) = s.mint("bob", 9, 1000).unwrap();
        assert!(s.verify(&other_token, 1003).is_ok());
    }

    #[test]
    fn a_share_link_is_no_session() {
        let shares = super::super::Shares::new([5; 32], 3600, None);
        let (_, link) = shares
            .mint("/bob", super::super::Rights::READ, 60, "bob", 1000)
            .unwrap();
        let s = Sessions::new(shares.session_key(), DEFAULT_LIFETIME, false, None);
        assert_eq!(s.verify(&link, 1001), Err(Refusal::BadSignature));
        let (_, cookie) = s.mint("bob", 9, 1000).unwrap();
        assert!(shares.verify(&cookie, 1001).is_err());
    }

    #[test]
    fn revocations_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sessions.json");
        let s = Sessions::new([1; 32], 100, false, Some(file.clone()));
        let (session, token) = s.mint("bob", 9, 1000).unwrap();
        s.revoke(&session, 1001);
        let again = Sessions::new([1; 32], 100, false, Some(file));
        assert_eq!(again.verify(&token, 1002), Err(Refusal::Revoked));
    }

    #[test]
    fn cookies() {
        let s = sessions();
        let set = s.set_cookie("abc.def", false);
        assert_eq!(
            set,
            "wirespeed-session=abc.def; Path=/; HttpOnly; SameSite=Strict"
        );
        assert!(s.set_cookie("a.b", true).ends_with("; Secure"));
        let tls = Sessions::new([3; 32], 1, true, None);
        assert!(tls.set_cookie("a.b", false).ends_with("; Secure"));
        assert!(s.clear_cookie(false).contains("Max-Age=0"));
        assert_eq!(
            from_cookie_header(Some("theme=dark; wirespeed-session=abc.def; x=1")),
            Some("abc.def")
        );
        assert_eq!(from_cookie_header(Some("wirespeed-session=")), None);
        assert_eq!(from_cookie_header(Some("other=1")), None);
        assert_eq!(from_cookie_header(None), None);
    }

    proptest! {
        #[test]
        fn never_panics(v in ".{0,80}", h in ".{0,80}") {
            let s = sessions();
            let _ = s.verify(&v, 0);
            let _ = from_cookie_header(Some(&h));
        }
    }
}
