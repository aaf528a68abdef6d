//! The indexer: one low-priority thread owns the index's only writer. It
//! walks the tree at start (the stored index answers meanwhile), applies
//! each path it is told changed, then reads text-like files a few at a
//! time while nothing else is waiting. Queries use their own connections.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::query::{NameQuery, TextQuery};
use crate::source::{Local, Source};
use crate::store::{Hit, Store};
use crate::text::is_text_name;
use crate::watch::{kernel_watch_limit, Seen, Watcher};
use crate::Result;

/// How the index is kept.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The served folder (for [`Search::open`]; a [`Source`] of
    /// [`Search::open_with`] knows its own tree).
    pub root: PathBuf,
    /// The index file (its `-wal` and `-shm` beside it).
    pub db: PathBuf,
    /// Index the words of text-like files of at most this many bytes (0:
    /// no words, names only).
    pub max_text_size: u64,
    /// Most folders watched for host changes.
    pub watch_budget: usize,
    /// With folders left unwatched, walk again this often.
    pub reconcile_every: Duration,
    /// Walk the tree at start (off: answer from the stored index only,
    /// until told of changes).
    pub walk_at_start: bool,
}

impl Settings {
    pub fn new(root: PathBuf, db: PathBuf) -> Settings {
        // Leave most of the user's watches to everything else.
        let budget = kernel_watch_limit().map_or(8192, |n| n / 2).min(1 << 20);
        Settings {
            root,
            db,
            max_text_size: 10 << 20,
            watch_budget: budget,
            reconcile_every: Duration::from_secs(600),
            walk_at_start: true,
        }
    }
}

/// Paths waiting for the indexer; past this, it walks everything instead.
const QUEUE: usize = 16 * 1024;
/// Rows written per transaction during a walk.
const WALK_BATCH: usize = 20_000;
/// Files read per transaction in the text pass.
const TEXT_BATCH: usize = 32;
/// Reader connections kept for reuse.
const READERS: usize = 4;

enum Job {
    Refresh {
        path: String,
        deep: bool,
    },
    /// Walk everything; then tell the sender, if any.
    WalkAll(Option<SyncSender<()>>),
}

/// What the index is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// A walk of the whole tree has completed (now or in an earlier run).
    pub complete: bool,
    /// A walk is running.
    pub walking: bool,
    /// Folders watched for host changes.
    pub watched: usize,
}

struct Shared {
    complete: AtomicBool,
    walking: AtomicBool,
    /// The queue overflowed: walk everything.
    overflow: AtomicBool,
    /// The [`Search`] was dropped: the threads end at their next wake-up
    /// (the watch thread holds a sender, so the queue alone never closes).
    stopped: AtomicBool,
    watcher: Option<Arc<Watcher>>,
}

/// The index of one served folder, and its indexer.
pub struct Search {
    db: PathBuf,
    tx: SyncSender<Job>,
    readers: Mutex<Vec<Store>>,
    shared: Arc<Shared>,
}

impl Search {
    /// Opens (or creates) the index of the folder `settings.root` on this
    /// host, watched for changes made behind the server's back, and starts
    /// its threads.
    pub fn open(settings: Settings) -> Result<Search> {
        let watcher = Watcher::new(&settings.root, settings.watch_budget);
        let local = Local {
            root: settings.root.clone(),
        };
        Search::start(settings, Box::new(local), watcher)
    }

    /// Opens (or creates) the index of the tree `source` lists (an object
    /// store): nothing watches it, so besides the paths it is told
    /// ([`Search::refresh`]) it walks it again every `reconcile_every`.
    pub fn open_with(settings: Settings, source: Box<dyn Source>) -> Result<Search> {
        Search::start(settings, source, None)
    }

    fn start(
        settings: Settings,
        source: Box<dyn Source>,
        watcher: Option<Arc<Watcher>>,
    ) -> Result<Search> {
        if let Some(dir) = settings.db.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let store = Store::open_writer(&settings.db)?;
        let complete = store.meta("complete")?.unwrap_or(0) == 1;
        let shared = Arc::new(Shared {
            complete: AtomicBool::new(complete),
            walking: AtomicBool::new(settings.walk_at_start),
            overflow: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            watcher: watcher.clone(),
        });
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        if let Some(w) = watcher {
            let tx = tx.clone();
            let sh = shared.clone();
            std::thread::Builder::new()
                .name("search-watch".into())
                .spawn(move || {
                    w.run(|seen| {
                        let job = match seen {
                            Seen::Path(path) => Job::Refresh { path, deep: true },
                            Seen::Overflow => Job::WalkAll(None),
                        };
                        send(&tx, &sh, job)
                    })
                })?;
        }
        let db = settings.db.clone();
        let indexer = Indexer {
            store,
            source,
            shared: shared.clone(),
            settings,
            gen: 0,
            texts_left: true,
        };
        std::thread::Builder::new()
            .name("search-index".into())
            .spawn(move || indexer.run(rx))?;
        Ok(Search {
            db,
            tx,
            readers: Mutex::new(Vec::new()),
            shared,
        })
    }
}

