//! Appending bytes to an upload (tus PATCH, IETF PATCH and creation with
//! a body): one append at a time per upload, a newer one takes over, and
//! the finished file is checked against the digests the client sent.

use super::*;
use crate::answers::{storage_answer, IntoAnswer as _};
use crate::respond::ensure_room;

/// How long a new append waits for the one it took over from to let go.
pub(super) const TAKEOVER_WAIT: Duration = Duration::from_secs(10);

/// Whether an upload's `length` bytes have the sha-256 `want` (hex), read
/// back from its local `file`; a store without one cannot be read back
/// here, so the check is skipped (and logged).
pub(super) async fn representation_matches(
    file: Option<std::fs::File>,
    length: u64,
    want: &str,
) -> Result<bool, Error> {
    let Some(file) = file else {
        tracing::warn!("this store cannot read an upload back: its Repr-Digest is not checked");
        return Ok(true);
    };
    let sum = tokio::task::spawn_blocking(move || -> std::io::Result<[u8; 32]> {
        let mut h = sha2::Sha256::new();
        crate::upload::hash_file_range(&file, &mut h, 0, length, None)?;
        Ok(h.finalize().into())
    })
    .await
    .map_err(|e| Error::Io(std::io::Error::other(e)))?
    .map_err(StorageError::from)
    .map_err(storage_answer)?;
    Ok(crate::digest::hex(&sum) == want)
}

pub(super) type Sha256Sum = [u8; 32];

/// The sha-256 members of a request's `Repr-Digest` and `Content-Digest`
/// (400 when one is malformed).
pub(super) fn request_digests(
    ex: &Exchange,
) -> Result<(Option<Sha256Sum>, Option<Sha256Sum>), Error> {
    let field = |name: &'static str| -> Result<Option<[u8; 32]>, Error> {
        let Some(v) = ex.header(name) else {
            return Ok(None);
        };
        let v = std::str::from_utf8(v)
            .map_err(|_| Error::status(400, format!("{name} is not text")))?;
        crate::digest::sha256_member(name, v).map_err(|e| Error::status(400, e.to_string()))
    };
    Ok((field("repr-digest")?, field("content-digest")?))
}

/// What one append did.
pub(super) struct Appended {
    /// The upload's progress, or why the bytes were not counted.
    pub(super) result: Result<Progress, Refused>,
    /// Where a completed upload landed.
    pub(super) written: Option<Written>,
    /// The completing request's `X-OC-Mtime` was given to the file.
    pub(super) mtime_applied: bool,
    /// The request body failed (cut, timeout, taken over): the bytes that
    /// arrived are kept, and this error ends the exchange.
    pub(super) body_error: Option<Error>,
}

pub(super) enum Refused {
    Protocol(Refusal),
    /// tus checksum extension: the bytes did not match (460).
    Checksum,
}

/// A running hash for the tus checksum extension.
pub(super) enum Hasher {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl Hasher {
    fn new(a: ChecksumAlgorithm) -> Self {
        match a {
            ChecksumAlgorithm::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            ChecksumAlgorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
        }
    }

    fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        }
    }
}

/// Moves the request body into `data`: zero-copy when nothing is hashed,
/// the server uses splice (`--upload-path`) and the store has a file, else
/// through the connection buffer.
pub(super) async fn receive<D: PartialData>(
    ex: &mut Exchange,
    data: &mut D,
    hash: Option<ChecksumAlgorithm>,
    path: UploadPath,
) -> Result<Option<Vec<u8>>, Error> {
    if hash.is_none() && path == UploadPath::Splice {
        if let Some(file) = data.as_file() {
            match ex.receive_body_into(file, |_| {}).await {
                Ok(Some(_)) => return Ok(None),
                Ok(None) => {}
                Err(FileBodyError::File(e)) => return Err(StorageError::from(e).into_answer()),
                Err(FileBodyError::Body(e)) => return Err(e),
            }
        }
    }
    let mut hasher = hash.map(Hasher::new);
    while let Some(piece) = ex.read_body().await? {
        if let Some(h) = &mut hasher {
            h.update(piece);
        }
        data.write(piece).await.map_err(storage_answer)?;
    }
    Ok(hasher.map(Hasher::finish))
}

pub(super) async fn checksum_mismatch(ex: &mut Exchange) -> Result<(), Error> {
    let resp = Response::new(tus::CHECKSUM_MISMATCH)
        .header("Tus-Resumable", tus::VERSION)
        .header("Content-Type", "text/plain; charset=utf-8");
    ex.send(
        resp,
        b"checksum mismatch: the bytes of this request were discarded\n",
    )
    .await
}

