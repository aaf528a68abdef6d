//! Changes made on the host: one inotify watch per indexed folder, read by
//! a thread that turns each event into a path to refresh.
//!
//! The small-file cache has its own queue: it drains it synchronously
//! before each read and throws the whole queue away when its watch budget
//! is spent, which a watch on every folder of the tree cannot share.
//! Watches are bounded by `fs.inotify.max_user_watches` (shared by the
//! user's processes) and by [`Watcher::new`]'s budget; folders past it are
//! not watched, and the periodic reconciling walk finds their changes.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// What a folder's watch reports: names appearing, going, moving, a file
/// written and closed, and the folder itself going.
const EVENTS: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::DONT_FOLLOW);

/// What the watch thread tells the indexer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// This path (below the root) may have changed.
    Path(String),
    /// Events were lost (the kernel queue overflowed): walk everything.
    Overflow,
}

/// The folders watched, by watch descriptor.
pub struct Watcher {
    queue: OwnedFd,
    root: PathBuf,
    folders: Mutex<HashMap<i32, String>>,
    budget: usize,
}

impl Watcher {
    /// A queue for folders below `root`, at most `budget` of them; `None`
    /// without inotify.
    pub fn new(root: &Path, budget: usize) -> Option<Arc<Watcher>> {
        let queue = inotify::init(CreateFlags::CLOEXEC).ok()?;
        Some(Arc::new(Watcher {
            queue,
            root: root.to_path_buf(),
            folders: Mutex::new(HashMap::new()),
            budget,
        }))
    }

    /// Watches folder `rel` (`""`: the root). False when the budget or the
    /// kernel's limit is spent (that folder's host changes then wait for
    /// the next walk).
    pub fn add(&self, rel: &str) -> bool {
        let Ok(mut folders) = self.folders.lock() else {
            return false;
        };
        if folders.len() >= self.budget {
            return false;
        }
        let path = if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        };
        match inotify::add_watch(&self.queue, path.as_path(), EVENTS) {
            Ok(wd) => {
                folders.insert(wd, rel.to_string());
                true
            }
            Err(_) => false,
        }
    }

    /// Folders watched now.
    pub fn len(&self) -> usize {
        self.folders.lock().map_or(0, |f| f.len())
    }

    /// Reads events until the queue fails, handing each to `tell` (false:
    /// stop).
    pub fn run(&self, mut tell: impl FnMut(Seen) -> bool) {
        let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 64 * 1024];
        let mut reader = inotify::Reader::new(self.queue.as_fd(), &mut buf);
        loop {
            let ev = match reader.next() {
                Ok(ev) => ev,
                Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => continue,
                Err(_) => return,
            };
            let flags = ev.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                if !tell(Seen::Overflow) {
                    return;
                }
                continue;
            }
            let folder = {
                let Ok(mut folders) = self.folders.lock() else {
                    return;
                };
                if flags.contains(ReadFlags::IGNORED) {
                    folders.remove(&ev.wd());
                    continue;
                }
                match folders.get(&ev.wd()) {
                    Some(f) => f.clone(),
                    None => continue,
                }
            };
            let path = match ev.file_name().and_then(|n| n.to_str().ok()) {
                Some(name) if !name.is_empty() => {
                    if folder.is_empty() {
                        name.to_string()
                    } else {
                        format!("{folder}/{name}")
                    }
                }
                // The folder itself (deleted or moved).
                _ => folder,
            };
            if !tell(Seen::Path(path)) {
                return;
            }
        }
    }
}

/// The kernel's per-user watch limit, if it says.
pub fn kernel_watch_limit() -> Option<usize> {
    std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .ok()?
        .trim()
        .parse()
        .ok()
}
