//! A cutting TCP proxy on 127.0.0.1:0: it forwards each connection to a
//! server and closes both sides once a connection has carried N bytes
//! upstream (client to server) or downstream, so tests can prove that a
//! transfer resumes. It can also stall a connection (forward nothing more,
//! close nothing) so a test can kill the client mid-transfer.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Called after a cut with the cut's number (1-based), before the proxy
/// accepts the next connection.
pub type OnCut = Box<dyn FnMut(usize) + Send>;

struct Shared {
    upstream: SocketAddr,
    cut_up: AtomicU64,
    cut_down: AtomicU64,
    stall_up: AtomicU64,
    stall_down: AtomicU64,
    cuts: AtomicUsize,
    stalled: AtomicUsize,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    connections: AtomicUsize,
    on_cut: Mutex<Option<OnCut>>,
    stop: AtomicBool,
    /// Cut only once: the first cut turns cutting off for new connections.
    once: AtomicBool,
    /// A cut happened whose hook has not run yet (the accept loop runs it).
    pending_hook: Mutex<Vec<usize>>,
}

/// The proxy; stops accepting when dropped.
pub struct CuttingProxy {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

const NEVER: u64 = u64::MAX;

impl CuttingProxy {
    /// A proxy to `upstream` that cuts nothing yet.
    pub fn start(upstream: SocketAddr) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Shared {
            upstream,
            cut_up: AtomicU64::new(NEVER),
            cut_down: AtomicU64::new(NEVER),
            stall_up: AtomicU64::new(NEVER),
            stall_down: AtomicU64::new(NEVER),
            cuts: AtomicUsize::new(0),
            stalled: AtomicUsize::new(0),
            bytes_up: AtomicU64::new(0),
            bytes_down: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
            on_cut: Mutex::new(None),
            stop: AtomicBool::new(false),
            once: AtomicBool::new(false),
            pending_hook: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        thread::spawn(move || accept_loop(listener, s));
        CuttingProxy { addr, shared }
    }

    /// Cut each connection after it carried `n` bytes upstream (None: never).
    pub fn cut_upstream_every(&self, n: Option<u64>) -> &Self {
        self.shared
            .cut_up
            .store(n.unwrap_or(NEVER), Ordering::SeqCst);
        self
    }

    /// Cut the first connection that carries `n` bytes upstream, then
    /// forward everything (a single network failure mid-transfer).
    pub fn cut_upstream_once(&self, n: u64) -> &Self {
        self.shared.once.store(true, Ordering::SeqCst);
        self.shared.cut_up.store(n, Ordering::SeqCst);
        self
    }

    /// Cut each connection after it carried `n` bytes downstream.
    pub fn cut_downstream_every(&self, n: Option<u64>) -> &Self {
        self.shared
            .cut_down
            .store(n.unwrap_or(NEVER), Ordering::SeqCst);
        self
    }

    /// New connections stop forwarding upstream after `n` bytes and hang.
    pub fn stall_upstream_after(&self, n: Option<u64>) -> &Self {
        self.shared
            .stall_up
            .store(n.unwrap_or(NEVER), Ordering::SeqCst);
        self
    }

    /// New connections stop forwarding downstream after `n` bytes and hang
    /// (what the server sends after that is read and dropped).
    pub fn stall_downstream_after(&self, n: Option<u64>) -> &Self {
        self.shared
            .stall_down
            .store(n.unwrap_or(NEVER), Ordering::SeqCst);
        self
    }

    /// Run `f` after each cut, before the next connection is served.
    pub fn on_cut(&self, f: impl FnMut(usize) + Send + 'static) -> &Self {
        *self.shared.on_cut.lock().unwrap() = Some(Box::new(f));
        self
    }

    /// `http://ADDR` of the proxy.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections cut so far.
    pub fn cuts(&self) -> usize {
        self.shared.cuts.load(Ordering::SeqCst)
    }

    /// Connections that reached the stall point.
    pub fn stalled(&self) -> usize {
        self.shared.stalled.load(Ordering::SeqCst)
    }

    /// Bytes forwarded to the server, over all connections.
    pub fn bytes_up(&self) -> u64 {
        self.shared.bytes_up.load(Ordering::SeqCst)
    }

    /// Bytes forwarded to the client, over all connections.
    pub fn bytes_down(&self) -> u64 {
        self.shared.bytes_down.load(Ordering::SeqCst)
    }

