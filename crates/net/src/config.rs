use std::sync::Arc;
use std::time::Duration;
use wirespeed_proto::Limits;

use crate::linger::Linger;
use crate::proxies::TrustedProxies;
use crate::writer::FlushPolicy;
use crate::Observer;

/// How a file body goes out on plain TCP (TLS always encrypts from a buffer).
///
/// On loopback the receiver's core does sendfile's only copy from cold page
/// cache and becomes the bottleneck, so a copy loop that splits the work over
/// two cores is faster there; over a real interface sendfile's saved copy
/// wins, hence `Auto` (measurements: `bench/RESULTS.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSend {
    /// Copy loop for loopback peers, sendfile(2) for everyone else.
    Auto,
    /// Always sendfile(2) (zero copy in user space).
    Sendfile,
    /// Always a large-buffer pread/write loop.
    Copy,
}

/// Server settings. `Default` gives the production defaults.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Head/field limits handed to the parser.
    pub limits: Limits,
    /// Initial size of a connection's read buffer; it grows up to
    /// `limits.max_head_bytes` for heads and to `body_buffer` for bodies.
    pub initial_read_buffer: usize,
    /// Read buffer size while a large body streams in.
    pub body_buffer: usize,
    /// Response body writer buffer (seed 000: never write tiny pieces).
    pub write_buffer: usize,
    /// Flush policy of body writers. `PerWrite` exists only for benchmarks.
    pub flush_policy: FlushPolicy,
    /// Time allowed to receive a complete request head once its first byte
    /// arrived (slowloris guard).
    pub head_timeout: Duration,
    /// Time a kept-alive connection may sit idle between requests.
    pub idle_timeout: Duration,
    /// Longest wait for the next piece of a request body.
    pub body_timeout: Duration,
    /// Longest wait for the peer to accept response bytes.
    pub write_timeout: Duration,
    /// An unread request body up to this many bytes is drained after the
    /// response so the connection can be reused; more than that closes it.
    pub drain_limit: u64,
    /// On shutdown, how long in-flight requests may take to finish.
    pub shutdown_grace: Duration,
    /// Files are sent in steps of this many bytes (sendfile or read/write).
    pub file_chunk: usize,
    /// Hold TCP_CORK while a file response goes out on plain TCP (head and
    /// data leave in full segments; see `Exchange::send_file`).
    pub cork_file_sends: bool,
    /// How file bodies leave on plain TCP.
    pub file_send: FileSend,
    /// Told about connections, completed requests, flush storms and
    /// timeouts (metrics, access logs); `None` watches nothing.
    pub observer: Option<Arc<dyn Observer>>,
    /// Open connections at most; the next one is answered 503 and closed.
    /// Default: [`default_max_connections`].
    pub max_connections: usize,
    /// Open connections at most from one IP address (503 beyond); `None`: no cap.
    pub max_connections_per_ip: Option<usize>,
    /// How long a connection closed with request bytes unread keeps reading
    /// them (lingering close), so the peer reads the answer first.
    pub linger: Linger,
    /// Peers whose `X-Forwarded-For`/`-Proto` are believed (the client's
    /// address and scheme for logs, handlers and the origin check); they
    /// are also exempt from `max_connections_per_ip`, carrying many clients.
    pub trusted_proxies: TrustedProxies,
    /// TCP congestion control set on accepted sockets (we send the
    /// downloads); the default leaves the system's.
    pub congestion: wirespeed_io::congestion::Congestion,
}

/// Half the soft open-file limit (at least 1): a connection moving a file
/// holds a second descriptor (the file sent, or the upload's temp file), so at
/// the cap every connection can still open its file instead of hitting EMFILE.
pub fn default_max_connections() -> usize {
    let limit = wirespeed_io::open_file_limit().unwrap_or(1 << 20);
    usize::try_from(limit / 2).unwrap_or(usize::MAX).max(1)
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            limits: Limits::default(),
            initial_read_buffer: 8 * 1024,
            body_buffer: 256 * 1024,
            write_buffer: 64 * 1024,
            flush_policy: FlushPolicy::Buffered,
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(60),
            drain_limit: 256 * 1024,
            shutdown_grace: Duration::from_secs(10),
            file_chunk: 4 * 1024 * 1024,
            cork_file_sends: true,
            file_send: FileSend::Auto,
            observer: None,
            max_connections: default_max_connections(),
            max_connections_per_ip: None,
            linger: Linger::default(),
            trusted_proxies: TrustedProxies::default(),
            congestion: wirespeed_io::congestion::Congestion::system(),
        }
    }
}
