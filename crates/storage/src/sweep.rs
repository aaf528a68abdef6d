//! Removal of temporary upload files a crash or `kill -9` left behind.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use wirespeed_path::is_temp_name;

/// Temporary upload files older than this (by mtime) are leftovers of a
/// crashed or killed server: a live upload writes (and so touches its file)
/// far more often than that, and gives up after the body timeout anyway.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(15 * 60);
/// Most directory entries one sweep looks at, so a huge tree costs bounded
/// start-up work (the rest is swept at the next start).
pub const SWEEP_MAX_ENTRIES: u64 = 1_000_000;

/// What a sweep of stale temporary files did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    /// Stale temporary files removed.
    pub removed: u64,
    /// Directory entries looked at.
    pub visited: u64,
    /// Stopped at the entry limit before the whole tree was seen.
    pub truncated: bool,
}

/// Remove temporary upload files (our prefix, regular files) whose mtime is
/// more than `max_age` ago, anywhere under `root`, looking at no more than
/// `max_entries` entries. Symlinks are never followed (a link to a directory
/// is not descended into, a link named like a temp file is left alone).
/// Blocking; errors on single entries are logged and skipped.
pub fn sweep_stale_temp_files(root: &Path, max_age: Duration, max_entries: u64) -> Sweep {
    let mut sweep = Sweep::default();
    let cutoff = SystemTime::now().checked_sub(max_age);
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "temp sweep cannot read a directory");
                continue;
            }
        };
        for de in rd.flatten() {
            if sweep.visited >= max_entries {
                sweep.truncated = true;
                return sweep;
            }
            sweep.visited += 1;
            let Ok(ft) = de.file_type() else { continue };
            if ft.is_dir() {
                dirs.push(de.path());
                continue;
            }
            if !ft.is_file() || !de.file_name().to_str().is_some_and(is_temp_name) {
                continue;
            }
            let stale = match (cutoff, de.metadata().and_then(|m| m.modified())) {
                (Some(cutoff), Ok(mtime)) => mtime < cutoff,
                _ => false,
            };
            if !stale {
                continue;
            }
            let path = de.path();
            match fs::remove_file(&path) {
                Ok(()) => sweep.removed += 1,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "could not remove a stale temporary upload file")
                }
            }
        }
    }
    sweep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalStorage;
    use std::fs::File;
    use wirespeed_path::TEMP_PREFIX;

    fn age(path: &Path, by: Duration) {
        let f = File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - by).unwrap();
    }

    /// An fsync'd upload well past several write-back steps, fed through
    /// both `write` and `wrote_directly` (the splice path's way): every byte
    /// arrives, in order, and the write-back hints never disturb the data.

    #[tokio::test]
    async fn startup_sweep_removes_only_stale_temp_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fs::create_dir_all(root.join("a/b")).unwrap();
        let old_tmp = root.join(format!("a/b/{TEMP_PREFIX}00000000deadbeef"));
        let fresh_tmp = root.join(format!("a/{TEMP_PREFIX}00000000cafebabe"));
        let old_plain = root.join("a/old.txt");
        for p in [&old_tmp, &fresh_tmp, &old_plain] {
            fs::write(p, b"x").unwrap();
        }
        age(&old_tmp, Duration::from_secs(3600));
        age(&old_plain, Duration::from_secs(3600));
        // Just under the limit: kept.
        age(&fresh_tmp, STALE_TEMP_AGE - Duration::from_secs(60));
        // A directory named like a temp file is not a temp file.
        let tmp_dir = root.join(format!("{TEMP_PREFIX}dir"));
        fs::create_dir(&tmp_dir).unwrap();

        let storage = LocalStorage::new(root).unwrap();
        let sweep = storage.spawn_temp_sweep().await.unwrap();
        assert_eq!(sweep.removed, 1);
        assert!(!sweep.truncated);
        assert!(!old_tmp.exists());
        assert!(fresh_tmp.exists());
        assert!(old_plain.exists());
        assert!(tmp_dir.exists());
    }

    #[test]
    fn sweep_work_is_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..10 {
            let p = tmp.path().join(format!("{TEMP_PREFIX}{i:016x}"));
            fs::write(&p, b"x").unwrap();
            age(&p, Duration::from_secs(3600));
        }
        let sweep = sweep_stale_temp_files(tmp.path(), STALE_TEMP_AGE, 4);
        assert_eq!(sweep.visited, 4);
        assert!(sweep.truncated);
        assert_eq!(sweep.removed, 4);
        let sweep = sweep_stale_temp_files(tmp.path(), STALE_TEMP_AGE, 100);
        assert_eq!((sweep.removed, sweep.truncated), (6, false));
    }
}
