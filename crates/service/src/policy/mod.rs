//! The one answer to "may this principal do this action on this path?".
//!
//! Every route asks [`Policy::decide`] (through `respond::admit`) instead of
//! deciding on its own, and `serve` prints [`Policy::describe`], so what the
//! start line promises is what is enforced. Sans-IO: no request, no file.
//!
//! Rights follow the users issue (27): `r` reads (GET/HEAD, listings,
//! digests, OPTIONS on a private server), `w` writes new names (PUT/POST of
//! a new name, MKCOL, resumable creations and appends, the destination of a
//! MOVE), `d` deletes and replaces (DELETE, the source of a MOVE, and any
//! write over an existing name: replacing a file destroys it). Today's
//! flags are presets ([`Policy::from_presets`]) giving rights to two
//! principals: anyone, and the holder of a `--token`.

pub mod hidden;
pub mod origin;
pub mod presets;

use crate::path::RelPath;
use crate::policy::presets::{Access, Writes, WritesOff};

/// A set of rights (`r`, `w`, `d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rights(u8);

impl Rights {
    pub const NONE: Rights = Rights(0);
    /// Read files and listings.
    pub const READ: Rights = Rights(1);
    /// Write new names.
    pub const WRITE: Rights = Rights(2);
    /// Delete, and replace existing names.
    pub const DELETE: Rights = Rights(4);
    pub const ALL: Rights = Rights(7);

    /// Whether every right of `other` is in `self`.
    pub fn contains(self, other: Rights) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn union(self, other: Rights) -> Rights {
        Rights(self.0 | other.0)
    }

    /// `r`, `w`, `d` as the rules file of issue 27 writes them.
    pub fn letters(self) -> String {
        [
            (Rights::READ, 'r'),
            (Rights::WRITE, 'w'),
            (Rights::DELETE, 'd'),
        ]
        .iter()
        .filter(|(r, _)| self.contains(*r))
        .map(|(_, c)| *c)
        .collect()
    }

    pub fn may_read(self) -> bool {
        self.contains(Rights::READ)
    }

    pub fn may_write(self) -> bool {
        self.contains(Rights::WRITE)
    }

    /// Delete, and write over an existing name.
    pub fn may_delete(self) -> bool {
        self.contains(Rights::DELETE)
    }
}

/// Who asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Principal {
    /// No (valid) credentials.
    Anyone,
    /// A valid `--token` bearer.
    TokenHolder,
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
    /// A token would allow it: 401 with `WWW-Authenticate`.
    NeedToken,
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
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("anyone", &self.anyone.letters())
            .field("holder", &self.holder.letters())
            .field("preset", &self.preset)
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
        }
    }

    /// Who presents this `Authorization` value.
    pub fn principal(&self, authorization: Option<&[u8]>) -> Principal {
        if self.access.has_tokens() && self.access.allows(authorization) {
            Principal::TokenHolder
        } else {
            Principal::Anyone
        }
    }

    /// What `who` may do at `path` (the page shows only these actions).
    /// Rights do not depend on the path yet; per-folder rules (issue 27)
    /// will.
    pub fn rights(&self, who: Principal, _path: &RelPath) -> Rights {
        match who {
            Principal::Anyone => self.anyone,
            // A token holder is never below anyone.
            Principal::TokenHolder => self.holder.union(self.anyone),
        }
    }

    /// Whether anybody may write here (a `--read-only` server writes
    /// nothing, not even a computed digest).
    pub fn writable(&self) -> bool {
        self.holder.union(self.anyone).may_write()
    }

    /// May `who` do `action` at `path`?
    pub fn decide(&self, who: Principal, action: Action, path: &RelPath) -> Decision {
        if action == Action::Metrics {
            return match (who, self.access.has_tokens()) {
                (Principal::Anyone, true) => Decision::NeedToken,
                _ => Decision::Allow,
            };
        }
        let needs = action.needs();
        if self.rights(who, path).contains(needs) {
            return Decision::Allow;
        }
        if who == Principal::Anyone
            && self.access.has_tokens()
            && self.rights(Principal::TokenHolder, path).contains(needs)
        {
            return Decision::NeedToken;
        }
        Decision::Forbidden(self.refusal(action))
    }

    /// The 403 text of an action nobody may do here, saying what to do.
    fn refusal(&self, action: Action) -> &'static str {
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
            Decision::NeedToken
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
            Decision::NeedToken
        );
        let private = Policy::from_presets(&Access::new(["t"], true), Writes::default());
        assert!(private.describe().starts_with("mode: private"));
        assert_eq!(
            private.decide(Principal::Anyone, Action::Read, &root()),
            Decision::NeedToken
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
}
