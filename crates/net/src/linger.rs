//! Lingering close (nginx's `ngx_http_set_lingering_close`): after an answer
//! that ends the connection, shut down our write side and keep reading and
//! discarding what the peer still sends, so the answer is read before a close
//! with unread bytes turns into a reset that destroys it.
//!
//! Clients such as wget, Python's `http.client` and nginx as a proxy send the
//! whole request body before they read the response; a PUT refused before
//! its body (401, 403, 413, …) therefore has to outlast the body, not a fixed
//! byte count. The bounds are time, like nginx's `lingering_time` and
//! `lingering_timeout`, plus a byte cap; the bytes go through the connection's
//! own small buffer, so a lingering connection costs a few KiB.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

use crate::conn::Conn;

/// How long a closing connection keeps reading the peer's unwanted bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Linger {
    /// The whole linger at most (nginx `lingering_time`, 30 s).
    pub total: Duration,
    /// A read that brings nothing for this long ends it (nginx
    /// `lingering_timeout`, 5 s): the peer is waiting on our answer.
    pub per_read: Duration,
    /// Bytes discarded at most; past them the connection is closed (reset).
    pub max_bytes: u64,
}

impl Default for Linger {
    fn default() -> Self {
        Linger {
            total: Duration::from_secs(30),
            per_read: Duration::from_secs(5),
            // 1 GiB: a refused upload from a LAN client (1 Gb/s sends ~3.7 GB in
            // the 30 s) still reads its answer for several seconds, while one
            // fast loopback peer cannot keep a slot busy discarding without end.
            max_bytes: 1 << 30,
        }
    }
}

/// The whole linger once the server is stopping: as before this module, a
/// moment for pipelined bytes, so a refusal does not hold up the shutdown.
const STOPPING_TOTAL: Duration = Duration::from_secs(2);

/// Whether to keep reading after `discarded` bytes at `now`, given the linger
/// started at `start`; the next read's deadline if so (sans-IO decision).
pub(crate) fn next_read_deadline(
    linger: &Linger,
    start: Instant,
    now: Instant,
    discarded: u64,
    stopping: bool,
) -> Option<Instant> {
    let total = if stopping {
        linger.total.min(STOPPING_TOTAL)
    } else {
        linger.total
    };
    let end = start + total;
    if discarded >= linger.max_bytes || now >= end {
        return None;
    }
    Some((now + linger.per_read).min(end))
}

/// Send FIN, then read and drop until the peer closes, stops sending for
/// `per_read`, or a bound of `linger` is reached.
pub(crate) async fn lingering_close(conn: &mut Conn) {
    let linger = conn.cfg.linger;
    let _ = tokio::time::timeout(Duration::from_secs(1), conn.io.shutdown()).await;
    // Into the connection's own buffer, shrunk to its idle size first: a
    // scratch array here would be part of every connection task's future.
    let empty = conn.rbuf.len();
    conn.rbuf.consume(empty);
    conn.rbuf.shrink_when_empty(conn.cfg.initial_read_buffer);
    let start = Instant::now();
    let mut discarded: u64 = 0;
    let mut stop = conn.stop.clone();
    let mut server_gone = false;
    loop {
        let stopping = server_gone || *stop.borrow();
        let Some(by) = next_read_deadline(&linger, start, Instant::now(), discarded, stopping)
        else {
            break;
        };
        let cap = conn.rbuf.capacity().max(1);
        let read = tokio::time::timeout_at(by, conn.rbuf.fill(&mut conn.io, cap));
        let read = tokio::select! {
            r = read => r,
            // Shutdown began: the bounds shrink (checked again above).
            changed = stop.changed(), if !stopping => {
                server_gone = changed.is_err();
                continue;
            }
        };
        match read {
            Ok(Ok(Some(n))) if n > 0 => {
                discarded += n as u64;
                let all = conn.rbuf.len();
                conn.rbuf.consume(all);
            }
            _ => break, // EOF, error, full (cannot be: emptied), or quiet
        }
    }
    if discarded > 0 {
        tracing::debug!(peer = %conn.peer, discarded, ms = start.elapsed().as_millis() as u64, "lingering close");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_follow_the_bounds() {
        let l = Linger {
            total: Duration::from_secs(30),
            per_read: Duration::from_secs(5),
            max_bytes: 100,
        };
        let t0 = Instant::now();
        assert_eq!(
            next_read_deadline(&l, t0, t0, 0, false),
            Some(t0 + l.per_read)
        );
        // Near the end the total bound wins over the per-read one.
        let late = t0 + Duration::from_secs(28);
        assert_eq!(
            next_read_deadline(&l, t0, late, 10, false),
            Some(t0 + Duration::from_secs(30))
        );
        assert_eq!(next_read_deadline(&l, t0, t0 + l.total, 0, false), None);
        assert_eq!(next_read_deadline(&l, t0, t0, 100, false), None, "byte cap");
        assert!(next_read_deadline(&l, t0, t0, 99, false).is_some());
        // Stopping: two seconds at most.
        assert_eq!(
            next_read_deadline(&l, t0, t0, 0, true),
            Some(t0 + STOPPING_TOTAL)
        );
        assert_eq!(
            next_read_deadline(&l, t0, t0 + STOPPING_TOTAL, 0, true),
            None
        );
    }
}
