//! Request bodies: bytes and files, always with a known length, streamed.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wirespeed_proto::ResponseHead;

use crate::conn::Conn;
use crate::early::{write_watched, Watch};
use crate::{ClientConfig, Error, Observer};

/// Told how many more body bytes went out (progress bars).
pub type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// A request body: a sequence of byte strings and file ranges, sent with a
/// Content-Length that is the sum of their lengths.
#[derive(Default)]
pub struct Body {
    parts: Vec<Part>,
    progress: Option<Progress>,
}

enum Part {
    Bytes(Vec<u8>),
    File(FileBody),
    Stream(crate::stream::StreamBody),
}

/// A range of a file, read from disk while it is sent.
pub struct FileBody {
    file: Arc<File>,
    path: PathBuf,
    offset: u64,
    len: u64,
    observer: Option<Observer>,
}

impl FileBody {
    /// The whole file; its length is taken now (it is the Content-Length).
    pub fn open(path: &Path) -> Result<FileBody, Error> {
        let file_err = |source| Error::File {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(file_err)?;
        let meta = file.metadata().map_err(file_err)?;
        if !meta.is_file() {
            return Err(file_err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            )));
        }
        Ok(FileBody {
            file: Arc::new(file),
            path: path.to_path_buf(),
            offset: 0,
            len: meta.len(),
            observer: None,
        })
    }

    /// Only `len` bytes from `offset`.
    pub fn range(mut self, offset: u64, len: u64) -> Self {
        self.offset = offset;
        self.len = len;
        self
    }

    /// See the bytes as they are sent (disables sendfile for this body).
    pub fn observe(mut self, f: impl FnMut(&[u8]) + Send + 'static) -> Self {
        self.observer = Some(Box::new(f));
        self
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole range in memory, when it is at most `max` bytes: small
    /// files are cheaper read (and hashed) inline and sent with the head in
    /// one write than streamed through a reader thread.
    pub fn read_small(&self, max: u64) -> Option<Result<Vec<u8>, Error>> {
        use std::os::unix::fs::FileExt;
        if self.len > max {
            return None;
        }
        let mut buf = vec![0u8; self.len as usize];
        let mut filled = 0;
        while filled < buf.len() {
            match self
                .file
                .read_at(&mut buf[filled..], self.offset + filled as u64)
            {
                Ok(0) => {
                    return Some(Err(Error::BodyLength {
                        announced: self.len,
                        got: filled as u64,
                    }))
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Some(Err(Error::File {
                        path: self.path.clone(),
                        source,
                    }))
                }
            }
        }
        Some(Ok(buf))
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Body({} bytes in {} parts)",
            self.len(),
            self.parts.len()
        )
    }
}

impl Body {
    pub fn empty() -> Body {
        Body::default()
    }

    pub fn bytes(b: impl Into<Vec<u8>>) -> Body {
        Body::default().then_bytes(b)
    }

    pub fn file(f: FileBody) -> Body {
        Body::default().then_file(f)
    }

    /// A stream of unknown length, sent chunked; it is the whole body.
    pub fn stream(s: crate::stream::StreamBody) -> Body {
        Body {
            parts: vec![Part::Stream(s)],
            progress: None,
        }
    }

    /// Append bytes (e.g. a multipart part header).
    pub fn then_bytes(mut self, b: impl Into<Vec<u8>>) -> Body {
        let b = b.into();
        if !b.is_empty() {
            self.parts.push(Part::Bytes(b));
        }
        self
    }

    /// Append a file range.
    pub fn then_file(mut self, f: FileBody) -> Body {
        self.parts.push(Part::File(f));
        self
    }

    /// Report sent bytes to `f`.
    pub fn progress(mut self, f: Progress) -> Body {
        self.progress = Some(f);
        self
    }

    /// The Content-Length.
    pub fn len(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Bytes(b) => b.len() as u64,
                Part::File(f) => f.len,
                Part::Stream(_) => 0,
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0 && !self.is_chunked()
    }

