//! `GET FILE?thumbnail` end to end: JPEG, PNG, GIF and WebP pictures give
//! a JPEG of at most 512 px on the longest side (EXIF orientation applied),
//! other files 415, missing ones 404; the answer revalidates by ETag and a
//! replaced file never shows the old picture (disk cache included); the
//! rights are exactly GET's: a user without rights to a folder, a share
//! link outside its folder, hidden names and symlinks out of the tree all
//! get what GET gets.

mod common;

use std::io::Cursor;
use std::sync::Arc;

use common::*;
use image::{DynamicImage, ImageFormat, RgbImage};
use wirespeed_service::policy::password;
use wirespeed_service::thumbnail::{DiskCache, Thumbnails};
use wirespeed_service::{Access, ServiceConfig, Users};

fn picture(format: ImageFormat, w: u32, h: u32, shade: u8) -> Vec<u8> {
    let rgb = RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([shade, (x % 256) as u8, (y % 256) as u8])
    });
    if format == ImageFormat::Jpeg {
        let mut out = Vec::new();
        jpeg_encoder::Encoder::new(&mut out, 90)
            .encode(
                rgb.as_raw(),
                w as u16,
                h as u16,
                jpeg_encoder::ColorType::Rgb,
            )
            .unwrap();
        return out;
    }
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(rgb)
        .write_to(&mut out, format)
        .unwrap();
    out.into_inner()
}

/// The size of a JPEG answer, and its mean red (the test pictures' shade).
fn decoded(jpeg: &[u8]) -> (u32, u32, u8) {
    assert_eq!(&jpeg[..3], &[0xFF, 0xD8, 0xFF], "a JPEG");
    let mut d = jpeg_decoder::Decoder::new(jpeg);
    let px = d.decode().unwrap();
    let i = d.info().unwrap();
    let img = RgbImage::from_raw(u32::from(i.width), u32::from(i.height), px).unwrap();
    let red =
        img.pixels().map(|p| u64::from(p[0])).sum::<u64>() / u64::from(img.width() * img.height());
    (img.width(), img.height(), red as u8)
}

fn with_cache() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ServiceConfig {
        thumbnails: Thumbnails::new(Some(DiskCache::open(&dir.path().join("thumbs"), 64 << 20))),
        ..Default::default()
    };
    (TestServer::with(cfg), dir)
}

#[test]
fn pictures_shrink_to_512_and_other_files_are_415() {
    let (s, _cache) = with_cache();
    for (name, format, w, h) in [
        ("a.jpg", ImageFormat::Jpeg, 2000, 1500),
        ("b.png", ImageFormat::Png, 600, 1200),
        ("c.gif", ImageFormat::Gif, 1024, 100),
        ("d.webp", ImageFormat::WebP, 700, 700),
        ("small.png", ImageFormat::Png, 64, 48),
    ] {
        std::fs::write(s.root.join(name), picture(format, w, h, 200)).unwrap();
        let r = s.get(&format!("/{name}?thumbnail"));
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("image/jpeg"));
        let (tw, th, _) = decoded(&r.body);
        assert!(tw.max(th) <= 512, "{name}: {tw}x{th}");
        let long = w.max(h).min(512);
        assert_eq!(tw.max(th), long, "{name}: the longest side");
        assert_eq!(tw * h / w, th.min(tw * h / w), "{name}: proportions kept");
    }
    std::fs::write(s.root.join("notes.txt"), "plain text").unwrap();
    assert_eq!(s.get("/notes.txt?thumbnail").status, 415);
    std::fs::write(s.root.join("fake.jpg"), "not a picture").unwrap();
    assert_eq!(s.get("/fake.jpg?thumbnail").status, 415);
    assert_eq!(s.get("/missing.jpg?thumbnail").status, 404);
    std::fs::create_dir(s.root.join("folder")).unwrap();
    assert_eq!(s.get("/folder/?thumbnail").status, 415);
    // HEAD says the same without the bytes.
    let h = s.req("HEAD", "/a.jpg?thumbnail", &[], b"");
    assert_eq!(h.status, 200);
    assert!(h.body.is_empty());
}

