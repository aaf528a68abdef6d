//! Chunked transfer coding (RFC 9112 §7.1): a streaming decoder that hands out
//! body data as ranges of the caller's input (zero copy), and the encoder's
//! chunk framing, so the I/O layer can send chunk head + data + CRLF in one
//! vectored write.
//!
//! The decoder walks framing bytes one at a time through a small state
//! machine, so a size line or CRLF split across reads needs no buffering at
//! all: the state is the partial size, a digit count and an extension byte
//! count. Only the trailer section is buffered (it has to be parsed as
//! fields), bounded by `max_trailer_bytes`. Data bytes are never looked at.

use crate::abnf::is_tchar;
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
/// `len == 0` gives `"0\r\n"`, the start of the last chunk.
pub fn chunk_head(len: usize) -> ChunkHead {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 18];
    // Hex digits needed: one per started nibble, at least one. At most 16
    // for a 64-bit usize, so digits + CRLF always fits the 18-byte buffer.
    let digits = (usize::BITS - len.leading_zeros()).div_ceil(4).max(1) as usize;
    for (i, slot) in buf[..digits].iter_mut().enumerate() {
        let shift = 4 * (digits - 1 - i);
        *slot = HEX[(len >> shift) & 0xF];
    }
    buf[digits] = b'\r';
    buf[digits + 1] = b'\n';
    ChunkHead {
        buf,
        len: (digits + 2) as u8,
    }
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

/// Hex digits accepted in one size (leading zeros included). 16 carry the
/// value; the rest is room for zero padding, and the cap stops an endless
/// run of zeros from being an endless size line.
const MAX_SIZE_DIGITS: u32 = 64;

/// Where the decoder is in the chunked grammar:
///
/// ```text
/// chunk      = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
/// chunk-ext  = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )
/// ext-val    = token / quoted-string
/// last-chunk = 1*("0") [ chunk-ext ] CRLF
/// trailer-section = *( field-line CRLF ) CRLF
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Hex digits of the size.
    Size,
    /// BWS after the size or an extension value: only ";" may follow.
    ExtBws,
    /// After ";": BWS, then the first byte of an extension name.
    ExtNameStart,
    /// Inside an extension name.
    ExtName,
    /// BWS after a name: "=" or ";" may follow.
    ExtAfterName,
    /// After "=": BWS, then a token or a quoted string.
    ExtValueStart,
    ExtToken,
    ExtQuoted,
    ExtQuotedEscape,
    ExtAfterQuoted,
    /// CR of the size line seen; LF must follow.
    SizeLf,
    /// Inside chunk data.
    Data,
    /// After chunk data: CR, then LF.
    DataCr,
    DataLf,
    /// Inside the trailer section (after the last chunk's size line).
    Trailer,
    Done,
    /// A previous call found an error; it is repeated forever.
    Failed(ProtoError),
}

impl State {
    fn in_extension(&self) -> bool {
        matches!(
            self,
            State::ExtBws
                | State::ExtNameStart
                | State::ExtName
                | State::ExtAfterName
                | State::ExtValueStart
                | State::ExtToken
                | State::ExtQuoted
                | State::ExtQuotedEscape
                | State::ExtAfterQuoted
        )
    }
}

/// Streaming chunked decoder. Feed it whatever bytes are available; it never
/// needs more than one call's input to make progress except while a size line
/// or trailer line is split across reads (it keeps the needed state internally,
/// bounded by the limits).
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// Size being read (Size state) or data left in the chunk (Data state).
    size: u64,
    digits: u32,
    ext_bytes: usize,
    /// Trailer section bytes so far (without the final empty line).
    trailer_buf: Vec<u8>,
    /// Bytes in the current trailer line (0 at a line start).
    trailer_line: usize,
    trailer_cr: bool,
    trailer_lines: usize,
    trailers: Vec<(String, Vec<u8>)>,
    max_ext: usize,
    max_trailer_bytes: usize,
    max_trailer_fields: usize,
}

fn is_ws(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
fn is_qdtext(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5B | 0x5D..=0x7E | 0x80..=0xFF)
}

/// quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
fn is_quoted_pair_char(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21..=0x7E | 0x80..=0xFF)
}

impl ChunkedDecoder {
    pub fn new(limits: &Limits) -> Self {
        ChunkedDecoder {
            state: State::Size,
            size: 0,
            digits: 0,
            ext_bytes: 0,
            trailer_buf: Vec::new(),
            trailer_line: 0,
            trailer_cr: false,
            trailer_lines: 0,
            trailers: Vec::new(),
            max_ext: limits.max_chunk_ext_bytes,
            max_trailer_bytes: limits.max_trailer_bytes,
            max_trailer_fields: limits.max_trailer_fields,
        }
    }

