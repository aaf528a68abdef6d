//! `serve`'s lines for the operator outside the request log (the write
//! mode, a created folder, the certificate): plain text on stderr, or with
//! `--log-format json` an event of the JSON log, so that every stderr line
//! is JSON from the first (`jq` reads the whole stream).

use std::sync::atomic::{AtomicBool, Ordering};

/// The target of these events (shown by `serve`'s default log filter).
pub const TARGET: &str = "wirespeed::notice";

static JSON: AtomicBool = AtomicBool::new(false);

/// Lines go into the JSON log from now on.
pub fn set_json(on: bool) {
    JSON.store(on, Ordering::Relaxed);
}

/// Tell the operator `msg` on stderr, in the log's format.
pub fn say(msg: &str) {
    if JSON.load(Ordering::Relaxed) {
        tracing::info!(target: TARGET, "{msg}");
    } else {
        eprintln!("{msg}");
    }
}
