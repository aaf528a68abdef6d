//! `GET /dir/?archive=tar|zip`: a folder, or a selection of its entries
//! (`&name=a&name=b`), as one archive with an exact `Content-Length`, an
//! `ETag` of the plan, and single `Range`s (`If-Range`), so a cut download
//! resumes.
//!
//! One walk of `Storage::list` plans it (`plan.rs`: names, sizes, mtimes;
//! memory is the plan, bounded by `--archive-max-entries`); `wirespeed-archive` lays
//! it out; the pieces of the requested range are then rendered (headers)
//! or moved zero-copy (`BodyWriter::send_file_range`, sendfile on plain
//! TCP). Listings leave out what GET would refuse: symlinks leading out of
//! the root, special files, reserved names.
//!
//! zip CRC-32s: the layout uses data descriptors, so no file is read before
//! the first byte. A file streamed whole has its CRC computed alongside
//! (a second read of the page cache on another core); a descriptor or
//! central record whose file was not streamed in this response (a `Range`
//! that starts late) reads that file once, and every CRC is kept in a
//! bounded in-memory cache keyed by path, size and mtime (`crc.rs`), so resuming
//! again never rereads. Recording them with the file (like the sha-256
//! xattr) would survive restarts; the cache was the smaller change.
//!
//! Reads are admitted like a listing's (the folder itself); the policy's
//! read right is then asked for every entry (`may_read`, from `files.rs`),
//! and entries it refuses are left out, not errors.
//!
//! A file whose size or mtime no longer matches the plan cuts the response
//! (never padded): the connection closes, and the event is logged.

use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use wirespeed_archive::{Archive, Entry, Format, Kind, Part};
use wirespeed_net::{BodyWriter, Error, Exchange, Response};

use crate::answers::storage_answer;
use crate::conditional::{evaluate, Conditions, Outcome, Validators};
use crate::config::ServiceConfig;
use crate::path::{check_segment, percent_decode, RelPath};
use crate::storage::changes::Changes;
use crate::storage::{self, Meta, Object, Storage, StorageError};

mod crc;
mod plan;

use crc::crc_of_file;
use crc::CrcCache;
use crc::{CrcKey, FileId};
use plan::{entry_key, mtime_of, plan, top_name, PlanBudget};

/// What `?archive=` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub format: Format,
    /// Names inside the folder; empty: the whole folder.
    pub names: Vec<String>,
}

/// The archive request in a folder URL's query, if any: `archive=tar|zip`
/// and any number of `name=` (percent-encoded, `+` is a space, as an HTML
/// form sends them), each a plain name inside the folder.
pub(crate) fn wanted(query: Option<&str>) -> Result<Option<Wanted>, Error> {
    let Some(query) = query else {
        return Ok(None);
    };
    let mut format = None;
    let mut names = Vec::new();
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "archive" => {
                format = Some(Format::parse(v).ok_or_else(|| {
                    Error::status(
                        400,
                        "archive must be tar or zip (?archive=tar, ?archive=zip)",
                    )
                })?)
            }
            "name" => {
                let bad = || Error::status(400, "bad name= in the archive selection");
                let raw = percent_decode(&v.replace('+', " ")).map_err(|_| bad())?;
                let name = String::from_utf8(raw).map_err(|_| bad())?;
                check_segment(&name).map_err(|e| {
                    Error::status(400, format!("bad name= in the archive selection: {e}"))
                })?;
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            _ => {}
        }
    }
    match format {
        Some(format) => Ok(Some(Wanted { format, names })),
        None if names.is_empty() => Ok(None),
        None => Err(Error::status(
            400,
            "name= selects entries for ?archive=tar|zip",
        )),
    }
}

/// What the asker may have in an archive: `may_read` answers per path, and
/// with `follow` where a member's symlink leads is asked too.
pub(crate) struct Readable<F> {
    pub may_read: F,
    pub follow: bool,
}

/// What the archive route keeps across requests: zip CRC-32s already
/// computed, and the budget of entries planned at once.
pub(crate) struct Archives {
    crcs: CrcCache,
    plans: PlanBudget,
}

