//! One request/response pair on a connection, as handed to a handler.

use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::AsyncWrite;
use wirespeed_proto::{
    chunk_head, reason_phrase, BodyFraming, RequestHead, Version, CHUNK_END, LAST_CHUNK,
};

use crate::body::BodyState;
use crate::io::{deadline, flush, write_all_vectored, ReadBuf, Transport};
use crate::writer::{first_storm_on_route, is_flush_storm, BodyWriter, OutMode, OutState};
use crate::{Error, ServerConfig};

/// The connection a request arrived on: the byte stream, its read buffer
/// (which may already hold the next pipelined request), and the settings.
pub(crate) struct Conn {
    pub io: Box<dyn Transport>,
    pub rbuf: ReadBuf,
    pub cfg: Arc<ServerConfig>,
    pub peer: SocketAddr,
    /// Becomes true when the server shuts down: answers then say `Connection: close`.
    pub stop: tokio::sync::watch::Receiver<bool>,
}

/// A response head under construction: status and headers, set once.
/// Framing headers (Content-Length, Transfer-Encoding) and Date/Connection are
/// added by the server; a handler never writes them. Header lines are encoded
/// as they are added, into one buffer (one allocation per response head
/// instead of one per name and value).
#[derive(Debug, Clone)]
pub struct Response {
    status: u16,
    /// `Name: value\r\n` lines, sanitized.
    fields: Vec<u8>,
}

impl Response {
    pub fn new(status: u16) -> Self {
        Response {
            status,
            fields: Vec::new(),
        }
    }

    /// Add a header (builder style).
    pub fn header(mut self, name: impl AsRef<str>, value: impl AsRef<[u8]>) -> Self {
        self.add_header(name, value);
        self
    }

    /// Add a header. Framing headers are ignored: the server owns framing.
    pub fn add_header(&mut self, name: impl AsRef<str>, value: impl AsRef<[u8]>) {
        let name = name.as_ref();
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            tracing::debug!(%name, "framing header set by a handler ignored");
            return;
        }
        if self.fields.capacity() == 0 {
            self.fields.reserve(256);
        }
        wirespeed_proto::head::push_field(&mut self.fields, name, value.as_ref());
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    /// The value of the first header called `name` (as encoded).
    pub fn get_header(&self, name: &str) -> Option<&[u8]> {
        self.fields.split(|&b| b == b'\n').find_map(|line| {
            let line = line.strip_suffix(b"\r")?;
            let colon = line.iter().position(|&b| b == b':')?;
            line[..colon]
                .eq_ignore_ascii_case(name.as_bytes())
                .then(|| {
                    line[colon + 1..]
                        .strip_prefix(b" ")
                        .unwrap_or(&line[colon + 1..])
                })
        })
    }
}

/// How a response head announces its body.
#[derive(Clone, Copy)]
enum HeadFraming {
    Length(u64),
    Chunked,
    /// No framing header: a status without body, or an HTTP/1.0 body ended by close.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RespState {
    NotStarted,
    /// Head sent, or a body writer is open.
    Started,
    Done,
}

/// One request and its response. Handlers read the request head and body and
/// answer exactly once: [`send`](Self::send), [`send_file`](Self::send_file) or
/// [`writer`](Self::writer).
pub struct Exchange {
    pub(crate) conn: Conn,
    head: RequestHead,
    framing: BodyFraming,
    body: BodyState,
    body_read: u64,
    body_limit: Option<u64>,
    continue_pending: bool,
    resp: RespState,
    pub(crate) out: Option<OutState>,
    /// The head of a writer's response, held back until framing is known.
    pending_head: Option<Response>,
    keep_alive: bool,
    is_head: bool,
    route: Arc<str>,
    status: u16,
}

impl Exchange {
    pub(crate) fn new(conn: Conn, head: RequestHead, framing: BodyFraming) -> Self {
        let body = BodyState::new(framing, &conn.cfg.limits);
        let continue_pending = head.expects_continue() && !body.is_done();
        let keep_alive = head.keep_alive();
        let is_head = head.method() == "HEAD";
        Exchange {
            conn,
            framing,
            body,
            body_read: 0,
            body_limit: None,
            continue_pending,
            resp: RespState::NotStarted,
            out: None,
            pending_head: None,
            keep_alive,
            is_head,
            route: unrouted(),
            status: 0,
            head,
        }
    }

