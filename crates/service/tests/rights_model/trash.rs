//! The trash in the model. Before a trash operation the `--token` holder
//! throws paths of the initial tree away (a file, a folder holding a rules
//! entry of its own and symlinks, a plain folder); then the principal
//! lists the trash or restores an entry. What it may see and restore is
//! what it could delete whole at the entry's place now: a folder went to
//! the trash whole only when its deleter held `d` at every member, so its
//! return is judged the same way, member by member.

use super::model::{Exp, Judge, Tree, D, R};
use super::ops::{key, trim, Expected, Op};

/// What the token holder throws away, disjoint trees of the initial one.
pub const THROWN: [&str; 3] = ["/f0.txt", "/a/", "/c/d/"];

/// The paths thrown away before `op`; `None` for an operation that does
/// not look at the trash.
pub fn thrown(op: &Op) -> Option<Vec<&'static str>> {
    match op {
        Op::TrashList(_) => Some(THROWN.to_vec()),
        Op::TrashRestore(p) => Some(vec![p]),
        _ => None,
    }
}

/// `tree` without the thrown trees: the storage before the operation.
pub fn without(tree: &Tree, thrown: &[&str]) -> Tree {
    let mut out = tree.clone();
    for t in thrown {
        let k = key(t);
        out.retain(|x, _| *x != k && !x.starts_with(&format!("{k}/")));
    }
    out
}

/// Whether the principal may delete `p` and every member of it in `tree`
/// (names, not where symlinks lead: a DELETE removes the link itself).
fn deletable_whole(j: &Judge, tree: &Tree, p: &str) -> bool {
    let k = key(p);
    let holds = |path: &str| j.who.rights(j.rules, path) & D != 0;
    holds(&trim(p))
        && tree
            .keys()
            .filter(|x| x.starts_with(&format!("{k}/")))
            .all(|x| holds(&format!("/{x}")))
}

/// Whether `entry` (a thrown path) is at or below the folder `folder`.
fn below(entry: &str, folder: &str) -> bool {
    let (e, f) = (trim(entry), trim(folder));
    f == "/" || e == f || e.starts_with(&format!("{f}/"))
}

pub fn expect(j: &Judge, tree: &Tree, op: &Op) -> Expected {
    match op {
        Op::TrashList(p) => {
            let (bits, cross) = j.content(&trim(p));
            let class = match (bits & R != 0, cross) {
                (false, _) => Exp::No,
                (true, true) => Exp::Either,
                (true, false) => Exp::Yes,
            };
            let mut e = Expected::new(class, without(tree, &THROWN));
            for t in THROWN {
                if below(t, p) && deletable_whole(j, tree, t) {
                    e.may_show.insert(trim(t));
                    e.must_show.insert(trim(t));
                }
            }
            e
        }
        Op::TrashRestore(p) => {
            let class = if deletable_whole(j, tree, p) {
                Exp::Yes
            } else {
                Exp::No
            };
            // Restored, the tree is the initial one again.
            Expected::new(class, tree.clone())
        }
        _ => unreachable!("not a trash operation: {op:?}"),
    }
}

/// The paths a trash listing's answer names.
pub fn listed(r: &wirespeed_testkit::Resp) -> std::collections::BTreeSet<String> {
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
    v["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["path"].as_str())
        .map(trim)
        .collect()
}
