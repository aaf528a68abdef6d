//! Writing a response, the outbound direction in one place: complete
//! bodies, files, and the streaming [`BodyWriter`] with its flush policy —
//! the seed-000 fix. Framing is `wirespeed_proto::server_response_framing`'s
//! decision; this module only carries it out.
//!
//! A JSON serializer that writes token by token must not become one socket
//! write (and one tiny chunk) per token. `write` only copies into a 64 KiB
//! buffer; bytes reach the socket when the buffer fills, when the handler calls
//! `flush`, or at `finish`. A body that ends while still entirely buffered goes
//! out with Content-Length (head + body in one `writev`); otherwise the body is
//! chunked, one chunk per buffer-full, head + chunk header + data + CRLF in one
//! `writev`. Flush storms (many tiny sends per response) are logged once per
//! route and each one is told to the server's observer (metrics).

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, IoSlice};
use std::sync::{Mutex, OnceLock};

use wirespeed_io::clean_link::{CleanLink, LINK_HEADER};
use wirespeed_proto::{
    chunk_head, server_response_framing, BodyEncoding, BodySize, Version, CHUNK_END, LAST_CHUNK,
};

use crate::conn::Conn;
use crate::io::{deadline, flush, write_all_vectored};
use crate::response::{encode_head, Response};
use crate::{Error, FileSend, Timeout};

/// When a body writer touches the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    /// Buffer up to the writer's capacity (the default, and the only sane one).
    Buffered,
    /// Send every `write` at once, as its own chunk. Exists only so benchmarks
    /// can show the seed-000 pitfall; never use it in production.
    PerWrite,
}

/// A flush storm: more than this many sends in one response …
pub const STORM_MIN_SENDS: u64 = 1000;
/// … averaging fewer bytes than this per send.
pub const STORM_MAX_AVG_BYTES: u64 = 256;

/// Whether a response's send statistics amount to a flush storm.
pub fn is_flush_storm(sends: u64, bytes: u64) -> bool {
    sends > STORM_MIN_SENDS && bytes < sends.saturating_mul(STORM_MAX_AVG_BYTES)
}

/// Record a storm on `route`; true the first time for that route (so the
/// warning is logged once per route, not once per response).
pub(crate) fn first_storm_on_route(route: &str) -> bool {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut warned = WARNED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    warned.insert(route.to_string())
}

/// Where the response is: nothing sent yet, a body streaming through a
/// [`BodyWriter`], or done. One enum, so no two flags can contradict.
enum Writing {
    Idle,
    Streaming(Box<Stream>),
    Done,
}

/// A streamed body: the head held back until its framing is known, then
/// the buffer.
struct Stream {
    head: Option<Response>,
    /// How body bytes go out, decided when the head is sent.
    encoding: Option<BodyEncoding>,
    buf: Vec<u8>,
    cap: usize,
    policy: FlushPolicy,
    /// Socket sends made for this body (each is one chunk when chunked).
    sends: u64,
    /// Body bytes accepted from the handler.
    bytes: u64,
    /// The body's length when the handler knows it up front (Content-Length
    /// framing however the body is split).
    length: Option<u64>,
    /// TCP_CORK held from the first file range sent into this body until
    /// it ends, so small generated pieces between file ranges share segments.
    cork: Option<wirespeed_io::Cork>,
    /// The copy loop's buffer, kept across this body's file ranges.
    copy_buf: Vec<u8>,
}

/// The response side of an exchange.
pub(crate) struct ResponseWriter {
    state: Writing,
    version: Version,
    head_request: bool,
    /// Whether the connection carries another request after this response.
    pub keep_alive: bool,
    status: u16,
    /// Response body bytes written so far (for metrics and access logs).
    body_sent: u64,
}

fn step_error(what: Timeout) -> impl Fn(io::Error) -> Error {
    move |e| match e.kind() {
        io::ErrorKind::TimedOut => Error::Timeout(what),
        _ => Error::Io(e),
    }
}

