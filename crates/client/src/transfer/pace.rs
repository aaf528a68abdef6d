//! The whole-file hash of an upload whose body goes out with sendfile is
//! taken on a thread beside the transfer. Unpaced, that thread reads and
//! hashes the file as fast as a core allows, in the transfer's first
//! seconds: a second read of the file and seconds of a core taken from
//! the sending (and, on a small machine, from everything else) just when
//! the connections ramp up. Paced, it reads at most [`Pace::LEAD`] bytes
//! past what the transfer has sent, so its cost spreads over the transfer
//! at the link's rate, and it is still done when the last byte is: a hash
//! slower than the link is never held back.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::Error;

const PACED: u8 = 0;
const FREE: u8 = 1;
const STOP: u8 = 2;

struct State {
    /// Bytes of the file the transfer has sent (or had before it began).
    sent: AtomicU64,
    lead: u64,
    mode: AtomicU8,
}

/// The transfer's side: counts what it sent.
#[derive(Clone)]
pub(crate) struct Pace(Arc<State>);

/// Ends the pacing when the transfer ends: [`Release::finish`] lets the
/// hash run to the end at full speed; dropped without it (a failure, or
/// the transfer's future dropped on Ctrl-C) the hash stops, so no thread
/// waits for bytes that will not be sent.
pub(crate) struct Release(Arc<State>);

impl Pace {
    /// How far the hash may run ahead of the transfer: a short burst at
    /// the start, and a hash that never waits on the transfer's next write.
    pub const LEAD: u64 = 64 << 20;

    /// A transfer that has `already` bytes on the other side.
    pub fn new(already: u64) -> (Pace, Release) {
        Pace::with_lead(already, Self::LEAD)
    }

    fn with_lead(already: u64, lead: u64) -> (Pace, Release) {
        let s = Arc::new(State {
            sent: AtomicU64::new(already),
            lead,
            mode: AtomicU8::new(PACED),
        });
        (Pace(s.clone()), Release(s))
    }

    /// `n` more bytes went out.
    pub fn sent(&self, n: u64) {
        self.0.sent.fetch_add(n, Ordering::Relaxed);
    }

    /// The transfer is known to have the first `offset` bytes on the
    /// other side (a resumed upload's offset).
    pub fn reached(&self, offset: u64) {
        self.0.sent.fetch_max(offset, Ordering::Relaxed);
    }

    /// Until the hash may read up to `end`: false when it is to stop.
    fn wait_for(&self, end: u64) -> bool {
        loop {
            match self.0.mode.load(Ordering::Relaxed) {
                FREE => return true,
                STOP => return false,
                _ => {}
            }
            if end
                <= self
                    .0
                    .sent
                    .load(Ordering::Relaxed)
                    .saturating_add(self.0.lead)
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Release {
    /// The transfer is over: the hash may finish at full speed.
    pub fn finish(self) {
        self.0.mode.store(FREE, Ordering::Relaxed);
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        // After finish() this keeps FREE; otherwise the hash stops.
        let _ = self
            .0
            .mode
            .compare_exchange(PACED, STOP, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The sha-256 of the first `len` bytes of `path`, read no further ahead
/// of the transfer than `pace` allows (on a blocking thread).
pub(crate) fn spawn_hash(
    path: &Path,
    len: u64,
    pace: Pace,
) -> tokio::task::JoinHandle<Result<Sha256, Error>> {
    let p: PathBuf = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        hash_paced(&p, len, &pace).map_err(|source| Error::File { path: p, source })
    })
}

fn hash_paced(path: &Path, len: u64, pace: &Pace) -> io::Result<Sha256> {
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    while at < len {
        let want = (buf.len() as u64).min(len - at) as usize;
        if !pace.wait_for(at + want as u64) {
            return Err(io::Error::other("the transfer ended before the hash"));
        }
        let n = f.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        at += n as u64;
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const LEAD: u64 = 2 << 20;

    fn file(len: usize) -> (tempfile::TempDir, PathBuf, [u8; 32]) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
        let sum = Sha256::digest(&bytes).into();
        (dir, path, sum)
    }

    #[test]
    fn the_hash_waits_for_the_transfer_and_then_equals_the_plain_one() {
        let len = LEAD + (32 << 20);
        let (_d, path, sum) = file(len as usize);
        let (pace, release) = Pace::with_lead(0, LEAD);
        let waiting = pace.clone();
        let t = std::thread::spawn(move || hash_paced(&path, len, &waiting));
        // Nothing sent: the hash stays within its lead.
        std::thread::sleep(Duration::from_millis(300));
        assert!(!t.is_finished(), "the hash ran ahead of the transfer");
        pace.sent(len);
        let got: [u8; 32] = t.join().unwrap().unwrap().finalize().into();
        assert_eq!(got, sum);
        drop(release);
    }

    #[test]
    fn a_finished_transfer_frees_the_hash_and_a_failed_one_stops_it() {
        let len = LEAD + (4 << 20);
        let (_d, path, sum) = file(len as usize);
        let (pace, release) = Pace::with_lead(0, LEAD);
        let p = path.clone();
        let t = std::thread::spawn(move || hash_paced(&p, len, &pace));
        release.finish();
        let got: [u8; 32] = t.join().unwrap().unwrap().finalize().into();
        assert_eq!(got, sum);
        let (pace, release) = Pace::with_lead(0, LEAD);
        let t = std::thread::spawn(move || hash_paced(&path, len, &pace));
        drop(release);
        assert!(t.join().unwrap().is_err());
        // Bytes already on the other side (a resumed upload) are no wait.
        let (_d, path, sum) = file((LEAD + (2 << 20)) as usize);
        let (pace, _release) = Pace::with_lead(4 << 20, LEAD);
        let got: [u8; 32] = hash_paced(&path, LEAD + (2 << 20), &pace)
            .unwrap()
            .finalize()
            .into();
        assert_eq!(got, sum);
    }
}
