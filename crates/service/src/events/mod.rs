//! What happened, for the audit trail (`serve --audit-log`) and the event
//! hooks (`serve --hook`, `--hook-command`): one [`Event`] per request that
//! changes or reveals content (an upload, a download, a listing, a delete,
//! a move or copy, a lock, a share link minted, used or revoked, a sign-in
//! or sign-out), refusals included, with who asked (the principal as the
//! policy admitted it, a link with its minter, the client's address), what
//! and where, the status answered, and when.
//!
//! Made in one place, [`Recorded`], wrapped around the routes that do such
//! things, after the handler answered: it reads the principal from the
//! request's actor scope (`storage::changes`), which the policy fills once
//! it admitted the request, so fronts call nothing. The storage's change
//! stream says what landed; this says what was asked and answered, which
//! is what an audit needs (reads and refusals change no storage).
//!
//! Off, it costs nothing (the wrapper goes straight to the handler); on,
//! an actor scope and one JSON line per request (see `docs/team.md`).

mod audit;
mod gate;
mod hook_post;
mod hooks;
mod json;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use wirespeed_net::{Error, Exchange, Handler};

pub use audit::Audit;
pub use gate::{CommandGate, UrlGate};
pub use hook_post::{sign, Answer, HookTls, HookUrl, SIGNATURE_HEADER, TIMESTAMP_HEADER};
pub use hooks::{HookConfig, Hooks};
pub use json::Event;

/// Where events go: the audit trail, the hooks, or both.
#[derive(Debug, Default)]
pub struct Events {
    audit: Option<Audit>,
    hooks: Option<Hooks>,
    seq: AtomicU64,
    /// The proxy's user header (`--user-header`, lower case), so that one
    /// sent by a peer that is no trusted proxy is told as ignored.
    user_header: std::sync::OnceLock<String>,
}

impl Events {
    pub fn new(audit: Option<Audit>, hooks: Option<Hooks>) -> Events {
        Events {
            audit,
            hooks,
            seq: AtomicU64::new(0),
            user_header: std::sync::OnceLock::new(),
        }
    }

    /// The audit trail, if on (`serve` reopens its file on SIGHUP).
    pub fn audit(&self) -> Option<&Audit> {
        self.audit.as_ref()
    }

    /// Write everything recorded so far (at a clean stop).
    pub fn flush(&self) {
        if let Some(a) = &self.audit {
            a.flush();
        }
        if let Some(h) = &self.hooks {
            h.flush();
        }
    }

    /// The proxy's user header, named once by the router (`--user-header`).
    pub(crate) fn set_user_header(&self, name: &str) {
        let _ = self.user_header.set(name.to_ascii_lowercase());
    }

    fn write(&self, event: &Event<'_>) {
        let line = event.to_json_line();
        if let Some(a) = &self.audit {
            a.record(&line);
        }
        if let Some(h) = &self.hooks {
            h.send(line);
        }
    }

    /// What the server did by itself (no request, no client): `action` at
    /// `path`, with `extra` saying more.
    pub(crate) fn system(&self, action: &'static str, path: &str, extra: serde_json::Value) {
        self.write(&Event {
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            at: SystemTime::now(),
            action,
            by: None,
            address: None,
            path,
            to: None,
            status: 200,
            bytes_in: 0,
            bytes_out: 0,
            extra: Some(("entry", extra)),
        });
    }

    /// Tell the audit trail and the hooks about one request, after its
    /// handler returned `result`.
    fn after(&self, ex: &Exchange, result: &Result<(), Error>) {
        // The proxy's user header from a peer that is no trusted proxy was
        // ignored (the request went on as its other credentials say): told
        // on its line, and any request carrying it gets one.
        let ignored = self
            .user_header
            .get()
            .filter(|_| !ex.from_trusted_proxy())
            .and_then(|h| ex.header(h))
            .map(|v| {
                String::from_utf8_lossy(v)
                    .chars()
                    .take(256)
                    .collect::<String>()
            });
        let Some(action) = action(ex).or(ignored.as_ref().map(|_| "request")) else {
            return;
        };
        let status = match result {
            Err(e) if ex.response_status() == 0 => e.http_status(),
            _ => ex.response_status(),
        };
        let label = crate::storage::changes::actor();
        let event = Event {
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            at: SystemTime::now(),
            action,
            by: label.as_deref(),
            address: Some(ex.client_ip()),
            path: ex.path(),
            to: matches!(ex.method(), "MOVE" | "COPY")
                .then(|| ex.header_str("destination"))
                .flatten(),
            status,
            bytes_in: ex.body_received(),
            bytes_out: ex.response_bytes(),
            extra: match ignored {
                Some(name) => Some(("ignored_user_header", name.into())),
                None => trash_entry(ex),
            },
        };
        self.write(&event);
    }
}

/// What a request did, by method and route; `None` for what reveals and
/// changes no content (OPTIONS, the page's assets, health, metrics, a
/// resumable upload's offset).
fn action(ex: &Exchange) -> Option<&'static str> {
    let path = ex.path();
    let m = ex.method();
    if let Some(rest) = path.strip_prefix("/-/") {
        return match (m, rest) {
            ("POST", "session") => Some("signin"),
            ("DELETE", "session") | ("POST", "session/sign-out") => Some("signout"),
            (_, r) if r.starts_with("shares") => match m {
                "POST" => Some("share.mint"),
                "DELETE" => Some("share.revoke"),
                _ => Some("share.list"),
            },
            ("GET", r) if r.starts_with("trash") => Some("trash.list"),
            ("POST", "trash") => Some("trash.restore"),
            (_, r) if r.starts_with("uploads/") => match m {
                "POST" => Some("upload.create"),
                "PATCH" => Some("upload.append"),
                "DELETE" => Some("upload.cancel"),
                _ => None,
            },
            _ => None,
        };
    }
    let folder = path.ends_with('/');
    Some(match m {
        "GET" if folder && ex.query().is_some_and(|q| q.contains("archive=")) => "archive",
        "GET" | "PROPFIND" if folder => "list",
        "GET" => "download",
        "PROPFIND" => "stat",
        "PUT" | "POST" => "upload",
        "DELETE" => "delete",
        "MKCOL" => "mkdir",
        "MOVE" => "move",
        "COPY" => "copy",
        "LOCK" => "lock",
        "UNLOCK" => "unlock",
        "PROPPATCH" => "props",
        _ => return None,
    })
}

/// A restore's entry (`?restore=ID`, and `&as=NAME`).
fn trash_entry(ex: &Exchange) -> Option<(&'static str, serde_json::Value)> {
    // The trash's restore route (`trash::PATH`, written out: the trash
    // module tells events of its sweep, not the other way round).
    if ex.method() != "POST" || ex.path() != "/-/trash" {
        return None;
    }
    let mut o = serde_json::Map::new();
    for (k, v) in form_urlencoded::parse(ex.query()?.as_bytes()) {
        match &*k {
            "restore" => o.insert("id".into(), v.into_owned().into()),
            "as" => o.insert("as".into(), v.into_owned().into()),
            _ => None,
        };
    }
    Some(("entry", o.into()))
}

/// A route whose requests are told as events (when `events` is on).
pub struct Recorded<H> {
    pub inner: H,
    pub events: Option<Arc<Events>>,
}

impl<H: Handler> Handler for Recorded<H> {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        let Some(events) = &self.events else {
            return self.inner.handle(ex).await;
        };
        let inner = &self.inner;
        let events = events.clone();
        Box::pin(crate::storage::changes::in_actor_scope(async move {
            let r = inner.handle(ex).await;
            events.after(ex, &r);
            r
        }))
        .await
    }
}
