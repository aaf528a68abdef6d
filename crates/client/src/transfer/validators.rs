//! What a download records about the server's version of the bytes it
//! holds, so that a rerun tells an unchanged file from an edited one
//! whatever their sizes, and continues a partial file only when the server
//! still has the same version.
//!
//! The record is the validator `If-Range` can carry (a strong ETag, else
//! `Last-Modified`), the URL it was read from (its sha-256, so a file
//! fetched from another URL into the same place is never taken for this
//! one's) and the server's clock when it answered (`Date`), kept in the
//! file's extended attribute `user.wirespeed.validator`. The time tells a
//! rerun whether a listing's size and second can be trusted: a version
//! fetched after its second had passed can only change into a later
//! second (git's "racily clean" entries, decided on the server's clock). It is written on the `.part` file when its
//! first byte arrives and travels with it when it is renamed into place:
//! no file beside the download (which `ls`, backups and the next `put -r`
//! would see), no state folder that can drift from the files, and it goes
//! away with the file. A file system without user extended attributes
//! (FAT, some network and FUSE mounts) keeps none; there a rerun falls
//! back to the modification time the download gave the file (the server's
//! `Last-Modified`, compared as `wget -N` does) and a partial file restarts
//! unless `--continue` is given, as before.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::transfer::hex;
use crate::Url;

/// The extended attribute holding the validator.
const NAME: &str = "user.wirespeed.validator";

/// Longer values are not recorded: an ETag is an opaque quoted string,
/// but one this long is not worth keeping on every file.
const MAX: usize = 256;

/// Which URL a record is for: the first 16 hex digits of its sha-256.
fn url_key(url: &Url) -> String {
    let sum: [u8; 32] = Sha256::digest(url.to_string().as_bytes()).into();
    hex(&sum)[..16].to_string()
}

/// What a download recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub validator: String,
    /// The server's `Date` when it answered (Unix seconds), if it sent one.
    pub served_at: Option<i64>,
}

/// Record `validator` of `url`, served at `served_at` (the response's
/// `Date`), on the file at `path`, or remove an old record when there is
/// none (a file created over an old one keeps its attributes). Best
/// effort: a file system that keeps no attributes only loses the rerun's
/// precision, never the download.
pub fn record(path: &Path, url: &Url, validator: Option<&str>, served_at: Option<i64>) {
    let when = served_at.map_or_else(|| "-".to_string(), |t| t.to_string());
    let value = validator.map(|v| format!("{} {when} {v}", url_key(url)));
    let result = match value.filter(|v| v.len() <= MAX) {
        Some(v) => rustix::fs::lsetxattr(path, NAME, v.as_bytes(), rustix::fs::XattrFlags::empty()),
        None => match rustix::fs::lremovexattr(path, NAME) {
            Err(rustix::io::Errno::NODATA) => Ok(()),
            r => r,
        },
    };
    if let Err(e) = result {
        tracing::debug!(path = %path.display(), error = %e, "no validator recorded");
    }
}

/// What was recorded on the file at `path` for `url`, if anything.
pub fn recorded(path: &Path, url: &Url) -> Option<Recorded> {
    let mut buf = [0u8; MAX];
    let n = rustix::fs::lgetxattr(path, NAME, &mut buf[..]).ok()?;
    let v = std::str::from_utf8(buf.get(..n)?).ok()?;
    let (key, rest) = v.split_once(' ')?;
    let (when, validator) = rest.split_once(' ')?;
    (key == url_key(url) && !validator.is_empty()).then(|| Recorded {
        validator: validator.to_string(),
        served_at: when.parse().ok(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_until_replaced_or_removed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"x").unwrap();
        let u = Url::parse("http://h/f").unwrap();
        let v = |p: &Path| recorded(p, &u).map(|r| r.validator);
        assert_eq!(recorded(&p, &u), None);
        record(&p, &u, Some("\"1-abc\""), Some(1_700_000_000));
        if recorded(&p, &u).is_none() {
            eprintln!("SKIPPED: this file system keeps no user extended attributes");
            return;
        }
        assert_eq!(
            recorded(&p, &u),
            Some(Recorded {
                validator: "\"1-abc\"".into(),
                served_at: Some(1_700_000_000)
            })
        );
        let other = Url::parse("http://h/g").unwrap();
        assert_eq!(recorded(&p, &other), None, "another URL's file");
        // Renamed into place, the record goes with the file.
        let q = dir.path().join("g");
        std::fs::rename(&p, &q).unwrap();
        assert_eq!(v(&q).as_deref(), Some("\"1-abc\""));
        // Truncated and rewritten, the file keeps it: a new download
        // records again, or removes it.
        std::fs::write(&q, b"yy").unwrap();
        record(&q, &u, Some("Sun, 13 Sep 2020 12:26:40 GMT"), None);
        let r = recorded(&q, &u).unwrap();
        assert_eq!(r.validator, "Sun, 13 Sep 2020 12:26:40 GMT");
        assert_eq!(r.served_at, None);
        record(&q, &u, None, None);
        assert_eq!(recorded(&q, &u), None);
        record(&q, &u, None, None);
        record(&q, &u, Some(&"x".repeat(MAX)), None);
        assert_eq!(recorded(&q, &u), None, "too long: not kept");
        assert_eq!(recorded(&dir.path().join("missing"), &u), None);
    }
}
