//! SHA-256 engines side by side: 64 MiB hashed in 256 KiB `update`s (the
//! server's per-read piece size), one hasher per iteration. Uploads hash
//! every byte on both server and client, so this decides which engine the
//! `Repr-Digest` code should use.
//!
//! `cargo bench -p wirespeed-service --bench sha256 -- --warm-up-time 1 --measurement-time 5`
//!
//! Measured on the project VM (SHA-NI present; 4 runs, criterion's middle
//! estimate, GiB/s):
//!
//! | engine                 | run 1 | run 2 | run 3 | run 4 | median |
//! |------------------------|------:|------:|------:|------:|-------:|
//! | sha2 0.10.9            | 1.355 | 1.386 | 1.375 | 1.376 |  1.376 |
//! | aws-lc-rs 1.19 digest  | 1.355 | 1.435 | 1.382 | 1.357 |  1.370 |
//! | ring 0.17.14 digest    | 1.323 | 1.436 | 1.418 | 1.372 |  1.395 |
//!
//! A tie within noise (`openssl speed -evp sha256 -bytes 262144`: 1.48 GB/s
//! = 1.38 GiB/s). sha2 0.10 does take its SHA-NI path here (`cpufeatures`
//! detects `sha`; perf shows 99.7% in `sha2::sha256::x86::digest_blocks`,
//! `sha256rnds2` instructions), and its `asm` feature only swaps the
//! non-SHA-NI fallback on x86_64 (same 1.44 GB/s measured). So uploads keep
//! sha2: no engine here is worth a switch.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

const PIECE: usize = 256 * 1024;
const TOTAL: usize = 64 * 1024 * 1024;

fn data() -> Vec<u8> {
    // Content doesn't matter to SHA-256 speed; fill deterministically.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..PIECE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn engines(c: &mut Criterion) {
    let buf = data();
    let n = TOTAL / PIECE;
    check_agree(&buf, n);
    let mut g = c.benchmark_group("sha256_64MiB_in_256KiB");
    g.throughput(Throughput::Bytes(TOTAL as u64));
    g.sample_size(10);

    g.bench_function("sha2", |b| {
        use sha2::Digest;
        b.iter(|| {
            let mut h = sha2::Sha256::new();
            for _ in 0..n {
                h.update(black_box(&buf[..]));
            }
            let out: [u8; 32] = h.finalize().into();
            out
        })
    });
    g.bench_function("aws_lc_rs", |b| {
        b.iter(|| {
            let mut h = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
            for _ in 0..n {
                h.update(black_box(&buf[..]));
            }
            h.finish()
        })
    });
    g.bench_function("ring", |b| {
        b.iter(|| {
            let mut h = ring::digest::Context::new(&ring::digest::SHA256);
            for _ in 0..n {
                h.update(black_box(&buf[..]));
            }
            h.finish()
        })
    });
    g.finish();
}

/// The engines must produce the same digest, or the comparison is moot.
fn check_agree(buf: &[u8], n: usize) {
    use sha2::Digest;
    let mut a = sha2::Sha256::new();
    let mut b = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    let mut c = ring::digest::Context::new(&ring::digest::SHA256);
    for _ in 0..n {
        a.update(buf);
        b.update(buf);
        c.update(buf);
    }
    let a: [u8; 32] = a.finalize().into();
    assert_eq!(&a[..], b.finish().as_ref());
    assert_eq!(&a[..], c.finish().as_ref());
}

criterion_group!(benches, engines);
criterion_main!(benches);
