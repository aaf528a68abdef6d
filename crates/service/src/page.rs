//! What the browser page offers: the actions the server would take.

use wirespeed_net::Exchange;

use crate::ServiceConfig;

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

/// The one place the page's rights are decided, from the server's write
/// policy: a token server offers its writes (the page asks for the token
/// when the server says 401); a read-only or exposed server only those it
/// takes from anyone.
pub fn page_rights(cfg: &ServiceConfig, _ex: &Exchange) -> PageRights {
    PageRights {
        read: true,
        write: cfg.writes.upload,
        delete: cfg.writes.delete,
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
