//! Browser sessions: the page's sign-in (`POST /-/session`) sets a cookie
//! holding a signed token — user, expiry and a random session id, HMAC'd
//! with a key derived from the share-link key (`Shares::session_key`), so
//! any node holding that key accepts a session another node minted. The
//! expiry is the server's (inside the signed token, checked on every
//! request), not the cookie's; sign-out puts the id in a bounded
//! revocation table (`session_revocations.rs`; kept in a file beside the
//! share links' table when one is given) until the session would have
//! expired anyway. Token format, cookie parsing and the `Set-Cookie`
//! values are sans-IO.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use super::revoked::{Kind, Outbox};
use super::session_revocations::{owner_of, Revocations, MAX_ROWS};
use super::signed_table::{new_id, Refusal, Row, SignedTable};

/// The cookie's name, before what makes it this server's ([`cookie_name`]).
pub const COOKIE: &str = "wirespeed-session";

/// The cookie's name on the server a browser reached at `host` (the
/// `Host` field): browsers keep cookies per host name, not per port, so
/// two servers on one machine would overwrite each other's session
/// cookie, and each would be sent the other's. The port the browser used
/// goes in the name; under TLS the `__Host-` prefix makes the browser
/// refuse one set without `Secure`, or for a wider domain.
pub fn cookie_name(host: Option<&str>, secure: bool) -> String {
    cookie_name_at(host, secure, "/")
}

/// [`cookie_name`] for a cookie scoped to `path`: under a path prefix a
/// `__Host-` cookie is impossible (it must have `Path=/`), so it is
/// `__Secure-` there, which still needs `Secure` but allows the path.
fn cookie_name_at(host: Option<&str>, secure: bool, path: &str) -> String {
    let port = host
        .and_then(|h| h.trim().rsplit_once(':'))
        .and_then(|(_, p)| p.parse::<u16>().ok());
    let prefix = match (secure, path) {
        (false, _) => "",
        (true, "/") => "__Host-",
        (true, _) => "__Secure-",
    };
    match port {
        Some(p) => format!("{prefix}{COOKIE}-{p}"),
        None => format!("{prefix}{COOKIE}"),
    }
}

/// Twelve hours, the default session lifetime: a working day signed in
/// without being asked again, while a browser left signed in on a shared
/// machine is signed out by the next morning.
pub const DEFAULT_LIFETIME: u64 = 12 * 3600;

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
    /// The key and the outbox (its rows are unused: sign-outs are in
    /// `revocations`).
    table: SignedTable<NoRow>,
    /// The signed-out sessions.
    revocations: Mutex<Revocations>,
    /// The cookie's `Path`: `/`, or the server's path prefix.
    path: String,
}

/// The signing table's row type, never stored.
#[derive(serde::Serialize, serde::Deserialize)]
struct NoRow;

impl Row for NoRow {
    fn id(&self) -> u64 {
        0
    }
}

impl Sessions {
    /// Sessions signed with `key` (see `Shares::session_key`) living
    /// `lifetime` seconds; sign-outs kept in memory only.
    pub fn new(key: [u8; 32], lifetime: u64, secure: bool) -> Self {
        Sessions {
            lifetime,
            secure,
            table: SignedTable::new(key, Kind::Session),
            revocations: Mutex::new(Revocations::in_memory(MAX_ROWS)),
            path: "/".to_string(),
        }
    }

    /// [`Sessions::new`] with the sign-outs kept in `table_file` and read
    /// now (a missing file is none yet; an unreadable or damaged one is an
    /// error: starting without it would let signed-out sessions in again).
    pub fn open(
        key: [u8; 32],
        lifetime: u64,
        secure: bool,
        table_file: PathBuf,
    ) -> Result<Self, crate::TableError> {
        Self::open_with_cap(key, lifetime, secure, table_file, MAX_ROWS)
    }

    /// [`Sessions::open`] holding at most `max_rows` revocations before
    /// collapsing them (tests).
    pub fn open_with_cap(
        key: [u8; 32],
        lifetime: u64,
        secure: bool,
        table_file: PathBuf,
        max_rows: usize,
    ) -> Result<Self, crate::TableError> {
        Ok(Sessions {
            revocations: Mutex::new(Revocations::load(table_file, max_rows)?),
            ..Self::new(key, lifetime, secure)
        })
    }

    /// Cookies for a server under the path prefix `base` (`/files`): the
    /// browser sends them only there.
    pub fn with_path(mut self, base: &str) -> Self {
        self.path = if base.is_empty() { "/" } else { base }.to_string();
        self
    }

