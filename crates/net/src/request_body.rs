//! Reading a request body, the inbound direction in one place: slices lent
//! from the connection buffer (the framing is `wirespeed_proto::BodyDecoder`'s),
//! `100 Continue` on the first read, the zero-copy receive into a file, the
//! body limit, and draining what a handler left unread.

use std::fs::File;
use std::io::{self, IoSlice};

use wirespeed_proto::{BodyDecoder, BodyFraming, ProtoError, RequestHead};

use crate::conn::Conn;
use crate::io::{deadline, flush, write_all_vectored};
use crate::{Error, Timeout};

/// Whether the client waits for `100 Continue` before sending its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Continue {
    /// Not asked for, already sent, or moot (no body, or answered without it).
    Settled,
    /// Asked for and not sent yet: sent on the first body read.
    Pending,
}

/// Why moving a body into a file failed: the connection's side (answered
/// like any body error) or the file's (the storage's to answer: ENOSPC is 507).
#[derive(Debug, thiserror::Error)]
pub enum FileBodyError {
    #[error(transparent)]
    Body(#[from] Error),
    #[error("writing the body to its file: {0}")]
    File(#[source] io::Error),
}

/// The request body's reading state.
pub(crate) struct RequestBody {
    decoder: BodyDecoder,
    read: u64,
    limit: Option<u64>,
    continue_: Continue,
}

impl RequestBody {
    pub fn new(head: &RequestHead, framing: BodyFraming, conn: &Conn) -> Self {
        let decoder = BodyDecoder::new(framing, &conn.cfg.limits);
        let continue_ = if head.expects_continue() && !decoder.is_done() {
            Continue::Pending
        } else {
            Continue::Settled
        };
        RequestBody {
            decoder,
            read: 0,
            limit: None,
            continue_,
        }
    }

    pub fn is_done(&self) -> bool {
        self.decoder.is_done()
    }

    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// Bytes a Content-Length body still announces (`None` when chunked).
    pub fn remaining(&self) -> Option<u64> {
        self.decoder.remaining()
    }

    /// The client still waits for `100 Continue`.
    pub fn continue_pending(&self) -> bool {
        self.continue_ == Continue::Pending
    }

    /// Refuse bodies larger than `max` (413 as soon as one crosses it).
    pub fn set_limit(&mut self, max: u64) -> Result<(), Error> {
        self.limit = Some(max);
        match self.decoder.remaining() {
            Some(n) if n > max => Err(ProtoError::BodyTooLarge.into()),
            _ => Ok(()),
        }
    }

    /// Send `100 Continue` if the client waits for it and no response has
    /// started (a final response answers the expectation instead).
    pub async fn send_continue(
        &mut self,
        conn: &mut Conn,
        response_started: bool,
    ) -> Result<(), Error> {
        if self.continue_ != Continue::Pending {
            return Ok(());
        }
        self.continue_ = Continue::Settled;
        if response_started {
            return Ok(());
        }
        let io = &mut conn.io;
        deadline(conn.cfg.write_timeout, Timeout::Write, async {
            write_all_vectored(io, &mut [IoSlice::new(b"HTTP/1.1 100 Continue\r\n\r\n")]).await?;
            flush(io).await
        })
        .await
    }

    fn count(&mut self, n: u64) -> Result<(), Error> {
        self.read += n;
        match self.limit {
            Some(max) if self.read > max => Err(ProtoError::BodyTooLarge.into()),
            _ => Ok(()),
        }
    }

    /// The next piece of the body, lent from the connection buffer (zero
    /// copy), or `None` at its end.
    pub async fn read<'c>(
        &mut self,
        conn: &'c mut Conn,
        response_started: bool,
    ) -> Result<Option<&'c [u8]>, Error> {
        self.send_continue(conn, response_started).await?;
        let cap = conn.cfg.body_buffer;
        let timeout = conn.cfg.body_timeout;
        loop {
            if self.decoder.is_done() {
                return Ok(None);
            }
            if !conn.rbuf.is_empty() {
                let from = conn.rbuf.start();
                // Paced, at most a chunk per piece, waited for before it is
                // handed out (the decoder takes its input in any cuts).
                let data = conn.rbuf.data();
                let data = match &conn.pacing.up {
                    Some(p) => &data[..data.len().min(p.chunk())],
                    None => data,
                };
                let d = self.decoder.decode(data)?;
                conn.rbuf.consume(d.consumed);
                if !d.data.is_empty() {
                    self.count(d.data.len() as u64)?;
                    if let Some(p) = &conn.pacing.up {
                        p.reserve(d.data.len() as u64).await;
                    }
                    return Ok(Some(
                        conn.rbuf.slice(from + d.data.start, from + d.data.end),
                    ));
                }
                if d.done {
                    return Ok(None);
                }
                if d.consumed > 0 {
                    continue;
                }
            }
            // Only a body larger than the buffer earns the big buffer (shrunk
            // again after the exchange); chunked bodies always do.
            let small = self
                .decoder
                .remaining()
                .is_some_and(|n| n <= conn.rbuf.capacity() as u64);
            if !small {
                conn.rbuf.ensure_capacity(cap);
            }
            match deadline(timeout, Timeout::Body, conn.rbuf.fill(&mut conn.io, cap)).await? {
                Some(0) if self.decoder.end_of_input() => return Ok(None),
                Some(0) => return Err(Error::UnexpectedEof),
                Some(_) => {}
                // Unreachable in practice: the chunked decoder consumes all
                // framing bytes it is given (keeping split lines in its own
                // bounded state), so the buffer never fills with unconsumed
                // framing. Refuse rather than spin.
                None => return Err(ProtoError::InvalidChunkSize.into()),
            }
        }
    }

