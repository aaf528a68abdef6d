//! The real server on 127.0.0.1 with an ephemeral port, driven over raw TCP.

mod common;

use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_net::{Error, Exchange, FileSend, FlushPolicy, Handler, Response, ServerConfig};
use wirespeed_testkit::corpus;

/// Test application: a few routes that exercise the engine.
struct App;

fn query_num(ex: &Exchange, key: &str, default: usize) -> usize {
    ex.query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(default)
}

impl Handler for App {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        match ex.path() {
            // Streams n tokens of `size` bytes through the body writer.
            "/tokens" => {
                let n = query_num(ex, "n", 10);
                let size = query_num(ex, "size", 8);
                let token = vec![b'x'; size];
                let mut w =
                    ex.writer(Response::new(200).header("Content-Type", "application/json"))?;
                for _ in 0..n {
                    w.write(&token).await?;
                }
                w.finish().await
            }
            // Three explicit flushes: three chunks.
            "/flushes" => {
                let mut w = ex.writer(Response::new(200))?;
                for part in [&b"one"[..], b"two", b"three"] {
                    w.write(part).await?;
                    w.flush().await?;
                }
                w.finish().await
            }
            // Answers without reading the body.
            "/ignore-body" => ex.send_text(200, "ignored").await,
            "/slow" => {
                tokio::time::sleep(Duration::from_millis(500)).await;
                ex.send_text(200, "slow done").await
            }
            "/fail" => Err(Error::status(418, "teapot says no")),
            // Opens a writer, buffers a little, then fails: nothing was sent,
            // so the error can still be answered with its status.
            "/writer-then-fail" => {
                let mut w = ex.writer(Response::new(200))?;
                w.write(b"partial").await?;
                Err(Error::status(503, "storage went away"))
            }
            "/no-response" => Ok(()),
            // Two 104s before reading the body, then an echo.
            "/interim" => {
                for n in ["1", "2"] {
                    ex.send_interim(104, &[("Location", "/-/uploads/x"), ("X-N", n)])
                        .await?;
                }
                let body = ex.read_body_to_vec(1 << 20).await?;
                ex.send(Response::new(201), &body).await
            }
            // Anything else: read the whole body, report what arrived.
            _ => {
                let body = ex.read_body_to_vec(1 << 20).await?;
                let resp = Response::new(200)
                    .header("X-Method", ex.method())
                    .header("X-Body-Len", body.len().to_string());
                ex.send(resp, &body).await
            }
        }
    }
}

async fn start(cfg: ServerConfig) -> TestServer {
    TestServer::start(cfg, App).await
}

