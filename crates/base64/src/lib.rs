//! Sans-IO streaming decoder for strict standard base64 (RFC 4648 §4) that keeps
//! line-broken input on the fast path.
//!
//! # Why this crate exists
//!
//! Field report 003: a SOAP deserializer decoded base64 3600x slower when the
//! producer inserted a line break every 73 characters, because its fast path
//! failed on whitespace and fell into an exception-driven strip-and-retry. Here
//! CR/LF/space/tab are part of the normal path: the SIMD engine skips them in
//! the same pass that decodes, and the strict rules are enforced around it
//! without a second copy of the data.
//!
//! # Accepted syntax
//!
//! * Alphabet `A–Z a–z 0–9 + /` (RFC 4648 table 1; the URL-safe `-_` are rejected).
//! * Whitespace: exactly CR, LF, space and tab, anywhere (also inside a group
//!   and between `=` signs). Form feed, vertical tab, NUL, non-ASCII bytes:
//!   rejected with [`DecodeErrorKind::InvalidCharacter`].
//! * Padding is required: the number of significant characters (data plus `=`)
//!   must be a multiple of 4; `=` may only be the 3rd and 4th, or the 4th,
//!   character of the final group; after it only whitespace may follow.
//! * Non-zero trailing bits (`"ab=="`, where `b` leaves bits set that the
//!   decoded byte drops) are **accepted**. RFC 4648 §3.5 allows rejecting them,
//!   but the vendored WPT corpus's strict verdicts accept them (`"ab=="` → `0x69`),
//!   and MIME producers in the wild are not always careful.
//!
//! Every error carries the absolute byte offset in the whole stream (not in the
//! current slice) of the offending byte; for a stream that ends inside a group
//! ([`DecodeErrorKind::IncompleteGroup`]) the offset is the stream length.
//! Errors are sticky: once [`Decoder::decode`] failed, every later call returns
//! the same error.
//!
//! # Engine and measurements
//!
//! The bulk is decoded by simdutf's forgiving decoder (runtime-dispatched
//! SSE/AVX2/AVX-512/NEON kernels with its own portable fallback, so no CPU
//! feature detection is needed here), which skips whitespace inside its SIMD
//! loop. Its forgiving rules are made strict like this:
//!
//! * it also skips form feed (WHATWG whitespace), so a `memchr` for `0x0c`
//!   runs over each 4 KiB block right before simdutf decodes that block (it
//!   is then in L1); if one is found, the scalar path takes over from there
//!   and reports it;
//! * it is asked to stop before a partial final group
//!   (`stop_before_partial`), so missing padding never reaches it: the next
//!   block restarts at the partial group, and at the end of the slice the
//!   partial group (≤ 3 significant characters) is carried to the next call
//!   by the scalar path, which also completes it at the start of that call so
//!   simdutf always starts on a group boundary;
//! * it validates `=` placement within the block it sees; after it consumed a
//!   padded group the decoder only accepts whitespace (the scalar path enforces);
//! * on any error it reports, that block's output is dropped and the scalar
//!   reference path decodes the rest of the slice; it is authoritative for the
//!   error kind and offset. This cold path only runs on input that is invalid
//!   anyway, once at a stream end whose padding straddles a block or a call,
//!   or for a 4 KiB block with fewer than 4 significant characters (runs of
//!   whitespace, not line breaks): always linear, at the scalar engine's speed.
//!
//! A differential test runs every short tail over a small alphabet, and
//! corruptions around block boundaries, through both engines and requires
//! identical bytes, verdicts and offsets.
//!
//! Output is written straight into the spare capacity of the caller's `Vec`
//! (no zero-fill pass; a reused, cleared `Vec` costs nothing per call; a
//! zero-fill measured 10–20% slower: bench/RESULTS.md).
//!
//! # Measurements
//!
//! Line-broken input stays on the SIMD path; the figures (and the gap to raw
//! simdutf, the form-feed scan) are in `bench/RESULTS.md` ("base64 decoder
//! engines"); reproduce with `cargo bench -p wirespeed-base64`.

