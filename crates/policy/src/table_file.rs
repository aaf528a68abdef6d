//! The small state files the policy keeps (the share links' table, the
//! sessions' sign-outs): written durably, read strictly.
//!
//! Both files hold revocations. Reading one as empty because it is damaged
//! or unreadable would make revoked links and signed-out sessions work
//! again, and the next write would replace what the file held; so only a
//! missing file is an empty table, anything else is an error at start.
//! Writes are a temp file, synced, renamed over the table, and the folder
//! synced: a crash leaves the old table or the new one, never a torn one.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A table file that exists but cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// Reading it failed (permissions, I/O).
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Its contents do not parse.
    #[error("{} is damaged: {reason}", path.display())]
    Damaged { path: PathBuf, reason: String },
}

/// The file's bytes; `None` when there is no file.
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, TableError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TableError::Unreadable {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A [`TableError::Damaged`] for `path`.
pub(crate) fn damaged(path: &Path, reason: impl std::fmt::Display) -> TableError {
    TableError::Damaged {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// Replace `path` with `bytes` durably (temp file synced, renamed over
/// it, the folder synced).
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Append `line` to `path` and sync it (a sign-out must outlive a crash).
pub(crate) fn append(path: &Path, line: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(line)?;
    f.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_is_none_unreadable_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(&dir.path().join("none.json")).unwrap().is_none());
        // A folder where the file should be cannot be read as one.
        let err = read(dir.path()).unwrap_err();
        assert!(matches!(err, TableError::Unreadable { .. }), "{err}");
    }

    #[test]
    fn replace_and_append_leave_exactly_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.json");
        replace(&f, b"[1]").unwrap();
        replace(&f, b"[2]").unwrap();
        assert_eq!(read(&f).unwrap().unwrap(), b"[2]");
        assert!(!dir.path().join("t.json.tmp").exists());
        append(&f, b"\n3").unwrap();
        assert_eq!(read(&f).unwrap().unwrap(), b"[2]\n3");
    }
}
