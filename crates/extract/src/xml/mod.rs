//! Streaming XML: the tokenizer (`tokenizer.rs`) and the field extractor
//! built on it (`extract.rs`; the XOP lookup in `../xop.rs` uses the
//! tokenizer too).
//!
//! Why not quick-xml: its `Reader` reports each text node as one event, so
//! the text of a 256 MiB base64 element would have to be buffered whole
//! before we saw any of it (and its buffered reader grows to fit). Our rule is
//! bounded memory whatever the field size, so this is a small hand-written
//! tokenizer for the subset SOAP bodies use: elements, attributes, character
//! data, character/predefined entity references, CDATA, comments, PIs and the
//! XML declaration. DTDs are refused outright (no entity expansion, no
//! external entities), which is also what SOAP 1.1/1.2 require.
//!
//! The tokenizer is a byte-level state machine that never needs more than the
//! current byte, except for bounded carried-over state (the current tag name,
//! a reference up to 16 bytes, the open-element stack), so input may be split
//! anywhere. Character data is scanned with `memchr2` for `<`/`&` and handed
//! out as borrowed slices: that is the hot path and it runs at memchr speed.
//!
//! Deliberately not checked (cost or scope; none of them can make us emit
//! text that a conforming parser would not): UTF-8 validity of character data
//! (the base64 decoder rejects any non-alphabet byte anyway), `]]>` in
//! character data, duplicate attributes, unbound namespace prefixes, the
//! contents of the XML declaration. Literal CR/LF in text are passed through
//! as-is (no end-of-line normalization): base64 decoders skip them anyway.

mod chars;
mod extract;
mod tokenizer;

pub(crate) use chars::local_name;
pub use extract::XmlFieldExtractor;
pub(crate) use tokenizer::{Ev, Tokenizer};