#![deny(unsafe_op_in_unsafe_fn)]

use thiserror::Error;

/// What was wrong with the input. See [`DecodeError`] for the offset.
#[derive(Error, Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// A byte that is neither in the alphabet, `=`, nor CR/LF/space/tab.
    #[error("invalid base64 character 0x{0:02x}")]
    InvalidCharacter(u8),
    /// `=` as the 1st or 2nd character of a group (e.g. `"a==="`, `"=abc"`,
    /// `"abcd="`).
    #[error("misplaced base64 padding '='")]
    InvalidPadding,
    /// A significant character after padding started (e.g. `"ab=c"`,
    /// `"ab==cd=="`, `"ab==="`).
    #[error("base64 data 0x{0:02x} after padding")]
    DataAfterPadding(u8),
    /// The stream ended inside a group: 1–3 significant characters without
    /// the padding that would complete it.
    #[error("base64 stream ends inside a 4-character group")]
    IncompleteGroup,
}

/// A decoding error with the absolute byte offset in the stream.
#[derive(Error, Debug, Clone, PartialEq, Eq)]
#[error("{kind} at byte {offset}")]
pub struct DecodeError {
    /// Offset of the offending byte from the start of the stream (for
    /// [`DecodeErrorKind::IncompleteGroup`]: the stream length).
    pub offset: u64,
    /// What went wrong.
    pub kind: DecodeErrorKind,
}

/// Which code decodes the bulk of each slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// simdutf SIMD kernels with the strictness glue described in the crate docs.
    #[default]
    Simd,
    /// The byte-at-a-time reference decoder only (for differential tests and
    /// benchmark comparisons).
    Scalar,
}

/// Slices shorter than this go to the scalar path: an FFI call plus the form
/// feed scan costs more than decoding a few dozen bytes one at a time.
const SIMD_MIN: usize = 64;

/// Bytes handed to simdutf per call: small enough that the form feed scan
/// leaves the block in L1 for the decoder, large enough to amortise the call.
const SIMD_BLOCK: usize = 4 << 10;

// Scalar lookup table: 0..=63 sextet value, or one of the markers below.
const WS: u8 = 0xFD;
const PAD: u8 = 0xFE;
const BAD: u8 = 0xFF;

static TABLE: [u8; 256] = {
    let mut t = [BAD; 256];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut i = 0;
    while i < 64 {
        t[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    t[b'\r' as usize] = WS;
    t[b'\n' as usize] = WS;
    t[b' ' as usize] = WS;
    t[b'\t' as usize] = WS;
    t[b'=' as usize] = PAD;
    t
};

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b'\r' | b'\n' | b' ' | b'\t')
}

/// Streaming decoder. Feed any split of the stream to [`decode`](Self::decode)
/// (a split may fall inside a CRLF or a group), then call
/// [`finish`](Self::finish).
///
/// ```
/// let mut d = wirespeed_base64::Decoder::new();
/// let mut out = Vec::new();
/// d.decode(b"Zm9v\r\nYm", &mut out)?; // "Ym" is carried to the next call
/// d.decode(b"Fy\r\n", &mut out)?;
/// d.finish()?;
/// assert_eq!(out, b"foobar");
///
/// let err = wirespeed_base64::decode(b"Zm9v\r\nYm\x0cFy").unwrap_err();
/// assert_eq!(err.to_string(), "invalid base64 character 0x0c at byte 8");
/// # Ok::<(), wirespeed_base64::DecodeError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    engine: Engine,
    /// Sextets of the current, incomplete group (only `quad[..n - pads]` are data).
    quad: [u8; 4],
    /// Significant characters (data and `=`) in the current group, 0..=3.
    n: u8,
    /// `=` seen in the current group.
    pads: u8,
    /// The final (padded) group is complete: only whitespace may follow.
    done: bool,
    /// Bytes of the stream consumed so far.
    offset: u64,
    /// Bytes that went through the scalar path (monitoring / fast-path tests).
    scalar_bytes: u64,
    error: Option<DecodeError>,
}

