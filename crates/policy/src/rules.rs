//! `serve --auth FILE`: the rules file (TOML) — users with argon2id
//! password hashes, and rights per folder. Sans-IO: text in, [`Rules`] or
//! the line and reason it is refused out.
//!
//! ```toml
//! [users]
//! alice = "$argon2id$v=19$..."
//! [paths."/"]
//! "*" = "r"          # everyone, signed in or not
//! [paths."/alice"]
//! alice = "rwd"
//! ```
//!
//! The longest configured path containing the request decides alone; a
//! principal's rights there are its own letters plus `"*"`'s; a path under
//! no configured entry gives nothing.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use toml::Spanned;

use super::groups::{GroupSet, Groups, RawGroups};
use super::rights::parse_letters;
use super::Rights;

/// A configured user's name: interned (names only ever come from a rules
/// file, never from a request), so a principal stays `Copy` and outlives a
/// reload of the file.
/// It carries the groups a trusted proxy signed it in with (`groups.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UserName(&'static str, GroupSet);

impl UserName {
    pub(crate) fn intern(name: &str) -> UserName {
        static_names(|names| {
            if let Some(n) = names.get(name) {
                return UserName(n, GroupSet::EMPTY);
            }
            let n: &'static str = Box::leak(name.to_owned().into_boxed_str());
            names.insert(n);
            UserName(n, GroupSet::EMPTY)
        })
    }

    /// The name if some rules file (or proxy sign-in) interned it already.
    pub(crate) fn interned(name: &str) -> Option<UserName> {
        static_names(|names| names.get(name).map(|n| UserName(n, GroupSet::EMPTY)))
    }

    /// The same user, also in `groups` (named by a trusted proxy).
    pub fn with_groups(self, groups: GroupSet) -> UserName {
        UserName(self.0, self.1.union(groups))
    }

