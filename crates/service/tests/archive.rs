//! Folder archives (`GET /dir/?archive=tar|zip`): read back byte-identical
//! by readers nobody here wrote (Python's tarfile and zipfile, GNU tar,
//! bsdtar, unzip, 7z), ranges equal to the same bytes of the whole,
//! `If-Range` after a change, resuming with `curl -C -`, the entry limit,
//! selections, what is left out, a file changing mid-stream, and 4 GiB+
//! entries (sparse) read through ranges only.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::TestServer;
use wirespeed_service::ServiceConfig;
use wirespeed_testkit::data::{bytes, Rng};

/// A tree with the awkward cases: spaces, Unicode, a 255-byte name, an
/// empty folder, nesting, an empty file and a file over one sendfile step.
fn make_tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("a b/deeper/deepest")).unwrap();
    std::fs::create_dir_all(dir.join("empty folder")).unwrap();
    std::fs::create_dir_all(dir.join("été 漢字")).unwrap();
    std::fs::write(dir.join("a b/file one.txt"), b"hello, archive\n").unwrap();
    std::fs::write(dir.join("a b/deeper/deepest/bin.dat"), bytes(700_000, 7)).unwrap();
    std::fs::write(dir.join("été 漢字/naïve résumé.txt"), "ünïcödé".as_bytes()).unwrap();
    std::fs::write(dir.join("empty.txt"), b"").unwrap();
    std::fs::write(dir.join("x".repeat(255)), bytes(513, 3)).unwrap();
    // 255 bytes of two-byte characters nested under a long folder: past
    // ustar's 100+155 bytes, so pax carries the path.
    let long_dir = "é".repeat(100);
    std::fs::create_dir_all(dir.join(&long_dir)).unwrap();
    std::fs::write(
        dir.join(&long_dir).join(format!("{}y", "ü".repeat(127))),
        bytes(1000, 9),
    )
    .unwrap();
}

fn tool(name: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{name} is not installed (.ci/run installs it)");
        }
        eprintln!("SKIPPED: {name} is not installed here (.ci/run installs it in CI)");
    }
    found
}

fn run(cmd: &mut Command) {
    // UTF-8 names stay names (unzip and 7z follow the locale).
    let out = cmd
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("run the reader");
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file and folder under `dir`, relative, with file contents.
fn tree(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(dir.join(&rel)).unwrap() {
            let e = e.unwrap();
            let r = rel.join(e.file_name());
            let name = r.to_str().unwrap().to_string();
            if e.file_type().unwrap().is_dir() {
                out.push((name, None));
                stack.push(r);
            } else {
                out.push((name, Some(std::fs::read(e.path()).unwrap())));
            }
        }
    }
    out.sort();
    out
}

fn range(s: &TestServer, path: &str, from: u64, to: u64, extra: &[(&str, &str)]) -> common::Resp {
    let r = format!("bytes={from}-{to}");
    let mut headers = vec![("Range", r.as_str())];
    headers.extend_from_slice(extra);
    s.req("GET", path, &headers, b"")
}

#[test]
fn archives_read_back_identical_with_independent_readers() {
    let s = TestServer::start();
    make_tree(&s.root.join("tree"));
    let want = tree(&s.root.join("tree"));
    let out = s.tmp.path().join("out");
    for format in ["tar", "zip"] {
        let r = s.get(&format!("/tree/?archive={format}"));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(
            r.header("content-length"),
            Some(r.body.len().to_string().as_str())
        );
        assert_eq!(
            r.header("content-disposition"),
            Some(
                format!("attachment; filename=\"tree.{format}\"; filename*=UTF-8''tree.{format}")
                    .as_str()
            )
        );
        assert!(r
            .header("etag")
            .is_some_and(|t| t.starts_with(&format!("\"{format}-"))));
        // HEAD: the same length and tag, no body.
        let h = s.req("HEAD", &format!("/tree/?archive={format}"), &[], b"");
        assert_eq!(h.header("content-length"), r.header("content-length"));
        assert_eq!(h.header("etag"), r.header("etag"));
        let file = s.tmp.path().join(format!("tree.{format}"));
        std::fs::write(&file, &r.body).unwrap();
        let mut readers: Vec<(&str, Command)> = Vec::new();
        let py = format!(
            "import sys, {m}; a = {m}.{open}(sys.argv[1]); a.extractall(sys.argv[2])",
            m = if format == "tar" {
                "tarfile"
            } else {
                "zipfile"
            },
            open = if format == "tar" { "open" } else { "ZipFile" },
        );
        let mut c = Command::new("python3");
        c.args(["-c", &py]).arg(&file);
        readers.push(("python3", c));
        if format == "tar" {
            let mut c = Command::new("tar");
            c.arg("-xf").arg(&file).arg("-C");
            readers.push(("tar", c));
        } else {
            let mut c = Command::new("unzip");
            c.arg("-q").arg(&file).arg("-d");
            readers.push(("unzip", c));
            let mut c = Command::new("7z");
            c.arg("x").arg("-y").arg("-bd").arg(&file);
            readers.push(("7z", c));
            // zipfile's own integrity check: every CRC-32.
            let mut c = Command::new("python3");
            c.args(["-c", "import sys, zipfile; assert zipfile.ZipFile(sys.argv[1]).testzip() is None; import os; os.makedirs(sys.argv[2] + '/tree')"]).arg(&file);
            readers.push(("python3-testzip", c));
        }
        let mut c = Command::new("bsdtar");
        c.arg("-xf").arg(&file).arg("-C");
        readers.push(("bsdtar", c));
        for (name, mut cmd) in readers {
            if !tool(name.split('-').next().unwrap()) {
                continue;
            }
            let _ = std::fs::remove_dir_all(&out);
            std::fs::create_dir_all(&out).unwrap();
            if name == "7z" {
                cmd.arg(format!("-o{}", out.display()));
            } else {
                cmd.arg(&out);
            }
            run(&mut cmd);
            if name == "python3-testzip" {
                continue;
            }
            assert_eq!(tree(&out.join("tree")), want, "{format} read by {name}");
        }
    }
}

