//! The one answer to "may this principal do this action on this path?".
//!
//! Every route asks [`Policy::decide`] (through `respond::admit`) instead of
//! deciding on its own, and `serve` prints [`Policy::describe`], so what the
//! start line promises is what is enforced. Sans-IO: no request, no file.
//!
//! Rights are per path and per user: `r` reads (GET/HEAD, listings,
//! digests, OPTIONS on a private server), `w` writes new names (PUT/POST of
//! a new name, MKCOL, resumable creations and appends, the destination of a
//! MOVE), `d` deletes and replaces (DELETE, the source of a MOVE, and any
//! write over an existing name: replacing a file destroys it). Today's
//! flags are presets ([`Policy::from_presets`]) giving rights to two
//! principals: anyone, and the holder of a `--token`; a rules file
//! (`serve --auth FILE`, [`rules`]) adds users and rights per folder
//! ([`Policy::with_users`]), signed in by HTTP Basic ([`basic`], [`users`]).

pub mod basic;
pub mod groups;
pub mod hidden;
pub mod limiter;
pub mod link_records;
pub mod origin;
pub mod password;
pub mod presets;
pub mod proxy_user;
pub mod quotas;
pub mod rate_keys;
pub mod rates;
pub mod revoked;
mod rights;
pub mod rules;
pub mod rules_edit;
mod session_revocations;
pub mod sessions;
pub mod shares;
mod signed_table;
mod table_file;
mod trees;
pub mod users;

use std::net::IpAddr;
use std::sync::Arc;

use crate::presets::{Access, Writes, WritesOff};
pub use rights::Rights;
pub use rules::UserName;
pub use sessions::Sessions;
pub use shares::{ShareId, Shares};
pub use table_file::TableError;
pub use users::{Users, UsersError};
use wirespeed_path::RelPath;

/// Who asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Principal {
    /// No (valid) credentials.
    Anyone,
    /// A valid `--token` bearer.
    TokenHolder,
    /// A user of the rules file, signed in.
    User(UserName),
    /// The bearer of a share link (`?share=…`): its grant only, and only
    /// on the path it covers.
    Link(ShareId),
}

/// Seconds since the Unix epoch (0 before it).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Credentials were presented and are wrong: 401, whatever the path; or
/// they were not checked (too many guesses): 429 after `retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SignInFailed {
    pub retry_after: Option<std::time::Duration>,
}

/// What is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// GET/HEAD of a file or listing, a digest, OPTIONS.
    Read,
    /// A new name: PUT/POST of a missing file, MKCOL, a resumable creation,
    /// append or cancel, a MOVE's new destination.
    Create,
    /// A write over an existing name (needs `w` and `d`).
    Replace,
    /// DELETE, or the source of a MOVE.
    Delete,
    /// `GET /-/metrics`: the counts tell who uses the server how.
    Metrics,
}

impl Action {
    /// The rights the action needs.
    pub fn needs(self) -> Rights {
        match self {
            Action::Read => Rights::READ,
            Action::Create => Rights::WRITE,
            Action::Replace => Rights::WRITE.union(Rights::DELETE),
            Action::Delete => Rights::DELETE,
            Action::Metrics => Rights::NONE,
        }
    }
}

/// The policy's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Credentials (a token, or a user's sign-in) would allow it: 401
    /// with `WWW-Authenticate`.
    NeedCredentials,
    /// Nobody may, on this server: 403, with what to do about it.
    Forbidden(&'static str),
}

/// Why writes are limited, for the texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preset {
    /// `--read-only`.
    ReadOnly,
    /// `--token` (and `--private`).
    Token { private: bool },
    /// No token, loopback (or a library user's open server).
    Open,
    /// No token beyond loopback: `--allow-upload` / `--allow-delete`.
    Exposed,
}

/// Rights per principal and path, and the texts that explain them.
#[derive(Clone)]
pub struct Policy {
    access: Access,
    anyone: Rights,
    holder: Rights,
    preset: Preset,
    /// The most any principal gets (`--read-only`, the exposed defaults).
    allowed: Rights,
    /// The rules file, when there is one: rights per user and folder.
    users: Option<Arc<Users>>,
    /// Share links, when they are on.
    shares: Option<Arc<Shares>>,
    /// Browser sessions (the page's sign-in), when users sign in.
    sessions: Option<Arc<Sessions>>,
    /// Names nobody sees (`--hidden`): as if absent, for every principal.
    hidden: Arc<hidden::Hidden>,
    /// The headers a trusted proxy signs users in with, when on.
    proxy_sign_in: Option<Arc<groups::ProxySignIn>>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("anyone", &self.anyone.letters())
            .field("holder", &self.holder.letters())
            .field("preset", &self.preset)
            .field("users", &self.users)
            .finish()
    }
}

