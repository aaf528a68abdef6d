//! `serve --hook URL` and `--hook-command CMD`: each event, in order, POSTed
//! as JSON to each URL (signed: `X-Wirespeed-Signature` is `sha256=HEX`, the
//! HMAC-SHA256 of the body under `--hook-secret`; the body carries its time
//! and sequence number, so a receiver refuses replays and old events), and
//! given on the standard input of each command.
//!
//! Never on the request's path: a request puts its event in a bounded queue
//! and goes on; one thread delivers. When the queue is full the oldest
//! event waiting is dropped, counted and logged (a hook that is down must
//! not hold memory or a transfer). A POST is tried again after 0.5, 1, 2
//! and 4 s (a 2xx answer is delivered; anything else, or no answer, is
//! not); a command has a time limit and is killed past it. Delivery is at
//! least once: a receiver that answered after the time limit may get an
//! event twice, and tells by its `seq`.
//!
//! URLs are `http://` or `https://` (`hook_post.rs`: a plain HTTP/1.1 POST,
//! over rustls for https).

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::hook_post::{post, HookTls, HookUrl};

/// Waits between the tries of one POST.
const BACKOFF: [Duration; 4] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// What `serve` gives the hooks.
#[derive(Debug, Clone)]
pub struct HookConfig {
    pub urls: Vec<HookUrl>,
    /// `--hook-secret`: the HMAC key (without it, no signature header).
    pub secret: Option<Vec<u8>>,
    /// `--hook-command`: run by `sh -c`, the event on stdin.
    pub commands: Vec<String>,
    /// Events waiting at most; more drop the oldest.
    pub queue: usize,
    /// One POST's or one command's time limit.
    pub timeout: Duration,
    /// How https URLs are reached (`None`: only http ones work).
    pub tls: Option<HookTls>,
}

impl Default for HookConfig {
    fn default() -> Self {
        HookConfig {
            urls: Vec::new(),
            secret: None,
            commands: Vec::new(),
            queue: 4096,
            timeout: Duration::from_secs(10),
            tls: None,
        }
    }
}

struct Inner {
    cfg: HookConfig,
    queue: Mutex<VecDeque<Vec<u8>>>,
    wake: Condvar,
    /// Events taken by the thread and not yet delivered.
    busy: AtomicBool,
    stop: AtomicBool,
    dropped: AtomicU64,
    /// The URLs (by index) whose last attempt failed: a failure is said
    /// at once, once, until the receiver answers again (a certificate not
    /// trusted or a receiver down shows in the log at the first event,
    /// not after every retry of it).
    failing: Mutex<std::collections::HashSet<usize>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The hooks' queue and its delivering thread.
pub struct Hooks {
    inner: Arc<Inner>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("urls", &self.inner.cfg.urls.len())
            .field("commands", &self.inner.cfg.commands.len())
            .finish_non_exhaustive()
    }
}

impl Hooks {
    pub fn start(cfg: HookConfig) -> std::io::Result<Hooks> {
        let inner = Arc::new(Inner {
            cfg,
            queue: Mutex::new(VecDeque::new()),
            wake: Condvar::new(),
            busy: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            failing: Mutex::default(),
        });
        let i = inner.clone();
        let thread = std::thread::Builder::new()
            .name("wirespeed-hooks".into())
            .spawn(move || i.run())?;
        Ok(Hooks {
            inner,
            thread: Some(thread),
        })
    }

    /// Queue one event (its JSON line); never waits.
    pub(super) fn send(&self, line: Vec<u8>) {
        let mut q = lock(&self.inner.queue);
        if q.len() >= self.inner.cfg.queue.max(1) {
            q.pop_front();
            self.inner.dropped.fetch_add(1, Relaxed);
        }
        q.push_back(line);
        drop(q);
        self.inner.wake.notify_one();
    }

