//! `POST /path?element=NAME` with an MTOM body
//! (`multipart/related; type="application/xop+xml"`, W3C XOP/MTOM): the
//! binary travels as a raw MIME part, and the XML root part's element NAME
//! holds `<xop:Include href="cid:..."/>` pointing at it. That part's bytes
//! are stored at `/path`.
//!
//! Parts may arrive in any order, and which part is wanted is only known
//! once the root part has been read, so:
//! - the root (the part named by the `start` parameter, else the first
//!   part) is buffered in memory, up to [`MAX_ROOT`] (413 beyond): it is
//!   the small SOAP envelope, the binary is elsewhere;
//! - a part with a Content-ID that arrives *before* the root streams into
//!   its own temporary upload for `/path` (at most [`MAX_PENDING`] of
//!   them, 413 beyond); when the root has been read, the referenced one is
//!   kept and the others are aborted at once;
//! - a part arriving *after* the root streams straight into the target
//!   upload if it is the referenced one, and is skipped otherwise.
//!
//! The upload is committed only after the close delimiter. No part with
//! the referenced Content-ID, no root, or no `xop:Include` in NAME → 400,
//! nothing stored. Attachments with a `Content-Transfer-Encoding` other
//! than binary/8bit/7bit are refused (400) rather than stored still encoded.

use crate::answers::{storage_answer, IntoAnswer as _};
use crate::upload::{HashMode, StoredHasher};
use wirespeed_extract::{find_xop_include, normalize_content_id};
use wirespeed_multipart::{Limits, PartHeaders};
use wirespeed_net::{Error, Exchange};

use super::{extract_error, Checks, Feeder, Parts};
use crate::path::RelPath;
use crate::respond::{respond_stored, WriteGuard};
use crate::storage::{Storage, Upload};

/// Largest root (XML) part kept in memory.
pub(crate) const MAX_ROOT: usize = 1024 * 1024;
/// Most parts streamed to temporary uploads while the root is unknown.
pub(crate) const MAX_PENDING: usize = 16;

struct Stream<U> {
    cid: String,
    up: U,
    hasher: StoredHasher,
}

enum Current {
    None,
    Root,
    Pending(usize),
    Target,
    Skip,
}

struct Mtom<'a, S: Storage> {
    storage: &'a S,
    guard: &'a WriteGuard,
    key: RelPath,
    element: &'a str,
    /// The root's Content-ID from the `start` parameter (normalized).
    start: Option<String>,
    parts: usize,
    root: Vec<u8>,
    root_seen: bool,
    /// The Content-ID the root's `xop:Include` refers to, once read.
    wanted: Option<String>,
    pending: Vec<Stream<S::Upload>>,
    target: Option<Stream<S::Upload>>,
    cur: Current,
    hash: Option<HashMode>,
}

impl<S: Storage> Mtom<'_, S> {
    async fn abort_all(&mut self) {
        for p in self.pending.drain(..) {
            p.up.abort().await;
        }
        if let Some(t) = self.target.take() {
            t.up.abort().await;
        }
    }
}

fn check_transfer_encoding(h: &PartHeaders) -> Result<(), Error> {
    match h.get("content-transfer-encoding") {
        None => Ok(()),
        Some(v) => {
            let v = String::from_utf8_lossy(v).trim().to_ascii_lowercase();
            if matches!(v.as_str(), "binary" | "8bit" | "7bit") {
                Ok(())
            } else {
                Err(Error::status(
                    400,
                    format!("MTOM part with Content-Transfer-Encoding {v:?} is not supported (binary expected)"),
                ))
            }
        }
    }
}

