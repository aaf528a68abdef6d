//! WebDAV write locks, honoured by every write front: the table
//! ([`table`]), the `If` header ([`if_header`]), and the check a write
//! passes ([`check_write`]): the `If` header must hold (412), and each lock
//! on what the write changes must have its token submitted, by the
//! principal who took it (423).
//!
//! `dav` takes and removes locks; `files` (PUT), `encoded` (form, SOAP and
//! MTOM POSTs, through `respond::WriteGuard`) and `resumable` (creations and
//! appends) only ask. Here at the crate top, since a front never imports
//! another. A server that holds no lock pays one atomic load per write (on
//! a store that shares lock records between servers, [`shared`], also one
//! conditional read per [`shared::WINDOW`]).

pub mod if_header;
mod record_copy;
pub mod shared;
pub mod table;

pub use table::{
    new_token, parse_timeout, Lock, LockRefused, LockTable, DEFAULT_TIMEOUT, MAX_LOCKS, MAX_TIMEOUT,
};

use wirespeed_net::Error;

use crate::answers::storage_answer;
use crate::path::{parse_request_path, RelPath};
use crate::policy::Principal;
use crate::storage::{Kind, Storage};
use if_header::{IfHeader, State};

/// What a write changes, so which locks it needs the tokens of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reach {
    /// The resource's own state (PROPPATCH).
    Own,
    /// The resource and its parent's membership (PUT, MKCOL, a new name).
    Member,
    /// Also everything below it (DELETE, MOVE, an overwritten destination).
    Tree,
}

/// Who takes a lock, as the lock records it (RFC 4918 §6.4: a lock token
/// counts only with its creator's credentials). `None` for a request
/// without credentials: nothing tells one anonymous client from another,
/// so the token alone is the proof.
pub fn creator(who: Principal) -> Option<String> {
    match who {
        Principal::Anyone => None,
        Principal::TokenHolder => Some("token".to_string()),
        Principal::User(name) => Some(format!("user:{name}")),
        Principal::Link(id) => Some(format!("link:{}", id.0)),
    }
}

impl Lock {
    /// Whether `who` may submit this lock's token, refresh or remove it,
    /// and read its token in `lockdiscovery`.
    pub fn usable_by(&self, who: Principal) -> bool {
        self.creator.is_none() || self.creator == creator(who)
    }
}

/// A request's `If` field, with the server's path prefix its resource tags
/// name paths under (both owned: the request is answered while they are
/// still in use).
#[derive(Debug, Clone, Default)]
pub(crate) struct IfField {
    value: Option<String>,
    base: String,
}

impl IfField {
    pub(crate) fn of(ex: &wirespeed_net::Exchange) -> Self {
        IfField {
            value: ex.header_str("if").map(str::to_string),
            base: ex.base().to_string(),
        }
    }
}

/// The key an `If` header's resource tag names (an absolute URL or path),
/// under the server's path prefix `base`; `None` for a resource elsewhere.
pub(crate) fn tag_key(tag: &str, base: &str) -> Option<RelPath> {
    let path = match tag.split_once("://") {
        Some((_, rest)) => &rest[rest.find('/')?..],
        None => tag,
    };
    let path = wirespeed_net::strip_base(base, path.split(['?', '#']).next()?)?;
    parse_request_path(path).ok()
}

/// The state the `If` header is evaluated against for `key`: its ETag and
/// the tokens of the locks covering it.
async fn state<S: Storage>(table: &LockTable, storage: &S, key: &RelPath) -> State {
    let etag = match storage.stat(key).await {
        Ok(m) if m.kind == Kind::File => Some(crate::conditional::etag(&m)),
        _ => None,
    };
    State {
        etag,
        tokens: table
            .covering(key.segments())
            .into_iter()
            .map(|l| l.token)
            .collect(),
    }
}

/// The request's `If` header (`value`), evaluated with `key` as the
/// request's resource: 400 if malformed, 412 if it does not hold. Returns
/// it (or `None` without one).
pub(crate) async fn evaluate_if<S: Storage>(
    table: &LockTable,
    storage: &S,
    field: &IfField,
    key: &RelPath,
) -> Result<Option<IfHeader>, Error> {
    let Some(value) = field.value.as_deref() else {
        return Ok(None);
    };
    let h = IfHeader::parse(value).map_err(|e| Error::status(400, e.to_string()))?;
    let own = state(table, storage, key).await;
    let mut tagged = Vec::new();
    for tag in h.resources() {
        let st = match tag_key(tag, &field.base) {
            Some(k) => Some(state(table, storage, &k).await),
            None => None,
        };
        tagged.push((tag.to_string(), st));
    }
    let holds = h.holds(|res| match res {
        None => Some(own.clone()),
        Some(tag) => tagged
            .iter()
            .find(|(t, _)| t == tag)
            .and_then(|(_, s)| s.clone()),
    });
    if !holds {
        return Err(Error::status(
            412,
            "precondition failed: the If header does not hold",
        ));
    }
    Ok(Some(h))
}

/// What one write request presents: who asks, and the lock tokens its
/// `If` header names.
#[derive(Debug, Clone)]
pub(crate) struct Submitted {
    who: Principal,
    tokens: Vec<String>,
}

