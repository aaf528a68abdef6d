//! The file routes: GET/HEAD and PUT; the WebDAV methods (DELETE, MKCOL,
//! MOVE, COPY, PROPFIND, …) go to `dav` (POST is in
//! `encoded`), and health.

use std::time::SystemTime;

use wirespeed_net::{Error, Exchange, Response};

use crate::answers::{storage_answer, IntoAnswer as _};
use crate::conditional::{evaluate, Conditions, Outcome, Validators};
use crate::config::ServiceConfig;
use crate::digest::{asked_for, format_sha256};
use crate::hash_gate::HashGate;
use crate::locks::{check_write, Reach};
use crate::metrics::RouteClass;
use crate::page::listing::{new_nonce, page_csp_nonce, Format, Formatter, FLUSH_AT};
use crate::path::RelPath;
use crate::policy::{Policy, Principal};
use crate::respond::{check_room, etag, respond_stored_with, write_preconditions, WriteGuard};
use crate::storage::{Listing, Object, Storage, StorageError, Upload};
use crate::upload::receive;

/// Files under a storage backend.
pub struct Files<S> {
    storage: S,
    cfg: ServiceConfig,
    policy: Policy,
    hashes: HashGate,
}

impl<S: Storage> Files<S> {
    pub fn new(storage: S, cfg: ServiceConfig) -> Self {
        let policy = cfg.policy();
        Files {
            storage,
            cfg,
            policy,
            hashes: HashGate::per_core(),
        }
    }

    /// The policy every request here is decided by.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The storage and settings, for the fronts beside this one (the front
    /// door hands them the same backend).
    pub(crate) fn parts(&self) -> (&S, &ServiceConfig) {
        (&self.storage, &self.cfg)
    }
}

/// The validators of a file answer, and `no-cache`: a cache must revalidate
/// (ETag/Last-Modified make that a 304), never serve its copy on heuristic
/// freshness after the file was replaced (RFC 9111 §4.2.2).
fn base_headers(resp: Response, tag: &str, modified: Option<SystemTime>) -> Response {
    let resp = resp
        .header("ETag", tag)
        .header("Accept-Ranges", "bytes")
        .header("Cache-Control", "no-cache");
    match modified {
        Some(m) => resp.header("Last-Modified", http_date(m)),
        None => resp,
    }
}

/// An IMF-fixdate (always 29 bytes) formatted on the stack, not in a String;
/// the last one is remembered per thread, as the same file is often asked
/// for again (httpdate's conversion is ~350 instructions of a small GET).
fn http_date(t: SystemTime) -> [u8; 29] {
    use std::cell::Cell;
    use std::io::Write as _;
    thread_local! {
        static LAST: Cell<Option<(SystemTime, [u8; 29])>> = const { Cell::new(None) };
    }
    if let Some((at, text)) = LAST.get() {
        if at == t {
            return text;
        }
    }
    let mut out = [b' '; 29];
    let _ = write!(&mut out[..], "{}", httpdate::HttpDate::from(t));
    LAST.set(Some((t, out)));
    out
}

impl<S: Storage> Files<S> {
    /// Answers an admitted request (the front door asked the policy; the
    /// WebDAV methods, DELETE and MKCOL and MOVE among them, go to `dav`).
    pub(crate) async fn answer(
        &self,
        ex: &mut Exchange,
        key: RelPath,
        who: Principal,
    ) -> Result<(), Error> {
        match ex.method() {
            "GET" | "HEAD" => self.get(ex, key, who).await,
            // Boxed: see front_door.rs (the GET future stays small).
            "PUT" => Box::pin(self.put(ex, key, who)).await,
            _ => Err(Error::status(405, "method not allowed")),
        }
    }
}