/// The CRC cache knows a file version by its inode and change time too: a
/// same-size replacement whose mtime was set back (as a PROPPATCH or
/// `touch -r` does) is zipped with its own CRC-32, not the old one's.
#[test]
fn a_same_size_replacement_with_its_mtime_set_back_gets_its_own_crc() {
    let s = TestServer::start();
    std::fs::create_dir(s.root.join("d")).unwrap();
    let f = s.root.join("d/f.bin");
    std::fs::write(&f, bytes(100_000, 1)).unwrap();
    let mtime = std::fs::metadata(&f).unwrap().modified().unwrap();
    let zip_ok = |body: &[u8]| {
        let file = s.tmp.path().join("d.zip");
        std::fs::write(&file, body).unwrap();
        let out = Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).testzip())",
            ])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let r = s.get("/d/?archive=zip");
    assert_eq!(r.status, 200);
    assert_eq!(zip_ok(&r.body), "None", "every CRC-32 right");
    let new = s.tmp.path().join("new.bin");
    std::fs::write(&new, bytes(100_000, 2)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&new)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    std::fs::rename(&new, &f).unwrap();
    let r = s.get("/d/?archive=zip");
    assert_eq!(r.status, 200);
    assert_eq!(zip_ok(&r.body), "None", "the replacement's own CRC-32");
}

#[test]
fn ranges_at_random_offsets_equal_the_whole() {
    let s = TestServer::start();
    make_tree(&s.root.join("tree"));
    let mut rng = Rng(29);
    for format in ["zip", "tar"] {
        let path = format!("/tree/?archive={format}");
        let h = s.req("HEAD", &path, &[], b"");
        let len: u64 = h.header("content-length").unwrap().parse().unwrap();
        let tag = h.header("etag").unwrap().to_string();
        // Ranges first, on a fresh CRC cache: one starting in the central
        // directory makes the server read the files it has not streamed.
        let mut got = Vec::new();
        for _ in 0..12 {
            let a = rng.below(len as usize) as u64;
            let b = (a + rng.below(70_000) as u64).min(len - 1);
            got.push((a, b, range(&s, &path, a, b, &[("If-Range", &tag)])));
        }
        for back in [22, 200, 1500] {
            got.push((
                len - back,
                len - 1,
                range(&s, &path, len - back, len - 1, &[]),
            ));
        }
        let whole = s.get(&path);
        assert_eq!(whole.header("etag"), Some(tag.as_str()));
        assert_eq!(whole.body.len() as u64, len);
        for (a, b, r) in got {
            assert_eq!(r.status, 206, "{format} {a}-{b}: {}", r.text());
            assert_eq!(
                r.header("content-range"),
                Some(format!("bytes {a}-{b}/{len}").as_str())
            );
            assert!(
                r.body == whole.body[a as usize..=b as usize],
                "{format} {a}-{b} differs"
            );
        }
        // Past the end: 416 with the length.
        let r = range(&s, &path, len, len + 5, &[]);
        assert_eq!(r.status, 416);
        assert_eq!(
            r.header("content-range"),
            Some(format!("bytes */{len}").as_str())
        );
        // The same ETag asked again: 304.
        let r = s.req("GET", &path, &[("If-None-Match", &tag)], b"");
        assert_eq!(r.status, 304);
    }
}

