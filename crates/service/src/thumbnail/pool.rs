//! The few threads thumbnails are made on, off the async workers, and the
//! bounded queue in front of them.
//!
//! Decoding is CPU work of tens of milliseconds; on the async workers it
//! would stall every other connection. Here at most [`Pool::threads`] run
//! at once, at most `cap` wait (more is refused, the caller answers 503),
//! the oldest waiting job runs first, and a job whose requester has gone
//! (its answer's receiver dropped: the viewer scrolled away and the
//! connection closed) is dropped unrun.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use tokio::sync::oneshot;

/// One waiting job: it runs, or is dropped once nobody waits for it.
trait Job: Send {
    fn abandoned(&self) -> bool;
    fn run(self: Box<Self>);
}

struct Task<T, F> {
    work: F,
    answer: oneshot::Sender<T>,
}

impl<T: Send, F: FnOnce() -> T + Send> Job for Task<T, F> {
    fn abandoned(&self) -> bool {
        self.answer.is_closed()
    }
    fn run(self: Box<Self>) {
        if self.answer.is_closed() {
            return;
        }
        let _ = self.answer.send((self.work)());
    }
}

/// The queue is full of jobs someone still waits for.
#[derive(Debug, PartialEq, Eq)]
pub struct Busy;

/// A fixed set of threads, started on the first job.
pub struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
    cap: usize,
    threads: usize,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Box<dyn Job>>,
    started: bool,
}

impl Pool {
    /// `threads` workers (at least one) and at most `cap` jobs waiting.
    pub fn new(threads: usize, cap: usize) -> Self {
        Pool {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                ready: Condvar::new(),
                cap: cap.max(1),
                threads: threads.max(1),
            }),
        }
    }

    /// Two threads, or one on a one-core machine: thumbnails never take
    /// more of the machine than that.
    pub fn sized_for_machine(cap: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Pool::new(cores.min(2), cap)
    }

    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// Jobs waiting now (not those running).
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.lock().jobs.len()
    }

    /// Queues `work`; its result comes on the receiver. Dropping the
    /// receiver before a thread takes the job cancels it.
    pub fn submit<T, F>(&self, work: F) -> Result<oneshot::Receiver<T>, Busy>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (answer, rx) = oneshot::channel();
        let mut state = self.lock();
        if state.jobs.len() >= self.shared.cap {
            // Jobs nobody waits for any more make room first.
            state.jobs.retain(|j| !j.abandoned());
            if state.jobs.len() >= self.shared.cap {
                return Err(Busy);
            }
        }
        state.jobs.push_back(Box::new(Task { work, answer }));
        if !state.started {
            state.started = true;
            for i in 0..self.shared.threads {
                let shared = self.shared.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("thumbnail-{i}"))
                    .spawn(move || shared.work());
                if spawned.is_err() {
                    // Without a thread nothing would ever run: say busy, and
                    // try again on the next job.
                    state.started = false;
                    state.jobs.pop_back();
                    return Err(Busy);
                }
            }
        }
        drop(state);
        self.shared.ready.notify_one();
        Ok(rx)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Shared {
    fn work(&self) {
        loop {
            let job = {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    match state.jobs.pop_front() {
                        Some(job) if job.abandoned() => continue,
                        Some(job) => break job,
                        None => {
                            state = self
                                .ready
                                .wait(state)
                                .unwrap_or_else(PoisonError::into_inner)
                        }
                    }
                }
            };
            // A panic in a decoder must not take the thread (and so the
            // pool) with it; its requester sees the answer dropped.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A job that holds its thread until told to go.
    fn blocker(pool: &Pool) -> (mpsc::Sender<()>, oneshot::Receiver<()>) {
        let (go, wait) = mpsc::channel::<()>();
        let rx = pool
            .submit(move || {
                let _ = wait.recv();
            })
            .unwrap();
        (go, rx)
    }

    fn wait_until(mut f: impl FnMut() -> bool) {
        for _ in 0..500 {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        panic!("condition not reached");
    }

    #[test]
    fn past_the_cap_is_busy_and_abandoned_jobs_make_room() {
        let pool = Pool::new(1, 2);
        let (go, running) = blocker(&pool);
        wait_until(|| pool.waiting() == 0);
        let a = pool.submit(|| 1).unwrap();
        let b = pool.submit(|| 2).unwrap();
        assert_eq!(pool.submit(|| 3).err(), Some(Busy));
        // The viewer of `a` scrolled away: its place is free.
        drop(a);
        let c = pool.submit(|| 3).unwrap();
        go.send(()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            running.await.unwrap();
            assert_eq!(b.await.unwrap(), 2);
            assert_eq!(c.await.unwrap(), 3);
        });
    }

    #[test]
    fn oldest_first_and_a_cancelled_job_never_runs() {
        let pool = Pool::new(1, 8);
        let (go, _running) = blocker(&pool);
        let (seen_tx, seen) = mpsc::channel();
        let mut kept = Vec::new();
        for i in 0..4 {
            let seen_tx = seen_tx.clone();
            kept.push(pool.submit(move || seen_tx.send(i).unwrap()).unwrap());
        }
        // The second is abandoned before a thread reaches it.
        kept.remove(1);
        go.send(()).unwrap();
        let order: Vec<i32> = (0..3)
            .map(|_| seen.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        assert_eq!(order, vec![0, 2, 3]);
        assert!(seen.recv_timeout(Duration::from_millis(50)).is_err());
    }

    #[test]
    fn a_panicking_job_leaves_the_pool_working() {
        let pool = Pool::new(1, 4);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let boom = pool.submit(|| -> u8 { panic!("decoder bug") }).unwrap();
            assert!(boom.await.is_err());
            assert_eq!(pool.submit(|| 7).unwrap().await.unwrap(), 7);
        });
    }
}
