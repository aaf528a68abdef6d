//! The connection a request arrives on: its byte stream and its read
//! buffer, which outlive each exchange (the buffer may already hold the next
//! pipelined request).

use std::net::SocketAddr;
use std::sync::Arc;

use wirespeed_io::Pace;
pub(crate) use wirespeed_io::ReadBuf;

use crate::io::Transport;
use crate::ServerConfig;

/// One accepted connection: the byte stream, its read buffer, the settings.
pub(crate) struct Conn {
    pub io: Box<dyn Transport>,
    pub rbuf: ReadBuf,
    pub cfg: Arc<ServerConfig>,
    pub peer: SocketAddr,
    /// Becomes true when the server shuts down: answers then say `Connection: close`.
    pub stop: tokio::sync::watch::Receiver<bool>,
    /// The current exchange's body pacing (none unless a handler set it):
    /// reset before each request.
    pub pacing: Pacing,
    /// Under `--congestion-control auto`: BBR, moved to CUBIC once the link
    /// shows no random loss; told as file bodies go out with sendfile.
    pub clean_link: Option<wirespeed_io::clean_link::CleanLink>,
}

/// The paces of one exchange's bodies: `down` for the response, `up` for
/// the request.
#[derive(Default, Clone)]
pub struct Pacing {
    pub down: Option<Pace>,
    pub up: Option<Pace>,
}
