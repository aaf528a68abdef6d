//! The service's request-path parser. Invariants: an accepted path has no
//! `.`/`..` segment, no empty segment, no `/`, NUL or backslash inside a
//! segment, and its canonical URL parses back to the same path.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirespeed_path::parse_request_path;

fuzz_target!(|data: &[u8]| {
    let raw = String::from_utf8_lossy(data);
    let Ok(path) = parse_request_path(&raw) else {
        return;
    };
    for seg in path.segments() {
        assert!(!seg.is_empty(), "empty segment in {raw:?}");
        assert!(seg != ".." && seg != ".", "dot segment in {raw:?}");
        assert!(!seg.contains('/'), "slash in segment {seg:?} of {raw:?}");
        assert!(!seg.contains('\0'), "NUL in segment {seg:?} of {raw:?}");
        assert!(
            !seg.contains('\\'),
            "backslash in segment {seg:?} of {raw:?}"
        );
    }
    let url = path.to_url(path.trailing_slash());
    let again = parse_request_path(&url).expect("canonical URL parses");
    assert_eq!(again.segments(), path.segments(), "{raw:?} -> {url:?}");
});
