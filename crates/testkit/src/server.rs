//! Servers on 127.0.0.1 with an ephemeral port. The caller's closure gets
//! the bound listener and a [`Stop`] future and runs whatever server it
//! likes, so this crate needs none of the workspace's server crates.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// Resolves when the test asks the server to stop (or drops its handle).
pub struct Stop(oneshot::Receiver<()>);

impl Future for Stop {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

/// A listener on 127.0.0.1 with a port the kernel picks.
pub async fn bind() -> TcpListener {
    TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0")
}

fn stop_pair() -> (oneshot::Sender<()>, Stop) {
    let (tx, rx) = oneshot::channel();
    (tx, Stop(rx))
}

/// A server task on the caller's tokio runtime.
pub struct Spawned {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Spawned {
    /// Bind 127.0.0.1:0 and spawn `serve(listener, stop)`.
    pub async fn start<F, Fut>(serve: F) -> Spawned
    where
        F: FnOnce(TcpListener, Stop) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = bind().await;
        let addr = listener.local_addr().unwrap();
        let (tx, stop) = stop_pair();
        let task = tokio::spawn(serve(listener, stop));
        Spawned {
            addr,
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// Signal the stop and wait up to `limit` for the server to return;
    /// the error says whether it overran or panicked.
    pub async fn stop(mut self, limit: Duration) -> Result<(), String> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        match tokio::time::timeout(limit, task).await {
            Err(_) => Err(format!("server did not stop within {limit:?}")),
            Ok(Err(e)) => Err(format!("server task failed: {e}")),
            Ok(Ok(())) => Ok(()),
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// A server on its own thread and runtime, for blocking tests; dropping it
/// stops the server and joins the thread.
pub struct ThreadServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ThreadServer {
    /// Build a runtime from `runtime` on a new thread, bind 127.0.0.1:0
    /// there and run `serve(listener, stop)` until it returns.
    pub fn start<F, Fut>(mut runtime: tokio::runtime::Builder, serve: F) -> ThreadServer
    where
        F: FnOnce(TcpListener, Stop) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let (tx, stop) = stop_pair();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = runtime.enable_all().build().expect("test runtime");
            rt.block_on(async move {
                let listener = bind().await;
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                serve(listener, stop).await;
            });
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("test server bound a port");
        ThreadServer {
            addr,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    /// Stop the server and join its thread, failing if the server panicked.
    pub fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().expect("the server thread panicked");
        }
    }
}

impl Drop for ThreadServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A hand-written server on a raw socket, for answers a real server never
/// gives; counts the connections it accepted.
pub struct Scripted {
    pub addr: SocketAddr,
    pub connections: Arc<AtomicUsize>,
}

impl Scripted {
    /// Accept forever on the caller's runtime; each connection runs
    /// `script(connection_index, stream)`.
    pub async fn start<F, Fut>(script: F) -> Scripted
    where
        F: Fn(usize, TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = bind().await;
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let count = connections.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                let i = count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(script(i, s));
            }
        });
        Scripted { addr, connections }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// A port on 127.0.0.1 that nobody listens on (bound, then released).
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
