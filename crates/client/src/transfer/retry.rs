//! When a transfer tries again, and how long it waits first.

use std::sync::Arc;
use std::time::Duration;

use wirespeed_resumable::client::{retryable_status, Backoff};

use crate::Error;

/// Told what a retrying transfer does (resumes, restarts), one line each.
pub type Notice = Arc<dyn Fn(&str) + Send + Sync>;

/// How often a transfer tries again after a failure that may pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries in a row without progress before giving up (bytes moved
    /// since the last failure start the count again).
    pub retries: u32,
    pub backoff: Backoff,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 10,
            backoff: Backoff::default(),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            retries: 0,
            ..Default::default()
        }
    }
}

/// Statuses that say the request will fail the same way again, whatever
/// the protocol would otherwise allow: 409 (a folder URL without its `/`,
/// a file in the way), 501 (the server does not do this), 505, 507 (disk
/// full), 508.
pub fn permanent_status(status: u16) -> bool {
    matches!(status, 409 | 501 | 505 | 507 | 508)
}

/// Whether `e` may pass by itself: the connection broke, timed out or was
/// refused (a server restarting), or the server answered a status worth
/// retrying (5xx but [`permanent_status`], 408, 423, 429). Local files,
/// TLS, URLs, digests and other client errors would fail the same way again.
pub fn retryable(e: &Error) -> bool {
    match e {
        Error::Status { status, .. } => retryable_status(*status) && !permanent_status(*status),
        Error::ConnectionRefused { .. }
        | Error::Connect { .. }
        | Error::NoResponse
        | Error::Truncated { .. }
        | Error::Timeout(_)
        | Error::Io { .. }
        | Error::Proto(_) => true,
        _ => false,
    }
}

/// An error and its causes on one line, for retry notices.
pub fn describe(e: &Error) -> String {
    let mut s = e.to_string();
    let mut cur = std::error::Error::source(e);
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    // One bounded line: the status's text is the server's (or a proxy's).
    crate::terminal_safe(&s, 300)
}

/// Sleep before retry number `attempt` (0-based).
pub async fn pause(policy: &RetryPolicy, attempt: u32) -> Duration {
    let d = policy.backoff.delay(attempt, random());
    tokio::time::sleep(d).await;
    d
}

/// A random `u64` for jitter: the clock's nanoseconds and the pid through
/// SplitMix64 (no cryptographic quality needed).
fn random() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut z = t ^ (u64::from(std::process::id()) << 32);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_retried() {
        let status = |s| Error::Status {
            status: s,
            reason: String::new(),
            message: String::new(),
        };
        assert!(retryable(&status(503)));
        assert!(retryable(&status(502)));
        for permanent in [409, 501, 507] {
            assert!(!retryable(&status(permanent)), "{permanent}");
        }
        assert!(!retryable(&status(404)));
        assert!(!retryable(&status(401)));
        assert!(retryable(&Error::NoResponse));
        assert!(retryable(&Error::ConnectionRefused { addr: "x".into() }));
        assert!(retryable(&Error::Truncated {
            received: 1,
            expected: Some(2)
        }));
        assert!(!retryable(&Error::DigestMismatch {
            what: "x",
            ours: String::new(),
            theirs: String::new()
        }));
        assert!(!retryable(&Error::Exists { url: "u".into() }));
    }
}
