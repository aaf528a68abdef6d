//! A large upload in parallel parts: one loss-limited TCP flow across a
//! long, lossy link carries a few percent of it, N flows about N times
//! that. The file is cut into pieces ([`Pieces`], the same plan as `get`
//! by ranges); each piece goes up as a tus partial upload (`Upload-Concat:
//! partial`, created empty so its URL is recorded before its first byte,
//! then appended from the server's offset) over up to N kept-alive
//! connections, opened as the total rate shows they pay
//! ([`Adapt`]); then one final upload (`Upload-Concat: final;URL…`) has
//! the server join them under the file's URL. The parts' URLs and which
//! are complete are kept in the upload's state file, synced as each part
//! is created and completed, so a rerun after a cut or a kill sends only
//! the missing bytes of the missing parts. A server that does not announce
//! `concatenation` gets the one-stream resumable upload (`resume.rs`),
//! quietly. Memory: nothing per connection beyond the request (the body
//! goes out with sendfile; the whole file is hashed once beside it).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sha2::Digest;
use tokio::task::JoinSet;
use wirespeed_resumable::client::{next_append, Announced, ClientProtocol};
use wirespeed_resumable::{concat, tus};

use crate::transfer::hex;
use crate::transfer::pace::{spawn_hash, Pace};
use crate::transfer::parts_final::{join, Final};
use crate::transfer::put::{Parallel, ProtocolChoice, UploadOptions, UploadReport};
use crate::transfer::ranges::{piece_size_at_most, Adapt, Crew, Pieces, TICK};
use crate::transfer::resume::stored_digest;
use crate::transfer::retry;
use crate::transfer::saved::{FileIdentity, Lookup, SavedParts, StateFile};
use crate::{Client, Error, Request, Url};

mod line;
use line::{append_request, Line};

struct Shared {
    client: Client,
    path: PathBuf,
    /// Where partial uploads are created (`/-/uploads/<target path>`).
    creation: Url,
    plan: Mutex<Plan>,
    record: StateFile,
    /// Bytes sent by all connections (the adaptive rate's sample).
    moved: Arc<AtomicU64>,
    /// The hash beside the transfer follows the same bytes.
    pace: Pace,
    opts: UploadOptions,
    unrecorded: AtomicBool,
}

struct Plan {
    pieces: Pieces,
    urls: Vec<Option<Url>>,
    queue: VecDeque<usize>,
    /// Parts the server lost once after their bytes were sent back to back
    /// ([`Line`]): a second loss is the server's to explain.
    lost: Vec<usize>,
}

impl Plan {
    fn saved(&self) -> SavedParts {
        SavedParts {
            done: self.pieces.encode(),
            urls: self
                .urls
                .iter()
                .map(|u| u.as_ref().map(Url::to_string))
                .collect(),
        }
    }
}

/// The piece size of a file sent in parts: as `get` cuts it, in at most
/// as many parts as a final upload may name.
fn part_size(len: u64) -> u64 {
    piece_size_at_most(len, concat::MAX_PARTS)
}

/// Whether this upload goes in parts by itself (a recorded parts upload
/// is continued whatever the options).
fn wanted(len: u64, opts: &UploadOptions) -> bool {
    // --digest-first has the server refuse a corrupted body before it is
    // stored; a final upload carries no body to refuse.
    opts.connections > 1
        && len >= opts.parts_from
        && !opts.digest_first
        && matches!(
            opts.protocol,
            ProtocolChoice::Auto | ProtocolChoice::Force(ClientProtocol::Tus)
        )
}

