//! The index follows what changes through the server: each change on the
//! storage's stream becomes a path for the indexer to look at again (the
//! host watch sees most of them too, but not in folders past its watch
//! budget). A subscriber that fell behind walks everything.

use std::sync::Arc;

use wirespeed_search::Search;

use crate::storage::changes::{ChangeKind, Changes, Event};

/// Forwards `changes` to `search` for as long as both live.
pub(crate) fn follow(search: Arc<Search>, changes: &Changes) {
    let mut sub = changes.subscribe();
    let task = async move {
        while let Some(ev) = sub.next().await {
            match ev {
                Event::Change(c) => {
                    if let ChangeKind::Moved { from } = &c.kind {
                        search.refresh(&from.segments().join("/"), false);
                    }
                    let deep = matches!(c.kind, ChangeKind::Created | ChangeKind::Moved { .. });
                    search.refresh(&c.path.segments().join("/"), deep);
                }
                Event::Missed(_) => search.walk_all(),
            }
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(task);
        }
        Err(_) => {
            // Built outside a runtime (a test's set-up): a small one of its own.
            let _ = std::thread::Builder::new()
                .name("search-follow".into())
                .spawn(move || {
                    if let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() {
                        rt.block_on(task);
                    }
                });
        }
    }
}
