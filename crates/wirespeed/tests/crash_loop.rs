//! Crash safety under `kill -9`: rounds of 50 concurrent uploads (new names
//! and overwrites, 4 KiB to 4 MiB, Content-Length and chunked) against the
//! real binary, a SIGKILL at a seeded random moment, a restart on the same
//! folder, then every file checked against the versions it may hold.
//!
//! What it proves is process-crash atomicity: after the process dies, each
//! final name holds exactly one complete version (the old or the new one),
//! an upload answered 2xx is there in its new version, temporary files are
//! never listed or served, and the start-up sweep removes stale ones. A
//! process kill keeps the page cache, so it says nothing about power loss
//! (that is what the default fsync is for, and no test here cuts power).
//!
//! `CRASH_ROUNDS` (default 3) and `CRASH_SEED` (default: the clock, printed)
//! steer it; `bench/crash-loop.sh` runs 100 rounds.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use wirespeed_testkit::{bytes, Resp, Rng};

mod common;
use common::Serve;

/// Uploads started together in each round.
const UPLOADS: usize = 50;
/// Names the uploads choose from: a bounded pool keeps the folder small
/// over many rounds, and files deleted between rounds make new names.
const POOL: usize = 80;
const TEMP_PREFIX: &str = ".wirespeed-tmp-";

/// A `wirespeed serve` on a folder, fsync left at its default (on).
fn start(dir: &Path) -> Serve {
    let mut cmd = Serve::command(dir);
    cmd.args(["--listen", "127.0.0.1:0"]);
    Serve::spawn(cmd, 0)
}

/// One version of one file: its bytes follow from (name, version) alone.
fn content(name: &str, version: u32) -> Vec<u8> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes().chain(version.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    // Log-uniform sizes, 4 KiB to 4 MiB, with odd tails.
    let base = 1usize << (12 + (h % 10) as usize);
    let size = base + ((h >> 8) as usize % base);
    bytes(size, h)
}

/// PUT `body` to `/name` on its own connection; Some(status) if an answer
/// came, None if the connection died first.
fn put(addr: SocketAddr, name: &str, body: &[u8], chunked: bool) -> Option<u16> {
    let mut c = TcpStream::connect(addr).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    c.set_write_timeout(Some(Duration::from_secs(20))).ok()?;
    let framing = if chunked {
        "Transfer-Encoding: chunked".to_string()
    } else {
        format!("Content-Length: {}", body.len())
    };
    let head = format!("PUT /{name} HTTP/1.1\r\nHost: localhost\r\n{framing}\r\n\r\n");
    c.write_all(head.as_bytes()).ok()?;
    if chunked {
        for piece in body.chunks(300_000) {
            c.write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .ok()?;
            c.write_all(piece).ok()?;
            c.write_all(b"\r\n").ok()?;
        }
        c.write_all(b"0\r\n\r\n").ok()?;
    } else {
        c.write_all(body).ok()?;
    }
    let mut buf = Vec::new();
    let mut piece = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match c.read(&mut piece) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&piece[..n]),
        }
    }
    std::str::from_utf8(&buf)
        .ok()?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

/// One request on its own connection, read to the close.
fn request(addr: SocketAddr, method: &str, path: &str) -> Resp {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    c.write_all(head.as_bytes()).unwrap();
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).unwrap();
    Resp::parse(&buf, method == "HEAD")
}

