//! The reference model: rules files of nested entries, a fixed tree with
//! symlinks inside the root, principals, and what each operation may do at
//! every path it touches. Pure: no server, no disk.

use std::collections::BTreeMap;

use wirespeed_testkit::Rng;

pub const R: u8 = 1;
pub const W: u8 = 2;
pub const D: u8 = 4;

/// The rules entries a generated file may have (nested two levels).
pub const ENTRIES: [&str; 4] = ["/", "/a", "/a/b", "/c"];
/// Who a table names: the two users and everyone.
pub const WHO: [&str; 3] = ["u0", "u1", "*"];
pub const USERS: [&str; 2] = ["u0", "u1"];

pub fn letters(bits: u8) -> String {
    [(R, 'r'), (W, 'w'), (D, 'd')]
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, c)| *c)
        .collect()
}

/// A rules file: which users exist, and per entry the letters of each of
/// `WHO` it names.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    pub users: Vec<&'static str>,
    pub table: BTreeMap<&'static str, BTreeMap<&'static str, u8>>,
}

impl Rules {
    pub fn generate(rng: &mut Rng) -> Rules {
        let mut table = BTreeMap::new();
        for (i, e) in ENTRIES.iter().enumerate() {
            // The root most often, so that the deeper entries matter.
            let keep = if i == 0 { 5 } else { 4 };
            if rng.below(6) >= keep {
                continue;
            }
            let mut row = BTreeMap::new();
            for who in WHO {
                if rng.below(5) < 3 {
                    row.insert(who, rng.below(8) as u8);
                }
            }
            table.insert(*e, row);
        }
        Rules {
            users: USERS.to_vec(),
            table,
        }
    }

    /// The file's text, with `hash` for every user's password.
    pub fn text(&self, hash: &dyn Fn(&str) -> String) -> String {
        let mut t = String::from("[users]\n");
        for u in &self.users {
            t.push_str(&format!("{u} = \"{}\"\n", hash(u)));
        }
        for (e, row) in &self.table {
            t.push_str(&format!("[paths.\"{e}\"]\n"));
            for (who, bits) in row {
                t.push_str(&format!("\"{who}\" = \"{}\"\n", letters(*bits)));
            }
        }
        t
    }

    /// The same file without the hashes, for failure reports.
    pub fn show(&self) -> String {
        self.text(&|_| "…".to_string())
    }

    /// The entry that decides `path` (a `/`-joined absolute path).
    pub fn entry(&self, path: &str) -> Option<&'static str> {
        self.table
            .keys()
            .filter(|e| contains(e, path))
            .max_by_key(|e| e.len())
            .copied()
    }

    /// The letters of `user` (`None`: anyone) at `path`.
    pub fn rights(&self, user: Option<&str>, path: &str) -> u8 {
        if user.is_some_and(|u| !self.users.contains(&u)) {
            return 0;
        }
        let Some(e) = self.entry(path) else {
            return 0;
        };
        let row = &self.table[e];
        let own = user.and_then(|u| row.get(u)).copied().unwrap_or(0);
        own | row.get("*").copied().unwrap_or(0)
    }

    /// `user`'s letters lowered at random (a subset at each entry), or the
    /// user removed from the file altogether.
    pub fn lowered(&self, rng: &mut Rng, user: &'static str, remove: bool) -> Rules {
        let mut out = self.clone();
        if remove {
            out.users.retain(|u| *u != user);
        }
        for row in out.table.values_mut() {
            if remove {
                row.remove(user);
            } else if let Some(bits) = row.get_mut(user) {
                *bits &= rng.below(8) as u8;
            }
        }
        out
    }
}

/// Whether entry `e` contains `path`.
pub fn contains(e: &str, path: &str) -> bool {
    e == "/" || path == e || path.starts_with(&format!("{e}/"))
}

/// The tree every operation starts from (paths without the leading `/`):
/// files with their content, folders, and symlinks inside the root with
/// their target as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    File(String),
    Dir,
    Link(String),
}

pub const FILES: [&str; 6] = [
    "f0.txt",
    "a/f1.txt",
    "a/sub/f2.txt",
    "a/b/f3.txt",
    "c/f4.txt",
    "c/d/f5.txt",
];
pub const DIRS: [&str; 5] = ["a", "a/sub", "a/b", "c", "c/d"];
/// name → (target as written, the target as an absolute path): one to a
/// folder under the same entry as the link (`/a`), one to a folder under
/// another (`/c`), one to a file below it (so that a DELETE of the folder
/// removes the link before its target).
pub const LINKS: [(&str, &str, &str); 3] = [
    ("a/ls", "sub", "/a/sub"),
    ("a/lo", "../c", "/c"),
    ("a/lf", "sub/f2.txt", "/a/sub/f2.txt"),
];

