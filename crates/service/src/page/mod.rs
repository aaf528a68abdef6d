//! What the browser page offers: the actions the server would take.

pub mod assets;
pub mod compress;
pub mod listing;
pub mod not_found;

use crate::path::RelPath;
use crate::policy::{Policy, Principal, Rights, UserName};

/// The actions the folder page shows: only what the server would take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRights {
    /// Listing and downloads.
    pub read: bool,
    /// Upload and New folder.
    pub write: bool,
    /// Delete (and, with `write`, Rename, a MOVE).
    pub delete: bool,
    /// "Share link…": links are on and the asker may mint them (a user,
    /// the token holder; on a token server the page asks for the token).
    pub share: bool,
}

impl PageRights {
    /// Everything (a server with no policy of its own).
    pub const ALL: PageRights = PageRights {
        read: true,
        write: true,
        delete: true,
        share: false,
    };

    /// The `data-can` value of the page's `<body>`: the rights' names.
    pub fn attribute(self) -> &'static str {
        match (self.write, self.delete) {
            (true, true) => "read write delete",
            (true, false) => "read write",
            (false, true) => "read delete",
            (false, false) => "read",
        }
    }
}

/// Who the page says is signed in (its sign-in form and Sign out button).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageUser {
    /// No users on this server (tokens, or nothing): no sign-in form.
    NoUsers,
    /// Users sign in here; this browser has not.
    SignedOut,
    /// Signed in as this user.
    SignedIn(UserName),
}

impl PageUser {
    /// The page's user for `who` on a server with this policy.
    pub fn of(policy: &Policy, who: Principal) -> PageUser {
        match (policy.users(), who) {
            (None, _) => PageUser::NoUsers,
            (Some(_), Principal::User(name)) => PageUser::SignedIn(name),
            (Some(_), _) => PageUser::SignedOut,
        }
    }
}

/// The page's actions at `path` for `who`, asked of the one policy: a
/// signed-in user's or token holder's own rights; for anyone else, without
/// a rules file, what a token holder may do there (on a token server the
/// page asks for the token when the server says 401; without tokens that
/// is what anyone may do), and with one, what anyone may do.
pub fn page_rights(policy: &Policy, who: Principal, path: &RelPath) -> PageRights {
    let who = match who {
        Principal::Anyone if policy.users().is_none() => Principal::TokenHolder,
        who => who,
    };
    let r = policy.rights(who, path);
    let share = policy.shares().is_some() && policy.may_share(who, Rights::READ, path);
    PageRights {
        read: true,
        write: r.may_write(),
        delete: r.may_delete(),
        share,
    }
}

/// Whether a listing of `folder` shows `who` the entry `name`: never a
/// hidden name (`--hidden`); with a rules file, only entries where `who`
/// holds some right (other users' folders are not listed); without one,
/// every other entry.
pub fn may_see(policy: &Policy, who: Principal, folder: &RelPath, name: &str) -> bool {
    if policy.hides_name(name) {
        return false;
    }
    if policy.users().is_none() {
        return true;
    }
    folder
        .join(name)
        .is_ok_and(|k| policy.rights(who, &k) != crate::policy::Rights::NONE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_attribute() {
        assert_eq!(PageRights::ALL.attribute(), "read write delete");
        let ro = PageRights {
            read: true,
            write: false,
            delete: false,
            share: false,
        };
        assert_eq!(ro.attribute(), "read");
    }
}
