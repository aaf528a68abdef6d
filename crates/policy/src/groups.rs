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

/// The most distinct group names a process knows (over every reload).
pub const MAX_GROUPS: usize = 64;

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
    members: BTreeMap<String, GroupSet>,
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
                let entry = g.members.entry(m.get_ref().clone()).or_default();
                *entry = entry.with(bit);
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

    /// Whether `name` is listed in `[groups]` (and may have no `[users]`
    /// line).
    pub fn is_member(&self, name: &str) -> bool {
        self.members.contains_key(name)
    }

    /// The groups the file lists the user `name` in.
    pub fn of(&self, name: &str) -> GroupSet {
        self.members.get(name).copied().unwrap_or_default()
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
