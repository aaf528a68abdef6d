//! Accept loop, per-connection loop, graceful shutdown.

use std::future::Future;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use wirespeed_proto::{
    parse_request_head, request_framing, write_response_head, ProtoError, RequestHead, Version,
};

use crate::conn::{Conn, ReadBuf};
use crate::exchange::Exchange;
use crate::io::{write_all_vectored, Transport};
use crate::observe::ConnectionGuard;
use crate::{Error, Handler, ServerConfig, Timeout};

/// Turns an accepted TCP stream into a transport (e.g. a TLS handshake).
/// Returning `Err` drops the connection; it is logged at debug level.
pub trait Accept: Send + Sync + 'static {
    fn accept(
        &self,
        tcp: TcpStream,
    ) -> impl Future<Output = std::io::Result<Box<dyn Transport>>> + Send;
}

/// Plain TCP: the stream is the transport.
pub struct PlainTcp;

impl Accept for PlainTcp {
    async fn accept(&self, tcp: TcpStream) -> std::io::Result<Box<dyn Transport>> {
        Ok(Box::new(tcp))
    }
}

/// The HTTP/1.1 server.
pub struct Server {
    cfg: Arc<ServerConfig>,
}

impl Server {
    pub fn new(cfg: ServerConfig) -> Self {
        Server { cfg: Arc::new(cfg) }
    }

    /// Serve plain HTTP on `listener` until `shutdown` resolves, then stop
    /// accepting, give in-flight requests `shutdown_grace` to finish, and return.
    pub async fn serve<H: Handler>(
        &self,
        listener: TcpListener,
        handler: Arc<H>,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        self.serve_with(listener, Arc::new(PlainTcp), handler, shutdown)
            .await
    }

