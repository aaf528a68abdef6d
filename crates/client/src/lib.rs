//! wirespeed's HTTP/1.1 client, on tokio and `wirespeed-proto`.
//!
//! Seed 002 blamed both ends; this is the client end done right:
//!
//! - **Large buffers** (256 KiB read and write by default, [`ClientConfig`]):
//!   few syscalls, full 16 KiB TLS records.
//! - **Content-Length always** for uploads, taken from the file size, and the
//!   file is **streamed from disk**, never held in memory. On plain TCP, a
//!   file body nobody needs to look at goes out with sendfile(2); a body that
//!   must be hashed while sending is read by a helper thread (read + hash on
//!   one core, socket writes on the other) into a ring of recycled buffers.
//! - Downloads stream into a sink; [`Response::write_to_file`] hands full
//!   buffers to a writer thread (write + hash there), the mirror image.
//! - **Keep-alive pool** per (scheme, host, port), idle connections probed
//!   before reuse.
//! - **Typed errors** ([`Error`]) that say what happened: refused
//!   connection, TLS failure, the server's status *and its message*.
//!
//! ```ignore
//! let client = Client::new(ClientConfig::default())?;
//! let url = Url::parse("http://127.0.0.1:8080/data/big.iso")?;
//! let resp = client.send(Request::put(url).body(Body::file(&path)?)).await?.error_for_status().await?;
//! ```

mod conn;
mod early;
mod error;
mod pipeline;
mod prefix;
mod response;
mod send_body;
pub mod stream;
pub mod transfer;
pub mod url;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use error::Error;
pub use pipeline::Pipeline;
pub use response::{terminal_safe, Response};
pub use send_body::{Body, FileBody, Progress};
pub use stream::StreamBody;

/// Sees every byte of a file body as it is sent (hashing). Runs on the
/// reader thread, off the async runtime.
pub type Observer = Box<dyn FnMut(&[u8]) + Send>;
pub use url::Url;
pub use wirespeed_proto::{Limits, ResponseHead};
pub use wirespeed_tls::ClientTls;

use conn::{Conn, PoolKey};

/// Client settings. `Default` gives the production defaults.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Read buffer per connection and per download step (seed 002: 4 KiB
    /// buffers capped throughput at a fraction of the wire).
    pub read_buffer: usize,
    /// Size of each upload write.
    pub write_buffer: usize,
    /// Whom to trust for https://.
    pub tls: ClientTls,
    /// Sent as `Authorization: Bearer …` unless the request sets Authorization.
    pub token: Option<String>,
    /// A user's sign-in, sent as `Authorization: Basic …` (RFC 7617) when
    /// there is no token, unless the request sets Authorization.
    pub basic: Option<BasicAuth>,
    /// TCP connect plus TLS handshake.
    pub connect_timeout: Duration,
    /// Longest wait for any single read or write to make progress.
    pub io_timeout: Duration,
    /// Idle connections kept per (scheme, host, port).
    pub max_idle_per_host: usize,
    /// Use sendfile(2) for plain-TCP file bodies that nothing observes.
    pub sendfile: bool,
    /// Bodies at least this large are sent with `Expect: 100-continue`, so a
    /// refusal (401, 413, …) arrives before gigabytes are sent for nothing.
    pub expect_continue_from: u64,
    /// How long to wait for `100 Continue` before sending the body anyway.
    pub expect_continue_wait: Duration,
    pub user_agent: String,
    /// Limits applied to response heads and chunked framing.
    pub limits: Limits,
    /// TCP congestion control set on our sockets (we send the uploads);
    /// the default leaves the system's.
    pub congestion: wirespeed_io::congestion::Congestion,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            read_buffer: 256 * 1024,
            write_buffer: 256 * 1024,
            tls: ClientTls::default(),
            token: None,
            basic: None,
            connect_timeout: Duration::from_secs(10),
            io_timeout: Duration::from_secs(60),
            max_idle_per_host: 4,
            sendfile: true,
            expect_continue_from: 1024 * 1024,
            expect_continue_wait: Duration::from_secs(1),
            user_agent: concat!("wirespeed/", env!("CARGO_PKG_VERSION")).to_string(),
            limits: Limits::default(),
            congestion: wirespeed_io::congestion::Congestion::system(),
        }
    }
}

/// A request to send.
pub struct Request {
    pub method: String,
    pub url: Url,
    /// Extra headers. Host, Content-Length, Transfer-Encoding and Connection
    /// are the client's business and are ignored here.
    pub headers: Vec<(String, String)>,
    pub body: Body,
    /// Send a large file body after `Expect: 100-continue` is answered (the
    /// default; see [`ClientConfig::expect_continue_from`]).
    pub expect_continue: bool,
}

