//! Sans-IO streaming extractors that pull the *text* of one field (in
//! practice: base64) out of a request body as it streams, so the service can
//! pipe it through the streaming base64 decoder straight to a file.
//!
//! * [`XmlFieldExtractor`]: the first element with a given local name (any
//!   namespace prefix) in an XML/SOAP document.
//! * [`JsonFieldExtractor`]: a top-level string member of a JSON object.
//! * [`find_xop_include`] / [`normalize_content_id`]: MTOM/XOP root part
//!   lookup (the root part is small, so that one takes the whole part).
//!
//! Both extractors implement [`FieldExtractor`]: feed arbitrary slices of the
//! body in order, receive the field's text through a sink as borrowed slices
//! of the input wherever possible (decoded references/escapes arrive as tiny
//! owned pieces), then call [`FieldExtractor::finish`] at end of body. The
//! field's text is never buffered: memory is bounded by small fixed limits
//! (name length, nesting depth), whatever the size of the field or document.
//! Every call consumes the whole input slice; a token split across two slices
//! (a tag name, a `&#13;` reference, a `\u000d` escape) is carried over in
//! bounded internal state, so callers never have to keep a tail around.
//!
//! The whole document is checked for well-formedness, including everything
//! after the field: the service must commit the decoded file only when
//! `finish` returns `Ok`.

mod json;
mod xml;
mod xop;

pub use json::JsonFieldExtractor;
pub use xml::XmlFieldExtractor;
pub use xop::{find_xop_include, normalize_content_id, XOP_INCLUDE_NS};

/// Default maximum element/object nesting depth.
pub const DEFAULT_MAX_DEPTH: usize = 256;
/// Default maximum length of an XML name (element or attribute, with prefix).
pub const DEFAULT_MAX_NAME_LEN: usize = 1024;

/// The sink that receives the field's text, piece by piece, in order.
///
/// Returning an error (typically [`ExtractError::Sink`] wrapping an I/O
/// error) aborts extraction; the extractor then refuses further input.
pub type Sink<'s> = dyn FnMut(&[u8]) -> Result<(), ExtractError> + 's;

/// A streaming, sans-IO extractor of one field's text.
///
/// The trait is object safe so the service can pick XML or JSON at run time
/// (`Box<dyn FieldExtractor>`); the sink is a `dyn` call per *piece*, i.e.
/// per input slice or per line at worst, never per byte.
pub trait FieldExtractor {
    /// Consumes all of `input` (the next bytes of the document) and calls
    /// `sink` with every piece of the field's text found in it, in order.
    ///
    /// After an error the extractor is poisoned: further calls return
    /// [`ExtractError::Poisoned`].
    fn feed(&mut self, input: &[u8], sink: &mut Sink<'_>) -> Result<(), ExtractError>;

    /// Signals the end of the document. `Ok` means: the field was found, all
    /// of its text has been delivered, and the whole document is complete
    /// and well-formed.
    fn finish(&mut self) -> Result<(), ExtractError>;
}

/// Everything that can go wrong. Offsets are absolute byte offsets into the
/// document (counting across all `feed` calls).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    #[error("malformed XML at byte {offset}: {reason}")]
    Xml { offset: u64, reason: &'static str },
    #[error(
        "DOCTYPE at byte {offset} refused: DTDs (and their entity expansion) are not accepted"
    )]
    DoctypeRefused { offset: u64 },
    #[error("mismatched end tag at byte {offset}: expected </{expected}>, found </{found}>")]
    MismatchedTag {
        offset: u64,
        expected: String,
        found: String,
    },
    #[error("unknown entity &{name}; at byte {offset}")]
    UnknownEntity { offset: u64, name: String },
    #[error("invalid character reference &{reference}; at byte {offset}")]
    BadCharRef { offset: u64, reference: String },
    #[error(
        "element <{name}> at byte {offset} inside the field: only text (base64) is expected there"
    )]
    NestedElement { offset: u64, name: String },
    #[error("malformed JSON at byte {offset}: {reason}")]
    Json { offset: u64, reason: &'static str },
    #[error("field {name:?} at byte {offset} is not a string")]
    NotAString { offset: u64, name: String },
    #[error("field {name:?} appears a second time at byte {offset}")]
    DuplicateField { offset: u64, name: String },
    #[error("field {name:?} not found")]
    FieldNotFound { name: String },
    #[error("document ended early at byte {offset} ({context})")]
    UnexpectedEof { offset: u64, context: &'static str },
    #[error("{what} exceeds the limit of {limit} at byte {offset}")]
    LimitExceeded {
        offset: u64,
        what: &'static str,
        limit: usize,
    },
    #[error("XOP: {0}")]
    Xop(String),
    #[error("sink failed: {0}")]
    Sink(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("extractor already failed; no further input accepted")]
    Poisoned,
}

impl ExtractError {
    /// Wraps a sink-side error (e.g. an `io::Error` from writing the file).
    pub fn sink(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ExtractError::Sink(e.into())
    }
}

/// Coalesces small pieces before they reach the sink.
///
/// Base64 with line breaks written as references/escapes (`&#13;`, `\r\n`)
/// alternates a 76-byte run with 1-byte decoded pieces. Calling the sink for
/// each of those costs more than copying them: so runs up to
/// [`Stage::COPY_MAX`] bytes and decoded pieces are copied into a fixed
/// 4 KiB buffer and handed out in one call, while long runs (the common case
/// for unbroken text and literal CRLF) still go out zero-copy, borrowed from
/// the input. Order is preserved: the stage is flushed before any borrowed
/// run and at the end of every `feed`.
pub(crate) struct Stage {
    buf: Vec<u8>,
}

impl Stage {
    const CAP: usize = 4096;
    const COPY_MAX: usize = 256;

    pub(crate) fn new() -> Self {
        Stage {
            buf: Vec::with_capacity(Self::CAP),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, bytes: &[u8], sink: &mut Sink<'_>) -> Result<(), ExtractError> {
        if bytes.len() > Self::COPY_MAX {
            self.flush(sink)?;
            return sink(bytes);
        }
        if self.buf.len() + bytes.len() > Self::CAP {
            self.flush(sink)?;
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    pub(crate) fn flush(&mut self, sink: &mut Sink<'_>) -> Result<(), ExtractError> {
        if !self.buf.is_empty() {
            sink(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}