    /// The groups a trusted proxy named for this sign-in.
    pub fn proxy_groups(self) -> GroupSet {
        self.1
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

fn static_names<T>(f: impl FnOnce(&mut HashSet<&'static str>) -> T) -> T {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    f(&mut names)
}

impl std::fmt::Debug for UserName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::fmt::Display for UserName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Why a rules file is refused: the line (1-based) and what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct RulesError {
    pub line: usize,
    pub reason: String,
}

/// One configured path: its segments and who holds what there.
#[derive(Debug, Clone)]
struct Entry {
    segments: Vec<String>,
    anyone: Rights,
    users: Vec<(UserName, Rights)>,
    /// `"@group"` keys: the group's bit (`groups.rs`) and its rights.
    groups: Vec<(u8, Rights)>,
}

/// A parsed rules file.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Each user's argon2id hash (PHC string), by name.
    users: BTreeMap<String, (UserName, String)>,
    entries: Vec<Entry>,
    groups: Groups,
    quotas: super::quotas::Quotas,
    rates: super::rates::Rates,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    users: BTreeMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    paths: BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<String>>>,
    #[serde(default)]
    groups: RawGroups,
    /// Read by [`Quotas::parse`](super::quotas::Quotas::parse).
    #[serde(default, rename = "quota")]
    _quota: Option<toml::Table>,
    #[serde(default)]
    rate: super::rates::RawRates,
}

impl Rules {
    /// Parse and check a rules file's text.
    pub fn parse(text: &str) -> Result<Rules, RulesError> {
        let line = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let err = |offset: usize, reason: String| RulesError {
            line: line(offset),
            reason,
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            err(at, e.message().trim_end().to_string())
        })?;
        let mut users = BTreeMap::new();
        for (name, hash) in &raw.users {
            check_user_name(name.get_ref()).map_err(|r| err(name.span().start, r))?;
            check_hash(name.get_ref(), hash.get_ref()).map_err(|r| err(hash.span().start, r))?;
            users.insert(
                name.get_ref().clone(),
                (UserName::intern(name.get_ref()), hash.get_ref().clone()),
            );
        }
        let mut groups = Groups::parse(&raw.groups, err)?;
        let mut entries: Vec<Entry> = Vec::new();
        for (path, table) in &raw.paths {
            let segments = path_segments(path.get_ref()).map_err(|r| err(path.span().start, r))?;
            if let Some(dup) = entries.iter().find(|e| e.segments == segments) {
                return Err(err(
                    path.span().start,
                    format!(
                        "[paths.{:?}] is the same folder as [paths.{:?}]: merge them",
                        path.get_ref(),
                        join(&dup.segments)
                    ),
                ));
            }
            let mut entry = Entry {
                segments,
                anyone: Rights::NONE,
                users: Vec::new(),
                groups: Vec::new(),
            };
            for (who, letters) in table {
                let rights =
                    parse_letters(letters.get_ref()).map_err(|r| err(letters.span().start, r))?;
                if who.get_ref() == "*" {
                    entry.anyone = rights;
                    continue;
                }
                if let Some(group) = who.get_ref().strip_prefix('@') {
                    let bit = groups.define(group).map_err(|r| err(who.span().start, r))?;
                    entry.groups.push((bit, rights));
                    continue;
                }
                let known = users.get(who.get_ref()).map(|(n, _)| *n);
                let member = || groups.is_member(who.get_ref());
                let Some(name) =
                    known.or_else(|| member().then(|| UserName::intern(who.get_ref())))
                else {
                    return Err(err(
                        who.span().start,
                        format!(
                            "{:?} is named in [paths.{:?}] but missing from [users] \
                             (add it with a hash from `wirespeed passwd`, or to a [groups] list if \
                             it signs in only through the proxy, or use \"*\" for everyone)",
                            who.get_ref(),
                            path.get_ref()
                        ),
                    ));
                };
                entry.users.push((name, rights));
            }
            entries.push(entry);
        }
        let quotas = super::quotas::Quotas::parse(text, path_segments).map_err(|e| RulesError {
            line: e.line,
            reason: e.reason,
        })?;
        let rates =
            super::rates::Rates::from_raw(&raw.rate, |n| users.contains_key(n), &mut groups)
                .map_err(|(at, r)| err(at, r))?;
        Ok(Rules {
            users,
            entries,
            groups,
            quotas,
            rates,
        })
    }

    /// `who`'s own rights in `entry`: by name, and by each of its groups
    /// (listed here or named by the proxy that signed it in).
    fn own(&self, entry: &Entry, who: Option<UserName>) -> Rights {
        let Some(u) = who else {
            return Rights::NONE;
        };
        let by_name = entry.users.iter().filter(|(n, _)| n.0 == u.0);
        let mut own = by_name.fold(Rights::NONE, |acc, (_, r)| acc.union(*r));
        if !entry.groups.is_empty() {
            let groups = self.groups.of(u.as_str()).union(u.proxy_groups());
            for (bit, r) in &entry.groups {
                if groups.contains(*bit) {
                    own = own.union(*r);
                }
            }
        }
        own
    }

    /// A user the file names: with a password in `[users]`, or listed in
    /// a group (signing in only through the proxy).
    pub fn known(&self, name: &str) -> Option<UserName> {
        self.user(name)
            .map(|(u, _)| u)
            .or_else(|| self.groups.is_member(name).then(|| UserName::intern(name)))
    }

    /// The `[groups]` table.
    pub fn groups(&self) -> &Groups {
        &self.groups
    }

    /// The `[quota…]` tables.
    pub fn quotas(&self) -> &super::quotas::Quotas {
        &self.quotas
    }

    /// `[rate]`: bytes per second per principal and for the whole server.
    pub fn rates(&self) -> &super::rates::Rates {
        &self.rates
    }

    /// The number of users and of configured paths.
    pub fn counts(&self) -> (usize, usize) {
        (self.users.len(), self.entries.len())
    }

    /// A configured user's name and argon2id hash.
    pub fn user(&self, name: &str) -> Option<(UserName, &str)> {
        self.users.get(name).map(|(n, h)| (*n, h.as_str()))
    }

    /// The entry deciding `path`: the longest configured path containing it.
    fn deciding(&self, path: &[String]) -> Option<&Entry> {
        let path = nfc_path(path);
        self.entries
            .iter()
            .filter(|e| path.starts_with(&e.segments))
            .max_by_key(|e| e.segments.len())
    }

    /// Each configured folder's segments (decoded, in NFC): what `serve`
    /// checks names a folder that exists.
    pub fn entry_paths(&self) -> impl Iterator<Item = &[String]> {
        self.entries.iter().map(|e| e.segments.as_slice())
    }

    /// The rights of `who` (`None`: not signed in) at `path`.
    pub fn rights(&self, who: Option<UserName>, path: &[String]) -> Rights {
        let Some(entry) = self.deciding(path) else {
            return Rights::NONE;
        };
        self.own(entry, who).union(entry.anyone)
    }

    /// The rights of `who` at every configured path strictly below `path`,
    /// intersected (all rights when none is configured below).
    pub fn rights_below(&self, who: Option<UserName>, path: &[String]) -> Rights {
        let path = nfc_path(path);
        let path = &path[..];
        self.entries
            .iter()
            .filter(|e| e.segments.len() > path.len() && e.segments.starts_with(path))
            .fold(Rights::ALL, |acc, e| {
                acc.intersect(self.own(e, who).union(e.anyone))
            })
    }

    /// Whether some configured user holds `needs` at `path` (so signing in
    /// could help: a 401 rather than a 403).
    pub fn some_user_has(&self, needs: Rights, path: &[String]) -> bool {
        self.deciding(path).is_some_and(|e| {
            e.anyone.contains(needs)
                || e.users
                    .iter()
                    .map(|(_, r)| r)
                    .chain(e.groups.iter().map(|(_, r)| r))
                    .any(|r| r.union(e.anyone).contains(needs))
        })
    }

    /// Whether any right is given to anyone not signed in, anywhere.
    pub fn anything_public(&self) -> bool {
        self.entries.iter().any(|e| e.anyone != Rights::NONE)
    }
}

/// `s` in Unicode NFC (borrowed when it already is, as ASCII always is).
fn nfc(s: &str) -> std::borrow::Cow<'_, str> {
    use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};
    if s.is_ascii() || is_nfc_quick(s.chars()) == IsNormalized::Yes {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(s.nfc().collect())
}

