//! The process's open-file limit, which bounds how many connections a server
//! can hold, and the accept errors that mean it (or memory) ran out.

use std::io;

use rustix::io::Errno;
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// What an unlimited hard limit is raised to: Linux's default `fs.nr_open`,
/// above which setrlimit(RLIMIT_NOFILE) fails anyway.
const UNLIMITED_CAP: u64 = 1 << 20;

/// The soft RLIMIT_NOFILE; `None` when unlimited.
pub fn open_file_limit() -> Option<u64> {
    getrlimit(Resource::Nofile).current
}

/// Raise the soft RLIMIT_NOFILE to the hard limit (what nginx's
/// `worker_rlimit_nofile` does) and return the soft limit now in force.
/// Failing to raise it is not an error: the old limit stays.
pub fn raise_open_file_limit() -> Option<u64> {
    let now = getrlimit(Resource::Nofile);
    let target = now.maximum.unwrap_or(UNLIMITED_CAP);
    if now.current.is_some_and(|soft| soft < target) {
        let raised = Rlimit {
            current: Some(target),
            maximum: now.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_err() {
            return now.current;
        }
    }
    open_file_limit()
}

/// Whether a failed accept(2) means the process or system ran out of file
/// descriptors or buffer memory (retrying at once would only spin).
pub fn is_resource_exhaustion(e: &io::Error) -> bool {
    matches!(
        Errno::from_io_error(e),
        Some(Errno::MFILE | Errno::NFILE | Errno::NOBUFS | Errno::NOMEM)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raising_never_lowers_the_limit() {
        let before = open_file_limit();
        let after = raise_open_file_limit();
        assert!(after.unwrap_or(u64::MAX) >= before.unwrap_or(u64::MAX));
    }

    #[test]
    fn exhaustion_errors_are_recognised() {
        assert!(is_resource_exhaustion(&Errno::MFILE.into()));
        assert!(is_resource_exhaustion(&Errno::NFILE.into()));
        assert!(!is_resource_exhaustion(&Errno::CONNABORTED.into()));
        assert!(!is_resource_exhaustion(&io::Error::other("x")));
    }
}
