//! What one node knows of the lock record a shared store keeps: the version
//! it last read, when, and the lock that lets one change at a time leave
//! this node. The table holds one; `shared.rs` reads and updates it.

use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// What a node knows of the shared record.
#[derive(Debug, Default)]
pub struct SharedState {
    seen: Mutex<Seen>,
    /// One change at a time from this node (others race through the store).
    writer: tokio::sync::Mutex<()>,
}

/// The record as last read or written by this node.
#[derive(Debug, Default)]
pub(super) struct Seen {
    pub(super) version: Option<String>,
    pub(super) fetched: Option<Instant>,
}

impl SharedState {
    pub(super) fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Held while this node changes the record.
    pub(super) async fn one_writer(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.writer.lock().await
    }
}
