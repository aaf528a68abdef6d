//! The IETF resumable-upload draft (interop version 8): creation on any
//! file URL (104 with the upload's `Location` before a body), offset
//! and append on `/-/uploads/<id>`.

use super::*;

pub(super) fn ietf_fields(ex: &Exchange) -> ietf::Fields<'_> {
    ietf::Fields {
        interop_version: ex.header("upload-draft-interop-version"),
        upload_complete: ex.header("upload-complete"),
        upload_offset: ex.header("upload-offset"),
        upload_length: ex.header("upload-length"),
        content_type: ex.header("content-type"),
        content_length: ex.content_length(),
    }
}

impl<S: Storage + PartialUploads + Clone> Uploads<S> {
    /// `PUT`/`POST` to a file URL with `Upload-Complete`: the upload
    /// resource is made and announced (104) before the body is read.
    pub(crate) async fn ietf_create(&self, ex: &mut Exchange) -> Result<(), Error> {
        RouteClass::Resumable.set(ex);
        let parsed = parse_request_path(ex.path());
        let root = RelPath::root();
        let at = parsed.as_ref().unwrap_or(&root);
        let Some(who) = admit(&self.cfg, &self.policy, ex, Action::Create, at).await? else {
            return Ok(());
        };
        let key = parsed.map_err(|e| Error::status(e.status(), e.to_string()))?;
        if key.is_root() || key.trailing_slash() {
            return Err(Error::status(
                400,
                "an upload needs a file path, not a folder",
            ));
        }
        let guard = WriteGuard::new(&self.policy, who, &key);
        let if_field = crate::locks::IfField::of(ex);
        self.check_target(&guard, who, &key, &if_field).await?;
        // A malformed X-OC-Mtime is refused before an upload is created.
        crate::mtime::requested(ex)?;
        let if_none_match = ex
            .header_str("if-none-match")
            .is_some_and(|v| v.trim() == "*");
        // If-Match / If-None-Match as on a PUT: 412 before the body, and
        // checked again before publishing when this request completes it.
        let check = write_preconditions(&self.storage, ex, &key).await?;
        let creation = match ietf::create(&ietf_fields(ex), &self.ucfg.limits) {
            Ok(c) => c,
            Err(r) => return refuse(ex, r, false).await,
        };
        let client = (who, ex.peer_addr().ip());
        let (id, slot) = self
            .create(
                Protocol::Ietf,
                &key,
                creation.length,
                None,
                &guard,
                if_none_match,
                client,
                None,
            )
            .await?;
        // The 104 lets a client resume a body cut short; a creation
        // without a body (how our client begins) has nothing to lose and
        // gets the Location in its final answer. Proxies such as nginx
        // (1.22 here) take a 1xx from upstream for the final answer and
        // then wait for a body that never comes.
        if has_body(ex) {
            let loc = location(ex.base(), &id);
            let interim = ietf::interim_fields(&loc, &self.ucfg.limits);
            let fields: Vec<(&str, &str)> = interim.iter().map(|(k, v)| (*k, v.as_str())).collect();
            ex.send_interim(104, &fields).await?;
        }
        let _lock = self.take_append(&slot).await?;
        let done = self
            .append(ex, &id, &slot, creation.first, check, who)
            .await?;
        self.ietf_answer(ex, &id, &slot, &key, done).await
    }

    pub(super) async fn ietf_answer(
        &self,
        ex: &mut Exchange,
        id: &UploadId,
        slot: &Slot,
        key: &RelPath,
        done: Appended,
    ) -> Result<(), Error> {
        if let Some(e) = done.body_error {
            return Err(e);
        }
        let progress = match done.result {
            Ok(p) => p,
            Err(Refused::Protocol(r)) => return refuse(ex, r, false).await,
            Err(Refused::Checksum) => return Err(Error::status(400, "checksum mismatch")),
        };
        match (progress, done.written) {
            (Progress::Complete { .. }, Some(written)) => {
                let mut resp = Response::new(match written {
                    Written::Created => 201,
                    Written::Replaced => 204,
                })
                .header("Upload-Complete", "?1")
                .header("Upload-Draft-Interop-Version", INTEROP);
                if written == Written::Created {
                    resp = resp.header("Location", format!("{}{}", ex.base(), key.to_url(false)));
                }
                if done.mtime_applied {
                    resp = resp.header(crate::mtime::ANSWER.0, crate::mtime::ANSWER.1);
                }
                if let Ok(meta) = self.storage.stat(key).await {
                    if meta.kind == Kind::File {
                        resp = resp.header("ETag", etag(&meta));
                    }
                }
                ex.send(resp, b"").await
            }
            (progress, _) => {
                let offset = match progress {
                    Progress::Partial { offset } => offset,
                    Progress::Complete { length } => length,
                };
                let state = slot.snapshot();
                let status = if ex.method() == "PATCH" { 204 } else { 201 };
                let mut resp = Response::new(status)
                    .header("Upload-Draft-Interop-Version", INTEROP)
                    .header("Upload-Complete", "?0")
                    .header("Upload-Offset", offset.to_string())
                    .header(
                        "Upload-Limit",
                        self.limit_header(Some(state.expires.saturating_sub(now()))),
                    );
                if status == 201 {
                    resp = resp.header("Location", location(ex.base(), id));
                }
                ex.send(resp, b"").await
            }
        }
    }

    pub(super) async fn ietf_head(&self, ex: &mut Exchange, id: &UploadId) -> Result<(), Error> {
        let state = self.settled_state(id).await?;
        let mut resp = Response::new(204).header("Upload-Draft-Interop-Version", INTEROP);
        for (name, value) in ietf::offset_fields(&state, &self.ucfg.limits, now()) {
            resp = resp.header(name, value);
        }
        ex.send(resp, b"").await
    }

    pub(super) async fn ietf_patch(
        &self,
        ex: &mut Exchange,
        id: &UploadId,
        who: Principal,
    ) -> Result<(), Error> {
        let slot = self.slot(id).await?;
        let limits = &self.ucfg.limits;
        let decide =
            |ex: &Exchange, state: &UploadState| ietf::append(&ietf_fields(ex), state, limits);
        let Some((plan, state, _lock)) = self.plan_append(ex, &slot, false, decide).await? else {
            return Ok(());
        };
        let key = parse_request_path(&state.target)
            .map_err(|_| Error::status(500, "an upload's target is not a valid path"))?;
        let done = self.append(ex, id, &slot, plan, None, who).await?;
        self.ietf_answer(ex, id, &slot, &key, done).await
    }
}