    /// Move the rest of a Content-Length body on plain TCP into `file` at
    /// its current position: what is buffered with one write, the rest with
    /// splice(2) socket → file. `stored` hears each step's byte count.
    /// `Ok(None)` when this path does not apply (TLS, chunked): nothing was
    /// consumed. After a failure that took bytes off the socket, the caller
    /// must close the connection (bytes stuck in the pipe are gone).
    pub async fn receive_into_file(
        &mut self,
        conn: &mut Conn,
        file: &File,
        response_started: bool,
        mut stored: impl FnMut(u64),
    ) -> Result<Option<u64>, FileBodyError> {
        use std::io::Write;
        let Some(remaining) = self.decoder.remaining() else {
            return Ok(None);
        };
        if conn.io.plain_tcp().is_none() {
            return Ok(None);
        }
        self.send_continue(conn, response_started).await?;
        let buffered = (conn.rbuf.len() as u64).min(remaining) as usize;
        if buffered > 0 {
            if let Some(p) = &conn.pacing.up {
                p.reserve(buffered as u64).await;
            }
            let mut f = file;
            f.write_all(&conn.rbuf.data()[..buffered])
                .map_err(FileBodyError::File)?;
            conn.rbuf.consume(buffered);
            self.decoder.advance_direct(buffered as u64);
            self.count(buffered as u64)?;
            stored(buffered as u64);
        }
        let rest = remaining - buffered as u64;
        if rest == 0 {
            return Ok(Some(buffered as u64));
        }
        let Some(tcp) = conn.io.plain_tcp() else {
            return Ok(Some(buffered as u64));
        };
        let pace = conn.pacing.up.as_ref();
        let got =
            wirespeed_io::receive_to_file(tcp, file, rest, conn.cfg.body_timeout, pace, stored)
                .await;
        self.decoder.advance_direct(got.taken);
        let counted = self.count(got.taken);
        let result = match got.result {
            Ok(()) => counted.map_err(FileBodyError::from),
            Err(wirespeed_io::ReceiveError::Closed) => Err(Error::UnexpectedEof.into()),
            Err(wirespeed_io::ReceiveError::Socket(e)) if e.kind() == io::ErrorKind::TimedOut => {
                Err(Error::Timeout(Timeout::Body).into())
            }
            Err(wirespeed_io::ReceiveError::Socket(e)) => Err(Error::Io(e).into()),
            Err(wirespeed_io::ReceiveError::File(e)) => Err(FileBodyError::File(e)),
        };
        result.map(|()| Some(buffered as u64 + got.stored))
    }

