//! One upload's in-process slot (its acknowledged state and append lock),
//! and how uploads are made: the per-address cap, the store's capacity,
//! the target's checks.

use super::*;
use crate::answers::{storage_answer, IntoAnswer as _};
use crate::respond::ensure_room;

/// One upload's in-process state: the acknowledged state (what HEAD
/// reports), the append lock, and the signal that makes a running append
/// give way to a newer one.
pub(super) struct Slot {
    pub(super) state: Mutex<UploadState>,
    pub(super) append: tokio::sync::Mutex<()>,
    pub(super) takeover: tokio::sync::Notify,
    pub(super) gone: AtomicBool,
    /// The address that created it here (counted against its cap), if
    /// it was created without a token by this process.
    pub(super) owner: Option<std::net::IpAddr>,
}

impl Slot {
    pub(super) fn new(state: UploadState) -> Self {
        Slot {
            owner: None,
            state: Mutex::new(state),
            append: tokio::sync::Mutex::new(()),
            takeover: tokio::sync::Notify::new(),
            gone: AtomicBool::new(false),
        }
    }

    pub(super) fn snapshot(&self) -> UploadState {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl<S: Storage + PartialUploads + Clone> Uploads<S> {
    pub(super) fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<UploadId, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn forget(&self, id: &UploadId) {
        if let Some(slot) = self.slots().remove(id) {
            slot.gone.store(true, Ordering::Relaxed);
            if let Some(owner) = slot.owner {
                let mut counts = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(n) = counts.get_mut(&owner) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        counts.remove(&owner);
                    }
                }
            }
        }
    }

    /// The upload `id`, loaded from the store on first use; 404 when it is
    /// unknown, gone or expired.
    pub(super) async fn slot(&self, id: &UploadId) -> Result<Arc<Slot>, Error> {
        let found = self.slots().get(id).cloned();
        let load = || async {
            self.storage.load_partial(id).await.map_err(|e| match e {
                StorageError::NotFound | StorageError::NotDir => {
                    self.forget(id);
                    Error::status(404, "no such upload")
                }
                e => e.into_answer(),
            })
        };
        let slot = match found {
            // Another server may have appended (a shared store): the record
            // is the truth unless an append runs here.
            Some(slot) if self.storage.shared() => {
                if let Ok(_idle) = slot.append.try_lock() {
                    let state = load().await?;
                    *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
                }
                slot
            }
            Some(slot) => slot,
            None => {
                let state = load().await?;
                self.slots()
                    .entry(*id)
                    .or_insert_with(|| Arc::new(Slot::new(state)))
                    .clone()
            }
        };
        if slot.snapshot().expired(now()) {
            return Err(Error::status(404, "this upload expired"));
        }
        Ok(slot)
    }

    /// Refuse a creation the store has no room for: over the count of
    /// partial uploads (503), or an announced length over the free space
    /// (507) — before any body byte is read.
    pub(super) async fn check_capacity(&self, length: Option<u64>) -> Result<(), Error> {
        let mut count = self
            .storage
            .count_partials()
            .await
            .map_err(storage_answer)?;
        if count >= self.ucfg.max_partials {
            // Full: empty creations left idle may be what fills it.
            if self.sweep_expired().await > 0 {
                count = self
                    .storage
                    .count_partials()
                    .await
                    .map_err(storage_answer)?;
            }
        }
        if count >= self.ucfg.max_partials {
            return Err(Error::status(
                503,
                format!(
                    "the server holds {count} unfinished uploads, its limit (serve --max-partial-uploads); finish or cancel some, or try later"
                ),
            ));
        }
        ensure_room(&self.storage, length).await
    }