impl<S: Storage> Files<S> {
    async fn get(&self, ex: &mut Exchange, key: RelPath, who: Principal) -> Result<(), Error> {
        match self.storage.open_for_download(&key).await {
            Ok(obj) => {
                if key.trailing_slash() {
                    return Err(Error::status(404, "not a directory"));
                }
                self.send_object(ex, &key, obj, who).await
            }
            Err(StorageError::IsDir) => {
                if key.trailing_slash() {
                    // A static site's folder: its index.html, if a file, unless
                    // the request asks for a listing (`?format=json`, or JSON
                    // by Accept: the client's `ls` and `get -r` read those).
                    let page = ex.query().is_none()
                        && Format::choose(None, ex.header_str("accept")) == Format::Html;
                    if self.cfg.index && page {
                        if let Ok(index) = key.join("index.html") {
                            if let Ok(obj) = self.storage.open_for_download(&index).await {
                                return self.send_object(ex, &index, obj, who).await;
                            }
                        }
                    }
                    RouteClass::Listing.set(ex);
                    Box::pin(self.send_listing(ex, &key, who)).await
                } else {
                    let location = format!("{}{}", ex.base(), key.to_url(true));
                    ex.send_moved(location, b"moved: directories end in '/'\n")
                        .await
                }
            }
            Err(StorageError::NotFound) if key.segments() == ["favicon.ico"] => {
                crate::page::assets::send_favicon(ex).await
            }
            Err(StorageError::NotFound) if crate::page::not_found::wants_html(ex) => {
                crate::page::not_found::send_not_found(ex, &key).await
            }
            Err(e) => Err(e.into_answer()),
        }
    }

    async fn send_object(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        mut obj: S::Object,
        who: Principal,
    ) -> Result<(), Error> {
        let meta = *obj.meta();
        let tag = crate::conditional::ETagText::of(&meta);
        let tag = tag.as_str();
        let outcome = {
            let c = Conditions {
                if_match: ex.header_str("if-match"),
                if_none_match: ex.header_str("if-none-match"),
                if_modified_since: ex.header_str("if-modified-since"),
                if_unmodified_since: ex.header_str("if-unmodified-since"),
                if_range: ex.header_str("if-range"),
                range: ex.header_str("range"),
            };
            let v = Validators {
                etag: tag,
                last_modified: meta.modified,
            };
            evaluate(ex.method() == "GET", &c, &v, meta.size)
        };
        let (status, offset, len) = match outcome {
            Outcome::NotModified => {
                let resp = base_headers(Response::new(304), tag, meta.modified);
                return ex.send(resp, b"").await;
            }
            Outcome::PreconditionFailed => return Err(Error::status(412, "precondition failed")),
            Outcome::Unsatisfiable => {
                let resp = Response::new(416)
                    .header("Content-Range", format!("bytes */{}", meta.size))
                    .header("Content-Type", "text/plain; charset=utf-8");
                return ex.send(resp, b"range not satisfiable\n").await;
            }
            Outcome::Full => (200, 0, meta.size),
            Outcome::Partial { start, end } => (206, start, end - start + 1),
        };
        let name = key.name().unwrap_or("");
        // The static name, not a parsed `Mime` (which allocates).
        let essence = crate::content_type::of(name);
        // A text file's start is read to sniff its charset; when that is the
        // whole file, the same bytes are the body (one read per request).
        let mut start = [0u8; SNIFF_BYTES];
        let mut whole = None;
        // User content never runs as this origin (the built-in pages do):
        // an uploaded .html is shown sandboxed, and never sniffed; the
        // operator's own site may opt out (--allow-scripts).
        let content_type = if essence.starts_with("text/")
            && utf8_text(&mut obj, meta.size, &mut start, &mut whole).await
        {
            with_utf8_charset(essence)
        } else {
            std::borrow::Cow::Borrowed(essence)
        };
        let mut resp = base_headers(Response::new(status), tag, meta.modified)
            .header("Content-Type", &*content_type)
            .header("X-Content-Type-Options", "nosniff");
        if !self.cfg.allow_scripts {
            resp = resp.header("Content-Security-Policy", "sandbox");
        }
        // The record is read for every size, asked or not: `wirespeed get`
        // verifies whatever digest comes, so skipping it would check less.
        if let Some(sum) = self
            .representation_digest(asked_for(ex), key, &mut obj, who)
            .await?
        {
            resp = resp.header("Repr-Digest", format_sha256(&sum));
        }
        if status == 206 {
            resp = resp.header(
                "Content-Range",
                format!("bytes {}-{}/{}", offset, offset + len - 1, meta.size),
            );
        }
        let head_only = ex.method() == "HEAD";
        if let Some(all) = obj.in_memory() {
            // Kept in memory: head and body in one write, no read at all.
            let body = usize::try_from(offset)
                .ok()
                .and_then(|o| all.get(o..o.checked_add(len as usize)?));
            if let Some(body) = body {
                return ex.send(resp, body).await;
            }
        }
        if let Some(n) = whole {
            // Already read whole: head and body in one write, no second read.
            let body = usize::try_from(offset)
                .ok()
                .and_then(|o| start[..n].get(o..o + len as usize));
            if let Some(body) = body {
                return ex.send(resp, body).await;
            }
        }
        if let Some(file) = obj.as_file() {
            return ex.send_file(resp, file, offset, len).await;
        }
        // No local file (a remote backend): ranged reads through the body
        // writer, with the length known up front; a HEAD reads nothing.
        let mut w = ex.writer_sized(resp, len)?;
        if head_only {
            return w.finish().await;
        }
        let mut buf = vec![0u8; (len as usize).clamp(1, 1 << 20)];
        let mut pos = offset;
        let end = offset + len;
        while pos < end {
            let want = ((end - pos) as usize).min(buf.len());
            let n = obj
                .read_at(pos, &mut buf[..want])
                .await
                .map_err(storage_answer)?;
            if n == 0 {
                return Err(Error::status(500, "object shorter than its size"));
            }
            w.write(&buf[..n]).await?;
            pos += n as u64;
        }
        w.finish().await
    }

