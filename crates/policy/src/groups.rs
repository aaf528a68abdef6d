//! Groups in the rules file, and sign-in by a trusted identity proxy.
//!
//! ```toml
//! [groups]
//! team = ["alice", "carol"]   # carol has no [users] line: she signs in
//!                             # only through the proxy (--user-header)
//! [paths."/team"]
//! "@team" = "rw"              # a group goes wherever a user name does
//! ```
//!
//! A principal's groups are those the rules file lists it in, plus (signed
//! in by a `--trusted-proxy` peer) those the proxy's groups header names
//! that the rules file knows. A group is one bit of a [`GroupSet`], so a
//! principal stays `Copy`; names get their bits from rules files only,
//! never from a request, which bounds them to [`MAX_GROUPS`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock};

use toml::Spanned;

use super::rules::UserName;

/// The most distinct group names a process knows (over every reload).
pub const MAX_GROUPS: usize = 64;

/// The most distinct names signed in by the proxy that the rules file
/// does not list: each is kept for the process's life (names are interned
/// so that a principal stays `Copy`), so a proxy sending ever new names
/// cannot grow memory without bound. Past it, such names are refused.
pub const MAX_PROXY_ONLY_NAMES: usize = 10_000;

/// The longest user or group name taken from a header.
const MAX_NAME_BYTES: usize = 256;

/// A set of groups, one bit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GroupSet(u64);

impl GroupSet {
    pub const EMPTY: GroupSet = GroupSet(0);

    pub fn union(self, other: GroupSet) -> GroupSet {
        GroupSet(self.0 | other.0)
    }

    pub fn contains(self, bit: u8) -> bool {
        self.0 & (1u64 << bit) != 0
    }

    fn with(self, bit: u8) -> GroupSet {
        GroupSet(self.0 | (1u64 << bit))
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

fn registry() -> std::sync::MutexGuard<'static, Vec<String>> {
    static NAMES: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The bit of group `name`, giving it one if it has none (rules files
/// only); `None` once [`MAX_GROUPS`] names have bits.
fn bit_for_new(name: &str) -> Option<u8> {
    let mut names = registry();
    if let Some(i) = names.iter().position(|n| n == name) {
        return u8::try_from(i).ok();
    }
    if names.len() >= MAX_GROUPS {
        return None;
    }
    names.push(name.to_owned());
    u8::try_from(names.len() - 1).ok()
}

/// The `[groups]` table, checked: who is in which group, and the bit of
/// each group the file defines or names as `"@group"`.
#[derive(Debug, Clone, Default)]
pub struct Groups {
    /// Each listed member's groups.
    members: BTreeMap<String, (UserName, GroupSet)>,
    /// Every group the file names, by name.
    known: HashMap<String, u8>,
}

/// The raw `[groups]` table as TOML gives it.
pub(crate) type RawGroups = BTreeMap<Spanned<String>, Vec<Spanned<String>>>;

impl Groups {
    /// Check `[groups]`: group names as user names are, members as user
    /// names; `err` makes the refusal at a byte offset.
    pub(crate) fn parse<E>(raw: &RawGroups, err: impl Fn(usize, String) -> E) -> Result<Groups, E> {
        let mut g = Groups::default();
        for (group, members) in raw {
            let bit = g
                .define(group.get_ref())
                .map_err(|r| err(group.span().start, r))?;
            for m in members {
                check_name(m.get_ref()).map_err(|r| err(m.span().start, r))?;
                let entry = g
                    .members
                    .entry(m.get_ref().clone())
                    .or_insert_with(|| (UserName::intern(m.get_ref()), GroupSet::EMPTY));
                entry.1 = entry.1.with(bit);
            }
        }
        Ok(g)
    }

    /// Give group `name` its bit (a `[groups]` key or an `"@name"` in a
    /// path table).
    pub(crate) fn define(&mut self, name: &str) -> Result<u8, String> {
        check_name(name)?;
        if let Some(bit) = self.known.get(name) {
            return Ok(*bit);
        }
        let bit = bit_for_new(name).ok_or_else(|| {
            format!("too many groups: a server knows at most {MAX_GROUPS} group names")
        })?;
        self.known.insert(name.to_owned(), bit);
        Ok(bit)
    }

    /// A member listed in `[groups]` (who may have no `[users]` line).
    pub fn member(&self, name: &str) -> Option<UserName> {
        self.members.get(name).map(|(u, _)| *u)
    }

    /// The groups the file lists `user` in.
    pub fn of(&self, user: UserName) -> GroupSet {
        self.members
            .get(user.as_str())
            .map_or(GroupSet::EMPTY, |(_, g)| *g)
    }

    /// The groups among `header` (names separated by commas or white
    /// space, as Authelia, Authentik and oauth2-proxy send them) that this
    /// file names; the rest mean nothing here and are dropped.
    pub fn from_header(&self, header: &str) -> GroupSet {
        split_header(header)
            .filter_map(|n| self.known.get(n).copied())
            .fold(GroupSet::EMPTY, GroupSet::with)
    }
}

/// The names in a groups header: separated by commas and/or white space.
pub fn split_header(header: &str) -> impl Iterator<Item = &str> {
    header
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
}

/// What a user or group name may be: what HTTP Basic can carry, not `*`,
/// not the token's name, not starting with `@` (which marks a group).
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "*" {
        return Err("a name is needed (\"*\" means everyone)".into());
    }
    if name.starts_with('@') {
        return Err(format!(
            "{name:?} starts with @, which marks a group where a user could stand: \
             write the group's name without it in [groups]"
        ));
    }
    if name == super::shares::TOKEN_MINTER {
        return Err(format!("{name:?} is reserved for the token holder"));
    }
    if name.len() > MAX_NAME_BYTES || name.contains(':') || name.chars().any(char::is_control) {
        return Err(format!(
            "the name {name:?} is longer than {MAX_NAME_BYTES} bytes or has a ':' or a control \
             character"
        ));
    }
    Ok(())
}

/// `--user-header` and `--groups-header`: the fields a `--trusted-proxy`
/// peer signs people in with (only such peers: from anyone else they are
/// ignored, and logged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxySignIn {
    pub user_header: String,
    pub groups_header: Option<String>,
}

/// The interned names of users the proxy signed in whom the rules file
/// does not list, counted against [`MAX_PROXY_ONLY_NAMES`].
fn proxy_only_name(name: &str) -> Option<UserName> {
    static SEEN: OnceLock<Mutex<usize>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(u) = UserName::interned(name) {
        return Some(u);
    }
    if *seen >= MAX_PROXY_ONLY_NAMES {
        return None;
    }
    *seen += 1;
    Some(UserName::intern(name))
}

/// Why a proxy's sign-in is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxySignInError {
    #[error("the user header's name is not one a user may have: {0}")]
    BadName(String),
    #[error("no rules file (serve --auth) names what a proxy's user may do")]
    NoRules,
    #[error("too many distinct names from the proxy that the rules file does not list")]
    TooManyNames,
}

