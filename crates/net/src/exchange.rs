//! One request/response pair on a connection, as handed to a handler: the
//! request head, its body (`request_body.rs`) and the response
//! (`writer.rs`), plus what happens after the handler returns.

use std::fs::File;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncWrite, Interest};
use wirespeed_proto::{reason_phrase, BodyFraming, RequestHead};

use crate::conn::Conn;
use crate::request_body::{FileBodyError, RequestBody};
use crate::response::Response;
use crate::writer::{BodyWriter, ResponseWriter};
use crate::{Completed, Error, ServerConfig, Timeout};

/// One request and its response. Handlers read the request head and body and
/// answer exactly once: [`send`](Self::send), [`send_file`](Self::send_file) or
/// [`writer`](Self::writer).
pub struct Exchange {
    conn: Conn,
    head: RequestHead,
    framing: BodyFraming,
    body: RequestBody,
    out: ResponseWriter,
    route: Arc<str>,
    /// The handler's label for this request in metrics ([`Self::set_class`]).
    class: &'static str,
    started: Instant,
    /// The client behind a trusted proxy, and the scheme it used (if said).
    forwarded: Option<(IpAddr, Option<&'static str>)>,
    /// Bytes of the path that are the server's path prefix (`mount.rs`).
    base_len: usize,
}

impl Exchange {
    pub(crate) fn new(conn: Conn, head: RequestHead, framing: BodyFraming) -> Self {
        let body = RequestBody::new(&head, framing, &conn);
        let out = ResponseWriter::new(head.version(), head.method() == "HEAD", head.keep_alive());
        let forwarded = forwarded(&conn, &head);
        Exchange {
            forwarded,
            conn,
            framing,
            body,
            out,
            route: unrouted(),
            class: "other",
            started: Instant::now(),
            head,
            base_len: 0,
        }
    }

    pub(crate) fn into_conn(mut self) -> Conn {
        // Paces belong to one request's principal, never to the next request.
        self.conn.pacing = Default::default();
        self.conn
    }

    /// Pace this exchange's bodies: `down` the response's bytes, `up` the
    /// request's (each a set of buckets shared with other connections).
    /// Every body path consults them: sendfile, the copy loops, streamed
    /// writes, body reads and the splice receive.
    pub fn set_pacing(&mut self, down: Option<wirespeed_io::Pace>, up: Option<wirespeed_io::Pace>) {
        self.conn.pacing = crate::conn::Pacing { down, up };
    }

    // ---- request side -------------------------------------------------

    pub fn head(&self) -> &RequestHead {
        &self.head
    }

    pub fn method(&self) -> &str {
        self.head.method()
    }

    /// The request target's path part (still percent-encoded), below the
    /// server's path prefix if it has one ([`base`](Self::base)).
    pub fn path(&self) -> &str {
        self.head.path().get(self.base_len..).unwrap_or("/")
    }

    /// The server's path prefix (`/files`, no trailing slash), or `""` at
    /// the root: every URL a handler makes starts with it.
    pub fn base(&self) -> &str {
        self.head.path().get(..self.base_len).unwrap_or("")
    }

    /// 301 to `path` with this request's query kept (a folder asked without
    /// its `/`, a prefix without its `/`); `text` is the plain-text body.
    pub async fn send_moved(&mut self, mut path: String, text: &[u8]) -> Result<(), Error> {
        if let Some(q) = self.query() {
            path.push('?');
            path.push_str(q);
        }
        let resp = Response::new(301)
            .header("Location", path)
            .header("Content-Type", "text/plain; charset=utf-8");
        self.send(resp, text).await
    }

    /// Strip the first `at` bytes of the path as the prefix ([`crate::Mount`]).
    pub(crate) fn mount_at(&mut self, at: usize) {
        if self.head.path().is_char_boundary(at) {
            self.base_len = at;
        }
    }