    pub(crate) fn into_conn(self) -> Conn {
        self.conn
    }

    // ---- request side -------------------------------------------------

    pub fn head(&self) -> &RequestHead {
        &self.head
    }

    pub fn method(&self) -> &str {
        self.head.method()
    }

    /// The request target's path part (still percent-encoded).
    pub fn path(&self) -> &str {
        let t = self.head.target();
        t.split_once('?').map_or(t, |(p, _)| p)
    }

    /// The query string after `?`, if any (still percent-encoded).
    pub fn query(&self) -> Option<&str> {
        self.head.target().split_once('?').map(|(_, q)| q)
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

    pub fn peer_addr(&self) -> SocketAddr {
        self.conn.peer
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

    /// Refuse bodies larger than `max`: 413 at once if the declared length is
    /// larger, otherwise 413 from `read_body` as soon as a chunked body crosses it.
    pub fn limit_body(&mut self, max: u64) -> Result<(), Error> {
        self.body_limit = Some(max);
        match self.framing {
            BodyFraming::Length(n) if n > max => {
                Err(wirespeed_proto::ProtoError::BodyTooLarge.into())
            }
            _ => Ok(()),
        }
    }

    /// Body bytes read so far.
    pub fn body_bytes_read(&self) -> u64 {
        self.body_read
    }

    /// Whether the whole request body has been read.
    pub fn body_done(&self) -> bool {
        self.body.is_done()
    }

    async fn send_continue(&mut self) -> Result<(), Error> {
        self.continue_pending = false;
        if self.resp != RespState::NotStarted {
            return Ok(());
        }
        let io = &mut self.conn.io;
        let t = self.conn.cfg.write_timeout;
        deadline(t, "sending 100 Continue", async {
            write_all_vectored(io, &mut [IoSlice::new(b"HTTP/1.1 100 Continue\r\n\r\n")]).await?;
            flush(io).await
        })
        .await
    }

    /// The next piece of the request body, lent from the connection buffer
    /// (zero copy), or `None` at the end. Sends `100 Continue` first if the
    /// client asked for it.
    pub async fn read_body(&mut self) -> Result<Option<&[u8]>, Error> {
        if self.continue_pending {
            self.send_continue().await?;
        }
        let cap = self.conn.cfg.body_buffer;
        let timeout = self.conn.cfg.body_timeout;
        loop {
            match &mut self.body {
                BodyState::Done => return Ok(None),
                BodyState::Length { remaining } => {
                    if self.conn.rbuf.is_empty() {
                        // Only a body larger than the buffer earns the big
                        // buffer (shrunk again after the exchange).
                        if *remaining > self.conn.rbuf.capacity() as u64 {
                            self.conn.rbuf.ensure_capacity(cap);
                        }
                        let n = deadline(
                            timeout,
                            "reading the request body",
                            self.conn.rbuf.fill(&mut self.conn.io, cap),
                        )
                        .await?;
                        if n == Some(0) {
                            return Err(Error::UnexpectedEof);
                        }
                        continue;
                    }
                    let take = (*remaining).min(self.conn.rbuf.len() as u64) as usize;
                    *remaining -= take as u64;
                    if *remaining == 0 {
                        self.body = BodyState::Done;
                    }
                    let from = self.conn.rbuf.start();
                    self.conn.rbuf.consume(take);
                    self.count_body(take as u64)?;
                    return Ok(Some(self.conn.rbuf.slice(from, from + take)));
                }
                BodyState::Chunked(dec) => {
                    if !self.conn.rbuf.is_empty() {
                        let from = self.conn.rbuf.start();
                        let d = dec.decode(self.conn.rbuf.data())?;
                        self.conn.rbuf.consume(d.consumed);
                        if d.done {
                            self.body = BodyState::Done;
                        }
                        if !d.data.is_empty() {
                            self.count_body(d.data.len() as u64)?;
                            return Ok(Some(
                                self.conn.rbuf.slice(from + d.data.start, from + d.data.end),
                            ));
                        }
                        if d.done {
                            return Ok(None);
                        }
                        if d.consumed > 0 {
                            continue;
                        }
                    }
                    self.conn.rbuf.ensure_capacity(cap);
                    match deadline(
                        timeout,
                        "reading the request body",
                        self.conn.rbuf.fill(&mut self.conn.io, cap),
                    )
                    .await?
                    {
                        Some(0) => return Err(Error::UnexpectedEof),
                        Some(_) => {}
                        // Unreachable in practice: the decoder consumes all
                        // framing bytes it is given (keeping split lines in its
                        // own bounded state), so the buffer never fills with
                        // unconsumed framing. Refuse rather than spin.
                        None => return Err(wirespeed_proto::ProtoError::InvalidChunkSize.into()),
                    }
                }
            }
        }
    }

    fn count_body(&mut self, n: u64) -> Result<(), Error> {
        self.body_read += n;
        match self.body_limit {
            Some(max) if self.body_read > max => {
                self.keep_alive = false;
                Err(wirespeed_proto::ProtoError::BodyTooLarge.into())
            }
            _ => Ok(()),
        }
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
                self.keep_alive = false;
                return Err(wirespeed_proto::ProtoError::BodyTooLarge.into());
            }
            v.extend_from_slice(piece);
        }
        Ok(v)
    }