#[test]
fn exif_orientation_turns_the_picture() {
    let s = TestServer::start();
    // A 40x20 JPEG whose EXIF says "rotate 90° clockwise" (orientation 6).
    let plain = picture(ImageFormat::Jpeg, 40, 20, 10);
    let exif: &[u8] = &[
        b'E', b'x', b'i', b'f', 0, 0, b'M', b'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0,
        0, 1, 0, 6, 0, 0, 0, 0, 0, 0,
    ];
    let mut jpeg = plain[..2].to_vec();
    jpeg.extend_from_slice(&[0xFF, 0xE1]);
    jpeg.extend_from_slice(&((exif.len() + 2) as u16).to_be_bytes());
    jpeg.extend_from_slice(exif);
    jpeg.extend_from_slice(&plain[2..]);
    std::fs::write(s.root.join("turned.jpg"), jpeg).unwrap();
    let r = s.get("/turned.jpg?thumbnail");
    assert_eq!(r.status, 200, "{}", r.text());
    let (w, h, _) = decoded(&r.body);
    assert_eq!((w, h), (20, 40));
}

#[test]
fn etag_revalidates_and_a_replaced_file_never_shows_the_old_picture() {
    let (s, cache) = with_cache();
    std::fs::write(
        s.root.join("p.jpg"),
        picture(ImageFormat::Jpeg, 800, 600, 240),
    )
    .unwrap();
    let first = s.get("/p.jpg?thumbnail");
    assert_eq!(first.status, 200);
    assert!(decoded(&first.body).2 > 200, "the bright picture");
    let tag = first.header("etag").unwrap().to_string();
    assert!(first.header("cache-control").unwrap().contains("private"));
    let again = s.req("GET", "/p.jpg?thumbnail", &[("If-None-Match", &tag)], b"");
    assert_eq!(again.status, 304);
    // Kept on disk, outside the served tree.
    let kept = std::fs::read_dir(cache.path().join("thumbs"))
        .unwrap()
        .count();
    assert_eq!(kept, 1);
    assert!(
        s.names("").iter().all(|n| n == "p.jpg"),
        "{:?}",
        s.names("")
    );
    // Replaced (same size, by an upload): a dark picture now.
    let r = s.put("/p.jpg", &picture(ImageFormat::Jpeg, 800, 600, 10));
    assert!(r.status == 204 || r.status == 201, "{}", r.text());
    let stale = s.req("GET", "/p.jpg?thumbnail", &[("If-None-Match", &tag)], b"");
    assert_eq!(stale.status, 200, "the old ETag no longer matches");
    assert_ne!(stale.header("etag"), Some(tag.as_str()));
    assert!(decoded(&stale.body).2 < 60, "the dark picture");
    // Replaced on the host, under the same name.
    std::fs::write(
        s.root.join("p.jpg"),
        picture(ImageFormat::Jpeg, 800, 600, 240),
    )
    .unwrap();
    let host = s.get("/p.jpg?thumbnail");
    assert!(decoded(&host.body).2 > 200, "the bright picture again");
}

const RULES: &str = r#"
[paths."/"]
"*" = "r"
[paths."/alice"]
alice = "rwds"
"*" = ""
[paths."/shared"]
alice = "rwds"
"#;

