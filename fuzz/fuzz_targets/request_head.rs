//! `parse_request_head` + `request_framing` on arbitrary bytes. Invariants:
//! a prefix of the input gives "incomplete" or exactly the whole input's
//! result (the server parses again after every read); a complete head is
//! complete at its consumed length with the same value; consumed <= input.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirespeed_fuzz::{cut, take_u16};
use wirespeed_proto::{parse_request_head, request_framing, Limits};

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let k = cut(take_u16(&mut data), data.len());
    let limits = Limits::default();
    let whole = parse_request_head(data, &limits);
    if let Ok(Some((head, n))) = &whole {
        assert!(*n <= data.len(), "consumed {n} of {}", data.len());
        assert!(*n > 0);
        let framing = request_framing(head);
        // Complete at its own length, with the same head.
        let again = parse_request_head(&data[..*n], &limits);
        assert_eq!(
            format!("{whole:?}"),
            format!("{again:?}"),
            "head not complete at n"
        );
        assert_eq!(framing, request_framing(&again.unwrap().unwrap().0));
    }
    // Feed the first k bytes, then all: same result as parsing it whole.
    match parse_request_head(&data[..k], &limits) {
        Ok(None) => {}
        prefix => assert_eq!(
            format!("{prefix:?}"),
            format!("{whole:?}"),
            "prefix of {k} bytes decided differently"
        ),
    }
});