    /// Everything that would make publishing `target` fail, refused at
    /// creation rather than after the last byte: the policy (`w` there,
    /// and `d` if a file has the name), a WebDAV lock the request does not
    /// submit (423; `if_field` is its `If` header), a folder at the name
    /// (409), a file where a parent folder would be (409).
    pub(super) async fn check_target(
        &self,
        guard: &WriteGuard,
        who: Principal,
        target: &RelPath,
        if_field: &crate::locks::IfField,
    ) -> Result<(), Error> {
        match self.policy.decide(who, Action::Create, target) {
            Decision::Allow => {}
            Decision::NeedCredentials => {
                return Err(Error::status(401, self.policy.sign_in_hint()))
            }
            Decision::Forbidden(why) => return Err(Error::status(403, why)),
        }
        // A tus creation in a folder names its file in its metadata: the
        // folder was admitted, the name is asked here.
        crate::answers::refuse_hidden(self.policy.hidden(), target)?;
        crate::through_links::check_real(&self.storage, &self.policy, who, Action::Create, target)
            .await?;
        self.check_locks(who, target, if_field).await?;
        match self.storage.stat(target).await {
            Ok(meta) if meta.kind == Kind::Dir => {
                return Err(Error::status(
                    409,
                    format!("{target} is a folder; an upload needs a file name there"),
                ))
            }
            Ok(_) if !guard.may_replace() => return Err(guard.refusal()),
            Err(StorageError::NotDir) => {
                return Err(Error::status(
                    409,
                    format!("a parent of {target} is a file, not a folder"),
                ))
            }
            _ => {}
        }
        if target.parent().is_empty() {
            return Ok(());
        }
        let mut parent = String::from("/");
        for name in target.parent() {
            crate::path::encode_segment_into(name, &mut parent);
            parent.push('/');
        }
        let Ok(parent) = parse_request_path(&parent) else {
            return Ok(());
        };
        match self.storage.stat(&parent).await {
            Ok(meta) if meta.kind == Kind::File => Err(Error::status(
                409,
                format!("a parent of {target} is a file, not a folder"),
            )),
            Err(StorageError::NotDir) => Err(Error::status(
                409,
                format!("a parent of {target} is a file, not a folder"),
            )),
            _ => Ok(()),
        }
    }

    /// 423 (or 412 for a failing `If` header) when a WebDAV lock covers
    /// `target` or its folder and the request does not submit it: checked
    /// at creation, before every append, and (with what the completing
    /// request submitted) right before publication.
    pub(super) async fn check_locks(
        &self,
        who: Principal,
        target: &RelPath,
        if_field: &crate::locks::IfField,
    ) -> Result<crate::locks::Submitted, Error> {
        let targets = [(target, crate::locks::Reach::Member)];
        crate::locks::check_write(
            &self.cfg.locks,
            &self.storage,
            if_field,
            target,
            &targets,
            who,
        )
        .await
    }

    /// Refuse a creation by an address (without a token) that holds
    /// `max_partials_per_client` unfinished uploads already.
    pub(super) fn claim_client_slot(
        &self,
        who: Principal,
        peer: std::net::IpAddr,
    ) -> Result<Option<std::net::IpAddr>, Error> {
        if who == Principal::TokenHolder {
            return Ok(None);
        }
        let mut counts = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
        let n = counts.entry(peer).or_insert(0);
        if *n >= self.ucfg.max_partials_per_client {
            return Err(Error::status(
                503,
                format!(
                    "this address holds {n} unfinished uploads, the limit per client; finish or cancel some, or try later"
                ),
            ));
        }
        *n += 1;
        Ok(Some(peer))
    }

    /// A new upload for `target`: its store entry and in-process slot.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn create(
        &self,
        protocol: Protocol,
        target: &RelPath,
        length: Option<u64>,
        metadata: Option<String>,
        guard: &WriteGuard,
        if_none_match: bool,
        client: (Principal, std::net::IpAddr),
        concat: Option<wirespeed_resumable::concat::Concat>,
    ) -> Result<(UploadId, Arc<Slot>), Error> {
        let _one_at_a_time = self.creating.lock().await;
        self.check_capacity(length).await?;
        // The declared length is judged against the quotas at creation.
        let cfg = &self.cfg;
        cfg.quotas
            .ensure(&self.storage, cfg, target, length)
            .await?;
        let owner = self.claim_client_slot(client.0, client.1)?;
        let release = |owner: Option<std::net::IpAddr>| {
            if let Some(owner) = owner {
                let mut counts = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(n) = counts.get_mut(&owner) {
                    *n = n.saturating_sub(1);
                }
            }
        };
        let id = new_id()?;
        let mut state = UploadState::new(
            protocol,
            target.to_url(false),
            length,
            now(),
            self.ucfg.limits.lifetime_secs,
        );
        state.metadata = metadata;
        state.if_none_match = if_none_match;
        state.no_replace = !guard.may_replace();
        state.owner = Some(super::concat_routes::owner_key(&self.policy, client.0));
        state.concat = concat;
        if let Err(e) = self.storage.create_partial(&id, &state).await {
            release(owner);
            return Err(e.on_write(target).into_answer());
        }
        let mut slot = Slot::new(state);
        slot.owner = owner;
        let slot = Arc::new(slot);
        self.slots().insert(id, slot.clone());
        Ok((id, slot))
    }
}
