//! The access log, off the request's path: each worker thread formats its
//! lines into its own buffer (an uncontended lock, no allocation, no
//! system call); a writer thread writes a buffer once it holds
//! [`BATCH`] bytes (handed over, one wake-up per batch), sweeps every
//! buffer each [`INTERVAL`], and everything at [`AccessLog::flush`] and on
//! drop. A clean stop loses nothing; a crash loses at most the last
//! interval's lines (and any batch not yet written).

mod line;

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub(crate) use line::civil_time;
use line::{write_line, Clock};
pub use line::{Entry, Format};

/// A thread's buffer is handed to the writer once it holds this much.
pub const BATCH: usize = 64 << 10;
/// The longest a line waits in a buffer (bounded loss on a crash).
pub const INTERVAL: Duration = Duration::from_millis(100);
/// Full batches waiting for the writer beyond which new ones are dropped
/// (counted, and reported as a warning) instead of growing memory when the
/// output stalls: 4 MiB.
const MAX_QUEUED: usize = 64;

/// Where lines go.
pub type Sink = Box<dyn Write + Send>;

/// One thread's unwritten lines.
#[derive(Default)]
struct Local {
    buf: Vec<u8>,
    clock: Clock,
}

struct Shared {
    format: Format,
    sink: Mutex<Sink>,
    /// Every thread's buffer (a thread that ended leaves its buffer here
    /// until it is swept).
    locals: Mutex<Vec<Arc<Mutex<Local>>>>,
    full: Mutex<VecDeque<Vec<u8>>>,
    wake: Condvar,
    stop: AtomicBool,
    dropped: AtomicU64,
    /// Held for a whole drain: a buffer taken by the writer thread is
    /// written before another drain (`flush` at exit) can see the buffers
    /// empty and return. Without it, a stop racing the interval's sweep
    /// lost the lines being written (the process exited under them).
    draining: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn write(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        // An unwritable log (closed stderr) must not stop the server.
        let mut sink = lock(&self.sink);
        let _ = sink.write_all(bytes).and_then(|()| sink.flush());
    }

    /// Write every full batch, then (`sweep`) every thread's partial buffer.
    fn drain(&self, sweep: bool) {
        let _draining = lock(&self.draining);
        loop {
            let batch = lock(&self.full).pop_front();
            match batch {
                Some(b) => self.write(&b),
                None => break,
            }
        }
        if !sweep {
            return;
        }
        let locals: Vec<_> = lock(&self.locals).clone();
        for l in &locals {
            let taken = {
                let mut l = lock(l);
                if l.buf.is_empty() {
                    continue;
                }
                std::mem::replace(&mut l.buf, Vec::with_capacity(BATCH + 1024))
            };
            self.write(&taken);
        }
        drop(locals);
        // Buffers of threads that ended (only this list holds them) go.
        lock(&self.locals).retain(|l| Arc::strong_count(l) > 1 || !lock(l).buf.is_empty());
        let dropped = self.dropped.swap(0, Relaxed);
        if dropped > 0 {
            tracing::warn!(
                bytes = dropped,
                "the access log could not keep up with its output; lines were dropped"
            );
        }
    }

    fn hand_over(&self, batch: Vec<u8>) {
        let mut q = lock(&self.full);
        if q.len() >= MAX_QUEUED {
            self.dropped.fetch_add(batch.len() as u64, Relaxed);
            return;
        }
        q.push_back(batch);
        drop(q);
        self.wake.notify_one();
    }

    fn run(&self) {
        let mut last_sweep = Instant::now();
        loop {
            {
                let q = lock(&self.full);
                if q.is_empty() && !self.stop.load(Relaxed) {
                    let wait = INTERVAL.saturating_sub(last_sweep.elapsed());
                    drop(self.wake.wait_timeout(q, wait));
                }
            }
            let stopping = self.stop.load(Relaxed);
            let sweep = stopping || last_sweep.elapsed() >= INTERVAL;
            self.drain(sweep);
            if sweep {
                last_sweep = Instant::now();
            }
            if stopping {
                return;
            }
        }
    }
}

/// This thread's buffer in each access log of the process (one, but tests
/// run several servers).
type Mine = Vec<(Weak<Shared>, Arc<Mutex<Local>>)>;

thread_local! {
    static MINE: std::cell::RefCell<Mine> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The access log: [`record`](Self::record) a line per request.
pub struct AccessLog {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessLog")
            .field("format", &self.shared.format)
            .finish_non_exhaustive()
    }
}

impl AccessLog {
    /// Lines in `format` to stderr.
    pub fn stderr(format: Format) -> std::io::Result<Self> {
        Self::new(format, Box::new(std::io::stderr()))
    }

