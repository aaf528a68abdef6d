//! Rights where a path really is: a path through a symlink inside the
//! served folder is judged where it is named and where it leads, by every
//! front that reaches bytes (the request's path, a COPY's members, an
//! archive's entries). Kept apart from `respond.rs` (what every request
//! passes first) since only paths that pass through a link pay for it.

use wirespeed_net::Error;

use crate::answers::IntoAnswer as _;
use crate::path::RelPath;
use crate::policy::{Action, Decision, Policy, Principal};
use crate::storage::{Kind, Storage};

/// Rights follow the bytes: when `path` leads through a symlink elsewhere
/// in the served tree, `who` must be allowed `action` there too (and the
/// place must not be hidden). Reads follow the last name; writes, deletes
/// and moves act on a link itself, so only the folders on the way count.
/// Free where every path holds the same rights for `who`.
pub(crate) async fn check_real<S: Storage>(
    storage: &S,
    policy: &Policy,
    who: Principal,
    action: Action,
    path: &RelPath,
) -> Result<(), Error> {
    if policy.uniform_for(who) {
        return Ok(());
    }
    let real = match storage.real_path(path, action == Action::Read).await {
        Ok(None) => return Ok(()),
        Ok(Some(real)) => real,
        Err(e) => return Err(e.into_answer()),
    };
    // A hidden place is missing, whoever asks.
    if policy.hides(&real) {
        return Err(Error::status(404, "not found"));
    }
    let decided = policy.decide(who, action, &real);
    // A link reveals nothing beyond itself, as anywhere it does not reach
    // (and it never holds `d`, so it never replaces: the check below is
    // for the others).
    if matches!(who, Principal::Link(_)) {
        return match decided {
            Decision::Allow => Ok(()),
            _ => Err(Error::status(404, "not found")),
        };
    }
    // A write over a file that exists where the path leads replaces it
    // there: `d` there, not only where it is named (the guard at commit
    // judges the name; the gap is a file created there meanwhile). An
    // empty file loses nothing: the one a principal's own LOCK made stays
    // theirs to fill, unlock and refresh through the link too.
    if decided == Decision::Allow
        && action == Action::Create
        && !policy.rights(who, &real).may_delete()
        && storage
            .stat(&real)
            .await
            .is_ok_and(|m| m.kind == Kind::File && m.size > 0)
    {
        return Err(Error::status(
            403,
            "this path leads through a symlink to an existing file you may not replace there \
             (replacing needs the d right where the file is); nothing was changed",
        ));
    }
    match decided {
        Decision::Allow => Ok(()),
        _ => Err(Error::status(
            403,
            "this path leads through a symlink into a folder where the rules file does not \
             give you this right (rights follow where the files are)",
        )),
    }
}

/// Whether `who` may read `path` where it really is (see [`check_real`]):
/// what a walk (an archive, a COPY) asks of each member it reaches.
pub(crate) async fn reads_real<S: Storage>(
    storage: &S,
    policy: &Policy,
    who: Principal,
    path: &RelPath,
) -> bool {
    policy.reads(who, path)
        && check_real(storage, policy, who, Action::Read, path)
            .await
            .is_ok()
}
