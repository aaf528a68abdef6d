//! `XmlFieldExtractor` (field `data`) over a document fed in three pieces
//! (cuts chosen by the input). Invariant: the same text and the same
//! verdict whatever the cuts.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirespeed_extract::XmlFieldExtractor;
use wirespeed_fuzz::check_extractor_split_invariance;

fuzz_target!(|data: &[u8]| {
    check_extractor_split_invariance(|| XmlFieldExtractor::new("data"), data);
});