impl Decoder {
    /// A decoder using the SIMD engine.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder using the given engine (`Engine::Scalar` is the reference
    /// implementation, for differential tests and comparisons).
    pub fn with_engine(engine: Engine) -> Self {
        Self {
            engine,
            ..Self::default()
        }
    }

    /// Bytes of input consumed so far (the stream offset of the next byte).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes that were decoded by the scalar path rather than the SIMD engine.
    /// With valid input this stays below ~70 bytes per call (a carried group
    /// and a tail too short for the SIMD call), plus at most one block at the
    /// stream end when its padding straddles two calls; a large value means the fast
    /// path is being missed (the seed-003 failure mode) and is worth a log line.
    pub fn scalar_bytes(&self) -> u64 {
        self.scalar_bytes
    }

    /// Decode `input`, appending the decoded bytes to `out`. `input` may be
    /// any piece of the stream. At most `max_decoded_len(input.len() + 3)`
    /// bytes are appended (a group carried from the previous call completes
    /// here).
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let r = self.decode_inner(input, out);
        if let Err(e) = &r {
            self.error = Some(e.clone());
        }
        r
    }

    /// End of stream: fails if a group is incomplete (including `"ab="`).
    pub fn finish(&mut self) -> Result<(), DecodeError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.n != 0 {
            let e = DecodeError {
                offset: self.offset,
                kind: DecodeErrorKind::IncompleteGroup,
            };
            self.error = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    fn decode_inner(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let mut rest = input;
        if self.engine == Engine::Simd {
            // Complete a group carried over from the previous call, so the
            // SIMD engine always starts on a group boundary.
            if self.n != 0 {
                let used = self.scalar(rest, out, true)?;
                rest = &rest[used..];
            }
            if !self.done && rest.len() >= SIMD_MIN {
                let used = self.simd(rest, out);
                rest = &rest[used..];
            }
        }
        self.scalar(rest, out, false)?;
        Ok(())
    }

    /// Decode as much of `region` as the SIMD engine can vouch for; returns
    /// the bytes consumed (the scalar path takes the rest, which is a partial
    /// group plus whitespace, or everything from an error or form feed on).
    /// Precondition: on a group boundary, not after padding.
    fn simd(&mut self, region: &[u8], out: &mut Vec<u8>) -> usize {
        debug_assert!(self.n == 0 && !self.done);
        // One group more than the input could produce: with this much room
        // simdutf's "safe" entry point runs its fast kernel over the whole
        // block (it only goes scalar for a part that might not fit).
        out.reserve(region.len() / 4 * 3 + 6);
        let mut pos = 0;
        // Work in L1-sized blocks: the form feed scan pulls a block into L1
        // and simdutf decodes it from there, instead of two passes over the
        // whole slice (4 KiB beat 16 KiB blocks and one memchr per 256 KiB:
        // bench/RESULTS.md, "base64 decoder engines").
        while region.len() - pos >= SIMD_MIN {
            let block = &region[pos..region.len().min(pos + SIMD_BLOCK)];
            // simdutf treats form feed as whitespace; strict mode does not.
            if memchr::memchr(0x0c, block).is_some() {
                break;
            }
            let start = out.len();
            let room = block.len() / 4 * 3 + 6;
            // A no-op after the first block (capacity was reserved for the
            // whole region above); keeps the bound local to this call.
            out.reserve(room);
            let mut written = room;
            // SAFETY: `block` is valid for reads of `block.len()` bytes.
            // `out.reserve(room)` guarantees `room` bytes of spare capacity at
            // `as_mut_ptr() + start`, and simdutf writes at most `written` (=
            // `room`) bytes there; `room` is one group more than the block can
            // produce, so the safe entry point never takes its slow partial
            // path. Input and output cannot overlap (`region` is a shared
            // borrow while `out` is borrowed mutably).
            let r = unsafe {
                simdutf::base64_to_binary_safe(
                    block.as_ptr(),
                    block.len(),
                    out.as_mut_ptr().add(start),
                    &mut written,
                    simdutf::Base64Options::Default,
                    simdutf::LastChunkHandlingOptions::StopBeforePartial,
                    false,
                )
            };
            if r.error != simdutf::ErrorCode::Success
                || written > room
                || r.count > block.len()
                || r.count == 0
            {
                // Output beyond `start` is not committed (len unchanged); the
                // scalar path redoes the rest and reports the exact error.
                // (`count == 0`: fewer than 4 significant characters in a
                // whole block, i.e. mostly whitespace; scalar copes.)
                break;
            }
            // SAFETY: simdutf initialised `written` bytes after `start`, and
            // `written <= room <= capacity - start` (checked above).
            unsafe { out.set_len(start + written) };
            pos += r.count;
            // If the last significant character simdutf consumed is '=', the
            // final group has been decoded; anything but whitespace after it
            // is an error the scalar path will report.
            let last = block[..r.count].iter().rev().find(|&&b| !is_ws(b));
            if last == Some(&b'=') {
                self.done = true;
                break;
            }
        }
        self.offset += pos as u64;
        pos
    }

    /// Reference decoder, one byte at a time (with a shortcut for four data
    /// characters in a row). With `stop_at_boundary`, returns as soon as the
    /// current group is complete (or immediately if none is open). Returns
    /// the number of bytes consumed.
    fn scalar(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        stop_at_boundary: bool,
    ) -> Result<usize, DecodeError> {
        if stop_at_boundary && self.n == 0 {
            return Ok(0);
        }
        out.reserve(input.len().div_ceil(4) * 3);
        let mut i = 0;
        while i < input.len() {
            if self.n == 0 && !self.done && !stop_at_boundary {
                // Whole groups without whitespace: no per-byte state changes.
                while let Some(&[a, b, c, d]) = input.get(i..i + 4) {
                    let [a, b, c, d] = [a, b, c, d].map(|x| TABLE[x as usize]);
                    // Markers (WS, PAD, BAD) are all >= 64; sextets are not.
                    if (a | b | c | d) >= 64 {
                        break;
                    }
                    out.extend_from_slice(&[a << 2 | b >> 4, b << 4 | c >> 2, c << 6 | d]);
                    i += 4;
                }
                if i == input.len() {
                    break;
                }
            }
            let byte = input[i];
            let v = TABLE[byte as usize];
            i += 1;
            if v == WS {
                continue;
            }
            let kind = if v == BAD {
                Some(DecodeErrorKind::InvalidCharacter(byte))
            } else if self.done || (self.pads > 0 && v != PAD) {
                Some(DecodeErrorKind::DataAfterPadding(byte))
            } else if v == PAD && self.n < 2 {
                Some(DecodeErrorKind::InvalidPadding)
            } else {
                None
            };
            if let Some(kind) = kind {
                let consumed = i - 1;
                self.offset += consumed as u64;
                self.scalar_bytes += consumed as u64;
                return Err(DecodeError {
                    offset: self.offset,
                    kind,
                });
            }
            if v == PAD {
                self.pads += 1;
            } else {
                self.quad[self.n as usize] = v;
            }
            self.n += 1;
            if self.n == 4 {
                // Padding positions hold stale sextets; they only feed the
                // bytes that `pads` cuts off.
                let q = self.quad;
                let bytes = [
                    q[0] << 2 | q[1] >> 4,
                    q[1] << 4 | q[2] >> 2,
                    q[2] << 6 | q[3],
                ];
                out.extend_from_slice(&bytes[..3 - self.pads as usize]);
                self.done = self.pads > 0;
                self.n = 0;
                self.pads = 0;
                if stop_at_boundary && !self.done {
                    break;
                }
            }
        }
        self.offset += i as u64;
        self.scalar_bytes += i as u64;
        Ok(i)
    }
}

/// Decode a complete base64 stream in one call.
pub fn decode(input: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(max_decoded_len(input.len()));
    let mut d = Decoder::new();
    d.decode(input, &mut out)?;
    d.finish()?;
    Ok(out)
}

/// Upper bound on the decoded size of a whole stream of `input_len` bytes.
pub fn max_decoded_len(input_len: usize) -> usize {
    input_len / 4 * 3
}