    /// The query string after `?`, if any (still percent-encoded).
    pub fn query(&self) -> Option<&str> {
        self.head.query()
    }

    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.head.header(name)
    }

    /// A header as UTF-8 text (None if absent or not UTF-8).
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.head
            .header(name)
            .and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Resolves once the client has closed the connection (a browser that
    /// gave up on an image it no longer shows), so a handler waiting on slow
    /// work can drop it: the socket has seen the peer's FIN or a reset. Over
    /// TLS too, where the socket is only watched (its bytes belong to the
    /// TLS stream): a client's `close_notify` waits unread before its FIN,
    /// and the kernel still says the read side closed. Never resolves on a
    /// transport without a socket.
    pub async fn peer_gone(&mut self) {
        let Some(tcp) = self.conn.io.socket() else {
            return std::future::pending().await;
        };
        loop {
            match tcp.ready(Interest::READABLE).await {
                Ok(ready) if !ready.is_read_closed() => {}
                _ => return,
            }
            // Bytes wait (a next request, a TLS record) but the peer is
            // still there: forget this readiness so the next wait sleeps
            // until the socket changes again (a FIN, a reset, more bytes)
            // instead of spinning. Only the readiness seen here is cleared.
            let _ = tcp.try_io(Interest::READABLE, || {
                Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
            });
        }
    }

    pub fn peer_addr(&self) -> SocketAddr {
        self.conn.peer
    }

    /// The client's address: the peer's, or behind a trusted proxy the one
    /// its `X-Forwarded-For` names (`ServerConfig::trusted_proxies`).
    pub fn client_ip(&self) -> IpAddr {
        self.forwarded.map_or(self.conn.peer.ip(), |(ip, _)| ip)
    }

    /// Request body bytes read so far.
    pub fn body_received(&self) -> u64 {
        self.body.bytes_read()
    }

    /// Response body bytes sent so far.
    pub fn response_bytes(&self) -> u64 {
        self.out.body_sent()
    }

    /// Whether the peer is a `--trusted-proxy` (whose headers that speak
    /// for the client are believed).
    pub fn from_trusted_proxy(&self) -> bool {
        self.forwarded.is_some()
    }

    /// `http` or `https` as a trusted proxy's `X-Forwarded-Proto` says;
    /// `None` from anyone else or without the field.
    pub fn forwarded_proto(&self) -> Option<&'static str> {
        self.forwarded.and_then(|(_, proto)| proto)
    }

    pub fn config(&self) -> &ServerConfig {
        &self.conn.cfg
    }

    pub fn body_framing(&self) -> BodyFraming {
        self.framing
    }

    /// The declared body length, if the body is Content-Length framed.
    pub fn content_length(&self) -> Option<u64> {
        match self.framing {
            BodyFraming::Length(n) => Some(n),
            BodyFraming::Empty => Some(0),
            _ => None,
        }
    }

    /// Name of the route that matched (set by the router; used in logs).
    pub fn route(&self) -> &str {
        &self.route
    }

    pub(crate) fn set_route(&mut self, route: Arc<str>) {
        self.route = route;
    }

    /// Put this request in a class for metrics (a small fixed set chosen by
    /// the handler, e.g. `files`, `upload`); `other` until set.
    pub fn set_class(&mut self, class: &'static str) {
        self.class = class;
    }

