//! Streaming JSON validator that hands out one top-level string member.
//!
//! A byte-level state machine (RFC 8259 grammar) with an explicit container
//! stack, so input may be split anywhere and memory is bounded by the depth
//! limit. String contents are scanned with `memchr2` for `"`/`\`; unescaped
//! runs of the field go to the sink as borrowed slices, escapes as tiny owned
//! pieces. Keys are compared against the wanted name incrementally, so no key
//! is ever buffered either.
//!
//! Not checked: UTF-8 validity of string contents (the base64 decoder rejects
//! non-alphabet bytes anyway). Checked: everything else in the grammar,
//! including control characters in strings, number syntax, lone surrogates
//! in `\u` escapes and trailing garbage after the top-level object.

use memchr::memchr2;

use crate::{ExtractError, FieldExtractor, Sink, Stage};

/// Default maximum nesting depth of objects/arrays.
const DEFAULT_JSON_MAX_DEPTH: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Str {
    /// A key of the top-level object: compared against the wanted name.
    TopKey,
    /// A key of a nested object: skipped, then `:`.
    Key,
    /// A string value we skip.
    Skip,
    /// The wanted field's value: its contents go to the sink.
    Field,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    /// After `-`: a digit must follow.
    Minus,
    /// A leading `0`: no more integer digits.
    Zero,
    Int,
    /// After `.`: a digit must follow.
    Dot,
    Frac,
    /// After `e`/`E`: a sign or digit must follow.
    Exp,
    /// After the exponent sign: a digit must follow.
    ExpSign,
    ExpDigits,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    /// Before the top-level object.
    Start,
    /// A value is expected.
    Value,
    /// After `[`: a value or `]`.
    ArrFirst,
    /// After `{`: a key or `}`.
    ObjFirst,
    /// After `,` in an object: a key.
    ObjKey,
    /// After a key: `:`.
    Colon,
    /// After a value: `,`, a closer, or (at top level) the end.
    AfterValue,
    Str(Str),
    Esc(Str),
    /// Inside `\uXXXX`: kind, digits read, value so far, whether this is the
    /// low half of a surrogate pair.
    Uni(Str, u8, u16, bool),
    /// After a high surrogate escape: `\` of the low half expected.
    LowBackslash(Str),
    /// After a high surrogate escape and `\`: `u` expected.
    LowU(Str),
    Num(Num),
    /// Inside `true`/`false`/`null`: the literal and bytes matched.
    Lit(&'static [u8], u8),
    /// After the top-level object: only whitespace.
    End,
}

/// Streams a JSON document whose top level is an object and hands out the
/// contents of its string member with the given name, escapes decoded.
/// See the crate docs for the contract.
///
/// ```
/// use wirespeed_extract::{FieldExtractor, JsonFieldExtractor};
/// let doc = br#"{"name":"a.bin","data":"QUJD\r\nREVG\/","n":[1,{"x":null}]}"#;
/// let mut x = JsonFieldExtractor::new("data");
/// let mut text = Vec::new();
/// x.feed(doc, &mut |piece: &[u8]| { text.extend_from_slice(piece); Ok(()) }).unwrap();
/// x.finish().unwrap();
/// assert_eq!(text, b"QUJD\r\nREVG/");
/// ```
pub struct JsonFieldExtractor {
    st: St,
    base: u64,
    /// Open containers: `true` for an object, `false` for an array.
    stack: Vec<bool>,
    max_depth: usize,
    name: Vec<u8>,
    /// Key comparison: bytes of `name` matched so far, or `None` once the
    /// key being read has diverged from `name`.
    key_matched: Option<usize>,
    /// The key just read is the wanted name: its value must be the field.
    value_is_field: bool,
    found: bool,
    /// The field's string has been closed.
    done: bool,
    high_surrogate: u16,
    poisoned: bool,
    stage: Stage,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// True if any byte is a control character, which JSON strings must escape.
/// Written as a branch-free fold so it vectorizes: it runs over every byte
/// of the field.
fn has_control(s: &[u8]) -> bool {
    s.iter().fold(false, |acc, &b| acc | (b < 0x20))
}

/// The byte a one-character escape (`\n`, `\"`, ...) stands for.
fn simple_escape(e: u8) -> Option<u8> {
    Some(match e {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0C,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

/// Decodes `uXXXX` (the 5 bytes after `\`) when it is a complete escape of
/// a non-surrogate code point; `None` leaves it to the byte-wise states,
/// which also produce the precise errors.
fn bmp_escape(u: &[u8]) -> Option<char> {
    let (&b'u', hex) = u.split_first()? else {
        return None;
    };
    let mut v = 0u32;
    for &h in hex {
        v = (v << 4) | (h as char).to_digit(16)?;
    }
    char::from_u32(v) // None for surrogates
}

impl JsonFieldExtractor {
    /// `name` is the (unescaped) member name in the top-level object.
    pub fn new(name: &str) -> Self {
        JsonFieldExtractor {
            st: St::Start,
            base: 0,
            stack: Vec::new(),
            max_depth: DEFAULT_JSON_MAX_DEPTH,
            name: name.as_bytes().to_vec(),
            key_matched: None,
            value_is_field: false,
            found: false,
            done: false,
            high_surrogate: 0,
            poisoned: false,
            stage: Stage::new(),
        }
    }

    /// Sets the maximum nesting depth of objects/arrays (default 128,
    /// counting the top-level object).
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// Whether the field has been found (its text may still be streaming).
    pub fn found(&self) -> bool {
        self.found
    }

    fn err(&self, at: usize, reason: &'static str) -> ExtractError {
        ExtractError::Json {
            offset: self.base + at as u64,
            reason,
        }
    }

    fn name_string(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }

    fn push(&mut self, object: bool, at: usize) -> Result<(), ExtractError> {
        if self.stack.len() >= self.max_depth {
            return Err(ExtractError::LimitExceeded {
                offset: self.base + at as u64,
                what: "JSON nesting depth",
                limit: self.max_depth,
            });
        }
        self.stack.push(object);
        Ok(())
    }

    /// Delivers a piece of string content according to the string's kind.
    fn piece(&mut self, kind: Str, bytes: &[u8], sink: &mut Sink<'_>) -> Result<(), ExtractError> {
        match kind {
            Str::Field => self.stage.push(bytes, sink),
            Str::TopKey => {
                if let Some(m) = self.key_matched {
                    self.key_matched = self
                        .name
                        .get(m..)
                        .filter(|rest| rest.starts_with(bytes))
                        .map(|_| m + bytes.len());
                }
                Ok(())
            }
            Str::Key | Str::Skip => Ok(()),
        }
    }

    fn char_piece(&mut self, kind: Str, c: char, sink: &mut Sink<'_>) -> Result<(), ExtractError> {
        let mut buf = [0u8; 4];
        let s = c.encode_utf8(&mut buf);
        self.piece(kind, s.as_bytes(), sink)
    }

    /// A string closed: decide what comes next.
    fn end_string(&mut self, kind: Str) {
        match kind {
            Str::TopKey => {
                self.value_is_field = self.key_matched == Some(self.name.len());
                self.st = St::Colon;
            }
            Str::Field => {
                self.done = true;
                self.st = St::AfterValue;
            }
            Str::Key => self.st = St::Colon,
            Str::Skip => self.st = St::AfterValue,
        }
    }

    fn run(&mut self, input: &[u8], sink: &mut Sink<'_>) -> Result<(), ExtractError> {
        let mut pos = 0;
        while pos < input.len() {
            let at = pos;
            let b = input[at];
            match self.st {
                St::Str(kind) => {
                    // Hot path: string contents up to the next `"` or `\`.
                    let rest = &input[at..];
                    // Back-to-back escapes (`\r\n`) skip the memchr2 call.
                    let i = if b == b'\\' {
                        0
                    } else {
                        memchr2(b'"', b'\\', rest).unwrap_or(rest.len())
                    };
                    let run = &rest[..i];
                    if has_control(run) {
                        let c = run.iter().position(|&b| b < 0x20).unwrap_or(0);
                        return Err(self.err(at + c, "unescaped control character in string"));
                    }
                    if !run.is_empty() {
                        self.piece(kind, run, sink)?;
                    }
                    pos = at + i;
                    match rest.get(i) {
                        None => {}
                        Some(b'"') => {
                            pos += 1;
                            self.end_string(kind);
                        }
                        Some(_) => {
                            // A complete simple or non-surrogate `\u` escape is
                            // decoded right here (one per line in base64 with
                            // escaped line breaks); anything else, including an
                            // escape split across inputs, goes through the
                            // byte-wise states below.
                            if let Some(c) = rest.get(i + 1).and_then(|&e| simple_escape(e)) {
                                pos += 2;
                                self.piece(kind, &[c], sink)?;
                            } else if let Some(c) = rest.get(i + 1..i + 6).and_then(bmp_escape) {
                                pos += 6;
                                self.char_piece(kind, c, sink)?;
                            } else {
                                pos += 1;
                                self.st = St::Esc(kind);
                            }
                        }
                    }
                }
                St::Esc(kind) => {
                    pos += 1;
                    let c = match b {
                        b'u' => {
                            self.st = St::Uni(kind, 0, 0, false);
                            continue;
                        }
                        _ => simple_escape(b)
                            .ok_or_else(|| self.err(at, "invalid escape in string"))?,
                    };
                    self.st = St::Str(kind);
                    self.piece(kind, &[c], sink)?;
                }
                St::Uni(kind, n, v, low) => {
                    pos += 1;
                    let d = (b as char)
                        .to_digit(16)
                        .ok_or_else(|| self.err(at, "invalid \\u escape"))?;
                    let v = (v << 4) | d as u16;
                    if n < 3 {
                        self.st = St::Uni(kind, n + 1, v, low);
                        continue;
                    }
                    let c = match (low, v) {
                        (false, 0xD800..=0xDBFF) => {
                            self.high_surrogate = v;
                            self.st = St::LowBackslash(kind);
                            continue;
                        }
                        (false, 0xDC00..=0xDFFF) => {
                            return Err(self.err(at, "lone low surrogate in \\u escape"))
                        }
                        (false, _) => char::from_u32(v as u32),
                        (true, 0xDC00..=0xDFFF) => char::from_u32(
                            0x10000
                                + (((self.high_surrogate as u32) - 0xD800) << 10)
                                + ((v as u32) - 0xDC00),
                        ),
                        (true, _) => {
                            return Err(self.err(at, "high surrogate not followed by a low one"))
                        }
                    };
                    let c = c.ok_or_else(|| self.err(at, "invalid \\u escape"))?;
                    self.st = St::Str(kind);
                    self.char_piece(kind, c, sink)?;
                }
                St::LowBackslash(kind) => {
                    pos += 1;
                    if b != b'\\' {
                        return Err(self.err(at, "high surrogate not followed by a low one"));
                    }
                    self.st = St::LowU(kind);
                }
                St::LowU(kind) => {
                    pos += 1;
                    if b != b'u' {
                        return Err(self.err(at, "high surrogate not followed by a low one"));
                    }
                    self.st = St::Uni(kind, 0, 0, true);
                }
                // Whitespace between tokens (numbers and literals handle it themselves).
                _ if is_ws(b) && !matches!(self.st, St::Num(_) | St::Lit(..)) => {
                    pos += 1;
                }
                St::Start => {
                    pos += 1;
                    if b != b'{' {
                        return Err(self.err(at, "top level must be an object"));
                    }
                    self.push(true, at)?;
                    self.st = St::ObjFirst;
                }
                St::ObjFirst | St::ObjKey => {
                    pos += 1;
                    match b {
                        b'"' => {
                            if self.stack.len() == 1 {
                                self.key_matched = Some(0);
                                self.st = St::Str(Str::TopKey);
                            } else {
                                self.st = St::Str(Str::Key);
                            }
                        }
                        b'}' if self.st == St::ObjFirst => self.close(true, at)?,
                        _ => return Err(self.err(at, "expected a string key")),
                    }
                }
                St::Colon => {
                    pos += 1;
                    if b != b':' {
                        return Err(self.err(at, "expected ':' after key"));
                    }
                    self.st = St::Value;
                }
                St::ArrFirst if b == b']' => {
                    pos += 1;
                    self.close(false, at)?;
                }
                St::Value | St::ArrFirst => {
                    if std::mem::take(&mut self.value_is_field) {
                        if b != b'"' {
                            return Err(ExtractError::NotAString {
                                offset: self.base + at as u64,
                                name: self.name_string(),
                            });
                        }
                        if self.found {
                            return Err(ExtractError::DuplicateField {
                                offset: self.base + at as u64,
                                name: self.name_string(),
                            });
                        }
                        self.found = true;
                        pos += 1;
                        self.st = St::Str(Str::Field);
                        continue;
                    }
                    pos += 1;
                    self.st = match b {
                        b'"' => St::Str(Str::Skip),
                        b'{' => {
                            self.push(true, at)?;
                            St::ObjFirst
                        }
                        b'[' => {
                            self.push(false, at)?;
                            St::ArrFirst
                        }
                        b'-' => St::Num(Num::Minus),
                        b'0' => St::Num(Num::Zero),
                        b'1'..=b'9' => St::Num(Num::Int),
                        b't' => St::Lit(b"true", 1),
                        b'f' => St::Lit(b"false", 1),
                        b'n' => St::Lit(b"null", 1),
                        _ => return Err(self.err(at, "expected a value")),
                    };
                }
                St::AfterValue => {
                    pos += 1;
                    match (b, self.stack.last()) {
                        (b',', Some(true)) => self.st = St::ObjKey,
                        (b',', Some(false)) => self.st = St::Value,
                        (b'}', Some(true)) => self.close(true, at)?,
                        (b']', Some(false)) => self.close(false, at)?,
                        _ => return Err(self.err(at, "expected ',' or a closing bracket")),
                    }
                }
                St::Num(n) => {
                    let digit = b.is_ascii_digit();
                    let next = match (n, b) {
                        (Num::Minus, b'0') => Some(Num::Zero),
                        (Num::Minus, _) if digit => Some(Num::Int),
                        (Num::Int, _) if digit => Some(Num::Int),
                        (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
                        (Num::Dot | Num::Frac, _) if digit => Some(Num::Frac),
                        (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::Exp),
                        (Num::Exp, b'+' | b'-') => Some(Num::ExpSign),
                        (Num::Exp | Num::ExpSign | Num::ExpDigits, _) if digit => {
                            Some(Num::ExpDigits)
                        }
                        _ => None,
                    };
                    match next {
                        Some(n) => {
                            pos += 1;
                            self.st = St::Num(n);
                        }
                        // The number ended; `b` is reprocessed as what follows it.
                        None if matches!(n, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits) => {
                            self.st = St::AfterValue;
                        }
                        None => return Err(self.err(at, "malformed number")),
                    }
                }
                St::Lit(lit, i) => {
                    pos += 1;
                    if lit.get(i as usize) != Some(&b) {
                        return Err(self.err(at, "invalid literal"));
                    }
                    self.st = if i as usize + 1 == lit.len() {
                        St::AfterValue
                    } else {
                        St::Lit(lit, i + 1)
                    };
                }
                St::End => return Err(self.err(at, "trailing data after the top-level object")),
            }
        }
        Ok(())
    }

    fn close(&mut self, object: bool, at: usize) -> Result<(), ExtractError> {
        if self.stack.pop() != Some(object) {
            return Err(self.err(at, "mismatched closing bracket"));
        }
        self.st = if self.stack.is_empty() {
            St::End
        } else {
            St::AfterValue
        };
        Ok(())
    }
}

impl FieldExtractor for JsonFieldExtractor {
    fn feed(&mut self, input: &[u8], sink: &mut Sink<'_>) -> Result<(), ExtractError> {
        if self.poisoned {
            return Err(ExtractError::Poisoned);
        }
        let r = self.run(input, sink).and_then(|()| self.stage.flush(sink));
        self.poisoned = r.is_err();
        self.base += input.len() as u64;
        r
    }

    fn finish(&mut self) -> Result<(), ExtractError> {
        if self.poisoned {
            return Err(ExtractError::Poisoned);
        }
        if self.st != St::End {
            let context = match self.st {
                St::Start => "empty document",
                St::Str(_) | St::Esc(_) | St::Uni(..) | St::LowBackslash(_) | St::LowU(_) => {
                    "inside a string"
                }
                _ => "unclosed object or array",
            };
            return Err(ExtractError::UnexpectedEof {
                offset: self.base,
                context,
            });
        }
        if !(self.found && self.done) {
            return Err(ExtractError::FieldNotFound {
                name: self.name_string(),
            });
        }
        Ok(())
    }
}