/// Upload `path` (`len` bytes) to `url` in parallel parts when it pays and
/// the server can join them; `Ok(None)`: it does not, or cannot (the caller
/// sends it as one resumable upload).
pub(crate) async fn upload(
    client: &Client,
    url: &Url,
    path: &Path,
    len: u64,
    opts: &UploadOptions,
) -> Result<Option<UploadReport>, Error> {
    let say = |m: &str| {
        if let Some(n) = &opts.notice {
            n(m)
        }
    };
    let record = StateFile::new(opts.state_dir.as_deref(), FileIdentity::of(path)?, url);
    let recorded = match record.lookup() {
        Lookup::Found(s) => match s.parts {
            Some(p) => Some(p),
            // A one-stream upload is continued as one.
            None => return Ok(None),
        },
        Lookup::FileChanged(s) if s.parts.is_some() => {
            say(&format!(
                "{} changed since the interrupted upload; starting a new upload",
                path.display()
            ));
            record.remove();
            None
        }
        _ => None,
    };
    if recorded.is_none() && !wanted(len, opts) {
        return Ok(None);
    }
    let base = client.server_base(url).await?;
    let Some(creation) = url.control_path(base, "/-/uploads") else {
        return Ok(None);
    };
    let creation = url.resolve(&creation)?.with_share_of(url);
    if !concatenates(client, &creation).await {
        if recorded.is_some() {
            record.remove();
        }
        return Ok(None);
    }
    if recorded.is_none() && opts.continue_saved {
        say(&format!(
            "no interrupted upload of {} to {url} is recorded; starting a new upload",
            path.display()
        ));
    }
    let piece = part_size(len);
    let mut pieces = Pieces::sized(len, piece);
    let mut urls = vec![None; pieces.count()];
    if let Some(saved) = recorded {
        match restore(&saved, len, piece, url) {
            Some((p, u)) => {
                say(&format!(
                    "continuing the interrupted upload: {} of {} parts complete",
                    p.count() - p.missing().count(),
                    p.count()
                ));
                (pieces, urls) = (p, u);
            }
            None => {
                say("the record of the interrupted upload is unusable; starting a new upload");
                record.remove();
            }
        }
    }
    // Hashed beside the transfer, paced by what has been sent (or was
    // before a rerun).
    let (pace, release) = Pace::new(pieces.done_bytes());
    let hashing = opts.verify.then(|| spawn_hash(path, len, pace.clone()));
    let count = pieces.count();
    let shared = Arc::new(Shared {
        client: client.clone(),
        path: path.to_path_buf(),
        creation,
        plan: Mutex::new(Plan {
            queue: pieces.missing().collect(),
            pieces,
            urls,
            lost: Vec::new(),
        }),
        record,
        moved: Arc::new(AtomicU64::new(0)),
        pace,
        opts: opts.clone(),
        unrecorded: AtomicBool::new(false),
    });
    let sent = send_all(&shared).await;
    let most = match sent {
        Ok(m) => {
            release.finish();
            m
        }
        Err(e) => {
            if let Some(h) = hashing {
                h.abort();
            }
            return Err(e);
        }
    };
    let ours: Option<[u8; 32]> = match hashing {
        Some(h) => Some(
            h.await
                .map_err(|e| Error::Io {
                    context: "hashing",
                    source: std::io::Error::other(e.to_string()),
                })??
                .finalize()
                .into(),
        ),
        None => None,
    };
    let names = {
        let p = shared.plan.lock().unwrap_or_else(|e| e.into_inner());
        let names: Vec<&str> = p.urls.iter().flatten().map(Url::path).collect();
        names.join(" ")
    };
    let last = Final {
        client,
        creation: &shared.creation,
        path,
        opts,
        record: &shared.record,
        names,
        count,
    };
    join(&last, url, ours).await?;
    let server_sha256 = match ours {
        Some(_) => stored_digest(client, url).await?,
        None => None,
    };
    shared.record.remove();
    if let (Some(s), Some(o)) = (server_sha256, ours) {
        if s != o {
            return Err(Error::DigestMismatch {
                what: "upload",
                ours: hex(&o),
                theirs: hex(&s),
            });
        }
    }
    Ok(Some(UploadReport {
        url: url.clone(),
        status: 201,
        bytes: len,
        sha256: ours,
        server_sha256,
        parallel: Some(Parallel {
            parts: count,
            connections: most,
        }),
    }))
}

/// `OPTIONS` on the creation URL: tus with `concatenation`? Any failure is
/// a no: the one-stream upload that follows meets it again and says it.
async fn concatenates(client: &Client, creation: &Url) -> bool {
    let req = Request::new("OPTIONS", creation.clone()).header("Tus-Resumable", tus::VERSION);
    let Ok(resp) = client.send(req).await else {
        return false;
    };
    let announced = Announced::from_fields(|n| resp.header(n).map(str::as_bytes));
    let ok = resp.status() < 300 && announced.tus_concatenation;
    let _ = resp.bytes(64 * 1024).await;
    ok
}

/// A recorded parts upload, if it is one of this file as cut now, its
/// URLs on the target's origin.
fn restore(
    saved: &SavedParts,
    len: u64,
    piece: u64,
    target: &Url,
) -> Option<(Pieces, Vec<Option<Url>>)> {
    let pieces = Pieces::decode_sized(&saved.done, len, piece)?;
    if saved.urls.len() != pieces.count() {
        return None;
    }
    let mut urls = Vec::with_capacity(saved.urls.len());
    for (i, u) in saved.urls.iter().enumerate() {
        let u = match u {
            Some(u) => Some(Url::parse(u).ok().filter(|u| u.same_origin(target))?),
            // A complete part without a URL cannot be named by the final.
            None if pieces.is_done(i) => return None,
            None => None,
        };
        urls.push(u);
    }
    Some((pieces, urls))
}

