//! A large download by ranges over parallel connections: one loss-limited
//! TCP flow across a long, lossy link gets a few percent of it, N flows
//! about N times that. The first request asks for the file's start
//! ([`opening`]); its answer tells the size. The file is split into pieces
//! ([`Pieces`]) fetched with `Range` and `If-Range` over up to N
//! kept-alive connections, opened as the total rate shows they pay
//! ([`Adapt`]), and written at their offsets into the preallocated
//! `DEST.part`. Each finished piece is
//! synced and recorded on the partial file (extended attribute
//! `user.wirespeed.pieces`, beside the version record of [`validators`]),
//! so a rerun after a cut fetches only the missing pieces. Every piece
//! must come from the same version: a changed validator (or a 200 for
//! `If-Range`) starts over from nothing. Memory: one read buffer per
//! connection.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::task::JoinSet;

use crate::transfer::download::{
    already_complete, download_stream, finish_download, part_len, part_path, range_validator,
    refuse_folder, DownloadOptions, DownloadReport,
};
use crate::transfer::ranges::{Adapt, Crew, Pieces, SMALLEST_PIECE, TICK};
use crate::transfer::retry;
use crate::transfer::{get_following, hash_file, mtime, validators};
use crate::{Client, Error, Request, Response, Url};

mod opening;
mod record;
mod worker;
use opening::Opening;
pub use record::record_received;
use record::Unrecorded;
use worker::{worker, Ask, Opened};

/// Restarts after the file changed on the server, before giving up.
const MAX_RESTARTS: u32 = 3;

/// What a piece's fetch ended in.
enum PieceError {
    /// Another version answered: everything starts over.
    Changed,
    Failed(Error),
}

impl From<Error> for PieceError {
    fn from(e: Error) -> Self {
        PieceError::Failed(e)
    }
}

/// What the workers share.
struct Shared {
    client: Client,
    url: Url,
    part: PathBuf,
    file: File,
    validator: String,
    size: u64,
    state: Mutex<State>,
    /// Bytes received by all connections (the adaptive rate's sample).
    moved: AtomicU64,
    /// Bytes of the pieces received whole, recorded or waiting for their
    /// record: what the retries count as progress.
    whole: AtomicU64,
    /// The server said, with the last piece, that its one flow fills the
    /// link or that it is still judging ([`LINK_HEADER`]): no second
    /// connection is tried while that holds.
    sender_holds: AtomicBool,
    digest: Mutex<Option<[u8; 32]>>,
    opts: DownloadOptions,
    /// Pieces received whole, not yet synced and recorded, and the syncs
    /// and records under way ([`record`]).
    unrecorded: Mutex<Unrecorded>,
}

struct State {
    pieces: Pieces,
    queue: VecDeque<usize>,
}

/// The version a HEAD (or the first answer) told: size, validator, whether
/// ranges are served.
struct Probe {
    size: u64,
    validator: Option<String>,
    ranges: bool,
    modified: Option<std::time::SystemTime>,
    url: Url,
}

async fn probe(client: &Client, url: &Url) -> Result<Probe, Error> {
    let (resp, final_url) = get_following(client, url, |u| Request::new("HEAD", u.clone())).await?;
    refuse_folder(&resp, &final_url)?;
    let resp = resp.error_for_status().await?;
    Ok(Probe {
        size: resp
            .header("Content-Length")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0),
        validator: range_validator(&resp),
        ranges: resp
            .header("Accept-Ranges")
            .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("bytes"))),
        modified: resp
            .header("Last-Modified")
            .and_then(mtime::from_last_modified),
        url: final_url,
    })
}

/// GET `url` into `dest` through `DEST.part`, renamed into place once
/// complete and verified: by ranges over parallel connections when
/// `opts.connections` allows and it pays ([`download_ranged`]), else in
/// one stream (`download_stream`). `resume` of a file already whole (the
/// server's size and version) transfers nothing.
pub async fn download_file(
    client: &Client,
    url: &Url,
    dest: &Path,
    opts: &DownloadOptions,
) -> Result<DownloadReport, Error> {
    let part = part_path(dest);
    if opts.resume && part_len(&part) == 0 {
        if let Some(rep) = already_complete(client, url, dest).await? {
            return Ok(rep);
        }
    }
    // A partial file of pieces is continued by ranges, whatever the
    // number of connections allowed.
    if opts.connections > 1 || has_pieces(&part) {
        // A partial file says what is left (asked with HEAD); a fresh
        // download learns the size from its first bytes.
        let start = if std::fs::symlink_metadata(&part).is_err() {
            match opening::open(client, url).await? {
                Opening::Start(resp, probe) => Some((resp, probe)),
                Opening::Stream(resp) => {
                    return one_stream(client, url, dest, opts, Some(resp)).await
                }
                Opening::Neither => return one_stream(client, url, dest, opts, None).await,
            }
        } else {
            None
        };
        if let Some(rep) = download_ranged(client, url, dest, opts, start).await? {
            return Ok(rep);
        }
    }
    one_stream(client, url, dest, opts, None).await
}