    /// Decode from `input`. Returns at most one data range per call; call again
    /// with the unconsumed rest. `consumed == 0 && data.is_empty() && !done`
    /// means more input is needed. Errors: empty/non-hex/overflowing size →
    /// `InvalidChunkSize`; bare CR or LF anywhere in framing →
    /// `BadChunkLineEnding`; extensions over the limit → `ChunkExtensionTooLong`;
    /// trailers over the limits → `TrailersTooLarge`; malformed trailer → `MalformedTrailer`.
    ///
    /// After a data range the decoder keeps consuming framing up to the start
    /// of the next chunk's data, so the final data and `done` usually arrive
    /// in the same call. If that framing is bad, the data is still returned
    /// and the error comes from the next call (and every call after it).
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        let mut pos = 0;
        let mut data = 0..0;
        loop {
            match self.state {
                State::Failed(ref e) => {
                    if data.is_empty() {
                        return Err(e.clone());
                    }
                    break;
                }
                State::Done => break,
                State::Data => {
                    if pos == input.len() || !data.is_empty() {
                        break;
                    }
                    let available = (input.len() - pos) as u64;
                    let take = self.size.min(available) as usize;
                    data = pos..pos + take;
                    pos += take;
                    self.size -= take as u64;
                    if self.size == 0 {
                        self.state = State::DataCr;
                    }
                }
                _ => {
                    if pos == input.len() {
                        break;
                    }
                    match self.step(input[pos]) {
                        Ok(()) => pos += 1,
                        Err(e) => self.fail(e.clone()),
                    }
                }
            }
        }
        Ok(Decoded {
            consumed: pos,
            data,
            done: self.state == State::Done,
        })
    }

    fn fail(&mut self, e: ProtoError) {
        // Let go of a half-read trailer section right away.
        self.trailer_buf = Vec::new();
        self.state = State::Failed(e);
    }

    /// Consume one framing byte.
    fn step(&mut self, b: u8) -> Result<(), ProtoError> {
        use ProtoError::{BadChunkLineEnding as BadEol, InvalidChunkSize as Bad};
        if self.state.in_extension() && b != b'\r' && b != b'\n' {
            self.count_ext()?;
        }
        self.state = match self.state {
            State::Size => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    let d = match b {
                        b'0'..=b'9' => b - b'0',
                        _ => (b | 0x20) - b'a' + 10,
                    };
                    if self.size >> 60 != 0 || self.digits >= MAX_SIZE_DIGITS {
                        return Err(Bad);
                    }
                    self.size = self.size << 4 | u64::from(d);
                    self.digits += 1;
                    State::Size
                }
                _ if self.digits == 0 => return Err(if b == b'\n' { BadEol } else { Bad }),
                b'\r' => State::SizeLf,
                b';' => {
                    self.count_ext()?;
                    State::ExtNameStart
                }
                b' ' | b'\t' => {
                    self.count_ext()?;
                    State::ExtBws
                }
                b'\n' => return Err(BadEol),
                _ => return Err(Bad),
            },
            State::ExtBws => match b {
                _ if is_ws(b) => State::ExtBws,
                b';' => State::ExtNameStart,
                b'\n' => return Err(BadEol),
                // Includes CR: whitespace is only allowed before a ";".
                _ => return Err(Bad),
            },
            State::ExtNameStart => match b {
                _ if is_ws(b) => State::ExtNameStart,
                _ if is_tchar(b) => State::ExtName,
                b'\n' => return Err(BadEol),
                _ => return Err(Bad),
            },
            State::ExtName => match b {
                _ if is_tchar(b) => State::ExtName,
                _ if is_ws(b) => State::ExtAfterName,
                b'=' => State::ExtValueStart,
                b';' => State::ExtNameStart,
                b'\r' => State::SizeLf,
                b'\n' => return Err(BadEol),
                _ => return Err(Bad),
            },
            State::ExtAfterName => match b {
                _ if is_ws(b) => State::ExtAfterName,
                b'=' => State::ExtValueStart,
                b';' => State::ExtNameStart,
                b'\n' => return Err(BadEol),
                _ => return Err(Bad),
            },
            State::ExtValueStart => match b {
                _ if is_ws(b) => State::ExtValueStart,
                b'"' => State::ExtQuoted,
                _ if is_tchar(b) => State::ExtToken,
                b'\n' => return Err(BadEol),
                _ => return Err(Bad),
            },
            State::ExtToken => match b {
                _ if is_tchar(b) => State::ExtToken,
                _ if is_ws(b) => State::ExtBws,
                b';' => State::ExtNameStart,
                b'\r' => State::SizeLf,
                b'\n' => return Err(BadEol),
                _ => return Err(Bad),
            },
            State::ExtQuoted => match b {
                b'"' => State::ExtAfterQuoted,
                b'\\' => State::ExtQuotedEscape,
                _ if is_qdtext(b) => State::ExtQuoted,
                b'\n' => return Err(BadEol),
                // Includes CR: the quoted string was never closed.
                _ => return Err(Bad),
            },
            State::ExtQuotedEscape => match b {
                _ if is_quoted_pair_char(b) => State::ExtQuoted,
                b'\n' => return Err(BadEol),
                _ => return Err(Bad),
            },
            State::ExtAfterQuoted => match b {
                _ if is_ws(b) => State::ExtBws,
                b';' => State::ExtNameStart,
                b'\r' => State::SizeLf,
                b'\n' => return Err(BadEol),
                _ => return Err(Bad),
            },
            State::SizeLf => {
                if b != b'\n' {
                    return Err(BadEol);
                }
                let size = self.size;
                self.size = 0;
                self.digits = 0;
                self.ext_bytes = 0;
                if size == 0 {
                    State::Trailer
                } else {
                    self.size = size;
                    State::Data
                }
            }
            State::DataCr => match b {
                b'\r' => State::DataLf,
                _ => return Err(BadEol),
            },
            State::DataLf => match b {
                b'\n' => State::Size,
                _ => return Err(BadEol),
            },
            State::Trailer => return self.trailer_byte(b),
            // decode() handles these without calling step().
            State::Data | State::Done | State::Failed(_) => return Ok(()),
        };
        Ok(())
    }

    fn count_ext(&mut self) -> Result<(), ProtoError> {
        self.ext_bytes += 1;
        if self.ext_bytes > self.max_ext {
            return Err(ProtoError::ChunkExtensionTooLong);
        }
        Ok(())
    }

    /// One byte of the trailer section. Lines are buffered (CRLF included)
    /// until the empty line, then parsed all at once.
    fn trailer_byte(&mut self, b: u8) -> Result<(), ProtoError> {
        if self.trailer_cr {
            if b != b'\n' {
                return Err(ProtoError::BadChunkLineEnding);
            }
            self.trailer_cr = false;
            if self.trailer_line == 0 {
                return self.finish_trailers();
            }
            self.push_trailer(b)?;
            self.trailer_line = 0;
            self.trailer_lines += 1;
            if self.trailer_lines > self.max_trailer_fields {
                return Err(ProtoError::TrailersTooLarge);
            }
            return Ok(());
        }
        match b {
            b'\r' => {
                self.trailer_cr = true;
                if self.trailer_line > 0 {
                    self.push_trailer(b)?;
                }
            }
            b'\n' => return Err(ProtoError::BadChunkLineEnding),
            _ => {
                self.push_trailer(b)?;
                self.trailer_line += 1;
            }
        }
        Ok(())
    }

    fn push_trailer(&mut self, b: u8) -> Result<(), ProtoError> {
        // The final empty line (2 bytes) is appended later; count it now so
        // the limit means the whole section.
        if self.trailer_buf.len() + 1 + 2 > self.max_trailer_bytes {
            return Err(ProtoError::TrailersTooLarge);
        }
        self.trailer_buf.push(b);
        Ok(())
    }

    /// The empty line ending the trailer section was read: parse the fields
    /// with the same rules as header fields (httparse's strict defaults: no
    /// obs-fold, no whitespace before the colon, token names, no CTLs in
    /// values; bare LF was already refused byte by byte).
    fn finish_trailers(&mut self) -> Result<(), ProtoError> {
        self.state = State::Done;
        let mut section = std::mem::take(&mut self.trailer_buf);
        if section.is_empty() {
            return Ok(());
        }
        section.extend_from_slice(b"\r\n");
        let mut slots = vec![httparse::EMPTY_HEADER; self.max_trailer_fields.saturating_add(1)];
        match httparse::parse_headers(&section, &mut slots) {
            Ok(httparse::Status::Complete((n, fields))) if n == section.len() => {
                self.trailers = fields
                    .iter()
                    .map(|f| (f.name.to_owned(), f.value.to_vec()))
                    .collect();
                Ok(())
            }
            Err(httparse::Error::TooManyHeaders) => Err(ProtoError::TrailersTooLarge),
            _ => Err(ProtoError::MalformedTrailer),
        }
    }

    /// True once the terminating chunk and trailer section were read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Trailer fields received (name, value), available once done.
    pub fn trailers(&self) -> &[(String, Vec<u8>)] {
        &self.trailers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode `input` fed in pieces of `step` bytes (the caller keeps
    /// unconsumed bytes and appends the next piece, like a read buffer).
    fn decode_split(
        input: &[u8],
        step: usize,
        limits: &Limits,
    ) -> Result<(Vec<u8>, ChunkedDecoder), ProtoError> {
        let mut dec = ChunkedDecoder::new(limits);
        let mut body = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut fed = 0;
        loop {
            let d = dec.decode(&buf)?;
            assert!(d.data.end <= d.consumed && d.consumed <= buf.len());
            body.extend_from_slice(&buf[d.data.clone()]);
            buf.drain(..d.consumed);
            if d.done {
                assert!(dec.is_done());
                return Ok((body, dec));
            }
            if d.consumed == 0 && d.data.is_empty() {
                if fed == input.len() {
                    return Err(ProtoError::BadChunkLineEnding); // truncated: test marker
                }
                let end = (fed + step).min(input.len());
                buf.extend_from_slice(&input[fed..end]);
                fed = end;
            }
        }
    }

    fn decode_all(input: &[u8]) -> Result<Vec<u8>, ProtoError> {
        let limits = Limits::default();
        let whole = decode_split(input, input.len().max(1), &limits).map(|r| r.0);
        for step in 1..=3 {
            assert_eq!(
                decode_split(input, step, &limits).map(|r| r.0),
                whole,
                "step {step}"
            );
        }
        whole
    }

    #[test]
    fn chunk_head_is_lowercase_hex() {
        assert_eq!(chunk_head(1).as_ref(), b"1\r\n");
        assert_eq!(chunk_head(0x1f40).as_ref(), b"1f40\r\n");
        assert_eq!(chunk_head(0).as_ref(), b"0\r\n");
        assert_eq!(chunk_head(255).as_ref(), b"ff\r\n");
        assert_eq!(chunk_head(256).as_ref(), b"100\r\n");
        assert_eq!(
            chunk_head(usize::MAX).as_ref(),
            format!("{:x}\r\n", usize::MAX).as_bytes()
        );
    }

    #[test]
    fn decodes_simple_bodies() {
        assert_eq!(
            decode_all(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").unwrap(),
            b"hello world"
        );
        assert_eq!(decode_all(b"0\r\n\r\n").unwrap(), b"");
        assert_eq!(
            decode_all(b"A\r\n0123456789\r\n000\r\n\r\n").unwrap(),
            b"0123456789"
        );
        assert_eq!(
            decode_all(b"0000000000000000000001\r\nx\r\n0\r\n\r\n").unwrap(),
            b"x"
        );
    }

    #[test]
    fn data_is_a_range_of_the_input() {
        let input = b"5\r\nhello\r\n0\r\n\r\nNEXT";
        let mut dec = ChunkedDecoder::new(&Limits::default());
        let d = dec.decode(input).unwrap();
        // One call: data, then the framing up to the end of the body.
        assert_eq!(
            d,
            Decoded {
                consumed: 15,
                data: 3..8,
                done: true
            }
        );
        assert_eq!(&input[d.consumed..], b"NEXT");
        // Done is sticky and consumes nothing more.
        assert_eq!(
            dec.decode(b"NEXT").unwrap(),
            Decoded {
                consumed: 0,
                data: 0..0,
                done: true
            }
        );
    }

    #[test]
    fn one_data_range_per_call() {
        let input = b"1\r\na\r\n1\r\nb\r\n0\r\n\r\n";
        let mut dec = ChunkedDecoder::new(&Limits::default());
        let d = dec.decode(input).unwrap();
        assert_eq!((d.data.clone(), d.consumed, d.done), (3..4, 9, false));
        let d2 = dec.decode(&input[9..]).unwrap();
        assert_eq!((d2.data, d2.done), (0..1, true));
    }

    #[test]
    fn rejects_bad_sizes() {
        for bad in [
            &b"\r\n"[..],
            b";a\r\n",
            b" 1\r\n",
            b"g\r\n",
            b"-1\r\n",
            b"+1\r\n",
            b"0x1\r\n",
            b"1 \r\n",
            b"a \r\n",
        ] {
            let mut dec = ChunkedDecoder::new(&Limits::default());
            assert_eq!(
                dec.decode(bad).unwrap_err(),
                ProtoError::InvalidChunkSize,
                "{bad:?}"
            );
        }
        // 16 hex digits fit; 17 significant do not.
        let mut dec = ChunkedDecoder::new(&Limits::default());
        assert!(dec.decode(b"ffffffffffffffff\r\n").is_ok());
        let mut dec = ChunkedDecoder::new(&Limits::default());
        assert_eq!(
            dec.decode(b"10000000000000000\r\n").unwrap_err(),
            ProtoError::InvalidChunkSize
        );
        let mut dec = ChunkedDecoder::new(&Limits::default());
        let zeros = vec![b'0'; 100];
        assert_eq!(
            dec.decode(&zeros).unwrap_err(),
            ProtoError::InvalidChunkSize
        );
    }

    #[test]
    fn errors_are_sticky() {
        let mut dec = ChunkedDecoder::new(&Limits::default());
        assert!(dec.decode(b"z").is_err());
        assert!(dec.decode(b"0\r\n\r\n").is_err());
    }

    #[test]
    fn data_before_an_error_is_still_returned() {
        let mut dec = ChunkedDecoder::new(&Limits::default());
        let input = b"3\r\nabcXY";
        let d = dec.decode(input).unwrap();
        assert_eq!((d.data, d.consumed), (3..6, 6));
        assert_eq!(
            dec.decode(&input[6..]).unwrap_err(),
            ProtoError::BadChunkLineEnding
        );
    }

    #[test]
    fn bare_cr_or_lf_in_framing() {
        let cases: &[&[u8]] = &[
            b"5\nhello\r\n0\r\n\r\n",
            b"5\rhello\r\n0\r\n\r\n",
            b"5\r\r\nhello\r\n0\r\n\r\n",
            b"5\r\nhello\n0\r\n\r\n",
            b"5\r\nhello\r0\r\n\r\n",
            b"5\r\nhelloX\r\n0\r\n\r\n",
            b"5\r\nhello\r\n0\n\r\n",
            b"5\r\nhello\r\n0\r\n\n",
            b"5\r\nhello\r\n0\r\n\r\r",
            b"5\r\nhello\r\n0\r\nA: b\n\r\n",
            b"5\r\nhello\r\n0\r\nA: b\r\r\n\r\n",
            b"5;a=b\n",
            b"5;a\n",
            b"5;a=\"b\n",
            b"\n",
        ];
        for &c in cases {
            assert_eq!(
                decode_all(c).unwrap_err(),
                ProtoError::BadChunkLineEnding,
                "{:?}",
                String::from_utf8_lossy(c)
            );
        }
    }

    #[test]
    fn chunk_extensions() {
        let good: &[&[u8]] = &[
            b"5;a\r\nhello\r\n0\r\n\r\n",
            b"5;a=b\r\nhello\r\n0\r\n\r\n",
            b"5 ; a = b ;c\r\nhello\r\n0\r\n\r\n",
            b"5;a=\"q \\\"x\\\" ;\\\\\"\r\nhello\r\n0;last=1\r\n\r\n",
            b"5;a=\"\"\r\nhello\r\n0\r\n\r\n",
        ];
        for &g in good {
            assert_eq!(
                decode_all(g).unwrap(),
                b"hello",
                "{:?}",
                String::from_utf8_lossy(g)
            );
        }
        let bad: &[&[u8]] = &[
            b"5;\r\nhello\r\n0\r\n\r\n",
            b"5;=b\r\nhello\r\n0\r\n\r\n",
            b"5;a=\r\nhello\r\n0\r\n\r\n",
            b"5;a=\"b\r\nhello\r\n0\r\n\r\n",
            b"5;a b\r\nhello\r\n0\r\n\r\n",
            b"5;a=b c\r\nhello\r\n0\r\n\r\n",
            b"5;a=\"b\"c\r\nhello\r\n0\r\n\r\n",
            b"5;a@b\r\nhello\r\n0\r\n\r\n",
            b"5;a \r\nhello\r\n0\r\n\r\n",
            b"5 erfrferferf\r\nhello\r\n0\r\n\r\n",
            b"5;a=\"\x01\"\r\nhello\r\n0\r\n\r\n",
        ];
        for &b in bad {
            assert_eq!(
                decode_all(b).unwrap_err(),
                ProtoError::InvalidChunkSize,
                "{:?}",
                String::from_utf8_lossy(b)
            );
        }
    }

    #[test]
    fn chunk_extension_limit() {
        let limits = Limits {
            max_chunk_ext_bytes: 8,
            ..Limits::default()
        };
        // ";abcdefg" is 8 bytes: at the limit.
        assert!(decode_split(b"1;abcdefg\r\nx\r\n0\r\n\r\n", 1, &limits).is_ok());
        assert_eq!(
            decode_split(b"1;abcdefgh\r\nx\r\n0\r\n\r\n", 1, &limits).unwrap_err(),
            ProtoError::ChunkExtensionTooLong
        );
        // The count is per chunk, not per body.
        assert!(decode_split(b"1;abcdefg\r\nx\r\n1;abcdefg\r\ny\r\n0\r\n\r\n", 2, &limits).is_ok());
    }

    #[test]
    fn trailers_are_parsed() {
        let input = b"5\r\nhello\r\n0\r\nVary: *\r\nContent-Type: text/plain\r\n\r\n";
        for step in [1, 2, 5, input.len()] {
            let (body, dec) = decode_split(input, step, &Limits::default()).unwrap();
            assert_eq!(body, b"hello");
            assert_eq!(
                dec.trailers(),
                &[
                    ("Vary".to_string(), b"*".to_vec()),
                    ("Content-Type".to_string(), b"text/plain".to_vec())
                ]
            );
        }
    }

    #[test]
    fn malformed_trailers() {
        let cases: &[&[u8]] = &[
            b"0\r\nBad Name: x\r\n\r\n",
            b"0\r\nName : x\r\n\r\n",
            b"0\r\n: x\r\n\r\n",
            b"0\r\nNo-Colon\r\n\r\n",
            b"0\r\n folded: x\r\n\r\n",
            b"0\r\nA: b\r\n folded\r\n\r\n",
            b"0\r\nA: b\x00c\r\n\r\n",
            b"0\r\nA: b\x7f\r\n\r\n",
        ];
        for &c in cases {
            assert_eq!(
                decode_all(c).unwrap_err(),
                ProtoError::MalformedTrailer,
                "{:?}",
                String::from_utf8_lossy(c)
            );
        }
    }

    #[test]
    fn trailer_limits() {
        let limits = Limits {
            max_trailer_bytes: 16,
            max_trailer_fields: 2,
            ..Limits::default()
        };
        // "A: 123456789\r\n" (14) + final CRLF = 16 bytes: at the limit.
        assert!(decode_split(b"0\r\nA: 123456789\r\n\r\n", 1, &limits).is_ok());
        assert_eq!(
            decode_split(b"0\r\nA: 1234567890\r\n\r\n", 1, &limits).unwrap_err(),
            ProtoError::TrailersTooLarge
        );
        assert!(decode_split(b"0\r\nA: 1\r\nB: 2\r\n\r\n", 3, &limits).is_ok());
        assert_eq!(
            decode_split(b"0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 3, &limits).unwrap_err(),
            ProtoError::TrailersTooLarge
        );
        // An endless trailer line fails at the limit, not at the end.
        let mut dec = ChunkedDecoder::new(&limits);
        let mut endless = b"0\r\nX: ".to_vec();
        endless.extend(std::iter::repeat_n(b'a', 1000));
        assert_eq!(
            dec.decode(&endless).unwrap_err(),
            ProtoError::TrailersTooLarge
        );
        assert_eq!(ProtoError::TrailersTooLarge.status(), 431);
    }

    #[test]
    fn needs_more_input() {
        let mut dec = ChunkedDecoder::new(&Limits::default());
        assert_eq!(
            dec.decode(b"").unwrap(),
            Decoded {
                consumed: 0,
                data: 0..0,
                done: false
            }
        );
        // A partial size line is consumed into the state.
        assert_eq!(
            dec.decode(b"1").unwrap(),
            Decoded {
                consumed: 1,
                data: 0..0,
                done: false
            }
        );
        assert_eq!(
            dec.decode(b"0\r").unwrap(),
            Decoded {
                consumed: 2,
                data: 0..0,
                done: false
            }
        );
        let d = dec.decode(b"\n0123456789abcdef").unwrap();
        assert_eq!((d.data, d.consumed), (1..17, 17));
        assert!(!dec.is_done());
        assert!(dec.trailers().is_empty());
    }
}
