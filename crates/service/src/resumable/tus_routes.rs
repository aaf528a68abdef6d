//! tus 1.0.0: creation (with or without first bytes), offset and append,
//! on `/-/uploads/`.

use super::concat_routes::Joined;
use super::*;
use wirespeed_resumable::concat;

pub(super) fn tus_fields(ex: &Exchange) -> tus::Fields<'_> {
    tus::Fields {
        tus_resumable: ex.header("tus-resumable"),
        content_type: ex.header("content-type"),
        content_length: ex.content_length(),
        has_body: has_body(ex),
        upload_offset: ex.header("upload-offset"),
        upload_length: ex.header("upload-length"),
        upload_defer_length: ex.header("upload-defer-length"),
        upload_metadata: ex.header("upload-metadata"),
        upload_checksum: ex.header("upload-checksum"),
        upload_concat: ex.header("upload-concat"),
    }
}

impl<S: Storage + PartialUploads + Clone> Uploads<S> {
    /// `POST /-/uploads/…`: tus creation (and creation-with-upload).
    pub(super) async fn tus_create(
        &self,
        ex: &mut Exchange,
        rest: &str,
        who: Principal,
    ) -> Result<(), Error> {
        let creation = match tus::create(&tus_fields(ex), &self.ucfg.limits) {
            Ok(c) => c,
            Err(r) => return refuse(ex, r, true).await,
        };
        let place =
            parse_request_path(rest).map_err(|e| Error::status(e.status(), e.to_string()))?;
        let partial = match creation.concat {
            Some(_) if !self.storage.concatenates() => {
                return Err(Error::status(
                    501,
                    "this server's storage cannot assemble uploads (no tus concatenation)",
                ))
            }
            Some(concat::Request::Partial) => true,
            _ => false,
        };
        let target = if partial {
            // A piece of a file, named by its final upload: kept where it
            // was created (its creation was judged there).
            place
        } else if place.trailing_slash() {
            let Some(name) = creation.filename.as_deref() else {
                return Err(Error::status(
                    400,
                    "a creation in a folder needs Upload-Metadata with a filename",
                ));
            };
            place
                .join(name)
                .map_err(|e| Error::status(400, format!("the filename is not usable: {e}")))?
        } else {
            place
        };
        if let Some(concat::Request::Final(urls)) = creation.concat {
            return self.tus_final(ex, target, urls, who).await;
        }
        // Refused now, not after the last byte (publishing onto a folder fails).
        let guard = WriteGuard::new(&self.policy, who, &target);
        let if_field = crate::locks::IfField::of(ex);
        if !partial {
            self.check_target(&guard, who, &target, &if_field).await?;
        }
        let client = (who, ex.peer_addr().ip());
        let (id, slot) = self
            .create(
                Protocol::Tus,
                &target,
                creation.length,
                creation.metadata,
                &guard,
                false,
                client,
                partial.then_some(concat::Concat::Partial { used: false }),
            )
            .await?;
        let mut resp = Response::new(201)
            .header("Tus-Resumable", tus::VERSION)
            .header("Location", location(ex.base(), &id));
        // An empty upload is complete at creation: published at once.
        let first = creation.first.or_else(|| {
            (creation.length == Some(0)).then_some(Append {
                offset: 0,
                max_bytes: 0,
                set_length: None,
                completes: false,
                checksum: None,
            })
        });
        if let Some(first) = first {
            let _lock = self.take_append(&slot).await?;
            let done = self.append(ex, &id, &slot, first, None, who).await;
            if !matches!(&done, Ok(d) if d.result.is_ok() && d.body_error.is_none()) {
                // The client never got the Location, so nothing could resume
                // this upload: kept, it would only hold a place until expiry.
                self.forget(&id);
                if let Err(e) = self.storage.delete_partial(&id).await {
                    tracing::warn!(%id, error = %e, "could not remove a failed creation");
                }
            }
            let done = done?;
            if let Some(e) = done.body_error {
                return Err(e);
            }
            match done.result {
                Err(Refused::Checksum) => return checksum_mismatch(ex).await,
                Err(Refused::Protocol(r)) => return refuse(ex, r, true).await,
                Ok(_) => {}
            }
        }
        let state = slot.snapshot();
        resp = resp
            .header("Upload-Offset", state.offset.to_string())
            .header("Upload-Expires", http_date(state.expires));
        ex.send(resp, b"").await
    }

    pub(super) async fn tus_head(&self, ex: &mut Exchange, id: &UploadId) -> Result<(), Error> {
        if let Err(r) = tus::check_version(&tus_fields(ex)) {
            return refuse(ex, r, true).await;
        }
        if self.joining_state(id).is_some() {
            match self.settle_join(id) {
                Joined::Running(state) => return self.head_joining(ex, &state).await,
                Joined::Failed(e) => return Err(e),
                Joined::Done => {}
            }
        }
        let state = self.settled_state(id).await?;
        let mut resp = Response::new(200);
        for (name, value) in tus::offset_fields(&state) {
            resp = resp.header(name, value);
        }
        resp = resp.header("Upload-Expires", http_date(state.expires));
        ex.send(resp, b"").await
    }

    pub(super) async fn tus_patch(
        &self,
        ex: &mut Exchange,
        id: &UploadId,
        who: Principal,
    ) -> Result<(), Error> {
        let slot = self.slot(id).await?;
        let limits = &self.ucfg.limits;
        let decide =
            |ex: &Exchange, state: &UploadState| tus::append(&tus_fields(ex), state, limits);
        let Some((plan, _, _lock)) = self.plan_append(ex, &slot, true, decide).await? else {
            return Ok(());
        };
        let done = self.append(ex, id, &slot, plan, None, who).await?;
        if let Some(e) = done.body_error {
            return Err(e);
        }
        match done.result {
            Err(Refused::Checksum) => checksum_mismatch(ex).await,
            Err(Refused::Protocol(r)) => refuse(ex, r, true).await,
            Ok(progress) => {
                let offset = match progress {
                    Progress::Partial { offset } => offset,
                    Progress::Complete { length } => length,
                };
                let mut resp = Response::new(204)
                    .header("Tus-Resumable", tus::VERSION)
                    .header("Upload-Offset", offset.to_string())
                    .header("Upload-Expires", http_date(slot.snapshot().expires));
                if done.mtime_applied {
                    resp = resp.header(crate::mtime::ANSWER.0, crate::mtime::ANSWER.1);
                }
                ex.send(resp, b"").await
            }
        }
    }
}