fn say(s: &Shared, m: &str) {
    if let Some(n) = &s.opts.notice {
        n(m)
    }
}

/// Record the plan (under its lock: records written out of order would
/// forget a part). A failure is said once; the upload goes on unrecorded.
fn save(s: &Shared, plan: &Plan) {
    if let Err(e) = s.record.save_parts(plan.saved()) {
        if !s.unrecorded.swap(true, Ordering::Relaxed) {
            say(
                s,
                &format!("cannot write the upload's state file ({e}); --continue will not find it"),
            );
        }
    }
}

fn queue_empty(s: &Shared) -> bool {
    s.plan.lock().map_or(true, |p| p.queue.is_empty())
}

fn done_bytes(s: &Shared) -> u64 {
    s.plan.lock().map_or(0, |p| p.pieces.done_bytes())
}

/// Sends every missing part over connections opened as [`Adapt`] says,
/// retrying failures that may pass; the most connections open at once.
async fn send_all(s: &Arc<Shared>) -> Result<usize, Error> {
    let (already, total) = s
        .plan
        .lock()
        .map_or((0, 0), |p| (p.pieces.done_bytes(), p.pieces.size));
    if let Some(p) = &s.opts.progress {
        p.start(Some(total), already);
    }
    let crew = Arc::new(Crew::default());
    let spawn = |workers: &mut JoinSet<Result<(), Error>>| {
        let (s, crew) = (s.clone(), crew.clone());
        crew.join();
        workers.spawn(async move { worker(s, &crew).await });
    };
    let mut adapt = Adapt::new(s.opts.connections);
    let mut workers = JoinSet::new();
    if !queue_empty(s) {
        spawn(&mut workers);
    }
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + TICK, TICK);
    let (mut last_moved, mut attempt, mut best) = (0u64, 0u32, already);
    let policy = s.opts.retry;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let moved = s.moved.load(Ordering::Relaxed);
                let rate = (moved - last_moved) as f64 / TICK.as_secs_f64();
                last_moved = moved;
                let fills = s.client.one_flow_fills(&s.creation);
                let more = adapt.tick(rate, fills);
                if more > 0 {
                    tracing::debug!(more, open = adapt.open(), fills, "adding connections");
                }
                for _ in 0..more {
                    if !queue_empty(s) {
                        spawn(&mut workers);
                    }
                }
            }
            done = workers.join_next() => {
                let Some(done) = done else { break };
                match done {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        if !retry::retryable(&e) && e.status() != Some(409) {
                            return Err(e);
                        }
                        let have = done_bytes(s);
                        if have > best {
                            best = have;
                            attempt = 0;
                        }
                        if attempt >= policy.retries {
                            return Err(e);
                        }
                        let d = retry::pause(&policy, attempt).await;
                        attempt += 1;
                        say(s, &format!(
                            "{}; resuming the missing parts after {:.1} s (retry {attempt} of {} without progress)",
                            retry::describe(&e),
                            d.as_secs_f64(),
                            policy.retries
                        ));
                        spawn(&mut workers);
                    }
                    Err(e) => {
                        return Err(Error::Io {
                            context: "an upload connection",
                            source: std::io::Error::other(e.to_string()),
                        })
                    }
                }
                if workers.is_empty() && !queue_empty(s) {
                    spawn(&mut workers);
                }
            }
        }
    }
    Ok(crew.most())
}