impl Request {
    pub fn new(method: &str, url: Url) -> Self {
        Request {
            method: method.to_string(),
            url,
            headers: Vec::new(),
            body: Body::empty(),
            expect_continue: true,
        }
    }
    pub fn get(url: Url) -> Self {
        Request::new("GET", url)
    }
    pub fn put(url: Url) -> Self {
        Request::new("PUT", url)
    }
    pub fn delete(url: Url) -> Self {
        Request::new("DELETE", url)
    }
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_string(), value.into()));
        self
    }
    pub fn body(mut self, body: Body) -> Self {
        self.body = body;
        self
    }
    /// Send the body at once, without waiting a round trip for `100
    /// Continue`: for a request whose refusal an earlier exchange already
    /// ruled out (an append to an upload just created).
    pub fn without_expect_continue(mut self) -> Self {
        self.expect_continue = false;
        self
    }
    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

/// The HTTP client: cheap to clone (shares its pool and TLS config).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: ClientConfig,
    tls: Arc<rustls::ClientConfig>,
    pool: Mutex<HashMap<PoolKey, Vec<Conn>>>,
    /// What our connections found of the path to each server (a clean link:
    /// the next connection starts on CUBIC).
    paths: Mutex<HashMap<PoolKey, wirespeed_io::clean_link::PathVerdict>>,
}

impl Client {
    /// A client; fails only if the TLS settings are unusable (unreadable `--cacert`).
    pub fn new(cfg: ClientConfig) -> Result<Client, Error> {
        let tls = wirespeed_tls::client_config(&cfg.tls)?;
        Ok(Client {
            inner: Arc::new(Inner {
                cfg,
                tls,
                pool: Mutex::new(HashMap::new()),
                paths: Mutex::new(HashMap::new()),
            }),
        })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.inner.cfg
    }

    /// Idle pooled connections (all hosts), for tests and diagnostics.
    pub fn idle_connections(&self) -> usize {
        self.inner
            .pool
            .lock()
            .map(|p| p.values().map(Vec::len).sum())
            .unwrap_or(0)
    }

    /// Send a request and read the response head. Any status is a response
    /// here; use [`Response::error_for_status`] to turn >= 400 into an error.
    ///
    /// A reused idle connection that turns out dead before any answer is
    /// replaced by a fresh one once, if the body can be sent again and
    /// either the request never got out whole or its method is idempotent
    /// (a POST that reached the server may have taken effect).
    pub async fn send(&self, mut req: Request) -> Result<Response, Error> {
        let key = PoolKey::of(&req.url);
        let mut conn = match self.take_idle(&key).await {
            Some(c) => c,
            None => self.connect(&req.url).await?,
        };
        loop {
            let reused = conn.reused;
            match self.exchange(&mut conn, &mut req).await {
                Ok(head) => return Response::new(self.clone(), conn, head, &req.method),
                Err(e) if reused && e.retryable && req.body.replayable() => {
                    tracing::debug!(error = %e.error, "reused connection was dead; retrying on a new one");
                    conn = self.connect(&req.url).await?;
                }
                Err(e) => return Err(e.error),
            }
        }
    }

    /// Whether one connection of ours fills the path to `url`'s server, as
    /// the last of them to send found it (a clean link, and only the
    /// network holding the flow back).
    pub(crate) fn one_flow_fills(&self, url: &Url) -> bool {
        self.inner
            .paths
            .lock()
            .ok()
            .and_then(|p| p.get(&PoolKey::of(url)).map(|v| v.one_flow_fills()))
            .unwrap_or(false)
    }

    async fn take_idle(&self, key: &PoolKey) -> Option<Conn> {
        loop {
            let mut conn = {
                let mut pool = self.inner.pool.lock().ok()?;
                pool.get_mut(key)?.pop()?
            };
            if conn.is_alive() {
                return Some(conn);
            }
            tracing::debug!("dropping a closed idle connection");
        }
    }

    pub(crate) fn put_idle(&self, mut conn: Conn) {
        conn.reused = true;
        let max = self.inner.cfg.max_idle_per_host;
        if let Ok(mut pool) = self.inner.pool.lock() {
            let idle = pool.entry(conn.key.clone()).or_default();
            if idle.len() < max {
                idle.push(conn);
            }
        }
    }

