//! The connection loop: each task owns one keep-alive HTTP/1.1 connection
//! (reopened when the server closes it or a request fails) and runs requests
//! on it back to back.
//!
//! Written on tokio and `wirespeed-proto` directly rather than on
//! `wirespeed-client`: the client sends bodies of unknown length chunked
//! (a generated PUT must go with its Content-Length, as curl and real
//! uploaders send it), and its pool hides connects and reconnects, which a
//! load generator must count and control per connection.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::timeout;
use wirespeed_io::ReadBuf;
use wirespeed_proto::{
    parse_response_head, response_framing, write_request_head, BodyDecoder, BodyFraming, Limits,
    ResponseHead,
};

use crate::gen::{Content, Rng};
use crate::stats::{Done, Failure, RunInfo, Stats, Summary};
use crate::workload::{object_name, parse_content_range, pick_range, Kind};
use crate::{Bound, Config, LoadError};

/// Error bodies up to this size are read to keep the connection; larger
/// ones are cheaper to drop with the connection.
const DRAIN_LIMIT: u64 = 64 * 1024;

/// Interim (1xx) answers skipped before a final one.
const MAX_INTERIM: usize = 16;

struct Shared {
    cfg: Config,
    addr: SocketAddr,
    authority: Vec<u8>,
    auth: Option<Vec<u8>>,
    limits: Limits,
}

struct Conn {
    stream: TcpStream,
    rbuf: ReadBuf,
    reused: bool,
}

/// One request's result on a connection.
struct Outcome {
    up: u64,
    down: u64,
    verified: u64,
    result: Result<(), Failure>,
    /// The connection can carry the next request.
    keep: bool,
    /// Failed before any byte of an answer: on a reused connection the
    /// server may simply have closed it while idle, so it is worth one retry.
    fresh: bool,
}

impl Outcome {
    fn new() -> Outcome {
        Outcome {
            up: 0,
            down: 0,
            verified: 0,
            result: Ok(()),
            keep: true,
            fresh: false,
        }
    }
    fn fail(&mut self, f: Failure) {
        self.result = Err(f);
        self.keep = false;
    }
}

