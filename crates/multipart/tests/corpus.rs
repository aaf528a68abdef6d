//! The python-multipart corpus (tests/corpora), fed whole, byte by
//! byte and at random splits. An `alt_expect` reading also counts as right.

mod common;

use common::*;
use serde_json::{json, Map, Value};
use wirespeed_multipart::{Limits, MultipartError, Part};

/// The corpus's outcome shape: files list + fields map, or "error".
fn outcome(r: &Result<Vec<Part>, MultipartError>) -> Value {
    let Ok(parts) = r else {
        return json!("error");
    };
    let mut files = Vec::new();
    let mut fields = Map::new();
    for p in parts {
        let name = p.headers.name.clone().unwrap_or_default();
        match &p.headers.filename {
            Some(f) => {
                files.push(json!({"name": name, "filename": f, "data_b64": b64_encode(&p.data)}))
            }
            None => {
                fields.insert(
                    name,
                    Value::String(String::from_utf8_lossy(&p.data).into_owned()),
                );
            }
        }
    }
    json!({"files": files, "fields": fields})
}

#[test]
fn python_multipart_corpus_verdicts_hold_at_any_split() {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut cases = 0;
    for case in wirespeed_testkit::corpus::cases("multipart_python_multipart.jsonl") {
        let id = case["id"].as_str().unwrap();
        let boundary = case["boundary"].as_str().unwrap();
        let body = b64_decode(case["body_b64"].as_str().unwrap());
        let mut accepted = vec![case["expect"].clone()];
        if let Some(alt) = case["alt_expect"].as_array() {
            accepted.extend(alt.iter().cloned());
        }
        let limits = Limits::default();

        let whole = outcome(&common::parse_split(boundary, limits, &body, &[]));
        assert!(
            accepted.contains(&whole),
            "{id}: got {whole}, expected one of {accepted:?}"
        );
        // Every split must give the same answer as the whole body.
        let bytewise = outcome(&parse_bytewise(boundary, limits, &body));
        assert_eq!(bytewise, whole, "{id}: byte-by-byte differs from whole");
        for _ in 0..300 {
            let pts = random_points(&mut rng, body.len());
            let got = outcome(&common::parse_split(boundary, limits, &body, &pts));
            assert_eq!(got, whole, "{id}: split at {pts:?} differs from whole");
        }
        cases += 1;
    }
    assert_eq!(cases, 30, "expected all 30 corpus cases");
}