/// The names in a JSON listing (our names are plain ASCII, never escaped).
fn listed_names(json: &str) -> BTreeSet<String> {
    json.split("{\"name\":\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect()
}

#[derive(Default)]
struct Totals {
    uploads: usize,
    acked: usize,
    in_flight_at_kill: usize,
    torn: usize,
    temp_leftovers: usize,
    swept: usize,
}

#[test]
fn uploads_are_atomic_across_kill_9() {
    let rounds: usize = std::env::var("CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("crash loop: seed {seed} (CRASH_SEED={seed} repeats the choices)");
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    // The version each name holds on disk (checked), and the next to write.
    let mut on_disk: HashMap<String, u32> = HashMap::new();
    let mut next_version: HashMap<String, u32> = HashMap::new();
    let mut t = Totals::default();
    let mut seen_temps = BTreeSet::new();
    let started = Instant::now();
    let mut server = start(&root);

    for round in 0..rounds {
        // 50 distinct names from the pool: overwrites where a file exists.
        let mut pool: Vec<String> = (0..POOL).map(|i| format!("f{i:02}")).collect();
        let mut plan = Vec::new();
        for _ in 0..UPLOADS {
            let name = pool.swap_remove(rng.below(pool.len()));
            let v = next_version.entry(name.clone()).or_insert(0);
            *v += 1;
            let chunked = rng.below(4) == 0;
            plan.push((name.clone(), *v, on_disk.get(&name).copied(), chunked));
        }
        let bodies: Vec<Arc<Vec<u8>>> = plan
            .iter()
            .map(|(n, v, _, _)| Arc::new(content(n, *v)))
            .collect();

        // Kill once `kill_after` uploads were answered, plus a jitter.
        let kill_after = rng.below(UPLOADS);
        let jitter = Duration::from_micros(rng.below(3000) as u64);
        let acks = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let addr = server.addr;
        let threads: Vec<_> = plan
            .iter()
            .zip(&bodies)
            .map(|((name, _, _, chunked), body)| {
                let (name, body, chunked) = (name.clone(), body.clone(), *chunked);
                let (acks, done) = (acks.clone(), done.clone());
                std::thread::spawn(move || {
                    let status = put(addr, &name, &body, chunked);
                    let ok = status.is_some_and(|s| (200..300).contains(&s));
                    if ok {
                        acks.fetch_add(1, Ordering::SeqCst);
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                    (ok, status)
                })
            })
            .collect();
        let until = Instant::now() + Duration::from_secs(60);
        while acks.load(Ordering::SeqCst) < kill_after && done.load(Ordering::SeqCst) < UPLOADS {
            assert!(Instant::now() < until, "uploads stalled (seed {seed})");
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(jitter);
        server.kill9();
        let results: Vec<(bool, Option<u16>)> =
            threads.into_iter().map(|h| h.join().unwrap()).collect();
        for (status, (name, ..)) in results.iter().map(|r| r.1).zip(&plan) {
            // An answer that is not 2xx would be a server bug, not the kill.
            if let Some(s) = status {
                assert!((200..300).contains(&s), "PUT {name} got {s} (seed {seed})");
            }
        }
        let acked = results.iter().filter(|r| r.0).count();
        t.uploads += UPLOADS;
        t.acked += acked;
        t.in_flight_at_kill += UPLOADS - acked;

        // Leftover temp files: half are aged past the sweep's limit, as if
        // the restart came long after the crash.
        let mut temps = Vec::new();
        for e in std::fs::read_dir(&root).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name.starts_with(TEMP_PREFIX) {
                temps.push(name);
            }
        }
        t.temp_leftovers += temps
            .iter()
            .filter(|n| seen_temps.insert(n.to_string()))
            .count();
        let mut aged = Vec::new();
        for (i, name) in temps.iter().enumerate() {
            if i % 2 == 0 {
                let f = File::options().write(true).open(root.join(name)).unwrap();
                f.set_modified(SystemTime::now() - Duration::from_secs(3600))
                    .unwrap();
                aged.push(name.clone());
            }
        }

        server = start(&root);

        // (a) and (c): every final name holds exactly one complete version.
        let mut finals = BTreeSet::new();
        for e in std::fs::read_dir(&root).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            // The trash keeps replaced versions (a state folder, never served).
            if name.starts_with(TEMP_PREFIX) || name == ".wirespeed-trash" {
                continue;
            }
            assert!(
                e.file_type().unwrap().is_file(),
                "{name} on disk is not a regular file (seed {seed})"
            );
            finals.insert(name);
        }
        let mut torn = Vec::new();
        for ((name, new, old, _), (acked, _)) in plan.iter().zip(&results) {
            if !finals.contains(name) {
                assert!(
                    old.is_none() && !acked,
                    "{name} is missing: had version {old:?}, upload of {new} acked: {acked} \
                     (seed {seed}, round {round})"
                );
                continue;
            }
            let disk = std::fs::read(root.join(name)).unwrap();
            let held = if disk == content(name, *new) {
                *new
            } else if old.is_some_and(|o| disk == content(name, o)) {
                assert!(
                    !acked,
                    "{name}: upload of version {new} was acked but version {old:?} is on disk \
                     (seed {seed}, round {round})"
                );
                old.unwrap()
            } else {
                torn.push(format!(
                    "{name}: {} bytes on disk match neither version {old:?} nor {new} ({} bytes)",
                    disk.len(),
                    content(name, *new).len()
                ));
                continue;
            };
            on_disk.insert(name.clone(), held);
        }
        t.torn += torn.len();
        assert!(
            torn.is_empty(),
            "torn files (seed {seed}, round {round}): {torn:#?}"
        );
        for name in &finals {
            assert!(
                on_disk.contains_key(name),
                "unknown file {name} (seed {seed})"
            );
        }
        on_disk.retain(|n, _| finals.contains(n));
        // Files not uploaded this round are untouched.
        for (name, v) in &on_disk {
            if !plan.iter().any(|p| &p.0 == name) {
                let disk = std::fs::read(root.join(name)).unwrap();
                assert!(disk == content(name, *v), "{name} changed (seed {seed})");
            }
        }

        // (b) The listing shows exactly the final names; temp files are not
        // served; what is served is what was checked on disk.
        let listing = request(server.addr, "GET", "/?format=json");
        assert_eq!(listing.status, 200);
        assert_eq!(
            listed_names(&listing.text()),
            finals,
            "listing vs disk (seed {seed})"
        );
        for name in &temps {
            let r = request(server.addr, "GET", &format!("/{name}"));
            assert_eq!(r.status, 404, "temp file {name} answered {}", r.status);
        }
        for name in finals.iter().take(10) {
            let r = request(server.addr, "GET", &format!("/{name}"));
            assert_eq!(r.status, 200);
            assert!(r.body == content(name, on_disk[name]), "GET /{name} body");
        }
        // The start-up sweep removes the aged leftovers, keeps fresh ones.
        let until = Instant::now() + Duration::from_secs(10);
        while aged.iter().any(|n| root.join(n).exists()) {
            assert!(
                Instant::now() < until,
                "stale temp files not swept: {aged:?}; stderr: {}",
                server.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        t.swept += aged.len();
        for n in temps.iter().skip(1).step_by(2) {
            assert!(root.join(n).exists(), "fresh temp file {n} was removed");
        }

        // Delete about a quarter of the files, so later rounds create names too.
        let names: Vec<String> = on_disk.keys().cloned().collect();
        for name in names {
            if rng.below(4) == 0 {
                let r = request(server.addr, "DELETE", &format!("/{name}"));
                assert_eq!(r.status, 204, "DELETE /{name}");
                on_disk.remove(&name);
            }
        }
        println!(
            "round {round}: killed after {acked} of {UPLOADS} acks (aimed at {kill_after} + {jitter:?}), \
             {} temp leftovers, {} files",
            temps.len(),
            on_disk.len()
        );
    }
    server.kill9();
    println!(
        "crash loop: seed {seed} rounds {rounds} uploads {} acked {} in-flight-at-kill {} \
         torn {} temp-leftovers {} swept {} in {:.1} s",
        t.uploads,
        t.acked,
        t.in_flight_at_kill,
        t.torn,
        t.temp_leftovers,
        t.swept,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(t.torn, 0);
}
