//! Rights over whole trees and through links: what a share link holds
//! (never more than its minter, at each path, at the moment of use), what
//! an operation on a whole folder may do to each member, and when where a
//! symlink leads cannot matter. Sans-IO like the rest of the policy.

use std::net::IpAddr;

use super::{shares, unix_now, Policy, Principal, Rights, ShareId};
use wirespeed_path::RelPath;

impl Policy {
    /// The principal of a `share=` query value: a valid link, or why it is
    /// refused (logged with its reason). `None` where links are off.
    pub fn link(&self, token: &str, client: IpAddr) -> Option<Result<Principal, shares::Refusal>> {
        let shares = self.shares.as_ref()?;
        Some(match shares.verify(token, unix_now()) {
            Ok(grant) => {
                shares.remember(&grant);
                Ok(Principal::Link(ShareId(grant.id)))
            }
            Err(why) => {
                tracing::warn!(target: "wirespeed::share", client = %client, reason = ?why, "share link refused");
                Err(why)
            }
        })
    }

    /// `at(minter)` for the principal a link acts for, named `by`: a user
    /// the rules file (as reloaded) still has, or the `--token`; nothing
    /// for anyone else (a removed user's links die with the user).
    pub(super) fn minters_rights(&self, by: &str, at: impl Fn(Principal) -> Rights) -> Rights {
        if by == shares::TOKEN_MINTER {
            return at(Principal::TokenHolder);
        }
        let name = self.users.as_ref().and_then(|u| u.rules().known(by));
        name.map_or(Rights::NONE, |name| at(Principal::User(name)))
    }

    /// The rights `who` holds at `path` *and at every path below it*: what
    /// an operation on a whole tree (a folder's MOVE, a `Depth: infinity`
    /// LOCK) may do to each member. The rules file answers without a walk:
    /// below `path`, only the entries configured below it can decide
    /// differently, so the rights there are intersected in (an entry naming
    /// a folder that does not exist makes this stricter, never looser).
    pub fn rights_within(&self, who: Principal, path: &RelPath) -> Rights {
        if let Principal::Link(id) = who {
            let grant = self.shares.as_ref().and_then(|s| s.grant(id));
            return grant.filter(|g| g.covers(path)).map_or(Rights::NONE, |g| {
                // A file link covers no tree: a folder's members are not it.
                let tree = if g.path.ends_with('/') {
                    self.minters_rights(&g.by, |m| self.rights_within(m, path))
                } else {
                    self.minters_rights(&g.by, |m| self.rights(m, path))
                };
                g.rights().intersect(self.allowed).intersect(tree)
            });
        }
        let here = self.rights(who, path);
        let Some(users) = &self.users else {
            return here;
        };
        let below = match who {
            Principal::TokenHolder => return here,
            Principal::Anyone if self.access.private() => return here,
            Principal::Anyone => users.rules().rights_below(None, path.segments()),
            Principal::User(name) => users.rules().rights_below(Some(name), path.segments()),
            Principal::Link(_) => Rights::NONE,
        };
        here.intersect(below)
    }

    /// Whether `who` may mint a link granting `grant` at `path`: it must
    /// hold those rights there, and publishing them is a right of its own
    /// in the rules file (`s`, or `d`: an owner shares their own). A
    /// `--token` holder shares anything; nobody else mints.
    pub fn may_share(&self, who: Principal, grant: Rights, path: &RelPath) -> bool {
        let holds = self.rights(who, path).contains(grant);
        match who {
            Principal::TokenHolder => holds,
            Principal::User(name) => {
                let letters = self.users.as_ref().map_or(Rights::NONE, |u| {
                    u.rules().rights(Some(name), path.segments())
                });
                holds && (letters.contains(Rights::SHARE) || letters.may_delete())
            }
            Principal::Anyone | Principal::Link(_) => false,
        }
    }