/// The user the proxy names (with the groups it names, those the rules
/// file knows): a listed user keeps its name; another gets one, bounded.
pub(crate) fn signed_in(
    rules: &super::rules::Rules,
    name: &str,
    groups_header: Option<&str>,
) -> Result<UserName, ProxySignInError> {
    let name = name.trim();
    check_name(name).map_err(ProxySignInError::BadName)?;
    let user = match rules.known(name) {
        Some(u) => u,
        None => proxy_only_name(name).ok_or(ProxySignInError::TooManyNames)?,
    };
    let groups = groups_header.map_or(GroupSet::EMPTY, |h| rules.groups().from_header(h));
    Ok(user.with_groups(groups))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_split_on_commas_and_spaces() {
        let v: Vec<_> = split_header(" admins,dev  ops,\tx ,").collect();
        assert_eq!(v, ["admins", "dev", "ops", "x"]);
        assert_eq!(split_header("").count(), 0);
        assert_eq!(split_header(" , ").count(), 0);
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", "*", "@team", "a:b", "a\nb", "--token"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"x".repeat(MAX_NAME_BYTES + 1)).is_err());
        assert!(check_name("carol@example.org").is_ok());
    }

    const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                        VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA";

    fn rules() -> crate::rules::Rules {
        let text = format!(
            "[users]\nalice = \"{HASH}\"\n[groups]\nteam = [\"alice\", \"carol\"]\n\
             [paths.\"/team\"]\n\"@team\" = \"rw\"\ncarol = \"d\"\n\
             [paths.\"/ops\"]\n\"@ops\" = \"r\"\n"
        );
        crate::rules::Rules::parse(&text).unwrap()
    }

    fn segs(p: &str) -> Vec<String> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    #[test]
    fn group_rights_reach_listed_members_and_the_proxys_groups() {
        let r = rules();
        let alice = r.known("alice");
        let carol = r.known("carol");
        assert!(
            carol.is_some() && r.user("carol").is_none(),
            "carol has no password"
        );
        assert_eq!(r.rights(alice, &segs("/team/x")).letters(), "rw");
        assert_eq!(r.rights(carol, &segs("/team/x")).letters(), "rwd");
        assert_eq!(r.rights(alice, &segs("/ops")).letters(), "");
        // Someone the file does not list: only what the proxy's groups give.
        let dave = signed_in(&r, "dave", Some("ops, elsewhere")).unwrap();
        assert_eq!(r.rights(Some(dave), &segs("/ops/a")).letters(), "r");
        assert_eq!(r.rights(Some(dave), &segs("/team")).letters(), "");
        let dave = signed_in(&r, "dave", Some("team")).unwrap();
        assert_eq!(r.rights(Some(dave), &segs("/team")).letters(), "rw");
        assert_eq!(r.rights_below(Some(dave), &[]).letters(), "");
        assert!(r.some_user_has(crate::Rights::READ, &segs("/ops")));
        // A listed user keeps its own groups and adds the proxy's.
        let alice = signed_in(&r, "alice", Some("ops")).unwrap();
        assert_eq!(r.rights(Some(alice), &segs("/ops")).letters(), "r");
        assert_eq!(r.rights(Some(alice), &segs("/team")).letters(), "rw");
        assert!(matches!(
            signed_in(&r, "a:b", None),
            Err(ProxySignInError::BadName(_))
        ));
    }

    #[test]
    fn refusals() {
        let bad = [
            // A name without password nor group is a typo.
            "[paths.\"/\"]\ndave = \"r\"\n",
            "[groups]\n\"@x\" = [\"a\"]\n",
            "[groups]\nx = [\"*\"]\n",
            "[paths.\"/\"]\n\"@\" = \"r\"\n",
            "[users]\n\"@a\" = \"x\"\n",
        ];
        for text in bad {
            assert!(crate::rules::Rules::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn sets() {
        let s = GroupSet::EMPTY.with(3).union(GroupSet::EMPTY.with(63));
        assert!(s.contains(3) && s.contains(63) && !s.contains(4));
        assert!(GroupSet::EMPTY.is_empty() && !s.is_empty());
    }
}