async fn write_slices(conn: &mut Conn, slices: &mut [IoSlice<'_>]) -> Result<(), Error> {
    let io = &mut conn.io;
    deadline(conn.cfg.write_timeout, Timeout::Write, async {
        write_all_vectored(io, slices).await?;
        flush(io).await
    })
    .await
}

/// `len` bytes of `file` from `offset` onto the connection: sendfile(2) or
/// the copy loop, as [`ServerConfig::file_send`](crate::ServerConfig) says
/// (TLS always copies). `sent` grows with each write, so a transfer the peer
/// cuts short is logged and counted with the bytes that did leave. `buf`:
/// the copy loop's buffer, when the caller keeps one across ranges.
async fn move_file(
    conn: &mut Conn,
    file: &File,
    offset: u64,
    len: u64,
    sent: &mut u64,
    buf: Option<&mut Vec<u8>>,
) -> io::Result<()> {
    let (step, t) = (conn.cfg.file_chunk, conn.cfg.write_timeout);
    let use_sendfile = match conn.cfg.file_send {
        FileSend::Sendfile => true,
        FileSend::Copy => false,
        FileSend::Auto => !conn.peer.ip().to_canonical().is_loopback(),
    };
    let pace = conn.pacing.down.as_ref();
    match conn.io.plain_tcp().filter(|_| use_sendfile) {
        Some(tcp) => {
            let clean_link = &mut conn.clean_link;
            let count = |n: u64| {
                *sent += n;
                if let Some(c) = clean_link.as_mut() {
                    c.sending(tcp);
                }
            };
            wirespeed_io::send_file(tcp, file, offset, len, step, t, pace, count).await
        }
        None => {
            let count = |n: u64| *sent += n;
            let mut own = Vec::new();
            let buf = buf.unwrap_or(&mut own);
            wirespeed_io::copy_file_with(&mut conn.io, file, offset, len, t, pace, count, buf).await
        }
    }
}

/// Wait until `n` response body bytes may go, when the exchange is paced.
async fn pace_down(pace: Option<&wirespeed_io::Pace>, n: usize) {
    if let Some(p) = pace {
        p.reserve(n as u64).await;
    }
}

impl ResponseWriter {
    pub fn new(version: Version, head_request: bool, keep_alive: bool) -> Self {
        ResponseWriter {
            state: Writing::Idle,
            version,
            head_request,
            keep_alive,
            status: 0,
            body_sent: 0,
        }
    }

    /// Response body bytes written so far.
    pub fn body_sent(&self) -> u64 {
        self.body_sent
    }

    pub fn started(&self) -> bool {
        !matches!(self.state, Writing::Idle)
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    /// Forget a streamed response whose head never left, so an error can
    /// still be answered properly.
    pub fn abandon_unsent(&mut self) {
        if matches!(&self.state, Writing::Streaming(s) if s.head.is_some()) {
            self.state = Writing::Idle;
        }
    }

    /// Claim the response for `status`; a second answer is a handler bug.
    pub fn begin(&mut self, status: u16) -> Result<(), Error> {
        if self.started() {
            return Err(Error::status(500, "response already started"));
        }
        self.status = status;
        Ok(())
    }

    fn framing(&self, size: BodySize) -> wirespeed_proto::ResponseFraming {
        server_response_framing(self.head_request, self.version, self.status, size)
    }

    /// Answer with a complete body (head and body in one `writev`).
    pub async fn send(
        &mut self,
        conn: &mut Conn,
        resp: Response,
        body: &[u8],
    ) -> Result<(), Error> {
        self.begin(resp.status())?;
        self.state = Writing::Done;
        let f = self.framing(BodySize::Known(body.len() as u64));
        let head = encode_head(&resp, self.version, f.field, self.keep_alive, 0);
        let body = if f.body == BodyEncoding::Nothing {
            &[][..]
        } else {
            body
        };
        pace_down(conn.pacing.down.as_ref(), body.len()).await;
        write_slices(conn, &mut [IoSlice::new(&head), IoSlice::new(body)]).await?;
        self.body_sent += body.len() as u64;
        Ok(())
    }

    /// Answer with `len` bytes of `file` from `offset`: small files with the
    /// head in one write; larger ones corked, head then sendfile(2) or the
    /// copy loop, as [`ServerConfig::file_send`](crate::ServerConfig) says
    /// (TLS always copies).
    pub async fn send_file(
        &mut self,
        conn: &mut Conn,
        resp: Response,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        self.begin(resp.status())?;
        // A range on a watched connection: whether a second connection
        // beside this one would only share the link (a ranged download
        // asks before it opens one).
        let resp = match conn.clean_link.as_ref().and_then(CleanLink::report) {
            Some(r) if resp.status() == 206 => resp.header(LINK_HEADER, r.as_str()),
            _ => resp,
        };
        let f = self.framing(BodySize::Known(len));
        let with_body = f.body != BodyEncoding::Nothing && len > 0;
        if with_body && len <= conn.cfg.write_buffer as u64 {
            return self.send_small_file(conn, &resp, file, offset, len).await;
        }
        self.state = Writing::Done;
        let head = encode_head(&resp, self.version, f.field, self.keep_alive, 0);
        // Cork for the whole response (nginx's tcp_nopush): the head rides in
        // the first full segment with the file's bytes (bench/RESULTS.md).
        let _cork = match conn.io.plain_tcp() {
            Some(tcp) if conn.cfg.cork_file_sends && with_body => wirespeed_io::Cork::new(tcp),
            _ => None,
        };
        write_slices(conn, &mut [IoSlice::new(&head)]).await?;
        if !with_body {
            return Ok(());
        }
        let sent = move_file(conn, file, offset, len, &mut self.body_sent, None).await;
        if let Err(e) = sent {
            // The head promised `len` bytes: the connection cannot be reused.
            self.keep_alive = false;
            return Err(step_error(Timeout::Write)(e));
        }
        Ok(())
    }

    /// A file body that fits the write buffer: read behind the head in one
    /// buffer and sent with one write, so the response is one segment
    /// without toggling TCP_CORK (two setsockopt calls per request).
    async fn send_small_file(
        &mut self,
        conn: &mut Conn,
        resp: &Response,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        use std::os::unix::fs::FileExt;
        let f = self.framing(BodySize::Known(len));
        let mut out = encode_head(resp, self.version, f.field, self.keep_alive, len as usize);
        let head_len = out.len();
        out.resize(head_len + len as usize, 0);
        let mut filled = head_len;
        while filled < out.len() {
            let n = file.read_at(&mut out[filled..], offset + (filled - head_len) as u64)?;
            if n == 0 {
                // Nothing has been sent: the caller answers the error.
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shrank while being sent",
                )
                .into());
            }
            filled += n;
        }
        self.state = Writing::Done;
        pace_down(conn.pacing.down.as_ref(), len as usize).await;
        write_slices(conn, &mut [IoSlice::new(&out)]).await?;
        self.body_sent += len;
        Ok(())
    }

    /// Start a streamed body; bytes go through [`BodyWriter`].
    pub fn open_stream(
        &mut self,
        resp: Response,
        cap: usize,
        policy: FlushPolicy,
    ) -> Result<(), Error> {
        self.begin(resp.status())?;
        let cap = cap.max(1);
        self.state = Writing::Streaming(Box::new(Stream {
            head: Some(resp),
            encoding: None,
            buf: Vec::with_capacity(cap),
            cap,
            policy,
            sends: 0,
            bytes: 0,
            length: None,
            cork: None,
            copy_buf: Vec::new(),
        }));
        Ok(())
    }

    /// Declare the length of the body being streamed, before any of it.
    pub fn stream_length(&mut self, len: u64) -> Result<(), Error> {
        self.stream()?.length = Some(len);
        Ok(())
    }

    fn stream(&mut self) -> Result<&mut Stream, Error> {
        match &mut self.state {
            Writing::Streaming(s) => Ok(s),
            _ => Err(Error::status(500, "no response body is being written")),
        }
    }

    /// Send the buffer plus `extra` (as one chunk when chunked), with the head
    /// first if it is still held back; `last` ends the body.
    async fn emit(&mut self, conn: &mut Conn, extra: &[u8], last: bool) -> Result<(), Error> {
        let (version, head_request, status) = (self.version, self.head_request, self.status);
        let Writing::Streaming(s) = &mut self.state else {
            return Ok(());
        };
        let data_len = s.buf.len() + extra.len();
        let mut head = Vec::new();
        if let Some(resp) = s.head.take() {
            // Still held back at the end: the whole body is here, so its
            // length is known (Content-Length, one writev).
            let size = if let Some(n) = s.length {
                BodySize::Known(n)
            } else if last {
                BodySize::Known(data_len as u64)
            } else {
                BodySize::Streamed
            };
            let f = server_response_framing(head_request, version, status, size);
            if f.close_delimited {
                self.keep_alive = false;
            }
            head = encode_head(&resp, version, f.field, self.keep_alive, 0);
            s.encoding = Some(f.body);
        }
        let ch;
        let mut slices: [IoSlice<'_>; 6] = [
            IoSlice::new(&head),
            IoSlice::new(&[]),
            IoSlice::new(&[]),
            IoSlice::new(&[]),
            IoSlice::new(&[]),
            IoSlice::new(&[]),
        ];
        match s.encoding {
            None => return Err(Error::status(500, "body framing undecided after the head")),
            Some(BodyEncoding::Nothing) => {}
            Some(BodyEncoding::Raw) => {
                slices[1] = IoSlice::new(&s.buf);
                slices[2] = IoSlice::new(extra);
            }
            Some(BodyEncoding::Chunked) => {
                if data_len > 0 {
                    ch = chunk_head(data_len);
                    slices[1] = IoSlice::new(ch.as_ref());
                    slices[2] = IoSlice::new(&s.buf);
                    slices[3] = IoSlice::new(extra);
                    slices[4] = IoSlice::new(CHUNK_END);
                }
                if last {
                    slices[5] = IoSlice::new(LAST_CHUNK);
                }
            }
        }
        if s.encoding != Some(BodyEncoding::Nothing) {
            pace_down(conn.pacing.down.as_ref(), data_len).await;
        }
        let r = write_slices(conn, &mut slices).await;
        if r.is_ok() && s.encoding != Some(BodyEncoding::Nothing) {
            self.body_sent += data_len as u64;
        }
        if data_len > 0 || !head.is_empty() {
            s.sends += 1;
        }
        s.buf.clear();
        r
    }

    /// Send `len` bytes of `file` from `offset` as the next part of the
    /// streamed body: what is buffered (and the head) goes first, then the
    /// range by sendfile(2) on plain TCP or the copy loop, as
    /// [`ServerConfig::file_send`](crate::ServerConfig) says. A file
    /// shorter than `len` is an error after which the connection closes
    /// (the framing promised those bytes).
    pub async fn stream_file(
        &mut self,
        conn: &mut Conn,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        let s = self.stream()?;
        if len == 0 {
            return Ok(());
        }
        if s.head.is_some() || !s.buf.is_empty() {
            self.emit(conn, &[], false).await?;
        }
        let s = self.stream()?;
        s.bytes += len;
        s.sends += 1;
        let chunked = match s.encoding {
            Some(BodyEncoding::Nothing) => return Ok(()),
            Some(BodyEncoding::Raw) => false,
            Some(BodyEncoding::Chunked) => true,
            None => return Err(Error::status(500, "body framing undecided after the head")),
        };
        if s.cork.is_none() && conn.cfg.cork_file_sends {
            s.cork = conn.io.plain_tcp().and_then(wirespeed_io::Cork::new);
        }
        if chunked {
            let ch = chunk_head(len as usize);
            write_slices(conn, &mut [IoSlice::new(ch.as_ref())]).await?;
        }
        let Writing::Streaming(s) = &mut self.state else {
            return Err(Error::status(500, "not streaming"));
        };
        let sent = move_file(
            conn,
            file,
            offset,
            len,
            &mut self.body_sent,
            Some(&mut s.copy_buf),
        )
        .await;
        if let Err(e) = sent {
            self.keep_alive = false;
            return Err(step_error(Timeout::Write)(e));
        }
        if chunked {
            write_slices(conn, &mut [IoSlice::new(CHUNK_END)]).await?;
        }
        Ok(())
    }

    /// End a streamed body (idempotent): Content-Length if it is all still
    /// buffered, else the last chunk. Warns once per route about a flush storm.
    pub async fn finish(&mut self, conn: &mut Conn, route: &str) -> Result<(), Error> {
        if !matches!(self.state, Writing::Streaming(_)) {
            return Ok(());
        }
        let r = self.emit(conn, &[], true).await;
        if let Writing::Streaming(s) = std::mem::replace(&mut self.state, Writing::Done) {
            let storm = is_flush_storm(s.sends, s.bytes);
            if storm {
                if let Some(o) = &conn.cfg.observer {
                    o.flush_storm();
                }
            }
            if storm && first_storm_on_route(route) {
                tracing::warn!(
                    route = %route,
                    sends = s.sends,
                    bytes = s.bytes,
                    avg = s.bytes / s.sends.max(1),
                    "flush storm: a response was sent as many tiny writes; buffer the body (seed 000)"
                );
            }
        }
        r
    }
}

