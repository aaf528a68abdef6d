//! The search index of one served folder: every name (path, size, mtime,
//! kind) and the words of its text-like files, in one SQLite database with
//! FTS5 (trigram on names, so any fragment of three or more characters is
//! an index lookup; words for text). Kept current by [`Search::refresh`]
//! (the service forwards the storage's change stream) and by an inotify
//! watch on the host's folders; persisted, so a restart answers from the
//! stored index at once while a reconciling walk runs in the background.
//!
//! The index knows nothing of who may read what: it hands out candidates
//! in a stable order with a continuation, and the caller judges each one
//! with its policy (hidden names, rights, where links lead).

mod indexer;
#[cfg(test)]
mod indexer_tests;
mod query;
mod source;
mod store;
mod text;
mod watch;

pub use indexer::{Search, Settings, Status};
pub use query::{below_range, NameQuery, TextQuery};
pub use source::{Local, Source};
pub use store::{Hit, Meta, Store};
pub use text::{is_text_name, looks_like_text};

/// What can go wrong with the index.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("search index: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("search index: {0}")]
    Io(#[from] std::io::Error),
    #[error("search index: the indexer has stopped")]
    Stopped,
}

pub type Result<T> = std::result::Result<T, Error>;