/// [`download_stream`], which continues a partial file by appending to it:
/// a partial file of pieces (holes between them, its full length
/// preallocated) is no such start, and is removed first: appending would
/// take the holes for bytes received.
async fn one_stream(
    client: &Client,
    url: &Url,
    dest: &Path,
    opts: &DownloadOptions,
    answered: Option<Response>,
) -> Result<DownloadReport, Error> {
    let part = part_path(dest);
    if has_pieces(&part) {
        let _ = std::fs::remove_file(&part);
    }
    download_stream(client, url, dest, opts, answered).await
}

/// Downloads `url` into `dest` by ranges when it pays: `Ok(None)` when it
/// does not (smaller than `from`, no `Accept-Ranges: bytes`, no validator
/// to hold the pieces to one version, or a single-stream partial file to
/// continue): the caller fetches it in one stream. `start`: the answer to
/// the first request of a fresh download, and what it told.
async fn download_ranged(
    client: &Client,
    url: &Url,
    dest: &Path,
    opts: &DownloadOptions,
    mut start: Option<(Response, Probe)>,
) -> Result<Option<DownloadReport>, Error> {
    let part = part_path(dest);
    for restart in 0..=MAX_RESTARTS {
        let (p, first) = match start.take() {
            Some((resp, p)) => (p, Some(resp)),
            // A refused HEAD is left for the one-stream GET to answer: a
            // server may answer HEAD otherwise than GET (a redirect only
            // for GET, 404 or 405 to HEAD), and a refusal's body, which
            // only the GET carries, is what the user needs to read.
            None => match probe(client, url).await {
                Ok(p) if p.ranges && (p.size >= opts.ranged_from || has_pieces(&part)) => (p, None),
                _ => return Ok(None),
            },
        };
        let Some(validator) = p.validator.clone() else {
            return Ok(None);
        };
        let resume = match first {
            Some(_) => Resume::Fresh,
            None => resumable(&part, url, &validator, p.size),
        };
        let pieces = match resume {
            Resume::Pieces(pieces) => pieces,
            Resume::SingleStream => return Ok(None),
            Resume::Changed => {
                if let Some(n) = &opts.notice {
                    n("the file changed on the server since the partial download; restarting from byte 0");
                }
                fresh(&part, url, &validator, p.size)?
            }
            Resume::Fresh => fresh(&part, url, &validator, p.size)?,
        };
        match fetch_all(client, dest, &part, &validator, &p, pieces, first, opts).await? {
            Some(rep) => return Ok(Some(rep)),
            None => {
                // Changed between pieces: the bytes on disk are of two versions.
                let _ = std::fs::remove_file(&part);
                if let Some(n) = &opts.notice {
                    n(&format!(
                        "the file changed on the server; restarting from byte 0 (restart {} of {MAX_RESTARTS})",
                        restart + 1
                    ));
                }
            }
        }
    }
    Err(Error::Resumable(format!(
        "{url} kept changing while it was downloaded ({MAX_RESTARTS} restarts)"
    )))
}

/// Whether `part` is a partial file of pieces (it has their record).
fn has_pieces(part: &Path) -> bool {
    record::read(part).is_some()
}

enum Resume {
    Pieces(Pieces),
    /// A partial file of a one-stream download: that continues it.
    SingleStream,
    /// Pieces of another version (or size): they go.
    Changed,
    Fresh,
}

fn resumable(part: &Path, url: &Url, validator: &str, size: u64) -> Resume {
    let Ok(meta) = std::fs::symlink_metadata(part) else {
        return Resume::Fresh;
    };
    if !meta.is_file() {
        return Resume::Fresh;
    }
    let record = record::read(part);
    let same_version = validators::recorded(part, url).is_some_and(|r| r.validator == validator);
    match record {
        Some(r) if same_version && meta.len() == size => {
            Pieces::decode(&r, size).map_or(Resume::Fresh, Resume::Pieces)
        }
        Some(_) => Resume::Changed,
        None if meta.len() > 0 => Resume::SingleStream,
        None => Resume::Fresh,
    }
}

fn fresh(part: &Path, url: &Url, validator: &str, size: u64) -> Result<Pieces, Error> {
    let file_err = |source| Error::File {
        path: part.to_path_buf(),
        source,
    };
    let f = File::create(part).map_err(file_err)?;
    // Preallocated: pieces land at their offsets without growing the file
    // piece by piece (fragmentation), and a full disk fails now, not at 90%.
    if let Err(e) = rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, size) {
        if e != rustix::io::Errno::OPNOTSUPP {
            return Err(file_err(e.into()));
        }
        f.set_len(size).map_err(file_err)?;
    }
    let pieces = Pieces::new(size);
    validators::record(part, url, Some(validator), None);
    record::write(part, &pieces)?;
    Ok(pieces)
}

