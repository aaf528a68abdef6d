//! LOCK and UNLOCK (RFC 4918 §9.10–11), and this front's writes' lock
//! check (`crate::locks::check_write`, which every write front asks).

use std::time::SystemTime;

use wirespeed_net::{Error, Exchange, Response};

use super::{parent_of, read_xml_body, xml, Dav, XML};
use crate::answers::{storage_answer, IntoAnswer as _};
use crate::locks::{
    check_write, creator, evaluate_if, new_token, parse_timeout, Lock, LockRefused, Reach,
    Submitted, DEFAULT_TIMEOUT,
};
use crate::path::RelPath;
use crate::policy::Principal;
use crate::storage::{Kind, Storage, StorageError, Upload};

impl<S: Storage> Dav<'_, S> {
    /// The check before a write by `who` to each of `targets` (the first
    /// is the request's resource): 412 when the `If` header fails, 423
    /// when a lock on what changes was not submitted by its creator.
    pub(crate) async fn check_locks(
        &self,
        ex: &mut Exchange,
        targets: &[(&RelPath, Reach)],
        who: Principal,
    ) -> Result<(), Error> {
        self.check_locks_submitted(ex, targets, who).await.map(drop)
    }

    /// [`Self::check_locks`], returning what the request submitted.
    pub(crate) async fn check_locks_submitted(
        &self,
        ex: &mut Exchange,
        targets: &[(&RelPath, Reach)],
        who: Principal,
    ) -> Result<Submitted, Error> {
        let value = crate::locks::IfField::of(ex);
        check_write(self.locks, self.storage, &value, targets[0].0, targets, who).await
    }

    /// What `who` holds at `key` and, when a symlink on the way leads
    /// elsewhere, there too (`within`: at every member below as well): a
    /// PROPPATCH or a LOCK changes what the path really is.
    pub(crate) async fn rights_here_and_there(
        &self,
        who: Principal,
        key: &RelPath,
        within: bool,
    ) -> crate::policy::Rights {
        let at = |k: &RelPath| {
            if within {
                self.policy.rights_within(who, k)
            } else {
                self.policy.rights(who, k)
            }
        };
        let here = at(key);
        if self.policy.uniform_for(who) {
            return here;
        }
        match self.storage.real_path(key, true).await {
            Ok(None) => here,
            Ok(Some(real)) => here.intersect(at(&real)),
            Err(_) => crate::policy::Rights::NONE,
        }
    }

    /// The resource at `key` is gone (DELETE, a MOVE's source, a replaced
    /// destination): its locks and those below go too.
    pub(crate) async fn forget_locks(&self, key: &RelPath) {
        let path = key.segments();
        if let Err(e) = self.locks.modify(self.storage, |t| t.forget(path)).await {
            tracing::warn!(path = %key, error = %e, "the locks of a removed resource were not dropped");
        }
    }

    /// LOCK: a new lock (an unmapped URL becomes an empty file, 201), or a
    /// refresh (no body, the token in `If`).
    pub(super) async fn lock(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        who: Principal,
    ) -> Result<(), Error> {
        let mut timeout = parse_timeout(ex.header_str("timeout"));
        let body = read_xml_body(ex).await?;
        self.locks
            .sync(self.storage, false)
            .await
            .map_err(storage_answer)?;
        if body.iter().all(u8::is_ascii_whitespace) {
            let value = crate::locks::IfField::of(ex);
            let h = evaluate_if(self.locks, self.storage, &value, key)
                .await?
                .ok_or_else(|| {
                    Error::status(
                        400,
                        "a LOCK without a body refreshes: it needs If with the token",
                    )
                })?;
            let tokens: Vec<String> = h.tokens().map(str::to_string).collect();
            for t in tokens {
                if self
                    .locks
                    .get(&t)
                    .is_some_and(|l| l.covers(key.segments()) && !l.usable_by(who))
                {
                    return Err(not_yours());
                }
                let refreshed = self
                    .locks
                    .modify(self.storage, |tb| tb.refresh(&t, key.segments(), timeout))
                    .await
                    .map_err(storage_answer)?;
                if let Some(l) = refreshed {
                    return send_lock(ex, 200, &l, false).await;
                }
            }
            return Err(Error::status(
                412,
                "no lock of the If header covers this resource",
            ));
        }
        let info = xml::parse_lockinfo(&body).map_err(|e| Error::status(400, e.to_string()))?;
        let infinite = match ex.header_str("depth").map(str::trim) {
            None => true,
            Some(d) if d.eq_ignore_ascii_case("infinity") => true,
            Some("0") => false,
            Some(_) => return Err(Error::status(400, "LOCK takes Depth 0 or infinity")),
        };
        let meta = match self.storage.stat(key).await {
            Ok(m) => Some(m),
            Err(StorageError::NotFound) => None,
            Err(e) => return Err(e.into_answer()),
        };
        if meta.is_none() {
            // A new, empty file: its parent must exist, and the parent's
            // locks must be submitted.
            let parent = parent_of(key);
            if key.is_root() || key.trailing_slash() {
                return Err(Error::status(409, "only a file can be created by LOCK"));
            }
            match self.storage.stat(&parent).await {
                Ok(m) if m.kind == Kind::Dir => {}
                Ok(_) | Err(StorageError::NotFound) => {
                    return Err(Error::status(409, "the parent folder does not exist"))
                }
                Err(e) => return Err(e.into_answer()),
            }
            self.check_locks(ex, &[(key, Reach::Member)], who).await?;
        } else {
            // A lock keeps everyone else from changing what it covers: on
            // what exists, that is the right to change it, `d`, held at
            // every member a `Depth: infinity` lock covers (`w` alone only
            // locks the new name it creates).
            let dir = meta.is_some_and(|m| m.kind == Kind::Dir);
            let rights = self.rights_here_and_there(who, key, infinite && dir).await;
            if !rights.may_delete() {
                return Err(Error::status(
                    403,
                    if infinite && dir {
                        "locking an existing folder needs the d right on it and on everything \
                         in it (a lock keeps others from changing it); nothing was locked"
                    } else {
                        "locking an existing name needs the d right (a lock keeps others from \
                         changing it); nothing was locked"
                    },
                ));
            }
            let value = crate::locks::IfField::of(ex);
            evaluate_if(self.locks, self.storage, &value, key).await?;
        }
        // Without `d` here a lock is only ever on the new name it made:
        // kept short (refreshed by a client that is still writing).
        if !self.policy.rights(who, key).may_delete() {
            timeout = timeout.min(DEFAULT_TIMEOUT);
        }
        let dir = meta.is_some_and(|m| m.kind == Kind::Dir);
        let lock = Lock {
            token: new_token(),
            root: key.segments().to_vec(),
            root_url: format!("{}{}", ex.base(), key.to_url(dir)),
            infinite: infinite && dir,
            exclusive: info.exclusive,
            owner: info.owner,
            creator: creator(who),
            timeout,
            expires: SystemTime::now() + timeout,
            created: meta.is_none(),
        };
        let taken = self
            .locks
            .modify(self.storage, |t| t.lock(lock.clone()))
            .await
            .map_err(storage_answer)?;
        let lock = match taken {
            Ok(l) => l,
            Err(LockRefused::Conflict) => {
                return super::send_condition(ex, 423, "no-conflicting-lock").await
            }
            Err(LockRefused::TooManyOfYours) => {
                return Err(Error::status(
                    503,
                    "you hold too many locks already; unlock some (or let them time out) first",
                ))
            }
            Err(LockRefused::Full) => {
                return Err(Error::status(
                    503,
                    "too many locks are held; try again later",
                ))
            }
        };
        if meta.is_none() {
            let made = async {
                let up = self.storage.create(key).await?;
                up.commit(None).await
            }
            .await;
            if let Err(e) = made {
                let token = &lock.token;
                let _ = self
                    .locks
                    .modify(self.storage, |t| t.unlock(token, key.segments()))
                    .await;
                return Err(e.on_write(key).into_answer());
            }
            return send_lock(ex, 201, &lock, true).await;
        }
        send_lock(ex, 200, &lock, true).await
    }

    /// UNLOCK: the lock named by `Lock-Token`, if it covers the resource.
    pub(super) async fn unlock(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        who: Principal,
    ) -> Result<(), Error> {
        let token = ex
            .header_str("lock-token")
            .map(|t| {
                t.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(|| Error::status(400, "UNLOCK needs a Lock-Token header"))?;
        self.locks
            .sync(self.storage, false)
            .await
            .map_err(storage_answer)?;
        // Whoever may change what a lock covers may lift it (the token
        // holder anywhere, a user with `d` at its root): a lock must never
        // shut the owner out of their own folder.
        let lifts_any = |l: &Lock| {
            who == Principal::TokenHolder || {
                let root = RelPath::from_segments(&l.root);
                root.is_ok_and(|r| self.policy.rights(who, &r).may_delete())
            }
        };
        if self
            .locks
            .get(&token)
            .is_some_and(|l| l.covers(key.segments()) && !l.usable_by(who) && !lifts_any(&l))
        {
            return Err(not_yours());
        }
        let removed = self
            .locks
            .modify(self.storage, |t| t.unlock(&token, key.segments()))
            .await
            .map_err(storage_answer)?;
        if removed {
            return ex.send(Response::new(204), b"").await;
        }
        super::send_condition(ex, 409, "lock-token-matches-request-uri").await
    }
}

/// The 403 of a refresh or UNLOCK of another principal's lock (RFC 4918
/// §6.4: only its creator's credentials count).
fn not_yours() -> Error {
    Error::status(
        403,
        "this lock was taken by someone else: only they may refresh or remove it",
    )
}

/// The `If` header's value, owned (the exchange is not held across awaits).
/// The answer to a LOCK: the lock's discovery, and its token when new.
async fn send_lock(ex: &mut Exchange, status: u16, l: &Lock, new: bool) -> Result<(), Error> {
    let mut body = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:prop xmlns:D=\"DAV:\"><D:lockdiscovery>",
    );
    super::propfind::write_active(l, SystemTime::now(), &mut body);
    body.push_str("</D:lockdiscovery></D:prop>\n");
    let mut resp = Response::new(status).header("Content-Type", XML);
    if new {
        resp = resp.header("Lock-Token", format!("<{}>", l.token));
    }
    ex.send(resp, body.as_bytes()).await
}