    /// Append the whole body to `out` if it is only in-memory bytes of at
    /// most `max` in total (then the head and body leave in one write, one
    /// segment). Returns the bytes appended, or `None` (nothing appended).
    pub(crate) fn append_small(&self, out: &mut Vec<u8>, max: usize) -> Option<u64> {
        let mut total = 0usize;
        for p in &self.parts {
            match p {
                Part::Bytes(b) => total += b.len(),
                _ => return None,
            }
        }
        if total == 0 || total > max {
            return None;
        }
        for p in &self.parts {
            if let Part::Bytes(b) = p {
                out.extend_from_slice(b);
            }
        }
        Some(total as u64)
    }

    /// Report `n` bytes sent to the progress callback, if any.
    pub(crate) fn report_sent(&self, n: u64) {
        if let Some(p) = &self.progress {
            p(n)
        }
    }

    /// Sent with `Transfer-Encoding: chunked` (the length is not known).
    pub(crate) fn is_chunked(&self) -> bool {
        matches!(self.parts.first(), Some(Part::Stream(_)))
    }

    pub(crate) fn is_file(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::File(_)))
    }

    /// Whether the body can be sent a second time (observers would see the
    /// bytes twice, so a body with one is sent once).
    pub(crate) fn replayable(&self) -> bool {
        self.parts.iter().all(|p| match p {
            Part::Bytes(_) => true,
            Part::File(f) => f.observer.is_none(),
            Part::Stream(_) => false,
        })
    }
}

/// Send the whole body on `conn`, unless the server gives its final
/// answer first ([`Watch`]): then that answer's head, the body abandoned
/// (the connection cannot carry another request).
pub(crate) async fn send_body(
    conn: &mut Conn,
    body: &mut Body,
    cfg: &ClientConfig,
) -> Result<Option<ResponseHead>, Error> {
    let progress = body.progress.clone();
    let report = |n: u64| {
        if let Some(p) = &progress {
            p(n)
        }
    };
    let mut watch = Watch::new(conn);
    if let Some(head) = watch.answered(conn, cfg).await? {
        return Ok(Some(head));
    }
    for part in &mut body.parts {
        let early = match part {
            Part::Stream(s) => {
                return crate::stream::send_chunked(conn, &mut watch, s, cfg, &report).await
            }
            Part::Bytes(b) => {
                let early = write_watched(conn, &mut watch, b, cfg).await?;
                report(b.len() as u64);
                early
            }
            Part::File(f) => {
                let zero_copy =
                    cfg.sendfile && f.observer.is_none() && conn.stream.plain_tcp().is_some();
                if zero_copy {
                    send_file_zero_copy(conn, &mut watch, f, cfg, &report).await?
                } else {
                    send_file_pipelined(conn, &mut watch, f, cfg, &report).await?
                }
            }
        };
        if early.is_some() {
            return Ok(early);
        }
    }
    conn.write_all(&[], cfg.io_timeout, "sending the request body")
        .await?;
    Ok(None)
}

/// Read (and observe) the file on a blocking thread, write on this task: the
/// two overlap, so hashing does not stall the socket. Buffers
/// are recycled, so the whole upload allocates a handful of them.
async fn send_file_pipelined(
    conn: &mut Conn,
    watch: &mut Watch,
    f: &mut FileBody,
    cfg: &ClientConfig,
    report: &impl Fn(u64),
) -> Result<Option<ResponseHead>, Error> {
    let bufsize = cfg.write_buffer.max(4096);
    let (tx, mut rx) = tokio::sync::mpsc::channel::<io::Result<Vec<u8>>>(2);
    let (recycle_tx, recycle_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let file = f.file.clone();
    let mut observer = f.observer.take();
    let (offset, len) = (f.offset, f.len);
    let reader = tokio::task::spawn_blocking(move || {
        let end = offset + len;
        let mut pos = offset;
        while pos < end {
            let mut buf = recycle_rx
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(bufsize));
            let want = (end - pos).min(bufsize as u64) as usize;
            buf.resize(want, 0);
            let mut filled = 0;
            while filled < want {
                match file.read_at(&mut buf[filled..], pos + filled as u64) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        return;
                    }
                }
            }
            if filled == 0 {
                let _ = tx.blocking_send(Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shrank",
                )));
                return;
            }
            buf.truncate(filled);
            if let Some(o) = observer.as_mut() {
                o(&buf);
            }
            pos += filled as u64;
            if tx.blocking_send(Ok(buf)).is_err() {
                return; // the sender gave up (socket error)
            }
        }
    });
    let mut sent = 0u64;
    let result: Result<Option<ResponseHead>, Error> = async {
        while let Some(item) = rx.recv().await {
            let buf = item.map_err(|source| match source.kind() {
                io::ErrorKind::UnexpectedEof => Error::BodyLength {
                    announced: len,
                    got: sent,
                },
                _ => Error::File {
                    path: f.path.clone(),
                    source,
                },
            })?;
            if let Some(head) = write_watched(conn, watch, &buf, cfg).await? {
                return Ok(Some(head));
            }
            if let Some(c) = conn.clean_link.as_mut() {
                c.sending(&conn.stream);
            }
            sent += buf.len() as u64;
            report(buf.len() as u64);
            let _ = recycle_tx.send(buf);
        }
        Ok(None)
    }
    .await;
    drop(rx);
    let _ = reader.await;
    if let Some(head) = result? {
        return Ok(Some(head));
    }
    if sent != len {
        return Err(Error::BodyLength {
            announced: len,
            got: sent,
        });
    }
    Ok(None)
}

