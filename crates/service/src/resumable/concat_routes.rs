//! tus concatenation: a final upload (`Upload-Concat: final;URL…`) made
//! of partial uploads the same principal sent, often in parallel. Rights:
//! the final's target is judged like any upload's; every part must be a
//! complete, unused partial upload of the asker (a share link counts as
//! its minter). The store joins the parts without copying them through
//! the server and publishes the file once, whole.

use super::*;
use crate::answers::IntoAnswer as _;
use wirespeed_resumable::concat::{self, Concat, Part};

/// How an upload's owner is written in its record: a share link acts for
/// its minter, so a link's uploads and its minter's may form one file.
pub(super) fn owner_key(policy: &Policy, who: Principal) -> String {
    let minter = |by: &str| {
        if by == crate::policy::shares::TOKEN_MINTER {
            "*token".to_string()
        } else {
            format!("user:{by}")
        }
    };
    match who {
        Principal::Anyone => "*anyone".into(),
        Principal::TokenHolder => "*token".into(),
        Principal::User(name) => minter(name.as_str()),
        Principal::Link(id) => match policy.shares().and_then(|s| s.grant(id)) {
            Some(g) if !g.by.is_empty() => minter(&g.by),
            _ => format!("link:{}", id.0),
        },
    }
}

impl<S: Storage + PartialUploads + Clone> Uploads<S> {
    /// `POST` with `Upload-Concat: final;…`: check the parts, join them
    /// under `target`, answer 201 with the final upload's URL (its HEAD
    /// then says offset = length). Nothing is published on a refusal.
    pub(super) async fn tus_final(
        &self,
        ex: &mut Exchange,
        target: RelPath,
        urls: Vec<String>,
        who: Principal,
    ) -> Result<(), Error> {
        let guard = WriteGuard::new(&self.policy, who, &target);
        let if_field = crate::locks::IfField::of(ex);
        self.check_target(&guard, who, &target, &if_field).await?;
        let submitted = self.check_locks(who, &target, &if_field).await?;
        let mtime = crate::mtime::requested(ex)?;
        let uploads = format!("{}{UPLOADS_PREFIX}", ex.base());
        let mut ids = Vec::with_capacity(urls.len());
        for url in &urls {
            match concat::id_of_url(url, &uploads) {
                Some(id) => ids.push(id),
                None => {
                    let r = format!(
                        "{url:?} in Upload-Concat is not an upload of this server \
                         (expected {uploads}<id>)"
                    );
                    return Err(Error::status(400, r));
                }
            }
        }
        let owner = owner_key(&self.policy, who);
        // One final at a time decides and marks its parts, so two finals
        // naming the same part cannot both take it.
        let parts = {
            let _deciding = self.finals.lock().await;
            let mut slots = Vec::with_capacity(ids.len());
            for id in &ids {
                slots.push(self.slot(id).await.ok());
            }
            let states: Vec<Option<UploadState>> = slots
                .iter()
                .map(|s| s.as_ref().map(|s| s.snapshot()))
                .collect();
            let named: Vec<Part> = ids
                .iter()
                .zip(&states)
                .map(|(id, state)| Part {
                    id: *id,
                    state: state.as_ref(),
                })
                .collect();
            if let Err(r) = concat::check_final(&named, &owner, self.ucfg.limits.max_size) {
                return refuse(ex, r, true).await;
            }
            let slots: Vec<Arc<Slot>> = slots.into_iter().flatten().collect();
            for slot in &slots {
                set_used(slot, true);
            }
            slots
        };
        let length = parts.iter().map(|s| s.snapshot().offset).sum::<u64>();
        let guard = guard.with_locks(&self.cfg.locks, submitted);
        let check = guard.commit_check(&target, None);
        let joined = self
            .storage
            .concat_partials(&ids, &target, check, mtime)
            .await
            .map_err(|e| guard.explain(e.on_write(&target).into_answer()));
        if let Err(e) = joined {
            for slot in &parts {
                set_used(slot, false);
            }
            return Err(e);
        }
        for id in &ids {
            self.forget(id);
        }
        let id = new_id()?;
        let mut state = UploadState::new(
            Protocol::Tus,
            target.to_url(false),
            Some(length),
            now(),
            self.ucfg.limits.lifetime_secs,
        );
        state.owner = Some(owner);
        state.concat = Some(Concat::Final { parts: urls });
        self.completed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, &state, length, now());
        let mut resp = Response::new(201)
            .header("Tus-Resumable", tus::VERSION)
            .header("Location", location(ex.base(), &id))
            .header("Upload-Offset", length.to_string())
            .header("Upload-Length", length.to_string());
        if mtime.is_some() {
            resp = resp.header(crate::mtime::ANSWER.0, crate::mtime::ANSWER.1);
        }
        ex.send(resp, b"").await
    }
}

/// Marks a part as taken by a final upload (or free again after a failed
/// one): its appends are refused meanwhile.
fn set_used(slot: &Slot, used: bool) {
    let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(Concat::Partial { used: u }) = &mut state.concat {
        *u = used;
    }
}
