//! Throughput of the streaming field extractors on 64 MiB base64 fields,
//! fed in 256 KiB slices like the service's body reader does. The sink only
//! sums lengths, so this measures the extractor alone.
//!
//! Run: cargo bench -p wirespeed-extract -- --warm-up-time 1 --measurement-time 3

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use wirespeed_extract::{FieldExtractor, JsonFieldExtractor, XmlFieldExtractor};

const FIELD: usize = 64 << 20;
const SLICE: usize = 256 << 10;
const LINE: usize = 76;

/// Base64-alphabet text of about `FIELD` bytes with `eol` after every line.
fn base64_lines(eol: &[u8]) -> Vec<u8> {
    const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(FIELD + FIELD / LINE * eol.len() + 64);
    let mut i = 0usize;
    while out.len() < FIELD {
        for _ in 0..LINE {
            out.push(ALPHA[i % 64]);
            i = i.wrapping_mul(31).wrapping_add(7);
        }
        out.extend_from_slice(eol);
    }
    out
}

fn soap(field: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(field.len() + 512);
    d.extend_from_slice(
        b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\
<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body>\
<ns1:Upload xmlns:ns1=\"urn:wirespeed\"><ns1:name>a.bin</ns1:name><ns1:data>",
    );
    d.extend_from_slice(field);
    d.extend_from_slice(b"</ns1:data></ns1:Upload></soap:Body></soap:Envelope>");
    d
}

fn json(field: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(field.len() + 64);
    d.extend_from_slice(br#"{"name":"a.bin","meta":{"n":[1,2.5e3,true,null]},"data":""#);
    d.extend_from_slice(field);
    d.extend_from_slice(br#""}"#);
    d
}

fn run(doc: &[u8], mut x: impl FieldExtractor) -> usize {
    let mut total = 0usize;
    let mut sink = |piece: &[u8]| {
        total += piece.len();
        Ok(())
    };
    for slice in doc.chunks(SLICE) {
        x.feed(slice, &mut sink).expect("feed");
    }
    x.finish().expect("finish");
    total
}

fn bench(c: &mut Criterion) {
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("xml_plain_noeol", soap(&base64_lines(b"")), false),
        ("xml_crlf76", soap(&base64_lines(b"\r\n")), false),
        ("xml_ref13_lf76", soap(&base64_lines(b"&#13;\n")), false),
        ("json_plain_noeol", json(&base64_lines(b"")), true),
        ("json_esc_rn76", json(&base64_lines(b"\\r\\n")), true),
        (
            "json_u000d000a76",
            json(&base64_lines(b"\\u000d\\u000a")),
            true,
        ),
    ];
    let mut g = c.benchmark_group("extract_64MiB");
    g.sample_size(10);
    for (name, doc, is_json) in &cases {
        g.throughput(Throughput::Bytes(doc.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| {
                if *is_json {
                    run(doc, JsonFieldExtractor::new("data"))
                } else {
                    run(doc, XmlFieldExtractor::new("data"))
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
