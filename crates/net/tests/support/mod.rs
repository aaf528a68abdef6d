//! Shared test support: an in-process server on 127.0.0.1:0 and a raw TCP
//! client that parses responses independently of wirespeed-proto.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use wirespeed_net::{Handler, Server, ServerConfig};

pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    pub async fn start<H: Handler>(cfg: ServerConfig, handler: H) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            Server::new(cfg)
                .serve(listener, Arc::new(handler), async {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        });
        TestServer {
            addr,
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// Signal shutdown and wait for the server to return.
    pub async fn shutdown(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(20), self.task.take().unwrap())
            .await
            .expect("server stops within its grace period")
            .unwrap();
    }
}

/// One parsed response.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Number of chunks when the body was chunked (excluding the last chunk).
    pub chunks: Option<usize>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Parse one response from `buf`; returns it and the bytes used, or None if
/// incomplete. `head_only` for answers to HEAD. A deliberately simple,
/// independent parser (tests must not trust the code under test).
pub fn parse_one(buf: &[u8], head_only: bool) -> Option<(Resp, usize)> {
    let end = find(buf, b"\r\n\r\n")? + 4;
    let text = std::str::from_utf8(&buf[..end - 4]).expect("response head is UTF-8");
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap();
    assert!(
        version == "HTTP/1.1" || version == "HTTP/1.0",
        "bad status line {status_line:?}"
    );
    let status: u16 = parts.next().unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').expect("header has a colon");
            (n.to_string(), v.trim().to_string())
        })
        .collect();
    let mut resp = Resp {
        status,
        headers,
        body: Vec::new(),
        chunks: None,
    };
    if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
        return Some((resp, end));
    }
    if resp
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        let mut pos = end;
        let mut chunks = 0;
        loop {
            let line_end = pos + find(&buf[pos..], b"\r\n")?;
            let size_text = std::str::from_utf8(&buf[pos..line_end]).unwrap();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap(), 16).unwrap();
            pos = line_end + 2;
            if size == 0 {
                if buf.len() < pos + 2 {
                    return None;
                }
                assert_eq!(&buf[pos..pos + 2], b"\r\n", "no trailers expected");
                resp.chunks = Some(chunks);
                return Some((resp, pos + 2));
            }
            if buf.len() < pos + size + 2 {
                return None;
            }
            resp.body.extend_from_slice(&buf[pos..pos + size]);
            assert_eq!(&buf[pos + size..pos + size + 2], b"\r\n");
            pos += size + 2;
            chunks += 1;
        }
    }
    let len: usize = resp
        .header("content-length")
        .map(|v| v.parse().unwrap())
        .unwrap_or(0);
    if buf.len() < end + len {
        return None;
    }
    resp.body = buf[end..end + len].to_vec();
    Some((resp, end + len))
}

/// Parse every complete response in `buf` (for GET-like requests).
pub fn parse_all(buf: &[u8]) -> Vec<Resp> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some((r, n)) = parse_one(&buf[pos..], false) {
        out.push(r);
        pos += n;
    }
    out
}

/// Send `raw`, half-close, and read everything until the server closes.
pub async fn exchange_raw(addr: SocketAddr, raw: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(raw).await.unwrap();
    let _ = s.shutdown().await;
    read_to_close(&mut s, Duration::from_secs(10)).await
}

pub async fn read_to_close(s: &mut TcpStream, limit: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    let r = tokio::time::timeout(limit, async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(r.is_ok(), "server did not close the connection in time");
    out
}

/// Read until one complete response is buffered; returns it.
pub async fn read_response(s: &mut TcpStream, head_only: bool) -> Resp {
    let mut buf = Vec::new();
    let mut tmp = vec![0u8; 64 * 1024];
    loop {
        if let Some((r, n)) = parse_one(&buf, head_only) {
            assert_eq!(n, buf.len(), "unexpected bytes after the response");
            return r;
        }
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut tmp))
            .await
            .expect("response in time")
            .unwrap();
        assert!(
            n > 0,
            "connection closed before a full response: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&tmp[..n]);
    }
}
