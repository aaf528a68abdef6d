//! `BodyDecoder` with each framing over arbitrary input arriving in
//! arbitrary pieces, driven like the server's buffer (unconsumed bytes are
//! presented again with the next piece). Invariants: consumed <= input, the
//! data range lies within consumed, a Length body never yields more than
//! announced (and exactly that when done), and the data does not depend on
//! how the input was cut.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirespeed_fuzz::{take_byte, take_u16, Pieces};
use wirespeed_proto::{BodyDecoder, BodyFraming, Limits};

fn run(framing: BodyFraming, input: &[u8], pieces: Option<Pieces>) -> (Vec<u8>, String) {
    let mut dec = BodyDecoder::new(framing, &Limits::default());
    let mut pieces = pieces;
    let mut out = Vec::new();
    let mut off = 0;
    let mut avail = match pieces.as_mut() {
        Some(p) => p.next().unwrap().min(input.len()),
        None => input.len(),
    };
    loop {
        let buf = &input[off..avail];
        let d = match dec.decode(buf) {
            Ok(d) => d,
            Err(e) => return (out, format!("error {e:?}")),
        };
        assert!(d.consumed <= buf.len(), "{d:?} of {}", buf.len());
        assert!(
            d.data.start <= d.data.end && d.data.end <= d.consumed,
            "{d:?}"
        );
        out.extend_from_slice(&buf[d.data.clone()]);
        off += d.consumed;
        if let BodyFraming::Length(n) = framing {
            assert!(out.len() as u64 <= n, "{} > announced {n}", out.len());
            assert_eq!(dec.remaining(), Some(n - out.len() as u64));
            if d.done {
                assert_eq!(out.len() as u64, n);
            }
        }
        if d.done {
            assert!(dec.is_done());
            return (out, format!("done at {off}"));
        }
        if d.consumed == 0 && d.data.is_empty() || off == avail {
            if avail == input.len() {
                return (out, "more".into());
            }
            let step = pieces.as_mut().map_or(input.len(), |p| p.next().unwrap());
            avail = (avail + step).min(input.len());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let kind = take_byte(&mut data);
    let seed = take_u16(&mut data);
    let framing = match kind % 4 {
        0 => BodyFraming::Empty,
        1 => BodyFraming::Length(u64::from(take_u16(&mut data))),
        2 => BodyFraming::Chunked,
        _ => BodyFraming::UntilClose,
    };
    let max = usize::from(take_byte(&mut data)) + 1;
    let whole = run(framing, data, None);
    let pieces = run(framing, data, Some(Pieces::new(seed, max)));
    assert_eq!(whole, pieces, "{framing:?}");
});
