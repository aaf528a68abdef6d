//! The engine against scripted raw servers: answers a real server never
//! gives (cut bodies, wrong statuses, wrong ranges, a close after every
//! answer), each counted as what it is.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_load::gen::Content;
use wirespeed_load::{Bound, Config, Mix, SizeRange, Summary, Target};
use wirespeed_testkit::server::{closed_port, Scripted};

const SIZE: u64 = 3000;

/// Read one request head; `None` at the end of the connection. Returns
/// the `Range` start and end (exclusive) if one was asked for.
async fn read_request(s: &mut TcpStream) -> Option<Option<(u64, u64)>> {
    let mut buf = Vec::new();
    let mut b = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut b).await.ok()? == 0 {
            return None;
        }
        buf.push(b[0]);
    }
    let text = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let range = text
        .lines()
        .find_map(|l| l.strip_prefix("range: bytes="))
        .and_then(|r| {
            let (a, b) = r.trim().split_once('-')?;
            Some((a.parse().ok()?, b.parse::<u64>().ok()? + 1))
        });
    Some(range)
}

fn object() -> Vec<u8> {
    let mut v = vec![0u8; SIZE as usize];
    Content::new(1, 0).fill(0, &mut v);
    v
}

fn config(url: &str, mix: &str, requests: u64) -> Config {
    let mut c = Config::new(Target::parse(url).unwrap());
    c.connections = 2;
    c.bound = Bound::Requests(requests);
    c.mix = mix.parse::<Mix>().unwrap();
    c.sizes = SizeRange::new(SIZE, SIZE).unwrap();
    c.objects = 1;
    c.setup = false;
    c.io_timeout = Duration::from_secs(5);
    c
}

async fn run(c: Config) -> Summary {
    tokio::time::timeout(Duration::from_secs(30), wirespeed_load::run(c))
        .await
        .expect("bounded")
        .expect("runs")
}

/// A server answering every GET with `answer(request range)`, keep-alive.
async fn serving(answer: fn(Option<(u64, u64)>) -> Vec<u8>, close_after: bool) -> Scripted {
    Scripted::start(move |_, mut s| async move {
        while let Some(range) = read_request(&mut s).await {
            if s.write_all(&answer(range)).await.is_err() || close_after {
                return;
            }
        }
    })
    .await
}

