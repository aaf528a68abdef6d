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
        let join = Arc::new(Join {
            state,
            parts: ids.clone(),
            slots: parts,
            outcome: Mutex::new(None),
        });
        self.joins().insert(id, join.clone());
        // The join runs on its own: a client that leaves, or a proxy that
        // gives up waiting, does not stop it half-way.
        let storage = self.storage.clone();
        // The join runs as the asker: the file is theirs (a user's quota),
        // and so is the change it makes.
        let actor = crate::storage::changes::actor();
        let mut task = tokio::spawn(crate::storage::changes::in_actor_scope(async move {
            if let Some(a) = actor {
                crate::storage::changes::set_actor(a);
            }
            let r = storage
                .concat_partials(&join.parts, &target, check, mtime)
                .await
                .map(|_| ())
                .map_err(|e| {
                    let e = guard.explain(e.on_write(&target).into_answer());
                    (e.http_status(), e.to_string())
                });
            *join.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        }));
        let _ = tokio::time::timeout(self.ucfg.join_wait, &mut task).await;
        let mut resp = Response::new(201)
            .header("Tus-Resumable", tus::VERSION)
            .header("Location", location(ex.base(), &id))
            .header("Upload-Length", length.to_string());
        match self.settle_join(&id) {
            Joined::Failed(e) => return Err(e),
            Joined::Done => {
                resp = resp.header("Upload-Offset", length.to_string());
                if mtime.is_some() {
                    resp = resp.header(crate::mtime::ANSWER.0, crate::mtime::ANSWER.1);
                }
            }
            // Still joining: `HEAD` has no `Upload-Offset` until the file
            // is published (as tus says for a final being assembled).
            Joined::Running(_) => {}
        }
        ex.send(resp, b"").await
    }

    pub(super) fn joins(&self) -> std::sync::MutexGuard<'_, HashMap<UploadId, Arc<Join>>> {
        self.joining.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state of a final upload whose join has not been settled.
    pub(super) fn joining_state(&self, id: &UploadId) -> Option<UploadState> {
        self.joins().get(id).map(|j| j.state.clone())
    }

    /// Where the join of final upload `id` stands; an ended one is settled
    /// here: done, its parts are forgotten and it answers as a completed
    /// upload; failed, its parts are free again for another final.
    pub(super) fn settle_join(&self, id: &UploadId) -> Joined {
        let Some(join) = self.joins().get(id).cloned() else {
            return Joined::Done;
        };
        let outcome = join
            .outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match outcome {
            None => Joined::Running(join.state.clone()),
            Some(r) => {
                self.joins().remove(id);
                match r {
                    Ok(()) => {
                        for part in &join.parts {
                            self.forget(part);
                        }
                        let length = join.state.length.unwrap_or(0);
                        self.completed
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(*id, &join.state, length, now());
                        Joined::Done
                    }
                    Err((status, message)) => {
                        for slot in &join.slots {
                            set_used(slot, false);
                        }
                        Joined::Failed(Error::status(status, message))
                    }
                }
            }
        }
    }

    /// Settles every ended join (the sweep calls it).
    pub(super) fn settle_joins(&self) {
        let ids: Vec<UploadId> = self.joins().keys().copied().collect();
        for id in ids {
            if let Joined::Failed(e) = self.settle_join(&id) {
                tracing::warn!(%id, error = %e, "a final upload could not be joined");
            }
        }
    }

    /// `HEAD` of a final upload still being joined: its length and parts,
    /// no offset yet.
    pub(super) async fn head_joining(
        &self,
        ex: &mut Exchange,
        state: &UploadState,
    ) -> Result<(), Error> {
        let mut resp = Response::new(200);
        for (name, value) in tus::offset_fields(state) {
            if name != "Upload-Offset" {
                resp = resp.header(name, value);
            }
        }
        resp = resp.header("Upload-Expires", http_date(state.expires));
        ex.send(resp, b"").await
    }
}

/// A final upload's join: what it will be, and how it ended.
pub(super) struct Join {
    state: UploadState,
    parts: Vec<UploadId>,
    slots: Vec<Arc<Slot>>,
    /// `None` while running; then done, or the status and message of why not.
    outcome: Mutex<Option<Result<(), (u16, String)>>>,
}

/// Where a final upload's join stands.
pub(super) enum Joined {
    Running(UploadState),
    /// Published (or never joined here).
    Done,
    Failed(Error),
}

/// Marks a part as taken by a final upload (or free again after a failed
/// one): its appends are refused meanwhile.
fn set_used(slot: &Slot, used: bool) {
    let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(Concat::Partial { used: u }) = &mut state.concat {
        *u = used;
    }
}