    async fn connect(&self, url: &Url) -> Result<Conn, Error> {
        let cfg = &self.inner.cfg;
        tracing::debug!(authority = %url.authority(), "opening a new connection");
        let path = self
            .inner
            .paths
            .lock()
            .map(|mut p| p.entry(PoolKey::of(url)).or_default().clone())
            .unwrap_or_default();
        match tokio::time::timeout(
            cfg.connect_timeout,
            Conn::connect(url, cfg, &self.inner.tls, &path),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout("connecting")),
        }
    }

    /// A request's head as it goes out (`Expect: 100-continue` when
    /// `expect`).
    fn request_head(&self, req: &Request, expect: bool) -> Vec<u8> {
        let cfg = &self.inner.cfg;
        let len = req.body.len();
        let mut head = Vec::with_capacity(512);
        let authority = req.url.authority();
        let len_text = len.to_string();
        let mut h: Vec<(&str, &[u8])> = vec![("Host", authority.as_bytes())];
        if !req.has_header("user-agent") {
            h.push(("User-Agent", cfg.user_agent.as_bytes()));
        }
        let auth;
        if !req.has_header("authorization") {
            if let Some(tok) = &cfg.token {
                auth = format!("Bearer {tok}");
                h.push(("Authorization", auth.as_bytes()));
            } else if let Some(basic) = &cfg.basic {
                auth = basic.header_value();
                h.push(("Authorization", auth.as_bytes()));
            }
        }
        for (n, v) in &req.headers {
            if [
                "host",
                "content-length",
                "transfer-encoding",
                "connection",
                "expect",
            ]
            .iter()
            .any(|x| n.eq_ignore_ascii_case(x))
            {
                continue;
            }
            h.push((n, v.as_bytes()));
        }
        // A body-less GET/DELETE needs no Content-Length; everything else
        // announces its exact length (seed 002: never make the server guess).
        if req.body.is_chunked() {
            h.push(("Transfer-Encoding", b"chunked"));
        } else if len > 0 || !matches!(req.method.as_str(), "GET" | "HEAD" | "DELETE" | "OPTIONS") {
            h.push(("Content-Length", len_text.as_bytes()));
        }
        if expect {
            h.push(("Expect", b"100-continue"));
        }
        wirespeed_proto::write_request_head(&req.method, &req.url.target, &h, &mut head);
        head
    }

    /// Write the request (head, then body), read the response head.
    async fn exchange(&self, conn: &mut Conn, req: &mut Request) -> Result<ResponseHead, Attempt> {
        let cfg = &self.inner.cfg;
        let len = req.body.len();
        let expect = req.expect_continue && len >= cfg.expect_continue_from && req.body.is_file();
        let mut head = self.request_head(req, expect);
        let timeout = cfg.io_timeout;
        // Nothing answered yet: a failure here on a reused connection means it
        // was closed while idle.
        let fresh_fail = |error: Error| Attempt {
            error,
            retryable: true,
        };
        // A small in-memory body rides with the head: one write, one segment.
        let inline = if expect {
            None
        } else {
            req.body.append_small(&mut head, SMALL_BODY)
        };
        conn.write_all(&head, timeout, "sending the request head")
            .await
            .map_err(fresh_fail)?;
        if let Some(n) = inline {
            req.body.report_sent(n);
        }
        if req.body.is_empty() || inline.is_some() {
            // The whole request went out: the server may have acted on it
            // before the connection died, so only an idempotent request may
            // be sent again (a POST must not run twice).
            let idempotent = is_idempotent(&req.method);
            return conn.read_head(cfg, timeout).await.map_err(|e| Attempt {
                retryable: idempotent && matches!(e, Error::NoResponse),
                error: e,
            });
        }
        if expect {
            // Wait briefly for 100 Continue or an early final answer.
            match conn.read_interim(cfg, cfg.expect_continue_wait).await {
                Ok(Some(final_head)) => {
                    // Refused before the body: the server closes or drains;
                    // we cannot reuse a connection whose body we never sent.
                    conn.reusable = false;
                    return Ok(final_head);
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(Attempt {
                        retryable: matches!(e, Error::NoResponse),
                        error: e,
                    })
                }
            }
        }
        let sent = send_body::send_body(conn, &mut req.body, cfg).await;
        if let Ok(Some(early)) = sent {
            // Answered while the body was going out: the rest is not sent,
            // so the connection cannot carry another request.
            conn.reusable = false;
            return Ok(early);
        }
        if let Err(e) = sent {
            // The server may have answered and closed while we were sending
            // (401, 413): its answer beats our broken pipe.
            conn.reusable = false;
            if let Ok(Ok(head)) =
                tokio::time::timeout(Duration::from_secs(2), conn.read_head(cfg, timeout)).await
            {
                return Ok(head);
            }
            return Err(Attempt {
                error: e,
                retryable: false,
            });
        }
        conn.read_head(cfg, timeout).await.map_err(|error| Attempt {
            error,
            retryable: false,
        })
    }
}

/// Methods that may be repeated without changing the outcome (RFC 9110
/// §9.2.2; POST and PATCH are not).
fn is_idempotent(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE"
    )
}

/// A failed attempt, and whether it may be retried on a fresh connection.
struct Attempt {
    error: Error,
    retryable: bool,
}

/// Request bodies up to this size that are already in memory go out in the
/// same write as the head (the server's small-file answers do the same).
const SMALL_BODY: usize = 64 * 1024;

/// A user name and password for HTTP Basic; its `Debug` never shows the
/// password.
#[derive(Clone)]
pub struct BasicAuth {
    pub user: String,
    pub password: String,
}

impl BasicAuth {
    /// `Basic BASE64(user:password)`.
    pub fn header_value(&self) -> String {
        use base64::Engine as _;
        let raw = format!("{}:{}", self.user, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicAuth")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}
