//! Which pieces of a ranged download are on disk: the extended attribute
//! `user.wirespeed.pieces` on the partial file, written only after the
//! pieces it names are synced (a crash must not leave a record of bytes
//! that never reached the disk), and not more often than [`RECORD_EVERY`].

use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::Shared;
use crate::transfer::ranges::Pieces;
use crate::Error;

/// The extended attribute holding which pieces are on disk.
const PIECES: &str = "user.wirespeed.pieces";

/// Pieces on their way to the record: synced and recorded together, at
/// most once per [`RECORD_EVERY`].
pub(super) struct Unrecorded {
    pieces: Vec<usize>,
    /// When the last sync began, or the download.
    since: Instant,
    tasks: Vec<tokio::task::JoinHandle<Result<(), Error>>>,
}

impl Unrecorded {
    pub(super) fn new() -> Unrecorded {
        Unrecorded {
            pieces: Vec::new(),
            since: Instant::now(),
            tasks: Vec::new(),
        }
    }
}

/// Ranged downloads under way, for [`record_received`].
static UNDER_WAY: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Syncs and records the pieces every ranged download under way has
/// received whole, waiting for those under way: for a process about to
/// exit on Ctrl-C, so what arrived is kept (a rerun fetches only the
/// rest). The downloads' futures must still be alive (not yet dropped).
pub async fn record_received() {
    let live: Vec<_> = UNDER_WAY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for s in live {
        if let Err(e) = recorded(&s).await {
            tracing::warn!(error = %e, "could not record the pieces received");
        }
    }
}

/// How often finished pieces are synced and recorded (besides at the end,
/// on an error and on Ctrl-C): at the pace of the kernel's own writeback
/// of dirty pages (those older than 30 s, `vm.dirty_expire_centisecs`),
/// so the syncs add little to the writing the kernel does anyway. One
/// sync per piece (every 1.3 s at 200 Mbit/s with 32 MiB pieces, many a
/// second on a LAN) cost the emulated 200 Mbit/s link 0.7% of its rate:
/// each is a journal commit the writes of the pieces still arriving wait
/// for. A crash or a kill loses at most this much of the transfer.
const RECORD_EVERY: Duration = Duration::from_secs(30);

/// Ranged downloads under way (for [`record_received`]): `s` joins them.
pub(super) fn under_way(s: &Arc<Shared>) {
    let mut all = UNDER_WAY.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|w| w.strong_count() > 0);
    all.push(Arc::downgrade(s));
}

/// Piece `i` is all written: it waits for the next sync, which starts now
/// when the last began [`RECORD_EVERY`] ago.
pub(super) fn received(s: &Arc<Shared>, i: usize) {
    let mut u = s.unrecorded.lock().unwrap_or_else(|e| e.into_inner());
    u.pieces.push(i);
    if u.since.elapsed() >= RECORD_EVERY {
        record_now(s, &mut u);
    }
}

/// The record on `part`, if any.
pub(super) fn read(part: &Path) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    rustix::fs::lgetxattr(part, PIECES, &mut buf[..])
        .ok()
        .and_then(|n| std::str::from_utf8(buf.get(..n)?).ok().map(str::to_string))
}

/// The download is whole: its record goes.
pub(super) fn remove(part: &Path) {
    let _ = rustix::fs::lremovexattr(part, PIECES);
}

/// Without the record a rerun cannot know which pieces are there: a file
/// system that keeps no attributes gets no ranged download.
pub(super) fn write(part: &Path, pieces: &Pieces) -> Result<(), Error> {
    rustix::fs::lsetxattr(
        part,
        PIECES,
        pieces.encode().as_bytes(),
        rustix::fs::XattrFlags::empty(),
    )
    .map_err(|e| Error::File {
        path: part.to_path_buf(),
        source: e.into(),
    })
}

/// Starts the sync and record of the pieces waiting for it, on a blocking
/// thread, beside the connections' next requests (awaited inline, a sync
/// idled the link for a tenth of a second or more).
fn record_now(s: &Arc<Shared>, u: &mut Unrecorded) {
    u.since = Instant::now();
    if u.pieces.is_empty() {
        return;
    }
    let pieces = std::mem::take(&mut u.pieces);
    let s = s.clone();
    u.tasks.push(tokio::task::spawn_blocking(move || {
        record_after_sync(&s, &pieces)
    }));
}

/// `pieces` are all written: synced, then recorded as there.
fn record_after_sync(s: &Shared, pieces: &[usize]) -> Result<(), Error> {
    // On disk before it is recorded as there: a crash must not leave a
    // record of bytes that never reached the disk.
    s.file.sync_data().map_err(|source| Error::File {
        path: s.part.clone(),
        source,
    })?;
    // Under the lock: records written out of order would forget a piece.
    let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
    for &i in pieces {
        st.pieces.mark(i);
    }
    write(&s.part, &st.pieces)
}

/// Syncs and records every piece received whole, waiting for those under
/// way; the first failure.
pub(super) async fn recorded(s: &Arc<Shared>) -> Result<(), Error> {
    let tasks = {
        let mut u = s.unrecorded.lock().unwrap_or_else(|e| e.into_inner());
        record_now(s, &mut u);
        std::mem::take(&mut u.tasks)
    };
    let mut first = Ok(());
    for t in tasks {
        let r = t.await.unwrap_or_else(|e| {
            Err(Error::Io {
                context: "recording a piece",
                source: std::io::Error::other(e.to_string()),
            })
        });
        if first.is_ok() {
            first = r;
        }
    }
    first
}
