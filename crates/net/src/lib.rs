//! wirespeed's I/O layer: it only moves bytes; every protocol decision is made
//! by `wirespeed-proto`.
//!
//! - [`Server`]: accept loop, per-connection loop (keep-alive, pipelining,
//!   timeouts, 100-continue, draining), graceful shutdown.
//! - [`Exchange`]: one request/response pair handed to a [`Handler`]: the request
//!   head, a body reader that lends out slices of the connection buffer, and the
//!   response side (full body, file, or a buffered [`BodyWriter`]).
//! - [`BodyWriter`]: the seed-000 fix — 64 KiB buffer, no socket write until it
//!   fills or the handler flushes; Content-Length when the body fits, big chunks
//!   otherwise, head + chunk header + data + CRLF in one `writev`.
//! - [`Router`]: a small typed router over [`Handler`] trait objects.

mod config;
mod conn;
mod error;
mod exchange;
mod head_scan;
mod io;
mod linger;
mod mount;
mod observe;
mod proxies;
mod request_body;
mod response;
mod router;
mod server;
mod writer;

pub use config::{default_max_connections, FileSend, ServerConfig};
pub use error::Error;
pub use exchange::Exchange;
pub use io::Transport;
pub use linger::Linger;
pub use mount::{strip_base, Mount, PathPrefix, Placement, PrefixError};
pub use observe::{Completed, Observer, Timeout};
pub use proxies::TrustedProxies;
pub use request_body::FileBodyError;
pub use response::Response;
pub use router::{Handler, Router};
pub use server::{Accept, ConnectionStats, PlainTcp, Server};
pub use wirespeed_io::{Pace, SharedBucket};
pub use wirespeed_proto as proto;
pub use writer::{BodyWriter, FlushPolicy};
