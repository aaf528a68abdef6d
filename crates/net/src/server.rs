//! Accept loop, per-connection loop, graceful shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::io::IoSlice;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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
use crate::head_scan::HeadScan;
use crate::io::{write_all_vectored, Transport};
use crate::linger::lingering_close;
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
    stats: Arc<ConnectionStats>,
}

/// Live connection counts, shared with whoever reports them (metrics):
/// cheap to read from any thread.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    open: AtomicUsize,
    refused: AtomicU64,
    busy: AtomicUsize,
}

impl ConnectionStats {
    /// Connections open now (accepted and admitted, not yet closed).
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Requests in progress now (head read, exchange not yet complete):
    /// what a stop waits for.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }

    /// Connections refused with 503 (or closed at once) at a connection cap since start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Refusals answered at once at most; more arriving meanwhile are closed
/// unanswered, so a flood at the cap cannot pile up descriptors.
const MAX_REFUSING: usize = 64;
/// Everything a refusal may take: TLS handshake, the 503, the lingering close.
const REFUSAL_TIME: Duration = Duration::from_secs(2);
/// First and longest pause after a failed accept (EMFILE and friends).
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Why a connection is turned away.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    Total,
    PerIp,
}

impl Refusal {
    fn body(self) -> &'static str {
        match self {
            Refusal::Total => "the server is at its connection limit; retry shortly\n",
            Refusal::PerIp => "too many connections from your address; retry shortly\n",
        }
    }
}

/// Open connections per peer IP, kept only while `max_connections_per_ip` is set.
type PerIp = Mutex<HashMap<IpAddr, usize>>;

/// One admitted connection's place in the counts, given back on drop (also
/// when the task is aborted at shutdown).
struct Slot {
    stats: Arc<ConnectionStats>,
    per_ip: Option<(Arc<PerIp>, IpAddr)>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
        if let Some((map, ip)) = &self.per_ip {
            let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(n) = map.get_mut(ip) {
                *n -= 1;
                if *n == 0 {
                    map.remove(ip);
                }
            }
        }
    }
}

/// One request in progress in [`ConnectionStats::busy`], until dropped
/// (also when the task is aborted).
struct Busy<'a>(&'a ConnectionStats);

