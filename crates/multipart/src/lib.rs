//! Sans-IO streaming parser for `multipart/form-data` (RFC 7578) and
//! `multipart/related` (RFC 2387), with RFC 2046 §5.1.1 syntax.
//!
//! Seed 002 is why this exists: form uploads buffered whole in memory were
//! many times slower than a streaming reader (its figures, and this
//! parser's own, in `bench/RESULTS.md`). Here part bodies are never copied: every
//! [`Event::Data`] is a sub-slice of the caller's input, and the delimiter
//! search is one prebuilt `memchr::memmem::Finder` for `CRLF--boundary`, so
//! nothing is allocated per input chunk.
//!
//! # Calling convention
//!
//! ```
//! use wirespeed_multipart::{Event, Limits, Parser};
//!
//! let body = b"--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhello\r\n--xyz--\r\n";
//! let mut p = Parser::new(b"xyz", Limits::default()).unwrap();
//! let mut buf = &body[..]; // the caller's buffer: unconsumed tail + new input
//! loop {
//!     let (ev, used) = p.feed(buf).unwrap();
//!     buf = &buf[used..];
//!     match ev {
//!         Event::PartStart(h) => assert_eq!(h.name.as_deref(), Some("a")),
//!         Event::Data(d) => assert_eq!(d, b"hello"),
//!         Event::PartEnd => {}
//!         Event::End => break,
//!         Event::NeedMore => { /* keep `buf`, read more after it, call again */ break }
//!     }
//! }
//! p.finish().unwrap();
//! ```
//!
//! On [`Event::NeedMore`] the caller keeps the unconsumed bytes (at most
//! [`Parser::max_retained`]: the header limit, or the delimiter length plus
//! [`MAX_PADDING`] + 2) and presents them again followed by more input.
//!
//! # Decisions
//!
//! * **LF-only line endings are rejected.** RFC 2046 requires CRLF, the
//!   python-multipart corpus we test against is CRLF-only, and accepting a
//!   bare `\n--boundary` as a delimiter would make more byte sequences inside
//!   binary files significant (and cost a second search). So: a bare LF in a
//!   part header block is [`MultipartError::BareLf`]; a first delimiter line
//!   ending in bare LF (an LF-only body) is `BareLf` too, rather than being
//!   skipped as preamble; inside part data, `\n--boundary` (and even
//!   `\r\n--boundary\n`) is plain data.
//! * `CRLF--boundary` followed by anything but `--` or OWS CRLF is data, as in
//!   python-multipart (RFC 2046 forbids it in data, so a strict parser could
//!   reject; being lenient loses nothing here).
//! * The CRLF before a boundary belongs to the delimiter, never to the data.
//! * Preamble and epilogue are ignored; a body with only the close delimiter
//!   is an empty form. Input ending before `--boundary--` fails at
//!   [`Parser::finish`].
//! * `Content-Transfer-Encoding` is not applied (RFC 7578 §4.7 deprecates it);
//!   it is visible in [`PartHeaders::raw`].

mod error;
mod headers;
mod params;
mod parser;

pub use error::MultipartError;
pub use headers::PartHeaders;
pub use params::{boundary_from_content_type, MediaType};
pub use parser::{Event, Limits, Parser, MAX_PADDING};

/// One whole part, as collected by [`parse_all`] / [`parse_chunks`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The part's headers.
    pub headers: PartHeaders,
    /// The part's body (copied: this is the convenience API).
    pub data: Vec<u8>,
}

/// Parses a whole in-memory body into parts (tests, small bodies). The
/// streaming [`Parser`] is the API for real traffic.
pub fn parse_all(
    boundary: &[u8],
    limits: Limits,
    body: &[u8],
) -> Result<Vec<Part>, MultipartError> {
    parse_chunks(boundary, limits, [body])
}

/// Parses a body delivered as `chunks`, driving [`Parser`] the way a server
/// does: the unconsumed tail is kept and the next chunk appended to it.
pub fn parse_chunks<'c>(
    boundary: &[u8],
    limits: Limits,
    chunks: impl IntoIterator<Item = &'c [u8]>,
) -> Result<Vec<Part>, MultipartError> {
    let mut p = Parser::new(boundary, limits)?;
    let mut parts = Vec::new();
    let mut cur: Option<Part> = None;
    let mut buf: Vec<u8> = Vec::new();
    let mut done = false;
    for chunk in chunks {
        if done {
            break; // epilogue
        }
        buf.extend_from_slice(chunk);
        let mut off = 0;
        loop {
            let (ev, used) = p.feed(&buf[off..])?;
            off += used;
            match ev {
                Event::PartStart(headers) => {
                    cur = Some(Part {
                        headers,
                        data: Vec::new(),
                    })
                }
                Event::Data(d) => {
                    if let Some(c) = cur.as_mut() {
                        c.data.extend_from_slice(d);
                    }
                }
                Event::PartEnd => parts.extend(cur.take()),
                Event::End => {
                    done = true;
                    break;
                }
                Event::NeedMore => break,
            }
        }
        buf.drain(..off);
    }
    p.finish()?;
    Ok(parts)
}
