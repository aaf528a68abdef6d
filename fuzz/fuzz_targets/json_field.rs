//! `JsonFieldExtractor` (top-level member `data`) over a document fed in three pieces
//! (cuts chosen by the input). Invariant: the same text and the same
//! verdict whatever the cuts.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirespeed_extract::{FieldExtractor, JsonFieldExtractor};
use wirespeed_fuzz::{take_u16, three_pieces};

fn run(pieces: &[&[u8]]) -> (Vec<u8>, Result<(), String>) {
    let mut x = JsonFieldExtractor::new("data");
    let mut text = Vec::new();
    let mut sink = |t: &[u8]| {
        text.extend_from_slice(t);
        Ok(())
    };
    let mut verdict = Ok(());
    for p in pieces {
        if let Err(e) = x.feed(p, &mut sink) {
            verdict = Err(format!("{e:?}"));
            break;
        }
    }
    if verdict.is_ok() {
        verdict = x.finish().map_err(|e| format!("{e:?}"));
    }
    (text, verdict)
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let a = take_u16(&mut data);
    let b = take_u16(&mut data);
    let whole = run(&[data]);
    let split = run(&three_pieces(data, a, b));
    assert_eq!(whole.1, split.1, "verdict");
    if whole.1.is_ok() {
        assert_eq!(whole.0, split.0, "text");
    }
});
