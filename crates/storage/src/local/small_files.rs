//! Small files answered from memory, dropped the moment the kernel reports
//! a change, so a small GET costs no open, stat, read, xattr read or close
//! (5 of its 8 system calls in the small-GET profile, bench/RESULTS.md).
//!
//! Why not nginx's `open_file_cache` (descriptors kept, re-checked every
//! 60 s): that answers with a replaced file's old bytes for up to a minute.
//! Here every lookup first drains an inotify queue (one non-blocking
//! `read`), and the kernel queues an event before the changing system call
//! returns, so a change made before a request arrived is always seen by it.
//!
//! What an entry depends on is watched *before* it is looked up: the root
//! and each folder on the way (a rename, creation, removal or permission
//! change there) and the file itself (a write, truncation, attribute or
//! extended-attribute change, through any hard link). The walk follows no
//! symlink (`O_NOFOLLOW` at every step), so an entry's path is exactly the
//! one the `openat2(RESOLVE_BENEATH)` walk would take; paths through
//! symlinks are never kept. Any event drops every entry: changes are rare
//! next to reads, and precise invalidation is not worth its bookkeeping.
//!
//! Writes through a shared writable mmap, and a filesystem mounted over a
//! folder on the way, make no inotify event, so an entry is also checked
//! against the file's stat once a second ([`RECHECK`]). Files on network
//! and FUSE filesystems (where another machine's changes make no event
//! here) are never kept. A file is kept from its second request on, so a tree read
//! once (a mirror, an archive) does not churn the cache.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::meta::meta_of;
use crate::digest_store::{self, DigestStore, Identity};
use crate::resolve::Root;
use crate::{Kind, Meta};

/// Files up to this size are kept (a page's scripts, icons, JSON answers).
pub(crate) const MAX_FILE: u64 = 64 * 1024;
/// At most this many bytes are kept in all.
const MAX_BYTES: usize = 32 << 20;
/// At most this many files are kept.
const MAX_ENTRIES: usize = 4096;
/// Watches added before the queue is replaced (the kernel frees an inotify
/// instance's watches with it; `fs.inotify.max_user_watches` is per user).
const WATCH_BUDGET: usize = 16 * 1024;
/// Paths remembered as asked once (admission on the second request).
const SEEN_MAX: usize = 16 * 1024;
/// How often an entry is checked against the file's stat (mmap writes).
pub const RECHECK: Duration = Duration::from_secs(1);

/// A folder's changes that can change what a path below it names.
const DIR_EVENTS: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ATTRIB);
/// A file's changes: its bytes, its mode or extended attributes (a digest
/// recorded), its links.
const FILE_EVENTS: WatchFlags = WatchFlags::MODIFY
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF);

/// One kept file.
#[derive(Debug)]
pub struct SmallFile {
    pub(super) segments: Box<[String]>,
    pub(super) bytes: Box<[u8]>,
    pub(super) meta: Meta,
    pub(super) id: Identity,
    pub(super) sha256: Option<[u8; 32]>,
    /// Milliseconds after [`SmallFiles::epoch`] of the last stat check.
    checked: AtomicU64,
}

/// The kept files of one root.
#[derive(Debug)]
pub struct SmallFiles {
    state: Mutex<State>,
    epoch: Instant,
    hasher: RandomState,
}

#[derive(Debug)]
struct State {
    /// Shared with fills in flight: a reset must not close (and let the
    /// number be reused) under their `inotify_add_watch`.
    queue: Arc<OwnedFd>,
    /// Bumped whenever entries are dropped; a fill that started under an
    /// older one is discarded (it may have read what changed).
    generation: u64,
    entries: HashMap<Box<[String]>, Arc<SmallFile>>,
    bytes: usize,
    watches: usize,
    seen: HashSet<u64>,
    /// Where events are read to (they are only counted, never parsed).
    events: Box<[u8; 4096]>,
}

