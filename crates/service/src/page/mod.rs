//! What the browser page offers: the actions the server would take.

pub mod assets;
pub mod compress;
pub mod listing;
pub mod not_found;

use crate::path::RelPath;
use crate::policy::{Policy, Principal};

/// The actions the folder page shows: only what the server would take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRights {
    /// Listing and downloads.
    pub read: bool,
    /// Upload and New folder.
    pub write: bool,
    /// Delete (and, with `write`, Rename, a MOVE).
    pub delete: bool,
}

impl PageRights {
    /// Everything (a server with no policy of its own).
    pub const ALL: PageRights = PageRights {
        read: true,
        write: true,
        delete: true,
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

/// The page's actions at `path`, asked of the one policy: what a token
/// holder may do there (on a token server the page asks for the token
/// when the server says 401), which on a server without tokens is what
/// anyone may do.
pub fn page_rights(policy: &Policy, path: &RelPath) -> PageRights {
    let r = policy.rights(Principal::TokenHolder, path);
    PageRights {
        read: true,
        write: r.may_write(),
        delete: r.may_delete(),
    }
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
        };
        assert_eq!(ro.attribute(), "read");
    }
}
