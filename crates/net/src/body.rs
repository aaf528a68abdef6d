//! Request body framing state. The decisions are `wirespeed-proto`'s; this
//! only tracks where the connection is in the body.

use wirespeed_proto::{BodyFraming, ChunkedDecoder, Limits};

pub(crate) enum BodyState {
    /// `remaining` bytes of a Content-Length body are still to come.
    Length { remaining: u64 },
    /// A chunked body; the decoder owns the framing state.
    Chunked(Box<ChunkedDecoder>),
    /// The body has been read completely (or there was none).
    Done,
}

impl BodyState {
    pub fn new(framing: BodyFraming, limits: &Limits) -> Self {
        match framing {
            BodyFraming::Empty | BodyFraming::Length(0) => BodyState::Done,
            BodyFraming::Length(n) => BodyState::Length { remaining: n },
            BodyFraming::Chunked => BodyState::Chunked(Box::new(ChunkedDecoder::new(limits))),
            // Requests are never delimited by close (RFC 9112 §6.3 rule 7).
            BodyFraming::UntilClose => BodyState::Done,
        }
    }

    pub fn is_done(&self) -> bool {
        matches!(self, BodyState::Done)
    }
}
