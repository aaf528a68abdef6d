//! One stream of what changed in storage, for whoever needs to know.
//!
//! Both backends emit a [`Change`] after each change they make lands (an
//! upload committed, a resumable upload published, a delete, a rename, a
//! new folder): what happened, where, who asked, and the file's identity
//! before and after. Caches, digest records, search, thumbnails, quotas,
//! trash, audit and hooks subscribe instead of each front calling each of
//! them.
//!
//! The stream never slows a transfer: [`Changes::emit`] does not wait and
//! does not allocate per subscriber (a `tokio::sync::broadcast` ring of
//! [`CAPACITY`] shared changes). A subscriber that falls that far behind is
//! told how many it [`Event::Missed`], and must then treat everything it
//! knows as possibly stale (a cache clears, an index rescans): memory stays
//! bounded whatever a subscriber does.
//!
//! Who asked comes from the request: the front door opens an [`actor
//! scope`](in_actor_scope) around each request that may change storage and
//! names the principal once the policy admitted it ([`set_actor`]); the
//! storage reads it at emission ([`actor`]). Changes made by the server
//! itself (sweeps) and those outside any request carry `by: None`.
//!
//! Changes made on the host behind the server's back (an editor, `rsync`
//! into the folder) are not in the stream: watching a whole tree costs an
//! inotify watch per folder. The small-file cache watches exactly what it
//! keeps, synchronously, which the stream (delivered after the fact) could
//! not replace without answering a stale file.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::broadcast;
use wirespeed_path::RelPath;

use crate::digest_store::Identity;

/// Changes kept for a subscriber that has not read them yet.
pub const CAPACITY: usize = 4096;

/// What happened at [`Change::path`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// A new name: a file or a folder.
    Created,
    /// An existing file's content replaced by a new file.
    Replaced,
    /// The name and everything below it removed.
    Deleted,
    /// Moved here from `from` (with everything below it); if something was
    /// at `path` before, `before` says what it was.
    Moved { from: RelPath },
}

/// Which version of a file: the local file's inode identity (device, inode,
/// size, mtime), or an S3 object's ETag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileId {
    Inode(Identity),
    ETag(String),
}

/// What a name held, before or after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub folder: bool,
    /// The file's size (0 for a folder).
    pub size: u64,
    /// Which file it is, where the backend can say.
    pub id: Option<FileId>,
}

impl Version {
    pub fn folder() -> Version {
        Version {
            folder: true,
            size: 0,
            id: None,
        }
    }

    /// A local file or folder from its `stat`.
    pub fn of_stat(st: &rustix::fs::Stat) -> Version {
        let folder =
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory;
        Version {
            folder,
            size: if folder { 0 } else { st.st_size as u64 },
            id: (!folder).then(|| FileId::Inode(Identity::of(st))),
        }
    }
}

/// One change that landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    /// Where: the new name for a move.
    pub path: RelPath,
    /// Who asked: the principal the policy admitted (a user's name,
    /// `--token`, `anyone`, or `link N of NAME`); `None` when the server
    /// itself made the change.
    pub by: Option<Arc<str>>,
    /// What `path` held before (`None`: nothing).
    pub before: Option<Version>,
    /// What `path` holds after (`None`: nothing, for a delete).
    pub after: Option<Version>,
    pub at: SystemTime,
}

impl Change {
    /// A change at `path` by the current request's [`actor`], now.
    pub fn new(
        kind: ChangeKind,
        path: RelPath,
        before: Option<Version>,
        after: Option<Version>,
    ) -> Change {
        Change {
            kind,
            path,
            by: actor(),
            before,
            after,
            at: SystemTime::now(),
        }
    }

    /// Whether this change can alter what `path` names: it names `path`, a
    /// folder above it, or (for a move) came from either.
    pub fn touches(&self, path: &RelPath) -> bool {
        let under = |top: &RelPath| path.segments().starts_with(top.segments());
        under(&self.path) || matches!(&self.kind, ChangeKind::Moved { from } if under(from))
    }
}

/// What a subscriber reads.
#[derive(Debug, Clone)]
pub enum Event {
    Change(Arc<Change>),
    /// This many changes were dropped before this subscriber read them.
    Missed(u64),
}

/// The hub a backend emits into; cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Changes {
    tx: broadcast::Sender<Arc<Change>>,
}

impl Default for Changes {
    fn default() -> Self {
        Changes::new(CAPACITY)
    }
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes")
            .field("subscribers", &self.tx.receiver_count())
            .finish()
    }
}

impl Changes {
    /// A hub keeping at most `capacity` (at least 1) unread changes.
    pub fn new(capacity: usize) -> Changes {
        let (tx, _) = broadcast::channel(capacity.max(1));
        Changes { tx }
    }