/// Run `cfg`: the setup PUTs (untimed), then the timed load.
pub async fn run(cfg: Config) -> Result<Summary, LoadError> {
    if cfg.connections == 0 || cfg.objects == 0 {
        return Err(LoadError::Zero);
    }
    let addr = tokio::net::lookup_host((cfg.target.host.as_str(), cfg.target.port))
        .await
        .map_err(|source| LoadError::Resolve {
            host: cfg.target.host.clone(),
            source,
        })?
        .next()
        .ok_or_else(|| LoadError::Resolve {
            host: cfg.target.host.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
        })?;
    let sh = Arc::new(Shared {
        authority: cfg.target.authority().into_bytes(),
        auth: cfg
            .token
            .as_ref()
            .map(|t| format!("Bearer {t}").into_bytes()),
        limits: Limits::default(),
        addr,
        cfg,
    });

    let (setup_objects, setup_bytes, setup_seconds) = if sh.cfg.setup {
        setup(&sh).await?
    } else {
        (0, 0, 0.0)
    };

    let started = Instant::now();
    let plan = Arc::new(Plan {
        bound: sh.cfg.bound,
        started,
        taken: AtomicU64::new(0),
    });
    // One set of histograms for all connections: per connection they would
    // cost ~190 KiB each (3 significant digits up to an hour), 150 MiB at 256.
    let stats = Arc::new(Mutex::new(Stats::default()));
    let tasks: Vec<_> = (0..sh.cfg.connections)
        .map(|i| {
            tokio::spawn(load_worker(
                sh.clone(),
                plan.clone(),
                stats.clone(),
                i as u64,
            ))
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = started.elapsed();
    let stats = lock(&stats).clone();
    let c = &sh.cfg;
    Ok(stats.summarize(
        elapsed,
        RunInfo {
            url: c.target.url(),
            connections: c.connections,
            mix: c.mix.to_string(),
            size_min: c.sizes.min,
            size_max: c.sizes.max,
            objects: c.objects,
            seed: c.seed,
            setup_objects,
            setup_bytes,
            setup_seconds,
        },
    ))
}

/// Which requests the timed phase may still start.
struct Plan {
    bound: Bound,
    started: Instant,
    taken: AtomicU64,
}

impl Plan {
    /// When requests under way are stopped (timed runs only).
    fn deadline(&self) -> Option<tokio::time::Instant> {
        match self.bound {
            Bound::Duration(d) => Some(tokio::time::Instant::from_std(self.started + d)),
            Bound::Requests(_) => None,
        }
    }

    fn take(&self) -> bool {
        match self.bound {
            Bound::Duration(d) => self.started.elapsed() < d,
            Bound::Requests(n) => self.taken.fetch_add(1, Ordering::Relaxed) < n,
        }
    }
}

/// PUT every object once, over up to `connections` connections; the first
/// failure aborts the run (the load would only report it a thousand times).
async fn setup(sh: &Arc<Shared>) -> Result<(u64, u64, f64), LoadError> {
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let n = (sh.cfg.connections as u64).min(sh.cfg.objects);
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (sh, next) = (sh.clone(), next.clone());
            tokio::spawn(async move {
                let mut conn = None;
                let mut wbuf = vec![0u8; sh.cfg.buffer];
                let mut bytes = 0u64;
                loop {
                    let id = next.fetch_add(1, Ordering::Relaxed);
                    if id >= sh.cfg.objects {
                        return Ok(bytes);
                    }
                    let o = one(&sh, &mut conn, (Kind::Put, id, None), &mut wbuf, None)
                        .await
                        .outcome;
                    bytes += o.up;
                    if let Err(failure) = o.result {
                        return Err((id, failure));
                    }
                }
            })
        })
        .collect();
    let mut bytes = 0;
    for t in tasks {
        match t.await {
            Ok(Ok(b)) => bytes += b,
            Ok(Err((id, failure))) => {
                return Err(LoadError::Setup {
                    name: format!("{}{}", sh.cfg.target.prefix, object_name(sh.cfg.seed, id)),
                    failure,
                })
            }
            Err(_) => {}
        }
    }
    Ok((sh.cfg.objects, bytes, started.elapsed().as_secs_f64()))
}

/// The lock never guards an await; a poisoned one still holds good counts.
fn lock(stats: &Mutex<Stats>) -> std::sync::MutexGuard<'_, Stats> {
    stats.lock().unwrap_or_else(|e| e.into_inner())
}

async fn load_worker(sh: Arc<Shared>, plan: Arc<Plan>, stats: Arc<Mutex<Stats>>, index: u64) {
    let mut rng = Rng::new(sh.cfg.seed, index);
    let mut conn = None;
    let mut wbuf = vec![0u8; sh.cfg.buffer];
    while plan.take() {
        let kind = sh.cfg.mix.pick(rng.next_u64());
        let id = rng.below(sh.cfg.objects);
        let range = (kind == Kind::Range)
            .then(|| pick_range(&mut rng, sh.cfg.sizes.size_of(sh.cfg.seed, id)));
        let a = one(
            &sh,
            &mut conn,
            (kind, id, range),
            &mut wbuf,
            plan.deadline(),
        )
        .await;
        let o = a.outcome;
        if a.cut {
            // The run is over: its bytes moved in time, the request did not finish.
            lock(&stats).record_cut(kind, o.up, o.down, o.verified);
            break;
        }
        if o.result == Err(Failure::Connect) && matches!(sh.cfg.bound, Bound::Duration(_)) {
            // A refusing server would otherwise be hammered in a tight loop.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        lock(&stats).record(Done {
            kind,
            latency: a.latency,
            up: o.up,
            down: o.down,
            verified: o.verified,
            result: o.result,
        });
    }
}

/// How one request ended.
struct Attempted {
    outcome: Outcome,
    /// Excludes connects.
    latency: Duration,
    /// Still under way at the end of a timed run, and stopped there.
    cut: bool,
}

