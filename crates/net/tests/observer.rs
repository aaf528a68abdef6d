//! What the server tells its `Observer`: connections opened and closed,
//! each finished exchange (class, status, body bytes both ways), flush
//! storms and timeouts by kind. The real server on 127.0.0.1, raw TCP.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use wirespeed_net::{
    Completed, Error, Exchange, FlushPolicy, Handler, Observer, Response, ServerConfig, Timeout,
};

#[derive(Debug, Clone, PartialEq)]
struct Done {
    method: String,
    path: String,
    class: &'static str,
    status: u16,
    bytes_in: u64,
    bytes_out: u64,
    user_agent: Option<String>,
}

#[derive(Debug, Default)]
struct Recorder {
    opened: AtomicU64,
    closed: AtomicU64,
    storms: AtomicU64,
    done: Mutex<Vec<Done>>,
    timeouts: Mutex<Vec<Timeout>>,
}

impl Observer for Recorder {
    fn connection_opened(&self) {
        self.opened.fetch_add(1, SeqCst);
    }
    fn connection_closed(&self) {
        self.closed.fetch_add(1, SeqCst);
    }
    fn exchange_done(&self, d: &Completed<'_>) {
        self.done.lock().unwrap().push(Done {
            method: d.method.into(),
            path: d.path.into(),
            class: d.class,
            status: d.status,
            bytes_in: d.bytes_in,
            bytes_out: d.bytes_out,
            user_agent: d.user_agent.map(Into::into),
        });
    }
    fn flush_storm(&self) {
        self.storms.fetch_add(1, SeqCst);
    }
    fn timeout(&self, kind: Timeout) {
        self.timeouts.lock().unwrap().push(kind);
    }
}

struct App;

impl Handler for App {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        match ex.path() {
            "/upload" => {
                ex.set_class("upload");
                let mut n = 0;
                while let Some(piece) = ex.read_body().await? {
                    n += piece.len();
                }
                ex.send_text(201, &format!("got {n}")).await
            }
            "/tokens" => {
                let mut w = ex.writer(Response::new(200))?;
                for _ in 0..2000 {
                    w.write(b"12345").await?;
                }
                w.finish().await
            }
            _ => Err(Error::status(404, "nothing here")),
        }
    }
}

async fn start(cfg: ServerConfig) -> (TestServer, Arc<Recorder>) {
    let rec = Arc::new(Recorder::default());
    let cfg = ServerConfig {
        observer: Some(rec.clone()),
        ..cfg
    };
    (TestServer::start(cfg, App).await, rec)
}

#[tokio::test]
async fn exchanges_report_class_status_and_body_bytes() {
    let (srv, rec) = start(ServerConfig::default()).await;
    let body = vec![b'a'; 100_000];
    let mut raw = format!(
        "PUT /upload?secret=1 HTTP/1.1\r\nHost: t\r\nUser-Agent: probe\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(&body);
    raw.extend_from_slice(b"GET /nope HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let out = exchange_raw(srv.addr, &raw).await;
    let resps = parse_all(&out);
    assert_eq!(resps.len(), 2);
    assert_eq!(resps[0].body, b"got 100000\n");
    srv.shutdown().await;

    let done = rec.done.lock().unwrap().clone();
    let upload = Done {
        method: "PUT".into(),
        path: "/upload".into(),
        class: "upload",
        status: 201,
        bytes_in: 100_000,
        bytes_out: resps[0].body.len() as u64,
        user_agent: Some("probe".into()),
    };
    let missing = Done {
        method: "GET".into(),
        path: "/nope".into(),
        class: "other",
        status: 404,
        bytes_in: 0,
        bytes_out: resps[1].body.len() as u64,
        user_agent: None,
    };
    assert_eq!(done, [upload, missing]);
    assert_eq!(rec.opened.load(SeqCst), 1);
    assert_eq!(rec.closed.load(SeqCst), 1);
}

#[tokio::test]
async fn a_flush_storm_is_reported_with_the_bytes_sent() {
    let cfg = ServerConfig {
        flush_policy: FlushPolicy::PerWrite,
        ..ServerConfig::default()
    };
    let (srv, rec) = start(cfg).await;
    let out = exchange_raw(srv.addr, b"GET /tokens HTTP/1.1\r\nHost: t\r\n\r\n").await;
    assert_eq!(parse_all(&out)[0].body.len(), 10_000);
    srv.shutdown().await;
    assert_eq!(rec.storms.load(SeqCst), 1);
    assert_eq!(rec.done.lock().unwrap()[0].bytes_out, 10_000);
}

#[tokio::test]
async fn timeouts_are_reported_by_kind() {
    let cfg = ServerConfig {
        head_timeout: Duration::from_millis(200),
        body_timeout: Duration::from_millis(200),
        idle_timeout: Duration::from_millis(200),
        ..ServerConfig::default()
    };
    let (srv, rec) = start(cfg).await;
    // A head that never completes: 408, reported as a refused request.
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost:").await.unwrap();
    let out = read_to_close(&mut s, Duration::from_secs(10)).await;
    assert_eq!(parse_all(&out)[0].status, 408);
    // A body that stops short.
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(b"PUT /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        .await
        .unwrap();
    let out = read_to_close(&mut s, Duration::from_secs(10)).await;
    assert_eq!(parse_all(&out)[0].status, 408);
    // A kept-alive connection left idle after its answer.
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let out = read_to_close(&mut s, Duration::from_secs(10)).await;
    assert_eq!(parse_all(&out)[0].status, 404);
    srv.shutdown().await;

    assert_eq!(
        *rec.timeouts.lock().unwrap(),
        [Timeout::Head, Timeout::Body, Timeout::Idle]
    );
    let done = rec.done.lock().unwrap().clone();
    assert_eq!((done[0].method.as_str(), done[0].status), ("-", 408));
    assert_eq!(
        (done[1].class, done[1].status, done[1].bytes_in),
        ("upload", 408, 3)
    );
    assert_eq!(rec.opened.load(SeqCst), rec.closed.load(SeqCst));
}