impl<S: Storage> Parts for Mtom<'_, S> {
    async fn start(&mut self, h: PartHeaders) -> Result<(), Error> {
        self.parts += 1;
        let cid = h
            .content_id
            .as_deref()
            .map(|c| normalize_content_id(c).to_owned());
        if !self.root_seen {
            let is_root = match &self.start {
                Some(s) => cid.as_deref() == Some(s.as_str()),
                None => self.parts == 1,
            };
            if is_root {
                self.root_seen = true;
                self.cur = Current::Root;
                return Ok(());
            }
            check_transfer_encoding(&h)?;
            // Without a Content-ID no Include can point at it.
            let Some(cid) = cid else {
                self.cur = Current::Skip;
                return Ok(());
            };
            if self.pending.iter().any(|p| p.cid == cid) {
                return Err(Error::status(
                    400,
                    format!("two MTOM parts with Content-ID <{cid}>"),
                ));
            }
            if self.pending.len() >= MAX_PENDING {
                return Err(Error::status(
                    413,
                    format!("more than {MAX_PENDING} MTOM parts before the root part"),
                ));
            }
            let up = self.guard.create(self.storage, &self.key, None).await?;
            self.pending.push(Stream {
                cid,
                up,
                hasher: StoredHasher::new(self.hash),
            });
            self.cur = Current::Pending(self.pending.len() - 1);
            return Ok(());
        }
        match (&self.wanted, cid) {
            (Some(w), Some(c)) if *w == c => {
                if self.target.is_some() {
                    return Err(Error::status(
                        400,
                        format!("two MTOM parts with Content-ID <{c}>"),
                    ));
                }
                check_transfer_encoding(&h)?;
                let up = self
                    .storage
                    .create(&self.key)
                    .await
                    .map_err(|e| e.on_write(&self.key))
                    .map_err(storage_answer)?;
                self.target = Some(Stream {
                    cid: c,
                    up,
                    hasher: StoredHasher::new(self.hash),
                });
                self.cur = Current::Target;
            }
            _ => self.cur = Current::Skip,
        }
        Ok(())
    }

    async fn data(&mut self, d: &[u8]) -> Result<(), Error> {
        let stream = match self.cur {
            Current::Root => {
                if self.root.len() + d.len() > MAX_ROOT {
                    return Err(Error::status(
                        413,
                        format!("MTOM root part larger than {MAX_ROOT} bytes"),
                    ));
                }
                self.root.extend_from_slice(d);
                return Ok(());
            }
            Current::Pending(i) => &mut self.pending[i],
            Current::Target => match self.target.as_mut() {
                Some(t) => t,
                None => return Ok(()),
            },
            Current::None | Current::Skip => return Ok(()),
        };
        stream.up.write(d).await.map_err(storage_answer)?;
        stream.hasher.wrote(d, &mut stream.up);
        Ok(())
    }

    async fn end(&mut self) -> Result<(), Error> {
        if let Current::Root = std::mem::replace(&mut self.cur, Current::None) {
            let root = std::mem::take(&mut self.root);
            let cid = find_xop_include(&root, self.element).map_err(extract_error)?;
            if let Some(i) = self.pending.iter().position(|p| p.cid == cid) {
                self.target = Some(self.pending.swap_remove(i));
            }
            // Whatever else arrived before the root is not wanted.
            for p in self.pending.drain(..) {
                p.up.abort().await;
            }
            self.wanted = Some(cid);
        }
        Ok(())
    }
}

/// `POST /path?element=NAME` with an MTOM body.
#[allow(clippy::too_many_arguments)] // the request's parts, each used once
pub(crate) async fn post<S: Storage>(
    storage: &S,
    guard: &WriteGuard,
    ex: &mut Exchange,
    key: RelPath,
    boundary: &str,
    start: Option<String>,
    element: &str,
    checks: Checks,
) -> Result<(), Error> {
    super::require_file_path(&key)?;
    let local = element.rsplit(':').next().unwrap_or(element);
    let Checks { hash, mut digest } = checks;
    // MTOM attachments carry no filename, so the multipart parser would
    // treat them as form fields (1 MiB cap); they stream to storage like
    // form files, and the root part has its own cap (MAX_ROOT).
    let limits = Limits {
        max_field_bytes: u64::MAX,
        ..Limits::default()
    };
    let mut feeder = Feeder::new(boundary, limits)?;
    let mut m = Mtom {
        storage,
        guard,
        key: key.clone(),
        element: local,
        start,
        parts: 0,
        root: Vec::new(),
        root_seen: false,
        wanted: None,
        pending: Vec::new(),
        target: None,
        cur: Current::None,
        hash,
    };
    let received: Result<(), Error> = async {
        while let Some(piece) = ex.read_body().await? {
            digest.update(piece);
            feeder.feed(piece, &mut m).await?;
        }
        feeder.finish()?;
        digest.verify()?;
        if !m.root_seen {
            return Err(Error::status(
                400,
                match &m.start {
                    Some(s) => format!("MTOM: no part has the root Content-ID <{s}> named by start="),
                    None => "MTOM: the body has no parts".to_string(),
                },
            ));
        }
        if m.target.is_none() {
            let wanted = m.wanted.as_deref().unwrap_or("");
            return Err(Error::status(
                400,
                format!("MTOM: xop:Include refers to cid:{wanted}, but no part has that Content-ID; nothing was stored"),
            ));
        }
        Ok(())
    }
    .await;
    if let Err(e) = received {
        m.abort_all().await;
        return Err(e);
    }
    let Some(t) = m.target.take() else {
        return Err(Error::status(500, "MTOM target vanished"));
    };
    let mut t = t;
    let sum = match t.hasher.finish(t.up.written()).await {
        Ok(sum) => sum,
        Err(e) => {
            t.up.abort().await;
            return Err(e);
        }
    };
    let written =
        t.up.commit(sum)
            .await
            .map_err(|e| guard.explain(e.on_write(&key).into_answer()))?;
    respond_stored(storage, ex, &key, written, sum.as_ref()).await
}
