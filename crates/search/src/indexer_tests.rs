//! The indexer over a real folder: host changes through inotify, told
//! changes, the text pass, and a restart answering from the stored index.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{Meta, NameQuery, Search, Settings, Source, TextQuery};

fn settings(root: &Path, db: &Path) -> Settings {
    Settings::new(root.to_path_buf(), db.to_path_buf())
}

/// Polls `f` until it holds, for at most `secs` seconds.
fn within(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

fn names(s: &Search, below: &str, q: &str) -> Vec<String> {
    let q = NameQuery::parse(q).unwrap();
    let mut v: Vec<String> = s
        .names(below, &q, 0, 100)
        .unwrap()
        .into_iter()
        .map(|h| h.path)
        .collect();
    v.sort();
    v
}

#[test]
fn host_changes_show_within_two_seconds() {
    let root = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("a/b")).unwrap();
    std::fs::write(root.path().join("a/b/first-report.txt"), "x").unwrap();
    std::fs::write(root.path().join(".wirespeed-partial"), "x").unwrap();
    let s = Search::open(settings(root.path(), &state.path().join("i.db"))).unwrap();
    assert!(within(10, || s.status().complete && !s.status().walking));
    assert_eq!(names(&s, "", "report"), ["a/b/first-report.txt"]);
    assert!(
        names(&s, "", "wirespeed").is_empty(),
        "reserved names are not indexed"
    );
    if s.status().watched == 0 {
        eprintln!("SKIPPED: no inotify here");
        return;
    }
    // Created, in a new folder too.
    std::fs::create_dir_all(root.path().join("a/new/deeper")).unwrap();
    std::fs::write(root.path().join("a/new/deeper/second-report.txt"), "x").unwrap();
    assert!(within(2, || names(&s, "", "report").len() == 2));
    // Renamed: a folder moves with what is below it.
    std::fs::rename(root.path().join("a/new"), root.path().join("moved")).unwrap();
    assert!(within(2, || names(&s, "", "report")
        == ["a/b/first-report.txt", "moved/deeper/second-report.txt"]));
    // Deleted.
    std::fs::remove_file(root.path().join("a/b/first-report.txt")).unwrap();
    assert!(within(2, || names(&s, "", "report")
        == ["moved/deeper/second-report.txt"]));
    assert_eq!(names(&s, "a", "report"), Vec::<String>::new());
}

#[test]
fn told_changes_and_words_of_text_files() {
    let root = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut set = settings(root.path(), &state.path().join("i.db"));
    set.watch_budget = 0;
    set.max_text_size = 1024;
    let s = Search::open(set).unwrap();
    assert!(within(10, || s.status().complete));
    std::fs::write(root.path().join("notes.md"), "the quick brown fox").unwrap();
    std::fs::write(root.path().join("big.txt"), "quick ".repeat(1000)).unwrap();
    std::fs::write(root.path().join("bin.txt"), b"quick\0brown").unwrap();
    s.refresh("notes.md", false);
    s.refresh("big.txt", false);
    s.refresh("bin.txt", false);
    let q = TextQuery::parse("quick bro").unwrap();
    assert!(within(5, || {
        let hits = s.texts("", &q, 0, 10).unwrap();
        hits.len() == 1 && hits[0].path == "notes.md"
    }));
    // Only text over the size limit or with NUL is left out, not the name.
    assert!(within(5, || names(&s, "", "big") == ["big.txt"]));
}

#[test]
fn a_restart_answers_from_the_stored_index_before_walking() {
    let root = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let db = state.path().join("i.db");
    std::fs::write(root.path().join("kept-name.bin"), "x").unwrap();
    {
        let s = Search::open(settings(root.path(), &db)).unwrap();
        assert!(within(10, || s.status().complete && !s.status().walking));
    }
    // Gone from the host while the server was down: with no walk, the
    // stored index still answers (a walk would have removed it).
    std::fs::remove_file(root.path().join("kept-name.bin")).unwrap();
    let mut set = settings(root.path(), &db);
    set.walk_at_start = false;
    let s = Search::open(set).unwrap();
    assert!(s.status().complete);
    assert_eq!(names(&s, "", "kept"), ["kept-name.bin"]);
    // The reconciling walk then finds it gone.
    s.walk_all();
    assert!(within(5, || names(&s, "", "kept").is_empty()));
}

/// A tree held in memory, as an object store's listings show it; `down`
/// makes every listing fail (the store unreachable).
#[derive(Clone, Default)]
struct Listed {
    tree: Arc<Mutex<BTreeMap<String, Meta>>>,
    down: Arc<AtomicBool>,
}

impl Source for Listed {
    fn list(&self, dir: &str, each: &mut dyn FnMut(String, Meta) -> bool) -> std::io::Result<()> {
        if self.down.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("store unreachable"));
        }
        let tree = self.tree.lock().unwrap().clone();
        for (path, meta) in tree {
            let (parent, name) = path.rsplit_once('/').unwrap_or(("", &path));
            if parent == dir && !each(name.to_string(), meta) {
                break;
            }
        }
        Ok(())
    }

    fn stat(&self, path: &str) -> std::io::Result<Option<Meta>> {
        if self.down.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("store unreachable"));
        }
        Ok(self.tree.lock().unwrap().get(path).copied())
    }

    fn read_text(&self, path: &str, _max: u64) -> Option<String> {
        Some(format!("words of {path}"))
    }
}

#[test]
fn a_listed_tree_is_walked_and_a_failed_listing_forgets_nothing() {
    let state = tempfile::tempdir().unwrap();
    let src = Listed::default();
    let dir = Meta {
        dir: true,
        size: 0,
        mtime: Some(1),
    };
    let file = Meta { dir: false, ..dir };
    for (p, m) in [
        ("docs", dir),
        ("docs/a-report.txt", file),
        ("b-report.md", file),
    ] {
        src.tree.lock().unwrap().insert(p.to_string(), m);
    }
    let settings = Settings::new(std::path::PathBuf::new(), state.path().join("i.db"));
    let s = Search::open_with(settings, Box::new(src.clone())).unwrap();
    assert!(s.walk_and_wait(Duration::from_secs(10)));
    assert_eq!(
        names(&s, "", "report"),
        ["b-report.md", "docs/a-report.txt"]
    );
    let words = TextQuery::parse("words").unwrap();
    assert!(within(5, || s.texts("", &words, 0, 10).unwrap().len() == 2));
    // The store unreachable: a walk and a told path change nothing.
    src.down.store(true, Ordering::Relaxed);
    src.tree.lock().unwrap().remove("b-report.md");
    assert!(s.walk_and_wait(Duration::from_secs(10)));
    s.refresh("docs/a-report.txt", false);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        names(&s, "", "report"),
        ["b-report.md", "docs/a-report.txt"]
    );
    // Back: the next walk removes what the listing no longer holds, and a
    // told path that is gone goes.
    src.down.store(false, Ordering::Relaxed);
    assert!(s.walk_and_wait(Duration::from_secs(10)));
    assert_eq!(names(&s, "", "report"), ["docs/a-report.txt"]);
    src.tree.lock().unwrap().remove("docs/a-report.txt");
    s.refresh("docs/a-report.txt", false);
    assert!(within(2, || names(&s, "", "report").is_empty()));
}