/// A request's segments in NFC, as the entries are kept (borrowed, with no
/// work beyond an ASCII check, for the usual names).
fn nfc_path(path: &[String]) -> std::borrow::Cow<'_, [String]> {
    if path
        .iter()
        .all(|s| matches!(nfc(s), std::borrow::Cow::Borrowed(_)))
    {
        return std::borrow::Cow::Borrowed(path);
    }
    std::borrow::Cow::Owned(path.iter().map(|s| nfc(s).into_owned()).collect())
}

fn join(segments: &[String]) -> String {
    format!("/{}", segments.join("/"))
}

/// `"/team/docs/"` → `["team", "docs"]`; `"/My%20Docs"` (as the URL shows
/// it) → `["My Docs"]`, in NFC: an entry must govern the folder it names
/// however the admin spelled it, never fail open to the parent's rights.
fn path_segments(p: &str) -> Result<Vec<String>, String> {
    if !p.starts_with('/') {
        return Err(format!(
            "the path {p:?} must start with / (paths are as in the URL: \"/\" is the served folder)"
        ));
    }
    let mut segments = Vec::new();
    for raw in p.split('/').filter(|s| !s.is_empty()) {
        let decoded = match wirespeed_path::percent_decode(raw).map(String::from_utf8) {
            Ok(Ok(d)) => d,
            // A `%` that starts no escape is a `%` in the name.
            _ => raw.to_string(),
        };
        if decoded.contains('/') || decoded.contains('\0') {
            return Err(format!(
                "the path {p:?} has an escaped / or NUL in a folder name: write each folder \
                 between slashes"
            ));
        }
        segments.push(nfc(&decoded).into_owned());
    }
    if segments
        .iter()
        .any(|s| s == "." || s == ".." || s.contains('\\'))
    {
        return Err(format!(
            "the path {p:?} has a . or .. segment: write the folder as the URL shows it"
        ));
    }
    Ok(segments)
}

fn check_user_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "*" {
        return Err("a user needs a name (\"*\" means everyone and is not a user)".into());
    }
    if name.starts_with('@') {
        return Err(format!(
            "the user name {name:?} starts with @, which marks a group"
        ));
    }
    if name == super::shares::TOKEN_MINTER {
        // Links minted by a token holder name it as their minter.
        return Err(format!(
            "{name:?} is reserved for the token holder, not a user name"
        ));
    }
    if name.contains(':') || name.chars().any(char::is_control) {
        return Err(format!(
            "the user name {name:?} has a ':' or a control character, which HTTP Basic cannot carry"
        ));
    }
    Ok(())
}