impl SmallFiles {
    /// A cache for `root`, or `None` where it cannot be exact: no inotify,
    /// no `/proc` to watch a descriptor by, or digests kept in a sidecar
    /// folder (a record written there is not an event on the file).
    pub fn new(root: &Root, digests: DigestStore) -> Option<SmallFiles> {
        if digests != DigestStore::Xattr || !root.uses_openat2() {
            return None;
        }
        let queue = new_queue(root.fd()).ok()?;
        Some(SmallFiles {
            state: Mutex::new(State {
                queue: Arc::new(queue),
                generation: 0,
                entries: HashMap::new(),
                bytes: 0,
                watches: 1,
                seen: HashSet::new(),
                events: Box::new([0; 4096]),
            }),
            epoch: Instant::now(),
            hasher: RandomState::new(),
        })
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// The kept file at `segments`, if it is unchanged.
    pub fn get(&self, root: &Root, segments: &[String]) -> Option<Arc<SmallFile>> {
        let hit = {
            let mut s = self.state.lock().ok()?;
            s.drain();
            s.entries.get(segments)?.clone()
        };
        let now = self.now_ms();
        if now.saturating_sub(hit.checked.load(Ordering::Relaxed)) >= RECHECK.as_millis() as u64 {
            if !hit.still_matches(root) {
                if let Ok(mut s) = self.state.lock() {
                    s.remove(&hit);
                }
                return None;
            }
            hit.checked.store(now, Ordering::Relaxed);
        }
        Some(hit)
    }

    /// Keep the file at `segments` if it is asked for the second time (the
    /// caller just opened it the usual way and found it `size` bytes).
    pub fn offer(&self, root: &Root, segments: &[String], size: u64) {
        if size > MAX_FILE || segments.is_empty() {
            return;
        }
        let (queue, generation) = {
            let Ok(mut s) = self.state.lock() else { return };
            s.drain();
            let h = self.hasher.hash_one(segments);
            if s.seen.insert(h) {
                if s.seen.len() > SEEN_MAX {
                    s.seen.clear();
                }
                return;
            }
            s.seen.remove(&h);
            if s.watches > WATCH_BUDGET && s.reset(root.fd()).is_err() {
                return;
            }
            s.watches += segments.len();
            (s.queue.clone(), s.generation)
        };
        let Some(file) = load(&queue, root, segments, self.now_ms()) else {
            return;
        };
        let Ok(mut s) = self.state.lock() else { return };
        s.drain();
        if s.generation != generation || !Arc::ptr_eq(&s.queue, &queue) {
            return;
        }
        s.insert(file);
    }

    /// How many files are kept (tests).
    pub fn len(&self) -> usize {
        self.state.lock().map_or(0, |s| s.entries.len())
    }

    /// Whether no file is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SmallFile {
    /// Whether the file at the path still has the identity it was read with.
    fn still_matches(&self, root: &Root) -> bool {
        let path = self.segments.join("/");
        match rustix::fs::statat(root.fd(), path.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                meta_of(&st).is_some_and(|m| m.kind == Kind::File) && Identity::of(&st) == self.id
            }
            Err(_) => false,
        }
    }
}

impl State {
    /// Read every queued event; any at all drops every entry.
    fn drain(&mut self) {
        let mut changed = false;
        loop {
            match rustix::io::read(&*self.queue, &mut self.events[..]) {
                Ok(0) => break,
                Ok(_) => changed = true,
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => break,
                // Cannot tell what changed: trust nothing kept.
                Err(_) => {
                    changed = true;
                    break;
                }
            }
        }
        if changed {
            self.clear();
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
        self.generation += 1;
    }

    /// A fresh queue (the old one's watches go with it once no fill holds it).
    fn reset(&mut self, root: BorrowedFd<'_>) -> rustix::io::Result<()> {
        self.clear();
        self.queue = Arc::new(new_queue(root)?);
        self.watches = 1;
        Ok(())
    }

    fn insert(&mut self, file: SmallFile) {
        let len = file.bytes.len();
        // Room is made by dropping arbitrary entries (the map's own order).
        while !self.entries.is_empty()
            && (self.entries.len() >= MAX_ENTRIES || self.bytes + len > MAX_BYTES)
        {
            let Some(key) = self.entries.keys().next().cloned() else {
                break;
            };
            if let Some(old) = self.entries.remove(&key) {
                self.bytes -= old.bytes.len();
            }
        }
        self.bytes += len;
        if let Some(old) = self.entries.insert(file.segments.clone(), Arc::new(file)) {
            self.bytes -= old.bytes.len();
        }
    }

    fn remove(&mut self, file: &Arc<SmallFile>) {
        if let Some(kept) = self.entries.get(&file.segments) {
            if Arc::ptr_eq(kept, file) {
                self.bytes -= file.bytes.len();
                self.entries.remove(&file.segments);
            }
        }
    }
}

/// A non-blocking inotify queue watching the root.
fn new_queue(root: BorrowedFd<'_>) -> rustix::io::Result<OwnedFd> {
    let queue = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
    watch(&queue, root, DIR_EVENTS)?;
    Ok(queue)
}

/// Watch the inode `fd` refers to, through its `/proc` magic link (by
/// path, a name could be swapped between the open and the watch).
fn watch(queue: &OwnedFd, fd: BorrowedFd<'_>, events: WatchFlags) -> rustix::io::Result<()> {
    let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
    inotify::add_watch(queue, link.as_str(), events).map(|_| ())
}

/// Whether inotify sees every change to files on `fd`'s filesystem: on
/// network and FUSE filesystems another machine's (or the daemon's) changes
/// make no event here, so their files are never kept.
// The f_type field's integer type differs between targets.
#[allow(clippy::unnecessary_cast)]
fn reports_every_change(fd: BorrowedFd<'_>) -> bool {
    const LOCAL: [u64; 8] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0x2FC1_2FC1, // zfs
        0xF2F5_2010, // f2fs
        0x794C_7630, // overlayfs (changes made through the mount)
        0xCA45_1A4E, // bcachefs
    ];
    rustix::fs::fstatfs(fd).is_ok_and(|fs| LOCAL.contains(&(fs.f_type as u64)))
}