impl Policy {
    /// Today's flags as rights: `access` says which tokens exist and
    /// whether reads need one, `writes` which writes are taken at all.
    pub fn from_presets(access: &Access, writes: Writes) -> Self {
        let mut allowed = Rights::READ;
        if writes.upload {
            allowed = allowed.union(Rights::WRITE);
        }
        if writes.delete {
            allowed = allowed.union(Rights::DELETE);
        }
        let read_only = !writes.upload && !writes.delete && writes.why == WritesOff::ReadOnly;
        let preset = if read_only {
            Preset::ReadOnly
        } else if access.has_tokens() {
            Preset::Token {
                private: access.private(),
            }
        } else if writes.why == WritesOff::Exposed {
            Preset::Exposed
        } else {
            Preset::Open
        };
        let (anyone, holder) = if access.has_tokens() {
            let anyone = if access.private() {
                Rights::NONE
            } else {
                Rights::READ
            };
            (anyone, allowed)
        } else {
            (allowed, Rights::NONE)
        };
        Policy {
            access: access.clone(),
            anyone,
            holder,
            preset,
            allowed,
            users: None,
            shares: None,
            sessions: None,
            hidden: Arc::default(),
            proxy_sign_in: None,
        }
    }

    /// The policy plus hidden names (`--hidden`): no principal lists,
    /// reads or writes them ([`Policy::hides`]; `respond::admit` answers
    /// 404, as for a missing name).
    pub fn with_hidden(mut self, hidden: hidden::Hidden) -> Self {
        self.hidden = Arc::new(hidden);
        self
    }

    /// The hidden names.
    pub fn hidden(&self) -> &Arc<hidden::Hidden> {
        &self.hidden
    }

    /// Whether `path` is, or is below, a hidden name.
    pub fn hides(&self, path: &RelPath) -> bool {
        self.hidden.hides(path)
    }

    /// Whether the one name `name` is hidden (a listing's entry).
    pub fn hides_name(&self, name: &str) -> bool {
        self.hidden.hides_name(name)
    }

    /// Whether `who` may read `path` and it is not hidden: what a listing
    /// or an archive may show of an entry.
    pub fn reads(&self, who: Principal, path: &RelPath) -> bool {
        !self.hides(path) && self.rights(who, path).may_read()
    }

