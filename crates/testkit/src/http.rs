//! A raw HTTP/1.1 client for tests and the one response parser they share.
//!
//! The parser is deliberately simple and independent of `wirespeed-proto`,
//! so a framing bug in the code under test cannot hide itself.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One parsed response.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Sizes of the data chunks, when the body was chunked.
    pub chunks: Vec<usize>,
    pub chunked: bool,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Number of data chunks (the last, empty one not counted), or None
    /// when the body was not chunked.
    pub fn chunk_count(&self) -> Option<usize> {
        self.chunked.then_some(self.chunks.len())
    }

    /// The one response of a connection read to its end: interim (1xx)
    /// responses are skipped and every byte of `buf` must belong to it.
    pub fn parse(mut buf: &[u8], head_request: bool) -> Resp {
        loop {
            if find(buf, b"\r\n\r\n").is_none() {
                panic!("no complete head in {:?}", String::from_utf8_lossy(buf));
            }
            let (r, used) = parse_one(buf, head_request, true).unwrap_or_else(|| {
                panic!("incomplete response {:?}", String::from_utf8_lossy(buf))
            });
            if (100..200).contains(&r.status) {
                buf = &buf[used..];
                continue;
            }
            assert_eq!(
                used,
                buf.len(),
                "unexpected bytes after the {} response (body length vs framing)",
                r.status
            );
            return r;
        }
    }
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Parse one response at the start of `buf`; returns it and the bytes it
/// used, or None if incomplete. `head_only` for answers to HEAD; `eof` says
/// the peer closed after `buf`, so a body with neither Content-Length nor
/// chunked framing ends there (RFC 9112 §6.3). An interim (1xx) response is
/// returned like any other, head only.
pub fn parse_one(buf: &[u8], head_only: bool, eof: bool) -> Option<(Resp, usize)> {
    let end = find(buf, b"\r\n\r\n")? + 4;
    let text = std::str::from_utf8(&buf[..end - 4]).expect("response head is UTF-8");
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    assert!(
        version == "HTTP/1.1" || version == "HTTP/1.0",
        "bad status line {status_line:?}"
    );
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').expect("header has a colon");
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let mut resp = Resp {
        status,
        headers,
        body: Vec::new(),
        chunks: Vec::new(),
        chunked: false,
    };
    if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
        return Some((resp, end));
    }
    if resp
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        resp.chunked = true;
        let mut pos = end;
        loop {
            let line_end = pos + find(&buf[pos..], b"\r\n")?;
            let size_text = std::str::from_utf8(&buf[pos..line_end]).expect("chunk size line");
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .unwrap_or_else(|_| panic!("bad chunk size line {size_text:?}"));
            pos = line_end + 2;
            if size == 0 {
                if buf.len() < pos + 2 {
                    return None;
                }
                assert_eq!(&buf[pos..pos + 2], b"\r\n", "last chunk must end the body");
                return Some((resp, pos + 2));
            }
            if buf.len() < pos + size + 2 {
                return None;
            }
            resp.body.extend_from_slice(&buf[pos..pos + size]);
            resp.chunks.push(size);
            assert_eq!(&buf[pos + size..pos + size + 2], b"\r\n");
            pos += size + 2;
        }
    }
    let len = match resp.header("content-length") {
        Some(v) => v.parse::<usize>().expect("Content-Length is a number"),
        None if eof => buf.len() - end,
        None => return None,
    };
    if buf.len() < end + len {
        return None;
    }
    resp.body = buf[end..end + len].to_vec();
    Some((resp, end + len))
}

/// Every complete response in `buf`, a connection read to its end.
pub fn parse_all(buf: &[u8]) -> Vec<Resp> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let Some((r, n)) = parse_one(&buf[pos..], false, true) else {
            break;
        };
        out.push(r);
        pos += n;
    }
    out
}

/// The bytes of one request on its own connection: `Host: test`,
/// `Connection: close`, and Content-Length for a body unless the headers
/// say Transfer-Encoding.
pub fn request_bytes(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut raw = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    for (n, v) in headers {
        raw.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty()
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
    {
        raw.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    raw.push_str("\r\n");
    let mut bytes = raw.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// Blocking: connect, send `bytes`, read until the server closes.
pub fn send_blocking(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the test server");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(bytes).expect("send the request");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read the response");
    buf
}

/// Send `raw`, half-close, and read everything until the server closes.
pub async fn exchange_raw(addr: SocketAddr, raw: &[u8]) -> Vec<u8> {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(raw).await.unwrap();
    let _ = s.shutdown().await;
    read_to_close(&mut s, Duration::from_secs(10)).await
}

/// Read until the server closes (or errors), failing after `limit`.
pub async fn read_to_close(s: &mut tokio::net::TcpStream, limit: Duration) -> Vec<u8> {
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

/// Read until one complete response is buffered (a body without a length
/// ends when the server closes); returns it. No byte may follow it.
pub async fn read_response(s: &mut tokio::net::TcpStream, head_only: bool) -> Resp {
    let mut buf = Vec::new();
    let mut tmp = vec![0u8; 64 * 1024];
    loop {
        if let Some((r, n)) = parse_one(&buf, head_only, false) {
            assert_eq!(n, buf.len(), "unexpected bytes after the response");
            return r;
        }
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut tmp))
            .await
            .expect("response in time")
            .unwrap();
        if n == 0 {
            if let Some((r, n)) = parse_one(&buf, head_only, true) {
                assert_eq!(n, buf.len(), "unexpected bytes after the response");
                return r;
            }
            panic!(
                "connection closed before a full response: {:?}",
                String::from_utf8_lossy(&buf)
            );
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_chunked_and_close_delimited_bodies_are_framed() {
        let wire = b"HTTP/1.1 100 Continue\r\n\r\n\
            HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\
            HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n1;x=y\r\nd\r\n0\r\n\r\n\
            HTTP/1.0 200 OK\r\n\r\nto the end";
        let all = parse_all(wire);
        assert_eq!(
            all.iter().map(|r| r.status).collect::<Vec<_>>(),
            [100, 200, 200, 200]
        );
        assert_eq!(all[1].body, b"ok");
        assert_eq!(
            (all[2].text(), all[2].chunk_count()),
            ("abcd".into(), Some(2))
        );
        assert_eq!(all[3].body, b"to the end");
        assert_eq!(all[3].chunk_count(), None);
    }

    #[test]
    fn parse_skips_interim_responses_and_incomplete_bodies_wait() {
        let r = Resp::parse(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
            false,
        );
        assert_eq!(r.status, 201);
        assert!(parse_one(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
            false,
            true
        )
        .is_none());
        assert!(parse_one(b"HTTP/1.1 200 OK\r\n\r\nab", false, false).is_none());
    }

    #[test]
    fn request_bytes_add_length_unless_chunked() {
        let r = request_bytes("PUT", "/a", &[], b"xy");
        assert!(r.ends_with(b"Content-Length: 2\r\n\r\nxy"));
        let r = request_bytes(
            "PUT",
            "/a",
            &[("Transfer-Encoding", "chunked")],
            b"0\r\n\r\n",
        );
        assert!(find(&r, b"Content-Length").is_none());
    }
}