    /// Tells every subscriber, without waiting; with none, costs nothing
    /// but the change itself.
    pub fn emit(&self, change: Change) {
        if self.tx.receiver_count() > 0 {
            let _ = self.tx.send(Arc::new(change));
        }
    }

    /// Changes emitted from now on.
    pub fn subscribe(&self) -> Subscription {
        Subscription {
            rx: self.tx.subscribe(),
        }
    }
}

/// One subscriber's place in the stream.
pub struct Subscription {
    rx: broadcast::Receiver<Arc<Change>>,
}

impl Subscription {
    /// The next event already emitted, without waiting (`None`: none yet).
    /// A reader that drains this before answering sees every change that
    /// landed before its request arrived.
    pub fn try_next(&mut self) -> Option<Event> {
        match self.rx.try_recv() {
            Ok(c) => Some(Event::Change(c)),
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(Event::Missed(n)),
            Err(_) => None,
        }
    }

    /// The next event; `None` once the hub is gone.
    pub async fn next(&mut self) -> Option<Event> {
        match self.rx.recv().await {
            Ok(c) => Some(Event::Change(c)),
            Err(broadcast::error::RecvError::Lagged(n)) => Some(Event::Missed(n)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

tokio::task_local! {
    static ACTOR: RefCell<Option<Arc<str>>>;
}

/// Runs `fut` (one request) with a place for its actor; inside a scope
/// already open (the audit trail opens one around the whole request), in
/// that one, so that whoever opened it reads the actor too.
pub async fn in_actor_scope<F: Future>(fut: F) -> F::Output {
    if actor_wanted() {
        return fut.await;
    }
    ACTOR.scope(RefCell::new(None), fut).await
}

/// Whether the current request has a place for its actor (so naming it is
/// worth the words).
pub fn actor_wanted() -> bool {
    ACTOR.try_with(|_| ()).is_ok()
}

/// Names who the current request acts for (no-op outside a scope).
pub fn set_actor(who: Arc<str>) {
    let _ = ACTOR.try_with(|a| *a.borrow_mut() = Some(who));
}

/// Who the current request acts for, if a scope named one.
pub fn actor() -> Option<Arc<str>> {
    ACTOR.try_with(|a| a.borrow().clone()).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_path::parse_request_path;

    fn p(s: &str) -> RelPath {
        parse_request_path(s).unwrap()
    }

    #[test]
    fn a_change_touches_its_path_what_is_below_and_a_move_source() {
        let c = Change::new(ChangeKind::Moved { from: p("/a/b") }, p("/c"), None, None);
        for yes in ["/c", "/c/x", "/a/b", "/a/b/y"] {
            assert!(c.touches(&p(yes)), "{yes}");
        }
        for no in ["/a", "/a/bc", "/d", "/"] {
            assert!(!c.touches(&p(no)), "{no}");
        }
    }

    #[test]
    fn subscribers_get_every_change_and_a_lagging_one_is_told_how_many_it_missed() {
        let hub = Changes::new(4);
        // Nobody listening: emitting costs nothing and keeps nothing.
        hub.emit(Change::new(ChangeKind::Created, p("/early"), None, None));
        let mut sub = hub.subscribe();
        assert!(sub.try_next().is_none());
        for i in 0..10 {
            hub.emit(Change::new(
                ChangeKind::Created,
                p(&format!("/f{i}")),
                None,
                None,
            ));
        }
        match sub.try_next() {
            Some(Event::Missed(6)) => {}
            other => panic!("{other:?}"),
        }
        let mut seen = Vec::new();
        while let Some(Event::Change(c)) = sub.try_next() {
            seen.push(c.path.to_string());
        }
        assert_eq!(seen, ["/f6", "/f7", "/f8", "/f9"]);
    }

    #[tokio::test]
    async fn the_actor_is_the_one_the_request_named_and_no_one_outside_a_scope() {
        assert_eq!(actor(), None);
        set_actor("nobody".into());
        assert_eq!(actor(), None);
        let inner = in_actor_scope(async {
            assert_eq!(actor(), None);
            set_actor("alice".into());
            tokio::task::yield_now().await;
            Change::new(ChangeKind::Deleted, p("/x"), None, None).by
        })
        .await;
        assert_eq!(inner.as_deref(), Some("alice"));
        assert_eq!(actor(), None);
    }

    #[tokio::test]
    async fn next_waits_for_a_change_and_ends_with_the_hub() {
        let hub = Changes::default();
        let mut sub = hub.subscribe();
        let h2 = hub.clone();
        tokio::spawn(async move {
            h2.emit(Change::new(
                ChangeKind::Created,
                p("/n"),
                None,
                Some(Version::folder()),
            ));
        });
        match sub.next().await {
            Some(Event::Change(c)) => assert_eq!(c.after, Some(Version::folder())),
            other => panic!("{other:?}"),
        }
        drop(hub);
        assert!(sub.next().await.is_none());
    }
}
