//! Benchmarks: the strict Content-Length parser against the general-purpose
//! `u64::from_str` (seed 001's comparison), and parsing a browser-sized head.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wirespeed_proto::{parse_content_length, parse_request_head, Limits};

/// A fixed pseudo-random set of 1–19 digit values (xorshift, fixed seed), so
/// every run measures the same inputs and lengths are uniformly mixed (the
/// branch predictor cannot learn one length).
fn content_lengths() -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..1024)
        .map(|_| {
            let digits = (next() % 19 + 1) as u32;
            let v = next() % 10u64.pow(digits);
            format!("{v:0width$}", width = digits as usize).into_bytes()
        })
        .collect()
}

const BROWSER_GET: &[u8] = b"GET /assets/app/main.3f9c2a.js?v=20240611 HTTP/1.1\r\n\
Host: www.example.com\r\n\
Connection: keep-alive\r\n\
sec-ch-ua: \"Chromium\";v=\"125\", \"Not.A/Brand\";v=\"24\"\r\n\
sec-ch-ua-mobile: ?0\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36\r\n\
sec-ch-ua-platform: \"Linux\"\r\n\
Accept: */*\r\n\
Sec-Fetch-Site: same-origin\r\n\
Sec-Fetch-Mode: no-cors\r\n\
Referer: https://www.example.com/\r\n\
Accept-Encoding: gzip, deflate, br, zstd\r\n\
Accept-Language: en-US,en;q=0.9\r\n\
\r\n";

fn bench_content_length(c: &mut Criterion) {
    let values = content_lengths();
    // Same answers, or the comparison means nothing.
    for v in &values {
        let ours = parse_content_length(v).unwrap();
        let theirs: u64 = std::str::from_utf8(v).unwrap().parse().unwrap();
        assert_eq!(ours, theirs);
    }
    let mut g = c.benchmark_group("content_length");
    g.throughput(Throughput::Elements(values.len() as u64));
    g.bench_function(
        BenchmarkId::new("parse_content_length", "1-19 digits"),
        |b| {
            b.iter(|| {
                let mut sum = 0u64;
                for v in &values {
                    sum = sum.wrapping_add(parse_content_length(black_box(v)).unwrap_or(0));
                }
                sum
            })
        },
    );
    g.bench_function(BenchmarkId::new("u64_from_str", "1-19 digits"), |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for v in &values {
                let parsed = std::str::from_utf8(black_box(v))
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok());
                sum = sum.wrapping_add(parsed.unwrap_or(0));
            }
            sum
        })
    });
    g.finish();
}

fn bench_head(c: &mut Criterion) {
    let limits = Limits::default();
    let (head, n) = parse_request_head(BROWSER_GET, &limits).unwrap().unwrap();
    assert_eq!(n, BROWSER_GET.len());
    assert_eq!(head.headers().count(), 12);
    let mut g = c.benchmark_group("request_head");
    g.throughput(Throughput::Bytes(BROWSER_GET.len() as u64));
    g.bench_function("browser_get", |b| {
        b.iter(|| {
            parse_request_head(black_box(BROWSER_GET), &limits)
                .unwrap()
                .unwrap()
                .1
        })
    });
    // The httparse floor, to see what our checks and the owned copy cost.
    g.bench_function("httparse_only", |b| {
        b.iter(|| {
            let mut headers = [httparse::EMPTY_HEADER; 101];
            let mut req = httparse::Request::new(&mut headers);
            req.parse(black_box(BROWSER_GET)).unwrap().unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench_content_length, bench_head);
criterion_main!(benches);