#[test]
fn if_range_with_an_old_etag_after_a_change_gets_the_new_archive() {
    let s = TestServer::start();
    make_tree(&s.root.join("tree"));
    for format in ["tar", "zip"] {
        let path = format!("/tree/?archive={format}");
        std::fs::write(
            s.root.join("tree/a b/file one.txt"),
            format!("{format} version\n"),
        )
        .unwrap();
        let old = s.get(&path);
        let old_tag = old.header("etag").unwrap().to_string();
        // Same size, new mtime: a different archive all the same.
        std::thread::sleep(Duration::from_millis(20));
        let text = format!("{format} version\n");
        std::fs::write(s.root.join("tree/a b/file one.txt"), text.to_uppercase()).unwrap();
        let r = range(&s, &path, 10, 20, &[("If-Range", &old_tag)]);
        assert_eq!(r.status, 200, "an old tag gets the whole new archive");
        let new_tag = r.header("etag").unwrap().to_string();
        assert_ne!(new_tag, old_tag);
        assert_eq!(r.body.len(), old.body.len());
        assert!(r.body != old.body);
        let r = range(&s, &path, 10, 20, &[("If-Range", &new_tag)]);
        assert_eq!(r.status, 206);
        let r = s.req("GET", &path, &[("If-Match", &old_tag)], b"");
        assert_eq!(r.status, 412);
    }
}

#[test]
fn a_cut_download_finished_with_curl_equals_a_fresh_one() {
    let s = TestServer::start();
    make_tree(&s.root.join("tree"));
    for format in ["zip", "tar"] {
        let path = format!("/tree/?archive={format}");
        let whole = s.get(&path);
        for cut in [100, whole.body.len() / 2, whole.body.len() - 30] {
            let file = s.tmp.path().join(format!("cut.{format}"));
            std::fs::write(&file, &whole.body[..cut]).unwrap();
            let (ok, _) = wirespeed_testkit::tools::curl(&[
                "-C",
                "-",
                "-o",
                file.to_str().unwrap(),
                &s.url(&path),
            ]);
            assert!(ok);
            assert!(
                std::fs::read(&file).unwrap() == whole.body,
                "{format} cut at {cut}"
            );
        }
    }
}

#[test]
fn selections_limits_and_what_is_left_out() {
    let cfg = ServiceConfig {
        archive_max_entries: Some(6),
        ..Default::default()
    };
    let s = TestServer::with(cfg);
    let d = s.root.join("d");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    for n in ["a", "b", "c"] {
        std::fs::write(d.join(n), n.as_bytes()).unwrap();
    }
    std::fs::write(d.join("sub/x"), b"x").unwrap();
    std::fs::write(s.tmp.path().join("secret"), b"outside").unwrap();
    std::os::unix::fs::symlink(s.tmp.path().join("secret"), d.join("link-out")).unwrap();
    std::os::unix::fs::symlink("a", d.join("link-in")).unwrap();
    run(Command::new("mkfifo").arg(d.join("fifo")));
    // d, a, b, c, link-in, sub, sub/x: 7 entries, over the limit of 6.
    let r = s.get("/d/?archive=tar");
    assert_eq!(r.status, 413);
    assert!(r.text().contains("--archive-max-entries"), "{}", r.text());
    // A selection: only those names (and what is inside them).
    let r = s.get("/d/?archive=zip&name=sub&name=link-in&name=b");
    assert_eq!(r.status, 200, "{}", r.text());
    let file = s.tmp.path().join("sel.zip");
    std::fs::write(&file, &r.body).unwrap();
    let names = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let names = String::from_utf8(names.stdout).unwrap();
    assert_eq!(names.trim(), "d/\nd/b\nd/link-in\nd/sub/\nd/sub/x");
    // The link inside the root is archived as the file it names; the one
    // leading out and the FIFO never appear.
    let r = s.get("/d/?archive=tar&name=link-out");
    assert_eq!(r.status, 404);
    let r = s.get("/d/?archive=tar&name=fifo");
    assert_eq!(r.status, 404);
    assert_eq!(s.get("/d/?archive=rar").status, 400);
    assert_eq!(s.get("/d/?archive=zip&name=..").status, 400);
    assert_eq!(s.get("/d/?archive=zip&name=nope").status, 404);
}

