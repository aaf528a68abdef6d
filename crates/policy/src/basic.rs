//! HTTP Basic credentials (RFC 7617) and the sign-in back-off. Sans-IO.

use std::time::Duration;

use base64::Engine as _;

/// A user name and password as a client sent them.
pub struct Credentials {
    pub user: String,
    pub password: Vec<u8>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the password.
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The credentials of `Basic BASE64(user ":" password)` (scheme
/// case-insensitive; the user id is UTF-8 and has no colon, the password
/// is whatever follows the first colon). `None`: not Basic, or malformed.
pub fn credentials(authorization: &[u8]) -> Option<Credentials> {
    let v = authorization.trim_ascii();
    let space = v.iter().position(|&b| b == b' ')?;
    let (scheme, rest) = v.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim_ascii())
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = std::str::from_utf8(&decoded[..colon]).ok()?.to_owned();
    if user.is_empty() {
        return None;
    }
    Some(Credentials {
        user,
        password: decoded[colon + 1..].to_vec(),
    })
}

/// Whether the header carries Basic credentials at all (well-formed or not).
pub fn is_basic(authorization: &[u8]) -> bool {
    let v = authorization.trim_ascii_start();
    v.len() >= 6 && v[..6].eq_ignore_ascii_case(b"basic ")
}

/// Failures from one address before sign-ins from it are slowed.
pub const FREE_FAILURES: u32 = 5;

/// How long a sign-in from an address with `failures` recent failures
/// waits before it is checked: nothing for the first [`FREE_FAILURES`],
/// then 250 ms doubling per failure, at most 30 s.
pub fn backoff(failures: u32) -> Duration {
    if failures < FREE_FAILURES {
        return Duration::ZERO;
    }
    let doublings = (failures - FREE_FAILURES).min(7);
    Duration::from_millis(250 << doublings).min(Duration::from_secs(30))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn b64(s: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn rfc_7617_example() {
        // RFC 7617 §2: Aladdin / open sesame.
        let c = credentials(b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==").unwrap();
        assert_eq!(c.user, "Aladdin");
        assert_eq!(c.password, b"open sesame");
        let c = credentials(format!("basic  {}", b64(b"u:p:q")).as_bytes()).unwrap();
        assert_eq!((c.user.as_str(), &c.password[..]), ("u", &b"p:q"[..]));
        assert!(credentials(format!("Basic {}", b64(b"u:")).as_bytes()).is_some());
        assert!(!format!("{c:?}").contains("p:q"));
        for bad in [
            "Bearer QWxhZGRpbjpvcGVuIHNlc2FtZQ==".to_string(),
            "Basic".into(),
            "Basic !!!".into(),
            format!("Basic {}", b64(b"nocolon")),
            format!("Basic {}", b64(b":nouser")),
            format!("Basic {}", b64(b"\xff:x")),
        ] {
            assert!(credentials(bad.as_bytes()).is_none(), "{bad}");
        }
        assert!(is_basic(b"BASIC x") && !is_basic(b"Bearer x"));
    }

    #[test]
    fn backoff_doubles_after_five() {
        assert_eq!(backoff(4), Duration::ZERO);
        assert_eq!(backoff(5), Duration::from_millis(250));
        assert_eq!(backoff(6), Duration::from_millis(500));
        assert_eq!(backoff(9), Duration::from_secs(4));
        assert_eq!(backoff(1000), Duration::from_secs(30));
    }

    proptest! {
        #[test]
        fn round_trips(user in "[^:\\x00-\\x1f]{1,20}", pw in prop::collection::vec(any::<u8>(), 0..40)) {
            let mut raw = user.clone().into_bytes();
            raw.push(b':');
            raw.extend_from_slice(&pw);
            let c = credentials(format!("Basic {}", b64(&raw)).as_bytes()).unwrap();
            prop_assert_eq!(c.user, user);
            prop_assert_eq!(c.password, pw);
        }

        #[test]
        fn never_panics(v in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = credentials(&v);
            let _ = is_basic(&v);
        }
    }
}
