//! `ChunkedDecoder` over input delivered in two reads (cut chosen by the
//! input). Invariants: the decoded data and the outcome do not depend on the
//! cut; consumed/data ranges stay inside the input; a body decoded
//! successfully, re-encoded with `chunk_head`/`CHUNK_END`/`LAST_CHUNK`,
//! decodes to the same data.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirespeed_fuzz::{cut, take_u16};
use wirespeed_proto::{chunk_head, ChunkedDecoder, Limits, ProtoError, CHUNK_END, LAST_CHUNK};

#[derive(Debug, PartialEq)]
struct Outcome {
    data: Vec<u8>,
    /// Ok(consumed) when done, Ok(None) when more input is needed.
    end: Result<Option<usize>, ProtoError>,
}

/// Decodes `input` as a server would: `avail` bytes have arrived first, the
/// rest later.
fn run(input: &[u8], first: usize) -> Outcome {
    let mut dec = ChunkedDecoder::new(&Limits::default());
    let mut data = Vec::new();
    let mut off = 0;
    let mut avail = first;
    loop {
        let buf = &input[off..avail];
        match dec.decode(buf) {
            Err(e) => return Outcome { data, end: Err(e) },
            Ok(d) => {
                assert!(d.consumed <= buf.len());
                assert!(
                    d.data.start <= d.data.end && d.data.end <= d.consumed,
                    "{d:?}"
                );
                data.extend_from_slice(&buf[d.data.clone()]);
                off += d.consumed;
                if d.done {
                    assert!(dec.is_done());
                    return Outcome {
                        data,
                        end: Ok(Some(off)),
                    };
                }
                if d.consumed == 0 && d.data.is_empty() {
                    if avail == input.len() {
                        return Outcome {
                            data,
                            end: Ok(None),
                        };
                    }
                    avail = input.len();
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let seed = take_u16(&mut data);
    let k = cut(seed, data.len());
    let whole = run(data, data.len());
    let split = run(data, k);
    assert_eq!(whole, split, "cut at {k}");

    if let Ok(Some(_)) = whole.end {
        // Re-encode in chunks of a size chosen by the seed, decode again.
        let size = usize::from(seed % 61) + 1;
        let mut encoded = Vec::new();
        for piece in whole.data.chunks(size) {
            encoded.extend_from_slice(chunk_head(piece.len()).as_ref());
            encoded.extend_from_slice(piece);
            encoded.extend_from_slice(CHUNK_END);
        }
        encoded.extend_from_slice(LAST_CHUNK);
        let again = run(&encoded, encoded.len());
        assert_eq!(again.data, whole.data);
        assert_eq!(again.end, Ok(Some(encoded.len())));
    }
});