fn whole(_: Option<(u64, u64)>) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\n\r\n").into_bytes();
    r.extend_from_slice(&object());
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correct_answers_verify_and_connections_are_kept() {
    let srv = serving(whole, false).await;
    let s = run(config(&srv.url(), "get=1", 20)).await;
    assert!(s.clean(), "{}", s.text());
    assert_eq!(s.kinds["get"].ok, 20);
    assert_eq!(s.kinds["get"].verified_bytes, 20 * SIZE);
    assert!(
        srv.connections() <= 2,
        "one keep-alive connection per worker"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_after_every_answer_reconnects() {
    let srv = serving(whole, true).await;
    let s = run(config(&srv.url(), "get=1", 10)).await;
    assert!(s.clean(), "{}", s.text());
    assert_eq!(s.kinds["get"].ok, 10);
    assert!(srv.connections() >= 10, "{} connections", srv.connections());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_body_is_truncated() {
    let srv = Scripted::start(|_, mut s| async move {
        if read_request(&mut s).await.is_some() {
            let mut r = whole(None);
            r.truncate(r.len() - 100);
            let _ = s.write_all(&r).await;
        }
    })
    .await;
    let s = run(config(&srv.url(), "get=1", 4)).await;
    assert_eq!(s.errors.truncated, 4, "{}", s.text());
    assert_eq!(s.errors.corrupt_bytes, 0, "the bytes that came were right");
    assert!(!s.clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_bytes_short_bodies_and_bad_ranges_are_counted() {
    fn answer(range: Option<(u64, u64)>) -> Vec<u8> {
        let mut body = object();
        match range {
            // A range answered with the right head but the wrong bytes: one
            // byte flipped and the last one missing.
            Some((a, b)) => {
                let mut part = body[a as usize..b as usize].to_vec();
                part[0] ^= 0x80;
                part.pop();
                let mut r = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{}/{SIZE}\r\nContent-Length: {}\r\n\r\n",
                    b - 1,
                    part.len()
                )
                .into_bytes();
                r.extend_from_slice(&part);
                r
            }
            None => {
                body[17] ^= 1;
                let mut r = format!(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
                    body.len()
                )
                .into_bytes();
                r.extend_from_slice(&body);
                r.extend_from_slice(b"\r\n0\r\n\r\n");
                r
            }
        }
    }
    let srv = serving(answer, false).await;
    let s = run(config(&srv.url(), "get=1", 5)).await;
    assert_eq!(
        (s.errors.corrupt_responses, s.errors.corrupt_bytes),
        (5, 5),
        "{}",
        s.text()
    );
    let mut c = config(&srv.url(), "range=1", 5);
    c.connections = 1;
    let s = run(c).await;
    // Ranges of one byte lose only that byte (1 bad); longer ones 2.
    assert_eq!(s.errors.corrupt_responses, 5, "{}", s.text());
    assert!((5..=10).contains(&s.errors.corrupt_bytes), "{}", s.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_and_mismatched_ranges_are_errors_by_kind() {
    fn answer(range: Option<(u64, u64)>) -> Vec<u8> {
        match range {
            // 206 for another span than asked.
            Some(_) => {
                b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-0/3000\r\nContent-Length: 1\r\n\r\nx"
                    .to_vec()
            }
            None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found".to_vec(),
        }
    }
    let srv = serving(answer, false).await;
    let mut c = config(&srv.url(), "get=1", 6);
    c.connections = 1;
    let s = run(c).await;
    assert_eq!(s.errors.status.get(&404), Some(&6), "{}", s.text());
    assert_eq!(
        srv.connections(),
        1,
        "a small error body is drained, the connection kept"
    );
    let mut c = config(&srv.url(), "range=1", 50);
    c.sizes = SizeRange::new(SIZE, SIZE).unwrap();
    let s = run(c).await;
    // A range that happens to be exactly byte 0 is answered right (but its
    // byte is wrong); every other is a protocol error.
    assert_eq!(
        s.errors.protocol + s.errors.corrupt_responses,
        50,
        "{}",
        s.text()
    );
    assert!(s.errors.protocol >= 45);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_is_connect_errors() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let s = run(config(&url, "get=1", 3)).await;
    assert_eq!(s.errors.connect, 3, "{}", s.text());
    let mut c = config(&url, "put=1", 1);
    c.setup = true;
    let e = wirespeed_load::run(c).await.unwrap_err();
    assert!(e.to_string().contains("could not connect"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_under_way_at_the_end_of_a_timed_run_are_stopped_not_failed() {
    // Half of the body, then silence: nothing finishes before the deadline.
    let srv = Scripted::start(|_, mut s| async move {
        if read_request(&mut s).await.is_some() {
            let mut r = whole(None);
            r.truncate(r.len() - SIZE as usize / 2);
            let _ = s.write_all(&r).await;
            tokio::time::sleep(Duration::from_secs(20)).await;
        }
    })
    .await;
    let mut c = config(&srv.url(), "get=1", 0);
    c.bound = Bound::Duration(Duration::from_millis(300));
    c.io_timeout = Duration::from_secs(20);
    let s = run(c).await;
    assert!(s.clean(), "{}", s.text());
    assert_eq!((s.requests, s.cut_at_end), (0, 2), "{}", s.text());
    assert_eq!(s.bytes_down, 2 * (SIZE / 2), "the bytes that moved count");
    assert_eq!(s.kinds.len(), 0, "no request finished");
}
