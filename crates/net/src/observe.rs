//! Hooks for whoever watches the server (metrics, access logs): the server
//! calls an [`Observer`] at connection open and close, when an exchange
//! completes, on a flush storm and on a timeout. The trait keeps this crate
//! free of any metrics library; `wirespeed-service` implements it.

use std::net::SocketAddr;
use std::time::Duration;

/// Which deadline expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Timeout {
    /// A started request head did not complete in time (slowloris).
    Head,
    /// The next piece of a request body did not arrive in time.
    Body,
    /// The peer did not accept response bytes (or 100 Continue) in time.
    Write,
    /// A kept-alive connection sat idle between requests (a clean close).
    Idle,
}

impl Timeout {
    /// A short label for metrics (`head`, `body`, `write`, `idle`).
    pub fn as_str(self) -> &'static str {
        match self {
            Timeout::Head => "head",
            Timeout::Body => "body",
            Timeout::Write => "write",
            Timeout::Idle => "idle",
        }
    }
}

impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Timeout::Head => "waiting for the request head",
            Timeout::Body => "reading the request body",
            Timeout::Write => "writing the response",
            Timeout::Idle => "waiting for the next request",
        })
    }
}

/// One finished request, as reported to [`Observer::exchange_done`].
#[derive(Debug, Clone, Copy)]
pub struct Completed<'a> {
    /// The request method; `-` for a request refused before its head parsed.
    pub method: &'a str,
    /// The request target's path, without the query (which may carry secrets).
    pub path: &'a str,
    /// The class the handler put the request in ([`crate::Exchange::set_class`]),
    /// `other` if none.
    pub class: &'static str,
    /// The status answered; 499 when the peer left before any answer.
    pub status: u16,
    /// Request body bytes received (including any drained after the answer).
    pub bytes_in: u64,
    /// Response body bytes sent (framing and head not counted).
    pub bytes_out: u64,
    /// From the parsed head to the end of the exchange.
    pub duration: Duration,
    /// The TCP peer.
    pub peer: SocketAddr,
    /// The client per a trusted proxy's `X-Forwarded-For`, when the peer is
    /// one (`ServerConfig::trusted_proxies`); `None` otherwise.
    pub forwarded_for: Option<std::net::IpAddr>,
    pub user_agent: Option<&'a str>,
}

/// Watches the server. Every method is called on the connection's task and
/// must be cheap (atomics, not locks or I/O it waits on).
pub trait Observer: Send + Sync + std::fmt::Debug + 'static {
    /// A connection was accepted and set up (after any TLS handshake).
    fn connection_opened(&self) {}
    /// That connection closed.
    fn connection_closed(&self) {}
    /// A request was answered (or given up on).
    fn exchange_done(&self, _done: &Completed<'_>) {}
    /// A streamed response went out as many tiny writes.
    fn flush_storm(&self) {}
    /// A deadline expired.
    fn timeout(&self, _kind: Timeout) {}
}

/// Calls `connection_closed` when dropped, so every exit path of a
/// connection task (including an abort at shutdown) closes what it opened.
pub(crate) struct ConnectionGuard(Option<std::sync::Arc<dyn Observer>>);

impl ConnectionGuard {
    pub(crate) fn open(observer: Option<&std::sync::Arc<dyn Observer>>) -> Self {
        if let Some(o) = observer {
            o.connection_opened();
        }
        ConnectionGuard(observer.cloned())
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        if let Some(o) = &self.0 {
            o.connection_closed();
        }
    }
}
