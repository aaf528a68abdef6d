//! Temp dirs and what tests look for on disk.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A fresh temp dir, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("create a temp dir")
}

/// Sorted names in `dir` (empty if it does not exist).
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every path under `root` (recursively) whose file name starts with `prefix`.
pub fn find_prefixed(root: &Path, prefix: &str) -> Vec<PathBuf> {
    fn walk(p: &Path, prefix: &str, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(p) else {
            return;
        };
        for e in rd.flatten() {
            let path = e.path();
            if e.file_name().to_string_lossy().starts_with(prefix) {
                out.push(path.clone());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&path, prefix, out);
            }
        }
    }
    let mut v = Vec::new();
    walk(root, prefix, &mut v);
    v
}

/// Wait up to 5 s for `cond` (a server finishes work after its client is
/// gone, so such effects are observed with a short poll).
pub fn eventually(what: &str, cond: impl Fn() -> bool) {
    eventually_within(what, Duration::from_secs(5), cond)
}

/// [`eventually`] with its own bound, for conditions that wait on a clock
/// (an expiry) rather than on work in flight.
pub fn eventually_within(what: &str, bound: Duration, cond: impl Fn() -> bool) {
    let until = Instant::now() + bound;
    while Instant::now() < until {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for: {what}");
}
