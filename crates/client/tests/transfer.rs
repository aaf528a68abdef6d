//! End-to-end tests: the client against the real transfer service on
//! 127.0.0.1:0, plain and TLS, plus handlers that misbehave on purpose.
//! Sizes are a few MiB and every wait is bounded.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_client::transfer::{self, DownloadOptions, UploadOptions};
use wirespeed_client::{Body, Client, ClientConfig, ClientTls, Error, Request, Url};
use wirespeed_net::{Exchange, Handler, Response, Router};

const MIB: usize = 1024 * 1024;

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

async fn within<T>(secs: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("test step timed out")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_put_get_round_trip_reuses_the_connection() {
    let srv = start_plain(&[]).await;
    let local = tempfile::tempdir().unwrap();
    let bytes = data(5 * MIB + 123, 1);
    let src = write_file(local.path(), "src.bin", &bytes);
    let client = srv.client();

    let up = within(
        30,
        transfer::upload_file(&client, &srv.url("/dir/"), &src, &UploadOptions::default()),
    )
    .await
    .unwrap();
    assert_eq!(
        up.url.target, "/dir/src.bin",
        "a URL ending in / gets the file name"
    );
    assert_eq!(up.bytes, bytes.len() as u64);
    assert_eq!(up.sha256, Some(<[u8; 32]>::from(Sha256::digest(&bytes))));
    assert_eq!(
        up.server_sha256, up.sha256,
        "the service echoes Repr-Digest"
    );
    assert_eq!(
        std::fs::read(srv.root().join("dir/src.bin")).unwrap(),
        bytes
    );
    assert_eq!(
        client.idle_connections(),
        1,
        "connection returned to the pool"
    );

    let dest = local.path().join("back.bin");
    let down = within(
        30,
        transfer::download_file(
            &client,
            &srv.url("/dir/src.bin"),
            &dest,
            &DownloadOptions::default(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(down.bytes, bytes.len() as u64);
    assert_eq!(std::fs::read(&dest).unwrap(), bytes);
    assert!(
        down.verified,
        "the digest the verified upload recorded is answered by GET and checked"
    );
    assert!(!transfer::part_path(&dest).exists());
    assert_eq!(
        client.idle_connections(),
        1,
        "the same connection carried both requests"
    );

    // Listing (streamed by the service) and delete.
    let (raw, entries) = within(10, transfer::list(&client, &srv.url("/dir/")))
        .await
        .unwrap();
    assert!(raw.trim_start().starts_with('['));
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (
            entries[0].name.as_str(),
            entries[0].kind.as_str(),
            entries[0].size
        ),
        ("src.bin", "file", bytes.len() as u64)
    );
    assert!(
        within(10, transfer::delete(&client, &srv.url("/dir/src.bin")))
            .await
            .unwrap()
            < 300
    );
    let err = within(10, transfer::delete(&client, &srv.url("/dir/src.bin")))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404), "{err}");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_first_upload_over_sendfile_and_small_buffers() {
    let srv = start_plain(&[]).await;
    let local = tempfile::tempdir().unwrap();
    let bytes = data(3 * MIB + 7, 2);
    let src = write_file(local.path(), "a.bin", &bytes);
    for (sendfile, buf) in [(true, 256 * 1024), (false, 4096)] {
        let client = srv.client_with(|c| {
            c.sendfile = sendfile;
            c.write_buffer = buf;
            c.read_buffer = buf;
        });
        let opts = UploadOptions {
            digest_first: true,
            verify: true,
            no_clobber: false,
            progress: None,
            ..UploadOptions::default()
        };
        let up = within(
            30,
            transfer::upload_file(&client, &srv.url("/a.bin"), &src, &opts),
        )
        .await
        .unwrap();
        assert_eq!(up.server_sha256, up.sha256);
        assert_eq!(std::fs::read(srv.root().join("a.bin")).unwrap(), bytes);
        let dest = local.path().join(format!("b{buf}.bin"));
        within(
            30,
            transfer::download_file(
                &client,
                &srv.url("/a.bin"),
                &dest,
                &DownloadOptions::default(),
            ),
        )
        .await
        .unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), bytes);
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_round_trip_with_cacert_and_untrusted_refused() {
    let (srv, _certdir) = start_tls(&[]).await;
    let local = tempfile::tempdir().unwrap();
    let bytes = data(4 * MIB + 5, 3);
    let src = write_file(local.path(), "t.bin", &bytes);
    let client = srv.client();
    let up = within(
        30,
        transfer::upload_file(&client, &srv.url("/t.bin"), &src, &UploadOptions::default()),
    )
    .await
    .unwrap();
    assert_eq!(up.server_sha256, up.sha256);
    let dest = local.path().join("t2.bin");
    within(
        30,
        transfer::download_file(
            &client,
            &srv.url("/t.bin"),
            &dest,
            &DownloadOptions::default(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), bytes);
    assert_eq!(client.idle_connections(), 1);

    // Without the certificate: a TLS error that says why.
    let untrusted = Client::new(ClientConfig::default()).unwrap();
    let err = within(10, untrusted.send(Request::get(srv.url("/t.bin"))))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tls { .. }), "{err:?}");
    assert!(err.to_string().contains("TLS handshake"), "{err}");
    // --insecure: accepted.
    let insecure = Client::new(ClientConfig {
        tls: ClientTls {
            cacert: None,
            insecure_accept_anything: true,
        },
        ..ClientConfig::default()
    })
    .unwrap();
    let r = within(10, insecure.send(Request::get(srv.url("/t.bin"))))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Plain HTTP to the TLS port: the client gets the explanatory 400.
    let plain_url = Url::parse(&format!("http://{}/t.bin", srv.addr)).unwrap();
    let err = within(
        10,
        Client::new(ClientConfig::default())
            .unwrap()
            .send(Request::get(plain_url)),
    )
    .await
    .unwrap()
    .error_for_status()
    .await
    .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(err.to_string().contains("https://"), "{err}");
    srv.stop().await;
}

/// A self-signed CA:TRUE certificate (what `openssl req -x509` makes) for
/// `names`, served over TLS; the client trusts it through `--cacert`.
async fn start_ca_true_tls(names: &[&str], certdir: &Path) -> TestServer {
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let path = write_file(certdir, "cert.pem", cert.pem().as_bytes());
    let key = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let config = wirespeed_tls::server_config(vec![cert.der().clone()], key).unwrap();
    start_tls_with(wirespeed_tls::Acceptor::new(config), path).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cacert_pins_a_ca_true_self_signed_certificate() {
    let certdir = tempfile::tempdir().unwrap();
    let srv = start_ca_true_tls(&["localhost", "127.0.0.1"], certdir.path()).await;
    let local = tempfile::tempdir().unwrap();
    let bytes = data(MIB + 7, 9);
    let src = write_file(local.path(), "p.bin", &bytes);
    let up = within(
        30,
        transfer::upload_file(
            &srv.client(),
            &srv.url("/p.bin"),
            &src,
            &UploadOptions::default(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(up.server_sha256, up.sha256);
    srv.stop().await;

    // Pinned, but not for the host the client connects to: a sentence, not Debug output.
    let certdir = tempfile::tempdir().unwrap();
    let srv = start_ca_true_tls(&["localhost"], certdir.path()).await;
    let err = within(10, srv.client().send(Request::get(srv.url("/p.bin"))))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tls { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("TLS handshake with {} failed: the server's certificate (pinned via --cacert) is not valid for host 127.0.0.1", srv.addr)
    );
    srv.stop().await;
}

/// Wraps the service: the first GET is cut in the middle (Content-Length
/// announced, half the bytes sent, connection closed).
struct CutFirstGet {
    inner: Router,
    half_file: PathBuf,
    full_len: u64,
    cut: AtomicBool,
}

impl Handler for CutFirstGet {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), wirespeed_net::Error> {
        if ex.method() == "GET" && self.cut.swap(false, Ordering::SeqCst) {
            let f = std::fs::File::open(&self.half_file).unwrap();
            // send_file promises full_len; the file has half: the server
            // sends what it has and closes.
            return ex.send_file(Response::new(200), &f, 0, self.full_len).await;
        }
        self.inner.handle(ex).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_download_leaves_no_destination_and_resumes() {
    let bytes = data(6 * MIB + 11, 4);
    let aux = tempfile::tempdir().unwrap();
    let half = write_file(aux.path(), "half", &bytes[..bytes.len() / 2]);
    let full_len = bytes.len() as u64;
    let srv = start_with(|root| {
        std::fs::write(root.join("f.bin"), &bytes).unwrap();
        CutFirstGet {
            inner: service(root, &[]),
            half_file: half.clone(),
            full_len,
            cut: AtomicBool::new(true),
        }
    })
    .await;
    let client = srv.client();
    let local = tempfile::tempdir().unwrap();
    let dest = local.path().join("f.bin");
    let err = within(
        30,
        transfer::download_file(
            &client,
            &srv.url("/f.bin"),
            &dest,
            &DownloadOptions {
                retry: transfer::retry::RetryPolicy::none(),
                ..DownloadOptions::default()
            },
        ),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::Truncated { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("closed mid-body") && msg.contains(&full_len.to_string()),
        "{msg}"
    );
    assert!(!dest.exists(), "no partial file at the destination");
    let part = transfer::part_path(&dest);
    let have = std::fs::metadata(&part).unwrap().len();
    assert!(
        have > 0 && have <= full_len / 2,
        "partial kept for resume: {have}"
    );

    let opts = DownloadOptions {
        resume: true,
        progress: None,
        ..DownloadOptions::default()
    };
    let rep = within(
        30,
        transfer::download_file(&client, &srv.url("/f.bin"), &dest, &opts),
    )
    .await
    .unwrap();
    assert_eq!(rep.resumed_from, have);
    assert_eq!(std::fs::read(&dest).unwrap(), bytes);
    assert!(!part.exists());

    // A stale part that is longer than the file: 416 → restart from 0.
    std::fs::write(&part, vec![0u8; bytes.len() + 10]).unwrap();
    let rep = within(
        30,
        transfer::download_file(&client, &srv.url("/f.bin"), &dest, &opts),
    )
    .await
    .unwrap();
    assert_eq!(rep.resumed_from, 0);
    assert_eq!(std::fs::read(&dest).unwrap(), bytes);
    srv.stop().await;
}

/// Answers every PUT with a wrong Repr-Digest, and GET /bad with a body
/// whose Repr-Digest does not match.
struct LyingDigest;

impl Handler for LyingDigest {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), wirespeed_net::Error> {
        let wrong = transfer::format_sha256(&[7u8; 32]);
        if ex.method() == "PUT" {
            ex.copy_body_to(&mut tokio::io::sink()).await?;
            return ex
                .send(Response::new(201).header("Repr-Digest", wrong), b"stored\n")
                .await;
        }
        ex.send(
            Response::new(200).header("Repr-Digest", wrong),
            &data(300_000, 9),
        )
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_mismatch_is_detected_both_ways() {
    let srv = start_with(|_| LyingDigest).await;
    let client = srv.client();
    let local = tempfile::tempdir().unwrap();
    let src = write_file(local.path(), "x.bin", &data(2 * MIB, 5));
    let err = within(
        30,
        transfer::upload_file(&client, &srv.url("/x.bin"), &src, &UploadOptions::default()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, Error::DigestMismatch { what: "upload", .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("corrupted"), "{err}");

    let dest = local.path().join("bad.bin");
    let err = within(
        30,
        transfer::download_file(
            &client,
            &srv.url("/bad"),
            &dest,
            &DownloadOptions::default(),
        ),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::DigestMismatch {
                what: "download",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        !dest.exists() && !transfer::part_path(&dest).exists(),
        "corrupt bytes are not kept"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_is_an_error_with_the_server_message() {
    let srv = start_plain(&["s3cret"]).await;
    let local = tempfile::tempdir().unwrap();
    // Small (no Expect) and large (Expect: 100-continue → refused before the body).
    for size in [1000, 8 * MIB] {
        let src = write_file(local.path(), "u.bin", &data(size, 6));
        let client = srv.client();
        let err = within(
            30,
            transfer::upload_file(&client, &srv.url("/u.bin"), &src, &UploadOptions::default()),
        )
        .await
        .unwrap_err();
        assert_eq!(err.status(), Some(401), "{err:?}");
        let msg = err.to_string();
        assert!(msg.starts_with("server answered 401"), "{msg}");
        assert!(
            msg.len() > "server answered 401 Unauthorized".len(),
            "carries the server's message: {msg}"
        );
        let wrong = srv.client_with(|c| c.token = Some("nope".into()));
        let err = within(
            30,
            transfer::upload_file(&wrong, &srv.url("/u.bin"), &src, &UploadOptions::default()),
        )
        .await
        .unwrap_err();
        assert_eq!(err.status(), Some(401), "{err:?}");
        let good = srv.client_with(|c| c.token = Some("s3cret".into()));
        let up = within(
            30,
            transfer::upload_file(&good, &srv.url("/u.bin"), &src, &UploadOptions::default()),
        )
        .await
        .unwrap();
        assert_eq!(up.server_sha256, up.sha256);
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_is_clear() {
    let port = wirespeed_testkit::server::closed_port();
    let client = Client::new(ClientConfig::default()).unwrap();
    let url = Url::parse(&format!("http://127.0.0.1:{port}/x")).unwrap();
    let err = within(10, client.send(Request::get(url)))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ConnectionRefused { .. }), "{err:?}");
    assert!(err.to_string().contains("connection refused"), "{err}");
}

/// Checks that a form upload arrives with the right length and framing.
struct FormEcho {
    seen: Arc<AtomicUsize>,
}

impl Handler for FormEcho {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), wirespeed_net::Error> {
        let ct = ex.header_str("content-type").unwrap_or("").to_string();
        let declared = ex.content_length();
        let body = ex.read_body_to_vec(64 * MIB).await?;
        assert_eq!(
            declared,
            Some(body.len() as u64),
            "Content-Length computed up front"
        );
        let boundary = ct.split_once("boundary=").unwrap().1.to_string();
        let (head, tail) = transfer::form_framing(&boundary, "file", "f.bin");
        assert!(body.starts_with(&head) && body.ends_with(&tail));
        self.seen
            .store(body.len() - head.len() - tail.len(), Ordering::SeqCst);
        ex.send_text(201, "form stored").await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn form_upload_streams_with_content_length() {
    let seen = Arc::new(AtomicUsize::new(0));
    let s2 = seen.clone();
    let srv = start_with(move |_| FormEcho { seen: s2 }).await;
    let local = tempfile::tempdir().unwrap();
    let src = write_file(local.path(), "f.bin", &data(3 * MIB + 1, 7));
    let (status, text) = within(
        30,
        transfer::upload_form(&srv.client(), &srv.url("/dir/"), &src, "file", None),
    )
    .await
    .unwrap();
    assert_eq!((status, text.trim()), (201, "form stored"));
    assert_eq!(seen.load(Ordering::SeqCst), 3 * MIB + 1);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_garbage_does_not_disturb_a_concurrent_transfer() {
    let (srv, _certdir) = start_tls(&[]).await;
    let bytes = data(16 * MIB, 8);
    std::fs::write(srv.root().join("big.bin"), &bytes).unwrap();
    let client = srv.client_with(|c| c.read_buffer = 64 * 1024);
    let url = srv.url("/big.bin");
    let expect = Sha256::digest(&bytes);
    // A slow reader, so the transfer is in flight while the garbage arrives.
    let transfer = tokio::spawn(async move {
        let mut resp = client
            .send(Request::get(url))
            .await?
            .error_for_status()
            .await?;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut reads = 0u32;
        loop {
            let n = resp.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            reads += 1;
            if reads.is_multiple_of(8) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        Ok::<_, Error>(h.finalize())
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let addr = srv.addr;
    for i in 0..20u8 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        match i % 4 {
            // Random garbage.
            0 => {
                let _ = s.write_all(&data(700, i as u64)).await;
            }
            // A plaintext HTTP request: gets a plaintext 400.
            1 => {
                s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
                    .await
                    .unwrap();
                let mut answer = Vec::new();
                let _ = within(5, s.read_to_end(&mut answer)).await;
                assert!(
                    answer.starts_with(b"HTTP/1.1 400"),
                    "{:?}",
                    String::from_utf8_lossy(&answer)
                );
            }
            // A ClientHello cut short, then hang up.
            2 => {
                let _ = s
                    .write_all(&[
                        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
                    ])
                    .await;
            }
            // Connect and hang up at once.
            _ => {}
        }
        drop(s);
    }
    let sum = within(60, transfer).await.unwrap().unwrap();
    assert_eq!(sum, expect, "the healthy transfer completed intact");
    // And the server still serves new TLS clients.
    let r = within(10, srv.client().send(Request::get(srv.url("/big.bin"))))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_bodies_are_sent_and_idle_connections_stay_within_the_pool_limit() {
    let srv = start_plain(&[]).await;
    let client = srv.client_with(|c| c.max_idle_per_host = 1);
    // Two responses held at once need two connections; only one is kept idle.
    let a = client
        .send(Request::put(srv.url("/a")).body(Body::bytes("aaa")))
        .await
        .unwrap();
    let b = client
        .send(Request::put(srv.url("/b")).body(Body::bytes("bbb")))
        .await
        .unwrap();
    assert!(a.status() < 300 && b.status() < 300);
    let _ = a.bytes(1 << 16).await.unwrap();
    let _ = b.bytes(1 << 16).await.unwrap();
    assert_eq!(client.idle_connections(), 1);
    let r = client.send(Request::get(srv.url("/a"))).await.unwrap();
    assert_eq!(r.bytes(1 << 16).await.unwrap(), b"aaa");
    srv.stop().await;
}