    /// The policy plus browser sessions: a valid session cookie signs its
    /// user in as HTTP Basic does.
    pub fn with_sessions(mut self, sessions: Arc<Sessions>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// The browser sessions, if on.
    pub fn sessions(&self) -> Option<&Arc<Sessions>> {
        self.sessions.as_ref()
    }

    /// The user a session cookie value signs in: a valid, live session of
    /// a user the rules file (as reloaded) still has with the same
    /// password. Anything else is no sign-in at all (logged), never an
    /// error: the cookie rides along on every request, so a stale one must
    /// not shut its browser out of what anyone may read.
    pub fn session_user(&self, token: &str, client: IpAddr) -> Option<Principal> {
        let (sessions, users) = (self.sessions.as_ref()?, self.users.as_ref()?);
        let session = match sessions.verify(token, unix_now()) {
            Ok(s) => s,
            Err(why) => {
                tracing::debug!(target: "wirespeed::signin", client = %client, reason = ?why, "session cookie refused");
                return None;
            }
        };
        let rules = users.rules();
        match rules.user(&session.user) {
            Some((name, hash)) if sessions::stamp_of(hash) == session.stamp => {
                Some(Principal::User(name))
            }
            _ => {
                tracing::debug!(target: "wirespeed::signin", client = %client, user = %session.user, "session of a removed user or an old password refused");
                None
            }
        }
    }

    /// The presets plus share links (`POST /-/shares` mints them).
    pub fn with_shares(mut self, shares: Arc<Shares>) -> Self {
        self.shares = Some(shares);
        self
    }

    /// The share links, if on.
    /// How `who` is named where changes are told (the change stream, and
    /// what subscribes to it): a user's name, `--token`, `anyone`, or
    /// `link N of NAME` (a link acts for its minter).
    pub fn label(&self, who: Principal) -> String {
        match who {
            Principal::Anyone => "anyone".into(),
            Principal::TokenHolder => shares::TOKEN_MINTER.into(),
            Principal::User(name) => name.as_str().into(),
            Principal::Link(id) => match self.shares().and_then(|s| s.grant(id)) {
                Some(g) if !g.by.is_empty() => format!("link {} of {}", id.0, g.by),
                _ => format!("link {}", id.0),
            },
        }
    }

    pub fn shares(&self) -> Option<&Arc<Shares>> {
        self.shares.as_ref()
    }

    /// The presets plus a rules file: users and their rights per folder
    /// decide for everyone but a `--token` holder (who keeps every right
    /// the presets allow); `--private` leaves nothing to anyone not signed
    /// in; `--read-only` caps every rule at `r`.
    pub fn with_users(mut self, users: Arc<Users>) -> Self {
        self.users = Some(users);
        self
    }

    /// The policy plus sign-in by a trusted proxy's headers
    /// (`--user-header`, `--groups-header`): the caller asks
    /// [`Policy::proxy_user`] only for requests from a `--trusted-proxy`.
    pub fn with_proxy_sign_in(mut self, headers: groups::ProxySignIn) -> Self {
        self.proxy_sign_in = Some(Arc::new(headers));
        self
    }

    /// The proxy's sign-in headers, if on.
    pub fn proxy_sign_in(&self) -> Option<&groups::ProxySignIn> {
        self.proxy_sign_in.as_deref()
    }

    /// The user a trusted proxy's user header names (`name`), in the
    /// groups its groups header names that the rules file knows. Only
    /// with a rules file: without one no right names a user.
    pub fn proxy_user(
        &self,
        name: &str,
        groups_header: Option<&str>,
    ) -> Result<Principal, proxy_user::ProxySignInError> {
        let Some(users) = &self.users else {
            return Err(proxy_user::ProxySignInError::NoRules);
        };
        proxy_user::signed_in(&users.rules(), name, groups_header).map(Principal::User)
    }

    /// The rules file in force, if any.
    pub fn users(&self) -> Option<&Arc<Users>> {
        self.users.as_ref()
    }

    /// Who presents this `Authorization` value, by token only (Basic
    /// credentials need [`Policy::authenticate`]).
    pub fn principal(&self, authorization: Option<&[u8]>) -> Principal {
        if self.access.has_tokens() && self.access.allows(authorization) {
            Principal::TokenHolder
        } else {
            Principal::Anyone
        }
    }

    /// Who presents this `Authorization` value or, without one, this
    /// session cookie value: a token holder, a user signed in by HTTP Basic
    /// (checked off the async workers) or by a session, or anyone. Wrong
    /// Basic credentials on a server with users are an error (401), never a
    /// silent fall back to anyone.
    pub async fn authenticate(
        &self,
        authorization: Option<&[u8]>,
        session: Option<&str>,
        client: IpAddr,
    ) -> Result<Principal, SignInFailed> {
        if let (None, Some(token)) = (authorization, session) {
            return Ok(self
                .session_user(token, client)
                .unwrap_or(Principal::Anyone));
        }
        let who = self.principal(authorization);
        let (Some(users), Some(value), Principal::Anyone) = (&self.users, authorization, who)
        else {
            return Ok(who);
        };
        if !basic::is_basic(value) {
            return Ok(who);
        }
        let Some(creds) = basic::credentials(value) else {
            return Err(SignInFailed::default());
        };
        match users.sign_in(&creds, client).await {
            users::SignIn::User { name, .. } => Ok(Principal::User(name)),
            users::SignIn::Wrong => Err(SignInFailed::default()),
            users::SignIn::TooMany { retry_after } => Err(SignInFailed {
                retry_after: Some(retry_after),
            }),
        }
    }

    /// The `WWW-Authenticate` challenges of a 401: `Basic` where users
    /// sign in, `Bearer` where a token is configured (or nothing else is).
    pub fn challenges(&self) -> Vec<String> {
        self.challenges_for(false, "")
    }

    /// [`Policy::challenges`], for the browser page when `page`: there a
    /// `Basic` challenge would open the browser's own sign-in dialog, so
    /// the page gets `Session` (a scheme no browser acts on; the page
    /// shows its sign-in form) in its place, naming the form under the
    /// server's path prefix `base`.
    pub fn challenges_for(&self, page: bool, base: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.users.is_some() {
            out.push(if page {
                format!("Session realm=\"wirespeed\", form=\"{base}/-/session\"")
            } else {
                "Basic realm=\"wirespeed\", charset=\"UTF-8\"".to_string()
            });
        }
        if self.access.has_tokens() || self.users.is_none() {
            out.push("Bearer realm=\"wirespeed\"".to_string());
        }
        out
    }

    /// What `who` may do at `path` (the page shows only these actions).
    pub fn rights(&self, who: Principal, path: &RelPath) -> Rights {
        if let Principal::Link(id) = who {
            let grant = self.shares.as_ref().and_then(|s| s.grant(id));
            return grant.filter(|g| g.covers(path)).map_or(Rights::NONE, |g| {
                g.rights()
                    .intersect(self.allowed)
                    .intersect(self.minters_rights(&g.by, |m| self.rights(m, path)))
            });
        }
        let Some(users) = &self.users else {
            return match who {
                Principal::Anyone | Principal::User(_) | Principal::Link(_) => self.anyone,
                // A token holder is never below anyone.
                Principal::TokenHolder => self.holder.union(self.anyone),
            };
        };
        let from_rules = match who {
            Principal::TokenHolder => return self.allowed,
            Principal::Anyone if self.access.private() => return Rights::NONE,
            Principal::Anyone => users.rules().rights(None, path.segments()),
            Principal::User(name) => users.rules().rights(Some(name), path.segments()),
            Principal::Link(_) => Rights::NONE,
        };
        from_rules.intersect(self.allowed)
    }

    /// Whether anybody may write here (a `--read-only` server writes
    /// nothing, not even a computed digest).
    pub fn writable(&self) -> bool {
        if self.users.is_some() {
            return self.allowed.may_write();
        }
        self.holder.union(self.anyone).may_write()
    }

    /// What a 401 says: which credentials this server takes.
    pub fn sign_in_hint(&self) -> &'static str {
        match self.users {
            Some(_) => "sign in: this needs a user's rights (HTTP Basic) or a valid token",
            None => "a valid bearer token is required",
        }
    }