    /// Like [`serve`](Self::serve) with a custom acceptor (TLS).
    pub async fn serve_with<A: Accept, H: Handler>(
        &self,
        listener: TcpListener,
        acceptor: Arc<A>,
        handler: Arc<H>,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut conns = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => {
                    let (tcp, peer) = match accepted {
                        Ok(x) => x,
                        Err(e) => {
                            // EMFILE and friends: back off instead of spinning.
                            tracing::warn!(error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = tcp.set_nodelay(true);
                    let cfg = self.cfg.clone();
                    let handler = handler.clone();
                    let acceptor = acceptor.clone();
                    let stop = stop_rx.clone();
                    conns.spawn(async move {
                        let io = match tokio::time::timeout(cfg.head_timeout, acceptor.accept(tcp)).await {
                            Ok(Ok(io)) => io,
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, error = %e, "connection setup failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "connection setup timed out");
                                return;
                            }
                        };
                        serve_conn(io, peer, cfg, handler, stop).await;
                    });
                }
                // Reap finished connection tasks so the set stays small.
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
        drop(listener);
        let _ = stop_tx.send(true);
        let grace = tokio::time::sleep(self.cfg.shutdown_grace);
        tokio::pin!(grace);
        loop {
            tokio::select! {
                next = conns.join_next() => if next.is_none() { break },
                _ = &mut grace => {
                    tracing::warn!(open = conns.len(), "shutdown grace period over; closing connections");
                    conns.abort_all();
                    while conns.join_next().await.is_some() {}
                    break;
                }
            }
        }
        Ok(())
    }
}

/// What reading the next request head produced.
enum NextHead {
    Head(RequestHead),
    /// Clean end: EOF between requests, idle timeout, or shutdown.
    Close,
    /// A protocol error to answer before closing.
    Reject(Error),
}

async fn read_head(conn: &mut Conn, stop: &mut watch::Receiver<bool>) -> NextHead {
    let limits = &conn.cfg.limits;
    let mut head_deadline: Option<Instant> = None;
    // Bytes of the buffered head already seen without a new line end: the
    // head is parsed again only when a line completes, so a head trickled a
    // byte per segment costs one parse per line, not one per byte.
    let mut scanned = 0;
    loop {
        if !conn.rbuf.is_empty() {
            head_deadline.get_or_insert_with(|| Instant::now() + conn.cfg.head_timeout);
            let data = conn.rbuf.data();
            if memchr::memchr(b'\n', &data[scanned.min(data.len())..]).is_some() {
                scanned = data.len();
                match parse_request_head(data, limits) {
                    Ok(Some((head, n))) => {
                        conn.rbuf.consume(n);
                        return NextHead::Head(head);
                    }
                    Ok(None) => {}
                    Err(e) => return NextHead::Reject(e.into()),
                }
            }
        }
        let cap = limits.max_head_bytes;
        let read = conn.rbuf.fill(&mut conn.io, cap);
        let result = match head_deadline {
            // Between requests: wait up to the idle timeout, or until shutdown.
            None => tokio::select! {
                r = tokio::time::timeout(conn.cfg.idle_timeout, read) => match r {
                    Ok(r) => r,
                    Err(_) => {
                        crate::exchange::report_timeout(&conn.cfg, Timeout::Idle);
                        return NextHead::Close;
                    }
                },
                _ = stop.changed() => return NextHead::Close,
            },
            // Mid-head: the whole head must arrive by its deadline (slowloris).
            Some(at) => match tokio::time::timeout_at(at, read).await {
                Ok(r) => r,
                Err(_) => return NextHead::Reject(Error::Timeout(Timeout::Head)),
            },
        };
        match result {
            Ok(Some(0)) => {
                if !conn.rbuf.is_empty() {
                    tracing::debug!(peer = %conn.peer, "connection closed mid-head");
                }
                return NextHead::Close;
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                // Full without a complete head: the parser says which limit
                // (a request target too long is 414, anything else 431).
                return NextHead::Reject(match parse_request_head(conn.rbuf.data(), limits) {
                    Err(e) => e.into(),
                    Ok(_) => ProtoError::HeadTooLarge.into(),
                });
            }
            Err(e) => {
                tracing::debug!(peer = %conn.peer, error = %e, "read failed");
                return NextHead::Close;
            }
        }
    }
}

async fn serve_conn<H: Handler>(
    io: Box<dyn Transport>,
    peer: SocketAddr,
    cfg: Arc<ServerConfig>,
    handler: Arc<H>,
    mut stop: watch::Receiver<bool>,
) {
    let _open = ConnectionGuard::open(cfg.observer.as_ref());
    let rbuf = ReadBuf::new(cfg.initial_read_buffer);
    let mut conn = Conn {
        io,
        rbuf,
        cfg,
        peer,
        stop: stop.clone(),
    };
    loop {
        let head = match read_head(&mut conn, &mut stop).await {
            NextHead::Head(h) => h,
            NextHead::Close => break,
            NextHead::Reject(e) => {
                reject(&mut conn, &e).await;
                break;
            }
        };
        let framing = match request_framing(&head) {
            Ok(f) => f,
            Err(e) => {
                reject(&mut conn, &e.into()).await;
                break;
            }
        };
        let mut ex = Exchange::new(conn, head, framing);
        let result = handler.handle(&mut ex).await;
        let reuse = ex.complete(result).await;
        conn = ex.into_conn();
        conn.rbuf.shrink_when_empty(conn.cfg.initial_read_buffer);
        if !reuse || *stop.borrow() {
            lingering_close(&mut conn).await;
            break;
        }
    }
}

/// Answer a request that could not be parsed or framed, then close.
async fn reject(conn: &mut Conn, e: &Error) {
    let status = e.http_status();
    tracing::debug!(peer = %conn.peer, status, error = %e, "request rejected");
    crate::exchange::report_rejected(conn, e);
    let body = format!("{e}\n");
    let len = body.len().to_string();
    let date = crate::response::http_date();
    let headers: [(&str, &[u8]); 4] = [
        ("Date", &date),
        ("Content-Type", b"text/plain; charset=utf-8"),
        ("Content-Length", len.as_bytes()),
        ("Connection", b"close"),
    ];
    let mut head = Vec::with_capacity(160);
    write_response_head(Version::Http11, status, &headers, &mut head);
    let mut slices = [IoSlice::new(&head), IoSlice::new(body.as_bytes())];
    let write = write_all_vectored(&mut conn.io, &mut slices);
    if tokio::time::timeout(conn.cfg.write_timeout, write)
        .await
        .is_ok()
    {
        let _ = conn.io.flush().await;
    }
    lingering_close(conn).await;
}

/// Close gracefully: send FIN, then read and drop what the peer still sends
/// for a moment, so unread request bytes do not turn our close into a reset
/// that destroys the response before the client reads it (nginx's lingering close).
async fn lingering_close(conn: &mut Conn) {
    let _ = tokio::time::timeout(Duration::from_secs(1), conn.io.shutdown()).await;
    let mut scratch = [0u8; 8192];
    let mut budget: usize = 1 << 20;
    let linger = async {
        while budget > 0 {
            match conn.io.read(&mut scratch).await {
                Ok(0) | Err(_) => break,
                Ok(n) => budget = budget.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), linger).await;
}