    fn revocations(&self) -> MutexGuard<'_, Revocations> {
        self.revocations.lock().unwrap_or_else(|e| e.into_inner())
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
        let token = self.table.sign(&payload(&session));
        Ok((session, token))
    }

    /// The session of a presented cookie value, checked: signature
    /// (constant time), expiry at `now`, revocation.
    pub fn verify(&self, token: &str, now: u64) -> Result<Session, Refusal> {
        let bytes = self.table.open(token)?;
        let session = parse_payload(&bytes).ok_or(Refusal::Malformed)?;
        if session.expires <= now {
            return Err(Refusal::Expired);
        }
        let owner = owner_of(&session.user);
        if self
            .revocations()
            .is_revoked(session.id, owner, session.expires)
        {
            return Err(Refusal::Revoked);
        }
        Ok(session)
    }

    /// End `session` (a sign-out): from now on its cookie is refused, here
    /// and (through the outbox, when one is set) on every node sharing the
    /// bucket.
    pub fn revoke(&self, session: &Session, now: u64) {
        let owner = owner_of(&session.user);
        self.revocations()
            .insert(session.id, session.expires, owner, now, true);
        self.table.announce(session.id, session.expires, owner);
    }

    /// Send sign-outs to `outbox` from now on (set once).
    pub fn publish_to(&self, outbox: Arc<Outbox>) {
        self.table.publish_to(outbox);
    }

    /// A sign-out another node made: session `id` (of `owner`, 0 when the
    /// node did not say) is refused here too.
    pub fn apply_revoked(&self, id: u64, expires: u64, owner: u64, now: u64) {
        self.revocations().insert(id, expires, owner, now, false);
    }

    /// Revocations held in memory (rows and per-user floors).
    pub fn revocations_held(&self) -> usize {
        self.revocations().entries()
    }

    /// The name of the cookie for a request to `host`, over TLS when
    /// `secure` (or when this server speaks it).
    pub fn cookie_name(&self, host: Option<&str>, secure: bool) -> String {
        cookie_name_at(host, secure || self.secure, &self.path)
    }

    /// The session cookie value a request presents, from its `Host` and
    /// `Cookie` fields (`https`: it came over TLS, as a trusted proxy
    /// says): this server's cookie, sent once.
    pub fn presented<'a>(
        &self,
        host: Option<&str>,
        cookie: Option<&'a str>,
        https: bool,
    ) -> Option<&'a str> {
        from_cookie_header(cookie, &self.cookie_name(host, https))
    }

    /// The `Set-Cookie` value that signs a browser in with `token` (for a
    /// request to `host`). No `Max-Age`: the browser forgets it when it
    /// closes, and the server refuses it after the expiry inside it.
    pub fn set_cookie(&self, host: Option<&str>, token: &str, secure: bool) -> String {
        let secure = secure || self.secure;
        format!(
            "{}={token}; Path={}; HttpOnly; SameSite=Strict{}",
            cookie_name_at(host, secure, &self.path),
            self.path,
            if secure { "; Secure" } else { "" }
        )
    }

    /// The `Set-Cookie` value that removes the cookie.
    pub fn clear_cookie(&self, host: Option<&str>, secure: bool) -> String {
        let secure = secure || self.secure;
        format!(
            "{}=; Path={}; HttpOnly; SameSite=Strict; Max-Age=0{}",
            cookie_name_at(host, secure, &self.path),
            self.path,
            if secure { "; Secure" } else { "" }
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

/// The value of the cookie `name` in a `Cookie` header (RFC 6265 §5.4:
/// `name=value` pairs separated by `; `). Sent more than once (a cookie
/// set for a wider domain or path by someone else beside ours), it is no
/// session at all: which one is ours cannot be told.
pub fn from_cookie_header<'a>(header: Option<&'a str>, name: &str) -> Option<&'a str> {
    let mut found = header?.split(';').filter_map(|pair| {
        let (n, value) = pair.trim().split_once('=')?;
        (n.trim() == name).then(|| value.trim().trim_matches('"'))
    });
    let value = found.next()?;
    (found.next().is_none() && !value.is_empty()).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sessions() -> Sessions {
        Sessions::new([3; 32], DEFAULT_LIFETIME, false)
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
        let other = Sessions::new([4; 32], DEFAULT_LIFETIME, false);
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
        let shares = super::super::Shares::new([5; 32], 3600);
        let (_, link) = shares
            .mint("/bob", super::super::Rights::READ, 60, "bob", 1000)
            .unwrap();
        let s = Sessions::new(shares.session_key(), DEFAULT_LIFETIME, false);
        assert_eq!(s.verify(&link, 1001), Err(Refusal::BadSignature));
        let (_, cookie) = s.mint("bob", 9, 1000).unwrap();
        assert!(shares.verify(&cookie, 1001).is_err());
    }

    #[test]
    fn revocations_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sessions.json");
        let s = Sessions::open([1; 32], 100, false, file.clone()).unwrap();
        let (session, token) = s.mint("bob", 9, 1000).unwrap();
        s.revoke(&session, 1001);
        let again = Sessions::open([1; 32], 100, false, file).unwrap();
        assert_eq!(again.verify(&token, 1002), Err(Refusal::Revoked));
    }

    #[test]
    fn no_sequence_of_sign_outs_brings_one_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sessions.json");
        let s = Sessions::open_with_cap([1; 32], 1000, false, file.clone(), 500).unwrap();
        let (_, bob) = s.mint("bob", 9, 1000).unwrap();
        // Many more sign-in/out pairs than the table holds.
        let mut old = Vec::new();
        for i in 0..5_000 {
            let (session, token) = s.mint("mallory", 9, 1000 + i / 10).unwrap();
            s.revoke(&session, 1000 + i / 10);
            old.push(token);
        }
        assert!(s.revocations_held() <= 500 + 2);
        let now = 1000 + 500;
        for t in &old {
            assert_eq!(s.verify(t, now), Err(Refusal::Revoked));
        }
        // Nobody else is signed out, and mallory may sign in again.
        assert!(s.verify(&bob, now).is_ok());
        let (_, fresh) = s.mint("mallory", 9, now).unwrap();
        assert!(s.verify(&fresh, now).is_ok());
        // The same after a restart.
        let again = Sessions::open_with_cap([1; 32], 1000, false, file, 500).unwrap();
        assert!(old
            .iter()
            .all(|t| again.verify(t, now) == Err(Refusal::Revoked)));
        assert!(again.verify(&bob, now).is_ok() && again.verify(&fresh, now).is_ok());
    }

    #[test]
    fn cookies() {
        let s = sessions();
        let set = s.set_cookie(Some("test"), "abc.def", false);
        assert_eq!(
            set,
            "wirespeed-session=abc.def; Path=/; HttpOnly; SameSite=Strict"
        );
        // One name per port: two servers on one host keep their own.
        let set = s.set_cookie(Some("127.0.0.1:8080"), "a.b", false);
        assert!(set.starts_with("wirespeed-session-8080=a.b;"), "{set}");
        assert_eq!(
            cookie_name(Some("[::1]:8443"), true),
            "__Host-wirespeed-session-8443"
        );
        assert_eq!(cookie_name(Some("[::1]"), false), COOKIE);
        assert_eq!(cookie_name(Some("h:99999"), false), COOKIE);
        assert_eq!(cookie_name(None, false), COOKIE);
        let set = s.set_cookie(Some("h:1"), "a.b", true);
        assert!(set.starts_with("__Host-wirespeed-session-1=a.b; Path=/;"));
        assert!(set.ends_with("; Secure") && !set.contains("Domain"));
        let tls = Sessions::new([3; 32], 1, true);
        assert!(tls.set_cookie(None, "a.b", false).starts_with("__Host-"));
        assert!(tls.set_cookie(None, "a.b", false).ends_with("; Secure"));
        assert_eq!(tls.cookie_name(None, false), "__Host-wirespeed-session");
        // Under a path prefix: the cookie goes only there, and under TLS
        // it cannot be `__Host-` (which demands `Path=/`).
        let under = Sessions::new([3; 32], 1, true).with_path("/files");
        let set = under.set_cookie(Some("h:1"), "a.b", false);
        assert!(
            set.starts_with("__Secure-wirespeed-session-1=a.b; Path=/files;"),
            "{set}"
        );
        assert!(set.ends_with("; Secure"));
        assert!(under.clear_cookie(None, false).contains("; Path=/files;"));
        assert_eq!(under.cookie_name(None, false), "__Secure-wirespeed-session");
        let clear = s.clear_cookie(Some("h:8080"), false);
        assert!(clear.starts_with("wirespeed-session-8080=;") && clear.contains("Max-Age=0"));
        assert_eq!(
            from_cookie_header(Some("theme=dark; wirespeed-session=abc.def; x=1"), COOKIE),
            Some("abc.def")
        );
        assert_eq!(from_cookie_header(Some("wirespeed-session="), COOKIE), None);
        assert_eq!(from_cookie_header(Some("other=1"), COOKIE), None);
        assert_eq!(from_cookie_header(None, COOKIE), None);
        // Another port's cookie is not ours.
        let h = Some("wirespeed-session-8081=x.y");
        assert_eq!(from_cookie_header(h, "wirespeed-session-8080"), None);
        // Two values of our name: no session, whichever comes first.
        for two in [
            "wirespeed-session=a.b; wirespeed-session=c.d",
            "wirespeed-session=a.b; wirespeed-session=a.b",
            "wirespeed-session=; wirespeed-session=a.b",
        ] {
            assert_eq!(from_cookie_header(Some(two), COOKIE), None, "{two}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(v in ".{0,80}", h in ".{0,80}") {
            let s = sessions();
            let _ = s.verify(&v, 0);
            let _ = from_cookie_header(Some(&h), COOKIE);
        }
    }
}