#[tokio::test]
async fn llhttp_corpus_requests_are_accepted_or_rejected_as_expected() {
    let srv = start(ServerConfig::default()).await;
    let mut failures = Vec::new();
    let mut cases = 0;
    for case in corpus::cases("http-requests-llhttp.jsonl") {
        cases += 1;
        let id = case["id"].as_str().unwrap().to_string();
        let raw = corpus::b64_decode(case["raw_b64"].as_str().unwrap());
        let expect = case["expect"].as_str().unwrap();
        let out = exchange_raw(srv.addr, &raw).await;
        let resps = parse_all(&out);
        let ok_status = |s: u16| s < 400 || s == 404 || s == 405 || s == 412;
        let accepted = !resps.is_empty() && resps.iter().all(|r| ok_status(r.status));
        let rejected = resps.is_empty() || (!ok_status(resps[0].status) && resps.len() == 1);
        let verdict = match expect {
            "accept" => {
                let n = case["requests"].as_u64().unwrap_or(1) as usize;
                let mut ok = accepted && resps.len() == n;
                if let Some(lens) = case["body_len"].as_array() {
                    for (r, want) in resps.iter().zip(lens) {
                        ok &= r.header("x-body-len").map(|v| v.parse::<u64>().unwrap())
                            == want.as_u64();
                    }
                }
                if let Some(methods) = case["methods"].as_array() {
                    for (r, want) in resps.iter().zip(methods) {
                        ok &= r.header("x-method") == want.as_str();
                    }
                }
                ok
            }
            "reject" => rejected,
            "either" => accepted || rejected,
            other => panic!("unknown expectation {other}"),
        };
        if !verdict {
            failures.push(format!(
                "{id}: expected {expect}, got {:?}",
                resps.iter().map(|r| r.status).collect::<Vec<_>>()
            ));
        }
    }
    assert_eq!(cases, 90, "corpus size changed");
    assert!(
        failures.is_empty(),
        "{} corpus cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    srv.shutdown().await;
}

#[tokio::test]
async fn keep_alive_reuses_the_connection() {
    let srv = start(ServerConfig::default()).await;
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    for i in 0..3 {
        let body = format!("request {i}");
        let req = format!(
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let r = read_response(&mut s, false).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.body, body.as_bytes());
        assert_eq!(r.header("connection"), None);
    }
    srv.shutdown().await;
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let srv = start(ServerConfig::default()).await;
    let mut raw = Vec::new();
    for i in 0..5 {
        let body = format!("body-{i}");
        raw.extend_from_slice(
            format!(
                "PUT /p{i} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        raw.extend_from_slice(b"GET /tokens?n=3&size=2 HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    let out = exchange_raw(srv.addr, &raw).await;
    let resps = parse_all(&out);
    assert_eq!(resps.len(), 10);
    for i in 0..5 {
        assert_eq!(resps[2 * i].body, format!("body-{i}").as_bytes());
        assert_eq!(resps[2 * i + 1].body, b"xxxxxx");
    }
    srv.shutdown().await;
}

#[tokio::test]
async fn head_has_the_same_headers_and_no_body() {
    let srv = start(ServerConfig::default()).await;
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(b"GET /tokens?n=10&size=3 HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let get = read_response(&mut s, false).await;
    s.write_all(b"HEAD /tokens?n=10&size=3 HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let head = read_response(&mut s, true).await;
    assert_eq!(get.header("content-length"), Some("30"));
    assert_eq!(head.header("content-length"), Some("30"));
    assert_eq!(head.header("content-type"), get.header("content-type"));
    // The connection is still usable: nothing stray followed the HEAD answer.
    s.write_all(b"GET /tokens?n=1&size=1 HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_response(&mut s, false).await.body, b"x");
    srv.shutdown().await;
}

#[tokio::test]
async fn http10_closes_unless_keep_alive() {
    let srv = start(ServerConfig::default()).await;
    let out = exchange_raw(
        srv.addr,
        b"GET /tokens?n=2&size=2 HTTP/1.0\r\n\r\nGET /tokens HTTP/1.0\r\n\r\n",
    )
    .await;
    let resps = parse_all(&out);
    assert_eq!(
        resps.len(),
        1,
        "HTTP/1.0 without keep-alive closes after one response"
    );
    assert_eq!(resps[0].header("connection"), Some("close"));

    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(b"GET /tokens?n=2&size=2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .await
        .unwrap();
    let r = read_response(&mut s, false).await;
    assert_eq!(r.header("connection"), Some("keep-alive"));
    s.write_all(b"GET /tokens?n=1&size=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_response(&mut s, false).await.body, b"x");
    srv.shutdown().await;
}

#[tokio::test]
async fn http10_large_streamed_body_is_delimited_by_close() {
    let srv = start(ServerConfig::default()).await;
    let out = exchange_raw(srv.addr, b"GET /tokens?n=100000&size=10 HTTP/1.0\r\n\r\n").await;
    let resps = parse_all(&out);
    assert_eq!(resps.len(), 1);
    assert_eq!(
        resps[0].header("transfer-encoding"),
        None,
        "{:?}",
        resps[0].headers
    );
    assert_eq!(resps[0].body.len(), 1_000_000);
    srv.shutdown().await;
}

#[tokio::test]
async fn connection_close_is_honoured() {
    let srv = start(ServerConfig::default()).await;
    let out = exchange_raw(
        srv.addr,
        b"GET /tokens HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET /tokens HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .await;
    let resps = parse_all(&out);
    assert_eq!(resps.len(), 1);
    assert_eq!(resps[0].header("connection"), Some("close"));
    srv.shutdown().await;
}

#[tokio::test]
async fn expect_100_continue_only_when_the_body_is_read() {
    let srv = start(ServerConfig::default()).await;
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(
        b"PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    )
    .await
    .unwrap();
    let interim = read_response(&mut s, true).await;
    assert_eq!(interim.status, 100);
    s.write_all(b"hello").await.unwrap();
    let r = read_response(&mut s, false).await;
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));

    // A handler that never reads: no 100, a final answer, and the connection
    // closes because the client may or may not send the body now.
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(b"PUT /ignore-body HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        .await
        .unwrap();
    let out = read_to_close(&mut s, Duration::from_secs(10)).await;
    let resps = parse_all(&out);
    assert_eq!(resps.len(), 1);
    assert_eq!(resps[0].status, 200);
    assert_eq!(resps[0].header("connection"), Some("close"));
    srv.shutdown().await;
}

/// Reads until `needle` ends what arrived.
async fn read_until(s: &mut TcpStream, needle: &[u8]) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    while !buf.ends_with(needle) {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut tmp))
            .await
            .expect("bytes in time")
            .unwrap();
        assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&tmp[..n]);
    }
    buf
}

/// 104s go out before the body is read, each a complete bodiless head; a
/// pending 100-continue still follows them, and the final answer comes
/// last on a connection that stays usable. An HTTP/1.0 client gets none.
#[tokio::test]
async fn interim_responses_precede_continue_and_the_final_answer() {
    let srv = start(ServerConfig::default()).await;
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(
        b"PUT /interim HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    )
    .await
    .unwrap();
    let heads = read_until(&mut s, b"HTTP/1.1 100 Continue\r\n\r\n").await;
    let text = String::from_utf8(heads).unwrap();
    let blocks: Vec<&str> = text.split_terminator("\r\n\r\n").collect();
    assert_eq!(blocks.len(), 3, "{text}");
    for (block, n) in blocks.iter().zip(["1", "2"]) {
        assert!(
            block.starts_with("HTTP/1.1 104 Upload Resumption Supported\r\n"),
            "{block}"
        );
        assert!(block.contains("\r\nLocation: /-/uploads/x"), "{block}");
        assert!(block.contains(&format!("\r\nX-N: {n}")), "{block}");
        assert!(
            !block.to_ascii_lowercase().contains("content-length"),
            "{block}"
        );
    }
    assert_eq!(
        blocks[2], "HTTP/1.1 100 Continue",
        "the 104s did not settle the expectation"
    );
    s.write_all(b"hello").await.unwrap();
    let r = read_response(&mut s, false).await;
    assert_eq!((r.status, r.body.as_slice()), (201, &b"hello"[..]));
    // Same connection, no Expect: two 104s, then the final answer.
    s.write_all(b"PUT /interim HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok")
        .await
        .unwrap();
    let out = read_until(&mut s, b"\r\n\r\nok").await;
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.matches("HTTP/1.1 104 ").count(), 2, "{text}");
    assert!(text.contains("HTTP/1.1 201 Created\r\n"), "{text}");

    let out = exchange_raw(
        srv.addr,
        b"PUT /interim HTTP/1.0\r\nHost: t\r\nContent-Length: 2\r\n\r\nok",
    )
    .await;
    let resps = parse_all(&out);
    assert_eq!(resps.len(), 1, "no 1xx to an HTTP/1.0 client");
    assert_eq!(
        (resps[0].status, resps[0].body.as_slice()),
        (201, &b"ok"[..])
    );
    srv.shutdown().await;
}

#[tokio::test]
async fn framing_rejections_answer_and_close() {
    let srv = start(ServerConfig::default()).await;
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(9000));
    let many_headers = format!(
        "GET / HTTP/1.1\r\nHost: t\r\n{}\r\n",
        (0..101)
            .map(|i| format!("X-{i}: v\r\n"))
            .collect::<String>()
    );
    let huge_head = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "v".repeat(17 * 1024)
    );
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("bad content-length", b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\n".to_vec(), 400),
        ("signed content-length", b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\nhello".to_vec(), 400),
        ("differing content-lengths", b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5, 6\r\n\r\nhello".to_vec(), 400),
        ("te with cl", b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(), 400),
        ("unsupported coding before chunked", b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".to_vec(), 501),
        ("final coding not chunked", b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(), 400),
        ("chunked not last", b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n".to_vec(), 400),
        ("te in 1.0", b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(), 400),
        ("bad chunk size", b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(), 400),
        ("bare lf in chunk", b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n".to_vec(), 400),
        ("http/2.0", b"GET / HTTP/2.0\r\nHost: t\r\n\r\n".to_vec(), 505),
        ("http/0.9", b"GET / HTTP/0.9\r\nHost: t\r\n\r\n".to_vec(), 505),
        ("two-digit minor", b"GET / HTTP/1.10\r\nHost: t\r\n\r\n".to_vec(), 400),
        ("space in host", b"GET / HTTP/1.1\r\nHost: t t\r\n\r\n".to_vec(), 400),
        ("userinfo in host", b"GET / HTTP/1.1\r\nHost: u@t\r\n\r\n".to_vec(), 400),
        ("missing host", b"GET / HTTP/1.1\r\n\r\n".to_vec(), 400),
        ("obs-fold", b"GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n".to_vec(), 400),
        ("space before colon", b"GET / HTTP/1.1\r\nHost : t\r\n\r\n".to_vec(), 400),
        ("uri too long", long_target.into_bytes(), 414),
        ("too many headers", many_headers.into_bytes(), 431),
        ("head too large", huge_head.into_bytes(), 431),
    ];
    for (name, raw, want) in cases {
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        s.write_all(&raw).await.unwrap();
        // No half-close: the server itself must close after answering.
        let out = read_to_close(&mut s, Duration::from_secs(10)).await;
        let resps = parse_all(&out);
        assert_eq!(
            resps.len(),
            1,
            "{name}: one answer, got {:?}",
            String::from_utf8_lossy(&out)
        );
        assert_eq!(resps[0].status, want, "{name}");
        assert!(!resps[0].body.is_empty(), "{name}: a reason in the body");
        assert_eq!(resps[0].header("connection"), Some("close"), "{name}");
    }
    srv.shutdown().await;
}

#[tokio::test]
async fn newer_http_1_minor_version_is_served_as_1_1() {
    let srv = start(ServerConfig::default()).await;
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    // Two requests on one connection: 1.2 keeps the connection alive like 1.1.
    s.write_all(b"GET /a HTTP/1.2\r\nHost: t\r\n\r\nGET /b HTTP/1.9\r\nHost: t\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let out = read_to_close(&mut s, Duration::from_secs(10)).await;
    let resps = parse_all(&out);
    assert_eq!(resps.len(), 2, "{:?}", String::from_utf8_lossy(&out));
    assert!(
        out.starts_with(b"HTTP/1.1 "),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    for r in &resps {
        assert!(r.status < 400, "status {}", r.status);
    }
    srv.shutdown().await;
}

#[tokio::test]
async fn slowloris_head_times_out_without_blocking_others() {
    let cfg = ServerConfig {
        head_timeout: Duration::from_secs(2),
        ..ServerConfig::default()
    };
    let srv = start(cfg).await;
    let addr = srv.addr;
    let slow = tokio::spawn(async move {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        let request = b"GET /tokens HTTP/1.1\r\nHost: t\r\nX-Padding: aaaaaaaaaaaaaaaaaaaa\r\n\r\n";
        for b in request {
            if s.write_all(&[*b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            let mut probe = [0u8; 1024];
            // Stop dripping once the server has answered/closed.
            if let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_millis(1), s.peek(&mut probe)).await
            {
                if n > 0 {
                    break;
                }
            }
        }
        let out = read_to_close(&mut s, Duration::from_secs(10)).await;
        (started.elapsed(), out)
    });
    // Meanwhile, other clients are served at once.
    for _ in 0..5 {
        let t = Instant::now();
        let out = exchange_raw(addr, b"GET /tokens?n=1&size=1 HTTP/1.1\r\nHost: t\r\n\r\n").await;
        assert_eq!(parse_all(&out)[0].status, 200);
        assert!(t.elapsed() < Duration::from_secs(1));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (elapsed, out) = slow.await.unwrap();
    let resps = parse_all(&out);
    assert_eq!(resps.len(), 1);
    assert_eq!(resps[0].status, 408);
    assert!(elapsed < Duration::from_secs(6), "took {elapsed:?}");
    srv.shutdown().await;
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed() {
    let cfg = ServerConfig {
        idle_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let srv = start(cfg).await;
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(b"GET /tokens HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    read_response(&mut s, false).await;
    let t = Instant::now();
    let rest = read_to_close(&mut s, Duration::from_secs(5)).await;
    assert!(rest.is_empty());
    assert!(t.elapsed() >= Duration::from_millis(250));
    srv.shutdown().await;
}

#[tokio::test]
async fn tiny_tokens_arrive_as_a_few_large_chunks() {
    let srv = start(ServerConfig::default()).await;
    // 200,000 tokens of 5 bytes: 1,000,000 bytes through a 64 KiB buffer.
    let out = exchange_raw(
        srv.addr,
        b"GET /tokens?n=200000&size=5 HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .await;
    let r = &parse_all(&out)[0];
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.body.len(), 1_000_000);
    let chunks = r.chunk_count().unwrap();
    assert_eq!(
        chunks,
        1_000_000usize.div_ceil(64 * 1024),
        "one chunk per buffer-full"
    );

    // A small body stays in the buffer and goes out with Content-Length.
    let out = exchange_raw(
        srv.addr,
        b"GET /tokens?n=1000&size=5 HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .await;
    let r = &parse_all(&out)[0];
    assert_eq!(r.header("content-length"), Some("5000"));
    assert_eq!(r.header("transfer-encoding"), None);
    srv.shutdown().await;
}

#[tokio::test]
async fn explicit_flushes_become_chunks() {
    let srv = start(ServerConfig::default()).await;
    let out = exchange_raw(srv.addr, b"GET /flushes HTTP/1.1\r\nHost: t\r\n\r\n").await;
    let r = &parse_all(&out)[0];
    assert_eq!(r.body, b"onetwothree");
    assert_eq!(r.chunk_count(), Some(3));
    srv.shutdown().await;
}

#[tokio::test]
async fn per_write_policy_shows_the_pitfall() {
    let cfg = ServerConfig {
        flush_policy: FlushPolicy::PerWrite,
        ..ServerConfig::default()
    };
    let srv = start(cfg).await;
    let out = exchange_raw(
        srv.addr,
        b"GET /tokens?n=2000&size=5 HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .await;
    let r = &parse_all(&out)[0];
    assert_eq!(r.chunk_count(), Some(2000));
    srv.shutdown().await;
}

#[tokio::test]
async fn unread_bodies_are_drained_up_to_a_bound() {
    let srv = start(ServerConfig::default()).await;
    // Small unread body: drained, connection reused.
    let body = vec![b'a'; 10_000];
    let mut raw = format!(
        "POST /ignore-body HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(&body);
    raw.extend_from_slice(b"GET /tokens?n=1&size=1 HTTP/1.1\r\nHost: t\r\n\r\n");
    let resps = parse_all(&exchange_raw(srv.addr, &raw).await);
    assert_eq!(resps.len(), 2);

    // A body larger than the drain limit: answered, then closed.
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(b"POST /ignore-body HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\n\r\n")
        .await
        .unwrap();
    let r = read_response(&mut s, false).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("connection"), Some("close"));
    srv.shutdown().await;
}

#[tokio::test]
async fn handler_errors_map_to_statuses() {
    let srv = start(ServerConfig::default()).await;
    let out = exchange_raw(
        srv.addr,
        b"GET /fail HTTP/1.1\r\nHost: t\r\n\r\nGET /no-response HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .await;
    let resps = parse_all(&out);
    assert_eq!(resps[0].status, 418);
    assert_eq!(resps[0].body, b"teapot says no\n");
    assert_eq!(resps[1].status, 500);
    srv.shutdown().await;
}

#[tokio::test]
async fn an_error_before_the_writer_sent_anything_is_answered() {
    let srv = start(ServerConfig::default()).await;
    let out = exchange_raw(
        srv.addr,
        b"GET /writer-then-fail HTTP/1.1\r\nHost: t\r\n\r\nGET /tokens?n=1&size=1 HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .await;
    let resps = parse_all(&out);
    assert_eq!(resps[0].status, 503);
    assert_eq!(resps[0].body, b"storage went away\n");
    assert_eq!(resps.len(), 2, "the connection stays usable");
    // Every answer carries a well-formed Date.
    let date = resps[1].header("date").expect("Date header");
    assert!(httpdate::parse_http_date(date).is_ok(), "{date:?}");
    srv.shutdown().await;
}

#[tokio::test]
async fn chunked_request_bodies_are_decoded() {
    let srv = start(ServerConfig::default()).await;
    let raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n";
    let resps = parse_all(&exchange_raw(srv.addr, raw).await);
    assert_eq!(resps[0].body, b"hello world");
    srv.shutdown().await;
}

#[tokio::test]
async fn graceful_shutdown_lets_in_flight_requests_finish() {
    let srv = start(ServerConfig::default()).await;
    let addr = srv.addr;
    let req =
        tokio::spawn(
            async move { exchange_raw(addr, b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n").await },
        );
    tokio::time::sleep(Duration::from_millis(100)).await;
    srv.shutdown().await;
    let resps = parse_all(&req.await.unwrap());
    assert_eq!(resps.len(), 1);
    assert_eq!(resps[0].status, 200);
    assert_eq!(resps[0].header("connection"), Some("close"));
    // No longer accepting.
    assert!(
        TcpStream::connect(addr).await.is_err() || {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let mut b = [0u8; 1];
            matches!(s.read(&mut b).await, Ok(0) | Err(_))
        }
    );
}

/// Serves byte ranges of one file: `/file?offset=N&len=M`.
struct FileApp {
    file: std::fs::File,
}

impl Handler for FileApp {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        let offset = query_num(ex, "offset", 0) as u64;
        let len = query_num(ex, "len", 0) as u64;
        let status = query_num(ex, "status", 200) as u16;
        ex.send_file(Response::new(status), &self.file, offset, len)
            .await
    }
}

#[tokio::test]
async fn file_bodies_are_identical_with_sendfile_and_the_copy_loop() {
    // 5 MiB + 7 bytes: more than one sendfile step with a small step size.
    let data: Vec<u8> = (0..5 * 1024 * 1024 + 7u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let path = std::env::temp_dir().join(format!("wirespeed-net-file-{}", std::process::id()));
    std::fs::write(&path, &data).unwrap();
    for mode in [FileSend::Sendfile, FileSend::Copy, FileSend::Auto] {
        let cfg = ServerConfig {
            file_send: mode,
            file_chunk: 1024 * 1024,
            ..ServerConfig::default()
        };
        let srv = TestServer::start(
            cfg,
            FileApp {
                file: std::fs::File::open(&path).unwrap(),
            },
        )
        .await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        for (offset, len) in [
            (0usize, data.len()),
            (3, 1_500_000),
            (data.len() - 1, 1),
            (10, 0),
        ] {
            let req = format!("GET /file?offset={offset}&len={len} HTTP/1.1\r\nHost: t\r\n\r\n");
            s.write_all(req.as_bytes()).await.unwrap();
            let r = read_response(&mut s, false).await;
            assert_eq!(r.status, 200, "{mode:?}");
            assert_eq!(r.header("content-length"), Some(len.to_string().as_str()));
            assert!(
                r.body == data[offset..offset + len],
                "{mode:?} {offset}+{len}: bytes differ"
            );
        }
        // HEAD: the length, no body, connection still in step.
        s.write_all(b"HEAD /file?offset=0&len=100 HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(
            read_response(&mut s, true).await.header("content-length"),
            Some("100")
        );
        // A range past the end of the file: the head promised bytes that do
        // not exist, so the connection must close rather than hang or lie.
        let past = format!(
            "GET /file?offset={}&len=100 HTTP/1.1\r\nHost: t\r\n\r\n",
            data.len() - 10
        );
        s.write_all(past.as_bytes()).await.unwrap();
        let out = read_to_close(&mut s, Duration::from_secs(10)).await;
        assert!(
            out.len() < 300,
            "{mode:?}: at most the head and 10 bytes, then close"
        );
        // Close our side so the server's lingering close ends at once.
        drop(s);
        srv.shutdown().await;
    }
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn a_watched_connection_tells_a_range_what_its_watch_found() {
    use wirespeed_io::congestion::{Congestion, Request};
    let path = std::env::temp_dir().join(format!("wirespeed-net-link-{}", std::process::id()));
    std::fs::write(&path, vec![7u8; 4 << 20]).unwrap();
    // `auto`: BBR, watched, where the kernel offers it; else the system
    // default, not watched, and nothing is said.
    let congestion = Congestion::resolve(&Request::default()).unwrap();
    let watched = congestion.name() == Some("bbr");
    for mode in [FileSend::Sendfile, FileSend::Copy] {
        let cfg = ServerConfig {
            file_send: mode,
            congestion: congestion.clone(),
            ..ServerConfig::default()
        };
        let file = std::fs::File::open(&path).unwrap();
        let srv = TestServer::start(cfg, FileApp { file }).await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        let mut said = Vec::new();
        for status in [206, 206, 200] {
            let req = format!(
                "GET /file?offset=0&len={}&status={status} HTTP/1.1\r\nHost: t\r\n\r\n",
                2 << 20
            );
            s.write_all(req.as_bytes()).await.unwrap();
            let r = read_response(&mut s, false).await;
            assert_eq!((r.status, r.body.len()), (status, 2 << 20));
            said.push(r.header("wirespeed-link").map(str::to_string));
        }
        // The first answer's head leaves before a byte is sampled; then the
        // watch is judging (its first seconds); a whole file is no range.
        let judging = (watched && mode == FileSend::Sendfile).then(|| "judging".to_string());
        assert_eq!(said, [None, judging, None], "{mode:?}, watched: {watched}");
        drop(s);
        srv.shutdown().await;
    }
    let _ = std::fs::remove_file(&path);
}

/// A body that interleaves written bytes with file ranges (what a folder
/// archive is): `/mixed?sized=1` declares the length up front.
struct MixedApp {
    file: std::fs::File,
}

impl Handler for MixedApp {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        let sized = query_num(ex, "sized", 0) == 1;
        let resp = Response::new(200);
        let mut w = if sized {
            ex.writer_sized(resp, 2 + 100_000 + 2 + 10)?
        } else {
            ex.writer(resp)?
        };
        w.write(b"AB").await?;
        w.send_file_range(&self.file, 3, 100_000).await?;
        w.write(b"CD").await?;
        w.send_file_range(&self.file, 0, 10).await?;
        w.send_file_range(&self.file, 5, 0).await?;
        w.finish().await
    }
}

#[tokio::test]
async fn file_ranges_inside_a_streamed_body_arrive_in_order() {
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + i / 256) as u8).collect();
    let path = std::env::temp_dir().join(format!("wirespeed-net-mixed-{}", std::process::id()));
    std::fs::write(&path, &data).unwrap();
    let mut want = b"AB".to_vec();
    want.extend_from_slice(&data[3..100_003]);
    want.extend_from_slice(b"CD");
    want.extend_from_slice(&data[..10]);
    for mode in [FileSend::Sendfile, FileSend::Copy] {
        let cfg = ServerConfig {
            file_send: mode,
            ..ServerConfig::default()
        };
        let file = std::fs::File::open(&path).unwrap();
        let srv = TestServer::start(cfg, MixedApp { file }).await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        for sized in [1, 0] {
            let req = format!("GET /mixed?sized={sized} HTTP/1.1\r\nHost: t\r\n\r\n");
            s.write_all(req.as_bytes()).await.unwrap();
            let r = read_response(&mut s, false).await;
            assert_eq!(r.status, 200);
            if sized == 1 {
                assert_eq!(r.header("content-length"), Some("100014"), "{mode:?}");
            } else {
                assert_eq!(r.header("transfer-encoding"), Some("chunked"), "{mode:?}");
            }
            assert!(r.body == want, "{mode:?} sized={sized}: bytes differ");
        }
        // HEAD: the declared length, no body, the connection still in step.
        s.write_all(b"HEAD /mixed?sized=1 HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let r = read_response(&mut s, true).await;
        assert_eq!(r.header("content-length"), Some("100014"));
        s.write_all(b"GET /mixed?sized=1 HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        assert!(read_response(&mut s, false).await.body == want);
        drop(s);
        srv.shutdown().await;
    }
    let _ = std::fs::remove_file(&path);
}

/// A long head sent in tiny pieces (the server parses only when a line
/// completes) is still answered, byte-exact, and a head split inside a line
/// and inside the final CRLF CRLF is recognised.
#[tokio::test]
async fn head_trickled_in_tiny_pieces_is_served() {
    let srv = start(ServerConfig::default()).await;
    let mut head = b"GET /tokens?n=1&size=1 HTTP/1.1\r\nHost: t\r\n".to_vec();
    for i in 0..60 {
        head.extend_from_slice(format!("X-Pad-{i}: {}\r\n", "v".repeat(150)).as_bytes());
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    for piece in head.chunks(3) {
        s.write_all(piece).await.unwrap();
        tokio::task::yield_now().await;
    }
    let out = read_to_close(&mut s, Duration::from_secs(10)).await;
    assert_eq!(parse_all(&out)[0].status, 200);
}