impl<'a> Busy<'a> {
    fn enter(stats: &'a ConnectionStats) -> Self {
        stats.busy.fetch_add(1, Ordering::Relaxed);
        Busy(stats)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Bounded exponential pause after failed accepts, logged once per burst.
#[derive(Default)]
struct AcceptBackoff {
    failures: u64,
    since: Option<Instant>,
}

impl AcceptBackoff {
    fn failed(&mut self, e: &std::io::Error) -> Duration {
        self.failures += 1;
        if self.failures == 1 {
            self.since = Some(Instant::now());
            let exhausted = wirespeed_io::is_resource_exhaustion(e);
            tracing::warn!(error = %e, exhausted, "accept failing; backing off until it recovers");
        }
        let shift = (self.failures - 1).min(10) as u32;
        (ACCEPT_BACKOFF_MIN * (1 << shift)).min(ACCEPT_BACKOFF_MAX)
    }

    fn succeeded(&mut self) {
        if self.failures > 0 {
            let secs = self.since.map_or(0.0, |t| t.elapsed().as_secs_f64());
            tracing::warn!(failures = self.failures, secs, "accept recovered");
            *self = AcceptBackoff::default();
        }
    }
}

impl Server {
    pub fn new(cfg: ServerConfig) -> Self {
        Server {
            cfg: Arc::new(cfg),
            stats: Arc::default(),
        }
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.stats.open()
    }

    /// The live counts, to read while the server runs (e.g. for metrics).
    pub fn stats(&self) -> Arc<ConnectionStats> {
        self.stats.clone()
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

    /// Take a slot for a connection from `ip`, or say why not (atomic, so
    /// accept loops on several listeners sharing this server never overshoot).
    fn admit(&self, ip: IpAddr, per_ip: Option<&Arc<PerIp>>) -> Result<Slot, Refusal> {
        let max = self.cfg.max_connections;
        self.stats
            .open
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .map_err(|_| Refusal::Total)?;
        // From here on, dropping the slot gives the place back.
        let mut slot = Slot {
            stats: self.stats.clone(),
            per_ip: None,
        };
        // A trusted proxy carries many clients: the per-IP cap cannot see
        // them at accept time, so it is the proxy's job (nginx limit_conn).
        let proxy = self.cfg.trusted_proxies.contains(ip);
        if let (Some(map), Some(cap), false) = (per_ip, self.cfg.max_connections_per_ip, proxy) {
            let ip = ip.to_canonical();
            let mut counts = map.lock().unwrap_or_else(|p| p.into_inner());
            let n = counts.get(&ip).copied().unwrap_or(0);
            if n >= cap {
                return Err(Refusal::PerIp);
            }
            counts.insert(ip, n + 1);
            slot.per_ip = Some((map.clone(), ip));
        }
        Ok(slot)
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
        let per_ip: Option<Arc<PerIp>> = self.cfg.max_connections_per_ip.map(|_| Arc::default());
        let refusing = Arc::new(AtomicUsize::new(0));
        let mut backoff = AcceptBackoff::default();
        let mut paused_until: Option<Instant> = None;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tokio::time::sleep_until(paused_until.unwrap_or_else(Instant::now)),
                    if paused_until.is_some() => paused_until = None,
                accepted = listener.accept(), if paused_until.is_none() => {
                    let (tcp, peer) = match accepted {
                        Ok(x) => x,
                        Err(e) => {
                            // EMFILE and friends: pause accepting instead of
                            // spinning; connections meanwhile wait in the backlog.
                            paused_until = Some(Instant::now() + backoff.failed(&e));
                            continue;
                        }
                    };
                    backoff.succeeded();
                    let _ = tcp.set_nodelay(true);
                    self.cfg.congestion.apply(&tcp);
                    let accepted_at = Instant::now();
                    let slot = match self.admit(peer.ip(), per_ip.as_ref()) {
                        Ok(slot) => slot,
                        Err(why) => {
                            // At the cap we accept and answer 503 rather than stop
                            // accepting (nginx's way): a client left in the kernel
                            // backlog cannot tell a full server from a dead one and
                            // times out, while a 503 with Retry-After says "later"
                            // at once and costs one short task.
                            self.stats.refused.fetch_add(1, Ordering::Relaxed);
                            if refusing.load(Ordering::Relaxed) >= MAX_REFUSING {
                                tracing::debug!(%peer, "refusals backlogged; closing unanswered");
                                continue;
                            }
                            refusing.fetch_add(1, Ordering::Relaxed);
                            let refusing = refusing.clone();
                            let acceptor = acceptor.clone();
                            conns.spawn(async move {
                                let _ = tokio::time::timeout(REFUSAL_TIME, refuse(&*acceptor, tcp, peer, why)).await;
                                refusing.fetch_sub(1, Ordering::Relaxed);
                            });
                            continue;
                        }
                    };
                    let cfg = self.cfg.clone();
                    let handler = handler.clone();
                    let acceptor = acceptor.clone();
                    let stop = stop_rx.clone();
                    let stats = self.stats.clone();
                    conns.spawn(async move {
                        let _slot = slot;
                        let first_byte_by = accepted_at + cfg.head_timeout;
                        let io = match tokio::time::timeout_at(first_byte_by, acceptor.accept(tcp)).await {
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
                        serve_conn(io, peer, cfg, handler, stop, first_byte_by, &stats).await;
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

/// Answer a connection over a cap with 503, `Retry-After: 1`, then close;
/// the caller bounds the whole of it by [`REFUSAL_TIME`].
async fn refuse<A: Accept>(acceptor: &A, tcp: TcpStream, peer: SocketAddr, why: Refusal) {
    tracing::debug!(%peer, ?why, "connection refused: at a connection cap");
    let mut io = match acceptor.accept(tcp).await {
        Ok(io) => io,
        Err(_) => return,
    };
    if write_closing_answer(&mut io, 503, &[("Retry-After", b"1")], why.body())
        .await
        .is_err()
    {
        return;
    }
    // Read what the client sent until its FIN, so our close is not a reset
    // that destroys the 503 before the client reads it.
    let _ = io.shutdown().await;
    let mut scratch = [0u8; 4096];
    let mut budget: usize = 64 << 10;
    while budget > 0 {
        match io.read(&mut scratch).await {
            Ok(0) | Err(_) => break,
            Ok(n) => budget = budget.saturating_sub(n),
        }
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

/// `idle_until`: when to give up on a connection that sent no byte of the
/// next head (a fresh connection's first head is due by accept + head timeout,
/// later ones after the idle timeout).
async fn read_head(
    conn: &mut Conn,
    stop: &mut watch::Receiver<bool>,
    idle_until: Instant,
) -> NextHead {
    let limits = &conn.cfg.limits;
    let mut head_deadline: Option<Instant> = None;
    // The head is parsed again only when a line completes, and each byte is
    // searched once: a head trickled a byte per segment costs one parse per
    // line and one search per byte.
    let mut scan = HeadScan::default();
    loop {
        if !conn.rbuf.is_empty() {
            head_deadline.get_or_insert_with(|| Instant::now() + conn.cfg.head_timeout);
            let data = conn.rbuf.data();
            if scan.new_line_end(data) {
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
            // Between requests: wait until `idle_until`, or until shutdown.
            None => tokio::select! {
                r = tokio::time::timeout_at(idle_until, read) => match r {
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
    first_head_by: Instant,
    stats: &ConnectionStats,
) {
    let _open = ConnectionGuard::open(cfg.observer.as_ref());
    let rbuf = ReadBuf::new(cfg.initial_read_buffer);
    let clean_link = io.plain_tcp().and_then(|t| cfg.congestion.watch(t, None));
    let mut conn = Conn {
        io,
        rbuf,
        cfg,
        peer,
        stop: stop.clone(),
        pacing: Default::default(),
        clean_link,
    };
    // An idle fresh connection is closed after the head timeout, not the
    // longer keep-alive idle timeout: it has not sent a request yet (nginx's
    // client_header_timeout), so silent connections cannot hog slots for long.
    let mut idle_until = first_head_by;
    loop {
        let head = match read_head(&mut conn, &mut stop, idle_until).await {
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
        let busy = Busy::enter(stats);
        let mut ex = Exchange::new(conn, head, framing);
        let result = handler.handle(&mut ex).await;
        let reuse = ex.complete(result).await;
        drop(busy);
        conn = ex.into_conn();
        conn.rbuf.shrink_when_empty(conn.cfg.initial_read_buffer);
        if !reuse || *stop.borrow() {
            lingering_close(&mut conn).await;
            break;
        }
        idle_until = Instant::now() + conn.cfg.idle_timeout;
    }
}

/// Answer a request that could not be parsed or framed, then close.
async fn reject(conn: &mut Conn, e: &Error) {
    let status = e.http_status();
    tracing::debug!(peer = %conn.peer, status, error = %e, "request rejected");
    crate::exchange::report_rejected(conn, e);
    let body = format!("{e}\n");
    let write = write_closing_answer(&mut conn.io, status, &[], &body);
    let _ = tokio::time::timeout(conn.cfg.write_timeout, write).await;
    lingering_close(conn).await;
}

/// Write a whole plain-text answer that ends the connection (`Connection:
/// close`), head and body in one writev; rejections and refusals share it.
async fn write_closing_answer(
    io: &mut Box<dyn Transport>,
    status: u16,
    extra: &[(&str, &[u8])],
    body: &str,
) -> std::io::Result<()> {
    let len = body.len().to_string();
    let date = crate::response::http_date();
    let mut headers: Vec<(&str, &[u8])> = vec![
        ("Date", &date),
        ("Content-Type", b"text/plain; charset=utf-8"),
        ("X-Content-Type-Options", b"nosniff"),
        ("Content-Length", len.as_bytes()),
    ];
    headers.extend_from_slice(extra);
    headers.push(("Connection", b"close"));
    let mut head = Vec::with_capacity(192);
    write_response_head(Version::Http11, status, &headers, &mut head);
    let mut slices = [IoSlice::new(&head), IoSlice::new(body.as_bytes())];
    write_all_vectored(io, &mut slices).await?;
    io.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accept_backoff_grows_to_its_cap_and_resets() {
        let mut b = AcceptBackoff::default();
        let emfile = std::io::Error::from_raw_os_error(24);
        let delays: Vec<Duration> = (0..20).map(|_| b.failed(&emfile)).collect();
        assert_eq!(delays[0], ACCEPT_BACKOFF_MIN);
        assert!(delays.windows(2).all(|w| w[0] <= w[1]), "{delays:?}");
        assert_eq!(*delays.last().unwrap(), ACCEPT_BACKOFF_MAX);
        b.succeeded();
        assert_eq!(b.failures, 0);
        assert_eq!(b.failed(&emfile), ACCEPT_BACKOFF_MIN);
    }
}