fn check_hash(name: &str, hash: &str) -> Result<(), String> {
    if !hash.starts_with("$argon2id$") {
        return Err(format!(
            "{name}'s password is not an argon2id hash: plain-text passwords are refused; \
             make a hash with `wirespeed passwd` and paste its line"
        ));
    }
    super::password::check_hash(hash).map_err(|e| format!("{name}'s hash is malformed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                        VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA";

    fn file(body: &str) -> String {
        format!("[users]\nalice = \"{HASH}\"\nbob = \"{HASH}\"\n{body}")
    }

    #[test]
    fn entries_govern_the_folder_however_it_is_spelled() {
        // As the URL shows it, in NFD as a Mac writes it, or in NFC.
        let text = file(
            "[paths.\"/\"]\n\"*\" = \"r\"\n[paths.\"/My%20Docs\"]\nalice = \"rwd\"\n\
             [paths.\"/Cafe\u{301}\"]\nbob = \"rwd\"\n",
        );
        let rules = Rules::parse(&text).unwrap();
        let (alice, bob) = (rules.user("alice").unwrap().0, rules.user("bob").unwrap().0);
        let seg = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            rules.rights(None, &seg(&["My Docs", "a.txt"])),
            Rights::NONE
        );
        assert_eq!(rules.rights(Some(alice), &seg(&["My Docs"])), Rights::ALL);
        assert_eq!(rules.rights(None, &seg(&["Caf\u{e9}", "x"])), Rights::NONE);
        assert_eq!(rules.rights(Some(bob), &seg(&["Caf\u{e9}"])), Rights::ALL);
        assert_eq!(rules.rights(Some(bob), &seg(&["Cafe\u{301}"])), Rights::ALL);
        assert_eq!(rules.rights_below(None, &[]), Rights::NONE);
        // A % that starts no escape is a % in the name; an escaped / is refused.
        let rules = Rules::parse(&file("[paths.\"/50%\"]\nalice = \"r\"\n")).unwrap();
        assert_eq!(rules.entry_paths().next().unwrap(), &seg(&["50%"])[..]);
        let e = Rules::parse(&file("[paths.\"/a%2Fb\"]\nalice = \"r\"\n")).unwrap_err();
        assert!(e.reason.contains("escaped /"), "{e}");
    }

    fn segs(p: &str) -> Vec<String> {
        path_segments(p).unwrap()
    }

    #[test]
    fn the_issue_example() {
        let r = Rules::parse(&file(
            "[paths.\"/\"]\n\"*\" = \"r\"\n[paths.\"/alice\"]\nalice = \"rwd\"\n\
             [paths.\"/drop\"]\n\"*\" = \"w\"\n[paths.\"/team\"]\nalice = \"rwd\"\nbob = \"rw\"\n",
        ))
        .unwrap();
        let alice = r.user("alice").map(|u| u.0);
        let bob = r.user("bob").map(|u| u.0);
        assert_eq!(r.rights(None, &segs("/x/y")).letters(), "r");
        assert_eq!(r.rights(alice, &segs("/alice/a")).letters(), "rwd");
        assert_eq!(r.rights(bob, &segs("/alice/a")).letters(), "");
        assert_eq!(r.rights(None, &segs("/alicex")).letters(), "r");
        assert_eq!(r.rights(bob, &segs("/team/t")).letters(), "rw");
        assert_eq!(r.rights(None, &segs("/team")).letters(), "");
        assert_eq!(r.rights(None, &segs("/drop/f")).letters(), "w");
        assert!(r.some_user_has(Rights::READ, &segs("/team")));
        assert!(!r.some_user_has(Rights::READ, &segs("/drop/f")));
        assert_eq!(r.counts(), (2, 4));
    }

    #[test]
    fn refusals_name_the_line() {
        for (body, line, says) in [
            ("[paths.\"/\"]\n\"*\" = \"rx\"\n", 5, "unknown right 'x'"),
            ("[paths.\"/\"]\ncarol = \"r\"\n", 5, "missing from [users]"),
            (
                "[paths.\"/\"]\n\"*\" = \"r\"\n[paths.\"//\"]\n",
                6,
                "same folder",
            ),
            ("[paths.\"a\"]\n", 4, "must start with /"),
            ("[paths.\"/a/../b\"]\n", 4, ".. segment"),
            ("[paths.\"/\"\n", 4, ""),
            ("[group]\n", 4, "unknown field"),
            ("[paths.\"/\"]\n\"*\" = 1\n", 5, ""),
        ] {
            let e = Rules::parse(&file(body)).unwrap_err();
            assert_eq!(e.line, line, "{body:?}: {e}");
            assert!(e.reason.contains(says), "{body:?}: {e}");
        }
        let e = Rules::parse("[users]\n\nalice = \"hunter2\"\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.reason.contains("plain-text"), "{e}");
        let e = Rules::parse("[users]\nalice = \"$argon2id$nonsense\"\n").unwrap_err();
        assert!(e.reason.contains("malformed"), "{e}");
        let e = Rules::parse(&format!("[users]\n\"a:b\" = \"{HASH}\"\n")).unwrap_err();
        assert!(e.reason.contains("':'"), "{e}");
    }

    /// A configured path and its grants (`None`: "*").
    type Grants = (Vec<String>, Vec<(Option<usize>, Rights)>);

    /// The ten-line model: the rule as the docs state it (the longest
    /// configured path decides), with no shortcuts.
    fn model(table: &[Grants], who: Option<usize>, path: &[String]) -> Rights {
        let mut best: Option<&Grants> = None;
        for e in table {
            let contains = e.0.len() <= path.len() && e.0[..] == path[..e.0.len()];
            if contains && best.is_none_or(|b| e.0.len() > b.0.len()) {
                best = Some(e);
            }
        }
        let Some((_, grants)) = best else {
            return Rights::NONE;
        };
        let mut r = Rights::NONE;
        for (g, letters) in grants {
            if g.is_none() || *g == who && who.is_some() {
                r = r.union(*letters);
            }
        }
        r
    }

    const NAMES: [&str; 3] = ["u0", "u1", "u2"];

    fn seg() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["a", "b", "c"]).prop_map(str::to_owned)
    }

    fn letters() -> impl Strategy<Value = String> {
        prop::sample::subsequence(vec!['r', 'w', 'd'], 0..=3).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #[test]
        fn rules_match_the_model(
            paths in prop::collection::btree_map(prop::collection::vec(seg(), 0..3),
                prop::collection::btree_map(prop::option::of(0usize..3), letters(), 0..4), 0..5),
            who in prop::option::of(0usize..3),
            path in prop::collection::vec(seg(), 0..4),
        ) {
            let mut text = String::from("[users]\n");
            for n in NAMES {
                text.push_str(&format!("{n} = \"{HASH}\"\n"));
            }
            let mut table = Vec::new();
            for (p, grants) in &paths {
                text.push_str(&format!("[paths.\"/{}\"]\n", p.join("/")));
                let mut g = Vec::new();
                for (u, l) in grants {
                    let key = u.map_or("\"*\"".to_string(), |i| NAMES[i].to_string());
                    text.push_str(&format!("{key} = \"{l}\"\n"));
                    g.push((*u, parse_letters(l).unwrap()));
                }
                table.push((p.clone(), g));
            }
            let rules = Rules::parse(&text).unwrap();
            let user = who.map(|i| rules.user(NAMES[i]).unwrap().0);
            prop_assert_eq!(rules.rights(user, &path), model(&table, who, &path));
        }
    }

    #[test]
    fn the_readme_example_file_is_valid() {
        let readme = include_str!("../../../README.md");
        let start = readme
            .find("# /etc/wirespeed/users.toml")
            .expect("the example");
        let text = &readme[start..];
        let text = &text[..text.find("```").unwrap()];
        let text = text.replace("$argon2id$v=19$m=19456,t=2,p=1$...$...", HASH);
        let r = Rules::parse(&text).unwrap();
        assert_eq!(r.counts(), (3, 5));
        let bob = r.user("bob").map(|u| u.0);
        assert_eq!(r.rights(bob, &segs("/team/x")).letters(), "rws");
        assert_eq!(r.rights(None, &segs("/team/x")).letters(), "");
        assert_eq!(r.rights(None, &segs("/public/incoming/x")).letters(), "w");
        assert_eq!(r.rights(None, &segs("/public/other")).letters(), "r");
    }
}
