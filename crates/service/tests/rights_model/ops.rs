//! The operations the model test sends, and what the model expects of
//! each: the answer's class, the tree on disk afterwards, and for reads
//! which names may (and must) be shown.

use std::collections::BTreeSet;

use super::model::{self, Exp, Judge, Node, Tree, D, R, W};

#[derive(Clone, Debug)]
pub enum Op {
    GetFile(&'static str),
    /// `GET` of a folder with `Accept: application/json`.
    List(&'static str),
    /// `PROPFIND` with `Depth: 1`.
    Propfind(&'static str),
    /// `GET ?archive=tar`.
    Archive(&'static str),
    /// `GET ?q=FRAGMENT&format=json`: names below the folder.
    Search(&'static str, &'static str),
    PutNew(&'static str),
    PutOver(&'static str),
    /// tus creation with the bytes (`POST /-/uploads/P`) of a new name.
    TusNew(&'static str),
    /// The same over an existing file.
    TusOver(&'static str),
    /// Two tus partial uploads created at P, then the final joining them.
    ConcatNew(&'static str),
    /// `MKCOL` of a new folder.
    Mkcol(&'static str),
    /// An IETF draft upload of a new name: `PUT` of the first bytes with
    /// `Upload-Complete: ?0`, then `PATCH` of the rest completing it.
    IetfNew(&'static str),
    Delete(&'static str),
    Move(&'static str, &'static str),
    Copy(&'static str, &'static str),
    /// LOCK (depth infinity when true), then UNLOCK when granted.
    Lock(&'static str, bool),
    Proppatch(&'static str),
    /// `GET ?thumbnail` of a file: 415 once admitted (the tree's files are
    /// text), a refusal otherwise.
    Thumbnail(&'static str),
    /// `GET /-/trash/P` after the token holder threw `trash::THROWN` away.
    TrashList(&'static str),
    /// `POST /-/trash?restore=ID` of the entry the token holder made by
    /// deleting this path.
    TrashRestore(&'static str),
}

const FILES: [&str; 10] = [
    "/f0.txt",
    "/a/f1.txt",
    "/a/sub/f2.txt",
    "/a/b/f3.txt",
    "/c/f4.txt",
    "/c/d/f5.txt",
    "/a/ls/f2.txt",
    "/a/lo/f4.txt",
    "/a/lo/d/f5.txt",
    "/a/lf",
];
const FOLDERS: [&str; 8] = [
    "/", "/a/", "/a/sub/", "/a/b/", "/c/", "/c/d/", "/a/ls/", "/a/lo/",
];
const NEW: [&str; 7] = [
    "/n.txt",
    "/a/n.txt",
    "/a/sub/n.txt",
    "/a/b/n.txt",
    "/c/n.txt",
    "/a/ls/n.txt",
    "/a/lo/n.txt",
];
/// Folders moved and copied (none reached through a link).
const TREES: [&str; 5] = ["/a/", "/a/sub/", "/a/b/", "/c/", "/c/d/"];
const FOLDER_DESTS: [&str; 5] = ["/mv/", "/a/mv/", "/a/b/mv/", "/c/mv/", "/a/sub/mv/"];
const FILE_DESTS: [&str; 7] = [
    "/m.txt",
    "/a/m.txt",
    "/a/b/m.txt",
    "/c/m.txt",
    "/a/lo/m.txt",
    "/c/f4.txt",
    "/a/b/f3.txt",
];

/// Every operation the test may pick.
pub fn catalogue() -> Vec<Op> {
    let mut ops = Vec::new();
    for f in FILES {
        ops.push(Op::GetFile(f));
        ops.push(Op::Thumbnail(f));
        ops.push(Op::Delete(f));
        ops.push(Op::Lock(f, false));
        if f != "/a/lf" {
            ops.push(Op::PutOver(f));
            ops.push(Op::TusOver(f));
            ops.push(Op::Proppatch(f));
        }
        for to in FILE_DESTS {
            if to != f && !f.starts_with("/a/lo/") {
                ops.push(Op::Move(f, to));
                ops.push(Op::Copy(f, to));
            }
        }
    }
    for d in FOLDERS {
        ops.push(Op::List(d));
        ops.push(Op::Propfind(d));
        ops.push(Op::Archive(d));
        // Through the trigram index, and a short fragment's scan.
        ops.push(Op::Search(d, "txt"));
        ops.push(Op::Search(d, "f"));
        if d != "/" && !d.starts_with("/a/l") {
            ops.push(Op::Delete(d));
            ops.push(Op::Lock(d, false));
            ops.push(Op::Lock(d, true));
            ops.push(Op::Proppatch(d));
        }
    }
    for n in NEW {
        ops.push(Op::PutNew(n));
        ops.push(Op::TusNew(n));
        ops.push(Op::ConcatNew(n));
        ops.push(Op::IetfNew(n));
        ops.push(Op::Lock(n, false));
    }
    for n in NEW {
        ops.push(Op::Mkcol(n.trim_end_matches(".txt")));
    }
    for l in ["/a/ls", "/a/lo", "/a/lf"] {
        ops.push(Op::Delete(l));
    }
    for d in ["/", "/a/", "/c/"] {
        ops.push(Op::TrashList(d));
    }
    for t in super::trash::THROWN {
        ops.push(Op::TrashRestore(t));
    }
    for t in TREES {
        for to in FOLDER_DESTS {
            if !to.starts_with(t) {
                ops.push(Op::Move(t, to));
                ops.push(Op::Copy(t, to));
            }
        }
    }
    ops
}

impl Op {
    /// The paths the request names.
    pub fn paths(&self) -> Vec<&'static str> {
        match self {
            Op::Move(a, b) | Op::Copy(a, b) => vec![a, b],
            Op::Search(p, _) => vec![p],
            Op::GetFile(p)
            | Op::List(p)
            | Op::Propfind(p)
            | Op::Archive(p)
            | Op::PutNew(p)
            | Op::PutOver(p)
            | Op::TusNew(p)
            | Op::TusOver(p)
            | Op::ConcatNew(p)
            | Op::IetfNew(p)
            | Op::Mkcol(p)
            | Op::Delete(p)
            | Op::Lock(p, _)
            | Op::Proppatch(p)
            | Op::Thumbnail(p)
            | Op::TrashList(p)
            | Op::TrashRestore(p) => vec![p],
        }
    }
}

/// The principal's letters at each path the request names, and where a
/// symlink takes it: the first thing to read in a failure.
pub fn explain(j: &Judge, op: &Op) -> String {
    let mut out = Vec::new();
    for p in op.paths() {
        let p = trim(p);
        let mut s = format!(
            "holds {:?} at {p}",
            model::letters(j.who.rights(j.rules, &p))
        );
        let there = model::target(&p);
        if there != p {
            let r = model::letters(j.who.rights(j.rules, &there));
            s.push_str(&format!(" (a symlink: {r:?} at {there})"));
        }
        out.push(s);
    }
    out.join(", ")
}

/// `/a/b/` → `/a/b`; the root stays `/`.
pub fn trim(p: &str) -> String {
    match p.strip_suffix('/') {
        Some("") | None => p.to_string(),
        Some(t) => t.to_string(),
    }
}

/// The tree key (no leading `/`) of an absolute path.
pub fn key(p: &str) -> String {
    trim(p).trim_start_matches('/').to_string()
}

fn join(folder: &str, name: &str) -> String {
    if folder == "/" {
        format!("/{name}")
    } else {
        format!("{folder}/{name}")
    }
}

/// The node at absolute path `p` (no link followed).
fn node<'t>(tree: &'t Tree, p: &str) -> Option<&'t Node> {
    tree.get(&key(p))
}

/// Whether the bytes at `p` (links followed) are a folder.
fn is_dir(tree: &Tree, p: &str) -> bool {
    trim(p) == "/" || matches!(node(tree, &model::target(p)), Some(Node::Dir))
}

/// Names in the folder `p` reaches (links followed).
pub fn children(tree: &Tree, p: &str) -> Vec<String> {
    let real = key(&model::target(&trim(p)));
    tree.keys()
        .filter_map(|k| {
            let rest = if real.is_empty() {
                Some(k.as_str())
            } else {
                k.strip_prefix(&format!("{real}/"))
            }?;
            (!rest.contains('/')).then(|| rest.to_string())
        })
        .collect()
}

/// Keys of `real` and everything below it (links are leaves).
fn subtree(tree: &Tree, real: &str) -> Vec<String> {
    let k = key(real);
    tree.keys()
        .filter(|x| **x == k || x.starts_with(&format!("{k}/")))
        .cloned()
        .collect()
}

/// What the model expects.
#[derive(Debug)]
pub struct Expected {
    pub class: Exp,
    /// The tree after a success (after a refusal it is the initial one).
    pub after: Tree,
    /// For listings, PROPFIND and archives: paths relative to the folder
    /// that may be shown, and those that must be.
    pub may_show: BTreeSet<String>,
    pub must_show: BTreeSet<String>,
    /// For GET: the body.
    pub body: Option<String>,
}

impl Expected {
    pub fn new(class: Exp, after: Tree) -> Self {
        Expected {
            class,
            after,
            may_show: BTreeSet::new(),
            must_show: BTreeSet::new(),
            body: None,
        }
    }
}

/// Needs per check: `(bits held, crossing, bits needed)`.
fn judge(checks: &[(u8, bool, u8)]) -> Exp {
    if checks.iter().any(|(b, _, n)| b & n != *n) {
        Exp::No
    } else if checks.iter().any(|(_, x, _)| *x) {
        Exp::Either
    } else {
        Exp::Yes
    }
}

fn with(c: (u8, bool), needs: u8) -> (u8, bool, u8) {
    (c.0, c.1, needs)
}

pub fn expect(j: &Judge, tree: &Tree, op: &Op) -> Expected {
    let same = tree.clone();
    match op {
        Op::GetFile(p) => {
            let mut e = Expected::new(judge(&[with(j.content(p), R)]), same);
            if let Some(Node::File(c)) = node(tree, &model::target(p)) {
                e.body = Some(c.clone());
            }
            e
        }
        Op::List(p) | Op::Propfind(p) => {
            let f = trim(p);
            let mut e = Expected::new(judge(&[with(j.content(&f), R)]), same);
            for name in children(tree, &f) {
                let c = join(&f, &name);
                let named = j.who.rights(j.rules, &c);
                let at = j.who.rights(j.rules, &model::place(&c));
                let shown = if matches!(op, Op::List(_)) {
                    // A listing names what one holds any right on.
                    named != 0 && at != 0
                } else {
                    named & at & R != 0
                };
                if shown {
                    e.may_show.insert(name.clone());
                }
                let (bits, cross) = j.content(&c);
                if bits & R != 0 && !cross {
                    e.must_show.insert(name);
                }
            }
            e
        }
        Op::Archive(p) => {
            let f = trim(p);
            let mut e = Expected::new(judge(&[with(j.content(&f), R)]), same);
            archive_walk(j, tree, &f, "", true, true, &mut e);
            e
        }
        Op::Search(p, fragment) => {
            // What an archive may and must hold, by name; but the index
            // does not walk into a symlinked folder, so nothing below a
            // link is a name it must show.
            let f = trim(p);
            let mut e = Expected::new(judge(&[with(j.content(&f), R)]), same);
            archive_walk(j, tree, &f, "", true, true, &mut e);
            let named = |rel: &String| rel.rsplit('/').next().unwrap_or(rel).contains(fragment);
            let no_link_above = |rel: &String| {
                let mut at = f.clone();
                let mut ok = model::target(&at) == at;
                for seg in rel
                    .split('/')
                    .collect::<Vec<_>>()
                    .split_last()
                    .map_or(&[][..], |x| x.1)
                {
                    at = join(&at, seg);
                    ok &= model::target(&at) == at;
                }
                ok
            };
            e.may_show.retain(named);
            e.must_show.retain(|r| named(r) && no_link_above(r));
            e
        }
        // However the bytes arrive (one PUT, a tus creation, parts joined
        // by a final), a new name needs `w` there and a replacement `w`
        // and `d` where the bytes land.
        Op::PutNew(p) | Op::TusNew(p) | Op::ConcatNew(p) | Op::IetfNew(p) => {
            let mut after = same;
            after.insert(key(&model::place(p)), Node::File("new".into()));
            Expected::new(judge(&[with(j.name(p), W)]), after)
        }
        Op::Mkcol(p) => {
            let mut after = same;
            after.insert(key(&model::place(p)), Node::Dir);
            Expected::new(judge(&[with(j.name(p), W)]), after)
        }
        Op::PutOver(p) | Op::TusOver(p) => {
            let mut after = same;
            after.insert(key(&model::target(p)), Node::File("over".into()));
            Expected::new(judge(&[with(j.content(p), W | D)]), after)
        }
        Op::Delete(p) => {
            let f = trim(p);
            let class = judge(&[with(j.name(&f), D)]);
            let mut after = same;
            let real = model::place(&f);
            delete_walk(j, tree, &f, &real, &mut after, true);
            Expected::new(class, after)
        }
        Op::Move(from, to) => {
            let (src, dst) = (trim(from), trim(to));
            let (rsrc, rdst) = (model::place(&src), model::place(&dst));
            let mut checks = Vec::new();
            let mut after = same.clone();
            let replaced = node(tree, &rdst).is_some();
            if replaced {
                checks.push(with(j.name(&dst), W | D));
            }
            for k in subtree(tree, &rsrc) {
                let rel = &k[key(&rsrc).len()..];
                checks.push(with(j.name(&format!("{src}{rel}")), D));
                checks.push(with(j.name(&format!("{dst}{rel}")), W));
                let n = after.remove(&k).unwrap();
                after.insert(format!("{}{rel}", key(&rdst)), n);
            }
            Expected::new(judge(&checks), after)
        }
        Op::Copy(from, to) => {
            let (src, dst) = (trim(from), trim(to));
            let replaced = node(tree, &model::place(&dst)).is_some();
            let top = if replaced { W | D } else { W };
            let class = judge(&[with(j.content(&src), R), with(j.name(&dst), top)]);
            let mut after = same;
            let rdst = key(&model::place(&dst));
            if is_dir(tree, &src) {
                after.insert(rdst.clone(), Node::Dir);
                copy_walk(j, tree, &src, &dst, &rdst, &mut after);
            } else if let Some(Node::File(c)) = node(tree, &model::target(&src)) {
                after.insert(rdst, Node::File(c.clone()));
            }
            Expected::new(class, after)
        }
        Op::Lock(p, deep) => {
            let f = trim(p);
            let real = model::place(&f);
            if node(tree, &real).is_none() {
                let mut after = same;
                after.insert(key(&real), Node::File(String::new()));
                return Expected::new(judge(&[with(j.name(&f), W)]), after);
            }
            let members = if *deep {
                subtree(tree, &real)
            } else {
                vec![key(&real)]
            };
            let checks: Vec<_> = members
                .iter()
                .map(|k| with(j.name(&format!("{f}{}", &k[key(&real).len()..])), D))
                .collect();
            Expected::new(lenient_write(j, &f, &checks), same)
        }
        Op::Proppatch(p) => {
            let f = trim(p);
            let checks = vec![with(j.name(&f), D)];
            Expected::new(lenient_write(j, &f, &checks), same)
        }
        Op::Thumbnail(p) => Expected::new(judge(&[with(j.content(p), R)]), same),
        Op::TrashList(_) | Op::TrashRestore(_) => super::trash::expect(j, tree, op),
    }
}

/// LOCK and PROPPATCH of an existing name need `d` (the name's owner's
/// right); whether `w` is needed too is the server's choice: without it
/// either answer passes.
fn lenient_write(j: &Judge, f: &str, checks: &[(u8, bool, u8)]) -> Exp {
    match judge(checks) {
        Exp::Yes if j.name(f).0 & W == 0 => Exp::Either,
        e => e,
    }
}

/// Archive entries under folder `f` (named), relative names prefixed by
/// `rel`; `may`/`must`: whether the folder itself is in each set.
fn archive_walk(
    j: &Judge,
    tree: &Tree,
    f: &str,
    rel: &str,
    may: bool,
    must: bool,
    e: &mut Expected,
) {
    for name in children(tree, f) {
        let c = join(f, &name);
        let r = format!("{rel}{name}");
        let dir = is_dir(tree, &c);
        let named = j.who.rights(j.rules, &c) & j.who.rights(j.rules, &model::place(&c));
        let mut c_may = may && named & R != 0;
        if !dir {
            c_may &= j.who.rights(j.rules, &model::target(&c)) & R != 0;
        }
        let (bits, cross) = j.content(&c);
        let c_must = must && bits & R != 0 && !cross;
        if c_may {
            e.may_show.insert(r.clone());
        }
        if c_must {
            e.must_show.insert(r.clone());
        }
        if dir && (c_may || c_must) {
            archive_walk(j, tree, &c, &format!("{r}/"), c_may, c_must, e);
        }
    }
}

/// DELETE of the name `f` (at `real`): a member without `d` stays with
/// everything below it; a folder goes when all it held went. Returns
/// whether `real` went.
fn delete_walk(j: &Judge, tree: &Tree, f: &str, real: &str, after: &mut Tree, top: bool) -> bool {
    let k = key(real);
    if !top && j.name(f).0 & D == 0 {
        return false;
    }
    let mut all = true;
    if let Some(Node::Dir) = tree.get(&k) {
        let names: Vec<String> = tree
            .keys()
            .filter_map(|x| x.strip_prefix(&format!("{k}/")))
            .filter(|rest| !rest.contains('/'))
            .map(str::to_string)
            .collect();
        for name in names {
            let gone = delete_walk(j, tree, &join(f, &name), &join(real, &name), after, false);
            all &= gone;
        }
    }
    if all {
        after.remove(&k);
    }
    all
}

/// COPY below folder `src` into `dst` (real key `rdst`): an unreadable
/// member is left out, an unwritable one fails, a linked folder is not
/// followed (it fails).
fn copy_walk(j: &Judge, tree: &Tree, src: &str, dst: &str, rdst: &str, after: &mut Tree) {
    for name in children(tree, src) {
        let (s, d) = (join(src, &name), join(dst, &name));
        let rd = format!("{rdst}/{name}");
        if j.content(&s).0 & R == 0 || j.name(&d).0 & W == 0 {
            continue;
        }
        let linked = matches!(node(tree, &model::place(&s)), Some(Node::Link(_)));
        if is_dir(tree, &s) {
            if !linked {
                after.insert(rd.clone(), Node::Dir);
                copy_walk(j, tree, &s, &d, &rd, after);
            }
        } else if let Some(Node::File(c)) = node(tree, &model::target(&s)) {
            after.insert(rd, Node::File(c.clone()));
        }
    }
}
