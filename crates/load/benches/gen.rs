//! Body generator and verifier throughput, GB/s, in 128 KiB slices (the
//! engine's buffer) at an unaligned offset: the generator must never be
//! what limits a load run.
//!
//! Run: `cargo bench -p wirespeed-load -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use wirespeed_load::gen::Content;

const SLICE: usize = 128 << 10;

fn gen(c: &mut Criterion) {
    let content = Content::new(1, 2);
    let mut buf = vec![0u8; SLICE];
    let mut g = c.benchmark_group("body");
    g.throughput(Throughput::Bytes(SLICE as u64));
    g.bench_function("fill", |b| {
        b.iter(|| content.fill(black_box(12_345), &mut buf));
    });
    content.fill(12_345, &mut buf);
    g.bench_function("verify", |b| {
        b.iter(|| assert_eq!(content.mismatches(black_box(12_345), &buf), 0));
    });
    g.finish();
}

criterion_group!(benches, gen);
criterion_main!(benches);
