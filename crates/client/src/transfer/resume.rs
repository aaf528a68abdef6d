//! Resumable file uploads (the IETF draft or tus 1.0): the upload is
//! created with an empty request, so its URL is known (and saved in a state
//! file) before the first byte of the file leaves; the file then goes out in
//! appends from the server's offset (sendfile on plain TCP). After a failure
//! that may pass, the offset is asked again and the rest is sent.

use std::path::Path;
use std::sync::Arc;

use sha2::Digest;
use wirespeed_resumable::client::{
    encode_metadata, next_append, parse_offset, Announced, ClientProtocol,
};
use wirespeed_resumable::{ietf, tus};

use crate::transfer::pace::{spawn_hash, Pace};
use crate::transfer::put::{put_retrying, ProtocolChoice};
use crate::transfer::retry::{self, RetryPolicy};
use crate::transfer::saved::{FileIdentity, Lookup, StateFile};
use crate::transfer::{format_sha256, hash_file, hex, parse_sha256, UploadOptions, UploadReport};
use crate::{Body, Client, Error, FileBody, Request, Response, Url};

/// Appends cut without progress are halved, down to this size.
const MIN_OWN_CAP: u64 = 1 << 20;

/// The upload resource on the server.
struct Session {
    protocol: ClientProtocol,
    location: Url,
}

/// How the last attempt ended.
enum Outcome {
    /// The upload is complete: the final answer's status and `Repr-Digest`.
    Done(u16, Option<String>),
    /// The server offers no resumable upload: PUT instead.
    UsePut,
}

struct Job<'a> {
    client: &'a Client,
    url: &'a Url,
    path: &'a Path,
    len: u64,
    opts: &'a UploadOptions,
    protocol: Option<ClientProtocol>,
    session: Option<Session>,
    state: StateFile,
    /// The offset when it is known without asking (right after creation).
    offset: Option<u64>,
    /// The server's `max-append-size`.
    server_cap: Option<u64>,
    /// Our own append cap, halved after appends cut without progress.
    own_cap: u64,
    /// The last append tried: (offset, length).
    tried: Option<(u64, u64)>,
    /// The highest offset the server confirmed.
    best: u64,
    /// Failures in a row since the server last confirmed more bytes.
    attempt: u32,
    digest_first: Option<[u8; 32]>,
    /// Paces the hash taken beside the transfer.
    pace: Option<Pace>,
}