    /// Whether `who` holds the same rights at every path (no rules file,
    /// not a link): then where a symlink leads cannot change a decision
    /// but for hidden names.
    pub fn uniform_for(&self, who: Principal) -> bool {
        self.hidden.is_empty()
            && match who {
                Principal::Link(_) => false,
                Principal::TokenHolder => true,
                Principal::Anyone | Principal::User(_) => self.users.is_none(),
            }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::presets::{Access, Writes};
    use crate::{Shares, Users};
    use wirespeed_path::parse_request_path;

    const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                        VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA";

    fn users(paths: &[(&str, &str, &str)], names: &[&str]) -> Arc<Users> {
        let mut text = String::from("[users]\n");
        for n in names {
            text.push_str(&format!("{n} = \"{HASH}\"\n"));
        }
        let mut last = "";
        for (path, who, letters) in paths {
            if *path != last {
                text.push_str(&format!("[paths.\"{path}\"]\n"));
                last = path;
            }
            text.push_str(&format!("{who} = \"{letters}\"\n"));
        }
        Arc::new(Users::from_text("t.toml", &text).unwrap())
    }

    fn key(p: &str) -> RelPath {
        parse_request_path(p).unwrap()
    }

    fn user(u: &Users, name: &str) -> Principal {
        Principal::User(u.rules().user(name).unwrap().0)
    }

    /// The README's household: everyone reads, alice keeps her folder.
    fn household() -> Arc<Users> {
        users(
            &[
                ("/", "\"*\"", "r"),
                ("/alice", "alice", "rwd"),
                ("/alice", "\"*\"", ""),
                ("/team", "bob", "rw"),
                ("/team/records", "bob", "r"),
            ],
            &["alice", "bob"],
        )
    }

    fn with_links(u: Arc<Users>, shares: &Arc<Shares>) -> Policy {
        Policy::from_presets(&Access::new(["t"], false), Writes::default())
            .with_users(u)
            .with_shares(shares.clone())
    }

    #[test]
    fn a_link_never_holds_more_than_its_minter_at_each_path() {
        let shares = Arc::new(Shares::new([3; 32], 3600));
        let u = household();
        let p = with_links(u.clone(), &shares);
        let bob = user(&u, "bob");
        assert!(!p.rights(bob, &key("/alice/tax.pdf")).may_read());
        let (g, _) = shares.mint("/", Rights::READ, 60, "bob", 0).unwrap();
        let link = Principal::Link(shares::ShareId(g.id));
        assert!(p.rights(link, &key("/pub.txt")).may_read());
        assert!(!p.rights(link, &key("/alice/tax.pdf")).may_read());
        assert!(!p.rights(link, &key("/alice/")).may_read());
        // An upload link for /team/ does not write into read-only records.
        let (g, _) = shares.mint("/team/", Rights::WRITE, 60, "bob", 0).unwrap();
        let up = Principal::Link(shares::ShareId(g.id));
        assert!(p.rights(up, &key("/team/new.txt")).may_write());
        assert!(!p.rights(up, &key("/team/records/x.txt")).may_write());
        assert!(!p.rights_within(up, &key("/team/")).may_write());
        // The token's links keep the server-wide cap.
        let (g, _) = shares
            .mint("/", Rights::READ, 60, shares::TOKEN_MINTER, 0)
            .unwrap();
        let t = Principal::Link(shares::ShareId(g.id));
        assert!(p.rights(t, &key("/alice/tax.pdf")).may_read());
    }

    #[test]
    fn a_removed_or_lowered_minter_takes_its_links_along() {
        let shares = Arc::new(Shares::new([3; 32], 3600));
        let p = with_links(household(), &shares);
        let (g, _) = shares
            .mint("/alice/", Rights::READ, 60, "alice", 0)
            .unwrap();
        let link = Principal::Link(shares::ShareId(g.id));
        assert!(p.rights(link, &key("/alice/a.txt")).may_read());
        // The rules file reloaded without alice: her link reads nothing.
        let gone = with_links(users(&[("/", "\"*\"", "r")], &["bob"]), &shares);
        assert_eq!(gone.rights(link, &key("/alice/a.txt")), Rights::NONE);
        // Alice lowered to nothing in her folder: the same.
        let lowered = with_links(
            users(&[("/", "\"*\"", ""), ("/alice", "alice", "w")], &["alice"]),
            &shares,
        );
        assert_eq!(lowered.rights(link, &key("/alice/a.txt")), Rights::NONE);
        // A link whose minter is unknown acts for nobody.
        let (g, _) = shares.mint("/", Rights::READ, 60, "", 0).unwrap();
        let orphan = Principal::Link(shares::ShareId(g.id));
        assert_eq!(p.rights(orphan, &key("/x")), Rights::NONE);
    }

    fn seg() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["a", "b"]).prop_map(str::to_owned)
    }

    /// Every path of up to `depth` segments from `a` and `b` below `top`.
    fn below(top: &[String], depth: usize) -> Vec<Vec<String>> {
        let mut out = vec![top.to_vec()];
        let mut frontier = vec![top.to_vec()];
        for _ in 0..depth {
            let mut next = Vec::new();
            for p in &frontier {
                for s in ["a", "b"] {
                    let mut q = p.clone();
                    q.push(s.to_string());
                    next.push(q);
                }
            }
            out.extend(next.iter().cloned());
            frontier = next;
        }
        out
    }

    proptest! {
        /// `rights_within` is the intersection of the rights at every path
        /// of the tree, found by brute force over a tree deeper than any
        /// configured entry.
        #[test]
        fn rights_within_is_the_least_over_the_tree(
            entries in prop::collection::btree_map(
                prop::collection::vec(seg(), 0..3),
                (0u8..8, 0u8..8),
                0..5,
            ),
            who in 0usize..3,
            top in prop::collection::vec(seg(), 0..3),
        ) {
            let mut text = format!("[users]\nu0 = \"{HASH}\"\n");
            for (p, (own, any)) in &entries {
                let (own, any) = (Rights::from_bits(*own).unwrap(), Rights::from_bits(*any).unwrap());
                text.push_str(&format!(
                    "[paths.\"/{}\"]\nu0 = \"{}\"\n\"*\" = \"{}\"\n",
                    p.join("/"), own.letters(), any.letters()
                ));
            }
            let u = Arc::new(Users::from_text("g.toml", &text).unwrap());
            let p = Policy::from_presets(&Access::default(), Writes::default()).with_users(u.clone());
            let principal = match who {
                0 => Principal::Anyone,
                1 => user(&u, "u0"),
                _ => Principal::TokenHolder,
            };
            let least = below(&top, 3).iter().fold(Rights::ALL, |acc, q| {
                let k = RelPath::from_segments(q).unwrap();
                acc.intersect(p.rights(principal, &k))
            });
            let k = RelPath::from_segments(&top).unwrap();
            prop_assert_eq!(p.rights_within(principal, &k), least);
        }
    }
}