    /// The class set by [`set_class`](Self::set_class).
    pub fn class(&self) -> &'static str {
        self.class
    }

    /// Refuse bodies larger than `max`: 413 at once if the declared length is
    /// larger, otherwise 413 from `read_body` as soon as a chunked body crosses it.
    pub fn limit_body(&mut self, max: u64) -> Result<(), Error> {
        self.body.set_limit(max)
    }

    /// Body bytes read so far.
    pub fn body_bytes_read(&self) -> u64 {
        self.body.bytes_read()
    }

    /// Whether the whole request body has been read.
    pub fn body_done(&self) -> bool {
        self.body.is_done()
    }

    /// The next piece of the request body, lent from the connection buffer
    /// (zero copy), or `None` at the end. Sends `100 Continue` first if the
    /// client asked for it.
    pub async fn read_body(&mut self) -> Result<Option<&[u8]>, Error> {
        let started = self.out.started();
        let r = self.body.read(&mut self.conn, started).await;
        if r.is_err() {
            // Where the body stands is unknown: never read it as a request.
            self.out.keep_alive = false;
        }
        r
    }

    /// Copy the rest of the body into `w` (straight from the connection
    /// buffer, which grows to `ServerConfig::body_buffer` for large bodies).
    pub async fn copy_body_to<W: AsyncWrite + Unpin + ?Sized>(
        &mut self,
        w: &mut W,
    ) -> Result<u64, Error> {
        use tokio::io::AsyncWriteExt;
        let mut total = 0;
        while let Some(piece) = self.read_body().await? {
            total += piece.len() as u64;
            w.write_all(piece).await?;
        }
        Ok(total)
    }

    /// Read the whole body into memory, refusing more than `max` bytes (413).
    /// For small bodies only (forms, JSON commands); files stream.
    pub async fn read_body_to_vec(&mut self, max: usize) -> Result<Vec<u8>, Error> {
        let mut v = Vec::new();
        while let Some(piece) = self.read_body().await? {
            if v.len() + piece.len() > max {
                self.out.keep_alive = false;
                return Err(wirespeed_proto::ProtoError::BodyTooLarge.into());
            }
            v.extend_from_slice(piece);
        }
        Ok(v)
    }

    /// Zero-copy receive: move the rest of a Content-Length body on plain
    /// TCP into `file` at its current position (splice(2) socket → file,
    /// after one write of what is already buffered); `stored` hears each
    /// step's byte count. `Ok(None)` when this path does not apply (TLS, a
    /// chunked body): nothing was consumed, read with
    /// [`read_body`](Self::read_body) instead. After a failure the
    /// connection closes.
    pub async fn receive_body_into(
        &mut self,
        file: &File,
        stored: impl FnMut(u64),
    ) -> Result<Option<u64>, FileBodyError> {
        let started = self.out.started();
        let r = self
            .body
            .receive_into_file(&mut self.conn, file, started, stored)
            .await;
        if r.is_err() {
            self.out.keep_alive = false;
        }
        r
    }

    /// Send `100 Continue` now if the client waits for it (for handlers
    /// that will read the body through another path).
    pub async fn accept_body(&mut self) -> Result<(), Error> {
        let started = self.out.started();
        self.body.send_continue(&mut self.conn, started).await
    }

    /// Send an informational (1xx) response now, before the final one:
    /// e.g. `104 Upload Resumption Supported` with the upload's `Location`.
    /// Any number may be sent; none counts as the response (a pending
    /// `100 Continue` is still sent on the first body read). Not sent to an
    /// HTTP/1.0 client (RFC 9110 §15.2), nor once the final response has
    /// started; 101 and statuses outside 1xx are refused.
    pub async fn send_interim(
        &mut self,
        status: u16,
        fields: &[(&str, &str)],
    ) -> Result<(), Error> {
        if !(100..200).contains(&status) || status == 101 {
            return Err(Error::status(
                500,
                "an interim response needs a 1xx status other than 101",
            ));
        }
        if self.out.started() || self.head.version() == wirespeed_proto::Version::Http10 {
            return Ok(());
        }
        let mut head = Vec::with_capacity(128);
        wirespeed_proto::write::write_status_line(self.head.version(), status, &mut head);
        for (name, value) in fields {
            wirespeed_proto::write::push_field(&mut head, name, value.as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        let io = &mut self.conn.io;
        let r = crate::io::deadline(self.conn.cfg.write_timeout, crate::Timeout::Write, async {
            crate::io::write_all_vectored(io, &mut [std::io::IoSlice::new(&head)]).await?;
            crate::io::flush(io).await
        })
        .await;
        if r.is_err() {
            self.out.keep_alive = false;
        }
        r
    }

    /// Close the connection after this response, whatever the request said.
    pub fn close_after_response(&mut self) {
        self.out.keep_alive = false;
    }

    // ---- response side ------------------------------------------------

    /// Whether a response has been started (head sent or writer opened).
    pub fn response_started(&self) -> bool {
        self.out.started()
    }

    /// The status of the response (0 before one is started).
    pub fn response_status(&self) -> u16 {
        self.out.status()
    }

    /// Decide persistence before a head goes out.
    fn before_answer(&mut self) {
        if *self.conn.stop.borrow() {
            self.out.keep_alive = false;
        }
        // A client still waiting for 100-continue may or may not send the body
        // now; a body bigger than we would drain keeps the connection useless.
        if self.body.continue_pending() {
            self.out.keep_alive = false;
        }
        if self
            .body
            .remaining()
            .is_some_and(|n| n > self.conn.cfg.drain_limit)
        {
            self.out.keep_alive = false;
        }
    }

    /// Answer with a complete body (Content-Length framed, one `writev`).
    pub async fn send(&mut self, resp: Response, body: &[u8]) -> Result<(), Error> {
        self.before_answer();
        self.out.send(&mut self.conn, resp, body).await
    }

    /// Answer with a short plain-text message (errors and simple replies).
    pub async fn send_text(&mut self, status: u16, text: &str) -> Result<(), Error> {
        let mut body = String::with_capacity(text.len() + 1);
        body.push_str(text);
        body.push('\n');
        let resp = Response::new(status).header("Content-Type", "text/plain; charset=utf-8");
        self.send(resp, body.as_bytes()).await
    }

    /// Answer with `len` bytes of `file` from `offset`: the head in one write,
    /// then sendfile(2) or a large-buffer read/write loop, as
    /// [`ServerConfig::file_send`](crate::ServerConfig) says (TLS always loops).
    pub async fn send_file(
        &mut self,
        resp: Response,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        self.before_answer();
        self.out
            .send_file(&mut self.conn, resp, file, offset, len)
            .await
    }

    /// Open a buffered body writer (see [`BodyWriter`]).
    pub fn writer(&mut self, resp: Response) -> Result<BodyWriter<'_>, Error> {
        self.open_writer(resp, None)
    }

    /// Like [`writer`](Self::writer), for a body of exactly `len` bytes:
    /// Content-Length framing (a HEAD answer then carries the length
    /// without any body being produced).
    pub fn writer_sized(&mut self, resp: Response, len: u64) -> Result<BodyWriter<'_>, Error> {
        self.open_writer(resp, Some(len))
    }

    fn open_writer(&mut self, resp: Response, len: Option<u64>) -> Result<BodyWriter<'_>, Error> {
        self.before_answer();
        let cfg = &self.conn.cfg;
        self.out
            .open_stream(resp, cfg.write_buffer, cfg.flush_policy)?;
        if let Some(len) = len {
            self.out.stream_length(len)?;
        }
        Ok(BodyWriter {
            conn: &mut self.conn,
            w: &mut self.out,
            route: &self.route,
        })
    }

    // ---- end of the exchange ------------------------------------------

    /// Complete the exchange after the handler returned: answer errors, finish
    /// an open body, drain an unread request body. Returns whether the
    /// connection can carry another request.
    pub(crate) async fn complete(&mut self, result: Result<(), Error>) -> bool {
        let reuse = self.settle(result).await;
        self.report();
        reuse
    }

    /// Tell the observer, if any, how this exchange went.
    fn report(&self) {
        let Some(o) = &self.conn.cfg.observer else {
            return;
        };
        o.exchange_done(&Completed {
            method: self.method(),
            path: self.head.path(),
            class: self.class,
            status: match self.out.status() {
                0 => 499,
                s => s,
            },
            bytes_in: self.body.bytes_read(),
            bytes_out: self.out.body_sent(),
            duration: self.started.elapsed(),
            peer: self.conn.peer,
            forwarded_for: self.forwarded.map(|(ip, _)| ip),
            user_agent: self.header_str("user-agent"),
        });
    }

    async fn settle(&mut self, result: Result<(), Error>) -> bool {
        let result = match result {
            Ok(()) => self.out.finish(&mut self.conn, &self.route).await,
            Err(e) => Err(e),
        };
        if let Err(Error::Timeout(kind)) = &result {
            report_timeout(&self.conn.cfg, *kind);
        }
        if let Err(e) = result {
            if e.is_connection_lost() {
                return false;
            }
            tracing::debug!(peer = %self.conn.peer, route = %self.route, error = %e, "request failed");
            // A writer opened whose head never left: the error can still be
            // answered properly instead of closing silently.
            self.out.abandon_unsent();
            if self.out.started() {
                // Mid-body failure: closing is the only honest signal left.
                return false;
            }
            let status = e.http_status();
            if matches!(
                e,
                Error::Proto(_) | Error::Timeout(_) | Error::UnexpectedEof
            ) {
                self.out.keep_alive = false;
            }
            let message = if status >= 500 && !matches!(e, Error::Status { .. }) {
                reason_phrase(status).to_string()
            } else {
                e.to_string()
            };
            // 507 (storage full) is an expected answer that the service
            // reports itself; the access line records it too.
            if status >= 500 && status != 507 {
                tracing::error!(peer = %self.conn.peer, route = %self.route, error = %e, "request failed");
            }
            if self.send_text(status, &message).await.is_err() {
                return false;
            }
        } else if !self.out.started() {
            tracing::error!(route = %self.route, "handler returned without responding");
            if self
                .send_text(500, "handler produced no response")
                .await
                .is_err()
            {
                return false;
            }
        }
        if !self.out.keep_alive {
            return false;
        }
        let limit = self.conn.cfg.drain_limit;
        self.body.drain(&mut self.conn, limit).await
    }
}