/// Upload `path` (`len` bytes) to `url` resumably; see the module comment.
pub(crate) async fn upload(
    client: &Client,
    url: &Url,
    path: &Path,
    len: u64,
    opts: &UploadOptions,
) -> Result<UploadReport, Error> {
    let identity = FileIdentity::of(path)?;
    let state = StateFile::new(opts.state_dir.as_deref(), identity, url);
    let mut job = Job {
        client,
        url,
        path,
        len,
        opts,
        protocol: match opts.protocol {
            ProtocolChoice::Force(p) => Some(p),
            ProtocolChoice::Auto => None,
        },
        session: None,
        state,
        offset: None,
        server_cap: None,
        own_cap: opts.append_size.unwrap_or(u64::MAX).max(1),
        tried: None,
        best: 0,
        attempt: 0,
        digest_first: None,
        pace: None,
    };
    if opts.continue_saved {
        job.load_saved();
    } else if job.state.exists() {
        // A plain rerun continues a recorded upload of this very file.
        job.load_matching();
    }
    if opts.digest_first {
        let sum: [u8; 32] = hash_file(path, Some(len), None).await?.finalize().into();
        job.digest_first = Some(sum);
    }
    // The whole file is hashed beside the transfer, so the body itself
    // still goes out with sendfile; paced by what has been sent.
    let (pace, release) = Pace::new(0);
    let hashing = (opts.verify && !opts.digest_first).then(|| {
        job.pace = Some(pace.clone());
        spawn_hash(path, len, pace)
    });
    let outcome = job.run().await;
    match outcome {
        Ok(Outcome::Done(..)) => release.finish(),
        // The hash stops: it is not awaited.
        _ => drop(release),
    }
    let (status, server_digest) = match outcome {
        Ok(Outcome::Done(status, digest)) => (status, digest),
        Ok(Outcome::UsePut) => {
            if let Some(h) = hashing {
                h.abort();
            }
            return put_retrying(client, url, path, opts).await;
        }
        Err(e) => {
            if let Some(h) = hashing {
                h.abort();
            }
            return Err(e);
        }
    };
    let ours: Option<[u8; 32]> = match (job.digest_first, hashing) {
        (Some(s), _) => Some(s),
        (None, Some(h)) => Some(
            h.await
                .map_err(|e| Error::Io {
                    context: "hashing",
                    source: std::io::Error::other(e.to_string()),
                })??
                .finalize()
                .into(),
        ),
        (None, None) => None,
    };
    let server_sha256 = match (ours, server_digest) {
        (None, _) => None,
        (Some(_), Some(v)) => parse_sha256(&v),
        // The answer to the last append came without a digest: ask the
        // stored file's (the server hashes it if it has none recorded).
        (Some(_), None) => stored_digest(client, url).await?,
    };
    job.state.remove();
    if let (Some(s), Some(o)) = (server_sha256, ours) {
        if s != o {
            return Err(Error::DigestMismatch {
                what: "upload",
                ours: hex(&o),
                theirs: hex(&s),
            });
        }
    }
    Ok(UploadReport {
        url: url.clone(),
        status,
        bytes: len,
        sha256: ours,
        server_sha256,
        parallel: None,
    })
}

