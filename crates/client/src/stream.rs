//! Bodies of unknown length (a pipe, stdin): sent with
//! `Transfer-Encoding: chunked`, one chunk per read, so memory stays at one
//! buffer however long the stream is.

use tokio::io::{AsyncRead, AsyncReadExt};
use wirespeed_proto::ResponseHead;

use crate::conn::Conn;
use crate::early::{write_watched, Watch};
use crate::Observer;
use crate::{ClientConfig, Error};

/// A byte stream read while it is sent.
pub struct StreamBody {
    reader: Box<dyn AsyncRead + Send + Unpin>,
    observer: Option<Observer>,
    on_end: Option<Box<dyn FnOnce() + Send>>,
}

impl StreamBody {
    pub fn new(reader: impl AsyncRead + Send + Unpin + 'static) -> StreamBody {
        StreamBody {
            reader: Box::new(reader),
            observer: None,
            on_end: None,
        }
    }

    /// Be told when the stream ended and its last chunk is going out (the
    /// wait for the answer starts: a progress bar's "finishing").
    pub fn on_end(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        self.on_end = Some(Box::new(f));
        self
    }

    /// See the bytes as they are sent (hashing).
    pub fn observe(mut self, f: impl FnMut(&[u8]) + Send + 'static) -> Self {
        self.observer = Some(Box::new(f));
        self
    }
}

/// Send `s` as chunks and the last chunk, unless the server answers
/// first (then its head: see [`Watch`]).
pub(crate) async fn send_chunked(
    conn: &mut Conn,
    watch: &mut Watch,
    s: &mut StreamBody,
    cfg: &ClientConfig,
    report: &impl Fn(u64),
) -> Result<Option<ResponseHead>, Error> {
    const HEAD: usize = 18; // up to 16 hex digits and CRLF
    let cap = cfg.write_buffer.max(4096);
    let mut buf = vec![0u8; HEAD + cap + 2];
    loop {
        // The input may be slow (a pipe, a person): the answer is watched
        // while it is awaited too. Reads lose nothing when dropped.
        let n = tokio::select! {
            biased;
            () = watch.readable() => {
                if let Some(head) = watch.answered(conn, cfg).await? {
                    return Ok(Some(head));
                }
                continue;
            }
            r = s.reader.read(&mut buf[HEAD..HEAD + cap]) => {
                r.map_err(Error::io("reading the input stream"))?
            }
        };
        if n == 0 {
            if let Some(f) = s.on_end.take() {
                f();
            }
            conn.write_all(b"0\r\n\r\n", cfg.io_timeout, "sending the request body")
                .await?;
            return Ok(None);
        }
        if let Some(o) = s.observer.as_mut() {
            o(&buf[HEAD..HEAD + n]);
        }
        // The size line goes right before the data so each chunk is one write.
        let line = format!("{n:x}\r\n");
        let start = HEAD - line.len();
        buf[start..HEAD].copy_from_slice(line.as_bytes());
        buf[HEAD + n..HEAD + n + 2].copy_from_slice(b"\r\n");
        if let Some(head) = write_watched(conn, watch, &buf[start..HEAD + n + 2], cfg).await? {
            return Ok(Some(head));
        }
        report(n as u64);
    }
}
