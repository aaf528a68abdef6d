//! The trash (`serve --trash-days N`): a DELETE, a PUT over a file, or a
//! WebDAV MOVE/COPY over an existing name keeps the old bytes for N days,
//! without copying them (the storage renames the file or the whole folder
//! into its trash, [`Storage::trash`]), with a record of where it was, who
//! removed it, when, its size and its file count. `GET /-/trash/P` lists
//! what the asker could delete at its original place now, below
//! `P`; `POST /-/trash?restore=ID` puts an entry back where it was (409 if
//! something is there now, unless `&as=NAME` names a place beside it).
//! Expired entries are removed a bounded batch at a time, whenever the
//! trash is listed and at most once a minute when something is thrown
//! away.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use wirespeed_net::{Error, Exchange, Handler, Response};

use crate::answers::IntoAnswer as _;
use crate::config::ServiceConfig;
use crate::path::{parse_request_path, RelPath};
use crate::policy::{Action, Decision};
use crate::storage::{changes, Kind, Meta, Storage, StorageError};
pub use crate::usage::Record;

/// The control path of the trash.
pub const PATH: &str = "/-/trash";
/// Its route, with the path listed below it.
pub const ROUTE: &str = "/-/trash/*";
pub use crate::usage::MAX_LISTED;
/// Expired entries removed per sweep.
const SWEEP_MAX: usize = 64;
/// When a discard last swept (seconds since the epoch).
static LAST_SWEEP: AtomicU64 = AtomicU64::new(0);

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn new_id() -> Result<String, StorageError> {
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| StorageError::Io(std::io::Error::other(e.to_string())))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{}-{hex}", now_secs()))
}

/// Removes `key` (`meta`: what it is): into the trash when it is on and
/// the storage has one, else for good (a folder must then be empty).
pub(crate) async fn discard<S: Storage>(
    storage: &S,
    cfg: &ServiceConfig,
    key: &RelPath,
    meta: &Meta,
) -> Result<(), StorageError> {
    if cfg.trash_days == 0 {
        return storage.delete(key).await;
    }
    let folder = meta.kind == Kind::Dir;
    let (size, files) = if folder {
        let u = crate::usage::walk_usage(storage, key.segments()).await?;
        (u.bytes, u.files)
    } else {
        (meta.size, 1)
    };
    let record = Record {
        path: key.to_url(false),
        by: changes::actor().map(|a| a.to_string()),
        at: now_secs(),
        size,
        files,
        folder,
    };
    let json = serde_json::to_vec(&record).map_err(|e| StorageError::Io(e.into()))?;
    match storage.trash(key, &new_id()?, &json).await {
        Ok(()) => {
            now_and_then_sweep(storage, cfg).await;
            Ok(())
        }
        Err(StorageError::Unsupported(_)) => storage.delete(key).await,
        Err(e) => Err(e),
    }
}