    /// Read and drop what is left of the body, up to `limit` bytes; true if
    /// the body ended (the connection can carry another request).
    pub async fn drain(&mut self, conn: &mut Conn, limit: u64) -> bool {
        if self.decoder.is_done() {
            return true;
        }
        if self.continue_pending() {
            return false; // the client never got 100 and may never send it
        }
        let start = self.read;
        self.limit = None;
        loop {
            match self.read(conn, true).await {
                Ok(Some(_)) => {}
                Ok(None) => return true,
                Err(_) => return false,
            }
            if self.read - start > limit {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The body reader over an in-memory transport: no socket needed.
    use super::*;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf as TokioReadBuf};

    use crate::conn::ReadBuf;
    use crate::io::Transport;
    use crate::ServerConfig;

    /// Bytes handed out `step` at a time; writes are recorded.
    struct Scripted {
        input: Vec<u8>,
        pos: usize,
        step: usize,
        written: Vec<u8>,
    }

    impl AsyncRead for Scripted {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut TokioReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let n = self
                .step
                .min(self.input.len() - self.pos)
                .min(buf.remaining());
            let from = self.pos;
            buf.put_slice(&self.input[from..from + n]);
            self.pos += n;
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Scripted {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.written.extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl Transport for Scripted {}

    /// A connection whose head was just parsed from `wire`; the rest of
    /// `wire` arrives `step` bytes per read.
    fn conn_after_head(wire: &[u8], step: usize) -> (Conn, RequestHead, BodyFraming) {
        let cfg = ServerConfig::default();
        let (head, n) = wirespeed_proto::parse_request_head(wire, &cfg.limits)
            .unwrap()
            .unwrap();
        let framing = wirespeed_proto::request_framing(&head).unwrap();
        let (_tx, stop) = tokio::sync::watch::channel(false);
        let conn = Conn {
            io: Box::new(Scripted {
                input: wire[n..].to_vec(),
                pos: 0,
                step,
                written: Vec::new(),
            }),
            rbuf: ReadBuf::new(16),
            pacing: Default::default(),
            cfg: Arc::new(cfg),
            peer: "127.0.0.1:1".parse().unwrap(),
            stop,
            clean_link: None,
        };
        (conn, head, framing)
    }

    async fn read_all(wire: &[u8], step: usize) -> (Result<Vec<u8>, String>, Vec<u8>) {
        let (mut conn, head, framing) = conn_after_head(wire, step);
        let mut body = RequestBody::new(&head, framing, &conn);
        let mut out = Vec::new();
        let result = loop {
            match body.read(&mut conn, false).await {
                Ok(Some(piece)) => out.extend_from_slice(piece),
                Ok(None) => break Ok(out),
                Err(e) => break Err(e.to_string()),
            }
        };
        // What is left for the next request: the buffer, then the stream.
        let mut left = conn.rbuf.data().to_vec();
        while let Ok(Some(n)) = conn.rbuf.fill(&mut conn.io, 1 << 20).await {
            if n == 0 {
                break;
            }
            left = conn.rbuf.data().to_vec();
        }
        (result, left)
    }

    #[tokio::test]
    async fn content_length_body_is_lent_and_the_next_request_kept() {
        for step in [1, 5, 64, 1 << 20] {
            let wire = b"PUT /a HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello worldGET / HTTP/1.1\r\n";
            let (body, left) = read_all(wire, step).await;
            assert_eq!(body.unwrap(), b"hello world", "step {step}");
            assert_eq!(left, b"GET / HTTP/1.1\r\n", "step {step}");
        }
    }

    #[tokio::test]
    async fn chunked_body_is_decoded_across_any_split() {
        for step in [1, 2, 7, 1 << 20] {
            let wire = b"PUT /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwire\r\n5;ext=1\r\nspeed\r\n0\r\nX-T: 1\r\n\r\nNEXT";
            let (body, left) = read_all(wire, step).await;
            assert_eq!(body.unwrap(), b"wirespeed", "step {step}");
            assert_eq!(left, b"NEXT", "step {step}");
        }
    }

    #[tokio::test]
    async fn a_body_cut_short_is_an_error_not_an_end() {
        let wire = b"PUT /a HTTP/1.1\r\nHost: h\r\nContent-Length: 20\r\n\r\nonly this";
        let (body, _) = read_all(wire, 4).await;
        assert!(body.unwrap_err().contains("closed"), "truncation reported");
        let wire = b"PUT /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nonly";
        let (body, _) = read_all(wire, 4).await;
        assert!(body.is_err());
    }

    #[tokio::test]
    async fn continue_is_sent_once_on_the_first_read_only_if_no_answer_started() {
        let wire =
            b"PUT /a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok";
        let (mut conn, head, framing) = conn_after_head(wire, 64);
        let mut body = RequestBody::new(&head, framing, &conn);
        assert!(body.continue_pending());
        assert_eq!(body.read(&mut conn, false).await.unwrap(), Some(&b"ok"[..]));
        assert!(!body.continue_pending());
        drop(conn);

        let (mut conn, head, framing) = conn_after_head(wire, 64);
        let mut body = RequestBody::new(&head, framing, &conn);
        body.send_continue(&mut conn, true).await.unwrap();
        assert!(!body.continue_pending(), "a started answer settles it");
    }

    #[tokio::test]
    async fn the_limit_refuses_declared_and_streamed_bodies() {
        let wire = b"PUT /a HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789";
        let (conn, head, framing) = conn_after_head(wire, 64);
        let mut body = RequestBody::new(&head, framing, &conn);
        assert!(body.set_limit(9).is_err(), "declared length over the limit");

        let wire = b"PUT /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n";
        let (mut conn, head, framing) = conn_after_head(wire, 3);
        let mut body = RequestBody::new(&head, framing, &conn);
        body.set_limit(5).unwrap();
        let mut got = 0;
        let err = loop {
            match body.read(&mut conn, false).await {
                Ok(Some(p)) => got += p.len(),
                Ok(None) => panic!("limit not enforced"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.http_status(), 413);
        assert!(got <= 5 + 3, "stopped at the first piece over the limit");
    }

    #[tokio::test]
    async fn drain_reads_to_the_end_within_its_limit() {
        let wire = b"PUT /a HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n";
        let mut full = wire.to_vec();
        full.extend_from_slice(&[b'x'; 100]);
        let (mut conn, head, framing) = conn_after_head(&full, 7);
        let mut body = RequestBody::new(&head, framing, &conn);
        assert!(body.drain(&mut conn, 1000).await);
        assert!(body.is_done());

        let (mut conn, head, framing) = conn_after_head(&full, 7);
        let mut body = RequestBody::new(&head, framing, &conn);
        assert!(!body.drain(&mut conn, 10).await, "over the drain limit");
    }
}
