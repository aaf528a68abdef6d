//! The fix for a failure that will not pass by itself, in the same line as
//! the error: a status the server will answer again (401, 409, 507, 501…),
//! a walk over its limits.

use std::sync::atomic::{AtomicBool, Ordering};

use wirespeed_client::Error;

/// Whether this run sends a token (`--token` or `WIRESPEED_TOKEN`).
static TOKEN_GIVEN: AtomicBool = AtomicBool::new(false);

/// Recorded when the client is built, so a 401 names the right fix.
pub(super) fn token_given(given: bool) {
    TOKEN_GIVEN.store(given, Ordering::Relaxed);
}

/// Whether this run signs in as a user (`--user`).
static USER_GIVEN: AtomicBool = AtomicBool::new(false);

/// Recorded when the client is built, so a 401 names the right fix.
pub(super) fn user_given(given: bool) {
    USER_GIVEN.store(given, Ordering::Relaxed);
}

/// What to do about `e`, as ` (…)` to append to its message; empty when
/// the message says it all.
pub fn hint(e: &Error) -> String {
    let fix = match e {
        Error::Status { status, .. } => match status {
            401 if USER_GIVEN.load(Ordering::Relaxed) && !TOKEN_GIVEN.load(Ordering::Relaxed) => {
                "the server refused the user name or password given with --user and \
                 WIRESPEED_PASSWORD (or typed): check them"
            }
            401 if TOKEN_GIVEN.load(Ordering::Relaxed) => {
                "the token given with --token or WIRESPEED_TOKEN was refused: check it"
            }
            401 => {
                "the server needs a sign-in: pass --token TOKEN or set WIRESPEED_TOKEN, or sign \
                 in with --user NAME (password from WIRESPEED_PASSWORD)"
            }
            403 => {
                "the server does not allow this (read-only, not started with the right, or \
                 your user lacks the right on this folder)"
            }
            409 => {
                "not retried: it conflicts with what is on the server (a folder URL needs its \
                 trailing /, or a file is in the way)"
            }
            413 => "not retried: the server takes nothing this large",
            501 => "not retried: the server does not implement this request (not wirespeed?)",
            507 => "not retried: the server's disk is full; free space there, then run this again",
            _ => return String::new(),
        },
        Error::WalkLimit { what, .. } if *what == "entries" => {
            "if you trust this server, raise the limit with --max-entries N"
        }
        Error::WalkLimit { .. } => {
            "if you trust this server, raise the limit with --max-names SIZE"
        }
        _ => return String::new(),
    };
    format!(" ({fix})")
}

/// [`hint`] for the first client error in an error's chain.
pub fn explain(e: &anyhow::Error) -> String {
    e.chain()
        .find_map(|c| c.downcast_ref::<Error>())
        .map(hint)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(s: u16) -> Error {
        Error::Status {
            status: s,
            reason: String::new(),
            message: String::new(),
        }
    }

    #[test]
    fn permanent_statuses_name_their_fix() {
        assert!(hint(&status(507)).contains("disk is full"));
        assert!(hint(&status(409)).contains("trailing /"));
        assert!(hint(&status(501)).contains("not implement"));
        assert!(hint(&status(401)).contains("WIRESPEED_TOKEN"));
        assert_eq!(hint(&status(404)), "");
        let walk = Error::WalkLimit {
            what: "entries",
            limit: 3,
        };
        assert!(hint(&walk).contains("--max-entries"));
        let e = anyhow::Error::new(status(507)).context("uploading x");
        assert!(explain(&e).contains("disk is full"));
    }
}