impl Archives {
    pub(crate) fn new(cfg: &ServiceConfig, changes: Option<&Changes>) -> Self {
        let max = cfg
            .archive_max_entries
            .unwrap_or(crate::config::ARCHIVE_MAX_ENTRIES);
        Archives {
            crcs: CrcCache::following(changes),
            plans: PlanBudget::new(max),
        }
    }
}

/// Answer `GET /dir/?archive=…` (also HEAD).
pub(crate) async fn send<S: Storage>(
    storage: &S,
    cfg: &ServiceConfig,
    archives: &Archives,
    ex: &mut Exchange,
    key: &RelPath,
    wanted: Wanted,
    readable: Readable<impl Fn(&RelPath) -> bool + Send + Sync>,
) -> Result<(), Error> {
    let max = cfg
        .archive_max_entries
        .unwrap_or(crate::config::ARCHIVE_MAX_ENTRIES);
    // `_budget` is given back when the response has ended.
    let (entries, _budget) =
        plan(storage, &readable, &archives.plans, key, &wanted.names, max).await?;
    let archive = Archive::plan(wanted.format, entries)
        .map_err(|e| Error::status(409, format!("this folder cannot be archived: {e}")))?;
    let tag = archive.etag();
    let size = archive.len();
    let outcome = {
        let c = Conditions {
            if_match: ex.header_str("if-match"),
            if_none_match: ex.header_str("if-none-match"),
            if_modified_since: None,
            if_unmodified_since: None,
            if_range: ex.header_str("if-range"),
            range: ex.header_str("range"),
        };
        let v = Validators {
            etag: &tag,
            last_modified: None,
        };
        evaluate(ex.method() == "GET", &c, &v, size)
    };
    let base = |status: u16| {
        Response::new(status)
            .header("ETag", &tag)
            .header("Accept-Ranges", "bytes")
            .header("Cache-Control", "no-cache")
    };
    let (status, start, end) = match outcome {
        Outcome::NotModified => return ex.send(base(304), b"").await,
        Outcome::PreconditionFailed => return Err(Error::status(412, "precondition failed")),
        Outcome::Unsatisfiable => {
            let resp = Response::new(416)
                .header("Content-Range", format!("bytes */{size}"))
                .header("Content-Type", "text/plain; charset=utf-8");
            return ex.send(resp, b"range not satisfiable\n").await;
        }
        Outcome::Full => (200, 0, size),
        Outcome::Partial { start, end } => (206, start, end + 1),
    };
    let file_name = format!("{}.{}", top_name(key), wanted.format.extension());
    let mut resp = base(status)
        .header("Content-Type", wanted.format.content_type())
        .header("Content-Disposition", content_disposition(&file_name))
        .header("X-Content-Type-Options", "nosniff");
    if status == 206 {
        resp = resp.header("Content-Range", format!("bytes {start}-{}/{size}", end - 1));
    }
    let head_only = ex.method() == "HEAD";
    let mut w = ex.writer_sized(resp, end - start)?;
    if head_only {
        return w.finish().await;
    }
    let mut s = Streamer {
        storage,
        key,
        archive: &archive,
        crcs: &archives.crcs,
        known: vec![
            None;
            if wanted.format == Format::Zip {
                archive.entries().len()
            } else {
                0
            }
        ],
        buf: Vec::with_capacity(64 * 1024),
        whole: start == 0 && end == size,
        ahead: None,
        crc_bufs: Vec::new(),
    };
    for piece in archive.pieces(start, end) {
        match piece.part {
            Part::Data(i) => s.data(&mut w, i, piece.skip, piece.len).await?,
            part => {
                let crc = match part.crc_of(&archive) {
                    Some(i) => Some(s.crc(i).await?),
                    None => None,
                };
                s.buf.clear();
                archive.render(part, crc, &mut s.buf);
                let from = piece.skip as usize;
                w.write(&s.buf[from..from + piece.len as usize]).await?;
            }
        }
    }
    w.finish().await
}