impl Job<'_> {
    fn say(&self, m: &str) {
        if let Some(n) = &self.opts.notice {
            n(m)
        }
    }

    /// `--continue`: take the upload the state file records, if the file is
    /// still the one it was made from.
    fn load_saved(&mut self) {
        match self.state.lookup() {
            Lookup::Found(saved) => {
                let location = Url::parse(&saved.upload_url).ok();
                match (ClientProtocol::from_name(&saved.protocol), location) {
                    (Some(p), Some(loc)) if p != ClientProtocol::Put => {
                        self.say(&format!("continuing the interrupted upload {loc}"));
                        self.protocol = Some(p);
                        self.session = Some(Session {
                            protocol: p,
                            location: loc,
                        });
                    }
                    _ => self.state.remove(),
                }
            }
            Lookup::FileChanged(_) => {
                self.say(&format!(
                    "{} changed since the interrupted upload; starting a new upload",
                    self.path.display()
                ));
                self.state.remove();
            }
            Lookup::Nothing => self.say(&format!(
                "no interrupted upload of {} to {} is recorded; starting a new upload",
                self.path.display(),
                self.url
            )),
        }
    }

    /// A rerun without `--continue`: take the recorded upload only if the
    /// file is still the one it was made from (path, size, mtime, inode,
    /// URL); a stale record is dropped.
    fn load_matching(&mut self) {
        match self.state.lookup() {
            Lookup::Found(_) => self.load_saved(),
            Lookup::FileChanged(_) => {
                self.say(&format!(
                    "{} changed since its interrupted upload; starting a new upload",
                    self.path.display()
                ));
                self.state.remove();
            }
            Lookup::Nothing => {}
        }
    }

    /// Try until the upload completes, a failure will not pass, or the
    /// retries run out.
    async fn run(&mut self) -> Result<Outcome, Error> {
        let policy: RetryPolicy = self.opts.retry;
        loop {
            let e = match self.step().await {
                Ok(o) => return Ok(o),
                Err(e) => e,
            };
            self.offset = None;
            let gone = matches!(e.status(), Some(404 | 410));
            if gone && self.session.is_some() {
                self.say(&format!(
                    "the server no longer has the upload ({}); starting a new upload",
                    retry::describe(&e)
                ));
                self.session = None;
                self.state.remove();
                self.best = 0;
                self.tried = None;
            } else if self.best == 0
                && self.attempt == 0
                && self.session.is_none()
                && matches!(e, Error::ConnectionRefused { .. })
            {
                // Refused before anything was created: nobody is listening.
                return Err(e);
            } else {
                // A 409 to an append is an offset conflict: ask the offset again.
                let conflict = e.status() == Some(409) && self.session.is_some();
                if !(retry::retryable(&e) || conflict) {
                    return Err(e);
                }
            }
            if self.attempt >= policy.retries {
                return Err(e);
            }
            let d = retry::pause(&policy, self.attempt).await;
            self.attempt += 1;
            self.say(&format!(
                "{}; resuming after {:.1} s (retry {} of {} without progress)",
                retry::describe(&e),
                d.as_secs_f64(),
                self.attempt,
                policy.retries
            ));
        }
    }

    /// One attempt: discover, create if needed, ask the offset, append the rest.
    async fn step(&mut self) -> Result<Outcome, Error> {
        let protocol = match self.protocol {
            Some(p) => p,
            None => {
                let p = self.discover().await?;
                self.protocol = Some(p);
                p
            }
        };
        if protocol == ClientProtocol::Put {
            return Ok(Outcome::UsePut);
        }
        if self.session.is_none() {
            match self.create(protocol).await {
                Err(e) if matches!(e.status(), Some(503 | 507)) && self.len > 0 => {
                    // Full of partial uploads (or of bytes for them): a plain
                    // PUT may still be taken.
                    self.say(&format!(
                        "the server cannot take a resumable upload now ({}); sending a plain \
                         PUT, which cannot resume",
                        retry::describe(&e)
                    ));
                    self.protocol = Some(ClientProtocol::Put);
                    return Ok(Outcome::UsePut);
                }
                r => r?,
            }
            self.offset = Some(0);
        }
        let mut offset = match self.offset.take() {
            Some(o) => o,
            None => {
                let (o, complete) = self.ask_offset().await?;
                if complete {
                    return Ok(Outcome::Done(201, None));
                }
                o
            }
        };
        if let Some(p) = &self.opts.progress {
            p.start(Some(self.len), offset);
        }
        if let Some(p) = &self.pace {
            p.reached(offset);
        }
        loop {
            let n = next_append(offset, self.len, self.server_cap, self.own_cap);
            let last = offset + n >= self.len;
            self.tried = Some((offset, n));
            let (status, digest) = self.append(offset, n, last).await?;
            offset += n;
            if offset > self.best {
                self.best = offset;
                self.attempt = 0;
            }
            if last {
                return Ok(Outcome::Done(status, digest));
            }
        }
    }

    /// `OPTIONS /-/uploads/` (tus, or the draft's `Upload-Limit`), then
    /// `OPTIONS` on the target itself (the draft's discovery).
    async fn discover(&mut self) -> Result<ClientProtocol, Error> {
        let uploads = self.url.resolve("/-/uploads/")?.with_share_of(self.url);
        for target in [uploads, self.url.clone()] {
            let req = Request::new("OPTIONS", target)
                .header("Tus-Resumable", tus::VERSION)
                .header(
                    "Upload-Draft-Interop-Version",
                    ietf::INTEROP_VERSION.to_string(),
                );
            let resp = self.client.send(req).await?;
            // 501: a server that does not know OPTIONS (python's
            // http.server) offers nothing resumable; a plain PUT may work.
            if resp.status() >= 500 && resp.status() != 501 {
                // error_for_status turns every 5xx into an error.
                return Err(resp
                    .error_for_status()
                    .await
                    .err()
                    .unwrap_or_else(|| Error::Resumable("the discovery failed".into())));
            }
            let announced = Announced::from_fields(|n| resp.header(n).map(str::as_bytes));
            let _ = resp.bytes(64 * 1024).await;
            if let Some(l) = announced.ietf {
                self.server_cap = l.max_append_size;
            }
            let p = announced.choose();
            if p != ClientProtocol::Put {
                return Ok(p);
            }
        }
        self.say("the server offers no resumable uploads; sending a plain PUT");
        Ok(ClientProtocol::Put)
    }

    /// A server's `Upload-Limit` `max-append-size` caps our appends.
    fn note_limit(&mut self, resp: &Response) {
        if let Some(l) = resp
            .header("Upload-Limit")
            .and_then(|v| ietf::parse_limit(v.as_bytes()))
        {
            self.server_cap = l.max_append_size.or(self.server_cap);
        }
    }

    /// The request that creates the upload (`tus_path`: where tus creates).
    fn creation(&self, protocol: ClientProtocol, tus_path: &str) -> Result<Request, Error> {
        let len = self.len.to_string();
        Ok(match protocol {
            ClientProtocol::Ietf => {
                let mut req = protocol_headers(Request::put(self.url.clone()), protocol)
                    .header("Upload-Complete", "?0")
                    .header("Upload-Length", len)
                    .header("Content-Type", "application/octet-stream");
                if let Some(sum) = &self.digest_first {
                    req = req.header("Repr-Digest", format_sha256(sum));
                } else if self.opts.verify {
                    req = req.header("Want-Repr-Digest", "sha-256=10");
                }
                req
            }
            _ => {
                let target = self.url.resolve(tus_path)?.with_share_of(self.url);
                let name = self
                    .path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                protocol_headers(Request::new("POST", target), protocol)
                    .header("Upload-Length", len)
                    .header(
                        "Upload-Metadata",
                        encode_metadata(&[("filename", name.as_bytes())]),
                    )
            }
        })
    }

    /// Create the upload with an empty request and record it. tus creates
    /// under `/-/uploads/`, below the server's path prefix if it has one
    /// ([`Client::server_base`]); IETF creates on the file's own URL.
    async fn create(&mut self, protocol: ClientProtocol) -> Result<(), Error> {
        let path = match protocol {
            ClientProtocol::Ietf => String::new(),
            _ => {
                let base = self.client.server_base(self.url).await?;
                self.url
                    .control_path(base, "/-/uploads")
                    .ok_or_else(|| Error::Resumable("no place to create the upload".into()))?
            }
        };
        let resp = self.client.send(self.creation(protocol, &path)?).await?;
        let resp = resp.error_for_status().await?;
        let location = resp.header("Location").map(str::to_string);
        self.note_limit(&resp);
        let status = resp.status();
        let _ = resp.bytes(64 * 1024).await;
        let Some(location) = location else {
            return Err(Error::Resumable(format!(
                "the server answered {status} to the {} upload creation without a Location, so \
                 it did not create a resumable upload (use --protocol put)",
                protocol.name()
            )));
        };
        // A share link's holder appends through the link too.
        let location = self.url.resolve(&location)?.with_share_of(self.url);
        if !location.same_origin(self.url) {
            return Err(Error::Resumable(format!(
                "the upload location {location} is on another origin; not followed (the token \
                 must not travel there)"
            )));
        }
        if let Err(e) = self.state.save(protocol.name(), &location) {
            self.say(&format!(
                "cannot write the upload's state file ({e}); --continue will not find it"
            ));
        }
        self.session = Some(Session { protocol, location });
        Ok(())
    }

    /// `HEAD` on the upload: its offset and whether it is complete.
    async fn ask_offset(&mut self) -> Result<(u64, bool), Error> {
        let Some(s) = &self.session else {
            return Ok((0, false));
        };
        let protocol = s.protocol;
        let req = protocol_headers(Request::new("HEAD", s.location.clone()), protocol);
        let resp = self.client.send(req).await?.error_for_status().await?;
        let offset = resp
            .header("Upload-Offset")
            .and_then(|v| parse_offset(protocol, v.as_bytes()));
        let complete = match protocol {
            ClientProtocol::Ietf => resp
                .header("Upload-Complete")
                .and_then(|v| ietf::boolean(v.as_bytes()))
                .unwrap_or(false),
            _ => offset == Some(self.len),
        };
        self.note_limit(&resp);
        drop(resp);
        let Some(offset) = offset.filter(|o| *o <= self.len) else {
            return Err(Error::Resumable(
                "the server's answer about the upload has no valid Upload-Offset".to_string(),
            ));
        };
        if offset > self.best {
            self.best = offset;
            self.attempt = 0;
        } else if let Some((o, n)) = self.tried {
            // The last append was cut before any byte counted: try smaller.
            if o == offset && n > MIN_OWN_CAP {
                self.own_cap = (n / 2).max(MIN_OWN_CAP);
            }
        }
        if offset > 0 || complete {
            self.say(&format!(
                "resuming at byte {offset} of {} ({})",
                self.len,
                protocol.name()
            ));
        }
        Ok((offset, complete))
    }

    /// `PATCH` `n` bytes of the file from `offset`; `last` ends the upload.
    async fn append(
        &mut self,
        offset: u64,
        n: u64,
        last: bool,
    ) -> Result<(u16, Option<String>), Error> {
        let Some(s) = &self.session else {
            return Err(Error::Resumable("no upload to append to".to_string()));
        };
        let protocol = s.protocol;
        let mut req = protocol_headers(Request::new("PATCH", s.location.clone()), protocol)
            .header("Upload-Offset", offset.to_string());
        req = match protocol {
            ClientProtocol::Ietf => req
                .header("Content-Type", ietf::CONTENT_TYPE)
                .header("Upload-Complete", if last { "?1" } else { "?0" }),
            _ => req.header("Content-Type", tus::CONTENT_TYPE),
        };
        if last {
            // The request completing the upload: the server applies it.
            if let Some(t) = self.opts.mtime_field(self.path) {
                req = req.header(crate::transfer::mtime::FIELD, t);
            }
        }
        let mut body = Body::file(FileBody::open(self.path)?.range(offset, n));
        if self.opts.progress.is_some() || self.pace.is_some() {
            let (p, pace) = (self.opts.progress.clone(), self.pace.clone());
            body = body.progress(Arc::new(move |k| {
                if let Some(p) = &p {
                    p.advance(k);
                }
                if let Some(pace) = &pace {
                    pace.sent(k);
                }
            }));
        }
        let resp: Response = self
            .client
            .send(req.body(body))
            .await?
            .error_for_status()
            .await?;
        let status = resp.status();
        let digest = resp.header("Repr-Digest").map(str::to_string);
        let _ = resp.bytes(64 * 1024).await;
        // tus answers 204 to every append; the file is then new or replaced,
        // which tus does not say: report it as stored.
        let status = if protocol == ClientProtocol::Tus {
            201
        } else {
            status
        };
        Ok((status, digest))
    }
}

/// The stored file's `Repr-Digest`, asked with `HEAD` (None: none sent).
pub(crate) async fn stored_digest(client: &Client, url: &Url) -> Result<Option<[u8; 32]>, Error> {
    let req = Request::new("HEAD", url.clone()).header("Want-Repr-Digest", "sha-256=10");
    let resp = client.send(req).await?.error_for_status().await?;
    Ok(resp.header("Repr-Digest").and_then(parse_sha256))
}

/// The version fields every request of `protocol` carries.
fn protocol_headers(req: Request, protocol: ClientProtocol) -> Request {
    match protocol {
        ClientProtocol::Ietf => req.header(
            "Upload-Draft-Interop-Version",
            ietf::INTEROP_VERSION.to_string(),
        ),
        _ => req.header("Tus-Resumable", tus::VERSION),
    }
}
