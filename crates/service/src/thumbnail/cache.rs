//! Thumbnails kept on disk, in a folder of their own outside the served
//! tree (the state folder's `thumbnails/`), named by a hash of the file's
//! path and version: a replaced file has a new name, so an old picture is
//! never found for it. The folder is bounded: past its size the oldest
//! files go (first made, first evicted) until a quarter is free.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use sha2::{Digest as _, Sha256};

/// A cache folder and the bytes it holds (counted at open, then kept).
pub struct DiskCache {
    dir: PathBuf,
    max_bytes: u64,
    used: AtomicU64,
    evicting: Mutex<()>,
}

impl std::fmt::Debug for DiskCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskCache").field("dir", &self.dir).finish()
    }
}

/// The name a thumbnail is kept under: the hex SHA-256 of what identifies
/// the file's content (path, validators, where the backend says it, the
/// inode), 64 characters.
pub fn name_for(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let sum = h.finalize();
    let mut out = String::with_capacity(64);
    for b in sum {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

impl DiskCache {
    /// The folder at `dir`, holding at most `max_bytes`; it is made
    /// (owner-only) when the first thumbnail is kept.
    pub fn open(dir: &Path, max_bytes: u64) -> Self {
        let cache = DiskCache {
            dir: dir.to_path_buf(),
            max_bytes: max_bytes.max(1 << 20),
            used: AtomicU64::new(0),
            evicting: Mutex::new(()),
        };
        let used = cache.entries().iter().map(|e| e.1).sum();
        cache.used.store(used, Ordering::Relaxed);
        cache
    }

    /// The thumbnail kept under `name`, if any.
    pub fn get(&self, name: &str) -> Option<Vec<u8>> {
        fs::read(self.dir.join(name)).ok()
    }

    /// Keeps `bytes` under `name` (written whole, then renamed in place);
    /// a failure only means it is made again next time.
    pub fn put(&self, name: &str, bytes: &[u8]) {
        let tmp = self
            .dir
            .join(format!(".tmp-{name}-{:?}", std::thread::current().id()));
        let written = self
            .made()
            .and_then(|()| fs::File::create(&tmp))
            .and_then(|mut f| f.write_all(bytes))
            .and_then(|()| fs::rename(&tmp, self.dir.join(name)));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
            return;
        }
        let used = self.used.fetch_add(bytes.len() as u64, Ordering::Relaxed) + bytes.len() as u64;
        if used > self.max_bytes {
            self.evict();
        }
    }

    fn made(&self) -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt as _;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
    }

    /// Bytes held now (as counted).
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Removes the oldest files until three quarters of the bound are used.
    fn evict(&self) {
        let Ok(_one) = self.evicting.try_lock() else {
            return;
        };
        let mut entries = self.entries();
        entries.sort_by_key(|e| e.2);
        let mut used: u64 = entries.iter().map(|e| e.1).sum();
        let goal = self.max_bytes / 4 * 3;
        for (path, size, _) in entries {
            if used <= goal {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                used -= size;
            }
        }
        self.used.store(used, Ordering::Relaxed);
    }

    fn entries(&self) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
        let Ok(dir) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                let made = m.modified().ok()?;
                m.is_file().then(|| (e.path(), m.len(), made))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_differ_by_version_and_are_stable() {
        let a = name_for(&[b"a.jpg", b"\"10-1\""]);
        assert_eq!(a, name_for(&[b"a.jpg", b"\"10-1\""]));
        assert_ne!(a, name_for(&[b"a.jpg", b"\"10-2\""]));
        // Lengths are part of the hash: parts cannot run into each other.
        assert_ne!(name_for(&[b"ab", b"c"]), name_for(&[b"a", b"bc"]));
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn kept_found_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(&dir.path().join("t"), 1 << 20);
        let big = vec![7u8; 300 << 10];
        for i in 0..5 {
            cache.put(&format!("n{i}"), &big);
            // Distinct modification times, so "oldest" is well defined.
            std::thread::sleep(std::time::Duration::from_millis(15));
        }
        assert!(cache.used() <= 1 << 20, "{}", cache.used());
        assert_eq!(cache.get("n4").as_deref(), Some(&big[..]));
        assert_eq!(cache.get("n0"), None, "the oldest went first");
        // Reopened, it counts what is there.
        let again = DiskCache::open(&dir.path().join("t"), 1 << 20);
        assert_eq!(again.used(), cache.used());
    }
}