/// Streams a response body through a buffer; see the module docs. Obtained
/// from [`Exchange::writer`](crate::Exchange::writer). Dropping it without
/// [`finish`](Self::finish) is fine: the server finishes the body after the
/// handler returns.
pub struct BodyWriter<'e> {
    pub(crate) conn: &'e mut Conn,
    pub(crate) w: &'e mut ResponseWriter,
    pub(crate) route: &'e str,
}

impl BodyWriter<'_> {
    /// Append `data` to the body. Touches the socket only when the buffer is
    /// full; a write larger than the buffer goes out as one big chunk without
    /// being copied.
    pub async fn write(&mut self, data: &[u8]) -> Result<(), Error> {
        let s = self.w.stream()?;
        s.bytes += data.len() as u64;
        if s.policy == FlushPolicy::PerWrite {
            s.buf.extend_from_slice(data);
            return self.w.emit(self.conn, &[], false).await;
        }
        let room = s.cap - s.buf.len();
        if data.len() <= room {
            s.buf.extend_from_slice(data);
            if s.buf.len() == s.cap {
                return self.w.emit(self.conn, &[], false).await;
            }
            return Ok(());
        }
        if s.buf.is_empty() {
            // Big write, empty buffer: send it as its own chunk, no copy.
            return self.w.emit(self.conn, data, false).await;
        }
        let (head, rest) = data.split_at(room);
        s.buf.extend_from_slice(head);
        self.w.emit(self.conn, &[], false).await?;
        let s = self.w.stream()?;
        if rest.len() >= s.cap {
            self.w.emit(self.conn, rest, false).await
        } else {
            s.buf.extend_from_slice(rest);
            Ok(())
        }
    }

    /// Send what is buffered now, because the handler asked (e.g. a progress
    /// line a client waits for). This commits the response to chunked framing.
    pub async fn flush(&mut self) -> Result<(), Error> {
        let s = self.w.stream()?;
        if s.buf.is_empty() && s.head.is_none() {
            return Ok(());
        }
        self.w.emit(self.conn, &[], false).await
    }

    /// Send `len` bytes of `file` from `offset` as the next part of the
    /// body, zero-copy where the connection allows (sendfile(2) on plain
    /// TCP): buffered bytes go first. For bodies that interleave generated
    /// bytes with file ranges (folder archives).
    pub async fn send_file_range(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        self.w.stream_file(self.conn, file, offset, len).await
    }

    /// Bytes currently buffered and not yet sent.
    pub fn buffered(&self) -> usize {
        match &self.w.state {
            Writing::Streaming(s) => s.buf.len(),
            _ => 0,
        }
    }

    /// End the body: Content-Length if everything is still buffered, else the
    /// last chunk.
    pub async fn finish(self) -> Result<(), Error> {
        self.w.finish(self.conn, self.route).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storm_thresholds() {
        assert!(!is_flush_storm(1000, 10));
        assert!(is_flush_storm(1001, 1001 * 255));
        assert!(!is_flush_storm(1001, 1001 * 256));
        assert!(!is_flush_storm(5, 0));
        assert!(!is_flush_storm(u64::MAX, u64::MAX));
    }

    #[test]
    fn storm_warned_once_per_route() {
        assert!(first_storm_on_route("/unit-test-a"));
        assert!(!first_storm_on_route("/unit-test-a"));
        assert!(first_storm_on_route("/unit-test-b"));
    }
}