    /// `Repr-Digest` for a GET/HEAD: the recorded digest when it is still
    /// valid; otherwise, only if the request asks for one, computed now
    /// (shared with concurrent requests for the same version, within the
    /// server's cap: [`HashGate`]) and recorded (never answered if the file
    /// changed while it was hashed). A hash is only done where it is kept
    /// (a writable server, a backend that records), or for a principal who
    /// may write: anyone else could make the server hash every time.
    async fn representation_digest(
        &self,
        asked: bool,
        key: &RelPath,
        obj: &mut S::Object,
        who: Principal,
    ) -> Result<Option<[u8; 32]>, Error> {
        if let Some(sum) = obj.stored_sha256() {
            return Ok(Some(sum));
        }
        if !asked {
            return Ok(None);
        }
        let kept = obj.records_sha256() && self.policy.writable();
        if !kept && !self.policy.rights(who, key).may_write() {
            return Ok(None);
        }
        let version = format!("{}\0{}", key.to_url(false), etag(obj.meta()));
        self.hashes
            .digest(version, async {
                let sum = hash_object(obj).await?;
                Ok(obj
                    .store_sha256(&sum)
                    .await
                    .map_err(storage_answer)?
                    .then_some(sum))
            })
            .await
    }

    async fn send_listing(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        who: Principal,
    ) -> Result<(), Error> {
        let format = Format::choose(ex.query(), ex.header_str("accept"));
        // Batches come sorted by name (the storage's contract). The first
        // is read before the head is sent, so its failures get a status.
        let mut listing = self.storage.list(key).await.map_err(storage_answer)?;
        let mut batch = listing.next_batch().await.map_err(storage_answer)?;
        let gzip = crate::page::compress::accepts_gzip(ex.header_str("accept-encoding"));
        let mut resp = Response::new(200)
            .header("Content-Type", format.content_type())
            .header("Vary", "Accept, Accept-Encoding")
            .header("Cache-Control", "no-cache");
        if gzip {
            resp = resp.header("Content-Encoding", "gzip");
        }
        let mut gz = gzip.then(crate::page::compress::Gzip::new);
        let nonce = (format == Format::Html).then(new_nonce).flatten();
        if format == Format::Html {
            resp = resp.header("Content-Security-Policy", page_csp_nonce(nonce.as_deref()));
        }
        let mut fmt = Formatter::new(format)
            .with_base(ex.base())
            .with_nonce(nonce)
            .with_rights(crate::page::page_rights(&self.policy, who, key))
            .with_user(crate::page::PageUser::of(&self.policy, who))
            .with_search(self.cfg.search.is_some());
        // Hrefs carry a link on only to its holder, and only when it came
        // in the URL (a header goes with every request by itself).
        if matches!(who, Principal::Link(_)) {
            fmt = fmt.with_link(crate::policy::shares::from_query(ex.query()));
        }
        let mut text = Vec::with_capacity(FLUSH_AT + 1024);
        fmt.begin(&mut text, key.segments(), false);
        let mut w = ex.writer(resp)?;
        while let Some(entries) = batch {
            for e in &entries {
                if !crate::page::may_see(&self.policy, who, key, &e.name) {
                    continue;
                }
                fmt.entry(&mut text, e);
                if text.len() >= FLUSH_AT {
                    write_text(&mut w, gz.as_mut(), &text).await?;
                    text.clear();
                }
            }
            batch = listing.next_batch().await.map_err(storage_answer)?;
        }
        fmt.end(&mut text);
        write_text(&mut w, gz.as_mut(), &text).await?;
        if let Some(gz) = gz {
            w.write(&gz.finish()?).await?;
        }
        w.finish().await
    }