    /// May `who` do `action` at `path`?
    pub fn decide(&self, who: Principal, action: Action, path: &RelPath) -> Decision {
        if action == Action::Metrics {
            let locked = self.access.has_tokens() || self.users.is_some();
            return match who {
                Principal::Link(_) => Decision::Forbidden("a share link reads no metrics"),
                Principal::Anyone if locked => Decision::NeedCredentials,
                _ => Decision::Allow,
            };
        }
        let needs = action.needs();
        if self.rights(who, path).contains(needs) {
            return Decision::Allow;
        }
        if who == Principal::Anyone {
            let token_could = self.access.has_tokens()
                && self.rights(Principal::TokenHolder, path).contains(needs);
            let user_could = self.users.as_ref().is_some_and(|u| {
                self.allowed.contains(needs) && u.rules().some_user_has(needs, path.segments())
            });
            if token_could || user_could {
                return Decision::NeedCredentials;
            }
        }
        Decision::Forbidden(self.refusal(action, needs))
    }

    /// The 403 text of an action the asker may not do here, saying what to
    /// do.
    fn refusal(&self, action: Action, needs: Rights) -> &'static str {
        if self.users.is_some() && self.allowed.contains(needs) {
            return match action {
                Action::Read => {
                    "reading here needs the r right, which the rules file (serve --auth) \
                     does not give you on this path"
                }
                Action::Create => {
                    "writing here needs the w right, which the rules file (serve --auth) \
                     does not give you on this path"
                }
                Action::Replace => {
                    "you cannot write that: replacing a name needs the w and d rights, which \
                     the rules file (serve --auth) does not give you on this path; upload under \
                     a new name; nothing was changed"
                }
                _ => {
                    "deleting here needs the d right, which the rules file (serve --auth) \
                     does not give you on this path"
                }
            };
        }
        match (self.preset, action) {
            (_, Action::Read) => "reading is not allowed here",
            (Preset::ReadOnly, _) => {
                "this server is read-only (serve --read-only): uploads and deletes are refused"
            }
            (_, Action::Create) => {
                "uploads are off: this server listens beyond loopback without a token; \
                 restart it with --token SECRET (clients then send Authorization: Bearer SECRET), \
                 or with --allow-upload to let anyone upload"
            }
            (_, Action::Replace) if self.anyone.may_write() => {
                "this name exists and replacing files is off (deletes and replaces are refused: \
                 this server listens beyond loopback without a token); upload under a new name, \
                 or restart the server with --allow-delete to let anyone replace and delete, \
                 or with --token SECRET; the file was left untouched"
            }
            (_, Action::Replace) => {
                "uploads are off: this server listens beyond loopback without a token; \
                 restart it with --token SECRET (clients then send Authorization: Bearer SECRET), \
                 or with --allow-upload --allow-delete to let anyone replace files"
            }
            _ => {
                "deletes are off: this server listens beyond loopback without a token; \
                 restart it with --token SECRET (clients then send Authorization: Bearer SECRET), \
                 or with --allow-delete to let anyone delete"
            }
        }
    }

    /// The start line's mode text: made from the rights above, so it says
    /// exactly what [`Policy::decide`] enforces.
    pub fn describe(&self) -> String {
        if let Some(users) = &self.users {
            return self.describe_rules(users);
        }
        let any = self.anyone;
        let hold = self.holder.union(any);
        let what = |r: Rights| match (r.may_write(), r.may_delete()) {
            (true, true) => "read-write",
            (true, false) => "uploads of new names (no replacing, no deletes)",
            (false, true) => "deletes (no uploads)",
            (false, false) => "read-only",
        };
        match self.preset {
            Preset::ReadOnly if hold.may_read() && !any.may_read() => {
                "mode: read-only (--read-only), reads need a token: uploads and deletes are refused"
                    .into()
            }
            Preset::ReadOnly => {
                "mode: read-only (--read-only): uploads and deletes are refused".into()
            }
            Preset::Token { private } => {
                let reads = if private {
                    "private, reads and writes need a token"
                } else {
                    "read-write, writes need a token"
                };
                if hold == Rights::ALL {
                    format!("mode: {reads}")
                } else {
                    format!("mode: {reads}; with it: {}", what(hold))
                }
            }
            Preset::Open if any == Rights::ALL => "mode: read-write for anyone (loopback)".into(),
            Preset::Open | Preset::Exposed => match (any.may_write(), any.may_delete()) {
                (false, false) => "mode: read-only (listening beyond loopback without --token; \
                                   use --token, or --allow-upload/--allow-delete)"
                    .into(),
                (true, false) => "mode: uploads for anyone, new names only: deletes and replaces \
                                  refused (listening beyond loopback without --token; \
                                  --allow-delete allows deletes and replaces)"
                    .into(),
                (false, true) => "mode: deletes for anyone, uploads refused (listening beyond \
                                  loopback without --token; --allow-upload allows uploads)"
                    .into(),
                (true, true) => format!(
                    "mode: {} for anyone (--allow-upload --allow-delete, listening beyond \
                     loopback without --token)",
                    what(any)
                ),
            },
        }
    }
}