#[test]
fn a_file_changed_while_streaming_cuts_the_response() {
    let s = TestServer::start();
    let d = s.root.join("d");
    std::fs::create_dir_all(&d).unwrap();
    // 256 MiB (sparse): more than the socket buffers hold, so the server is
    // still sending it when the next file changes.
    std::fs::File::create(d.join("a-big"))
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    std::fs::write(d.join("b-small"), bytes(100_000, 1)).unwrap();
    for format in ["tar", "zip"] {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(c, "GET /d/?archive={format} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let mut first = vec![0u8; 64 * 1024];
        c.read_exact(&mut first).unwrap();
        let head_end = wirespeed_testkit::http::find(&first, b"\r\n\r\n").unwrap() + 4;
        let head = String::from_utf8_lossy(&first[..head_end]).to_lowercase();
        let len: usize = head
            .split("content-length: ")
            .nth(1)
            .unwrap()
            .split("\r\n")
            .next()
            .unwrap()
            .parse()
            .unwrap();
        // Shrink the file the server has not reached yet.
        std::fs::write(d.join("b-small"), bytes(99_000, 1)).unwrap();
        let mut rest = Vec::new();
        let _ = c.read_to_end(&mut rest);
        let body = first.len() - head_end + rest.len();
        assert!(body < len, "{format}: cut ({body} of {len}), never padded");
        std::fs::write(d.join("b-small"), bytes(100_000, 1)).unwrap();
    }
}

/// `bytes a..b` of `path`, written at `a` into a sparse local copy.
fn fetch_into(s: &TestServer, path: &str, file: &Path, a: u64, b: u64) {
    use std::os::unix::fs::FileExt;
    let r = range(s, path, a, b - 1, &[]);
    assert_eq!(r.status, 206, "{}", r.text());
    let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.write_all_at(&r.body, a).unwrap();
}

#[test]
fn entries_past_4_and_8_gib_read_back_through_ranges() {
    let s = TestServer::start();
    let d = s.root.join("big");
    std::fs::create_dir_all(&d).unwrap();
    // Sparse: nothing is written, and only headers are fetched (tar), plus
    // one read of the big file for its CRC-32 (zip).
    for (name, size) in [
        ("huge-8g", (8u64 << 30) + 5),
        ("zip64-4g", (4u64 << 30) + 3),
    ] {
        std::fs::File::create(d.join(name))
            .unwrap()
            .set_len(size)
            .unwrap();
    }
    std::fs::write(d.join("~after"), b"small file after the big ones").unwrap();
    for (format, only) in [("tar", "huge-8g"), ("zip", "zip64-4g")] {
        let path = format!("/big/?archive={format}&name={only}&name=~after");
        let h = s.req("HEAD", &path, &[], b"");
        let len: u64 = h.header("content-length").unwrap().parse().unwrap();
        let file = s.tmp.path().join(format!("big.{format}"));
        std::fs::File::create(&file).unwrap().set_len(len).unwrap();
        let small_at = if format == "tar" {
            // big/ (512), pax + ustar header of huge-8g (3 × 512), its data.
            512 + 3 * 512 + (8u64 << 30) + 512 - 5
        } else {
            // big/ (30 + 4), huge's header (30 + 12 + 20), data, descriptor (24).
            34 + 62 + (4u64 << 30) + 3 + 24
        };
        fetch_into(&s, &path, &file, 0, 4096);
        fetch_into(&s, &path, &file, small_at, len);
        let check = if format == "tar" {
            "import sys, tarfile\n\
             t = tarfile.open(sys.argv[1])\n\
             m = {x.name: x for x in t.getmembers()}\n\
             assert m['big/huge-8g'].size == (8 << 30) + 5, m\n\
             assert t.extractfile(m['big/~after']).read() == b'small file after the big ones'\n"
        } else {
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1])\n\
             m = {x.filename: x for x in z.infolist()}\n\
             assert m['big/zip64-4g'].file_size == (4 << 30) + 3, m\n\
             assert z.read('big/~after') == b'small file after the big ones'\n\
             assert m['big/~after'].header_offset > 4 << 30\n"
        };
        run(Command::new("python3").args(["-c", check]).arg(&file));
    }
}

/// Archives being planned or sent hold a bounded number of entries between
/// them (four of the largest): one more is told to wait (503), and the room
/// comes back when a response ends.
#[test]
fn archives_at_once_share_a_bounded_budget_of_entries() {
    let s = TestServer::with(ServiceConfig {
        archive_max_entries: Some(50),
        ..ServiceConfig::default()
    });
    std::fs::create_dir(s.root.join("big")).unwrap();
    for i in 0..40 {
        std::fs::write(s.root.join(format!("big/{i:02}.bin")), bytes(1 << 20, i)).unwrap();
    }
    let addr = s.addr;
    // Four readers that never read: each response stalls mid-stream.
    let stalled: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = TcpStream::connect(addr).unwrap();
            write!(
                c,
                "GET /big/?archive=tar HTTP/1.1\r\nHost: {}\r\n\r\n",
                s.addr
            )
            .unwrap();
            c
        })
        .collect();
    s.eventually("a fifth archive waits", || {
        s.req("HEAD", "/big/?archive=tar", &[], b"").status == 503
    });
    let r = s.get("/big/?archive=zip");
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("try again"), "{}", r.text());
    drop(stalled);
    s.eventually("room again once the stalled responses end", || {
        s.req("HEAD", "/big/?archive=tar", &[], b"").status == 200
    });
}