/// `attachment` with an ASCII fallback name and the exact one (RFC 6266).
fn content_disposition(name: &str) -> String {
    let ascii: String = name
        .chars()
        .map(|c| {
            if (c.is_ascii_graphic() && c != '"' && c != '\\') || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "attachment; filename=\"{ascii}\"; filename*=UTF-8''{}",
        crate::path::encode_segment(name)
    )
}

/// The moving part of one archive response.
struct Streamer<'a, S: Storage> {
    storage: &'a S,
    key: &'a RelPath,
    archive: &'a Archive,
    crcs: &'a CrcCache,
    /// zip: CRC-32s known in this response.
    known: Vec<Option<u32>>,
    buf: Vec<u8>,
    /// The response is the whole archive: every file goes out whole, so
    /// the next file's CRC-32 can be computed while this one is sent.
    whole: bool,
    /// zip: the next file, opened, its CRC-32 being computed.
    ahead: Option<Ahead<S::Object>>,
    /// CRC read buffers (1 MiB each, at most two in flight) kept for the
    /// response instead of allocated and zeroed per file.
    crc_bufs: Vec<Vec<u8>>,
}

/// A file opened and its CRC-32 started before its turn: on a first zip
/// download each file's CRC is read on a blocking thread while the file
/// before it is sent, instead of the sender waiting for that thread after
/// every file (0.61x of GET before, bench/RESULTS.md, "First zip downloads").
struct Ahead<O> {
    i: usize,
    key: RelPath,
    /// In a mutex only so the streamer stays `Sync` (an open file is
    /// `Send`, not `Sync`); never contended.
    obj: Mutex<O>,
    task: CrcTask,
}

type CrcTask = tokio::task::JoinHandle<(std::io::Result<u32>, Vec<u8>)>;

