//! [`XmlFieldExtractor`]: the text of the first element with a given local
//! name, streamed out of the tokenizer's events.

use super::chars::local_name;
use super::tokenizer::{Ev, Tokenizer};
use crate::{ExtractError, FieldExtractor, Sink, Stage, DEFAULT_MAX_DEPTH, DEFAULT_MAX_NAME_LEN};

/// Streams an XML document and hands out the text content of the first
/// element whose local name (the part after any `prefix:`) is the given
/// name. See the crate docs for the contract.
///
/// ```
/// use wirespeed_extract::{FieldExtractor, XmlFieldExtractor};
/// let doc = b"<s:Envelope xmlns:s='urn:s'><s:Body><n:data xmlns:n='urn:n'>QUJD&#13;\nREVG</n:data></s:Body></s:Envelope>";
/// let mut x = XmlFieldExtractor::new("data");
/// let mut text = Vec::new();
/// x.feed(doc, &mut |piece: &[u8]| { text.extend_from_slice(piece); Ok(()) }).unwrap();
/// x.finish().unwrap();
/// assert_eq!(text, b"QUJD\r\nREVG");
/// ```
pub struct XmlFieldExtractor {
    tok: Tokenizer,
    target: Vec<u8>,
    state: Target,
    poisoned: bool,
    stage: Stage,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Searching,
    /// Inside the field element, which sits at this depth.
    Inside(usize),
    Done,
}

impl XmlFieldExtractor {
    /// `local_name` is matched against each element's name without its
    /// prefix, so `data` finds `<data>`, `<ns1:data>`, `<x:data>`.
    pub fn new(local_name: &str) -> Self {
        XmlFieldExtractor {
            tok: Tokenizer::new(DEFAULT_MAX_DEPTH, DEFAULT_MAX_NAME_LEN),
            target: local_name.as_bytes().to_vec(),
            state: Target::Searching,
            poisoned: false,
            stage: Stage::new(),
        }
    }

    /// Sets the maximum element nesting depth (default [`DEFAULT_MAX_DEPTH`]).
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.tok.max_depth = max_depth;
        self
    }

    /// Sets the maximum name length (default [`DEFAULT_MAX_NAME_LEN`]).
    pub fn with_max_name_len(mut self, max_name_len: usize) -> Self {
        self.tok.max_name_len = max_name_len;
        self
    }

    /// Whether the field element has been found (its text may still be
    /// streaming).
    pub fn found(&self) -> bool {
        self.state != Target::Searching
    }

    fn run(&mut self, input: &[u8], sink: &mut Sink<'_>) -> Result<(), ExtractError> {
        let mut pos = 0;
        while let Some(ev) = self.tok.next(input, &mut pos)? {
            match (ev, self.state) {
                (Ev::Text(t), Target::Inside(_)) => self.stage.push(t, sink)?,
                (Ev::Small(buf, len), Target::Inside(_)) => {
                    self.stage.push(&buf[..len as usize], sink)?
                }
                (Ev::Start { .. }, Target::Inside(_)) => {
                    return Err(ExtractError::NestedElement {
                        offset: self.tok.offset(pos),
                        name: String::from_utf8_lossy(self.tok.name()).into_owned(),
                    })
                }
                (Ev::Start { empty }, Target::Searching)
                    if local_name(self.tok.name()) == self.target =>
                {
                    self.state = if empty {
                        Target::Done
                    } else {
                        Target::Inside(self.tok.depth())
                    };
                }
                (Ev::End, Target::Inside(d)) if self.tok.depth() < d => self.state = Target::Done,
                _ => {}
            }
        }
        Ok(())
    }
}

impl FieldExtractor for XmlFieldExtractor {
    fn feed(&mut self, input: &[u8], sink: &mut Sink<'_>) -> Result<(), ExtractError> {
        if self.poisoned {
            return Err(ExtractError::Poisoned);
        }
        let r = self.run(input, sink).and_then(|()| self.stage.flush(sink));
        self.poisoned = r.is_err();
        self.tok.advance_base(input.len());
        r
    }

    fn finish(&mut self) -> Result<(), ExtractError> {
        if self.poisoned {
            return Err(ExtractError::Poisoned);
        }
        self.tok.finish()?;
        if self.state != Target::Done {
            return Err(ExtractError::FieldNotFound {
                name: String::from_utf8_lossy(&self.target).into_owned(),
            });
        }
        Ok(())
    }
}
