//! argon2id password hashes: made by `wirespeed passwd`, checked at sign-in.
//! CPU- and memory-hard on purpose (the crate's defaults, OWASP's first
//! choice: m = 19 MiB, t = 2, p = 1), so callers run [`verify`] off the
//! async workers.

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Argon2, PasswordHash};

/// The PHC string (`$argon2id$v=19$m=19456,t=2,p=1$SALT$HASH`) of `password`
/// with a fresh random salt.
pub fn hash(password: &[u8]) -> Result<String, String> {
    Argon2::default()
        .hash_password(password)
        .map(|h| h.to_string())
        .map_err(|e| format!("cannot hash the password: {e}"))
}

/// The most memory (KiB) one verification may take: 64 MiB, RFC 9106's
/// second recommended setting. A sign-in runs argon2 with the parameters
/// written in the hash, so a pasted hash asking for gigabytes would make
/// every sign-in (or guess) of that user cost them.
pub const MAX_MEMORY_KIB: u32 = 64 * 1024;
/// The most passes times memory: four passes at 64 MiB (the default's
/// 2 × 19 MiB is well under).
pub const MAX_WORK_KIB: u64 = 4 * 64 * 1024;
/// The most lanes.
pub const MAX_LANES: u32 = 8;

/// Whether `hash` is a PHC string argon2 can verify against, with
/// parameters within the bounds above.
pub fn check_hash(hash: &str) -> Result<(), String> {
    let parsed = PasswordHash::new(hash).map_err(|e| e.to_string())?;
    if parsed.algorithm.as_str() != "argon2id" {
        return Err("not argon2id".into());
    }
    if parsed.hash.is_none() || parsed.salt.is_none() {
        return Err("no salt or no hash part".into());
    }
    let p = argon2::Params::try_from(&parsed).map_err(|e| e.to_string())?;
    let (m, t, lanes) = (p.m_cost(), p.t_cost(), p.p_cost());
    if m > MAX_MEMORY_KIB || u64::from(m) * u64::from(t) > MAX_WORK_KIB || lanes > MAX_LANES {
        return Err(format!(
            "its parameters m={m},t={t},p={lanes} would make every sign-in that costly; \
             at most m={MAX_MEMORY_KIB} (64 MiB), m×t={MAX_WORK_KIB} and p={MAX_LANES}: \
             make a hash with `wirespeed passwd`"
        ));
    }
    Ok(())
}

/// Whether `password` matches `hash` (slow: an argon2id computation). A
/// hash outside [`check_hash`]'s bounds matches nothing.
pub fn verify(password: &[u8], hash: &str) -> bool {
    if check_hash(hash).is_err() {
        return false;
    }
    match PasswordHash::new(hash) {
        Ok(h) => Argon2::default().verify_password(password, &h).is_ok(),
        Err(_) => false,
    }
}

/// A hash nobody's password matches, with the same parameters as
/// [`hash`]: an unknown user is verified against it, so that answer costs
/// the same time as a wrong password. Made once per process.
pub fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| {
        let mut pw = [0u8; 32];
        // A random password nobody knows; if the OS has no randomness, a
        // fixed one still costs the same time.
        let _ = getrandom::getrandom(&mut pw);
        hash(&pw).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_then_verify() {
        let h = hash(b"correct horse").unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert!(check_hash(&h).is_ok());
        assert!(verify(b"correct horse", &h));
        assert!(!verify(b"correct horsf", &h));
        assert!(!verify(b"x", "not a hash"));
        assert!(check_hash("$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g").is_err());
        // Huge parameters are refused before any memory is taken.
        for huge in [
            "$argon2id$v=19$m=4194304,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA",
            "$argon2id$v=19$m=19456,t=1000,p=1$c29tZXNhbHRzb21lc2FsdA$VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA",
            "$argon2id$v=19$m=19456,t=2,p=64$c29tZXNhbHRzb21lc2FsdA$VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA",
        ] {
            let e = check_hash(huge).unwrap_err();
            assert!(e.contains("wirespeed passwd"), "{e}");
            assert!(!verify(b"x", huge));
        }
        let d = dummy_hash();
        assert!(check_hash(d).is_ok() && !verify(b"", d));
    }
}