/// Count an expired deadline.
pub(crate) fn report_timeout(cfg: &ServerConfig, kind: Timeout) {
    if let Some(o) = &cfg.observer {
        o.timeout(kind);
    }
}

/// Report a request refused before it became an exchange (unparsable head,
/// bad framing, head timeout).
pub(crate) fn report_rejected(conn: &Conn, e: &Error) {
    let Some(o) = &conn.cfg.observer else {
        return;
    };
    if let Error::Timeout(kind) = e {
        o.timeout(*kind);
    }
    o.exchange_done(&Completed {
        method: "-",
        path: "-",
        class: "other",
        status: e.http_status(),
        bytes_in: 0,
        bytes_out: 0,
        duration: Duration::ZERO,
        peer: conn.peer,
        forwarded_for: None,
        user_agent: None,
    });
}

/// Route label of requests that did not go through a [`crate::Router`].
fn unrouted() -> Arc<str> {
    static UNROUTED: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    UNROUTED.get_or_init(|| Arc::from("(unrouted)")).clone()
}

/// The client address and scheme a trusted proxy forwarded, if the peer is one.
fn forwarded(conn: &Conn, head: &RequestHead) -> Option<(IpAddr, Option<&'static str>)> {
    let proxies = &conn.cfg.trusted_proxies;
    if proxies.is_empty() || !proxies.contains(conn.peer.ip()) {
        return None;
    }
    let ip = wirespeed_proto::forwarded::client_addr(
        conn.peer.ip(),
        head.header_all("x-forwarded-for"),
        |ip| proxies.contains(ip),
    );
    let proto = wirespeed_proto::forwarded::client_proto(true, head.header("x-forwarded-proto"));
    Some((ip, proto))
}
