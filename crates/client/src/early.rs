//! An answer that arrives while the request body is still going out.
//!
//! A server may refuse a body before reading it (413, 507, 401, 403) and
//! then keep the connection open a while, reading and discarding or not
//! reading at all, so that the client can see its answer. A client that
//! only reads after the last byte sends all of a 100 GB body for nothing,
//! or stalls on a full socket until its timeout. RFC 9112 §9.5: a client
//! sending a body should watch the connection for a response and stop
//! sending when the server does not want the body, as curl does.
//!
//! [`Watch`] holds a duplicate of the connection's socket, registered for
//! readability only, so it can be awaited beside a write that borrows the
//! stream. When it fires, [`Watch::answered`] reads what arrived through
//! the connection (so TLS records are decrypted and its session tickets
//! are taken as such) and parses response heads: interim ones are
//! skipped, a final one of 300 or more ends the body, a 2xx is left for
//! the usual read after the body.

use std::io;
use std::os::fd::AsFd;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use wirespeed_proto::{parse_response_head, ResponseHead};

use crate::conn::{Conn, MAX_INTERIM};
use crate::{ClientConfig, Error};

/// Readability of the connection's socket, through its own descriptor.
pub(crate) struct Watch {
    /// The duplicate, as a tokio socket (only its readiness is used;
    /// dropping it closes the duplicate, not the connection).
    fd: Option<TcpStream>,
    interim: usize,
}

impl Watch {
    /// Watch `conn`'s socket (nothing is watched if it cannot be
    /// duplicated or registered: the body is then sent as before).
    pub fn new(conn: &Conn) -> Watch {
        let fd = rustix::io::fcntl_dupfd_cloexec(conn.stream.as_fd(), 0)
            .ok()
            .map(std::net::TcpStream::from)
            .filter(|s| s.set_nonblocking(true).is_ok())
            .and_then(|s| TcpStream::from_std(s).ok());
        Watch { fd, interim: 0 }
    }

    /// Resolves when bytes (or the end) may have arrived; never, once the
    /// watch has stopped.
    pub async fn readable(&self) {
        match &self.fd {
            Some(fd) => {
                if fd.readable().await.is_err() {
                    self.stopped().await;
                }
            }
            None => self.stopped().await,
        }
    }

    async fn stopped(&self) {
        std::future::pending::<()>().await
    }

    fn stop(&mut self) {
        self.fd = None;
    }

    /// After [`Watch::readable`]: read what arrived, and return a final
    /// answer of 300 or more once one is complete (its head consumed, the
    /// body abandoned). The watch stops at the end of the stream or a read
    /// error (the write that follows reports it), and at a 2xx answer,
    /// which is left in the buffer for the read after the body.
    pub async fn answered(
        &mut self,
        conn: &mut Conn,
        cfg: &ClientConfig,
    ) -> Result<Option<ResponseHead>, Error> {
        loop {
            // What an earlier read took in with a 100 Continue counts too.
            if let Some(head) = self.parse(conn, cfg)? {
                return Ok(Some(head));
            }
            if !self.bytes_waiting() {
                return Ok(None);
            }
            // Bytes are there, so this read does not wait on a plain
            // socket; under TLS they may be a record with no data for us
            // (a session ticket), which the bound ends.
            match tokio::time::timeout(PEEK_READ, conn.fill(PEEK_READ, "reading an early answer"))
                .await
            {
                Err(_) | Ok(Err(Error::Timeout(_))) => continue,
                Ok(Ok(0)) | Ok(Err(_)) => {
                    self.stop();
                    return Ok(None);
                }
                Ok(Ok(_)) => {}
            }
        }
    }

    /// The heads complete in `conn`'s buffer: interim ones skipped, a
    /// final one of 300 or more taken, a 2xx left there (and the watch
    /// stopped).
    fn parse(
        &mut self,
        conn: &mut Conn,
        cfg: &ClientConfig,
    ) -> Result<Option<ResponseHead>, Error> {
        while self.fd.is_some() {
            let Some((head, n)) = parse_response_head(conn.buffered(), &cfg.limits)? else {
                break;
            };
            if (100..200).contains(&head.status) && head.status != 101 {
                conn.consume(n);
                self.interim += 1;
                if self.interim > MAX_INTERIM {
                    return Err(crate::conn::too_many_interim());
                }
                continue;
            }
            if head.status < 300 {
                self.stop();
                break;
            }
            conn.consume(n);
            return Ok(Some(head));
        }
        Ok(None)
    }

    /// Whether bytes wait on the socket (peeked on our own descriptor: the
    /// stream's readiness is tokio's, and it may not have seen them yet).
    /// The end of the stream and errors stop the watch.
    fn bytes_waiting(&mut self) -> bool {
        let Some(fd) = &self.fd else { return false };
        let mut probe = [0u8; 1];
        let peeked = rustix::net::recv(
            fd,
            &mut probe[..],
            rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT,
        );
        match peeked {
            Ok((n, _)) if n > 0 => true,
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {
                // Nothing there: the next readiness is for new bytes. (The
                // readiness tokio keeps is cleared only by a read it sees.)
                let _ = fd.try_io(tokio::io::Interest::READABLE, || {
                    Err::<(), _>(std::io::Error::from(std::io::ErrorKind::WouldBlock))
                });
                false
            }
            _ => {
                self.stop();
                false
            }
        }
    }
}

/// The longest one read of an early answer may take once bytes are there:
/// on a plain socket they are read at once; under TLS they may be a record
/// with nothing for us (a session ticket right after the handshake), and
/// the body waits this long once.
const PEEK_READ: Duration = Duration::from_millis(20);

/// Write all of `buf` (without flushing: TLS flushes once at the end of
/// the body), unless the server answers first.
pub(crate) async fn write_watched(
    conn: &mut Conn,
    watch: &mut Watch,
    buf: &[u8],
    cfg: &ClientConfig,
) -> Result<Option<ResponseHead>, Error> {
    let mut pos = 0;
    while pos < buf.len() {
        // `write` gives up nothing when dropped (plain and TLS streams
        // take bytes only when they return them as written).
        tokio::select! {
            biased;
            () = watch.readable() => {
                if let Some(head) = watch.answered(conn, cfg).await? {
                    return Ok(Some(head));
                }
            }
            r = tokio::time::timeout(cfg.io_timeout, conn.stream.write(&buf[pos..])) => match r {
                Ok(Ok(0)) => {
                    return Err(Error::io("sending the request body")(io::Error::from(
                        io::ErrorKind::WriteZero,
                    )))
                }
                Ok(Ok(n)) => pos += n,
                Ok(Err(e)) => return Err(Error::io("sending the request body")(e)),
                Err(_) => return Err(Error::Timeout("sending the request body")),
            },
        }
    }
    Ok(None)
}
