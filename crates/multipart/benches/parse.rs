//! One body of 1000 small fields + a 64 MiB file, fed in 64 KiB chunks
//! through the streaming API.
//!
//! Two drivers:
//! * `buffered`: what the service does — a 256 KiB read buffer; each "read"
//!   copies 64 KiB of input into it (standing in for the kernel's copy in
//!   `read(2)`), the parser runs over the unconsumed bytes, and only the
//!   small unconsumed tail is moved to the front when space runs out. This is
//!   the figure to compare with the Go peer (whose reader also copies).
//! * `window`: the parser alone — the "buffer" is a window onto the body, so
//!   no byte is copied at all.
//!
//! `MULTIPART_BENCH_BODY=<file>` reads the body from a file (the
//! bench/multipart-vs-go.sh script writes it with the Go peer); otherwise the
//! same bytes are generated here.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use wirespeed_multipart::{Event, Limits, Parser};

// Keep in sync with bench/go-multipart/main.go.
const BOUNDARY: &str = "----WirespeedBenchBoundary7MA4YWxkTrZu0gW";
const NUM_FIELDS: usize = 1000;
const FILE_SIZE: usize = 64 << 20;
const CHUNK: usize = 64 << 10;
const BUF: usize = 256 << 10;
const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

fn gen_body() -> Vec<u8> {
    let mut b = Vec::with_capacity(FILE_SIZE + NUM_FIELDS * 128 + 1024);
    for i in 0..NUM_FIELDS {
        b.extend_from_slice(
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"field{i}\"\r\n\r\nvalue-{i}\r\n").as_bytes(),
        );
    }
    b.extend_from_slice(
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"blob.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n")
            .as_bytes(),
    );
    let mut x = SEED;
    for _ in 0..FILE_SIZE / 8 {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        b.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    b.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    b
}

fn load_body() -> Vec<u8> {
    match std::env::var_os("MULTIPART_BENCH_BODY") {
        Some(p) => std::fs::read(&p).unwrap_or_else(|e| panic!("reading {p:?}: {e}")),
        None => gen_body(),
    }
}

fn limits() -> Limits {
    // 1001 parts: above the 1000-part default on purpose.
    Limits {
        max_parts: 2 * NUM_FIELDS,
        ..Limits::default()
    }
}

/// Handles one event; returns false at End.
#[inline]
fn sink(ev: Event<'_>, parts: &mut usize, bytes: &mut usize) -> bool {
    match ev {
        Event::PartStart(h) => {
            black_box(&h);
            *parts += 1;
        }
        Event::Data(d) => {
            black_box(d);
            *bytes += d.len();
        }
        Event::End => return false,
        Event::PartEnd | Event::NeedMore => {}
    }
    true
}

/// The service's loop: 256 KiB buffer, 64 KiB reads, tail kept.
fn run_buffered(body: &[u8], buf: &mut [u8]) -> (usize, usize) {
    let mut p = Parser::new(BOUNDARY.as_bytes(), limits()).unwrap();
    let (mut parts, mut bytes) = (0, 0);
    let (mut start, mut filled, mut read) = (0, 0, 0);
    'outer: while read < body.len() {
        if buf.len() - filled < CHUNK {
            // Only the unconsumed tail moves (bounded by max_retained()).
            buf.copy_within(start..filled, 0);
            filled -= start;
            start = 0;
        }
        let n = CHUNK.min(body.len() - read);
        buf[filled..filled + n].copy_from_slice(&body[read..read + n]); // "read(2)"
        filled += n;
        read += n;
        loop {
            let (ev, used) = p.feed(&buf[start..filled]).unwrap();
            start += used;
            let stop = matches!(ev, Event::NeedMore);
            if !sink(ev, &mut parts, &mut bytes) {
                break 'outer;
            }
            if stop {
                break;
            }
        }
    }
    p.finish().unwrap();
    (parts, bytes)
}

/// Parser only: the buffer is a window onto the body, nothing is copied.
fn run_window(body: &[u8]) -> (usize, usize) {
    let mut p = Parser::new(BOUNDARY.as_bytes(), limits()).unwrap();
    let (mut parts, mut bytes) = (0, 0);
    let (mut start, mut end) = (0, 0);
    'outer: while end < body.len() {
        end = (end + CHUNK).min(body.len());
        loop {
            let (ev, used) = p.feed(&body[start..end]).unwrap();
            start += used;
            let stop = matches!(ev, Event::NeedMore);
            if !sink(ev, &mut parts, &mut bytes) {
                break 'outer;
            }
            if stop {
                break;
            }
        }
    }
    p.finish().unwrap();
    (parts, bytes)
}

fn bench(c: &mut Criterion) {
    let body = load_body();
    let mut buf = vec![0u8; BUF];
    let expect_bytes = FILE_SIZE
        + (0..NUM_FIELDS)
            .map(|i| format!("value-{i}").len())
            .sum::<usize>();
    // Sanity, outside the timing: both drivers see every part and byte.
    assert_eq!(
        run_buffered(&body, &mut buf),
        (NUM_FIELDS + 1, expect_bytes)
    );
    assert_eq!(run_window(&body), (NUM_FIELDS + 1, expect_bytes));

    let mut g = c.benchmark_group("multipart_64MiB_1000fields_64KiB_chunks");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(20);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("buffered", |b| {
        b.iter(|| run_buffered(black_box(&body), &mut buf))
    });
    g.bench_function("window", |b| b.iter(|| run_window(black_box(&body))));
    // Ceiling: the bare memmem scan over the same 64 KiB windows.
    let finder = memchr::memmem::Finder::new(format!("\r\n--{BOUNDARY}").as_bytes()).into_owned();
    g.bench_function("memmem_only", |b| {
        b.iter(|| {
            black_box(&body)
                .chunks(CHUNK)
                .map(|c| finder.find_iter(c).count())
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