/// Queues `job`; a full queue becomes one walk of everything. False once
/// the indexer is gone.
fn send(tx: &SyncSender<Job>, shared: &Shared, job: Job) -> bool {
    if shared.stopped.load(Ordering::Relaxed) {
        return false;
    }
    match tx.try_send(job) {
        Ok(()) => true,
        Err(TrySendError::Full(_)) => {
            shared.overflow.store(true, Ordering::Relaxed);
            true
        }
        Err(TrySendError::Disconnected(_)) => false,
    }
}

impl Drop for Search {
    fn drop(&mut self) {
        // A dropped index must not go on writing: a new one may be open
        // on the same file (a restart in one process).
        self.shared.stopped.store(true, Ordering::Relaxed);
    }
}

impl Search {
    /// `path` (below the root, `/`-separated) may have changed: the
    /// indexer looks at it again; `deep` also walks it if it is a folder
    /// (a new or moved-in folder).
    pub fn refresh(&self, path: &str, deep: bool) {
        let job = Job::Refresh {
            path: path.trim_matches('/').to_string(),
            deep,
        };
        send(&self.tx, &self.shared, job);
    }

    /// Everything may have changed (a change stream's subscriber fell
    /// behind): walk it all again.
    pub fn walk_all(&self) {
        send(&self.tx, &self.shared, Job::WalkAll(None));
    }

    /// Walks everything now and waits (at most `timeout`) until the index
    /// holds what the tree holds: for tests and tools that change the tree
    /// behind the server's back and must not race the watch. Whether the
    /// walk finished in time.
    pub fn walk_and_wait(&self, timeout: Duration) -> bool {
        let (done, wait) = mpsc::sync_channel(1);
        if self.tx.send(Job::WalkAll(Some(done))).is_err() {
            return false;
        }
        wait.recv_timeout(timeout).is_ok()
    }

    pub fn status(&self) -> Status {
        Status {
            complete: self.shared.complete.load(Ordering::Relaxed),
            walking: self.shared.walking.load(Ordering::Relaxed),
            watched: self.shared.watcher.as_ref().map_or(0, |w| w.len()),
        }
    }

    /// Up to `limit` names below folder `below` matching `q`, in a stable
    /// order, after the hit whose `id` is `after` (0: from the start).
    pub fn names(&self, below: &str, q: &NameQuery, after: i64, limit: usize) -> Result<Vec<Hit>> {
        self.with_reader(|s| s.names(below, q, after, limit))
    }

    /// Up to `limit` files below `below` whose words match `q`.
    pub fn texts(&self, below: &str, q: &TextQuery, after: i64, limit: usize) -> Result<Vec<Hit>> {
        self.with_reader(|s| s.texts(below, q, after, limit))
    }

    /// How many names the index holds.
    pub fn count(&self) -> Result<u64> {
        self.with_reader(|s| s.count())
    }

    fn with_reader<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        let kept = self.readers.lock().ok().and_then(|mut r| r.pop());
        let store = match kept {
            Some(s) => s,
            None => Store::open_reader(&self.db)?,
        };
        let out = f(&store);
        if let Ok(mut r) = self.readers.lock() {
            if r.len() < READERS {
                r.push(store);
            }
        }
        out
    }
}

struct Indexer {
    store: Store,
    source: Box<dyn Source>,
    shared: Arc<Shared>,
    settings: Settings,
    /// The walk generation last used (rows a walk did not reach are gone).
    gen: i64,
    /// The text pass may have files to read.
    texts_left: bool,
}