impl<S: Storage> Streamer<'_, S> {
    /// Entry `i`'s key in the CRC cache, with the identity of its open
    /// file where the store has one.
    fn cache_key(&self, i: usize, file: Option<FileId>) -> Option<CrcKey> {
        let e = &self.archive.entries()[i];
        let k = entry_key(self.key, e)?;
        Some(CrcKey {
            path: k.to_url(false),
            size: e.size,
            mtime: (e.mtime, e.mtime_nsec),
            file,
        })
    }

    /// Open planned entry `i`, refusing it if it no longer matches the plan.
    async fn open(&self, i: usize) -> Result<(RelPath, S::Object), Error> {
        let e = &self.archive.entries()[i];
        let key = entry_key(self.key, e).ok_or_else(|| changed(e, "its name"))?;
        let obj = self
            .storage
            .open(&key)
            .await
            .map_err(|_| changed(e, "it is gone"))?;
        if !matches_plan(obj.meta(), e) {
            return Err(changed(e, "its size or mtime"));
        }
        Ok((key, obj))
    }

    /// `len` bytes of entry `i` from `skip`; a whole file in a zip has its
    /// CRC computed on the way.
    async fn data(
        &mut self,
        w: &mut BodyWriter<'_>,
        i: usize,
        skip: u64,
        len: u64,
    ) -> Result<(), Error> {
        let (key, mut obj, mut pending) = match self.ahead.take() {
            Some(a) if a.i == i => {
                let obj = a.obj.into_inner().unwrap_or_else(|p| p.into_inner());
                (a.key, obj, Some(a.task))
            }
            _ => {
                let (key, obj) = self.open(i).await?;
                (key, obj, None)
            }
        };
        let e = &self.archive.entries()[i];
        let whole = skip == 0 && len == e.size;
        let unknown = whole && self.known.get(i) == Some(&None);
        let id = obj.as_file().filter(|_| unknown).and_then(FileId::of);
        let want_crc = unknown
            && match self.cache_key(i, id).and_then(|k| self.crcs.get(&k)) {
                Some(crc) => {
                    self.known[i] = Some(crc);
                    false
                }
                None => true,
            };
        if let Some(file) = obj.as_file() {
            let crc = match pending.take() {
                Some(task) if want_crc => Some(task),
                Some(task) => {
                    // Known meanwhile: its buffer comes back all the same.
                    if let Ok((_, buf)) = task.await {
                        self.crc_bufs.push(buf);
                    }
                    None
                }
                None if want_crc => Some(self.spawn_crc(file, e.size)?),
                None => None,
            };
            self.prefetch(i).await;
            let e = &self.archive.entries()[i];
            w.send_file_range(file, skip, len)
                .await
                .map_err(|err| match err {
                    Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                        changed(e, "it shrank")
                    }
                    other => other,
                })?;
            if let Some(task) = crc {
                let crc = self
                    .finish_crc(task)
                    .await?
                    .map_err(|_| changed(e, "it shrank"))?;
                self.learn(i, crc, id);
            }
            // Written to while it was sent: what went out may mix versions.
            // The open file is asked (one fstat), not its path again: these
            // are the bytes that left, even if the name was replaced since.
            return match file.metadata() {
                Ok(md) if file_matches_plan(&md, e) => Ok(()),
                _ => Err(changed(e, "it was written to while being sent")),
            };
        } else {
            let mut h = want_crc.then(crc32fast::Hasher::new);
            let mut buf = vec![0u8; (len as usize).clamp(1, 1 << 20)];
            let mut pos = skip;
            while pos < skip + len {
                let want = ((skip + len - pos) as usize).min(buf.len());
                let n = obj
                    .read_at(pos, &mut buf[..want])
                    .await
                    .map_err(storage_answer)?;
                if n == 0 {
                    return Err(changed(e, "it shrank"));
                }
                if let Some(h) = &mut h {
                    h.update(&buf[..n]);
                }
                w.write(&buf[..n]).await?;
                pos += n as u64;
            }
            if let Some(h) = h {
                self.learn(i, h.finalize(), id);
            }
        }
        // Changed while it was sent: what went out may mix versions.
        match self.storage.stat(&key).await {
            Ok(meta) if matches_plan(&meta, e) => Ok(()),
            _ => Err(changed(e, "it was written to while being sent")),
        }
    }

    /// Start the CRC-32 of `file` on a blocking thread, with a kept buffer.
    fn spawn_crc(&mut self, file: &std::fs::File, size: u64) -> Result<CrcTask, Error> {
        let file = file
            .try_clone()
            .map_err(StorageError::from)
            .map_err(storage_answer)?;
        let mut buf = self.crc_bufs.pop().unwrap_or_default();
        Ok(tokio::task::spawn_blocking(move || {
            let crc = crc_of_file(&file, size, &mut buf);
            (crc, buf)
        }))
    }

    /// Wait for a CRC task; its buffer goes back to the pool.
    async fn finish_crc(&mut self, task: CrcTask) -> Result<std::io::Result<u32>, Error> {
        let (crc, buf) = task
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e)))?;
        self.crc_bufs.push(buf);
        Ok(crc)
    }

    /// On a whole zip download, open the file after `i` and start its
    /// CRC-32 now. Anything that goes wrong here is left for its turn,
    /// which opens it again and says what changed.
    async fn prefetch(&mut self, i: usize) {
        if !self.whole || self.ahead.is_some() || self.known.is_empty() {
            return;
        }
        let entries = self.archive.entries();
        let Some(j) = (i + 1..entries.len()).find(|&j| {
            entries[j].kind == Kind::File && entries[j].size > 0 && self.known[j].is_none()
        }) else {
            return;
        };
        let Ok((key, obj)) = self.open(j).await else {
            return;
        };
        let size = entries[j].size;
        let Some(file) = obj.as_file() else {
            return;
        };
        if let Some(crc) = self
            .cache_key(j, FileId::of(file))
            .and_then(|k| self.crcs.get(&k))
        {
            self.known[j] = Some(crc);
            return;
        }
        let Ok(task) = self.spawn_crc(file, size) else {
            return;
        };
        self.ahead = Some(Ahead {
            i: j,
            key,
            obj: Mutex::new(obj),
            task,
        });
    }

    fn learn(&mut self, i: usize, crc: u32, file: Option<FileId>) {
        self.known[i] = Some(crc);
        if let Some(k) = self.cache_key(i, file) {
            self.crcs.put(k, crc);
        }
    }

    /// The CRC-32 of file `i`: known, cached, or read now (once).
    async fn crc(&mut self, i: usize) -> Result<u32, Error> {
        if let Some(Some(crc)) = self.known.get(i) {
            return Ok(*crc);
        }
        let (_, mut obj) = self.open(i).await?;
        let id = obj.as_file().and_then(FileId::of);
        if let Some(crc) = self.cache_key(i, id).and_then(|k| self.crcs.get(&k)) {
            self.known[i] = Some(crc);
            return Ok(crc);
        }
        let e = &self.archive.entries()[i];
        let crc = if let Some(file) = obj.as_file() {
            let task = self.spawn_crc(file, e.size)?;
            let e = &self.archive.entries()[i];
            self.finish_crc(task)
                .await?
                .map_err(|_| changed(e, "it shrank"))?
        } else {
            let mut h = crc32fast::Hasher::new();
            let mut buf = vec![0u8; (e.size as usize).clamp(1, 1 << 20)];
            let mut pos = 0;
            while pos < e.size {
                let want = ((e.size - pos) as usize).min(buf.len());
                let n = obj
                    .read_at(pos, &mut buf[..want])
                    .await
                    .map_err(storage_answer)?;
                if n == 0 {
                    return Err(changed(e, "it shrank"));
                }
                h.update(&buf[..n]);
                pos += n as u64;
            }
            h.finalize()
        };
        self.learn(i, crc, id);
        Ok(crc)
    }
}