fn users_server() -> TestServer {
    let text = format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n{RULES}",
        password::hash(b"alice-pw").unwrap(),
        password::hash(b"bob-pw").unwrap()
    );
    let (shares, sessions) = signed_tables([5; 32]);
    let cfg = ServiceConfig {
        access: Access::new(["tok"], false),
        users: Some(Arc::new(Users::from_text("users.toml", &text).unwrap())),
        shares: Some(shares),
        sessions: Some(sessions),
        hidden: wirespeed_service::Hidden::new(["*.secret.jpg"]).unwrap(),
        ..Default::default()
    };
    let s = TestServer::with(cfg);
    for dir in ["alice", "shared", "public"] {
        std::fs::create_dir_all(s.root.join(dir)).unwrap();
        let p = picture(ImageFormat::Png, 300, 200, 90);
        std::fs::write(s.root.join(dir).join("p.png"), p).unwrap();
    }
    std::fs::write(
        s.root.join("public/x.secret.jpg"),
        picture(ImageFormat::Jpeg, 64, 64, 1),
    )
    .unwrap();
    s
}

fn basic(user: &str, pw: &str) -> (&'static str, String) {
    use base64::Engine as _;
    let creds = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"));
    ("Authorization", format!("Basic {creds}"))
}

#[test]
fn rights_are_those_of_get() {
    let s = users_server();
    let (h, alice) = basic("alice", "alice-pw");
    let (_, bob) = basic("bob", "bob-pw");
    let as_user = |path: &str, who: &str| s.req("GET", path, &[(h, who)], b"");
    assert_eq!(as_user("/alice/p.png?thumbnail", &alice).status, 200);
    // bob may not read alice's folder: the thumbnail answers as GET does.
    let get = as_user("/alice/p.png", &bob).status;
    assert_ne!(get, 200);
    assert_eq!(as_user("/alice/p.png?thumbnail", &bob).status, get);
    assert_eq!(
        s.get("/alice/p.png?thumbnail").status,
        s.get("/alice/p.png").status
    );
    assert_eq!(s.get("/public/p.png?thumbnail").status, 200);
    // A hidden name is absent, thumbnail or not.
    assert_eq!(s.get("/public/x.secret.jpg?thumbnail").status, 404);
    // A share link of /shared/ reaches its folder and nothing beside it.
    let r = s.req("POST", "/-/shares/shared/", &[(h, &alice)], b"");
    assert_eq!(r.status, 201, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let link = v["share"].as_str().unwrap().to_string();
    let inside = s.get(&format!("/shared/p.png?share={link}&thumbnail"));
    assert_eq!(inside.status, 200, "{}", inside.text());
    assert_eq!(inside.header("content-type"), Some("image/jpeg"));
    let outside = s.get(&format!("/alice/p.png?thumbnail&share={link}"));
    assert_eq!(outside.status, 404);
}

#[test]
fn a_symlink_out_of_the_tree_gives_no_thumbnail() {
    let s = TestServer::start();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("o.png"),
        picture(ImageFormat::Png, 50, 50, 3),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path().join("o.png"), s.root.join("o.png")).unwrap();
    let get = s.get("/o.png").status;
    assert_ne!(get, 200);
    assert_eq!(s.get("/o.png?thumbnail").status, get);
}

#[test]
fn a_video_gives_a_frame_through_ffmpeg() {
    let has_ffmpeg = std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_ffmpeg {
        return wirespeed_testkit::tools::missing(
            "ffmpeg is not installed (apt-get install ffmpeg)",
        )
        .unwrap_or(());
    }
    let s = TestServer::start();
    let made = std::process::Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=640x360:rate=10:duration=2",
        ])
        .args(["-pix_fmt", "yuv420p"])
        .arg(s.root.join("clip.mp4"))
        .status()
        .unwrap();
    assert!(made.success());
    let r = s.get("/clip.mp4?thumbnail");
    assert_eq!(r.status, 200, "{}", r.text());
    let (w, h, _) = decoded(&r.body);
    assert_eq!((w, h), (512, 288));
    // Not a video, whatever its name says: 415.
    std::fs::write(s.root.join("fake.mp4"), "no frames here").unwrap();
    assert_eq!(s.get("/fake.mp4?thumbnail").status, 415);
}

/// A picture of noise (a photo's work for the decoder, unlike flat colour).
fn noisy_jpeg(w: u32, h: u32, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x as u8
    };
    let rgb: Vec<u8> = (0..w * h * 3).map(|_| next()).collect();
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, 90)
        .encode(&rgb, w as u16, h as u16, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    out
}