    /// Plain-TCP access for zero-copy body reception (splice): the bytes of
    /// the body already buffered, and the socket. Only for a Content-Length
    /// body; the caller then reports what it consumed with
    /// [`body_consumed_raw`](Self::body_consumed_raw).
    pub fn raw_body_parts(&mut self) -> Option<(&[u8], &tokio::net::TcpStream, u64)> {
        let BodyState::Length { remaining } = self.body else {
            return None;
        };
        let tcp = self.conn.io.plain_tcp()?;
        let buffered = self.conn.rbuf.data();
        let n = (buffered.len() as u64).min(remaining) as usize;
        Some((&buffered[..n], tcp, remaining))
    }

    /// Account for `buffered` bytes taken from the buffer and `from_socket`
    /// bytes moved straight off the socket by a zero-copy path.
    pub fn body_consumed_raw(&mut self, buffered: usize, from_socket: u64) -> Result<(), Error> {
        if self.continue_pending {
            self.continue_pending = false;
        }
        let BodyState::Length { remaining } = &mut self.body else {
            return Ok(());
        };
        let total = buffered as u64 + from_socket;
        if total > *remaining || buffered > self.conn.rbuf.len() {
            return Err(Error::status(
                500,
                "zero-copy body accounting went past the body",
            ));
        }
        *remaining -= total;
        if *remaining == 0 {
            self.body = BodyState::Done;
        }
        self.conn.rbuf.consume(buffered);
        self.count_body(total)
    }

    /// Close the connection after this response, whatever the request said.
    /// For handlers that lost track of the request body (e.g. a zero-copy
    /// receive that failed midway), where reusing the connection would read
    /// body bytes as the next request.
    pub fn close_after_response(&mut self) {
        self.keep_alive = false;
    }

    /// Send `100 Continue` now if the client waits for it (zero-copy
    /// receivers call this before reading the socket themselves).
    pub async fn accept_body(&mut self) -> Result<(), Error> {
        if self.continue_pending {
            self.send_continue().await?;
        }
        Ok(())
    }

    // ---- response side ------------------------------------------------

    /// Whether a response has been started (head sent or writer opened).
    pub fn response_started(&self) -> bool {
        self.resp != RespState::NotStarted
    }

    /// The status of the response (0 before one is started).
    pub fn response_status(&self) -> u16 {
        self.status
    }

    fn start(&mut self, status: u16) -> Result<(), Error> {
        if self.resp != RespState::NotStarted {
            return Err(Error::status(500, "response already started"));
        }
        self.resp = RespState::Started;
        self.status = status;
        if *self.conn.stop.borrow() {
            self.keep_alive = false;
        }
        // A client still waiting for 100-continue may or may not send the body
        // now; a body bigger than we would drain keeps the connection useless.
        if self.continue_pending {
            self.keep_alive = false;
        }
        if let BodyState::Length { remaining } = self.body {
            if remaining > self.conn.cfg.drain_limit {
                self.keep_alive = false;
            }
        }
        Ok(())
    }

