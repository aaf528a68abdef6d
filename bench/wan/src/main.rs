//! An emulated WAN link between two TUN devices, for bench/wan.sh.
//!
//! This kernel has no netem, so the link is made in user space: each
//! direction reads IP packets from one TUN device and writes them to the
//! other after
//!   - random loss (seeded, so runs are comparable),
//!   - a drop-tail router buffer in front of a link of `rate` bits/s
//!     (a packet leaves the buffer when the link has serialised the ones
//!     before it: this is the bottleneck's pacing), and
//!   - a fixed one-way propagation delay.
//! The devices are created here and moved into their namespaces by the
//! script (a TUN file descriptor keeps working after its device moves).
//!
//! Usage: wan-link A B --rate-mbit R --delay-ms D --loss P --buffer-ms Q --seed S
//! Prints "ready" once both devices exist; runs until killed.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const TUNSETIFF: libc::c_ulong = 0x400454ca;

#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn open_tun(name: &str) -> std::io::Result<File> {
    let f = OpenOptions::new().read(true).write(true).open("/dev/net/tun")?;
    let mut req = IfReq { name: [0; 16], flags: IFF_TUN | IFF_NO_PI, _pad: [0; 22] };
    let n = name.len().min(15);
    req.name[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: TUNSETIFF reads and writes a struct ifreq, which IfReq lays out.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), TUNSETIFF as _, &mut req) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(f)
}

#[derive(Clone, Copy)]
struct Link {
    /// Bytes per second.
    rate: f64,
    delay: Duration,
    loss: f64,
    /// Router buffer, in bytes.
    buffer: f64,
}

struct Queue {
    q: Mutex<VecDeque<(Instant, Vec<u8>)>>,
    ready: Condvar,
}

/// xorshift64*: enough randomness for loss, and repeatable by seed.
struct Rng(u64);
impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn direction(mut from: File, mut to: File, link: Link, seed: u64, label: &'static str) {
    let queue = Arc::new(Queue { q: Mutex::new(VecDeque::new()), ready: Condvar::new() });
    let out = queue.clone();
    std::thread::Builder::new()
        .name(format!("{label}-out"))
        .spawn(move || {
            let mut due = Vec::new();
            loop {
                // Take every packet whose time has come in one lock; sleep
                // until the next one otherwise.
                let wait = {
                    let mut q = out.q.lock().unwrap();
                    while q.is_empty() {
                        q = out.ready.wait(q).unwrap();
                    }
                    let now = Instant::now();
                    while q.front().is_some_and(|(at, _)| *at <= now) {
                        due.push(q.pop_front().unwrap().1);
                    }
                    q.front().map(|(at, _)| *at - now)
                };
                for pkt in due.drain(..) {
                    let _ = to.write(&pkt);
                }
                if let Some(w) = wait {
                    if w > Duration::from_micros(20) {
                        std::thread::sleep(w);
                    }
                }
            }
        })
        .unwrap();
    std::thread::Builder::new()
        .name(format!("{label}-in"))
        .spawn(move || {
            let mut rng = Rng(seed | 1);
            let mut buf = vec![0u8; 65536];
            // When the link has finished serialising everything accepted so far.
            let mut link_free = Instant::now();
            let (mut seen, mut lost, mut overflow) = (0u64, 0u64, 0u64);
            let mut last_report = Instant::now();
            loop {
                let n = match from.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        eprintln!("{label}: read: {e}");
                        return;
                    }
                };
                seen += 1;
                if link.loss > 0.0 && rng.next_f64() < link.loss {
                    lost += 1;
                    continue;
                }
                let now = Instant::now();
                if link_free < now {
                    link_free = now;
                }
                let backlog = (link_free - now).as_secs_f64() * link.rate;
                if backlog + n as f64 > link.buffer {
                    overflow += 1;
                    continue;
                }
                link_free += Duration::from_secs_f64(n as f64 / link.rate);
                let at = link_free + link.delay;
                let was_empty = {
                    let mut q = queue.q.lock().unwrap();
                    q.push_back((at, buf[..n].to_vec()));
                    q.len() == 1
                };
                // The writer sleeps on the condvar only when it had nothing.
                if was_empty {
                    queue.ready.notify_one();
                }
                if std::env::var_os("WAN_VERBOSE").is_some() && last_report.elapsed() > Duration::from_secs(5) {
                    eprintln!("{label}: {seen} packets, {lost} lost at random, {overflow} dropped by the full buffer");
                    last_report = Instant::now();
                }
            }
        })
        .unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut get = |flag: &str, default: f64| -> f64 {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.parse().unwrap_or_else(|_| panic!("{flag} {v}: not a number")))
            .unwrap_or(default)
    };
    let rate_mbit = get("--rate-mbit", 100.0);
    let delay_ms = get("--delay-ms", 10.0);
    let loss = get("--loss", 0.0);
    // Default buffer: one round trip at the link rate (a BDP).
    let buffer_ms = get("--buffer-ms", 2.0 * delay_ms);
    let seed = get("--seed", 1.0) as u64;
    let rate = rate_mbit * 1e6 / 8.0;
    let link = Link {
        rate,
        delay: Duration::from_secs_f64(delay_ms / 1000.0),
        loss,
        buffer: (rate * buffer_ms / 1000.0).max(64.0 * 1024.0),
    };
    let (a, b) = (&args[1], &args[2]);
    let ta = open_tun(a).unwrap_or_else(|e| panic!("TUN {a}: {e}"));
    let tb = open_tun(b).unwrap_or_else(|e| panic!("TUN {b}: {e}"));
    direction(ta.try_clone().unwrap(), tb.try_clone().unwrap(), link, seed, "a->b");
    direction(tb, ta, link, seed.wrapping_mul(31).wrapping_add(7), "b->a");
    println!("ready");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::park();
    }
}