/// `Ok(None)`: the file changed; the caller starts over. `first`: the
/// answer to the first request, the file's first [`SMALLEST_PIECE`] bytes,
/// which the first connection reads on. A file smaller than
/// `opts.ranged_from` keeps to that one connection.
#[allow(clippy::too_many_arguments)]
async fn fetch_all(
    client: &Client,
    dest: &Path,
    part: &Path,
    validator: &str,
    p: &Probe,
    pieces: Pieces,
    first: Option<Response>,
    opts: &DownloadOptions,
) -> Result<Option<DownloadReport>, Error> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(part)
        .map_err(|source| Error::File {
            path: part.to_path_buf(),
            source,
        })?;
    let already = pieces.done_bytes();
    if let Some(pr) = &opts.progress {
        pr.start(Some(p.size), already);
    }
    let mut queue: VecDeque<usize> = pieces.missing().collect();
    // The first answer carries piece 0, or its start, and the rest of it is
    // asked behind it on the same connection.
    let first = first.map(|resp| {
        queue.retain(|&i| i != 0);
        let end = pieces.range(0).1;
        let rest = (end > SMALLEST_PIECE).then_some(Ask {
            piece: 0,
            start: SMALLEST_PIECE,
            end,
        });
        let ask = Ask {
            piece: 0,
            start: 0,
            end: end.min(SMALLEST_PIECE),
        };
        Opened { resp, ask, rest }
    });
    let shared = Arc::new(Shared {
        client: client.clone(),
        url: p.url.clone(),
        part: part.to_path_buf(),
        file,
        validator: validator.to_string(),
        size: p.size,
        state: Mutex::new(State { queue, pieces }),
        moved: AtomicU64::new(0),
        whole: AtomicU64::new(already),
        sender_holds: AtomicBool::new(false),
        digest: Mutex::new(None),
        opts: opts.clone(),
        unrecorded: Mutex::new(Unrecorded::new()),
    });
    record::under_way(&shared);
    let most = if p.size >= opts.ranged_from {
        opts.connections.max(1)
    } else {
        1
    };
    let mut adapt = Adapt::new(most);
    let crew = Arc::new(Crew::default());
    let spawn_on = |workers: &mut JoinSet<Result<(), PieceError>>, first: Option<Opened>| {
        let (s, crew) = (shared.clone(), crew.clone());
        crew.join();
        workers.spawn(async move { worker(s, &crew, first).await });
    };
    let spawn = |workers: &mut JoinSet<Result<(), PieceError>>| spawn_on(workers, None);
    let mut workers = JoinSet::new();
    spawn_on(&mut workers, first);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + TICK, TICK);
    let (mut last_moved, mut attempt, mut best) = (0u64, 0u32, already);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let moved = shared.moved.load(Ordering::Relaxed);
                let rate = (moved - last_moved) as f64 / TICK.as_secs_f64();
                last_moved = moved;
                // The server sends: its counters are not ours to read,
                // but a server of ours says what they show.
                let holds = shared.sender_holds.load(Ordering::Relaxed);
                for _ in 0..adapt.tick(rate, holds) {
                    if !queue_empty(&shared) {
                        spawn(&mut workers);
                    }
                }
            }
            done = workers.join_next() => {
                let Some(done) = done else { break };
                match done {
                    Ok(Ok(())) => {}
                    Ok(Err(PieceError::Changed)) => {
                        // Its pieces' records land before the caller starts over.
                        let _ = record::recorded(&shared).await;
                        return Ok(None);
                    }
                    Ok(Err(PieceError::Failed(e))) => {
                        if !retry::retryable(&e) {
                            let _ = record::recorded(&shared).await;
                            return Err(e);
                        }
                        let have = shared.whole.load(Ordering::Relaxed);
                        if have > best {
                            best = have;
                            attempt = 0;
                        }
                        if attempt >= opts.retry.retries {
                            let _ = record::recorded(&shared).await;
                            return Err(e);
                        }
                        let d = retry::pause(&opts.retry, attempt).await;
                        attempt += 1;
                        if let Some(n) = &opts.notice {
                            n(&format!(
                                "{}; resuming the missing ranges after {:.1} s (retry {attempt} of {} without progress)",
                                retry::describe(&e),
                                d.as_secs_f64(),
                                opts.retry.retries
                            ));
                        }
                        spawn(&mut workers);
                    }
                    Err(e) => {
                        let _ = record::recorded(&shared).await;
                        return Err(Error::Io {
                            context: "a download connection",
                            source: std::io::Error::other(e.to_string()),
                        })
                    }
                }
                if workers.is_empty() && !queue_empty(&shared) {
                    spawn(&mut workers);
                }
            }
        }
    }
    record::recorded(&shared).await?;
    let expected = *shared.digest.lock().unwrap_or_else(|e| e.into_inner());
    let sum = match expected {
        Some(_) => Some(<[u8; 32]>::from(sha2::Digest::finalize(
            hash_file(part, Some(p.size), None).await?,
        ))),
        None => None,
    };
    record::remove(part);
    if opts.keep_mtime {
        if let Some(t) = p.modified {
            if let Err(e) = mtime::apply(part, t) {
                tracing::warn!(path = %part.display(), error = %e, "could not set the modification time");
            }
        }
    }
    finish_download(part, dest, p.size, already, expected, sum)
        .await
        .map(Some)
}

fn queue_empty(s: &Shared) -> bool {
    s.state.lock().map_or(true, |st| st.queue.is_empty())
}
