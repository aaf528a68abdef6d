//! The client against a hand-written server on a raw socket, for answers
//! the real service never gives: endless interim responses, a kept-alive
//! connection closed right after a request arrived, and a refusal that
//! comes while the body is going out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_client::{Body, Client, ClientConfig, Error, FileBody, Request, Url};
use wirespeed_testkit::server::Scripted;

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// Read one body-less request head; false at EOF.
async fn read_request(s: &mut TcpStream) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return false,
        }
    }
    true
}

fn client() -> Client {
    Client::new(ClientConfig {
        io_timeout: Duration::from_secs(10),
        ..ClientConfig::default()
    })
    .unwrap()
}

async fn get(client: &Client, url: &str) -> Result<Vec<u8>, Error> {
    let resp = client.send(Request::get(Url::parse(url)?)).await?;
    resp.bytes(1024).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interim_responses_are_capped_at_16() {
    for (interim, ok) in [(16, true), (17, false)] {
        let srv = Scripted::start(move |_, mut s| async move {
            if read_request(&mut s).await {
                for _ in 0..interim {
                    let _ = s.write_all(b"HTTP/1.1 102 Processing\r\n\r\n").await;
                }
                let _ = s.write_all(OK).await;
            }
        })
        .await;
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            get(&client(), &format!("{}/x", srv.url())),
        )
        .await
        .unwrap();
        match r {
            Ok(body) if ok => assert_eq!(body, b"ok"),
            Err(Error::Proto(e)) if !ok => {
                assert!(e.to_string().contains("interim"), "{e}")
            }
            other => panic!("{interim} interim responses: {other:?}"),
        }
    }
}

/// Every connection answers its first request and closes on the second
/// without answering: the second request of a kept-alive connection meets a
/// server that "died" right after receiving it.
async fn answers_once() -> Scripted {
    Scripted::start(|_, mut s| async move {
        if read_request(&mut s).await {
            let _ = s.write_all(OK).await;
            // The second request arrives whole; then the connection drops.
            read_request(&mut s).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_is_not_retried_after_the_request_went_out() {
    let srv = answers_once().await;
    let client = client();
    assert_eq!(
        get(&client, &format!("{}/a", srv.url())).await.unwrap(),
        b"ok"
    );
    assert_eq!(client.idle_connections(), 1);
    let post = Request::new("POST", Url::parse(&format!("{}/b", srv.url())).unwrap());
    let r = tokio::time::timeout(Duration::from_secs(10), client.send(post))
        .await
        .unwrap();
    assert!(
        matches!(r, Err(Error::NoResponse)),
        "{:?}",
        r.map(|r| r.status())
    );
    assert_eq!(
        srv.connections(),
        1,
        "the POST was sent again on a new connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_is_retried_on_a_new_connection() {
    let srv = answers_once().await;
    let client = client();
    assert_eq!(
        get(&client, &format!("{}/a", srv.url())).await.unwrap(),
        b"ok"
    );
    let del = Request::delete(Url::parse(&format!("{}/b", srv.url())).unwrap());
    let resp = tokio::time::timeout(Duration::from_secs(10), client.send(del))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(srv.connections(), 2);
}

/// How the scripted server behaves once it has refused the body.
#[derive(Clone, Copy, Debug)]
enum Linger {
    /// Reads and discards what still comes (as wirespeed's lingering close).
    Discards,
    /// Reads nothing more: the client's writes stall on a full socket.
    ReadsNothing,
}

/// Says 100 Continue, takes 1 MiB of the body, then refuses it (as a
/// proxy that answers 100 by itself, or a server finding the disk full):
/// the client must stop sending and report the 413 at once. `taken`
/// counts the body bytes the server read.
async fn refuses_mid_body(linger: Linger, taken: Arc<AtomicU64>) -> Scripted {
    Scripted::start(move |_, mut s| {
        let taken = taken.clone();
        async move {
            if !read_request(&mut s).await {
                return;
            }
            let _ = s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await;
            let mut buf = vec![0u8; 64 * 1024];
            while taken.load(Ordering::SeqCst) < 1 << 20 {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => taken.fetch_add(n as u64, Ordering::SeqCst),
                };
            }
            let _ = s
                .write_all(
                    b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\n\
                      Connection: close\r\n\r\ntoo big!",
                )
                .await;
            match linger {
                Linger::Discards => loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => taken.fetch_add(n as u64, Ordering::SeqCst),
                    };
                },
                // Held open, unread, until the client goes.
                Linger::ReadsNothing => tokio::time::sleep(Duration::from_secs(60)).await,
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_while_the_body_goes_out_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.bin");
    // 1 GiB without the disk space: a hole.
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    for linger in [Linger::Discards, Linger::ReadsNothing] {
        for sendfile in [true, false] {
            let taken = Arc::new(AtomicU64::new(0));
            let srv = refuses_mid_body(linger, taken.clone()).await;
            let client = Client::new(ClientConfig {
                io_timeout: Duration::from_secs(10),
                sendfile,
                ..ClientConfig::default()
            })
            .unwrap();
            let url = Url::parse(&format!("{}/big.bin", srv.url())).unwrap();
            let req = Request::put(url).body(Body::file(FileBody::open(&big).unwrap()));
            let case = format!("{linger:?}, sendfile {sendfile}");
            let resp = tokio::time::timeout(Duration::from_secs(30), client.send(req))
                .await
                .unwrap_or_else(|_| panic!("{case}: still sending"))
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(resp.status(), 413, "{case}");
            assert_eq!(resp.bytes(1024).await.unwrap(), b"too big!", "{case}");
            let got = taken.load(Ordering::SeqCst);
            assert!(
                got < 256 << 20,
                "{case}: the server took {got} bytes of a refused body"
            );
        }
    }
}
