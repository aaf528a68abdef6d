//! The corpora vendored in the workspace's `tests/corpora` (see its
//! README for origins and licenses): JSON lines, payloads in base64.

use std::path::PathBuf;

use base64::Engine;

/// Path of a vendored corpus file.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpora")).join(name)
}

/// The corpus's cases, one JSON value per non-empty line.
pub fn cases(name: &str) -> Vec<serde_json::Value> {
    let p = path(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| {
        panic!(
            "corpus {} is required (vendored in tests/corpora): {e}",
            p.display()
        )
    });
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("corpus line is JSON"))
        .collect()
}

/// Decode a standard (padded) base64 field of a corpus case.
pub fn b64_decode(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|e| panic!("bad base64 in corpus ({e}): {text:?}"))
}

/// Standard (padded) base64, as the corpora write payloads.
pub fn b64_encode(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}
