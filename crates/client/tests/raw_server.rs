//! The client against a hand-written server on a raw socket, for answers
//! the real service never gives: endless interim responses, a kept-alive
//! connection closed right after a request arrived, and a refusal that
//! comes while the body is going out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_client::{Body, Client, ClientConfig, Error, FileBody, Request, Url};
use wirespeed_testkit::server::Scripted;

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// Read one request head, byte by byte (nothing of a body is taken);
/// `None` at EOF.
async fn read_head(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(head)
}

/// Read one body-less request head; false at EOF.
async fn read_request(s: &mut TcpStream) -> bool {
    read_head(s).await.is_some()
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

/// A tus server of a few lines (creation, concatenation) that loses the
/// first part it is sent while the bytes arrive, as a server whose upload
/// expired or was removed between the client's offset and its append: the
/// append meets 404. Joined files land in `joined`.
#[derive(Default)]
struct ForgetfulTus {
    parts: std::sync::Mutex<std::collections::HashMap<String, Vec<u8>>>,
    joined: std::sync::Mutex<Option<Vec<u8>>>,
    forgot: std::sync::atomic::AtomicBool,
    created: AtomicU64,
}

/// One request: method, path, lower-cased headers, and the body unless an
/// `Expect: 100-continue` waits for the server's word (then `None`).
type Asked = (
    String,
    String,
    std::collections::HashMap<String, String>,
    Option<Vec<u8>>,
);

async fn read_asked(s: &mut TcpStream, go_on: impl Fn(&str, &str) -> bool) -> Option<Asked> {
    let head = String::from_utf8(read_head(s).await?).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let fields: std::collections::HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = fields
        .get("content-length")
        .map_or(0, |v| v.parse().unwrap());
    if fields.contains_key("expect") {
        if !go_on(&method, &path) {
            return Some((method, path, fields, None));
        }
        s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await.ok()?;
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.ok()?;
    Some((method, path, fields, Some(body)))
}

impl ForgetfulTus {
    /// Whether the append to `path` is the one the server loses.
    fn loses(&self, method: &str, path: &str) -> bool {
        method == "PATCH"
            && self.parts.lock().unwrap().contains_key(path)
            && !self.forgot.swap(true, Ordering::SeqCst)
    }

    async fn serve(self: Arc<Self>, mut s: TcpStream) {
        const TUS: &str = "Tus-Resumable: 1.0.0\r\n";
        loop {
            let lost = std::sync::atomic::AtomicBool::new(false);
            let go_on = |m: &str, p: &str| {
                let l = self.loses(m, p);
                lost.store(l, Ordering::SeqCst);
                !l
            };
            let Some((method, path, fields, body)) = read_asked(&mut s, go_on).await else {
                return;
            };
            let lost =
                lost.load(Ordering::SeqCst) || (body.is_some() && self.loses(&method, &path));
            let concat = fields.get("upload-concat").cloned().unwrap_or_default();
            let answer = if lost {
                self.parts.lock().unwrap().remove(&path);
                format!(
                    "HTTP/1.1 404 Not Found\r\n{TUS}Content-Length: 0\r\nConnection: close\r\n\r\n"
                )
            } else if method == "OPTIONS" {
                format!(
                    "HTTP/1.1 204 No Content\r\n{TUS}Tus-Version: 1.0.0\r\n\
                     Tus-Extension: creation,concatenation\r\n\r\n"
                )
            } else if method == "POST" && concat == "partial" {
                let n = self.created.fetch_add(1, Ordering::SeqCst);
                let at = format!("/-/uploads/p{n}");
                self.parts.lock().unwrap().insert(at.clone(), Vec::new());
                format!("HTTP/1.1 201 Created\r\n{TUS}Location: {at}\r\nContent-Length: 0\r\n\r\n")
            } else if method == "POST" && concat.starts_with("final;") {
                let parts = self.parts.lock().unwrap();
                let joined: Option<Vec<u8>> = concat["final;".len()..]
                    .split(' ')
                    .map(|p| parts.get(p).cloned())
                    .collect::<Option<Vec<_>>>()
                    .map(|v| v.concat());
                let ok = joined.is_some();
                *self.joined.lock().unwrap() = joined;
                if ok {
                    format!(
                        "HTTP/1.1 201 Created\r\n{TUS}Location: /-/uploads/final\r\n\
                         Upload-Offset: 0\r\nContent-Length: 0\r\n\r\n"
                    )
                } else {
                    format!("HTTP/1.1 400 Bad Request\r\n{TUS}Content-Length: 0\r\n\r\n")
                }
            } else if method == "PATCH" {
                let mut parts = self.parts.lock().unwrap();
                match parts.get_mut(&path) {
                    Some(p) => {
                        p.extend_from_slice(body.as_deref().unwrap_or_default());
                        format!(
                            "HTTP/1.1 204 No Content\r\n{TUS}Upload-Offset: {}\r\n\r\n",
                            p.len()
                        )
                    }
                    None => format!("HTTP/1.1 404 Not Found\r\n{TUS}Content-Length: 0\r\n\r\n"),
                }
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_string()
            };
            if s.write_all(answer.as_bytes()).await.is_err() || lost {
                return;
            }
        }
    }
}

/// A part the server lost while it was appended to is created and sent
/// again, and the upload completes; the user is told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_part_lost_by_the_server_mid_append_is_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("f.bin");
    let data: Vec<u8> = (0..16u32 << 20).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&src, &data).unwrap();
    let tus = Arc::new(ForgetfulTus::default());
    let t = tus.clone();
    let srv = Scripted::start(move |_, s| t.clone().serve(s)).await;
    let said = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let notes = said.clone();
    let opts = wirespeed_client::transfer::UploadOptions {
        verify: false,
        send_mtime: false,
        connections: 2,
        parts_from: 1 << 20,
        state_dir: Some(dir.path().join("state")),
        notice: Some(Arc::new(move |m: &str| {
            notes.lock().unwrap().push(m.to_string())
        })),
        ..Default::default()
    };
    let url = Url::parse(&format!("{}/f.bin", srv.url())).unwrap();
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        wirespeed_client::transfer::upload_file(&client(), &url, &src, &opts),
    )
    .await
    .expect("the upload ended")
    .unwrap_or_else(|e| panic!("{e}; said: {:?}", said.lock().unwrap()));
    assert!(report.parallel.is_some(), "{report:?}");
    assert!(tus.forgot.load(Ordering::SeqCst), "no part was lost");
    assert_eq!(tus.joined.lock().unwrap().as_deref(), Some(&data[..]));
    let said = said.lock().unwrap();
    assert!(said.iter().any(|m| m.contains("lost part")), "{said:?}");
}

