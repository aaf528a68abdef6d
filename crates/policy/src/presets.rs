//! Bearer-token access control.
//!
//! Tokens are stored as their SHA-256 and a presented token is hashed before
//! comparing, so the comparison always covers 32 bytes whatever the lengths,
//! and it is done without early exit over every configured token: the time
//! taken says nothing about how much of which token matched.

use sha2::{Digest, Sha256};

/// Who may do what.
#[derive(Clone, Default)]
pub struct Access {
    tokens: Vec<[u8; 32]>,
    private: bool,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print token material, not even hashes.
        f.debug_struct("Access")
            .field("tokens", &self.tokens.len())
            .field("private", &self.private)
            .finish()
    }
}

impl Access {
    /// `tokens` empty means writes are open to everyone. `private` makes
    /// reads need a token too (and is refused without tokens by the CLI).
    pub fn new<I, S>(tokens: I, private: bool) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Access {
            tokens: tokens
                .into_iter()
                .map(|t| Sha256::digest(t.as_ref().as_bytes()).into())
                .collect(),
            private,
        }
    }

    /// Whether any token is configured.
    pub fn has_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// Whether reads need a token too (`--private`).
    pub fn private(&self) -> bool {
        self.private
    }

    /// Whether an `Authorization` header value grants access.
    pub fn allows(&self, authorization: Option<&[u8]>) -> bool {
        let Some(token) = authorization.and_then(bearer_token) else {
            return false;
        };
        let presented: [u8; 32] = Sha256::digest(token).into();
        let mut ok = false;
        for t in &self.tokens {
            ok |= ct_eq(t, &presented);
        }
        ok
    }
}

/// Which writes the server takes at all, before any token is looked at: a
/// server exposed beyond loopback without a token takes none unless told to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writes {
    /// PUT, POST and MKCOL (MOVE needs both this and `delete`).
    pub upload: bool,
    /// DELETE (and MOVE).
    pub delete: bool,
    /// What a refusal says.
    pub why: WritesOff,
}

/// Why some writes are off, for the 403 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritesOff {
    /// `serve --read-only`.
    ReadOnly,
    /// Listening beyond loopback without a token.
    Exposed,
}

impl Default for Writes {
    fn default() -> Self {
        Writes {
            upload: true,
            delete: true,
            why: WritesOff::ReadOnly,
        }
    }
}

impl Writes {
    /// Every write refused (`serve --read-only`).
    pub fn read_only() -> Self {
        Writes {
            upload: false,
            delete: false,
            why: WritesOff::ReadOnly,
        }
    }

    /// A server reachable beyond loopback without a token: only the writes
    /// switched on explicitly.
    pub fn exposed(upload: bool, delete: bool) -> Self {
        Writes {
            upload,
            delete,
            why: WritesOff::Exposed,
        }
    }
}

/// The token of `Bearer TOKEN` (scheme case-insensitive, RFC 9110 §11.1).
fn bearer_token(v: &[u8]) -> Option<&[u8]> {
    let v = v.trim_ascii();
    let (scheme, rest) = v.split_at(v.iter().position(|&b| b == b' ')?);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Constant-time equality of two digests.
fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // black_box keeps the optimizer from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer() {
        let a = Access::new(["s3cret", "other"], false);
        assert!(a.allows(Some(b"Bearer s3cret")));
        assert!(a.allows(Some(b"bearer   other ")));
        assert!(!a.allows(Some(b"Bearer s3cre")));
        assert!(!a.allows(Some(b"Bearer s3crett")));
        assert!(!a.allows(Some(b"Basic s3cret")));
        assert!(!a.allows(Some(b"Bearer")));
        assert!(!a.allows(Some(b"Bearer ")));
        assert!(!a.allows(None));
        assert!(!Access::new(Vec::<String>::new(), false).allows(Some(b"Bearer x")));
        assert!(!format!("{a:?}").contains("s3cret"));
    }
}