/// sendfile(2): page-cache pages go to the socket without a trip through
/// user space (the loop is `wirespeed_io`'s, shared with the server).
async fn send_file_zero_copy(
    conn: &mut Conn,
    watch: &mut Watch,
    f: &mut FileBody,
    cfg: &ClientConfig,
    report: &impl Fn(u64),
) -> Result<Option<ResponseHead>, Error> {
    // Large steps: the kernel stops at what the socket buffer takes anyway.
    const STEP: usize = 16 * 1024 * 1024;
    let mut sent = 0u64;
    let result = loop {
        let Some(tcp) = conn.stream.plain_tcp() else {
            return send_file_pipelined(conn, watch, f, cfg, report).await;
        };
        let clean_link = &mut conn.clean_link;
        let (from, left) = (f.offset + sent, f.len - sent);
        let mut now = 0u64;
        // Each sendfile call is whole or not at all: dropped, this future
        // has sent exactly what it reported.
        let done = tokio::select! {
            biased;
            () = watch.readable() => None,
            r = wirespeed_io::send_file(tcp, &f.file, from, left, STEP, cfg.io_timeout, None, |n| {
                now += n;
                report(n);
                if let Some(c) = clean_link.as_mut() {
                    c.sending(tcp);
                }
            }) => Some(r),
        };
        sent += now;
        match done {
            Some(r) => break r,
            None => {
                if let Some(head) = watch.answered(conn, cfg).await? {
                    return Ok(Some(head));
                }
            }
        }
    };
    match result {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(Error::BodyLength {
            announced: f.len,
            got: sent,
        }),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
            Err(Error::Timeout("sending the request body"))
        }
        Err(e) => Err(Error::io("sending the request body")(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn only_small_in_memory_bodies_ride_with_the_head() {
        let mut out = b"HEAD\r\n\r\n".to_vec();
        let body = Body::bytes(b"abc".to_vec()).then_bytes(b"def".to_vec());
        assert_eq!(body.append_small(&mut out, 64), Some(6));
        assert_eq!(out, b"HEAD\r\n\r\nabcdef");

        let mut out = Vec::new();
        assert_eq!(Body::bytes(vec![7u8; 65]).append_small(&mut out, 64), None);
        assert_eq!(Body::empty().append_small(&mut out, 64), None);
        assert!(out.is_empty(), "nothing appended when refused");

        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"file bytes").unwrap();
        let fb = FileBody::open(f.path()).unwrap();
        let body = Body::bytes(b"x".to_vec()).then_file(fb);
        assert_eq!(body.append_small(&mut out, 64), None, "a file part streams");
    }

    #[test]
    fn small_files_are_read_whole_and_big_ones_refused() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"0123456789").unwrap();
        let fb = FileBody::open(f.path()).unwrap();
        assert_eq!(fb.read_small(10).unwrap().unwrap(), b"0123456789");
        assert!(fb.read_small(9).is_none());
        let part = FileBody::open(f.path()).unwrap().range(3, 4);
        assert_eq!(part.read_small(64).unwrap().unwrap(), b"3456");
        let past_end = FileBody::open(f.path()).unwrap().range(8, 4);
        assert!(matches!(
            past_end.read_small(64),
            Some(Err(Error::BodyLength {
                announced: 4,
                got: 2
            }))
        ));
    }
}
