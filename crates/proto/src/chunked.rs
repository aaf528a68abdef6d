//! Chunked transfer coding (RFC 9112 §7.1): a streaming decoder that hands out
//! body data as ranges of the caller's input (zero copy), and the encoder's
//! chunk framing, so the I/O layer can send chunk head + data + CRLF in one
//! vectored write.
//!
//! SKELETON: signatures are the contract; bodies to be implemented.

use crate::{Limits, ProtoError};
use std::ops::Range;

/// The last-chunk and an empty trailer section.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";
/// The CRLF after a chunk's data.
pub const CHUNK_END: &[u8] = b"\r\n";

/// The size line of a chunk, e.g. `b"1f40\r\n"`, on the stack.
#[derive(Debug, Clone, Copy)]
pub struct ChunkHead {
    buf: [u8; 18],
    len: u8,
}

impl AsRef<[u8]> for ChunkHead {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

/// The size line for a chunk of `len` bytes (`len` > 0; lowercase hex + CRLF).
pub fn chunk_head(len: usize) -> ChunkHead {
    let _ = len;
    todo!()
}

/// Result of one [`ChunkedDecoder::decode`] call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// How many bytes of the input were consumed (framing and data).
    pub consumed: usize,
    /// Body data found in this call, as a range of the input (`data.end <= consumed`).
    /// May be empty.
    pub data: Range<usize>,
    /// The last chunk and trailers have been fully read; the body is over.
    pub done: bool,
}

/// Streaming chunked decoder. Feed it whatever bytes are available; it never
/// needs more than one call's input to make progress except while a size line
/// or trailer line is split across reads (it keeps the needed state internally,
/// bounded by the limits).
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    _private: (),
}

impl ChunkedDecoder {
    pub fn new(limits: &Limits) -> Self {
        let _ = limits;
        todo!()
    }

    /// Decode from `input`. Returns at most one data range per call; call again
    /// with the unconsumed rest. `consumed == 0 && data.is_empty() && !done`
    /// means more input is needed. Errors: empty/non-hex/overflowing size →
    /// `InvalidChunkSize`; bare CR or LF anywhere in framing →
    /// `BadChunkLineEnding`; extensions over the limit → `ChunkExtensionTooLong`;
    /// trailers over the limits → `TrailersTooLarge`; malformed trailer → `MalformedTrailer`.
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        let _ = input;
        todo!()
    }

    /// True once the terminating chunk and trailer section were read.
    pub fn is_done(&self) -> bool {
        todo!()
    }

    /// Trailer fields received (name, value), available once done.
    pub fn trailers(&self) -> &[(String, Vec<u8>)] {
        todo!()
    }
}