    /// Lines in `format` to `sink`, written by a thread of their own.
    pub fn new(format: Format, sink: Sink) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            format,
            sink: Mutex::new(sink),
            locals: Mutex::new(Vec::new()),
            full: Mutex::new(VecDeque::new()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            draining: Mutex::new(()),
        });
        let s = shared.clone();
        let writer = std::thread::Builder::new()
            .name("wirespeed-access".into())
            .spawn(move || s.run())?;
        Ok(AccessLog {
            shared,
            writer: Some(writer),
        })
    }

    /// Add one request's line to this thread's buffer.
    pub fn record(&self, e: &Entry<'_>) {
        let format = self.shared.format;
        self.append(|clock, buf| write_line(format, clock, e, buf));
    }

    /// Add a line made elsewhere (`line` ends with its newline): the audit
    /// trail's JSON lines take the same way off the request's path.
    pub fn record_raw(&self, line: &[u8]) {
        self.append(|_, buf| buf.extend_from_slice(line));
    }

    /// Write what is recorded so far to the old sink, then go on in `sink`
    /// (a log file reopened after rotation).
    pub fn replace_sink(&self, sink: Sink) {
        self.shared.drain(true);
        *lock(&self.shared.sink) = sink;
    }

    fn append(&self, write_line: impl Fn(&mut Clock, &mut Vec<u8>)) {
        let done = MINE.try_with(|mine| {
            let Ok(mut mine) = mine.try_borrow_mut() else {
                return false;
            };
            // A Weak keeps its allocation, so a pointer names one log for good.
            let me = Arc::as_ptr(&self.shared);
            let i = match mine.iter().position(|(s, _)| std::ptr::eq(s.as_ptr(), me)) {
                Some(i) => i,
                None => {
                    mine.retain(|(s, _)| s.strong_count() > 0);
                    let l = Arc::new(Mutex::new(Local {
                        buf: Vec::with_capacity(BATCH + 1024),
                        clock: Clock::default(),
                    }));
                    lock(&self.shared.locals).push(l.clone());
                    mine.push((Arc::downgrade(&self.shared), l));
                    mine.len() - 1
                }
            };
            let mut l = lock(&mine[i].1);
            let Local { buf, clock } = &mut *l;
            write_line(clock, buf);
            if buf.len() >= BATCH {
                let batch = std::mem::replace(buf, Vec::with_capacity(BATCH + 1024));
                drop(l);
                self.shared.hand_over(batch);
            }
            true
        });
        if done != Ok(true) {
            // This thread is ending (its locals are gone): write directly.
            let mut out = Vec::new();
            write_line(&mut Clock::default(), &mut out);
            self.shared.write(&out);
        }
    }

    /// Write every line recorded so far (before the process exits).
    pub fn flush(&self) {
        self.shared.drain(true);
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.shared.stop.store(true, Relaxed);
        self.shared.wake.notify_one();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        self.shared.drain(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    /// A sink tests can read.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn entry(path: &str) -> Entry<'_> {
        Entry {
            at: UNIX_EPOCH,
            method: "GET",
            path,
            status: 200,
            bytes_in: 0,
            bytes_out: 1,
            duration: Duration::ZERO,
            peer: "127.0.0.1:1".parse().unwrap(),
            client: None,
            user_agent: None,
        }
    }

    /// A sink whose writes wait for the test's go-ahead, announcing each.
    struct Gated {
        out: Captured,
        started: std::sync::mpsc::Sender<()>,
        go: Arc<(Mutex<bool>, Condvar)>,
    }

    impl Write for Gated {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let _ = self.started.send(());
            let (open, cv) = &*self.go;
            let mut open = lock(open);
            while !*open {
                open = cv.wait(open).unwrap_or_else(|e| e.into_inner());
            }
            drop(open);
            self.out.write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// `flush` returns only once every recorded line is written, even while
    /// the writer thread is in the middle of writing them (the stop at exit
    /// used to lose that line: CI's `the_json_log_is_json_from_the_first_line`).
    #[test]
    fn flush_waits_for_a_sweep_in_progress() {
        let out = Captured::default();
        let (started, writing) = std::sync::mpsc::channel();
        let go = Arc::new((Mutex::new(false), Condvar::new()));
        let sink = Gated {
            out: out.clone(),
            started,
            go: go.clone(),
        };
        let log = Arc::new(AccessLog::new(Format::Text, Box::new(sink)).unwrap());
        log.record(&entry("/a"));
        // The writer's interval sweep took the line and is writing it.
        writing.recv_timeout(Duration::from_secs(5)).unwrap();
        let flusher = {
            let log = log.clone();
            std::thread::spawn(move || log.flush())
        };
        std::thread::sleep(Duration::from_millis(50));
        let returned_early = flusher.is_finished();
        // Open the gate before asserting: a failing test must not leave the
        // writer thread blocked (the log's drop joins it).
        *lock(&go.0) = true;
        go.1.notify_all();
        flusher.join().unwrap();
        assert!(
            !returned_early,
            "flush returned while a line was still being written"
        );
        assert_eq!(lines(&out), 1);
    }

    fn lines(s: &Captured) -> usize {
        lock(&s.0).iter().filter(|&&b| b == b'\n').count()
    }

    #[test]
    fn lines_wait_for_a_batch_or_the_interval_and_all_arrive_at_drop() {
        let out = Captured::default();
        let log = AccessLog::new(Format::Text, Box::new(out.clone())).unwrap();
        log.record(&entry("/a"));
        // Not written on the request's path …
        assert_eq!(lines(&out), 0);
        // … but within an interval or so.
        let t = Instant::now();
        while lines(&out) == 0 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(lines(&out), 1);
        // Many threads, many lines: every one arrives, whole.
        let log = Arc::new(log);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..5000 {
                        log.record(&entry(&format!("/t{t}/{i}")));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(Arc::into_inner(log).unwrap());
        assert_eq!(lines(&out), 20_001);
        let text = String::from_utf8(lock(&out.0).clone()).unwrap();
        assert!(text
            .lines()
            .all(|l| l.contains("wirespeed::access: method=\"GET\"")));
    }
}
