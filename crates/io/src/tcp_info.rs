//! The TCP_INFO counters the clean-link judge reads: bytes the peer
//! acknowledged, segments sent again, and how long sending was held back
//! by a buffer rather than by the network. Neither rustix nor socket2 reads
//! TCP_INFO, so this module holds the crate's one `unsafe` block: a
//! getsockopt(2) into a zeroed `libc::tcp_info`.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// A socket's delivery counters (monotonic over its life).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters {
    /// Bytes the peer acknowledged (`tcpi_bytes_acked`, Linux 4.1+).
    pub acked: u64,
    /// Segments retransmitted (`tcpi_total_retrans`).
    pub retransmitted: u32,
    /// Microseconds with data in flight (`tcpi_busy_time`, Linux 4.10+; 0
    /// where the kernel does not say).
    pub busy_us: u64,
    /// Of those, microseconds held back by the peer's receive window or
    /// our send buffer (`tcpi_rwnd_limited` + `tcpi_sndbuf_limited`): a flow
    /// that is not, is held back only by its congestion window, the network.
    pub buffer_limited_us: u64,
}

/// Reads the socket's [`Counters`]. A kernel whose answer is too short to
/// hold `bytes_acked` is `Unsupported`.
pub fn counters(socket: &impl AsFd) -> io::Result<Counters> {
    let mut info = zeroed_tcp_info();
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` is a live, properly aligned `tcp_info` and `len` is its
    // size, so the kernel writes at most `len` bytes into it (and lowers
    // `len` to what it wrote); the fd is borrowed for the call.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let needed = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_acked) + 8;
    if (len as usize) < needed {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "TCP_INFO without bytes_acked",
        ));
    }
    let chrono = (len as usize) >= std::mem::offset_of!(libc::tcp_info, tcpi_sndbuf_limited) + 8;
    Ok(Counters {
        acked: info.tcpi_bytes_acked,
        retransmitted: info.tcpi_total_retrans,
        busy_us: if chrono { info.tcpi_busy_time } else { 0 },
        buffer_limited_us: if chrono {
            info.tcpi_rwnd_limited
                .saturating_add(info.tcpi_sndbuf_limited)
        } else {
            0
        },
    })
}

/// An all-zero `tcp_info` (plain integers: zero is a valid value of each).
fn zeroed_tcp_info() -> libc::tcp_info {
    // SAFETY: `tcp_info` is a C struct of integer fields only, for which
    // the all-zero bit pattern is a valid value.
    unsafe { std::mem::zeroed() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn acknowledged_bytes_are_counted_on_a_loopback_connection() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        // The SYN counts as one acknowledged byte.
        let before = counters(&a).unwrap();
        assert!(before.acked <= 1, "{before:?}");
        let data = vec![7u8; 1 << 20];
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got.len()
        });
        a.write_all(&data).unwrap();
        a.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(reader.join().unwrap(), data.len());
        // The last ACK may trail the reader's EOF by a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let c = counters(&a).unwrap();
            let acked = c.acked - before.acked;
            if acked >= data.len() as u64 || std::time::Instant::now() > deadline {
                assert!(acked >= data.len() as u64, "{c:?}");
                assert_eq!(c.retransmitted, 0, "loopback loses nothing");
                assert!(c.buffer_limited_us <= c.busy_us, "{c:?}");
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn a_peer_that_does_not_read_holds_the_sender_back_by_its_window() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let mut w = a.try_clone().unwrap();
        // More than both buffers hold: the writer stalls on the window.
        let writer = std::thread::spawn(move || w.write_all(&vec![1u8; 64 << 20]));
        std::thread::sleep(std::time::Duration::from_millis(300));
        let c = counters(&a).unwrap();
        if c.busy_us == 0 {
            // A kernel before 4.10 has no such counters: nothing to check.
            eprintln!("TCP_INFO here has no busy time: {c:?}");
        } else {
            assert!(c.buffer_limited_us > 100_000, "{c:?}");
            assert!(c.buffer_limited_us <= c.busy_us, "{c:?}");
        }
        std::io::copy(
            &mut b.try_clone().unwrap().take(64 << 20),
            &mut std::io::sink(),
        )
        .unwrap();
        writer.join().unwrap().unwrap();
        drop(b);
    }

    #[test]
    fn a_socket_that_is_not_tcp_is_an_error() {
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(counters(&u).is_err());
    }
}
