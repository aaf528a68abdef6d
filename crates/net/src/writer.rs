//! The response body writer: the seed-000 fix.
//!
//! A JSON serializer that writes token by token must not become one socket
//! write (and one tiny chunk) per token. `write` only copies into a 64 KiB
//! buffer; bytes reach the socket when the buffer fills, when the handler calls
//! `flush`, or at `finish`. A body that ends while still entirely buffered goes
//! out with Content-Length (head + body in one `writev`); otherwise the body is
//! chunked, one chunk per buffer-full, head + chunk header + data + CRLF in one
//! `writev`. Flush storms (many tiny sends per response) are counted and
//! reported once per route.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use crate::exchange::Exchange;
use crate::Error;

/// When a body writer touches the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    /// Buffer up to the writer's capacity (the default, and the only sane one).
    Buffered,
    /// Send every `write` at once, as its own chunk. Exists only so benchmarks
    /// can show the seed-000 pitfall; never use it in production.
    PerWrite,
}

/// A flush storm: more than this many sends in one response …
pub const STORM_MIN_SENDS: u64 = 1000;
/// … averaging fewer bytes than this per send.
pub const STORM_MAX_AVG_BYTES: u64 = 256;

/// Whether a response's send statistics amount to a flush storm.
pub fn is_flush_storm(sends: u64, bytes: u64) -> bool {
    sends > STORM_MIN_SENDS && bytes < sends.saturating_mul(STORM_MAX_AVG_BYTES)
}

/// Record a storm on `route`; true the first time for that route (so the
/// warning is logged once per route, not once per response).
pub(crate) fn first_storm_on_route(route: &str) -> bool {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut warned = WARNED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    warned.insert(route.to_string())
}

/// How the body bytes are framed on the wire once the head is out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutMode {
    /// Head not sent yet: framing is still open (Content-Length if the body ends in the buffer).
    Pending,
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// HTTP/1.0 peer: raw bytes, the connection closes to end the body.
    UntilClose,
    /// HEAD request: body bytes are counted and dropped.
    Discard,
}

/// Writer state, kept in the [`Exchange`] so the server can finish a body the
/// handler left open.
pub(crate) struct OutState {
    pub buf: Vec<u8>,
    pub cap: usize,
    pub mode: OutMode,
    pub policy: FlushPolicy,
    /// Socket sends made for this body (each is one chunk when chunked).
    pub sends: u64,
    /// Body bytes accepted from the handler.
    pub bytes: u64,
}

/// Streams a response body through a buffer; see the module docs. Obtained from
/// [`Exchange::writer`]. Dropping it without [`finish`](Self::finish) is fine:
/// the server finishes the body after the handler returns.
pub struct BodyWriter<'e> {
    pub(crate) ex: &'e mut Exchange,
}

impl BodyWriter<'_> {
    /// Append `data` to the body. Touches the socket only when the buffer is
    /// full; a write larger than the buffer goes out as one big chunk without
    /// being copied.
    pub async fn write(&mut self, data: &[u8]) -> Result<(), Error> {
        let out = self.ex.out_mut();
        out.bytes += data.len() as u64;
        if out.policy == FlushPolicy::PerWrite {
            out.buf.extend_from_slice(data);
            return self.ex.emit(&[], false).await;
        }
        let room = out.cap - out.buf.len();
        if data.len() <= room {
            out.buf.extend_from_slice(data);
            if out.buf.len() == out.cap {
                return self.ex.emit(&[], false).await;
            }
            return Ok(());
        }
        if out.buf.is_empty() {
            // Big write, empty buffer: send it as its own chunk, no copy.
            return self.ex.emit(data, false).await;
        }
        let (head, rest) = data.split_at(room);
        out.buf.extend_from_slice(head);
        self.ex.emit(&[], false).await?;
        if rest.len() >= self.ex.out_mut().cap {
            self.ex.emit(rest, false).await
        } else {
            self.ex.out_mut().buf.extend_from_slice(rest);
            Ok(())
        }
    }

    /// Send what is buffered now, because the handler asked (e.g. a progress
    /// line a client waits for). This commits the response to chunked framing.
    pub async fn flush(&mut self) -> Result<(), Error> {
        if self.ex.out_mut().buf.is_empty() && self.ex.out_mut().mode != OutMode::Pending {
            return Ok(());
        }
        self.ex.emit(&[], false).await
    }

    /// Bytes currently buffered and not yet sent.
    pub fn buffered(&self) -> usize {
        self.ex.out.as_ref().map_or(0, |o| o.buf.len())
    }

    /// End the body: Content-Length if everything is still buffered, else the
    /// last chunk.
    pub async fn finish(self) -> Result<(), Error> {
        self.ex.finish_body().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storm_thresholds() {
        assert!(!is_flush_storm(1000, 10));
        assert!(is_flush_storm(1001, 1001 * 255));
        assert!(!is_flush_storm(1001, 1001 * 256));
        assert!(!is_flush_storm(5, 0));
        assert!(!is_flush_storm(u64::MAX, u64::MAX));
    }

    #[test]
    fn storm_warned_once_per_route() {
        assert!(first_storm_on_route("/unit-test-a"));
        assert!(!first_storm_on_route("/unit-test-a"));
        assert!(first_storm_on_route("/unit-test-b"));
    }
}