/// Reads a request head and its `Content-Length` bytes of body; the body's
/// length, or `None` at EOF.
async fn read_with_body(s: &mut TcpStream) -> Option<usize> {
    let head = String::from_utf8(read_head(s).await?).ok()?;
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.ok()?;
    Some(len)
}

fn two_appends(srv: &Scripted, file: &std::path::Path) -> [Request; 2] {
    [1, 2].map(|n| {
        Request::new(
            "PATCH",
            Url::parse(&format!("{}/part{n}", srv.url())).unwrap(),
        )
        .body(Body::file(FileBody::open(file).unwrap()))
        .without_expect_continue()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_writes_the_next_request_before_the_last_answer_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("part.bin");
    std::fs::write(&file, vec![5u8; 3 << 20]).unwrap();
    // Answers nothing until both requests are in, whole: a client that
    // waited for the first answer before writing the second would stall.
    let srv = Scripted::start(|_, mut s| async move {
        let (Some(a), Some(b)) = (read_with_body(&mut s).await, read_with_body(&mut s).await)
        else {
            return;
        };
        let answer = |n: usize| format!("HTTP/1.1 204 No Content\r\nUpload-Offset: {n}\r\n\r\n");
        let _ = s.write_all((answer(a) + &answer(b)).as_bytes()).await;
        // A third request on the same connection is answered too.
        if read_request(&mut s).await {
            let _ = s.write_all(OK).await;
        }
    })
    .await;
    let client = client();
    let [first, second] = two_appends(&srv, &file);
    let mut pipe = client.pipeline(&first.url.clone()).await.unwrap();
    let both = async {
        pipe.write(first).await.unwrap();
        pipe.write(second).await.unwrap();
        assert_eq!(pipe.waiting(), 2);
        let a = pipe.answer().await.unwrap();
        let b = pipe.answer().await.unwrap();
        (a, b)
    };
    let (a, b) = tokio::time::timeout(Duration::from_secs(20), both)
        .await
        .expect("the second request waited for the first answer");
    let offset = (3u32 << 20).to_string();
    assert_eq!((a.status, b.status), (204, 204));
    assert_eq!(a.header("upload-offset"), Some(offset.as_bytes()));
    assert_eq!(pipe.waiting(), 0);
    assert!(pipe.open());
    // Nothing waits: the connection goes back to the pool and carries on.
    drop(pipe);
    assert_eq!(client.idle_connections(), 1);
    assert_eq!(
        get(&client, &format!("{}/", srv.url())).await.unwrap(),
        b"ok"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_in_a_pipeline_ends_it_and_later_answers_are_not_made_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("part.bin");
    std::fs::write(&file, vec![5u8; 1 << 20]).unwrap();
    // Refuses the first append once it is in, and closes.
    let srv = Scripted::start(|_, mut s| async move {
        if read_with_body(&mut s).await.is_some() {
            let _ = s
                .write_all(b"HTTP/1.1 409 Conflict\r\nContent-Length: 14\r\nConnection: close\r\n\r\noffset differs")
                .await;
        }
    })
    .await;
    let client = client();
    let [first, second] = two_appends(&srv, &file);
    let mut pipe = client.pipeline(&first.url.clone()).await.unwrap();
    pipe.write(first).await.unwrap();
    // The second may or may not get out before the close is seen; either
    // way its answer never comes.
    let _ = pipe.write(second).await;
    match pipe.answer().await {
        Err(Error::Status {
            status: 409,
            message,
            ..
        }) => assert_eq!(message, "offset differs"),
        other => panic!("{other:?}"),
    }
    assert!(!pipe.open());
    assert!(pipe.answer().await.is_err());
    drop(pipe);
    assert_eq!(
        client.idle_connections(),
        0,
        "a refused pipeline is not pooled"
    );
}

/// A file of zeros served by ranges, each range paced to about 8 MB/s,
/// every range's answer carrying `link` as its `Wirespeed-Link` (none
/// when empty): what a wirespeed server says of its connection.
async fn serve_ranges(size: u64, link: &'static str, mut s: TcpStream) {
    const ETAG: &str = "ETag: \"v1\"\r\nAccept-Ranges: bytes\r\n";
    let link = if link.is_empty() {
        String::new()
    } else {
        format!("Wirespeed-Link: {link}\r\n")
    };
    let zeros = vec![0u8; 64 * 1024];
    while let Some((method, _, fields, _)) = read_asked(&mut s, |_, _| true).await {
        if method == "HEAD" {
            let head = format!("HTTP/1.1 200 OK\r\n{ETAG}Content-Length: {size}\r\n\r\n");
            if s.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            continue;
        }
        let range = fields.get("range").and_then(|r| r.strip_prefix("bytes="));
        let Some((a, b)) = range.and_then(|r| r.split_once('-')) else {
            return;
        };
        let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\n{ETAG}{link}Content-Range: bytes {a}-{b}/{size}\r\n\
             Content-Length: {}\r\n\r\n",
            b + 1 - a
        );
        if s.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let mut left = b + 1 - a;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            if s.write_all(&zeros[..n]).await.is_err() {
                return;
            }
            left -= n as u64;
            tokio::time::sleep(Duration::from_millis(8)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ranged_download_tries_no_second_connection_while_the_server_says_one_fills_the_link() {
    use wirespeed_client::transfer::{download_file, DownloadOptions};
    // 64 MiB: 4 MiB pieces, 8 s at the pace; the first judgement of a
    // second connection comes 4 s in, with pieces still to fetch.
    const SIZE: u64 = 64 << 20;
    let dir = tempfile::tempdir().unwrap();
    let runs = ["", "fills", "judging"].map(|link| {
        let dest = dir.path().join(format!("got-{link}"));
        async move {
            let srv = Scripted::start(move |_, s| serve_ranges(SIZE, link, s)).await;
            let opts = DownloadOptions {
                connections: 4,
                ranged_from: 1 << 20,
                ..DownloadOptions::default()
            };
            let url = Url::parse(&format!("{}/f.bin", srv.url())).unwrap();
            let client = client();
            let get = download_file(&client, &url, &dest, &opts);
            // Past the first judgement (4 s) and the next connection's
            // start; the download itself is not waited for.
            let _ = tokio::time::timeout(Duration::from_millis(5500), get).await;
            (link, srv.connections())
        }
    });
    let [none, fills, judging] = futures_join3(runs).await;
    assert_eq!(
        none,
        ("", 2),
        "no word from the server: a second connection is tried"
    );
    assert_eq!(fills, ("fills", 1));
    assert_eq!(judging, ("judging", 1));
}

/// The three runs at once (they pace, they do not compete for the CPU).
async fn futures_join3<F: std::future::Future>(runs: [F; 3]) -> [F::Output; 3] {
    let [a, b, c] = runs;
    let (a, b, c) = tokio::join!(a, b, c);
    [a, b, c]
}

/// The byte at `at` of [`serve_pattern`]'s file.
fn pattern(at: u64) -> u8 {
    (at % 251) as u8
}

/// A file of `size` bytes of [`pattern`], served by ranges as fast as the
/// connection takes it; each request logged as `METHOD RANGE IF-RANGE`.
async fn serve_pattern(size: u64, log: Arc<Mutex<Vec<String>>>, mut s: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Some((method, _, fields, _)) = read_asked(&mut s, |_, _| true).await {
        let range = fields.get("range").cloned().unwrap_or_default();
        let if_range = fields.get("if-range").cloned().unwrap_or_default();
        log.lock()
            .unwrap()
            .push(format!("{method} {range} {if_range}").trim().to_string());
        let Some((a, b)) = range.strip_prefix("bytes=").and_then(|r| r.split_once('-')) else {
            return;
        };
        let a: u64 = a.parse().unwrap();
        let b: u64 = b.parse::<u64>().unwrap().min(size - 1);
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\nAccept-Ranges: bytes\r\n\
             Content-Range: bytes {a}-{b}/{size}\r\nContent-Length: {}\r\n\r\n",
            b + 1 - a
        );
        if s.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let mut at = a;
        while at <= b {
            let n = (b + 1 - at).min(buf.len() as u64) as usize;
            for (i, x) in buf[..n].iter_mut().enumerate() {
                *x = pattern(at + i as u64);
            }
            if s.write_all(&buf[..n]).await.is_err() {
                return;
            }
            at += n as u64;
        }
    }
}

/// A fresh download asks no HEAD: its first request, a GET of the first
/// 4 MiB, tells the size and version. Pieces here are 5 MiB: the rest of
/// the first one is asked next on the same connection, then the others,
/// each byte once and held to the first answer's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_ranged_download_learns_the_size_from_its_first_bytes() {
    use wirespeed_client::transfer::ranges::{piece_size, SMALLEST_PIECE};
    use wirespeed_client::transfer::{download_file, DownloadOptions};
    const MIB: u64 = 1 << 20;
    const SIZE: u64 = 260 * MIB + 7;
    let piece = piece_size(SIZE);
    assert_eq!(
        piece,
        5 * MIB,
        "the first piece is longer than the first ask"
    );
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let srv = {
        let log = log.clone();
        Scripted::start(move |_, s| serve_pattern(SIZE, log.clone(), s)).await
    };
    // More than one connection allowed, but the file is below `ranged_from`:
    // one connection, so the order of the requests is known.
    let opts = DownloadOptions {
        connections: 4,
        ranged_from: u64::MAX,
        ..DownloadOptions::default()
    };
    let url = Url::parse(&format!("{}/f.bin", srv.url())).unwrap();
    let dest = dir.path().join("f.bin");
    let client = client();
    let rep = download_file(&client, &url, &dest, &opts).await.unwrap();
    assert_eq!(rep.bytes, SIZE);
    assert_eq!(srv.connections(), 1);
    let got = std::fs::read(&dest).unwrap();
    let wrong = got
        .iter()
        .enumerate()
        .position(|(i, b)| *b != pattern(i as u64));
    assert_eq!((got.len() as u64, wrong), (SIZE, None));
    let mut want = vec![format!("GET bytes=0-{}", SMALLEST_PIECE - 1)];
    want.push(format!("GET bytes={SMALLEST_PIECE}-{} \"v1\"", piece - 1));
    let mut at = piece;
    while at < SIZE {
        let end = (at + piece).min(SIZE);
        want.push(format!("GET bytes={at}-{} \"v1\"", end - 1));
        at = end;
    }
    assert_eq!(*log.lock().unwrap(), want);
}

/// A file no larger than the first ask comes whole in its answer: one
/// request, written as one stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_file_comes_whole_in_the_first_answer() {
    use wirespeed_client::transfer::{download_file, DownloadOptions};
    let dir = tempfile::tempdir().unwrap();
    for size in [1u64, 4 << 20] {
        let log = Arc::new(Mutex::new(Vec::new()));
        let srv = {
            let log = log.clone();
            Scripted::start(move |_, s| serve_pattern(size, log.clone(), s)).await
        };
        let opts = DownloadOptions {
            connections: 4,
            ranged_from: 1,
            ..DownloadOptions::default()
        };
        let url = Url::parse(&format!("{}/s.bin", srv.url())).unwrap();
        let dest = dir.path().join(format!("s{size}.bin"));
        let rep = download_file(&client(), &url, &dest, &opts).await.unwrap();
        let got = std::fs::read(&dest).unwrap();
        assert_eq!((rep.bytes, got.len() as u64), (size, size));
        assert!(got.iter().enumerate().all(|(i, b)| *b == pattern(i as u64)));
        assert_eq!(
            *log.lock().unwrap(),
            [format!("GET bytes=0-{}", (4 << 20) - 1)]
        );
    }
}