/// One connection: takes missing parts until none is left. While a part's
/// bytes go, the upload of the part it takes next is created (on another
/// pooled connection); that part's bytes then follow on the same
/// connection before the answer to the last append is read ([`Line`]), so
/// the link does not wait a round trip between parts.
async fn worker(s: Arc<Shared>, crew: &Crew) -> Result<(), Error> {
    let mut next: Option<(usize, Option<Url>)> = None;
    let mut line = Line::default();
    loop {
        let (i, fresh) = match next.take() {
            Some(n) => n,
            None => match s.plan.lock().ok().and_then(|mut p| p.queue.pop_front()) {
                Some(i) => (i, None),
                None => {
                    let settled = line.settle(&s).await;
                    crew.quit();
                    return settled;
                }
            },
        };
        let ahead = take_ahead(&s, crew);
        let (sent, created) = tokio::join!(
            async {
                let one_append = s.opts.append_size.is_none();
                match fresh {
                    // Created empty just now: one append of the whole part.
                    Some(url) if one_append => line.send(&s, i, url).await,
                    // No upload yet (none from an earlier run): created now.
                    None if one_append && !has_upload(&s, i) => {
                        let (start, end) = s.plan.lock().map_or((0, 0), |p| p.pieces.range(i));
                        match create(&s, i, end - start).await {
                            Ok(url) => line.send(&s, i, url).await,
                            Err(e) => Err(e),
                        }
                    }
                    fresh => {
                        line.settle(&s).await?;
                        part(&s, i, fresh).await
                    }
                }
            },
            async {
                match ahead {
                    Some(j) => Some((j, create_ahead(&s, j).await)),
                    None => None,
                }
            }
        );
        match created {
            Some((j, Ok(url))) => next = Some((j, url)),
            // Its own turn meets the failure again, and says it.
            Some((j, Err(_))) => give_back(&s, j),
            None => {}
        }
        if let Err(e) = sent {
            if let Some((j, _)) = next.take() {
                give_back(&s, j);
            }
            give_back(&s, i);
            line.abandon(&s);
            crew.quit();
            return Err(e);
        }
    }
}

/// Whether part `i` has an upload on the server (created by this run or
/// recorded by an earlier one).
fn has_upload(s: &Shared, i: usize) -> bool {
    s.plan
        .lock()
        .map_or(true, |p| p.urls.get(i).is_some_and(Option::is_some))
}

/// A part taken but not sent goes back to the front of the queue.
fn give_back(s: &Shared, i: usize) {
    if let Ok(mut p) = s.plan.lock() {
        p.queue.push_front(i);
    }
}

/// The part to take next, while more are left than connections work:
/// near the end every part stays free for whichever connection is idle.
fn take_ahead(s: &Shared, crew: &Crew) -> Option<usize> {
    let mut p = s.plan.lock().ok()?;
    (p.queue.len() > crew.open())
        .then(|| p.queue.pop_front())
        .flatten()
}

/// Creates part `j`'s upload ahead of its turn: `Some(URL)` (nothing in it
/// yet); `None` when it has one from an earlier run (its offset is asked).
async fn create_ahead(s: &Shared, j: usize) -> Result<Option<Url>, Error> {
    let (len, known) = {
        let p = s.plan.lock().unwrap_or_else(|e| e.into_inner());
        let (start, end) = p.pieces.range(j);
        (end - start, p.urls.get(j).is_some_and(Option::is_some))
    };
    if known {
        return Ok(None);
    }
    create(s, j, len).await.map(Some)
}

/// Part `i`: created (or its offset asked; `fresh`: created empty ahead
/// of its turn), appended to its end, recorded.
async fn part(s: &Shared, i: usize, fresh: Option<Url>) -> Result<(), Error> {
    let ((start, end), known) = {
        let p = s.plan.lock().unwrap_or_else(|e| e.into_inner());
        (p.pieces.range(i), p.urls.get(i).cloned().flatten())
    };
    let len = end - start;
    let (location, mut offset) = match (fresh, known) {
        (Some(loc), _) => (loc, 0),
        (None, Some(loc)) => match offset_of(s, &loc, len).await {
            Ok(o) => {
                if o > 0 {
                    say(
                        s,
                        &format!("resuming at byte {o} of {len} of part {} (tus)", i + 1),
                    );
                }
                (loc, o)
            }
            Err(e) if matches!(e.status(), Some(404 | 410)) => {
                say(
                    s,
                    &format!("the server no longer has part {}; sending it again", i + 1),
                );
                (create(s, i, len).await?, 0)
            }
            Err(e) => return Err(e),
        },
        (None, None) => (create(s, i, len).await?, 0),
    };
    let cap = s.opts.append_size.unwrap_or(u64::MAX).max(1);
    let (mut location, mut lost_once) = (location, false);
    while offset < len {
        let n = next_append(offset, len, None, cap);
        match append(s, &location, start + offset, offset, n).await {
            Ok(()) => offset += n,
            // The server lost the part between its offset and this append
            // (expired, or removed under it): the bytes are all here, so the
            // part is created and sent again, once; a second loss is the
            // server's to explain.
            Err(e) if matches!(e.status(), Some(404 | 410)) && !lost_once => {
                lost_once = true;
                say(
                    s,
                    &format!(
                        "the server lost part {} while it was sent; sending it again",
                        i + 1
                    ),
                );
                location = create(s, i, len).await?;
                offset = 0;
            }
            Err(e) => return Err(e),
        }
    }
    let mut p = s.plan.lock().unwrap_or_else(|e| e.into_inner());
    p.pieces.mark(i);
    save(s, &p);
    Ok(())
}