    /// Connections accepted.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn run_hooks(s: &Shared) {
    let pending: Vec<usize> = std::mem::take(&mut *s.pending_hook.lock().unwrap());
    if pending.is_empty() {
        return;
    }
    if let Some(f) = s.on_cut.lock().unwrap().as_mut() {
        for n in pending {
            f(n);
        }
    }
}

fn accept_loop(listener: TcpListener, s: Arc<Shared>) {
    for client in listener.incoming() {
        if s.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        // A cut's hook runs before the next connection reaches the server.
        run_hooks(&s);
        let Ok(server) = TcpStream::connect(s.upstream) else {
            continue;
        };
        s.connections.fetch_add(1, Ordering::SeqCst);
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let cut_up = s.cut_up.load(Ordering::SeqCst);
        let cut_down = s.cut_down.load(Ordering::SeqCst);
        let stall_up = s.stall_up.load(Ordering::SeqCst);
        let stall_down = s.stall_down.load(Ordering::SeqCst);
        let cut_done = Arc::new(AtomicBool::new(false));
        let pair = (client, server);
        let (c2, s2) = match (pair.0.try_clone(), pair.1.try_clone()) {
            (Ok(c), Ok(sv)) => (c, sv),
            _ => continue,
        };
        let (sh1, sh2) = (s.clone(), s.clone());
        let (d1, d2) = (cut_done.clone(), cut_done);
        let (client, server) = pair;
        thread::spawn(move || pump(client, server, cut_up, stall_up, true, &sh1, &d1));
        thread::spawn(move || pump(s2, c2, cut_down, stall_down, false, &sh2, &d2));
    }
}

/// Copy `from` → `to`; after `cut` bytes close both connections (counted
/// once per connection); after `stall` bytes stop copying and wait.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    cut: u64,
    stall: u64,
    upstream: bool,
    s: &Shared,
    cut_done: &AtomicBool,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut moved = 0u64;
    let limit = cut.min(stall);
    loop {
        let want = (limit - moved).min(buf.len() as u64) as usize;
        if want == 0 {
            if stall <= cut {
                s.stalled.fetch_add(1, Ordering::SeqCst);
                // Hold both ends open until the peer goes away.
                let _ = from.set_read_timeout(None);
                let mut sink = [0u8; 4096];
                while matches!(from.read(&mut sink), Ok(n) if n > 0) {}
                let _ = to.shutdown(Shutdown::Both);
                return;
            }
            if !cut_done.swap(true, Ordering::SeqCst) {
                let n = s.cuts.fetch_add(1, Ordering::SeqCst) + 1;
                if s.once.load(Ordering::SeqCst) {
                    s.cut_up.store(NEVER, Ordering::SeqCst);
                }
                s.pending_hook.lock().unwrap().push(n);
            }
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
            return;
        }
        let n = match from.read(&mut buf[..want]) {
            Ok(0) | Err(_) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).is_err() {
            let _ = from.shutdown(Shutdown::Both);
            return;
        }
        moved += n as u64;
        if upstream {
            s.bytes_up.fetch_add(n as u64, Ordering::SeqCst);
        } else {
            s.bytes_down.fetch_add(n as u64, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_after_n_bytes_and_counts() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let up = server.local_addr().unwrap();
        let echo = thread::spawn(move || {
            let (mut c, _) = server.accept().unwrap();
            let mut got = Vec::new();
            let _ = c.read_to_end(&mut got);
            got.len()
        });
        let proxy = CuttingProxy::start(up);
        let hooked = Arc::new(AtomicUsize::new(0));
        let h = hooked.clone();
        proxy.cut_upstream_every(Some(1000)).on_cut(move |_| {
            h.fetch_add(1, Ordering::SeqCst);
        });
        let mut c = TcpStream::connect(proxy.addr).unwrap();
        let _ = c.write_all(&[7u8; 5000]);
        let mut rest = Vec::new();
        let _ = c.read_to_end(&mut rest);
        assert_eq!(echo.join().unwrap(), 1000);
        assert_eq!(proxy.cuts(), 1);
        assert_eq!(proxy.bytes_up(), 1000);
        // The hook runs when the next connection arrives.
        let _ = TcpStream::connect(proxy.addr).unwrap();
        crate::fs::eventually("the cut hook runs", || hooked.load(Ordering::SeqCst) == 1);
    }
}
