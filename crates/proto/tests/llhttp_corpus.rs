//! Cases from nodejs/llhttp's request tests (MIT), converted to JSON lines
//! (see tests/corpora/README.md; each line names its origin). A tiny
//! sans-IO "server" drives one connection's bytes through the crate: head,
//! framing, body, keep-alive; the verdict is compared with the corpus.

use wirespeed_proto::{
    parse_request_head, request_framing, BodyFraming, ChunkedDecoder, Limits, ProtoError,
};

#[derive(Debug, Default)]
struct Served {
    methods: Vec<String>,
    body_len: Vec<u64>,
    /// The error that ended the connection, if any.
    error: Option<ProtoError>,
}

fn serve(mut input: &[u8]) -> Served {
    let limits = Limits::default();
    let mut served = Served::default();
    loop {
        let (head, n) = match parse_request_head(input, &limits) {
            Ok(Some(h)) => h,
            Ok(None) => return served, // waiting for more: never answered
            Err(e) => {
                served.error = Some(e);
                return served;
            }
        };
        input = &input[n..];
        let body_len = match request_framing(&head) {
            Err(e) => {
                served.error = Some(e);
                return served;
            }
            Ok(BodyFraming::Empty) => 0,
            Ok(BodyFraming::Length(len)) => {
                if (input.len() as u64) < len {
                    return served;
                }
                input = &input[len as usize..];
                len
            }
            Ok(BodyFraming::Chunked) => {
                let mut dec = ChunkedDecoder::new(&limits);
                let mut total = 0u64;
                loop {
                    match dec.decode(input) {
                        Err(e) => {
                            served.error = Some(e);
                            return served;
                        }
                        Ok(d) => {
                            total += d.data.len() as u64;
                            input = &input[d.consumed..];
                            if d.done {
                                break;
                            }
                            if d.consumed == 0 && d.data.is_empty() {
                                return served; // incomplete body
                            }
                        }
                    }
                }
                total
            }
            Ok(BodyFraming::UntilClose) => unreachable!("requests are never read until close"),
        };
        served.methods.push(head.method().to_string());
        served.body_len.push(body_len);
        if !head.keep_alive() {
            return served;
        }
    }
}

#[test]
fn llhttp_corpus_requests_are_accepted_or_rejected_as_expected() {
    let mut failures = Vec::new();
    let mut counts = (0, 0, 0);
    for case in wirespeed_testkit::corpus::cases("http-requests-llhttp.jsonl") {
        let id = case["id"].as_str().unwrap();
        let raw = wirespeed_testkit::corpus::b64_decode(case["raw_b64"].as_str().unwrap());
        let served = serve(&raw);
        let rejected_first = served.error.is_some() && served.methods.is_empty();
        let verdict = match case["expect"].as_str().unwrap() {
            "accept" => {
                counts.0 += 1;
                let mut ok = served.error.is_none();
                if let Some(n) = case["requests"].as_u64() {
                    ok &= served.methods.len() as u64 == n;
                }
                if let Some(lens) = case["body_len"].as_array() {
                    let want: Vec<u64> = lens.iter().map(|v| v.as_u64().unwrap()).collect();
                    ok &= served.body_len == want;
                }
                if let Some(methods) = case["methods"].as_array() {
                    let want: Vec<&str> = methods.iter().map(|v| v.as_str().unwrap()).collect();
                    ok &= served.methods == want;
                }
                ok
            }
            "reject" => {
                counts.1 += 1;
                rejected_first
            }
            _ => {
                counts.2 += 1;
                // "either": both verdicts are allowed; we hold ourselves to
                // the RFC's preference where the corpus gives one.
                match case["prefer"].as_str() {
                    Some("reject") => rejected_first,
                    Some("accept") => served.error.is_none(),
                    _ => true,
                }
            }
        };
        if !verdict {
            failures.push(format!("{id}: {served:?}"));
        }
    }
    assert!(
        counts.0 > 30 && counts.1 > 30,
        "corpus not loaded: {counts:?}"
    );
    assert!(
        failures.is_empty(),
        "{} corpus cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
