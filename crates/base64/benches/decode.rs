//! Streaming decode throughput, GB/s of base64 input, 16 MiB payload fed in
//! 256 KiB slices into a reused, cleared output Vec (as the service does).
//!
//! Run: `cargo bench -p wirespeed-base64 -- --warm-up-time 1 --measurement-time 3`

use base64::Engine as _;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use wirespeed_base64::{Decoder, Engine};

const PAYLOAD: usize = 16 << 20;
const SLICE: usize = 256 << 10;

fn payload(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn wrap(text: &[u8], line: usize, eol: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(text.len() + text.len() / line * eol.len() + eol.len());
    for chunk in text.chunks(line) {
        v.extend_from_slice(chunk);
        v.extend_from_slice(eol);
    }
    v
}

fn run(engine: Engine, input: &[u8], out: &mut Vec<u8>) -> usize {
    let mut d = Decoder::with_engine(engine);
    let mut total = 0;
    for slice in input.chunks(SLICE) {
        out.clear();
        d.decode(slice, out).expect("valid input");
        total += out.len();
    }
    d.finish().expect("complete input");
    total
}

fn bench(c: &mut Criterion) {
    let data = payload(PAYLOAD);
    let flat = base64::engine::general_purpose::STANDARD
        .encode(&data)
        .into_bytes();
    let inputs = [
        ("no_ws", flat.clone()),
        ("crlf76", wrap(&flat, 76, b"\r\n")),
        ("lf64", wrap(&flat, 64, b"\n")),
        ("crlf73", wrap(&flat, 73, b"\r\n")),
    ];
    let mut g = c.benchmark_group("decode_16MiB_256KiB_slices");
    g.sample_size(10);
    let mut out = Vec::with_capacity(SLICE);
    for (name, input) in &inputs {
        g.throughput(Throughput::Bytes(input.len() as u64));
        assert_eq!(run(Engine::Simd, input, &mut out), data.len());
        g.bench_with_input(BenchmarkId::new("simd", name), input, |b, input| {
            b.iter(|| run(Engine::Simd, black_box(input), &mut out))
        });
        // Scalar reference: the cost of falling off the fast path.
        g.bench_with_input(BenchmarkId::new("scalar", name), input, |b, input| {
            b.iter(|| run(Engine::Scalar, black_box(input), &mut out))
        });
    }
    // Raw simdutf forgiving decode of the same 256 KiB slices, no strictness
    // glue and no carry (the partial group at each slice end is dropped, so
    // the output is wrong; this is only the speed ceiling of the engine).
    let mut buf = vec![0u8; SLICE / 4 * 3 + 8];
    for (name, input) in &inputs {
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_with_input(BenchmarkId::new("raw_simdutf", name), input, |b, input| {
            b.iter(|| {
                let mut total = 0;
                for slice in input.chunks(SLICE) {
                    let mut n = buf.len();
                    // SAFETY: `buf` is valid for writes of `n` bytes and
                    // simdutf writes at most `n`; `slice` is valid for reads.
                    let r = unsafe {
                        simdutf::base64_to_binary_safe(
                            slice.as_ptr(),
                            slice.len(),
                            buf.as_mut_ptr(),
                            &mut n,
                            simdutf::Base64Options::Default,
                            simdutf::LastChunkHandlingOptions::StopBeforePartial,
                            false,
                        )
                    };
                    // Not checked: a slice starting mid-group may see the
                    // final padding as misplaced.
                    black_box(r.error);
                    total += n;
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