/// `POST` an empty partial upload of `len` bytes; its URL is recorded
/// before any byte of it leaves.
async fn create(s: &Shared, i: usize, len: u64) -> Result<Url, Error> {
    let req = Request::new("POST", s.creation.clone())
        .header("Tus-Resumable", tus::VERSION)
        .header("Upload-Concat", "partial")
        .header("Upload-Length", len.to_string());
    let resp = s.client.send(req).await?.error_for_status().await?;
    let location = resp.header("Location").map(str::to_string);
    let _ = resp.bytes(64 * 1024).await;
    let Some(location) = location else {
        return Err(Error::Resumable(
            "the server created a partial upload without a Location".into(),
        ));
    };
    let location = s.creation.resolve(&location)?.with_share_of(&s.creation);
    if !location.same_origin(&s.creation) {
        return Err(Error::Resumable(format!(
            "the upload location {location} is on another origin; not followed (the token \
             must not travel there)"
        )));
    }
    let mut p = s.plan.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(u) = p.urls.get_mut(i) {
        *u = Some(location.clone());
    }
    save(s, &p);
    Ok(location)
}

/// `HEAD` on a part: how many of its `len` bytes the server has.
async fn offset_of(s: &Shared, loc: &Url, len: u64) -> Result<u64, Error> {
    let req = Request::new("HEAD", loc.clone()).header("Tus-Resumable", tus::VERSION);
    let resp = s.client.send(req).await?.error_for_status().await?;
    let offset = resp
        .header("Upload-Offset")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|o| *o <= len);
    drop(resp);
    offset.ok_or_else(|| {
        Error::Resumable("the server's answer about a part has no valid Upload-Offset".into())
    })
}

/// `PATCH` `n` bytes of the file from `at` into a part at its `offset`.
async fn append(s: &Shared, loc: &Url, at: u64, offset: u64, n: u64) -> Result<(), Error> {
    let req = append_request(s, loc, at, offset, n)?;
    let resp = s.client.send(req).await?.error_for_status().await?;
    let _ = resp.bytes(64 * 1024).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn only_large_files_of_tus_or_auto_go_in_parts() {
        let big = 64 << 20;
        let opts = UploadOptions::default();
        assert!(wanted(big, &opts));
        assert!(!wanted(big - 1, &opts));
        for off in [
            UploadOptions {
                connections: 1,
                ..UploadOptions::default()
            },
            UploadOptions {
                digest_first: true,
                ..UploadOptions::default()
            },
            UploadOptions {
                protocol: ProtocolChoice::Force(ClientProtocol::Ietf),
                ..UploadOptions::default()
            },
        ] {
            assert!(!wanted(big, &off));
        }
        let tus = UploadOptions {
            protocol: ProtocolChoice::Force(ClientProtocol::Tus),
            ..UploadOptions::default()
        };
        assert!(wanted(big, &tus));
    }

    #[test]
    fn a_record_is_restored_only_when_it_fits_the_file_and_origin() {
        let len = 16 << 20;
        let piece = part_size(len);
        let target = url("http://h:1/up/f.bin");
        let mut pieces = Pieces::sized(len, piece);
        pieces.mark(0);
        let part = |i: usize| Some(format!("http://h:1/-/uploads/{i:032x}"));
        let good = SavedParts {
            done: pieces.encode(),
            urls: vec![part(0), part(1), None, None],
        };
        let (p, u) = restore(&good, len, piece, &target).unwrap();
        assert!(p.is_done(0) && !p.is_done(1));
        assert_eq!(u.iter().flatten().count(), 2);
        // Another file size, another count of URLs, another origin, or a
        // complete part without its URL: no record.
        assert!(restore(&good, len + 1, piece, &target).is_none());
        let short = SavedParts {
            urls: vec![part(0)],
            ..good.clone()
        };
        assert!(restore(&short, len, piece, &target).is_none());
        let foreign = SavedParts {
            urls: vec![Some("http://other:1/-/uploads/a".into()), None, None, None],
            ..good.clone()
        };
        assert!(restore(&foreign, len, piece, &target).is_none());
        let lost = SavedParts {
            urls: vec![None, part(1), None, None],
            ..good
        };
        assert!(restore(&lost, len, piece, &target).is_none());
    }
}
