//! Uploads: PUT a file or a stream (checked end to end with sha-256), POST
//! a file as a one-part `multipart/form-data` form.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use wirespeed_resumable::client::ClientProtocol;

use crate::transfer::retry::{self, Notice, RetryPolicy};
use crate::transfer::{format_sha256, hash_file, hex, parse_sha256, TransferProgress};
use crate::{Body, Client, Error, FileBody, Request, Response, Url};

/// Which protocol a file upload uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProtocolChoice {
    /// A plain PUT below [`UploadOptions::resumable_from`] bytes; above, what
    /// the server announces (the IETF draft, then tus, else PUT).
    #[default]
    Auto,
    /// This one, whatever the size (PUT: never resumable).
    Force(ClientProtocol),
}

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
    /// Retries after failures that may pass (broken connection, 5xx).
    pub retry: RetryPolicy,
    pub protocol: ProtocolChoice,
    /// With [`ProtocolChoice::Auto`], files from this size on are uploaded
    /// resumably (smaller ones cost one PUT, retried from 0).
    pub resumable_from: u64,
    /// Continue the partial upload a state file records for this file and URL.
    pub continue_saved: bool,
    /// Where state files live (None: none are written).
    pub state_dir: Option<std::path::PathBuf>,
    /// Told about resumptions, restarts and new uploads.
    pub notice: Option<Notice>,
    /// Largest append of a resumable upload (None: as the server allows).
    pub append_size: Option<u64>,
    /// Send the file's modification time (`X-OC-Mtime`) for the server to keep.
    pub send_mtime: bool,
    /// At most this many connections for one file, in parallel parts
    /// (adaptive up to it; 1: one upload).
    pub connections: usize,
    /// Files at least this large go in parallel parts when `connections`
    /// allows and the server can join them (tus concatenation).
    pub parts_from: u64,
}

impl UploadOptions {
    /// The `X-OC-Mtime` value an upload of `path` carries, if any.
    pub(crate) fn mtime_field(&self, path: &Path) -> Option<String> {
        if !self.send_mtime {
            return None;
        }
        crate::transfer::mtime::field_value(crate::transfer::mtime::of_file(path))
    }
}

impl Default for UploadOptions {
    /// Verified by default: hash while streaming, compare with the server.
    fn default() -> Self {
        UploadOptions {
            digest_first: false,
            verify: true,
            no_clobber: false,
            progress: None,
            retry: RetryPolicy::default(),
            protocol: ProtocolChoice::Auto,
            resumable_from: 8 << 20,
            continue_saved: false,
            state_dir: None,
            notice: None,
            append_size: None,
            send_mtime: true,
            connections: crate::transfer::ranges::DEFAULT_MAX_CONNECTIONS,
            parts_from: crate::transfer::ranges::RANGED_FROM,
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
    /// Sent as parallel parts (tus concatenation), not as one upload.
    pub parallel: Option<Parallel>,
}

/// How a file went up in parallel parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallel {
    pub parts: usize,
    /// The most connections open at once.
    pub connections: usize,
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

/// Files up to this size are read whole, hashed inline and sent with the
/// request head in one write.
const SMALL_FILE: u64 = 64 * 1024;

/// PUT a file, again from byte 0 after a failure that may pass.
pub(crate) async fn put_retrying(
    client: &Client,
    url: &Url,
    path: &Path,
    opts: &UploadOptions,
) -> Result<UploadReport, Error> {
    let mut attempt = 0;
    loop {
        match put_file(client, url, path, opts).await {
            // Refused at the first try: nobody is listening.
            Err(e @ Error::ConnectionRefused { .. }) if attempt == 0 => return Err(e),
            Err(e) if retry::retryable(&e) && attempt < opts.retry.retries => {
                let d = retry::pause(&opts.retry, attempt).await;
                attempt += 1;
                if let Some(n) = &opts.notice {
                    n(&format!(
                        "{}; retrying from byte 0 in {:.1} s (a plain PUT cannot resume; retry {attempt} of {})",
                        retry::describe(&e),
                        d.as_secs_f64(),
                        opts.retry.retries
                    ));
                }
            }
            r => return r,
        }
    }
}

/// PUT a file with Content-Length, hashing while it streams; the server's
/// `Repr-Digest` must match ([`Error::DigestMismatch`] otherwise).
async fn put_file(
    client: &Client,
    url: &Url,
    path: &Path,
    opts: &UploadOptions,
) -> Result<UploadReport, Error> {
    let url = url.clone();
    let fb = FileBody::open(path)?;
    let len = fb.len();
    let mut req = Request::put(url.clone()).header("Content-Type", "application/octet-stream");
    let hasher = Arc::new(Mutex::new(Sha256::new()));
    let small = if opts.digest_first {
        None
    } else {
        fb.read_small(SMALL_FILE).transpose()?
    };
    let (mut body, ours): (Body, Option<[u8; 32]>) = if let Some(data) = small {
        // Small files: read and hashed inline, sent with the head in one
        // write (a reader thread per 4 KiB file cost more than the file).
        let ours = opts.verify.then(|| Sha256::digest(&data).into());
        if opts.verify {
            req = req.header("Want-Repr-Digest", "sha-256=10");
        }
        (Body::bytes(data), ours)
    } else if opts.digest_first {
        let h = hash_file(path, Some(len), None).await?;
        let sum: [u8; 32] = h.finalize().into();
        req = req.header("Repr-Digest", format_sha256(&sum));
        (Body::file(fb), Some(sum))
    } else if opts.verify {
        // RFC 9530 §4: servers hash only when asked (wirespeed's default).
        req = req.header("Want-Repr-Digest", "sha-256=10");
        let h = hasher.clone();
        let fb = fb.observe(move |bytes| {
            if let Ok(mut h) = h.lock() {
                h.update(bytes);
            }
        });
        (Body::file(fb), None)
    } else {
        (Body::file(fb), None)
    };
    if let Some(p) = &opts.progress {
        p.start(Some(len), 0);
        let p = p.clone();
        body = body.progress(Arc::new(move |n| p.advance(n)));
    }
    if opts.no_clobber {
        req = req.header("If-None-Match", "*");
    }
    if let Some(t) = opts.mtime_field(path) {
        req = req.header(crate::transfer::mtime::FIELD, t);
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
        parallel: None,
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
    let mut stream = crate::StreamBody::new(reader);
    if let Some(p) = opts.progress.clone() {
        stream = stream.on_end(move || p.finishing());
    }
    let stream = stream.observe(move |bytes| {
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