    async fn put(&self, ex: &mut Exchange, key: RelPath, who: Principal) -> Result<(), Error> {
        if key.is_root() || key.trailing_slash() {
            return Err(Error::status(400, "PUT needs a file path, not a directory"));
        }
        let mtime = crate::mtime::requested(ex)?;
        check_room(&self.storage, &self.cfg, ex).await?;
        let room = crate::quota::admit_body(&self.storage, &self.cfg, ex, &key).await?;
        let expected = crate::digest::expected_from(ex)?;
        let hash = self.cfg.hash_for(ex, expected.as_ref());
        let check = write_preconditions(&self.storage, ex, &key).await?;
        // WebDAV locks: 412/423 before the body, checked again at commit.
        let if_field = crate::locks::IfField::of(ex);
        let targets = [(&key, Reach::Member)];
        let locks = &self.cfg.locks;
        let submitted = check_write(locks, &self.storage, &if_field, &key, &targets, who).await?;
        let guard = WriteGuard::new(&self.policy, who, &key).with_locks(locks, submitted);
        let mut up = guard.create(&self.storage, &key, check).await?;
        if let Some(sum) = expected {
            up.expect_sha256(sum);
        }
        let mtime_applied = mtime.is_some_and(|t| up.set_modified(t));
        let sum = match receive(ex, &mut up, self.cfg.upload_path, hash).await {
            Ok(sum) => sum,
            Err(e) => {
                // Disconnect, timeout, 413 mid-body: nothing may remain.
                up.abort().await;
                return Err(crate::quota::explain_cut(e, room, &self.cfg));
            }
        };
        if let (Some(want), Some(got)) = (expected, sum) {
            if want != got {
                up.abort().await;
                if let Some(m) = &self.cfg.metrics {
                    m.digest_mismatch();
                }
                let resp = Response::new(400)
                    .header("Repr-Digest", format_sha256(&got))
                    .header("Content-Type", "text/plain; charset=utf-8");
                return ex
                    .send(resp, b"digest mismatch: the received bytes do not match the announced sha-256; nothing was stored\n")
                    .await;
            }
        }
        // With a trash, the file replaced is kept there by a second name
        // right before the new one renames over its name (which so never
        // stands empty). A storage that keeps it at the publication does
        // so for every front; for another, a conditional write is left out
        // here: its precondition is judged on the old file at commit.
        if self.cfg.trash_days > 0
            && !self.storage.keeps_replaced()
            && guard.may_replace()
            && ex.header("if-match").is_none()
        {
            if let Ok(old) = self.storage.stat(&key).await {
                if let Err(e) =
                    crate::trash::keep_replaced(&self.storage, &self.cfg, &key, &old).await
                {
                    up.abort().await;
                    return Err(e.on_write(&key).into_answer());
                }
            }
        }
        let written = up
            .commit(sum)
            .await
            .map_err(|e| guard.explain(e.on_write(&key).into_answer()))?;
        let extra: &[(&str, &str)] = if mtime_applied {
            &[crate::mtime::ANSWER]
        } else {
            &[]
        };
        respond_stored_with(&self.storage, ex, &key, written, sum.as_ref(), extra).await
    }
}

/// Listing text to the body writer, through gzip when it is on.
async fn write_text(
    w: &mut wirespeed_net::BodyWriter<'_>,
    gz: Option<&mut crate::page::compress::Gzip>,
    text: &[u8],
) -> Result<(), Error> {
    match gz {
        Some(gz) => {
            gz.push(text)?;
            let ready = gz.ready();
            if !ready.is_empty() {
                w.write(ready).await?;
                ready.clear();
            }
            Ok(())
        }
        None => w.write(text).await,
    }
}

/// How much of a text file is looked at to decide whether it is UTF-8.
const SNIFF_BYTES: usize = 1024;