/// One request on `conn` (opened if needed; retried once on a new
/// connection if a reused one turns out closed), stopped at `deadline`.
async fn one(
    sh: &Shared,
    conn: &mut Option<Conn>,
    req: (Kind, u64, Option<(u64, u64)>),
    wbuf: &mut [u8],
    deadline: Option<tokio::time::Instant>,
) -> Attempted {
    let (kind, id, range) = req;
    let mut attempt = 0;
    loop {
        let mut o = Outcome::new();
        let c = match conn {
            Some(c) => c,
            None => {
                // A connect that hangs past the end must not stretch the run.
                let connected = match deadline {
                    Some(d) => tokio::time::timeout_at(d, connect(sh)).await.ok(),
                    None => Some(connect(sh).await),
                };
                match connected {
                    Some(Ok(c)) => conn.insert(c),
                    Some(Err(f)) => {
                        o.fail(f);
                        return Attempted {
                            outcome: o,
                            latency: Duration::ZERO,
                            cut: false,
                        };
                    }
                    None => {
                        return Attempted {
                            outcome: o,
                            latency: Duration::ZERO,
                            cut: true,
                        }
                    }
                }
            }
        };
        let reused = c.reused;
        let t0 = Instant::now();
        let work = async {
            match kind {
                Kind::Put => put(sh, c, id, wbuf, &mut o).await,
                Kind::Get | Kind::Range => get(sh, c, id, range, &mut o).await,
            }
        };
        let cut = match deadline {
            Some(d) => tokio::time::timeout_at(d, work).await.is_err(),
            None => {
                work.await;
                false
            }
        };
        let latency = t0.elapsed();
        if cut || !o.keep {
            *conn = None;
        } else {
            c.reused = true;
        }
        attempt += 1;
        if cut || attempt > 1 || !(o.fresh && reused && o.result.is_err()) {
            return Attempted {
                outcome: o,
                latency,
                cut,
            };
        }
    }
}

async fn connect(sh: &Shared) -> Result<Conn, Failure> {
    let stream = match timeout(sh.cfg.io_timeout, TcpStream::connect(sh.addr)).await {
        Ok(Ok(s)) => s,
        _ => return Err(Failure::Connect),
    };
    let _ = stream.set_nodelay(true);
    Ok(Conn {
        stream,
        rbuf: ReadBuf::new(sh.cfg.buffer.max(sh.limits.max_head_bytes * 2)),
        reused: false,
    })
}

fn request_head(sh: &Shared, method: &str, id: u64, extra: &[(&str, &[u8])]) -> Vec<u8> {
    let target = format!("{}{}", sh.cfg.target.prefix, object_name(sh.cfg.seed, id));
    let mut h: Vec<(&str, &[u8])> = vec![
        ("Host", &sh.authority),
        ("User-Agent", b"wirespeed-bench-load"),
    ];
    if let Some(a) = &sh.auth {
        h.push(("Authorization", a));
    }
    h.extend_from_slice(extra);
    let mut out = Vec::with_capacity(256);
    write_request_head(method, &target, &h, &mut out);
    out
}

async fn write(sh: &Shared, conn: &mut Conn, bytes: &[u8]) -> Result<(), Failure> {
    match timeout(sh.cfg.io_timeout, conn.stream.write_all(bytes)).await {
        Err(_) => Err(Failure::Timeout),
        Ok(Err(_)) => Err(Failure::Io),
        Ok(Ok(())) => Ok(()),
    }
}

/// One read into the connection buffer; `Ok(0)` is the end of the stream.
async fn fill(conn: &mut Conn, wait: Duration) -> Result<usize, Failure> {
    let cap = conn.rbuf.capacity();
    match timeout(wait, conn.rbuf.fill(&mut conn.stream, cap)).await {
        Err(_) => Err(Failure::Timeout),
        Ok(Err(_)) => Err(Failure::Io),
        Ok(Ok(Some(n))) => Ok(n),
        // Full buffer and the decoder took nothing: framing no sane server sends.
        Ok(Ok(None)) => Err(Failure::Protocol),
    }
}