/// Walk to the file without following symlinks, watching each folder before
/// looking in it and the file before reading it; then read it whole.
fn load(queue: &OwnedFd, root: &Root, segments: &[String], now_ms: u64) -> Option<SmallFile> {
    let (name, folders) = segments.split_last()?;
    let mut folder: Option<OwnedFd> = None;
    for seg in folders {
        let parent = folder.as_ref().map_or(root.fd(), |f| f.as_fd());
        let fd = rustix::fs::openat(
            parent,
            seg.as_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        watch(queue, fd.as_fd(), DIR_EVENTS).ok()?;
        folder = Some(fd);
    }
    let parent = folder.as_ref().map_or(root.fd(), |f| f.as_fd());
    let fd = rustix::fs::openat(
        parent,
        name.as_str(),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    watch(queue, fd.as_fd(), FILE_EVENTS).ok()?;
    if !reports_every_change(fd.as_fd()) {
        return None;
    }
    let st = rustix::fs::fstat(&fd).ok()?;
    let meta = meta_of(&st)?;
    if meta.kind != Kind::File || meta.size > MAX_FILE {
        return None;
    }
    let mut bytes = vec![0u8; meta.size as usize].into_boxed_slice();
    let mut got = 0;
    while got < bytes.len() {
        match rustix::io::pread(&fd, &mut bytes[got..], got as u64) {
            Ok(0) => return None,
            Ok(n) => got += n,
            Err(Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
    let id = Identity::of(&st);
    let sha256 = digest_store::read(DigestStore::Xattr, root.fd(), fd.as_fd(), &id);
    Some(SmallFile {
        segments: segments.into(),
        bytes,
        meta,
        id,
        sha256,
        checked: AtomicU64::new(now_ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synthetic(i: usize, len: usize) -> SmallFile {
        SmallFile {
            segments: vec![format!("f{i}")].into(),
            bytes: vec![0; len].into(),
            meta: Meta {
                kind: Kind::File,
                size: len as u64,
                modified: None,
            },
            id: Identity {
                dev: 0,
                ino: i as u64,
                size: len as u64,
                mtime_sec: 0,
                mtime_nsec: 0,
            },
            sha256: None,
            checked: AtomicU64::new(0),
        }
    }

    fn cache() -> Option<(tempfile::TempDir, Root, SmallFiles)> {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let small = SmallFiles::new(&root, DigestStore::Xattr)?;
        Some((tmp, root, small))
    }

    #[test]
    fn entries_and_bytes_stay_within_their_caps() {
        let Some((_tmp, _root, small)) = cache() else {
            eprintln!("SKIPPED: no inotify here");
            return;
        };
        let mut s = small.state.lock().unwrap();
        for i in 0..MAX_ENTRIES + 100 {
            s.insert(synthetic(i, 10));
        }
        assert_eq!(s.entries.len(), MAX_ENTRIES);
        assert_eq!(s.bytes, MAX_ENTRIES * 10);
        for i in 0..1000 {
            s.insert(synthetic(i, MAX_FILE as usize));
        }
        assert!(s.bytes <= MAX_BYTES, "{}", s.bytes);
        let sum: usize = s.entries.values().map(|f| f.bytes.len()).sum();
        assert_eq!(s.bytes, sum, "the byte count follows the entries");
    }

    #[test]
    fn a_spent_watch_budget_starts_a_new_queue_and_drops_every_entry() {
        let Some((tmp, root, small)) = cache() else {
            eprintln!("SKIPPED: no inotify here");
            return;
        };
        std::fs::write(tmp.path().join("a"), b"a").unwrap();
        let key = vec!["a".to_string()];
        small.offer(&root, &key, 1);
        small.offer(&root, &key, 1);
        assert_eq!(small.len(), 1);
        let before = small.state.lock().unwrap().queue.clone();
        small.state.lock().unwrap().watches = WATCH_BUDGET + 1;
        std::fs::write(tmp.path().join("b"), b"b").unwrap();
        let other = vec!["b".to_string()];
        small.offer(&root, &other, 1);
        small.offer(&root, &other, 1);
        let s = small.state.lock().unwrap();
        assert!(!Arc::ptr_eq(&before, &s.queue), "a new queue");
        assert_eq!(s.watches, 2, "the root's watch and b's");
        assert!(s.entries.contains_key(&other[..]) && !s.entries.contains_key(&key[..]));
        drop(s);
        // The new queue still reports changes.
        std::fs::write(tmp.path().join("b"), b"B").unwrap();
        assert!(small.get(&root, &other).is_none());
    }
}