impl Submitted {
    /// Whether the request submits a lock its principal took that made the
    /// resource at `key` (a LOCK of an unmapped name, which creates it
    /// empty): drives such as davfs2, Finder and Explorer LOCK a new name,
    /// then PUT its bytes, so whoever may create a name may fill the empty
    /// file their own lock made.
    pub(crate) fn made_by_own_lock(&self, table: &LockTable, key: &RelPath) -> bool {
        !table.is_empty()
            && table.covering(key.segments()).iter().any(|l| {
                l.created
                    && l.root == key.segments()
                    && l.usable_by(self.who)
                    && self.tokens.contains(&l.token)
            })
    }

    /// 423 when a lock on what writing each of `targets` changes was not
    /// submitted (or was, by someone other than its creator).
    pub(crate) fn cover(
        &self,
        table: &LockTable,
        targets: &[(&RelPath, Reach)],
    ) -> Result<(), Error> {
        if table.is_empty() {
            return Ok(());
        }
        for (key, reach) in targets {
            let mut need = table.covering(key.segments());
            if *reach >= Reach::Member && !key.is_root() {
                need.extend(table.covering(key.parent()));
            }
            if *reach == Reach::Tree {
                need.extend(table.below(key.segments()));
            }
            let mine = |l: &table::Lock| l.usable_by(self.who) && self.tokens.contains(&l.token);
            for l in &need {
                // A shared lock is satisfied by any shared lock on the same
                // root that the asker holds.
                let held = mine(l)
                    || (!l.exclusive
                        && need
                            .iter()
                            .any(|o| !o.exclusive && o.root == l.root && mine(o)));
                if held {
                    continue;
                }
                let named = self.tokens.contains(&l.token);
                return Err(Error::status(
                    423,
                    if named {
                        format!(
                            "locked: {} is locked by someone else; a lock token counts only \
                             for whoever took the lock",
                            l.root_url
                        )
                    } else {
                        format!(
                            "locked: {} is locked; submit its lock token in an If header",
                            l.root_url
                        )
                    },
                ));
            }
        }
        Ok(())
    }
}

/// The check before a write by `who` to each of `targets`, the request's
/// resource being `at`: the `If` header (`if_field`) must hold (412), and
/// every lock on what changes must be submitted (423). Returns what the
/// request submitted, for writes whose names come later (a form's files).
pub(crate) async fn check_write<S: Storage>(
    table: &LockTable,
    storage: &S,
    if_field: &IfField,
    at: &RelPath,
    targets: &[(&RelPath, Reach)],
    who: Principal,
) -> Result<Submitted, Error> {
    table.sync(storage, false).await.map_err(storage_answer)?;
    let mut submitted = Submitted {
        who,
        tokens: Vec::new(),
    };
    if let Some(h) = evaluate_if(table, storage, if_field, at).await? {
        submitted.tokens = h.tokens().map(str::to_string).collect();
    }
    submitted.cover(table, targets)?;
    Ok(submitted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn key(p: &str) -> RelPath {
        parse_request_path(p).unwrap()
    }

    fn take(table: &LockTable, root: &[&str], infinite: bool, who: Principal) -> Lock {
        table
            .lock(Lock {
                token: new_token(),
                root: root.iter().map(|s| s.to_string()).collect(),
                root_url: format!("/{}", root.join("/")),
                infinite,
                exclusive: true,
                owner: None,
                creator: creator(who),
                timeout: Duration::from_secs(60),
                expires: SystemTime::now() + Duration::from_secs(60),
                created: false,
            })
            .unwrap()
    }

    #[test]
    fn tags_name_paths() {
        assert_eq!(
            tag_key("http://h:1/a/b%20c", "").unwrap().to_url(false),
            "/a/b%20c"
        );
        assert_eq!(tag_key("/x/", "").unwrap().to_url(true), "/x/");
        assert!(tag_key("http://h", "").is_none());
        assert!(tag_key("/../x", "").is_none());
        // Under a path prefix: tags name paths with it; others are elsewhere.
        let under = |t: &str| tag_key(t, "/files").map(|k| k.to_url(false));
        assert_eq!(under("http://h:1/files/a%20b").as_deref(), Some("/a%20b"));
        assert_eq!(under("/files/x").as_deref(), Some("/x"));
        assert!(under("http://h:1/x").is_none());
        assert!(under("/filesx/a").is_none());
    }

    #[test]
    fn a_token_counts_only_for_its_creator() {
        let table = LockTable::default();
        let l = take(&table, &["a"], true, Principal::TokenHolder);
        let file = key("/a/f");
        let by = |who, tokens: Vec<String>| Submitted { who, tokens };
        let err = by(Principal::TokenHolder, vec![])
            .cover(&table, &[(&file, Reach::Member)])
            .unwrap_err();
        assert_eq!(err.http_status(), 423);
        by(Principal::TokenHolder, vec![l.token.clone()])
            .cover(&table, &[(&file, Reach::Member)])
            .unwrap();
        let err = by(Principal::Anyone, vec![l.token.clone()])
            .cover(&table, &[(&file, Reach::Member)])
            .unwrap_err();
        assert!(err.to_string().contains("someone else"), "{err}");
        // An anonymous lock: the token is the proof, whoever presents it.
        let m = take(&table, &["b"], false, Principal::Anyone);
        assert!(m.usable_by(Principal::TokenHolder));
        by(Principal::TokenHolder, vec![m.token.clone()])
            .cover(&table, &[(&key("/b"), Reach::Own)])
            .unwrap();
        // Outside any lock, nothing is needed.
        by(Principal::Anyone, vec![])
            .cover(&table, &[(&key("/c"), Reach::Tree)])
            .unwrap();
    }
}