    /// Events dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Relaxed)
    }

    /// Wait (a bounded time) for the queue to be delivered.
    pub fn flush(&self) {
        let until = Instant::now() + self.inner.cfg.timeout;
        while Instant::now() < until {
            if lock(&self.inner.queue).is_empty() && !self.inner.busy.load(Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Hooks {
    fn drop(&mut self) {
        self.flush();
        self.inner.stop.store(true, Relaxed);
        self.inner.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Inner {
    fn run(&self) {
        let mut told = 0;
        loop {
            let next = {
                let mut q = lock(&self.queue);
                loop {
                    if let Some(e) = q.pop_front() {
                        self.busy.store(true, Relaxed);
                        break Some(e);
                    }
                    if self.stop.load(Relaxed) {
                        break None;
                    }
                    q = self
                        .wake
                        .wait_timeout(q, Duration::from_secs(1))
                        .map_or_else(|e| e.into_inner().0, |(q, _)| q);
                }
            };
            let Some(body) = next else {
                return;
            };
            let dropped = self.dropped.load(Relaxed);
            if dropped > told {
                tracing::warn!(target: "wirespeed::hooks", dropped = dropped - told, "hook queue full: the oldest events were dropped");
                told = dropped;
            }
            for (i, url) in self.cfg.urls.iter().enumerate() {
                self.post_with_retries(i, url, &body);
            }
            for cmd in &self.cfg.commands {
                if let Err(e) = run_command(cmd, &body, self.cfg.timeout) {
                    tracing::warn!(target: "wirespeed::hooks", command = %cmd, error = %e, "hook command failed");
                }
            }
            self.busy.store(false, Relaxed);
        }
    }

    fn post_with_retries(&self, index: usize, url: &HookUrl, body: &[u8]) {
        let mut last = String::new();
        for (i, wait) in std::iter::once(Duration::ZERO).chain(BACKOFF).enumerate() {
            if self.stop.load(Relaxed) && i > 0 {
                break;
            }
            std::thread::sleep(wait);
            let (secret, tls) = (self.cfg.secret.as_deref(), self.cfg.tls.as_ref());
            match post(url, body, secret, self.cfg.timeout, tls) {
                Ok(a) if (200..300).contains(&a.status) => {
                    if lock(&self.failing).remove(&index) {
                        tracing::info!(target: "wirespeed::hooks", host = %url.host, path = %url.path, "hook receiver answers again");
                    }
                    return;
                }
                Ok(a) => last = format!("answered {}", a.status),
                Err(e) => last = e.to_string(),
            }
            if lock(&self.failing).insert(index) {
                tracing::warn!(target: "wirespeed::hooks", host = %url.host, path = %url.path, error = %last, "hook POST failed; retrying with back-off (said once until it answers again)");
            }
        }
        tracing::warn!(target: "wirespeed::hooks", host = %url.host, path = %url.path, error = %last, "hook POST failed after retries; event not delivered");
    }
}

/// Run `cmd` by `sh -c` with `body` on stdin; killed past `timeout`.
/// Its exit status, as a result.
pub(super) fn run_command(cmd: &str, body: &[u8], timeout: Duration) -> std::io::Result<()> {
    run_command_saying(cmd, body, timeout, &mut Vec::new())
}

/// [`run_command`], keeping the first KiB the command prints in `said`
/// (a refusal's message).
pub(super) fn run_command_saying(
    cmd: &str,
    body: &[u8],
    timeout: Duration,
    said: &mut Vec<u8>,
) -> std::io::Result<()> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is no failure.
        let _ = stdin.write_all(body);
    }
    // Read what it says on a thread of its own (bounded), so a command
    // printing more than a pipe holds is not stalled, nor the wait below.
    let reader = child.stdout.take().map(|out| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let _ = out.take(1024).read_to_end(&mut kept);
            kept
        })
    });
    let until = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            if let Some(r) = reader {
                *said = r.join().unwrap_or_default();
            }
            return if status.success() {
                Ok(())
            } else {
                Err(std::io::Error::other(format!("exited with {status}")))
            };
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("killed past its time limit"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_time_out_and_say_their_status() {
        assert!(run_command("cat >/dev/null", b"{}", Duration::from_secs(5)).is_ok());
        assert!(run_command("exit 3", b"{}", Duration::from_secs(5)).is_err());
        let t = Instant::now();
        let e = run_command("sleep 5", b"", Duration::from_millis(100)).unwrap_err();
        assert!(e.to_string().contains("time limit") && t.elapsed() < Duration::from_secs(3));
    }
}