impl<S: Storage + PartialUploads + Clone> Uploads<S> {
    /// Wait for the append lock of `slot`, asking a running append to give
    /// way: the draft's recommended answer to a client that resumes while
    /// the server still holds its broken request (the older request is cut
    /// at once, keeping the bytes it stored, instead of making the client
    /// wait for the body timeout).
    pub(super) async fn take_append<'s>(
        &self,
        slot: &'s Slot,
    ) -> Result<tokio::sync::MutexGuard<'s, ()>, Error> {
        if let Ok(g) = slot.append.try_lock() {
            return Ok(g);
        }
        slot.takeover.notify_waiters();
        tokio::time::timeout(TAKEOVER_WAIT, slot.append.lock())
            .await
            .map_err(|_| Error::status(409, "another request is appending to this upload"))
    }

    /// The append `decide` plans for this request, with the state it was
    /// planned on and the slot's append lock. Decided first against the
    /// acknowledged state, so that a request refused anyway is answered
    /// without cutting a running append (only one that could continue
    /// takes over), then again under the lock. `None`: refused, and the
    /// answer sent (`tus`: with `Tus-Resumable`).
    pub(super) async fn plan_append<'s>(
        &self,
        ex: &mut Exchange,
        slot: &'s Slot,
        tus: bool,
        decide: impl Fn(&Exchange, &UploadState) -> Result<Append, Refusal>,
    ) -> Result<Option<(Append, UploadState, tokio::sync::MutexGuard<'s, ()>)>, Error> {
        if let Err(r) = decide(ex, &slot.snapshot()) {
            refuse(ex, r, tus).await?;
            return Ok(None);
        }
        let lock = self.take_append(slot).await?;
        let state = slot.snapshot();
        match decide(ex, &state) {
            Ok(plan) => Ok(Some((plan, state, lock))),
            Err(r) => {
                refuse(ex, r, tus).await?;
                Ok(None)
            }
        }
    }

    /// Receive one append into upload `id` under its append lock, then
    /// count what arrived, acknowledge it durably, and publish a complete
    /// upload.
    pub(super) async fn append(
        &self,
        ex: &mut Exchange,
        id: &UploadId,
        slot: &Slot,
        mut plan: Append,
        check: Option<CommitCheck>,
        who: Principal,
    ) -> Result<Appended, Error> {
        // As for a PUT: a Content-Digest covers this request's content (a
        // mismatch discards its bytes), a Repr-Digest the whole upload
        // (checked before publishing).
        let (repr, content) = request_digests(ex)?;
        if let (None, Some(sum)) = (&plan.checksum, content) {
            plan.checksum = Some(wirespeed_resumable::Checksum {
                algorithm: ChecksumAlgorithm::Sha256,
                digest: sum.to_vec(),
            });
        }
        if let Some(sum) = repr {
            let mut state = slot.snapshot();
            let hex = crate::digest::hex(&sum);
            if state.sha256.as_deref() != Some(hex.as_str()) {
                state.sha256 = Some(hex);
                self.storage
                    .save_partial(id, &state)
                    .await
                    .map_err(storage_answer)?;
                *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
            }
        }
        let target = slot.snapshot().target;
        let key = parse_request_path(&target)
            .map_err(|_| Error::status(500, "an upload's target is not a valid path"))?;
        let if_field = crate::locks::IfField::of(ex);
        let submitted = self.check_locks(who, &key, &if_field).await?;
        ensure_room(&self.storage, ex.content_length()).await?;
        // Each append is judged again: the bytes kept so far plus these (the
        // tree may have filled since the creation).
        let so_far = slot.snapshot().offset;
        let adding = so_far.saturating_add(ex.content_length().unwrap_or(0));
        let cfg = &self.cfg;
        cfg.quotas
            .ensure(&self.storage, cfg, &key, Some(adding))
            .await?;
        // The request that completes the upload may carry `X-OC-Mtime`.
        let mtime = crate::mtime::requested(ex)?;
        ex.limit_body(plan.max_bytes)?;
        let _in_progress = self.cfg.metrics.as_ref().map(|m| m.upload_started());
        let mut data = self
            .storage
            .open_partial(id)
            .await
            .map_err(storage_answer)?;
        if data.size().await.map_err(storage_answer)? != plan.offset {
            // A cut append's tail that was never counted: not part of the upload.
            data.truncate(plan.offset).await.map_err(storage_answer)?;
        }
        let takeover = slot.takeover.notified();
        tokio::pin!(takeover);
        takeover.as_mut().enable();
        let hash = plan.checksum.as_ref().map(|c| c.algorithm);
        let received = tokio::select! {
            r = receive(ex, &mut data, hash, self.cfg.upload_path) => r,
            () = &mut takeover => {
                ex.close_after_response();
                Err(Error::status(409, "a newer request to this upload took over"))
            }
        };
        let end = data.size().await.map_err(storage_answer)?;
        let mut got = end.saturating_sub(plan.offset);
        if got > plan.max_bytes {
            data.truncate(plan.offset + plan.max_bytes)
                .await
                .map_err(storage_answer)?;
            got = plan.max_bytes;
        }
        let (digest, body_error) = match received {
            Ok(d) => (d, None),
            Err(e) => (None, Some(e)),
        };
        if let Some(want) = &plan.checksum {
            // Bytes that cannot be verified do not count (tus checksum).
            let good = body_error.is_none() && digest.as_deref() == Some(&want.digest[..]);
            if !good {
                data.truncate(plan.offset).await.map_err(storage_answer)?;
                return Ok(Appended {
                    result: Err(Refused::Checksum),
                    written: None,
                    mtime_applied: false,
                    body_error,
                });
            }
        }
        if got > 0 {
            data.sync().await.map_err(storage_answer)?;
        }
        let mut next = slot.snapshot();
        let before = next.length;
        let progress = match next.record(&plan, got, body_error.is_none()) {
            Ok(p) => p,
            Err(r) => {
                data.truncate(plan.offset).await.map_err(storage_answer)?;
                return Ok(Appended {
                    result: Err(Refused::Protocol(r)),
                    written: None,
                    mtime_applied: false,
                    body_error,
                });
            }
        };
        if slot.gone.load(Ordering::Relaxed) {
            return Err(
                body_error.unwrap_or_else(|| Error::status(404, "the upload was cancelled"))
            );
        }
        let mut written = None;
        let mut mtime_applied = false;
        match progress {
            Progress::Partial { .. } => {
                if next.length != before {
                    self.storage
                        .save_partial(id, &next)
                        .await
                        .map_err(storage_answer)?;
                }
                *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = next;
            }
            Progress::Complete { .. } if next.is_partial() => {
                // A piece of a final upload: kept, complete, until a final
                // takes it (the record says so across a restart).
                self.storage
                    .save_partial(id, &next)
                    .await
                    .map_err(storage_answer)?;
                *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = next;
            }
            Progress::Complete { length } => {
                if let Some(want) = next.sha256.clone() {
                    let file = match data.as_file() {
                        Some(f) => Some(
                            f.try_clone()
                                .map_err(StorageError::from)
                                .map_err(storage_answer)?,
                        ),
                        None => None,
                    };
                    if !representation_matches(file, length, &want).await? {
                        self.forget(id);
                        let _ = self.storage.delete_partial(id).await;
                        if let Some(m) = &self.cfg.metrics {
                            m.digest_mismatch();
                        }
                        return Err(Error::status(
                            400,
                            "digest mismatch: the uploaded bytes do not match the announced \
                             Repr-Digest sha-256; nothing was stored",
                        ));
                    }
                }
                // Kept from the creation: its If-None-Match: *, and "no
                // replacing" when its creator (or this request) lacks `d`.
                let check = match (next.if_none_match, check) {
                    (true, prev) => Some(Box::new(move |m: Option<&crate::storage::Meta>| {
                        m.is_none() && prev.as_ref().is_none_or(|p| p(m))
                    }) as CommitCheck),
                    (false, prev) => prev,
                };
                let mut guard =
                    WriteGuard::new(&self.policy, who, &key).with_locks(&self.cfg.locks, submitted);
                if next.no_replace {
                    guard = guard.forbid_replace();
                }
                let check = guard.commit_check(&key, check);
                *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = next;
                if let (Some(t), Some(file)) = (mtime, data.as_file()) {
                    // Before the rename publishes it (metadata: one syscall).
                    file.set_modified(t)
                        .map_err(StorageError::from)
                        .map_err(storage_answer)?;
                    mtime_applied = true;
                }
                let w = self
                    .storage
                    .complete_partial(id, data, &key, check)
                    .await
                    .map_err(|e| guard.explain(e.on_write(&key).into_answer()));
                if w.is_ok() {
                    let mut done = self.completed.lock().unwrap_or_else(|e| e.into_inner());
                    done.insert(*id, &slot.snapshot(), length, now());
                }
                self.forget(id);
                if w.is_err() {
                    let _ = self.storage.delete_partial(id).await;
                }
                written = Some(w?);
            }
        }
        Ok(Appended {
            result: Ok(progress),
            written,
            mtime_applied,
            body_error,
        })
    }
}
