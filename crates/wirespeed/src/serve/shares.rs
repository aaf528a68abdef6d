//! Share links at start: the signing key (WIRESPEED_SHARE_KEY, 64 hex
//! digits, so that every node on a shared bucket verifies every link; else
//! a random key kept in a 0600 file under the state folder) and the table
//! of live links beside it; the browser sessions signed with a key derived
//! from it, and their sign-outs.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use wirespeed_service::policy::{Sessions, Shares};

/// The state folder: `--state-dir`, else `$XDG_STATE_HOME/wirespeed`, else
/// `~/.local/state/wirespeed`.
pub fn state_dir(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(d) = given {
        return Some(d.to_path_buf());
    }
    let xdg = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty());
    match xdg {
        Some(x) if Path::new(&x).is_absolute() => Some(PathBuf::from(x).join("wirespeed")),
        _ => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".local/state/wirespeed")),
    }
}

/// The share links of this server.
pub fn open(state: Option<&Path>, max_expiry: u64) -> anyhow::Result<Arc<Shares>> {
    let key = match std::env::var("WIRESPEED_SHARE_KEY") {
        Ok(hex) => parse_hex_key(&hex).context("WIRESPEED_SHARE_KEY")?,
        Err(_) => {
            let dir = state.context(
                "share links need a key: set WIRESPEED_SHARE_KEY (64 hex digits) or give --state-dir",
            )?;
            key_file(&dir.join("share.key"))?
        }
    };
    let shares = match state {
        Some(d) => Shares::open(key, max_expiry, d.join("shares.json")).map_err(|e| {
            anyhow::anyhow!(
                "{e}\nIt holds which share links were revoked: starting without it would make them \
                 work again. Restore it from a backup; or move it aside and change the link key \
                 (remove share.key beside it, or set another WIRESPEED_SHARE_KEY), which ends every \
                 link made so far."
            )
        })?,
        None => Shares::new(key, max_expiry),
    };
    Ok(Arc::new(shares))
}

/// The browser sessions of this server: signed with a key derived from
/// the links' key (so every node sharing it accepts them), sign-outs kept
/// in `sessions.json` beside the links' table; cookies `Secure` under TLS,
/// and sent only under the path prefix `base` (`""`: everywhere).
pub fn sessions(
    links: &Shares,
    state: Option<&Path>,
    lifetime: u64,
    tls: bool,
    base: &str,
) -> anyhow::Result<Arc<Sessions>> {
    let sessions = match state {
        Some(d) => Sessions::open(links.session_key(), lifetime, tls, d.join("sessions.json"))
            .map_err(|e| {
                anyhow::anyhow!(
                    "{e}\nIt holds the browser sessions that signed out: starting without it would \
                     let them in again. Restore it from a backup; or move it aside and change the \
                     link key (remove share.key beside it, or set another WIRESPEED_SHARE_KEY), \
                     which signs every session out and ends every share link."
                )
            })?,
        None => Sessions::new(links.session_key(), lifetime, tls),
    };
    Ok(Arc::new(sessions.with_path(base)))
}

fn parse_hex_key(hex: &str) -> anyhow::Result<[u8; 32]> {
    let hex = hex.trim();
    anyhow::ensure!(
        hex.len() == 64,
        "the key must be 64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`"
    );
    let mut key = [0u8; 32];
    for (i, b) in key.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
            .ok()
            .context("the key must be hex digits only")?;
    }
    Ok(key)
}

/// The key in `file`, made (random, mode 0600) if missing; a file others
/// can read is refused.
fn key_file(file: &Path) -> anyhow::Result<[u8; 32]> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the state folder {}", dir.display()))?;
    }
    match std::fs::read(file) {
        Ok(bytes) => {
            let mode = std::fs::metadata(file)?.permissions().mode();
            anyhow::ensure!(
                mode & 0o077 == 0,
                "{} is readable by others (mode {:o}): chmod 600 it, or remove it to make a new key \
                 (every link made so far then stops working)",
                file.display(),
                mode & 0o777
            );
            bytes
                .try_into()
                .ok()
                .with_context(|| format!("{} is not a 32-byte key", file.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut key = [0u8; 32];
            getrandom_key(&mut key)?;
            // Written whole under a private name, then linked into place:
            // servers starting together all end up with the one key.
            let tmp = file.with_extension(format!("tmp-{}", std::process::id()));
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)
                .with_context(|| format!("creating {}", tmp.display()))?;
            f.write_all(&key)?;
            f.sync_all()?;
            let linked = std::fs::hard_link(&tmp, file);
            let _ = std::fs::remove_file(&tmp);
            match linked {
                Ok(()) => Ok(key),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => key_file(file),
                Err(e) => Err(e).with_context(|| format!("creating {}", file.display())),
            }
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", file.display())),
    }
}

fn getrandom_key(key: &mut [u8; 32]) -> anyhow::Result<()> {
    // The OS random source, as the upload ids use.
    let mut f = std::fs::File::open("/dev/urandom").context("opening /dev/urandom")?;
    std::io::Read::read_exact(&mut f, key).context("reading /dev/urandom")
}

/// `7d`, `12h`, `30m`, `90s` or plain seconds.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, unit) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&s[..i], c),
        _ => (s, 's'),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: expected a number with d, h, m or s (e.g. 7d)"))?;
    let unit = match unit {
        'd' => 86_400,
        'h' => 3_600,
        'm' => 60,
        's' => 1,
        _ => return Err(format!("{s:?}: the unit is d, h, m or s")),
    };
    n.checked_mul(unit)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("{s:?}: out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_keys() {
        assert_eq!(parse_duration("7d"), Ok(604_800));
        assert_eq!(parse_duration("90"), Ok(90));
        assert!(parse_duration("0d").is_err() && parse_duration("3w").is_err());
        assert!(parse_hex_key(&"ab".repeat(32)).is_ok());
        assert!(parse_hex_key("abc").is_err() && parse_hex_key(&"zz".repeat(32)).is_err());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s/share.key");
        let k = key_file(&f).unwrap();
        assert_eq!(key_file(&f).unwrap(), k, "kept");
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(key_file(&f).is_err());
    }
}
