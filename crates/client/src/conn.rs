//! One client connection: the byte stream (plain or TLS), its read buffer,
//! and the head-level reads and writes.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_io::ReadBuf;
use wirespeed_proto::{parse_response_head, ResponseHead};
use wirespeed_tls::ClientTlsStream;

use crate::{ClientConfig, Error, Url};

/// Interim (1xx) responses skipped before a final one; a server sending
/// more is broken or hostile (each costs us a parse, and it could go on
/// forever within the I/O timeout).
pub(crate) const MAX_INTERIM: usize = 16;

pub(crate) fn too_many_interim() -> Error {
    Error::Proto(wirespeed_proto::ProtoError::MalformedHead(
        "more than 16 interim (1xx) responses",
    ))
}

/// Pool key: connections are only shared between identical origins.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PoolKey {
    tls: bool,
    host: String,
    port: u16,
}

impl PoolKey {
    pub fn of(url: &Url) -> Self {
        PoolKey {
            tls: url.tls,
            host: url.host.to_ascii_lowercase(),
            port: url.port,
        }
    }
}

pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<ClientTlsStream>),
}

impl Stream {
    pub fn plain_tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Plain(t) => Some(t),
            Stream::Tls(_) => None,
        }
    }
}

impl std::os::fd::AsFd for Stream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Stream::Plain(t) => t.as_fd(),
            Stream::Tls(s) => s.as_fd(),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

pub(crate) struct Conn {
    pub stream: Stream,
    /// Received, unconsumed bytes.
    rbuf: ReadBuf,
    /// The most the buffer grows to while a head is incomplete.
    rcap: usize,
    pub key: PoolKey,
    /// Taken from the pool (so a failure may just mean it died while idle).
    pub reused: bool,
    /// False once the connection's framing state is no longer trustworthy.
    pub reusable: bool,
    /// Under `--congestion-control auto`: BBR, moved to CUBIC once the link
    /// shows no random loss; told as body bytes go out.
    pub clean_link: Option<wirespeed_io::clean_link::CleanLink>,
}

async fn timed<T>(
    limit: Duration,
    what: &'static str,
    fut: impl Future<Output = io::Result<T>>,
) -> Result<T, Error> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map_err(Error::io(what)),
        Err(_) => Err(Error::Timeout(what)),
    }
}