/// Whether a text file's first [`SNIFF_BYTES`] (read into `buf`) are UTF-8
/// (an unreadable one counts as not: no charset is then claimed). `whole`
/// becomes the file's length when `buf` holds all of it.
async fn utf8_text<O: Object>(
    obj: &mut O,
    size: u64,
    buf: &mut [u8; SNIFF_BYTES],
    whole: &mut Option<usize>,
) -> bool {
    // Kept in memory: sniffed where it is, not copied first.
    if let Some(all) = obj.in_memory() {
        let n = all.len().min(SNIFF_BYTES);
        return is_utf8_prefix(&all[..n], all.len() <= SNIFF_BYTES);
    }
    let want = (size as usize).min(SNIFF_BYTES);
    let mut got = 0;
    while got < want {
        match obj.read_at(got as u64, &mut buf[got..want]).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => got += n,
        }
    }
    let complete = size as usize <= SNIFF_BYTES;
    if complete {
        *whole = Some(got);
    }
    is_utf8_prefix(&buf[..got], complete)
}

/// `TYPE; charset=utf-8`, without an allocation for the common text types
/// (the small-GET path counts them).
fn with_utf8_charset(essence: &str) -> std::borrow::Cow<'static, str> {
    match essence {
        "text/plain" => "text/plain; charset=utf-8".into(),
        "text/html" => "text/html; charset=utf-8".into(),
        "text/css" => "text/css; charset=utf-8".into(),
        "text/csv" => "text/csv; charset=utf-8".into(),
        "text/markdown" => "text/markdown; charset=utf-8".into(),
        "text/javascript" => "text/javascript; charset=utf-8".into(),
        "text/xml" => "text/xml; charset=utf-8".into(),
        other => format!("{other}; charset=utf-8").into(),
    }
}

/// Whether `bytes` are UTF-8; when they are only the start of the text
/// (`complete` false), a character cut off at the end still counts.
fn is_utf8_prefix(bytes: &[u8], complete: bool) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => !complete && e.error_len().is_none(),
    }
}

/// The sha-256 of an object's bytes as opened: read on a blocking thread
/// for local files (≈0.7 s per GiB), through `read_at` otherwise.
async fn hash_object<O: Object>(obj: &mut O) -> Result<[u8; 32], Error> {
    use sha2::{Digest, Sha256};
    let size = obj.meta().size;
    if let Some(file) = obj.as_file() {
        let file = file
            .try_clone()
            .map_err(StorageError::from)
            .map_err(storage_answer)?;
        return tokio::task::spawn_blocking(move || -> std::io::Result<[u8; 32]> {
            let mut h = Sha256::new();
            crate::upload::hash_file_range(&file, &mut h, 0, size, None)?;
            Ok(h.finalize().into())
        })
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))?
        .map_err(|e| StorageError::from(e).into_answer());
    }
    let mut h = Sha256::new();
    let mut buf = vec![0u8; (size as usize).clamp(1, 1 << 20)];
    let mut pos = 0u64;
    while pos < size {
        let want = ((size - pos) as usize).min(buf.len());
        let n = obj
            .read_at(pos, &mut buf[..want])
            .await
            .map_err(storage_answer)?;
        if n == 0 {
            return Err(Error::status(500, "object shorter than its size"));
        }
        h.update(&buf[..n]);
        pos += n as u64;
    }
    Ok(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::{http_date, is_utf8_prefix};
    use std::time::SystemTime;

    #[test]
    fn http_dates_are_remembered_only_for_the_same_time() {
        let a = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let b = a + std::time::Duration::from_secs(1);
        for t in [a, a, b, a, b, b] {
            assert_eq!(&http_date(t)[..], httpdate::fmt_http_date(t).as_bytes());
        }
    }

    #[test]
    fn utf8_sniffing() {
        assert!(is_utf8_prefix(b"", true));
        assert!(is_utf8_prefix("plain ascii, caf\u{e9}".as_bytes(), true));
        // Latin-1 "café": not UTF-8, so no charset is claimed.
        assert!(!is_utf8_prefix(b"caf\xe9", true));
        assert!(!is_utf8_prefix(b"caf\xe9 au lait", false));
        // "é" cut in half by the sniff window: fine only if more follows.
        assert!(is_utf8_prefix(b"caf\xc3", false));
        assert!(!is_utf8_prefix(b"caf\xc3", true));
        // UTF-16 with a BOM is left to the client.
        assert!(!is_utf8_prefix(b"\xff\xfeh\0i\0", true));
    }
}
