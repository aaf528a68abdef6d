//! The byte-level XML state machine (see the parent module for the subset
//! it accepts): events out of arbitrarily split input, bounded carried state.

use memchr::{memchr, memchr2, memchr3};

use super::chars::{decode_ref, is_name_char, is_name_start, is_ws, BadRef};
use crate::ExtractError;

/// Longest reference body we accept between `&` and `;`. The longest
/// meaningful ones are `#x10FFFF`/`#1114111` (8 bytes); 16 leaves room for a
/// few leading zeros while keeping the carried state tiny.
const MAX_REF_LEN: usize = 16;
/// Cap on captured attribute bytes per tag (only used by the XOP helper).
const MAX_CAPTURED_ATTR_BYTES: usize = 64 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefCtx {
    Text,
    Attr(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    /// Start of document: optional UTF-8 byte order mark, `n` bytes matched.
    Bom(u8),
    /// Character data (inside the root) or whitespace (prolog/epilog).
    Text,
    /// After `<`.
    Lt,
    /// After `<!`, collecting into `bang` until it is `--`, `[CDATA[` or `DOCTYPE`.
    Bang,
    /// Inside a comment; the number of consecutive `-` just seen (0..=2).
    Comment(u8),
    PiTarget,
    /// Inside a PI body; `true` if the previous byte was `?`.
    PiBody(bool),
    /// Inside CDATA; the number of pending `]` (0..=2) that may start `]]>`.
    CData(u8),
    StartName,
    /// Inside a start tag after the name or an attribute; `true` if
    /// whitespace was seen (required before another attribute).
    InTag(bool),
    EmptySlash,
    AttrName,
    AttrEq,
    AttrQuote,
    AttrValue(u8),
    EndName,
    EndTail,
    Ref(RefCtx),
}

/// One tokenizer event. Text events only occur inside the root element.
#[derive(Debug)]
pub(crate) enum Ev<'a> {
    /// Character data or CDATA content, borrowed from the input.
    Text(&'a [u8]),
    /// A decoded reference or held-back CDATA `]`s: UTF-8 bytes, length.
    Small([u8; 4], u8),
    /// A start tag is complete; its name is [`Tokenizer::name`]. For a
    /// non-empty element the depth already includes it.
    Start { empty: bool },
    /// An end tag matched its start tag; the depth no longer includes it.
    End,
}

pub(crate) struct Tokenizer {
    st: St,
    /// Absolute offset of the first byte of the current input slice.
    base: u64,
    /// Name of the tag (or PI target) being read / just completed.
    name: Vec<u8>,
    bang: [u8; 8],
    bang_len: u8,
    refbuf: [u8; MAX_REF_LEN],
    ref_len: u8,
    /// Names of the open elements, concatenated; `ends[i]` is where the
    /// i-th one ends in `stack`.
    stack: Vec<u8>,
    ends: Vec<usize>,
    pub(crate) max_depth: usize,
    pub(crate) max_name_len: usize,
    root_seen: bool,
    /// Any byte after the BOM seen (the XML declaration must come first).
    seen_any: bool,
    /// The `<` just read was the first byte of the document.
    lt_first: bool,
    /// Attribute capture for the (small, whole-buffer) XOP helper.
    capture: Option<Capture>,
}

#[derive(Default)]
struct Capture {
    attrs: Vec<(Vec<u8>, Vec<u8>)>,
    bytes: usize,
}

impl Tokenizer {
    pub(crate) fn new(max_depth: usize, max_name_len: usize) -> Self {
        Tokenizer {
            st: St::Bom(0),
            base: 0,
            name: Vec::new(),
            bang: [0; 8],
            bang_len: 0,
            refbuf: [0; MAX_REF_LEN],
            ref_len: 0,
            stack: Vec::new(),
            ends: Vec::new(),
            max_depth,
            max_name_len,
            root_seen: false,
            seen_any: false,
            lt_first: false,
            capture: None,
        }
    }

    pub(crate) fn with_capture(mut self) -> Self {
        self.capture = Some(Capture::default());
        self
    }

    /// Name of the tag of the last `Start` event.
    pub(crate) fn name(&self) -> &[u8] {
        &self.name
    }

    /// Attributes of the last `Start` event (capture mode only), values with
    /// references decoded.
    pub(crate) fn attrs(&self) -> &[(Vec<u8>, Vec<u8>)] {
        self.capture.as_ref().map_or(&[], |c| &c.attrs)
    }

    pub(crate) fn depth(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn offset(&self, at: usize) -> u64 {
        self.base + at as u64
    }

    /// Marks the end of the current input slice (all of it was consumed).
    pub(crate) fn advance_base(&mut self, len: usize) {
        self.base += len as u64;
    }

    fn err(&self, at: usize, reason: &'static str) -> ExtractError {
        ExtractError::Xml {
            offset: self.offset(at),
            reason,
        }
    }

    fn push_name(&mut self, b: u8, at: usize) -> Result<(), ExtractError> {
        if self.name.len() >= self.max_name_len {
            return Err(ExtractError::LimitExceeded {
                offset: self.offset(at),
                what: "XML name length",
                limit: self.max_name_len,
            });
        }
        self.name.push(b);
        Ok(())
    }

    fn check_qname(&self, at: usize) -> Result<(), ExtractError> {
        // Namespaces in XML: at most one colon, with a non-empty prefix and
        // local part on either side.
        let n = &self.name;
        let colons = n.iter().filter(|&&b| b == b':').count();
        if colons > 1 || n.first() == Some(&b':') || n.last() == Some(&b':') {
            return Err(self.err(at, "bad qualified name"));
        }
        Ok(())
    }

    fn capture_bytes(&mut self, bytes: &[u8], value: bool, at: usize) -> Result<(), ExtractError> {
        let base = self.base;
        if let Some(c) = self.capture.as_mut() {
            c.bytes += bytes.len();
            if c.bytes > MAX_CAPTURED_ATTR_BYTES {
                return Err(ExtractError::LimitExceeded {
                    offset: base + at as u64,
                    what: "attribute bytes per tag",
                    limit: MAX_CAPTURED_ATTR_BYTES,
                });
            }
            if let Some(last) = c.attrs.last_mut() {
                if value {
                    last.1.extend_from_slice(bytes);
                } else {
                    last.0.extend_from_slice(bytes);
                }
            }
        }
        Ok(())
    }

    fn finish_start(&mut self, empty: bool, at: usize) -> Result<Ev<'static>, ExtractError> {
        self.root_seen = true;
        if !empty {
            if self.ends.len() >= self.max_depth {
                return Err(ExtractError::LimitExceeded {
                    offset: self.offset(at),
                    what: "element nesting depth",
                    limit: self.max_depth,
                });
            }
            self.stack.extend_from_slice(&self.name);
            self.ends.push(self.stack.len());
        }
        self.st = St::Text;
        Ok(Ev::Start { empty })
    }

    fn close(&mut self, at: usize) -> Result<Ev<'static>, ExtractError> {
        let Some(&end) = self.ends.last() else {
            return Err(self.err(at, "end tag without start tag"));
        };
        let start = if self.ends.len() >= 2 {
            self.ends[self.ends.len() - 2]
        } else {
            0
        };
        if self.stack[start..end] != self.name[..] {
            return Err(ExtractError::MismatchedTag {
                offset: self.offset(at),
                expected: String::from_utf8_lossy(&self.stack[start..end]).into_owned(),
                found: String::from_utf8_lossy(&self.name).into_owned(),
            });
        }
        self.stack.truncate(start);
        self.ends.pop();
        self.st = St::Text;
        Ok(Ev::End)
    }

    /// Decodes the reference collected in `refbuf` (the bytes between `&`
    /// and `;`) to UTF-8.
    fn decode_ref(&self, at: usize) -> Result<([u8; 4], u8), ExtractError> {
        let r = &self.refbuf[..self.ref_len as usize];
        decode_ref(r).map_err(|e| match e {
            BadRef::CharRef => ExtractError::BadCharRef {
                offset: self.offset(at),
                reference: String::from_utf8_lossy(r).into_owned(),
            },
            BadRef::UnknownEntity => ExtractError::UnknownEntity {
                offset: self.offset(at),
                name: String::from_utf8_lossy(r).into_owned(),
            },
            BadRef::Malformed => self.err(at, "malformed reference"),
        })
    }

    /// Returns the next event from `input[*pos..]`, or `None` once the slice
    /// is exhausted (all of it consumed; state carries over to the next one).
    pub(crate) fn next<'a>(
        &mut self,
        input: &'a [u8],
        pos: &mut usize,
    ) -> Result<Option<Ev<'a>>, ExtractError> {
        while *pos < input.len() {
            let at = *pos;
            let b = input[at];
            match self.st {
                St::Text if !self.ends.is_empty() => {
                    // Hot path: character data inside the root.
                    let rest = &input[at..];
                    match memchr2(b'<', b'&', rest) {
                        Some(0) if b == b'&' => {
                            // Fast path for a reference complete in this input
                            // (`&#13;` once per line in .NET's base64).
                            let tail = &rest[1..rest.len().min(MAX_REF_LEN + 2)];
                            if let Some(j) = memchr(b';', tail) {
                                if tail[..j]
                                    .iter()
                                    .all(|&c| c.is_ascii_alphanumeric() || c == b'#')
                                {
                                    self.refbuf[..j].copy_from_slice(&tail[..j]);
                                    self.ref_len = j as u8;
                                    let (buf, len) = self.decode_ref(at + 1 + j)?;
                                    *pos += j + 2;
                                    return Ok(Some(Ev::Small(buf, len)));
                                }
                            }
                            *pos += 1;
                            self.ref_len = 0;
                            self.st = St::Ref(RefCtx::Text);
                        }
                        Some(0) => {
                            *pos += 1;
                            self.st = if b == b'<' {
                                St::Lt
                            } else {
                                self.ref_len = 0;
                                St::Ref(RefCtx::Text)
                            };
                        }
                        Some(i) => {
                            *pos += i;
                            return Ok(Some(Ev::Text(&rest[..i])));
                        }
                        None => {
                            *pos = input.len();
                            return Ok(Some(Ev::Text(rest)));
                        }
                    }
                }
                St::Text => {
                    // Prolog or epilog: only whitespace and markup.
                    *pos += 1;
                    if b == b'<' {
                        self.lt_first = !self.seen_any;
                        self.st = St::Lt;
                    } else if !is_ws(b) {
                        return Err(self.err(at, "character data outside the root element"));
                    }
                    self.seen_any = true;
                }
                St::Bom(n) => {
                    const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
                    if n == 0 && b != BOM[0] {
                        self.st = St::Text;
                        continue;
                    }
                    if b != BOM[n as usize] {
                        return Err(self.err(at, "bad byte order mark"));
                    }
                    *pos += 1;
                    self.st = if n == 2 { St::Text } else { St::Bom(n + 1) };
                }
                St::Lt => {
                    *pos += 1;
                    let first = std::mem::take(&mut self.lt_first);
                    self.name.clear();
                    match b {
                        b'/' => self.st = St::EndName,
                        b'?' => {
                            // Remember whether this PI may be the XML declaration.
                            self.lt_first = first;
                            self.st = St::PiTarget;
                        }
                        b'!' => {
                            self.bang_len = 0;
                            self.st = St::Bang;
                        }
                        _ if is_name_start(b) => {
                            if self.ends.is_empty() && self.root_seen {
                                return Err(self.err(at, "content after the root element"));
                            }
                            if let Some(c) = self.capture.as_mut() {
                                c.attrs.clear();
                                c.bytes = 0;
                            }
                            self.name.push(b);
                            self.st = St::StartName;
                        }
                        _ => return Err(self.err(at, "invalid character after '<'")),
                    }
                }
                St::Bang => {
                    *pos += 1;
                    self.bang[self.bang_len as usize] = b;
                    self.bang_len += 1;
                    let got = &self.bang[..self.bang_len as usize];
                    if got == b"--" {
                        self.st = St::Comment(0);
                    } else if got == b"[CDATA[" {
                        if self.ends.is_empty() {
                            return Err(self.err(at, "CDATA section outside the root element"));
                        }
                        self.st = St::CData(0);
                    } else if got == b"DOCTYPE" {
                        return Err(ExtractError::DoctypeRefused {
                            offset: self.offset(at + 1).saturating_sub(9),
                        });
                    } else if !(b"--".starts_with(got)
                        || b"[CDATA[".starts_with(got)
                        || b"DOCTYPE".starts_with(got))
                    {
                        return Err(self.err(at, "invalid markup after '<!'"));
                    }
                }
                St::Comment(0) => match memchr(b'-', &input[at..]) {
                    Some(i) => {
                        *pos = at + i + 1;
                        self.st = St::Comment(1);
                    }
                    None => *pos = input.len(),
                },
                St::Comment(d) => {
                    *pos += 1;
                    self.st = match (d, b) {
                        (1, b'-') => St::Comment(2),
                        (1, _) => St::Comment(0),
                        (_, b'>') => St::Text,
                        _ => return Err(self.err(at, "'--' inside a comment")),
                    };
                }
                St::PiTarget => {
                    *pos += 1;
                    if is_name_char(b) && (!self.name.is_empty() || is_name_start(b)) {
                        self.push_name(b, at)?;
                        continue;
                    }
                    if self.name.is_empty() || !(is_ws(b) || b == b'?') {
                        return Err(self.err(at, "bad processing instruction target"));
                    }
                    if self.name.eq_ignore_ascii_case(b"xml")
                        && !(std::mem::take(&mut self.lt_first) && self.name == b"xml")
                    {
                        return Err(self.err(at, "misplaced XML declaration"));
                    }
                    self.lt_first = false;
                    self.st = St::PiBody(b == b'?');
                }
                St::PiBody(false) => match memchr(b'?', &input[at..]) {
                    Some(i) => {
                        *pos = at + i + 1;
                        self.st = St::PiBody(true);
                    }
                    None => *pos = input.len(),
                },
                St::PiBody(true) => {
                    *pos += 1;
                    self.st = match b {
                        b'>' => St::Text,
                        b'?' => St::PiBody(true),
                        _ => St::PiBody(false),
                    };
                }
                St::CData(0) => {
                    let rest = &input[at..];
                    match memchr(b']', rest) {
                        Some(0) => {
                            *pos += 1;
                            self.st = St::CData(1);
                        }
                        Some(i) => {
                            *pos += i;
                            return Ok(Some(Ev::Text(&rest[..i])));
                        }
                        None => {
                            *pos = input.len();
                            return Ok(Some(Ev::Text(rest)));
                        }
                    }
                }
                St::CData(n) => match b {
                    b']' if n == 1 => {
                        *pos += 1;
                        self.st = St::CData(2);
                    }
                    b']' => {
                        // `]]]`: the oldest `]` is content; two stay pending.
                        *pos += 1;
                        return Ok(Some(Ev::Small([b']', 0, 0, 0], 1)));
                    }
                    b'>' if n == 2 => {
                        *pos += 1;
                        self.st = St::Text;
                    }
                    _ => {
                        // The pending `]`s were content after all; `b` is
                        // rescanned in CData(0).
                        self.st = St::CData(0);
                        return Ok(Some(Ev::Small([b']', b']', 0, 0], n)));
                    }
                },
                St::StartName => {
                    *pos += 1;
                    if is_name_char(b) {
                        self.push_name(b, at)?;
                        continue;
                    }
                    self.check_qname(at)?;
                    match b {
                        b'>' => return self.finish_start(false, at).map(Some),
                        b'/' => self.st = St::EmptySlash,
                        _ if is_ws(b) => self.st = St::InTag(true),
                        _ => return Err(self.err(at, "invalid character in element name")),
                    }
                }
                St::InTag(ws) => {
                    *pos += 1;
                    match b {
                        b'>' => return self.finish_start(false, at).map(Some),
                        b'/' => self.st = St::EmptySlash,
                        _ if is_ws(b) => self.st = St::InTag(true),
                        _ if is_name_start(b) && ws => {
                            if let Some(c) = self.capture.as_mut() {
                                c.attrs.push((Vec::new(), Vec::new()));
                            }
                            self.capture_bytes(&[b], false, at)?;
                            self.ref_len = 1; // attribute name length so far
                            self.st = St::AttrName;
                        }
                        _ if is_name_start(b) => {
                            return Err(self.err(at, "missing whitespace before attribute"))
                        }
                        _ => return Err(self.err(at, "invalid character in tag")),
                    }
                }
                St::AttrName => {
                    *pos += 1;
                    if is_name_char(b) {
                        // Attribute names are not kept (except in capture
                        // mode) but still bounded, like element names.
                        if self.ref_len as usize >= self.max_name_len.min(255) {
                            return Err(ExtractError::LimitExceeded {
                                offset: self.offset(at),
                                what: "XML attribute name length",
                                limit: self.max_name_len.min(255),
                            });
                        }
                        self.ref_len += 1;
                        self.capture_bytes(&[b], false, at)?;
                        continue;
                    }
                    self.ref_len = 0;
                    self.st = match b {
                        b'=' => St::AttrQuote,
                        _ if is_ws(b) => St::AttrEq,
                        _ => return Err(self.err(at, "invalid character in attribute name")),
                    };
                }
                St::AttrEq => {
                    *pos += 1;
                    if b == b'=' {
                        self.st = St::AttrQuote;
                    } else if !is_ws(b) {
                        return Err(self.err(at, "expected '=' after attribute name"));
                    }
                }
                St::AttrQuote => {
                    *pos += 1;
                    if b == b'"' || b == b'\'' {
                        self.st = St::AttrValue(b);
                    } else if !is_ws(b) {
                        return Err(self.err(at, "expected quoted attribute value"));
                    }
                }
                St::AttrValue(q) => {
                    let rest = &input[at..];
                    match memchr3(q, b'<', b'&', rest) {
                        Some(i) => {
                            self.capture_bytes(&rest[..i], true, at)?;
                            *pos = at + i + 1;
                            match rest[i] {
                                b'<' => {
                                    return Err(self.err(at + i, "'<' in attribute value"));
                                }
                                b'&' => {
                                    self.ref_len = 0;
                                    self.st = St::Ref(RefCtx::Attr(q));
                                }
                                _ => self.st = St::InTag(false),
                            }
                        }
                        None => {
                            self.capture_bytes(rest, true, at)?;
                            *pos = input.len();
                        }
                    }
                }
                St::EmptySlash => {
                    *pos += 1;
                    if b != b'>' {
                        return Err(self.err(at, "expected '>' after '/' in tag"));
                    }
                    return self.finish_start(true, at).map(Some);
                }
                St::EndName => {
                    *pos += 1;
                    if is_name_char(b) && (!self.name.is_empty() || is_name_start(b)) {
                        self.push_name(b, at)?;
                        continue;
                    }
                    if self.name.is_empty() {
                        return Err(self.err(at, "invalid character in end tag name"));
                    }
                    match b {
                        b'>' => return self.close(at).map(Some),
                        _ if is_ws(b) => self.st = St::EndTail,
                        _ => return Err(self.err(at, "invalid character in end tag name")),
                    }
                }
                St::EndTail => {
                    *pos += 1;
                    if b == b'>' {
                        return self.close(at).map(Some);
                    } else if !is_ws(b) {
                        return Err(self.err(at, "expected '>' in end tag"));
                    }
                }
                St::Ref(ctx) => {
                    *pos += 1;
                    if b == b';' {
                        let (buf, len) = self.decode_ref(at)?;
                        match ctx {
                            RefCtx::Text => {
                                self.st = St::Text;
                                return Ok(Some(Ev::Small(buf, len)));
                            }
                            RefCtx::Attr(q) => {
                                self.capture_bytes(&buf[..len as usize], true, at)?;
                                self.st = St::AttrValue(q);
                            }
                        }
                    } else if b.is_ascii_alphanumeric() || b == b'#' {
                        if self.ref_len as usize >= MAX_REF_LEN {
                            return Err(self.err(at, "reference too long"));
                        }
                        self.refbuf[self.ref_len as usize] = b;
                        self.ref_len += 1;
                    } else {
                        return Err(self.err(at, "malformed reference"));
                    }
                }
            }
        }
        Ok(None)
    }

    /// End of document: complete iff we are back in the epilog after a root.
    pub(crate) fn finish(&self) -> Result<(), ExtractError> {
        if self.st == St::Text && self.ends.is_empty() && self.root_seen {
            return Ok(());
        }
        let context = match self.st {
            St::Bom(_) => "empty document",
            St::Text if !self.root_seen => "no root element",
            St::Text => "unclosed elements",
            St::Comment(_) => "inside a comment",
            St::PiTarget | St::PiBody(_) => "inside a processing instruction",
            St::CData(_) => "inside a CDATA section",
            St::Ref(_) => "inside a reference",
            St::AttrValue(_) => "inside an attribute value",
            _ => "inside a tag",
        };
        Err(ExtractError::UnexpectedEof {
            offset: self.base,
            context,
        })
    }
}