/// For a storage that cannot keep it at the publication: keeps the file
/// `key` (`meta`: what it is) in the trash before an upload replaces it, its name left for the replacement's one rename
/// (no reader finds it missing in between); `false` when nothing was
/// kept (no trash here: the replacement simply overwrites).
pub(crate) async fn keep_replaced<S: Storage>(
    storage: &S,
    cfg: &ServiceConfig,
    key: &RelPath,
    meta: &Meta,
) -> Result<bool, StorageError> {
    if cfg.trash_days == 0 || meta.kind != Kind::File {
        return Ok(false);
    }
    let record = Record {
        path: key.to_url(false),
        by: changes::actor().map(|a| a.to_string()),
        at: now_secs(),
        size: meta.size,
        files: 1,
        folder: false,
    };
    let json = serde_json::to_vec(&record).map_err(|e| StorageError::Io(e.into()))?;
    match storage.trash_replaced(key, &new_id()?, &json).await {
        Ok(()) => {
            now_and_then_sweep(storage, cfg).await;
            Ok(true)
        }
        Err(StorageError::Unsupported(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The trash's entry for a file an upload replaces, made by the storage at
/// the publication itself ([`Storage::keep_replaced_in_trash`]): every
/// front (PUT, form and encoded POSTs, resumable uploads, `If-Match`
/// writes) publishes through it, so none can skip the trash.
#[derive(Debug)]
pub struct KeepInTrash;

impl crate::storage::gate::KeepReplaced for KeepInTrash {
    fn entry(&self, key: &RelPath, size: u64, by: Option<&str>) -> Option<(String, Vec<u8>)> {
        let record = Record {
            path: key.to_url(false),
            by: by.map(str::to_owned),
            at: now_secs(),
            size,
            files: 1,
            folder: false,
        };
        let id = new_id().ok()?;
        Some((id, serde_json::to_vec(&record).ok()?))
    }
}

/// Turns [`KeepInTrash`] on in `storage` when the trash is.
pub(crate) fn keep_replaced_at_publication<S: Storage>(storage: &mut S, cfg: &ServiceConfig) {
    if cfg.trash_days > 0 {
        storage.keep_replaced_in_trash(std::sync::Arc::new(KeepInTrash));
    }
}

/// A sweep reads every record: at most once a minute from the request
/// path (a `rm -r` of many files is many discards).
pub(crate) async fn now_and_then_sweep<S: Storage>(storage: &S, cfg: &ServiceConfig) {
    let now = now_secs();
    let last = LAST_SWEEP.load(Ordering::Relaxed);
    if now >= last + 60
        && LAST_SWEEP
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        sweep(storage, cfg).await;
    }
}

/// Removes up to [`SWEEP_MAX`] entries older than `--trash-days`.
pub(crate) async fn sweep<S: Storage>(storage: &S, cfg: &ServiceConfig) {
    let keep = u64::from(cfg.trash_days) * 86_400;
    let now = now_secs();
    let expired = crate::usage::trash_records(storage)
        .await
        .into_iter()
        .filter(|(_, r)| r.at.saturating_add(keep) <= now)
        .take(SWEEP_MAX);
    for (id, r) in expired {
        if let Err(e) = storage.purge_trash(&id).await {
            tracing::warn!(error = %e, id, "an expired trash entry could not be removed");
            continue;
        }
        // Gone for good: the audit trail says what, whose and since when.
        if let Some(events) = &cfg.events {
            let entry = serde_json::json!({
                "id": id, "by": r.by, "deleted": r.at, "size": r.size,
                "files": r.files, "folder": r.folder,
            });
            events.system("trash.expire", &r.path, entry);
        }
    }
}

/// Whether `who` may delete what a trash entry held at `orig` now, and so
/// see and restore it: a folder needs `d` at every path below it too, as
/// its DELETE into the trash did (the folder went there whole only then).
fn may_delete_entry(
    policy: &crate::policy::Policy,
    who: crate::policy::Principal,
    orig: &RelPath,
    folder: bool,
) -> bool {
    !policy.hides(orig)
        && policy.decide(who, Action::Delete, orig) == Decision::Allow
        && (!folder || policy.rights_within(who, orig).may_delete())
}

/// `GET /-/trash/P` and `POST /-/trash?restore=ID[&as=NAME]`.
pub(crate) struct TrashRoutes<P> {
    pub files: std::sync::Arc<P>,
}

fn query_param(ex: &Exchange, name: &str) -> Option<String> {
    form_urlencoded::parse(ex.query()?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

impl<P: crate::config::FileParts> Handler for TrashRoutes<P> {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        Box::pin(changes::in_actor_scope(self.route(ex))).await
    }
}

impl<P: crate::config::FileParts> TrashRoutes<P> {
    async fn route(&self, ex: &mut Exchange) -> Result<(), Error> {
        let (storage, cfg, policy) = self.files.parts();
        if cfg.trash_days == 0 {
            return Err(Error::status(
                404,
                "the trash is off (serve --trash-days 0)",
            ));
        }
        if ex.method() == "POST" {
            return self.restore(ex).await;
        }
        // `/-/trash/team/` lists what came from below `/team/`.
        let below = ex.path().strip_prefix(PATH).unwrap_or("");
        let prefix = if below.is_empty() { "/" } else { below };
        let prefix =
            parse_request_path(prefix).map_err(|e| Error::status(400, format!("path: {e}")))?;
        let Some(who) = crate::respond::admit(cfg, policy, ex, Action::Read, &prefix).await? else {
            return Ok(());
        };
        sweep(storage, cfg).await;
        let keep = u64::from(cfg.trash_days) * 86_400;
        let mut entries = Vec::new();
        for (id, r) in crate::usage::trash_records(storage).await {
            let Ok(orig) = parse_request_path(&r.path) else {
                continue;
            };
            // Only what the asker could delete there now, below the prefix.
            let visible = orig.segments().starts_with(prefix.segments())
                && may_delete_entry(policy, who, &orig, r.folder);
            if visible {
                entries.push(serde_json::json!({
                    "id": id,
                    "path": r.path,
                    "name": orig.name().unwrap_or(""),
                    "by": r.by,
                    "deleted": r.at,
                    "expires": r.at.saturating_add(keep),
                    "size": r.size,
                    "files": r.files,
                    "folder": r.folder,
                }));
            }
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e["deleted"].as_u64()));
        let body = serde_json::json!({ "entries": entries }).to_string();
        let resp = Response::new(200)
            .header("Content-Type", "application/json")
            .header("Cache-Control", "no-store");
        ex.send(resp, body.as_bytes()).await
    }

    async fn restore(&self, ex: &mut Exchange) -> Result<(), Error> {
        let (storage, cfg, policy) = self.files.parts();
        let id = query_param(ex, "restore")
            .ok_or_else(|| Error::status(400, "POST /-/trash needs ?restore=ID"))?;
        let found = crate::usage::trash_records(storage)
            .await
            .into_iter()
            .find(|(i, _)| *i == id);
        // An unknown entry and one the asker may not see answer alike.
        let orig = found
            .as_ref()
            .and_then(|(_, r)| parse_request_path(&r.path).ok())
            .unwrap_or_else(RelPath::root);
        let Some(who) = crate::respond::admit(cfg, policy, ex, Action::Delete, &orig).await? else {
            return Ok(());
        };
        let folder = found.as_ref().is_some_and(|(_, r)| r.folder);
        if found.is_none() || orig.is_root() {
            return Err(Error::status(404, "no such entry in the trash"));
        }
        if !may_delete_entry(policy, who, &orig, folder) {
            return Err(Error::status(
                403,
                "you may not delete everything this folder held there, so you may not restore it",
            ));
        }
        let target = match query_param(ex, "as") {
            Some(name) => {
                let parent = RelPath::from_segments(orig.parent())
                    .map_err(|e| Error::status(400, e.to_string()))?;
                parent
                    .join(&name)
                    .map_err(|e| Error::status(400, format!("as: {e}")))?
            }
            None => orig.clone(),
        };
        // Beside it, every member of a folder is a new name there.
        if target != orig
            && (policy.hides(&target)
                || policy.decide(who, Action::Create, &target) != Decision::Allow
                || (folder && !policy.rights_within(who, &target).may_write()))
        {
            return Err(Error::status(403, "you may not create that name"));
        }
        match storage.untrash(&id, &target).await {
            Ok(()) => {
                let location = format!("{}{}", ex.base(), target.to_url(folder));
                ex.send(Response::new(201).header("Location", location), b"")
                    .await
            }
            Err(StorageError::Exists) => Err(Error::status(
                409,
                format!("something is at {target} now: restore it beside, with &as=NEW-NAME"),
            )),
            Err(e) => Err(e.on_write(&target).into_answer()),
        }
    }
}
