//! What the browser page offers: the actions the server would take.

pub mod assets;
pub mod compress;
pub mod listing;
pub mod not_found;

use crate::path::RelPath;
use crate::policy::{Action, Policy, Principal, Rights, UserName};

/// The actions the folder page shows: only what the server would take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRights {
    /// Listing and downloads (without it, with `write`: an upload-only
    /// page, the frame with an Upload button and no names).
    pub read: bool,
    /// Upload and New folder.
    pub write: bool,
    /// Delete (and, with `write`, Rename, a MOVE).
    pub delete: bool,
    /// "Share link…": links are on and the asker may mint them (a user,
    /// the token holder; on a token server the page asks for the token).
    pub share: bool,
    /// The depth of the highest folder the asker may go up to (a share
    /// link's folder): no `../` there, and no breadcrumb links above it.
    pub top: usize,
}

impl PageRights {
    /// Everything (a server with no policy of its own).
    pub const ALL: PageRights = PageRights {
        read: true,
        write: true,
        delete: true,
        share: false,
        top: 0,
    };

    /// The `data-can` value of the page's `<body>`: the rights' names.
    pub fn attribute(self) -> String {
        let names = [
            (self.read, "read"),
            (self.write, "write"),
            (self.delete, "delete"),
        ];
        let on: Vec<&str> = names
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
        on.join(" ")
    }

    /// Upload only: the asker may add names here but not read them (an
    /// upload link, a drop box).
    pub fn upload_only(self) -> bool {
        self.write && !self.read
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
    /// The page's user for `who` on a server with this policy. A share
    /// link's guest gets no sign-in: the link is what they came with.
    pub fn of(policy: &Policy, who: Principal) -> PageUser {
        match (policy.users(), who) {
            (None, _) | (_, Principal::Link(_)) => PageUser::NoUsers,
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
    let top = match who {
        Principal::Link(id) => policy
            .shares()
            .and_then(|s| s.grant(id))
            .map_or(0, |g| link_depth(&g.path)),
        _ => 0,
    };
    PageRights {
        read: r.may_read(),
        write: r.may_write(),
        delete: r.may_delete(),
        share,
        top,
    }
}

/// How many folders deep a link's own folder is: `/a/b/` and `/a/b/f.txt`
/// are 2 (a file link's folder is the one it is in).
fn link_depth(path: &str) -> usize {
    let folder = path.rfind('/').map_or("", |i| &path[..i]);
    folder.split('/').filter(|s| !s.is_empty()).count()
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

/// A browser's GET of a folder where `who` may add files but not read
/// them (an upload link, a drop box): answered with the page's upload-only
/// frame (no names) in place of the refusal. Whether it was sent.
pub(crate) async fn sent_upload_page(
    policy: &Policy,
    ex: &mut wirespeed_net::Exchange,
    who: Principal,
    action: Action,
    path: &RelPath,
) -> Result<bool, wirespeed_net::Error> {
    if action != Action::Read || policy.hides(path) {
        return Ok(false);
    }
    let Some(page) = listing::upload_page(policy, ex, who, path) else {
        return Ok(false);
    };
    let resp = wirespeed_net::Response::new(200)
        .header("Content-Type", listing::Format::Html.content_type())
        .header(
            "Content-Security-Policy",
            listing::page_csp(ex.header_str("host")),
        )
        .header("Cache-Control", "no-store");
    ex.send(resp, &page).await?;
    Ok(true)
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
            top: 0,
        };
        assert_eq!(ro.attribute(), "read");
        let drop_box = PageRights {
            read: false,
            write: true,
            ..ro
        };
        assert_eq!(drop_box.attribute(), "write");
        assert!(drop_box.upload_only() && !ro.upload_only());
    }

    #[test]
    fn link_depths() {
        assert_eq!(link_depth("/"), 0);
        assert_eq!(link_depth("/f.txt"), 0);
        assert_eq!(link_depth("/a/"), 1);
        assert_eq!(link_depth("/a/b/"), 2);
        assert_eq!(link_depth("/a/b/f.txt"), 2);
    }
}
