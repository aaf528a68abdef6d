//! Connection caps and slow clients: the real server on 127.0.0.1 with an
//! ephemeral port, driven over raw TCP.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use wirespeed_net::{ConnectionStats, Error, Exchange, Handler, Response, Server, ServerConfig};
use wirespeed_testkit::server::Spawned;

/// GET answers "hello"; any other method reads the body and answers its
/// length and byte sum, so the client can check every byte arrived.
struct App;

impl Handler for App {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        if ex.method() == "GET" {
            return ex.send_text(200, "hello").await;
        }
        let body = ex.read_body_to_vec(16 << 20).await?;
        let sum: u64 = body.iter().map(|&b| u64::from(b)).sum();
        let resp = Response::new(200)
            .header("X-Body-Len", body.len().to_string())
            .header("X-Body-Sum", sum.to_string());
        ex.send(resp, b"").await
    }
}

struct Limited {
    addr: SocketAddr,
    stats: Arc<ConnectionStats>,
    server: Spawned,
}

async fn start(cfg: ServerConfig) -> Limited {
    let server = Server::new(cfg);
    let stats = server.stats();
    let spawned = Spawned::start(move |listener, stop| async move {
        server.serve(listener, Arc::new(App), stop).await.unwrap();
    })
    .await;
    Limited {
        addr: spawned.addr,
        stats,
        server: spawned,
    }
}

/// Poll `cond` every 20 ms for up to 10 s (the server counts a connection
/// when its accept loop gets to it, a moment after the client's connect).
async fn wait_for(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for: {what}");
}

async fn get(s: &mut TcpStream) -> Resp {
    s.write_all(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    read_response(s, false).await
}

async fn connect_from(local: [u8; 4], addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((local, 0))).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Send a request on a connection over the cap: the answer is the 503.
async fn refused(addr: SocketAddr, from: [u8; 4]) -> Resp {
    let mut s = connect_from(from, addr).await;
    // The server may already have answered and half-closed: ignore a reset.
    let _ = s.write_all(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n").await;
    let out = read_to_close(&mut s, Duration::from_secs(10)).await;
    let resps = parse_all(&out);
    assert_eq!(resps.len(), 1, "{:?}", String::from_utf8_lossy(&out));
    resps.into_iter().next().unwrap()
}

#[tokio::test]
async fn over_max_connections_gets_503_until_one_closes() {
    let srv = start(ServerConfig {
        max_connections: 4,
        ..ServerConfig::default()
    })
    .await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(srv.addr).await.unwrap());
    }
    wait_for("4 open connections", || srv.stats.open() == 4).await;

    let r = refused(srv.addr, [127, 0, 0, 1]).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.header("connection"), Some("close"));
    assert!(r.text().contains("connection limit"), "{}", r.text());
    assert_eq!(srv.stats.refused(), 1);
    assert_eq!(srv.stats.open(), 4);

    // The four admitted connections are served.
    assert_eq!(get(&mut idle[0]).await.text(), "hello\n");

    // One closes: a new connection is served again.
    drop(idle.pop());
    wait_for("3 open connections", || srv.stats.open() == 3).await;
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    let r = get(&mut s).await;
    assert_eq!((r.status, r.text().as_str()), (200, "hello\n"));
    assert_eq!(srv.stats.open(), 4);

    drop(idle);
    drop(s);
    wait_for("no open connections", || srv.stats.open() == 0).await;
    srv.server.stop(Duration::from_secs(20)).await.unwrap();
}

#[tokio::test]
async fn over_max_connections_per_ip_gets_503_other_addresses_do_not() {
    let srv = start(ServerConfig {
        max_connections_per_ip: Some(2),
        ..ServerConfig::default()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(connect_from([127, 0, 0, 1], srv.addr).await);
    }
    wait_for("2 open connections", || srv.stats.open() == 2).await;

    let r = refused(srv.addr, [127, 0, 0, 1]).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.text().contains("from your address"), "{}", r.text());

    // Another address (all of 127/8 is loopback on Linux) has its own count.
    let mut other = connect_from([127, 0, 0, 2], srv.addr).await;
    assert_eq!(get(&mut other).await.text(), "hello\n");

    // A slot freed on the first address is taken again.
    drop(held.pop());
    wait_for("2 open connections", || srv.stats.open() == 2).await;
    let mut again = connect_from([127, 0, 0, 1], srv.addr).await;
    assert_eq!(get(&mut again).await.text(), "hello\n");
    srv.server.stop(Duration::from_secs(20)).await.unwrap();
}

#[tokio::test]
async fn silent_new_connection_is_closed_after_the_head_timeout() {
    let srv = start(ServerConfig {
        head_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(600),
        ..ServerConfig::default()
    })
    .await;
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    // Closed without an answer (it asked nothing), long before the idle timeout.
    let out = read_to_close(&mut s, Duration::from_secs(10)).await;
    assert!(out.is_empty(), "{:?}", String::from_utf8_lossy(&out));
    wait_for("no open connections", || srv.stats.open() == 0).await;
    srv.server.stop(Duration::from_secs(20)).await.unwrap();
}

/// Dribble a head that never ends, a byte every 300 ms, until the server
/// answers or closes; returns what it sent back.
async fn dribble(addr: SocketAddr) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = b"GET /x HTTP/1.1\r\nHost: t\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    for b in head.iter().cycle().take(200) {
        if s.write_all(&[*b]).await.is_err() {
            break;
        }
        tokio::select! {
            r = s.read(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            },
            _ = tokio::time::sleep(Duration::from_millis(300)) => {}
        }
    }
    // Whatever is left of the answer, up to the server's close.
    out.extend(read_to_close(&mut s, Duration::from_secs(10)).await);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_heads_are_closed_while_others_get_and_put() {
    let srv = start(ServerConfig {
        head_timeout: Duration::from_secs(1),
        ..ServerConfig::default()
    })
    .await;
    let addr = srv.addr;
    let slow: Vec<_> = (0..200).map(|_| tokio::spawn(dribble(addr))).collect();
    wait_for("most slow connections open", || srv.stats.open() >= 100).await;

    // Meanwhile a normal client on a kept-alive connection is served.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let sum: u64 = body.iter().map(|&b| u64::from(b)).sum();
    for _ in 0..10 {
        let r = get(&mut s).await;
        assert_eq!((r.status, r.text().as_str()), (200, "hello\n"));
        let mut put = format!(
            "PUT /f HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        put.extend_from_slice(&body);
        s.write_all(&put).await.unwrap();
        let r = read_response(&mut s, false).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("x-body-len"), Some("100000"));
        assert_eq!(r.header("x-body-sum"), Some(sum.to_string().as_str()));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Every slow connection was answered 408 and closed by the server (its
    // 200-byte dribble would take a minute; the bound is read_to_close's).
    for task in slow {
        let out = task.await.unwrap();
        let resps = parse_all(&out);
        assert_eq!(resps.len(), 1, "{:?}", String::from_utf8_lossy(&out));
        assert_eq!(resps[0].status, 408);
    }
    drop(s);
    wait_for("no open connections", || srv.stats.open() == 0).await;
    srv.server.stop(Duration::from_secs(20)).await.unwrap();
}