    fn encode_head(&self, resp: &Response, framing: HeadFraming) -> Vec<u8> {
        self.encode_head_with(resp, framing, 0)
    }

    /// The response head, in a buffer with room for `extra` more bytes (a
    /// small body sent along in the same write).
    fn encode_head_with(&self, resp: &Response, framing: HeadFraming, extra: usize) -> Vec<u8> {
        use std::io::Write as _;
        let version = self.head.version();
        let mut out = Vec::with_capacity(160 + resp.fields.len() + extra);
        wirespeed_proto::head::write_status_line(version, resp.status, &mut out);
        out.extend_from_slice(b"Date: ");
        out.extend_from_slice(&http_date());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&resp.fields);
        match framing {
            HeadFraming::Length(n) => {
                // Writing into a Vec cannot fail.
                let _ = write!(out, "Content-Length: {n}\r\n");
            }
            HeadFraming::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            HeadFraming::None => {}
        }
        if !self.keep_alive {
            out.extend_from_slice(b"Connection: close\r\n");
        } else if version == Version::Http10 {
            out.extend_from_slice(b"Connection: keep-alive\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    async fn write_slices(&mut self, slices: &mut [IoSlice<'_>]) -> Result<(), Error> {
        let io = &mut self.conn.io;
        deadline(self.conn.cfg.write_timeout, "writing the response", async {
            write_all_vectored(io, slices).await?;
            flush(io).await
        })
        .await
    }

    /// Answer with a complete body (Content-Length framed, one `writev`).
    pub async fn send(&mut self, resp: Response, body: &[u8]) -> Result<(), Error> {
        self.start(resp.status)?;
        let framing = if has_no_body(resp.status) {
            HeadFraming::None
        } else {
            HeadFraming::Length(body.len() as u64)
        };
        let head = self.encode_head(&resp, framing);
        let body = if self.is_head || has_no_body(resp.status) {
            &[][..]
        } else {
            body
        };
        self.write_slices(&mut [IoSlice::new(&head), IoSlice::new(body)])
            .await?;
        self.resp = RespState::Done;
        Ok(())
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
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        self.start(resp.status)?;
        if !self.is_head && len > 0 && len <= self.conn.cfg.write_buffer as u64 {
            return self.send_small_file(&resp, file, offset, len).await;
        }
        let head = self.encode_head(&resp, HeadFraming::Length(len));
        // Cork the socket for the whole response (nginx's tcp_nopush): the
        // head rides in the first full segment with the file's bytes, and
        // the kernel only sends full segments until the guard uncorks.
        // Measured on loopback, 1 GiB GET, interleaved with nginx:
        // uncorked 1613–1723 MB/s, corked 2002–2292, nginx 1965–2140.
        let _cork = match self.conn.io.plain_tcp() {
            Some(tcp) if self.conn.cfg.cork_file_sends && !self.is_head && len > 0 => {
                crate::sendfile::Cork::new(tcp)
            }
            _ => None,
        };
        self.write_slices(&mut [IoSlice::new(&head)]).await?;
        if !self.is_head && len > 0 {
            let chunk = self.conn.cfg.file_chunk;
            let t = self.conn.cfg.write_timeout;
            let use_sendfile = match self.conn.cfg.file_send {
                crate::FileSend::Sendfile => true,
                crate::FileSend::Copy => false,
                crate::FileSend::Auto => !self.conn.peer.ip().to_canonical().is_loopback(),
            };
            let io = &mut self.conn.io;
            let sent = match io.plain_tcp().filter(|_| use_sendfile) {
                Some(tcp) => crate::sendfile::send_file(tcp, file, offset, len, chunk, t).await,
                None => crate::sendfile::copy_file(io, file, offset, len, t).await,
            };
            if let Err(e) = sent {
                // Head promised `len` bytes: the connection cannot be reused.
                self.keep_alive = false;
                return Err(e);
            }
        }
        self.resp = RespState::Done;
        Ok(())
    }

    /// A file body that fits the write buffer: read behind the head in one
    /// buffer and sent with one write, so the response is one segment
    /// without toggling TCP_CORK (two setsockopt calls per request).
    async fn send_small_file(
        &mut self,
        resp: &Response,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        use std::os::unix::fs::FileExt;
        let mut out = self.encode_head_with(resp, HeadFraming::Length(len), len as usize);
        let head_len = out.len();
        out.resize(head_len + len as usize, 0);
        let mut filled = head_len;
        while filled < out.len() {
            let n = file.read_at(&mut out[filled..], offset + (filled - head_len) as u64)?;
            if n == 0 {
                // Nothing has been sent: the caller answers the error.
                self.resp = RespState::NotStarted;
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "file shrank while being sent",
                )
                .into());
            }
            filled += n;
        }
        self.write_slices(&mut [IoSlice::new(&out)]).await?;
        self.resp = RespState::Done;
        Ok(())
    }

    /// Open a buffered body writer (see [`BodyWriter`]).
    pub fn writer(&mut self, resp: Response) -> Result<BodyWriter<'_>, Error> {
        self.start(resp.status)?;
        let cap = self.conn.cfg.write_buffer.max(1);
        let mode = if self.is_head || has_no_body(resp.status) {
            OutMode::Discard
        } else {
            OutMode::Pending
        };
        self.out = Some(OutState {
            buf: Vec::with_capacity(cap),
            cap,
            mode,
            policy: self.conn.cfg.flush_policy,
            sends: 0,
            bytes: 0,
        });
        self.pending_head = Some(resp);
        Ok(BodyWriter { ex: self })
    }

    pub(crate) fn out_mut(&mut self) -> &mut OutState {
        self.out
            .as_mut()
            .expect("body writer state exists while a writer is open")
    }

    /// Send the buffer plus `extra` (as one chunk when chunked), with the head
    /// first if it is still pending; `last` ends the body.
    pub(crate) async fn emit(&mut self, extra: &[u8], last: bool) -> Result<(), Error> {
        let Some(mut out) = self.out.take() else {
            return Ok(());
        };
        let data_len = out.buf.len() + extra.len();
        let mut head = Vec::new();
        if let Some(resp) = self.pending_head.take() {
            let framing = match out.mode {
                OutMode::Discard if last => HeadFraming::Length(out.bytes),
                OutMode::Discard => HeadFraming::Chunked,
                _ if last => {
                    out.mode = OutMode::Discard; // nothing else follows
                    HeadFraming::Length(data_len as u64)
                }
                _ if self.head.version() == Version::Http10 => {
                    self.keep_alive = false;
                    out.mode = OutMode::UntilClose;
                    HeadFraming::None
                }
                _ => {
                    out.mode = OutMode::Chunked;
                    HeadFraming::Chunked
                }
            };
            let framing = if has_no_body(self.status) {
                HeadFraming::None
            } else {
                framing
            };
            head = self.encode_head(&resp, framing);
            if last && !self.is_head && !has_no_body(self.status) {
                // Content-Length body: head + body, one writev.
                let r = self
                    .write_slices(&mut [
                        IoSlice::new(&head),
                        IoSlice::new(&out.buf),
                        IoSlice::new(extra),
                    ])
                    .await;
                out.sends += 1;
                out.buf.clear();
                self.out = Some(out);
                return r;
            }
        }
        let r = match out.mode {
            OutMode::Pending => unreachable_pending(),
            OutMode::Discard => self.write_slices(&mut [IoSlice::new(&head)]).await,
            OutMode::UntilClose => {
                self.write_slices(&mut [
                    IoSlice::new(&head),
                    IoSlice::new(&out.buf),
                    IoSlice::new(extra),
                ])
                .await
            }
            OutMode::Chunked => {
                let ch = chunk_head(data_len);
                let (ch, end): (&[u8], &[u8]) = if data_len > 0 {
                    (ch.as_ref(), CHUNK_END)
                } else {
                    (&[], &[])
                };
                let fin: &[u8] = if last { LAST_CHUNK } else { &[] };
                self.write_slices(&mut [
                    IoSlice::new(&head),
                    IoSlice::new(ch),
                    IoSlice::new(&out.buf),
                    IoSlice::new(extra),
                    IoSlice::new(end),
                    IoSlice::new(fin),
                ])
                .await
            }
        };
        if data_len > 0 || !head.is_empty() {
            out.sends += 1;
        }
        out.buf.clear();
        self.out = Some(out);
        r
    }

    /// End an open body writer (idempotent).
    pub(crate) async fn finish_body(&mut self) -> Result<(), Error> {
        if self.resp != RespState::Started || self.out.is_none() {
            return Ok(());
        }
        let r = self.emit(&[], true).await;
        if let Some(out) = self.out.take() {
            if is_flush_storm(out.sends, out.bytes) && first_storm_on_route(&self.route) {
                tracing::warn!(
                    route = %self.route,
                    sends = out.sends,
                    bytes = out.bytes,
                    avg = out.bytes / out.sends.max(1),
                    "flush storm: a response was sent as many tiny writes; buffer the body (seed 000)"
                );
            }
        }
        self.resp = RespState::Done;
        r
    }

    // ---- end of the exchange ------------------------------------------

    /// Complete the exchange after the handler returned: answer errors, finish
    /// an open body, drain an unread request body. Returns whether the
    /// connection can carry another request.
    pub(crate) async fn complete(&mut self, result: Result<(), Error>) -> bool {
        let result = match result {
            Ok(()) => self.finish_body().await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            if e.is_connection_lost() {
                return false;
            }
            tracing::debug!(peer = %self.conn.peer, route = %self.route, error = %e, "request failed");
            if self.resp == RespState::Started && self.pending_head.is_some() {
                // A writer was opened but its head never left: the error can
                // still be answered properly instead of closing silently.
                self.pending_head = None;
                self.out = None;
                self.resp = RespState::NotStarted;
            }
            if self.resp != RespState::NotStarted {
                // Mid-body failure: closing is the only honest signal left.
                return false;
            }
            let status = e.http_status();
            if matches!(
                e,
                Error::Proto(_) | Error::Timeout(_) | Error::UnexpectedEof
            ) {
                self.keep_alive = false;
            }
            let message = if status >= 500 && !matches!(e, Error::Status { .. }) {
                reason_phrase(status).to_string()
            } else {
                e.to_string()
            };
            if status >= 500 {
                tracing::error!(peer = %self.conn.peer, route = %self.route, error = %e, "request failed");
            }
            if self.send_text(status, &message).await.is_err() {
                return false;
            }
        } else if self.resp == RespState::NotStarted {
            tracing::error!(route = %self.route, "handler returned without responding");
            if self
                .send_text(500, "handler produced no response")
                .await
                .is_err()
            {
                return false;
            }
        }
        if !self.keep_alive {
            return false;
        }
        self.drain_body().await
    }

    /// Read and drop what is left of the request body, up to the drain limit.
    async fn drain_body(&mut self) -> bool {
        if self.body.is_done() {
            return true;
        }
        if self.continue_pending {
            return false; // the client never got 100 and may never send it
        }
        let limit = self.conn.cfg.drain_limit;
        let start = self.body_read;
        self.body_limit = None;
        loop {
            match self.read_body().await {
                Ok(Some(_)) => {}
                Ok(None) => return true,
                Err(_) => return false,
            }
            if self.body_read - start > limit {
                return false;
            }
        }
    }
}

/// The current time as an HTTP date (always 29 bytes), formatted at most once
/// per second per thread: every response carries one.
pub(crate) fn http_date() -> [u8; 29] {
    use std::cell::Cell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local! {
        static CACHE: Cell<(u64, [u8; 29])> = const { Cell::new((u64::MAX, [b' '; 29])) };
    }
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    CACHE.with(|c| {
        let (cached_secs, text) = c.get();
        if cached_secs == secs {
            return text;
        }
        let mut text = [b' '; 29];
        let formatted = httpdate::fmt_http_date(now);
        let n = formatted.len().min(29);
        text[..n].copy_from_slice(&formatted.as_bytes()[..n]);
        c.set((secs, text));
        text
    })
}

/// Route label of requests that did not go through a [`crate::Router`].
fn unrouted() -> Arc<str> {
    static UNROUTED: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    UNROUTED.get_or_init(|| Arc::from("(unrouted)")).clone()
}

fn has_no_body(status: u16) -> bool {
    (100..200).contains(&status) || status == 204 || status == 304
}

#[cold]
fn unreachable_pending() -> Result<(), Error> {
    Err(Error::status(
        500,
        "body writer framing undecided after the head",
    ))
}