/// Read the final response head; the error's flag says nothing at all arrived.
async fn read_head(
    sh: &Shared,
    conn: &mut Conn,
    wait: Duration,
) -> Result<ResponseHead, (Failure, bool)> {
    let mut interim = 0;
    loop {
        match parse_response_head(conn.rbuf.data(), &sh.limits) {
            Ok(Some((head, n))) => {
                conn.rbuf.consume(n);
                if (100..200).contains(&head.status) && head.status != 101 {
                    interim += 1;
                    if interim > MAX_INTERIM {
                        return Err((Failure::Protocol, false));
                    }
                    continue;
                }
                return Ok(head);
            }
            Ok(None) => {}
            Err(_) => return Err((Failure::Protocol, false)),
        }
        let nothing_yet = conn.rbuf.is_empty() && interim == 0;
        match fill(conn, wait).await {
            Ok(0) if nothing_yet => return Err((Failure::Io, true)),
            Ok(0) => return Err((Failure::Truncated, false)),
            Ok(_) => {}
            Err(Failure::Io) if nothing_yet => return Err((Failure::Io, true)),
            Err(f) => return Err((f, false)),
        }
    }
}

/// Read a body through `dec`, handing each data slice to `sink`; counts
/// received body bytes into `down`.
async fn read_body(
    sh: &Shared,
    conn: &mut Conn,
    dec: &mut BodyDecoder,
    down: &mut u64,
    mut sink: impl FnMut(&[u8]) -> Result<(), Failure>,
) -> Result<(), Failure> {
    loop {
        if dec.is_done() {
            return Ok(());
        }
        if !conn.rbuf.is_empty() {
            let d = dec
                .decode(conn.rbuf.data())
                .map_err(|_| Failure::Protocol)?;
            let data = &conn.rbuf.data()[d.data.clone()];
            *down += data.len() as u64;
            sink(data)?;
            conn.rbuf.consume(d.consumed);
            if d.done {
                return Ok(());
            }
            if d.consumed > 0 {
                continue;
            }
        }
        if fill(conn, sh.cfg.io_timeout).await? == 0 {
            return if dec.end_of_input() {
                Ok(())
            } else {
                Err(Failure::Truncated)
            };
        }
    }
}

/// After an unexpected status: read a small body to keep the connection.
async fn drain(sh: &Shared, conn: &mut Conn, framing: BodyFraming, o: &mut Outcome) {
    o.keep = o.keep
        && matches!(
            framing,
            BodyFraming::Empty | BodyFraming::Length(0..=DRAIN_LIMIT)
        );
    if !o.keep {
        return;
    }
    let mut dec = BodyDecoder::new(framing, &sh.limits);
    if read_body(sh, conn, &mut dec, &mut o.down, |_| Ok(()))
        .await
        .is_err()
    {
        o.keep = false;
    }
}

/// The framing of `head` and whether the connection survives the response.
fn framing_of(method: &str, head: &ResponseHead) -> Result<(BodyFraming, bool), Failure> {
    let framing = response_framing(method, head).map_err(|_| Failure::Protocol)?;
    let keep = head.keep_alive() && framing != BodyFraming::UntilClose;
    Ok((framing, keep))
}

