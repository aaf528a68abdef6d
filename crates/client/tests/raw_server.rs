//! The client against a hand-written server on a raw socket, for answers
//! the real service never gives: endless interim responses, and a kept-alive
//! connection closed right after a request arrived.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_client::{Client, ClientConfig, Error, Request, Url};
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