impl Policy {
    /// [`Policy::describe`] with a rules file.
    fn describe_rules(&self, users: &Users) -> String {
        let rules = users.rules();
        let (n_users, n_paths) = rules.counts();
        let how = if self.sessions.is_some() {
            "HTTP Basic or the page's sign-in form"
        } else {
            "HTTP Basic"
        };
        let mut line = format!(
            "mode: rights per folder from {} ({n_users} users, {n_paths} paths; users sign in \
             with {how})",
            users.path().display()
        );
        if self.access.private() {
            line.push_str("; private (--private): nothing for anyone not signed in");
        } else if !rules.anything_public() {
            line.push_str("; nothing for anyone not signed in");
        }
        if self.preset == Preset::ReadOnly {
            line.push_str("; read-only (--read-only): uploads and deletes are refused to all");
        } else if self.access.has_tokens() {
            line.push_str("; a --token holder may read, write and delete everywhere");
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn root() -> RelPath {
        RelPath::root()
    }

    /// The model: the flags' meaning written out as plainly as possible.
    fn model(
        tokens: bool,
        private: bool,
        upload: bool,
        delete: bool,
        token_ok: bool,
        action: Action,
    ) -> Decision {
        let holder = tokens && token_ok;
        let (w, d) = (upload, delete);
        let has = |who_holds: bool| match action {
            Action::Read => !private || who_holds,
            Action::Create => (!tokens || who_holds) && w,
            Action::Replace => (!tokens || who_holds) && w && d,
            Action::Delete => (!tokens || who_holds) && d,
            Action::Metrics => !tokens || who_holds,
        };
        if has(holder) {
            Decision::Allow
        } else if !holder && tokens && has(true) {
            Decision::NeedCredentials
        } else {
            Decision::Forbidden("")
        }
    }

    fn strip(d: Decision) -> Decision {
        match d {
            Decision::Forbidden(_) => Decision::Forbidden(""),
            d => d,
        }
    }

    const ACTIONS: [Action; 5] = [
        Action::Read,
        Action::Create,
        Action::Replace,
        Action::Delete,
        Action::Metrics,
    ];

    proptest! {
        #[test]
        fn presets_match_the_model(
            tokens in any::<bool>(),
            private in any::<bool>(),
            upload in any::<bool>(),
            delete in any::<bool>(),
            exposed in any::<bool>(),
            token_ok in any::<bool>(),
            a in 0usize..5,
        ) {
            let private = private && tokens;
            let access = Access::new(if tokens { vec!["t"] } else { vec![] }, private);
            let writes = if exposed { Writes::exposed(upload, delete) } else if upload && delete {
                Writes::default()
            } else if !upload && !delete { Writes::read_only() } else { Writes::exposed(upload, delete) };
            let p = Policy::from_presets(&access, writes);
            let auth: &[u8] = if token_ok { b"Bearer t" } else { b"Bearer nope" };
            let who = p.principal(Some(auth));
            let action = ACTIONS[a];
            prop_assert_eq!(
                strip(p.decide(who, action, &root())),
                model(tokens, private, upload, delete, token_ok, action)
            );
        }
    }

    #[test]
    fn upload_without_delete_creates_but_never_replaces() {
        let p = Policy::from_presets(&Access::default(), Writes::exposed(true, false));
        let r = p.rights(Principal::Anyone, &root());
        assert_eq!(r.letters(), "rw");
        assert_eq!(
            p.decide(Principal::Anyone, Action::Create, &root()),
            Decision::Allow
        );
        let Decision::Forbidden(why) = p.decide(Principal::Anyone, Action::Replace, &root()) else {
            panic!("a replace was allowed without d");
        };
        assert!(
            why.contains("--allow-delete") && why.contains("replac"),
            "{why}"
        );
        assert!(p.describe().contains("deletes and replaces refused"));
    }

    #[test]
    fn descriptions_follow_the_rights() {
        let open = Policy::from_presets(&Access::default(), Writes::default());
        assert_eq!(open.describe(), "mode: read-write for anyone (loopback)");
        let tok = Policy::from_presets(&Access::new(["t"], false), Writes::default());
        assert_eq!(tok.describe(), "mode: read-write, writes need a token");
        assert_eq!(
            tok.decide(Principal::Anyone, Action::Create, &root()),
            Decision::NeedCredentials
        );
        let private = Policy::from_presets(&Access::new(["t"], true), Writes::default());
        assert!(private.describe().starts_with("mode: private"));
        assert_eq!(
            private.decide(Principal::Anyone, Action::Read, &root()),
            Decision::NeedCredentials
        );
        let ro = Policy::from_presets(&Access::default(), Writes::read_only());
        assert!(ro.describe().starts_with("mode: read-only (--read-only)"));
        let Decision::Forbidden(why) = ro.decide(Principal::Anyone, Action::Replace, &root())
        else {
            panic!()
        };
        assert!(why.contains("read-only"));
        let none = Policy::from_presets(&Access::default(), Writes::exposed(false, false));
        assert!(none
            .describe()
            .starts_with("mode: read-only (listening beyond loopback"));
        let del = Policy::from_presets(&Access::default(), Writes::exposed(false, true));
        assert!(del.describe().contains("uploads refused"));
        let Decision::Forbidden(why) = del.decide(Principal::Anyone, Action::Create, &root())
        else {
            panic!()
        };
        assert!(why.contains("--allow-upload"));
        assert!(format!("{tok:?}").contains("rwd"));
    }

    const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                        VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA";

    /// A generated rules file: per path, letters per principal (`None` = "*").
    type Table = Vec<(Vec<String>, Vec<(Option<usize>, Rights)>)>;

    /// The rules' model: the longest containing path decides; own letters
    /// plus "*"'s.
    fn rules_model(table: &Table, user: Option<usize>, path: &[String]) -> Rights {
        let deciding = table
            .iter()
            .filter(|(p, _)| path.starts_with(p))
            .max_by_key(|(p, _)| p.len());
        deciding.map_or(Rights::NONE, |(_, grants)| {
            grants
                .iter()
                .filter(|(g, _)| g.is_none() || (*g == user && user.is_some()))
                .fold(Rights::NONE, |r, (_, l)| r.union(*l))
        })
    }

    /// The whole policy with a rules file, in ten lines: token holders get
    /// what the presets allow; `--private` leaves anyone nothing; 401 when
    /// some credentials would do.
    fn users_model(
        t: &Table,
        who: Option<Option<usize>>,
        private: bool,
        ro: bool,
        tokens: bool,
        a: Action,
        path: &[String],
    ) -> Decision {
        let cap = if ro { Rights::READ } else { Rights::ALL };
        let rights = |w: Option<Option<usize>>| match w {
            None => cap,
            Some(None) if private => Rights::NONE,
            Some(u) => rules_model(t, u, path).intersect(cap),
        };
        let (anyone, needs) = (who == Some(None), a.needs());
        if a == Action::Metrics {
            return if anyone {
                Decision::NeedCredentials
            } else {
                Decision::Allow
            };
        }
        if rights(who).contains(needs) {
            Decision::Allow
        } else if anyone
            && ((tokens && cap.contains(needs))
                || (0..3).any(|u| rights(Some(Some(u))).contains(needs)))
        {
            Decision::NeedCredentials
        } else {
            Decision::Forbidden("")
        }
    }

    fn seg() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["a", "b"]).prop_map(str::to_owned)
    }