impl Indexer {
    fn run(mut self, rx: Receiver<Job>) {
        lower_priority();
        self.gen = self.store.meta("gen").ok().flatten().unwrap_or(0);
        if let Err(e) = self.store.set_max_text(self.settings.max_text_size) {
            tracing::warn!("{e}");
        }
        let mut last_walk = Instant::now();
        if self.settings.walk_at_start {
            self.walk_all();
        }
        loop {
            let idle = if self.texts_left {
                Duration::ZERO
            } else {
                Duration::from_secs(1)
            };
            let mut jobs = Vec::new();
            match rx.recv_timeout(idle) {
                Ok(j) => jobs.push(j),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            if self.shared.stopped.load(Ordering::Relaxed) {
                return;
            }
            while jobs.len() < 4096 {
                match rx.try_recv() {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
            let overflow = self.shared.overflow.swap(false, Ordering::Relaxed);
            let unwatched = self
                .shared
                .watcher
                .as_ref()
                .is_none_or(|w| w.len() >= self.settings.watch_budget);
            let due = unwatched && last_walk.elapsed() >= self.settings.reconcile_every;
            let waiting: Vec<SyncSender<()>> = jobs
                .iter_mut()
                .filter_map(|j| match j {
                    Job::WalkAll(done) => done.take(),
                    _ => None,
                })
                .collect();
            let walk_asked = jobs.iter().any(|j| matches!(j, Job::WalkAll(_)));
            if overflow || due || walk_asked {
                self.walk_all();
                last_walk = Instant::now();
                for done in waiting {
                    let _ = done.send(());
                }
            } else if !jobs.is_empty() {
                self.apply(jobs);
            } else if self.texts_left {
                self.text_pass();
            }
        }
    }

    fn walk_all(&mut self) {
        self.shared.walking.store(true, Ordering::Relaxed);
        match self.walk("") {
            Ok(()) => {
                let _ = self.store.set_meta("complete", 1);
                self.shared.complete.store(true, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!("{e}; the next walk tries again"),
        }
        self.texts_left = true;
        self.shared.walking.store(false, Ordering::Relaxed);
    }

    /// The paths told, each once (a folder walked also covers the paths
    /// below it told in the same batch).
    fn apply(&mut self, jobs: Vec<Job>) {
        let mut seen = HashSet::new();
        let _ = self.store.begin();
        for job in jobs {
            if let Job::Refresh { path, deep } = job {
                if seen.insert(path.clone()) {
                    if let Err(e) = self.refresh(&path, deep) {
                        tracing::warn!("{e}");
                    }
                }
            }
        }
        let _ = self.store.commit();
        self.texts_left = true;
    }

    fn refresh(&mut self, path: &str, deep: bool) -> Result<()> {
        if path.is_empty() {
            // The root itself: only a walk can say what changed.
            return if deep { self.walk("") } else { Ok(()) };
        }
        if path.split('/').any(reserved) {
            return Ok(());
        }
        match self.source.stat(path)? {
            None => {
                self.store.remove_tree(path)?;
            }
            Some(meta) => {
                let changed = self.store.upsert(path, meta, self.gen)?;
                if meta.dir && (deep || changed) {
                    // A walk inside this batch's transaction: commit first
                    // so its own batches stand alone.
                    self.store.commit()?;
                    let r = self.walk(path);
                    self.store.begin()?;
                    r?;
                }
            }
        }
        Ok(())
    }

    /// Walks folder `top` (`""`: the root): every name below it recorded,
    /// every folder watched, and the rows it no longer holds forgotten.
    fn walk(&mut self, top: &str) -> Result<()> {
        self.gen += 1;
        let gen = self.gen;
        self.store.set_meta("gen", gen)?;
        let mut stack = vec![top.to_string()];
        let mut written = 0usize;
        self.store.begin()?;
        let (source, store) = (&self.source, &self.store);
        while let Some(dir) = stack.pop() {
            if let Some(w) = &self.shared.watcher {
                w.add(&dir);
            }
            let mut failed = None;
            let listed = source.list(&dir, &mut |name, meta| {
                if reserved(&name) {
                    return true;
                }
                let path = if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                };
                let mut step = || -> Result<()> {
                    store.upsert(&path, meta, gen)?;
                    written += 1;
                    if written == WALK_BATCH {
                        written = 0;
                        store.commit()?;
                        store.begin()?;
                    }
                    Ok(())
                };
                if let Err(e) = step() {
                    failed = Some(e);
                    return false;
                }
                if meta.dir {
                    stack.push(path);
                }
                true
            });
            if let Some(e) = failed {
                let _ = store.commit();
                return Err(e);
            }
            if let Err(e) = listed {
                // Unknown, not gone: keep every row this walk did not reach.
                let _ = store.commit();
                return Err(e.into());
            }
        }
        self.store.remove_unseen(top, gen)?;
        self.store.commit()?;
        Ok(())
    }

    /// Reads a few text-like files not indexed yet (one at a time: memory
    /// stays one file of at most `max_text_size`).
    fn text_pass(&mut self) {
        let max = self.settings.max_text_size;
        if max == 0 {
            self.texts_left = false;
            return;
        }
        let todo = match self.store.untexted(TEXT_BATCH, max) {
            Ok(t) => t,
            Err(_) => {
                self.texts_left = false;
                return;
            }
        };
        if todo.is_empty() {
            self.texts_left = false;
            return;
        }
        let _ = self.store.begin();
        for (id, path) in todo {
            let name = path.rsplit('/').next().unwrap_or(&path);
            let body = if is_text_name(name) {
                self.source.read_text(&path, max)
            } else {
                None
            };
            let _ = self.store.set_text(id, body.as_deref());
        }
        let _ = self.store.commit();
    }
}

/// The server's own names (`.wirespeed-…`) are never indexed.
fn reserved(name: &str) -> bool {
    name.starts_with(".wirespeed-")
}

/// The indexer yields to everything else: lowest CPU priority and the
/// idle I/O class, for this thread only.
fn lower_priority() {
    // SAFETY: plain system calls on the calling thread (who = 0), no memory.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
        const IOPRIO_WHO_PROCESS: libc::c_long = 1;
        const IOPRIO_CLASS_IDLE: libc::c_long = 3;
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0,
            IOPRIO_CLASS_IDLE << 13,
        );
    }
}

impl std::fmt::Debug for Search {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Search")
            .field("db", &self.db)
            .field("status", &self.status())
            .finish()
    }
}