pub fn content(path: &str) -> String {
    format!("<content of {path}>")
}

pub type Tree = BTreeMap<String, Node>;

pub fn initial_tree() -> Tree {
    let mut t = Tree::new();
    for d in DIRS {
        t.insert(d.to_string(), Node::Dir);
    }
    for f in FILES {
        t.insert(f.to_string(), Node::File(content(f)));
    }
    for (l, target, _) in LINKS {
        t.insert(l.to_string(), Node::Link(target.to_string()));
    }
    t
}

/// `/x/y` for key `x/y`, `/` for the root's key `""`.
pub fn abs(key: &str) -> String {
    format!("/{key}")
}

/// `path` (absolute, no trailing slash) with its first link prefix
/// replaced by the link's target; `follow_last`: the name itself too.
fn resolve_once(path: &str, follow_last: bool) -> Option<String> {
    for (l, _, to) in LINKS {
        let l = abs(l);
        if path == l && follow_last {
            return Some(to.to_string());
        }
        if let Some(rest) = path.strip_prefix(&format!("{l}/")) {
            return Some(format!("{to}/{rest}"));
        }
    }
    None
}

/// Where a name is on disk: links in its folders followed, the name
/// itself not (what DELETE, MOVE and LOCK act on).
pub fn place(path: &str) -> String {
    let mut p = path.to_string();
    for _ in 0..4 {
        match resolve_once(&p, false) {
            Some(n) => p = n,
            None => break,
        }
    }
    p
}

/// Where the bytes are: every link followed (what GET, PUT, listings and
/// archives reach).
pub fn target(path: &str) -> String {
    let mut p = path.to_string();
    for _ in 0..4 {
        match resolve_once(&p, true) {
            Some(n) => p = n,
            None => break,
        }
    }
    p
}

/// The minter of a link the `--token` holder minted.
pub const TOKEN_MINTER: &str = "--token";

/// A share link: minted by a user (or the token holder) for a folder (`r` or an upload link,
/// `w`) or a file (`r`).
#[derive(Clone, Debug)]
pub struct Link {
    pub minter: &'static str,
    pub path: &'static str,
    pub rights: u8,
}

impl Link {
    pub fn covers(&self, path: &str) -> bool {
        match self.path.strip_suffix('/') {
            Some("") => true,
            Some(folder) => path == folder || path.starts_with(&format!("{folder}/")),
            None => path == self.path,
        }
    }
}

/// Who asks.
#[derive(Clone, Debug)]
pub enum Who {
    Anyone,
    User(&'static str),
    Token,
    Link(Link),
}

impl Who {
    /// The letters at `path` (one name, no link followed).
    pub fn rights(&self, rules: &Rules, path: &str) -> u8 {
        match self {
            Who::Anyone => rules.rights(None, path),
            Who::User(u) => rules.rights(Some(u), path),
            Who::Token => R | W | D,
            // A link the token holder minted keeps the server-wide rights.
            Who::Link(l) if l.covers(path) && l.minter == TOKEN_MINTER => l.rights,
            Who::Link(l) if l.covers(path) => l.rights & rules.rights(Some(l.minter), path),
            Who::Link(_) => 0,
        }
    }
}

/// What the model expects of one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exp {
    Yes,
    No,
    /// The path crosses a symlink into another rules entry: the server may
    /// refuse it (a link whose target another entry governs) or allow it,
    /// but only where the rights at both places allow.
    Either,
}

/// The rights decision of one principal under one rules file.
pub struct Judge<'a> {
    pub rules: &'a Rules,
    pub who: &'a Who,
}

impl Judge<'_> {
    /// The letters at both the name and where `resolve` takes it, and
    /// whether the two are under different entries.
    fn both(&self, path: &str, resolve: fn(&str) -> String) -> (u8, bool) {
        let there = resolve(path);
        let bits = self.who.rights(self.rules, path) & self.who.rights(self.rules, &there);
        (
            bits,
            there != path && self.rules.entry(path) != self.rules.entry(&there),
        )
    }

    /// Rights reaching the bytes at `path`.
    pub fn content(&self, path: &str) -> (u8, bool) {
        self.both(path, target)
    }

    /// Rights on the name `path` itself.
    pub fn name(&self, path: &str) -> (u8, bool) {
        self.both(path, place)
    }
}