/// [`matches_plan`] for an open file's own metadata.
fn file_matches_plan(md: &std::fs::Metadata, e: &Entry) -> bool {
    let mtime = match md.modified().map(|m| m.duration_since(UNIX_EPOCH)) {
        Ok(Ok(d)) => (d.as_secs() as i64, d.subsec_nanos()),
        _ => (0, 0),
    };
    md.is_file() && md.len() == e.size && mtime == (e.mtime, e.mtime_nsec)
}

fn matches_plan(meta: &Meta, e: &Entry) -> bool {
    meta.kind == storage::Kind::File
        && meta.size == e.size
        && mtime_of(meta) == (e.mtime, e.mtime_nsec)
}

/// A planned file changed: the response is cut here (the connection
/// closes: never padded or mixed), and the event logged.
fn changed(e: &Entry, what: &str) -> Error {
    tracing::warn!(entry = %e.name, change = what, "archive cut: a file changed while the archive was sent");
    Error::status(
        409,
        format!(
            "{} changed while the archive was sent ({what}); download it again",
            e.name
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_queries() {
        assert_eq!(wanted(None).unwrap(), None);
        assert_eq!(wanted(Some("format=json")).unwrap(), None);
        let w = wanted(Some("archive=zip&name=a+b&name=%C3%A9t%C3%A9&name=a+b"))
            .unwrap()
            .unwrap();
        assert_eq!(w.format, Format::Zip);
        assert_eq!(w.names, ["a b", "été"]);
        assert_eq!(
            wanted(Some("archive=tar")).unwrap().unwrap().names,
            Vec::<String>::new()
        );
        for bad in [
            "archive=rar",
            "archive=zip&name=..",
            "archive=zip&name=a%2Fb",
            "archive=zip&name=%zz",
            "name=a",
        ] {
            assert!(wanted(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn disposition_names() {
        assert_eq!(
            content_disposition("a b.zip"),
            "attachment; filename=\"a b.zip\"; filename*=UTF-8''a%20b.zip"
        );
        assert_eq!(
            content_disposition("été\".tar"),
            "attachment; filename=\"_t__.tar\"; filename*=UTF-8''%C3%A9t%C3%A9%22.tar"
        );
    }
}