/// `GET NAME?thumbnail` over TLS; the connection, the request sent.
async fn tls_request(
    addr: std::net::SocketAddr,
    client: &Arc<rustls::ClientConfig>,
    name: &str,
) -> wirespeed_tls::ClientTlsStream {
    use tokio::io::AsyncWriteExt as _;
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut tls = wirespeed_tls::connect(client.clone(), "localhost", tcp)
        .await
        .unwrap();
    let req =
        format!("GET /{name}?thumbnail HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tls.write_all(req.as_bytes()).await.unwrap();
    tls.flush().await.unwrap();
    tls
}

/// Viewers who scrolled away over HTTPS: their thumbnails, still queued
/// behind others, are dropped unmade, whether the client sent TLS's
/// `close_notify` before its FIN (curl) or just closed the socket
/// (browsers). The pool's threads are kept on large pictures meanwhile.
#[test]
fn a_queued_thumbnail_is_dropped_when_its_client_leaves_over_tls() {
    use tokio::io::AsyncReadExt as _;
    const BLOCKERS: usize = 4;
    let root = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    // One picture under several names: each is a job of its own.
    let big = noisy_jpeg(2400, 1600, 7);
    for i in 0..BLOCKERS {
        std::fs::write(root.path().join(format!("big-{i}.jpg")), &big).unwrap();
    }
    for name in ["polite.jpg", "abrupt.jpg"] {
        std::fs::write(
            root.path().join(name),
            picture(ImageFormat::Jpeg, 600, 400, 9),
        )
        .unwrap();
    }
    let (acceptor, _cert, _) = wirespeed_tls::server_self_signed(state.path()).unwrap();
    let thumbs = state.path().join("thumbs");
    let cfg = ServiceConfig {
        thumbnails: Thumbnails::new(Some(DiskCache::open(&thumbs, 64 << 20))),
        ..Default::default()
    };
    let storage = wirespeed_service::LocalStorage::new(root.path())
        .unwrap()
        .with_fsync(false);
    let router = wirespeed_service::router(storage, cfg);
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.worker_threads(2);
    let server = wirespeed_testkit::server::ThreadServer::start(rt, |listener, stop| async move {
        let _ = wirespeed_net::Server::new(wirespeed_net::ServerConfig::default())
            .serve_with(listener, Arc::new(acceptor), Arc::new(router), stop)
            .await;
    });
    let addr = server.addr;
    let client = wirespeed_tls::client_config(&wirespeed_tls::ClientTls {
        cacert: None,
        insecure_accept_anything: true,
    })
    .unwrap();
    let made = || std::fs::read_dir(&thumbs).map_or(0, |d| d.count());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut blockers = Vec::new();
        for i in 0..BLOCKERS {
            let client = client.clone();
            blockers.push(tokio::spawn(async move {
                let mut tls = tls_request(addr, &client, &format!("big-{i}.jpg")).await;
                let mut answer = Vec::new();
                let _ = tls.read_to_end(&mut answer).await;
                answer
            }));
        }
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        let polite = tls_request(addr, &client, "polite.jpg").await;
        let abrupt = tls_request(addr, &client, "abrupt.jpg").await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        polite.close().await;
        drop(abrupt);
        // Their jobs wait behind the third large picture at least.
        assert!(
            made() < BLOCKERS - 1,
            "the large pictures were made before the two left"
        );
        for b in blockers {
            let answer = b.await.unwrap();
            assert!(
                answer.starts_with(b"HTTP/1.1 200"),
                "{}",
                String::from_utf8_lossy(&answer[..answer.len().min(200)])
            );
        }
    });
    // The pool has drained (a job left queued would run within this).
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        made(),
        BLOCKERS,
        "only the pictures someone still waited for were made"
    );
    drop(server);
}