    fn letters() -> impl Strategy<Value = Rights> {
        (0u8..8).prop_map(|b| Rights::from_bits(b).unwrap())
    }

    proptest! {
        #[test]
        fn rules_files_match_the_model(
            paths in prop::collection::btree_map(prop::collection::vec(seg(), 0..3),
                prop::collection::btree_map(prop::option::of(0usize..3), letters(), 0..4), 0..5),
            who in prop::option::of(prop::option::of(0usize..3)),
            private in any::<bool>(),
            ro in any::<bool>(),
            tokens in any::<bool>(),
            a in 0usize..5,
            path in prop::collection::vec(seg(), 0..4),
        ) {
            let private = private && tokens;
            let mut text = String::from("[users]\n");
            for u in 0..3 {
                text.push_str(&format!("u{u} = \"{HASH}\"\n"));
            }
            let mut table: Table = Vec::new();
            for (p, grants) in &paths {
                text.push_str(&format!("[paths.\"/{}\"]\n", p.join("/")));
                for (u, l) in grants {
                    let key = u.map_or("\"*\"".to_string(), |i| format!("u{i}"));
                    text.push_str(&format!("{key} = \"{}\"\n", l.letters()));
                }
                table.push((p.clone(), grants.iter().map(|(u, l)| (*u, *l)).collect()));
            }
            let users = Arc::new(Users::from_text("gen.toml", &text).unwrap());
            let access = Access::new(if tokens { vec!["t"] } else { vec![] }, private);
            let writes = if ro { Writes::read_only() } else { Writes::default() };
            let policy = Policy::from_presets(&access, writes).with_users(users.clone());
            let principal = match who {
                None => Principal::TokenHolder,
                Some(None) => Principal::Anyone,
                Some(Some(u)) => Principal::User(users.rules().user(&format!("u{u}")).unwrap().0),
            };
            let who = if who.is_none() && !tokens { Some(None) } else { who };
            let principal = if who == Some(None) { Principal::Anyone } else { principal };
            let key = wirespeed_path::parse_request_path(&format!("/{}", path.join("/"))).unwrap();
            prop_assert_eq!(
                strip(policy.decide(principal, ACTIONS[a], &key)),
                users_model(&table, who, private, ro, tokens, ACTIONS[a], &path)
            );
        }
    }
}
