// Shared helpers (included with `mod common;`).
#![allow(dead_code)]

use wirespeed_extract::{ExtractError, FieldExtractor};

/// Feeds `doc` cut at the given sorted cut points, returns the text.
pub fn extract_cuts(
    mut x: impl FieldExtractor,
    doc: &[u8],
    cuts: &[usize],
) -> Result<Vec<u8>, ExtractError> {
    let mut text = Vec::new();
    let mut sink = |p: &[u8]| {
        text.extend_from_slice(p);
        Ok(())
    };
    let mut start = 0;
    for &c in cuts.iter().chain(std::iter::once(&doc.len())) {
        let c = c.clamp(start, doc.len());
        x.feed(&doc[start..c], &mut sink)?;
        start = c;
    }
    x.finish()?;
    Ok(text)
}

pub fn whole(x: impl FieldExtractor, doc: &[u8]) -> Result<Vec<u8>, ExtractError> {
    extract_cuts(x, doc, &[])
}

pub fn bytewise(x: impl FieldExtractor, doc: &[u8]) -> Result<Vec<u8>, ExtractError> {
    let cuts: Vec<usize> = (1..doc.len()).collect();
    extract_cuts(x, doc, &cuts)
}