impl Conn {
    pub async fn connect(
        url: &Url,
        cfg: &ClientConfig,
        tls: &Arc<rustls::ClientConfig>,
        path: &wirespeed_io::clean_link::PathVerdict,
    ) -> Result<Conn, Error> {
        let addr = url.authority();
        let host = url.host.as_str();
        let addrs: Vec<_> = tokio::net::lookup_host((host, url.port))
            .await
            .map_err(|source| Error::Resolve {
                host: host.to_string(),
                source,
            })?
            .collect();
        let mut last = None;
        let mut tcp = None;
        for a in addrs {
            match TcpStream::connect(a).await {
                Ok(t) => {
                    tcp = Some(t);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let tcp = match (tcp, last) {
            (Some(t), _) => t,
            (None, Some(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
                return Err(Error::ConnectionRefused { addr })
            }
            (None, Some(source)) => return Err(Error::Connect { addr, source }),
            (None, None) => {
                return Err(Error::Resolve {
                    host: host.to_string(),
                    source: io::Error::new(io::ErrorKind::NotFound, "no addresses"),
                })
            }
        };
        // Heads are small and must not wait for Nagle; bodies are written in
        // large pieces anyway.
        let _ = tcp.set_nodelay(true);
        cfg.congestion.apply(&tcp);
        let clean_link = cfg.congestion.watch(&tcp, Some(path));
        let stream = if url.tls {
            let s = wirespeed_tls::connect(tls.clone(), host, tcp)
                .await
                .map_err(|e| Error::Tls {
                    host: addr.clone(),
                    message: tls_message(&e),
                })?;
            Stream::Tls(Box::new(s))
        } else {
            Stream::Plain(tcp)
        };
        Ok(Conn {
            stream,
            rbuf: ReadBuf::new(cfg.read_buffer.max(16 * 1024)),
            rcap: cfg
                .read_buffer
                .max(16 * 1024)
                .max(2 * cfg.limits.max_head_bytes),
            key: PoolKey::of(url),
            reused: false,
            reusable: true,
            clean_link,
        })
    }

    /// An idle connection is alive if reading would block: EOF, an error or
    /// unsolicited bytes all mean it must not carry a request.
    pub fn is_alive(&mut self) -> bool {
        let mut probe = [0u8; 1];
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut rb = tokio::io::ReadBuf::new(&mut probe);
        matches!(
            Pin::new(&mut self.stream).poll_read(&mut cx, &mut rb),
            Poll::Pending
        )
    }

    pub fn buffered(&self) -> &[u8] {
        self.rbuf.data()
    }

    pub fn consume(&mut self, n: usize) {
        self.rbuf.consume(n.min(self.rbuf.len()));
    }

    pub async fn write_all(
        &mut self,
        data: &[u8],
        limit: Duration,
        what: &'static str,
    ) -> Result<(), Error> {
        let s = &mut self.stream;
        timed(limit, what, async {
            s.write_all(data).await?;
            s.flush().await
        })
        .await
    }

    /// Read more bytes into the buffer (compacting first). Returns 0 at EOF.
    pub async fn fill(&mut self, limit: Duration, what: &'static str) -> Result<usize, Error> {
        let (rbuf, s) = (&mut self.rbuf, &mut self.stream);
        match timed(limit, what, rbuf.fill(s, self.rcap)).await? {
            Some(n) => Ok(n),
            // Only an incomplete head fills the buffer: the head parser's
            // limit is half the cap, so this is a head far over it.
            None => Err(Error::io(what)(io::Error::new(
                io::ErrorKind::InvalidData,
                "response head larger than the read buffer",
            ))),
        }
    }

    /// Read directly into `out` when the buffer is empty (large body reads
    /// skip the copy through the connection buffer).
    pub async fn read_direct(
        &mut self,
        out: &mut [u8],
        limit: Duration,
        what: &'static str,
    ) -> Result<usize, Error> {
        debug_assert!(self.rbuf.is_empty());
        timed(limit, what, self.stream.read(out)).await
    }

    /// Read a final response head, skipping interim (1xx) responses.
    pub async fn read_head(
        &mut self,
        cfg: &ClientConfig,
        limit: Duration,
    ) -> Result<ResponseHead, Error> {
        let mut interim = 0;
        loop {
            if let Some(head) = self.parse_head(cfg)? {
                if (100..200).contains(&head.status) && head.status != 101 {
                    interim += 1;
                    if interim > MAX_INTERIM {
                        return Err(too_many_interim());
                    }
                    continue;
                }
                return Ok(head);
            }
            let n = self
                .fill(limit, "waiting for the response")
                .await
                .map_err(|e| match e {
                    // A reset before any answer is "no response" too (the server
                    // dropped a kept-alive connection as we reused it).
                    Error::Io { source, .. }
                        if self.rbuf.is_empty()
                            && matches!(
                                source.kind(),
                                io::ErrorKind::ConnectionReset
                                    | io::ErrorKind::BrokenPipe
                                    | io::ErrorKind::UnexpectedEof
                            ) =>
                    {
                        Error::NoResponse
                    }
                    e => e,
                })?;
            if n == 0 {
                return Err(Error::NoResponse);
            }
        }
    }

    /// After sending `Expect: 100-continue`: wait up to `wait` for `100
    /// Continue` (→ `None`, send the body) or a final answer (→ `Some`).
    /// Silence also means `None`: the server may not support Expect.
    pub async fn read_interim(
        &mut self,
        cfg: &ClientConfig,
        wait: Duration,
    ) -> Result<Option<ResponseHead>, Error> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut interim = 0;
        loop {
            if let Some(head) = self.parse_head(cfg)? {
                if head.status == 100 {
                    return Ok(None);
                }
                if (100..200).contains(&head.status) {
                    interim += 1;
                    if interim > MAX_INTERIM {
                        return Err(too_many_interim());
                    }
                    continue;
                }
                return Ok(Some(head));
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match self.fill(left, "waiting for 100 Continue").await {
                Ok(0) => return Err(Error::NoResponse),
                Ok(_) => {}
                Err(Error::Timeout(_)) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    fn parse_head(&mut self, cfg: &ClientConfig) -> Result<Option<ResponseHead>, Error> {
        if self.rbuf.is_empty() {
            return Ok(None);
        }
        match parse_response_head(self.buffered(), &cfg.limits)? {
            Some((head, n)) => {
                self.consume(n);
                Ok(Some(head))
            }
            None => Ok(None),
        }
    }
}

/// rustls errors arrive wrapped in io::Error; show the inner error's text
/// (e.g. "invalid peer certificate: UnknownIssuer"), never rustls' Debug form.
fn tls_message(e: &io::Error) -> String {
    match e.get_ref() {
        Some(inner) => match inner.downcast_ref::<rustls::Error>() {
            Some(tls) => wirespeed_tls::describe_tls_error(tls),
            None => inner.to_string(),
        },
        None => e.to_string(),
    }
}