async fn put(sh: &Shared, conn: &mut Conn, id: u64, wbuf: &mut [u8], o: &mut Outcome) {
    let size = sh.cfg.sizes.size_of(sh.cfg.seed, id);
    let content = Content::new(sh.cfg.seed, id);
    let len = size.to_string();
    let head = request_head(sh, "PUT", id, &[("Content-Length", len.as_bytes())]);
    // The head rides in the first body write.
    let first = head.len().min(wbuf.len());
    wbuf[..first].copy_from_slice(&head[..first]);
    let mut filled = first;
    let mut head_left = &head[first..];
    loop {
        if !head_left.is_empty() {
            // A head longer than the buffer (a huge token): send it alone.
            if let Err(f) = write(sh, conn, &wbuf[..filled]).await {
                o.fresh = true;
                return o.fail(f);
            }
            let n = head_left.len().min(wbuf.len());
            wbuf[..n].copy_from_slice(&head_left[..n]);
            head_left = &head_left[n..];
            filled = n;
            continue;
        }
        let n = ((wbuf.len() - filled) as u64).min(size - o.up) as usize;
        content.fill(o.up, &mut wbuf[filled..filled + n]);
        if let Err(f) = write(sh, conn, &wbuf[..filled + n]).await {
            // The server may have refused early (401, 413, 507) and closed:
            // its answer says more than the broken pipe.
            o.fresh = o.up == 0;
            match read_head(sh, conn, Duration::from_secs(1)).await {
                Ok(h) => o.fail(Failure::Status(h.status)),
                Err(_) => o.fail(f),
            }
            return;
        }
        o.up += n as u64;
        filled = 0;
        if o.up == size {
            break;
        }
    }
    let head = match read_head(sh, conn, sh.cfg.io_timeout).await {
        Ok(h) => h,
        Err((f, nothing)) => {
            // The whole body went out: a PUT is idempotent, so retrying on a
            // new connection is still right when nothing came back.
            o.fresh = nothing;
            return o.fail(f);
        }
    };
    let (framing, keep) = match framing_of("PUT", &head) {
        Ok(x) => x,
        Err(f) => return o.fail(f),
    };
    o.keep = keep;
    drain(sh, conn, framing, o).await;
    if !(200..300).contains(&head.status) {
        o.result = Err(Failure::Status(head.status));
    }
}

async fn get(sh: &Shared, conn: &mut Conn, id: u64, range: Option<(u64, u64)>, o: &mut Outcome) {
    let size = sh.cfg.sizes.size_of(sh.cfg.seed, id);
    let content = Content::new(sh.cfg.seed, id);
    let range_field = range.map(|(a, b)| format!("bytes={a}-{}", b - 1));
    let extra: Vec<(&str, &[u8])> = range_field
        .iter()
        .map(|r| ("Range", r.as_bytes()))
        .collect();
    let head = request_head(sh, "GET", id, &extra);
    if let Err(f) = write(sh, conn, &head).await {
        o.fresh = true;
        return o.fail(f);
    }
    let head = match read_head(sh, conn, sh.cfg.io_timeout).await {
        Ok(h) => h,
        Err((f, nothing)) => {
            o.fresh = nothing;
            return o.fail(f);
        }
    };
    let (framing, keep) = match framing_of("GET", &head) {
        Ok(x) => x,
        Err(f) => return o.fail(f),
    };
    o.keep = keep;
    let want_status = if range.is_some() { 206 } else { 200 };
    if head.status != want_status {
        drain(sh, conn, framing, o).await;
        o.result = Err(Failure::Status(head.status));
        return;
    }
    let (start, end) = range.unwrap_or((0, size));
    if range.is_some() {
        let got = head.header("content-range").and_then(parse_content_range);
        if got != Some((start, end, size)) {
            return o.fail(Failure::Protocol);
        }
    }
    // Stream the body through the verifier: a short or long body is
    // corruption too (the missing or extra bytes count).
    let mut dec = BodyDecoder::new(framing, &sh.limits);
    let (mut at, mut bad, mut verified) = (start, 0u64, 0u64);
    let r = read_body(sh, conn, &mut dec, &mut o.down, |data| {
        let inside = (data.len() as u64).min(end.saturating_sub(at)) as usize;
        bad += content.mismatches(at, &data[..inside]);
        bad += (data.len() - inside) as u64;
        verified += inside as u64;
        at += data.len() as u64;
        Ok(())
    })
    .await;
    o.verified = verified;
    if let Err(f) = r {
        return o.fail(f);
    }
    if framing == BodyFraming::UntilClose {
        o.keep = false;
    }
    bad += end.saturating_sub(at);
    if bad > 0 {
        o.result = Err(Failure::Corrupt(bad));
    }
}
