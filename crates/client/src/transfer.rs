//! Whole-file operations on top of [`Client`]: upload with end-to-end
//! sha-256 checking, resumable download into a temporary file, multipart
//! form upload, listing and delete. The CLI is a thin shell over these.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::{Body, Client, Error, FileBody, Request, Response, Url};

/// Progress of one transfer (a progress bar implements it).
pub trait TransferProgress: Send + Sync {
    /// The transfer starts: `total` bytes if known, `already` of them present (resume).
    fn start(&self, total: Option<u64>, already: u64);
    /// `n` more bytes went by.
    fn advance(&self, n: u64);
}

/// `sha-256=:BASE64:` (RFC 9530).
pub fn format_sha256(sum: &[u8; 32]) -> String {
    format!("sha-256=:{}:", STANDARD.encode(sum))
}

/// The sha-256 member of a `Repr-Digest` value, if there is a well-formed one.
pub fn parse_sha256(value: &str) -> Option<[u8; 32]> {
    value.split(',').find_map(|member| {
        let (k, v) = member.trim().split_once('=')?;
        if k.trim() != "sha-256" {
            return None;
        }
        let item = v.split(';').next()?.trim();
        let b64 = item.strip_prefix(':')?.strip_suffix(':')?;
        STANDARD.decode(b64).ok()?.try_into().ok()
    })
}

pub fn hex(sum: &[u8; 32]) -> String {
    sum.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha-256 of a whole file (or its first `limit` bytes), on a blocking thread.
pub async fn hash_file(
    path: &Path,
    limit: Option<u64>,
    progress: Option<Arc<dyn TransferProgress>>,
) -> Result<Sha256, Error> {
    let p = path.to_path_buf();
    tokio::task::spawn_blocking(move || -> io::Result<Sha256> {
        let mut f = File::open(&p)?;
        let mut h = Sha256::new();
        let mut left = limit.unwrap_or(u64::MAX);
        let mut buf = vec![0u8; 1 << 20];
        while left > 0 {
            let want = (buf.len() as u64).min(left) as usize;
            let n = f.read(&mut buf[..want])?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            left -= n as u64;
            if let Some(p) = &progress {
                p.advance(n as u64);
            }
        }
        Ok(h)
    })
    .await
    .map_err(|e| Error::Io {
        context: "hashing",
        source: io::Error::other(e.to_string()),
    })?
    .map_err(|source| Error::File {
        path: path.to_path_buf(),
        source,
    })
}

// ---- upload -----------------------------------------------------------------

#[derive(Clone)]
pub struct UploadOptions {
    /// Hash the file before sending and send `Repr-Digest`, so the server
    /// refuses (and does not store) a body that arrives corrupted. Lets the
    /// body go out with sendfile on plain TCP.
    pub digest_first: bool,
    /// Hash the file while it streams and compare with the server's
    /// `Repr-Digest` (the default). Off: no client-side hash at all, so the
    /// body goes out with sendfile; the transfer is then only as safe as TCP.
    pub verify: bool,
    /// Send `If-None-Match: *`: the server stores only if nothing is there;
    /// otherwise the upload fails with [`Error::Exists`].
    pub no_clobber: bool,
    pub progress: Option<Arc<dyn TransferProgress>>,
}

impl Default for UploadOptions {
    /// Verified by default: hash while streaming, compare with the server.
    fn default() -> Self {
        UploadOptions {
            digest_first: false,
            verify: true,
            no_clobber: false,
            progress: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct UploadReport {
    pub url: Url,
    pub status: u16,
    pub bytes: u64,
    /// Our sha-256 of the file (`None` when `verify` was off).
    pub sha256: Option<[u8; 32]>,
    /// What the server said it stored (`Repr-Digest`), if it said.
    pub server_sha256: Option<[u8; 32]>,
}

impl UploadReport {
    /// The upload replaced an existing file: 200 or 204, where a new one is
    /// 201 (RFC 9110 §9.3.4).
    pub fn replaced(&self) -> bool {
        matches!(self.status, 200 | 204)
    }
}

/// The URL a file is uploaded to: a URL ending in `/` gets the file's name.
pub fn upload_url(url: &Url, path: &Path) -> Result<Url, Error> {
    if !url.path().ends_with('/') {
        return Ok(url.clone());
    }
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::File {
            path: path.to_path_buf(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                "no usable file name to append to the URL",
            ),
        })?;
    Ok(url.with_file_name(name))
}

/// PUT a file with Content-Length, hashing while it streams; the server's
/// `Repr-Digest` must match ([`Error::DigestMismatch`] otherwise).
pub async fn upload_file(
    client: &Client,
    url: &Url,
    path: &Path,
    opts: &UploadOptions,
) -> Result<UploadReport, Error> {
    let url = upload_url(url, path)?;
    let mut fb = FileBody::open(path)?;
    let len = fb.len();
    let mut req = Request::put(url.clone()).header("Content-Type", "application/octet-stream");
    let hasher = Arc::new(Mutex::new(Sha256::new()));
    let ours: Option<[u8; 32]> = if opts.digest_first {
        let h = hash_file(path, Some(len), None).await?;
        let sum: [u8; 32] = h.finalize().into();
        req = req.header("Repr-Digest", format_sha256(&sum));
        Some(sum)
    } else if opts.verify {
        // RFC 9530 §4: servers hash only when asked (wirespeed's default).
        req = req.header("Want-Repr-Digest", "sha-256=10");
        let h = hasher.clone();
        fb = fb.observe(move |bytes| {
            if let Ok(mut h) = h.lock() {
                h.update(bytes);
            }
        });
        None
    } else {
        None
    };
    let mut body = Body::file(fb);
    if let Some(p) = &opts.progress {
        p.start(Some(len), 0);
        let p = p.clone();
        body = body.progress(Arc::new(move |n| p.advance(n)));
    }
    if opts.no_clobber {
        req = req.header("If-None-Match", "*");
    }
    let resp = send_upload(client, req.body(body), &url, opts).await?;
    finish_upload(resp, url, len, ours, &hasher, opts).await
}

/// Send an upload; a 412 to `--no-clobber` is [`Error::Exists`].
async fn send_upload(
    client: &Client,
    req: Request,
    url: &Url,
    opts: &UploadOptions,
) -> Result<Response, Error> {
    let resp = client.send(req).await?;
    if opts.no_clobber && resp.status() == 412 {
        let _ = resp.bytes(64 * 1024).await;
        return Err(Error::Exists {
            url: url.to_string(),
        });
    }
    resp.error_for_status().await
}

/// Read the answer to an upload and check its `Repr-Digest` against ours.
async fn finish_upload(
    resp: Response,
    url: Url,
    len: u64,
    ours: Option<[u8; 32]>,
    hasher: &Mutex<Sha256>,
    opts: &UploadOptions,
) -> Result<UploadReport, Error> {
    let status = resp.status();
    let server = resp.header("Repr-Digest").map(str::to_string);
    // Read the (small) confirmation body so the connection can be reused.
    let _ = resp.bytes(64 * 1024).await;
    let sha256: Option<[u8; 32]> = match ours {
        Some(s) => Some(s),
        None if opts.verify => {
            let h = std::mem::take(&mut *hasher.lock().map_err(|_| Error::Io {
                context: "hashing",
                source: io::Error::other("hasher poisoned"),
            })?);
            Some(h.finalize().into())
        }
        None => None,
    };
    let server_sha256 = match server {
        Some(v) => Some(parse_sha256(&v).ok_or_else(|| {
            Error::DigestMismatch {
                what: "upload",
                ours: sha256
                    .as_ref()
                    .map_or_else(|| "(not computed)".to_string(), hex),
                theirs: format!("unreadable Repr-Digest {v:?}"),
            }
        })?),
        None => None,
    };
    if let (Some(s), Some(ours)) = (server_sha256, sha256) {
        if s != ours {
            return Err(Error::DigestMismatch {
                what: "upload",
                ours: hex(&ours),
                theirs: hex(&s),
            });
        }
    }
    Ok(UploadReport {
        url,
        status,
        bytes: len,
        sha256,
        server_sha256,
    })
}

/// PUT a stream of unknown length (stdin, a pipe) with chunked
/// transfer-encoding, hashing it on the way when `verify` is on. `url` must
/// name the file (not end in `/`).
pub async fn upload_stream(
    client: &Client,
    url: &Url,
    reader: impl tokio::io::AsyncRead + Send + Unpin + 'static,
    opts: &UploadOptions,
) -> Result<UploadReport, Error> {
    if url.path().ends_with('/') {
        return Err(Error::InvalidUrl {
            url: url.to_string(),
            reason: "a stream has no file name: the URL must name the file, not a folder",
        });
    }
    let hasher = Arc::new(Mutex::new(Sha256::new()));
    let count = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut req = Request::put(url.clone()).header("Content-Type", "application/octet-stream");
    if opts.verify {
        req = req.header("Want-Repr-Digest", "sha-256=10");
    }
    if opts.no_clobber {
        req = req.header("If-None-Match", "*");
    }
    let (h, c, verify) = (hasher.clone(), count.clone(), opts.verify);
    let stream = crate::StreamBody::new(reader).observe(move |bytes| {
        c.fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
        if verify {
            if let Ok(mut h) = h.lock() {
                h.update(bytes);
            }
        }
    });
    let mut body = Body::stream(stream);
    if let Some(p) = &opts.progress {
        p.start(None, 0);
        let p = p.clone();
        body = body.progress(Arc::new(move |n| p.advance(n)));
    }
    let resp = send_upload(client, req.body(body), url, opts).await?;
    let len = count.load(std::sync::atomic::Ordering::Relaxed);
    finish_upload(resp, url.clone(), len, None, &hasher, opts).await
}

/// POST a file as `multipart/form-data` (one part named `field`), streamed
/// from disk with a Content-Length computed up front. Returns the status and
/// the server's answer.
pub async fn upload_form(
    client: &Client,
    url: &Url,
    path: &Path,
    field: &str,
    progress: Option<Arc<dyn TransferProgress>>,
) -> Result<(u16, String), Error> {
    let fb = FileBody::open(path)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let boundary = boundary();
    let (head, tail) = form_framing(&boundary, field, name);
    let len = head.len() as u64 + fb.len() + tail.len() as u64;
    let mut body = Body::bytes(head).then_file(fb).then_bytes(tail);
    if let Some(p) = progress {
        p.start(Some(len), 0);
        body = body.progress(Arc::new(move |n| p.advance(n)));
    }
    let req = Request::new("POST", url.clone())
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        // The answer then lists each stored file's sha-256.
        .header("Want-Repr-Digest", "sha-256=10")
        .body(body);
    let resp = client.send(req).await?.error_for_status().await?;
    let status = resp.status();
    let text = resp.bytes(1 << 20).await?;
    Ok((status, String::from_utf8_lossy(&text).into_owned()))
}

/// The bytes before and after the file in a one-part form.
pub fn form_framing(boundary: &str, field: &str, filename: &str) -> (Vec<u8>, Vec<u8>) {
    // HTML's form encoding: quote, CR and LF in names are percent-escaped.
    let esc = |s: &str| {
        s.replace('"', "%22")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\n\
Content-Type: application/octet-stream\r\n\r\n",
        esc(field),
        esc(filename)
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    (head.into_bytes(), tail.into_bytes())
}

/// A boundary unlikely to occur in any file: 32 hex digits from the clock,
/// the pid and a hash of both.
fn boundary() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let h = Sha256::digest(format!("{t}/{}", std::process::id()));
    format!("wirespeed-{}", &hex(&h.into())[..32])
}

// ---- download ---------------------------------------------------------------

#[derive(Default, Clone)]
pub struct DownloadOptions {
    /// Continue a partial `DEST.part` with a Range request.
    pub resume: bool,
    pub progress: Option<Arc<dyn TransferProgress>>,
}

#[derive(Debug, Clone)]
pub struct DownloadReport {
    pub dest: PathBuf,
    /// Bytes in the finished file.
    pub bytes: u64,
    /// Bytes that were already there (resume).
    pub resumed_from: u64,
    /// The server sent `Repr-Digest` and the file matches it.
    pub verified: bool,
}

/// `DEST.part`: where a download grows until it is complete and verified.
pub fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".part");
    dest.with_file_name(name)
}

/// `bytes START-END/TOTAL` → (start, end, total); total `*` → None.
pub fn parse_content_range(v: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = v.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let (s, e) = range.split_once('-')?;
    let total = if total == "*" {
        None
    } else {
        Some(total.parse().ok()?)
    };
    Some((s.parse().ok()?, e.parse().ok()?, total))
}

/// GET `url` into `dest`: the body streams into `DEST.part`, which is
/// renamed to `dest` only once complete (and verified when the server sends
/// `Repr-Digest`). On failure `dest` is untouched; the `.part` file stays
/// for `resume` unless its content is known to be wrong.
pub async fn download_file(
    client: &Client,
    url: &Url,
    dest: &Path,
    opts: &DownloadOptions,
) -> Result<DownloadReport, Error> {
    let part = part_path(dest);
    let file_err = |p: &Path| {
        let p = p.to_path_buf();
        move |source| Error::File { path: p, source }
    };
    let mut have = if opts.resume {
        match std::fs::metadata(&part) {
            Ok(m) if m.is_file() => m.len(),
            _ => 0,
        }
    } else {
        0
    };
    let mut resp = loop {
        let range = have;
        let (resp, final_url) = get_following(client, url, |u| {
            let req = Request::get(u.clone());
            if range > 0 {
                req.header("Range", format!("bytes={range}-"))
            } else {
                req
            }
        })
        .await?;
        if final_url.path().ends_with('/') {
            // A folder's listing is not the file the user asked for.
            return Err(Error::Status {
                status: resp.status(),
                reason: "Is a folder".to_string(),
                message: format!(
                    "{} is a folder: use `wirespeed ls` to list it",
                    final_url.target
                ),
            });
        }
        if have == 0 {
            break resp.error_for_status().await?;
        }
        match resp.status() {
            206 => {
                let cr = resp.header("Content-Range").and_then(parse_content_range);
                match cr {
                    Some((start, _, _)) if start == have => break resp,
                    _ => tracing::info!(
                        ?cr,
                        have,
                        "Content-Range does not continue the partial file; restarting"
                    ),
                }
            }
            200 => {
                // The server ignored the range: take the whole body.
                tracing::info!("server sent the whole file; restarting from 0");
                have = 0;
                break resp;
            }
            416 => {
                let total = resp
                    .header("Content-Range")
                    .and_then(parse_content_range_star);
                if total == Some(have) {
                    // Already complete: nothing more to fetch.
                    drop(resp);
                    return finish_download(&part, dest, have, 0, None, None).await;
                }
                tracing::info!(?total, have, "range not satisfiable; restarting");
            }
            _ => {
                return Err(resp
                    .error_for_status()
                    .await
                    .err()
                    .unwrap_or(Error::NoResponse))
            }
        }
        have = 0;
    };
    let expected = resp.header("Repr-Digest").and_then(parse_sha256);
    let total = resp.content_length().map(|n| n + have);
    if let Some(p) = &opts.progress {
        p.start(total, have);
    }
    // Resuming with a digest to check: the bytes already on disk count too.
    let hasher = Arc::new(Mutex::new(match (expected, have) {
        (Some(_), n) if n > 0 => hash_file(&part, Some(n), None).await?,
        _ => Sha256::new(),
    }));
    let file = if have > 0 {
        let f = OpenOptions::new()
            .append(true)
            .open(&part)
            .map_err(file_err(&part))?;
        // Drop anything past `have` (there is none unless the file grew).
        f.set_len(have).map_err(file_err(&part))?;
        f
    } else {
        File::create(&part).map_err(file_err(&part))?
    };
    let observer: Option<crate::Observer> = expected.map(|_| {
        let h = hasher.clone();
        Box::new(move |b: &[u8]| {
            if let Ok(mut h) = h.lock() {
                h.update(b);
            }
        }) as crate::Observer
    });
    let progress = opts.progress.clone();
    let advance = move |n: u64| {
        if let Some(p) = &progress {
            p.advance(n)
        }
    };
    let written = resp
        .write_to_file(file, &part, observer, Some(&advance))
        .await?;
    let sum = expected.map(|_| {
        let h = hasher
            .lock()
            .map(|mut h| std::mem::take(&mut *h))
            .unwrap_or_default();
        <[u8; 32]>::from(h.finalize())
    });
    finish_download(&part, dest, have + written, have, expected, sum).await
}

fn parse_content_range_star(v: &str) -> Option<u64> {
    v.trim().strip_prefix("bytes */")?.parse().ok()
}

async fn finish_download(
    part: &Path,
    dest: &Path,
    bytes: u64,
    resumed_from: u64,
    expected: Option<[u8; 32]>,
    got: Option<[u8; 32]>,
) -> Result<DownloadReport, Error> {
    if let (Some(e), Some(g)) = (expected, got) {
        if e != g {
            // Known-bad bytes must not be resumed from.
            let _ = std::fs::remove_file(part);
            return Err(Error::DigestMismatch {
                what: "download",
                ours: hex(&g),
                theirs: hex(&e),
            });
        }
    }
    std::fs::rename(part, dest).map_err(|source| Error::File {
        path: dest.to_path_buf(),
        source,
    })?;
    Ok(DownloadReport {
        dest: dest.to_path_buf(),
        bytes,
        resumed_from,
        verified: expected.is_some() && got.is_some(),
    })
}

// ---- listing and delete -----------------------------------------------------

/// One listing entry (the service's JSON listing).
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct Entry {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub size: u64,
    pub modified: Option<String>,
}

/// Most redirects a GET follows.
pub const MAX_REDIRECTS: usize = 10;

/// Send a GET built by `build` for `url`, following up to
/// [`MAX_REDIRECTS`] redirects (301, 302, 303, 307, 308) on the same origin;
/// a redirect to another origin is an error (the token must not travel
/// there). Returns the final response (any status) and its URL.
pub async fn get_following(
    client: &Client,
    url: &Url,
    build: impl Fn(&Url) -> Request,
) -> Result<(Response, Url), Error> {
    let mut url = url.clone();
    for _ in 0..=MAX_REDIRECTS {
        let resp = client.send(build(&url)).await?;
        if !matches!(resp.status(), 301 | 302 | 303 | 307 | 308) {
            return Ok((resp, url));
        }
        let Some(location) = resp.header("Location").map(str::to_string) else {
            return Ok((resp, url));
        };
        let next = url.resolve(&location)?;
        if !next.same_origin(&url) {
            return Err(Error::Redirect(format!(
                "{url} redirects to another origin, {location}; not followed (the token must not \
                 travel there): use that URL if you trust it"
            )));
        }
        let _ = resp.bytes(64 * 1024).await;
        url = next;
    }
    Err(Error::Redirect(format!(
        "more than {MAX_REDIRECTS} redirects starting at {url}"
    )))
}

/// GET a directory listing as JSON (`Accept: application/json`). Returns the
/// raw JSON and the parsed entries.
pub async fn list(client: &Client, url: &Url) -> Result<(String, Vec<Entry>), Error> {
    let (raw, entries, _) = list_following(client, url).await?;
    Ok((raw, entries))
}

/// [`list`], also returning the folder's URL after redirects (`/d` → `/d/`).
/// A file is [`Error::NotAFolder`]; an answer that is not JSON (another
/// server's HTML index) is [`Error::NotAListing`].
pub async fn list_following(
    client: &Client,
    url: &Url,
) -> Result<(String, Vec<Entry>, Url), Error> {
    let (resp, final_url) = get_following(client, url, |u| {
        Request::get(u.clone()).header("Accept", "application/json")
    })
    .await?;
    let resp: Response = resp.error_for_status().await?;
    if !final_url.path().ends_with('/') {
        drop(resp);
        return Err(Error::NotAFolder {
            url: final_url.to_string(),
        });
    }
    let content_type = resp.header("Content-Type").unwrap_or("").to_string();
    if !content_type
        .to_ascii_lowercase()
        .starts_with("application/json")
    {
        drop(resp);
        return Err(Error::NotAListing {
            url: final_url.to_string(),
            content_type,
        });
    }
    let raw = resp.bytes(64 << 20).await?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let entries: Vec<Entry> = serde_json::from_str(&raw).map_err(|e| Error::Io {
        context: "reading the JSON listing",
        source: io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
    })?;
    Ok((raw, entries, final_url))
}

/// One file or folder found by [`walk`].
#[derive(Debug, Clone)]
pub struct RemoteEntry {
    /// Names from the walked folder down to this entry (each one checked by
    /// [`safe_name`]).
    pub rel: Vec<String>,
    pub url: Url,
    pub dir: bool,
    pub size: u64,
}

/// Deepest folder nesting [`walk`] descends into (a symlink loop on the
/// server would otherwise never end).
pub const MAX_DEPTH: usize = 64;

/// A name from a listing that is safe to create locally: not empty, `.`,
/// `..`, and without `/` or NUL (a hostile server must not write outside
/// the destination).
pub fn safe_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Every file and folder below the folder `url`, folders before their
/// contents. Returns the folder's URL after redirects and the entries.
/// Unsafe names are skipped with a warning.
pub async fn walk(client: &Client, url: &Url) -> Result<(Url, Vec<RemoteEntry>), Error> {
    let (_, first, root) = list_following(client, url).await?;
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([(root.clone(), Vec::new(), first)]);
    while let Some((folder, rel, entries)) = queue.pop_front() {
        for e in entries {
            if !safe_name(&e.name) {
                tracing::warn!(name = ?e.name, folder = %folder, "skipping an unsafe name in a listing");
                continue;
            }
            let dir = e.kind == "dir";
            let mut path: Vec<String> = rel.clone();
            path.push(e.name.clone());
            let url = folder.child(&e.name, dir);
            if dir {
                if path.len() > MAX_DEPTH {
                    return Err(Error::Io {
                        context: "walking the folder",
                        source: io::Error::other(format!(
                            "{url} is nested deeper than {MAX_DEPTH} folders (a link loop?)"
                        )),
                    });
                }
                let (_, sub, _) = list_following(client, &url).await?;
                queue.push_back((url.clone(), path.clone(), sub));
            }
            out.push(RemoteEntry {
                rel: path,
                url,
                dir,
                size: e.size,
            });
        }
    }
    Ok((root, out))
}

/// GET `url` into `w` (stdout): bytes are written as they arrive, so a
/// `Repr-Digest` mismatch can only be reported after the fact (an error).
/// Returns the byte count and whether a digest was checked.
pub async fn download_to<W: tokio::io::AsyncWrite + Unpin + ?Sized>(
    client: &Client,
    url: &Url,
    w: &mut W,
    progress: Option<Arc<dyn TransferProgress>>,
) -> Result<(u64, bool), Error> {
    use tokio::io::AsyncWriteExt;
    let (resp, final_url) = get_following(client, url, |u| Request::get(u.clone())).await?;
    if final_url.path().ends_with('/') {
        return Err(Error::Status {
            status: resp.status(),
            reason: "Is a folder".to_string(),
            message: format!(
                "{} is a folder: use `wirespeed ls` to list it",
                final_url.target
            ),
        });
    }
    let mut resp = resp.error_for_status().await?;
    let expected = resp.header("Repr-Digest").and_then(parse_sha256);
    if let Some(p) = &progress {
        p.start(resp.content_length(), 0);
    }
    let mut h = Sha256::new();
    let mut buf = vec![0u8; client.config().read_buffer.max(4096)];
    let mut total = 0u64;
    loop {
        let n = resp.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        if expected.is_some() {
            h.update(&buf[..n]);
        }
        w.write_all(&buf[..n])
            .await
            .map_err(Error::io("writing the output"))?;
        total += n as u64;
        if let Some(p) = &progress {
            p.advance(n as u64);
        }
    }
    w.flush().await.map_err(Error::io("writing the output"))?;
    if let Some(e) = expected {
        let got: [u8; 32] = h.finalize().into();
        if got != e {
            return Err(Error::DigestMismatch {
                what: "download (already written out)",
                ours: hex(&got),
                theirs: hex(&e),
            });
        }
    }
    Ok((total, expected.is_some()))
}

/// DELETE `url`; returns the status.
pub async fn delete(client: &Client, url: &Url) -> Result<u16, Error> {
    let resp = client
        .send(Request::delete(url.clone()))
        .await?
        .error_for_status()
        .await?;
    let status = resp.status();
    let _ = resp.bytes(64 * 1024).await;
    Ok(status)
}
