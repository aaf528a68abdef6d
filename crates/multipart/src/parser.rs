//! The sans-IO state machine.

use memchr::memmem::Finder;

use crate::headers::{parse_block, validate_line, PartHeaders};
use crate::params::validate_boundary;
use crate::MultipartError;

/// Most transport padding (SP/HTAB after a boundary, RFC 2046 §5.1.1) we
/// accept. The RFC sets no bound, but every byte of it has to be retained by
/// the caller while we wait for the CRLF, so it must be bounded; real senders
/// use none.
pub const MAX_PADDING: usize = 64;

/// Limits enforced while parsing. Defaults: 8 KiB of headers per part, 1000
/// parts (the figure Go, Django and PHP use), 1 MiB per non-file field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one part's header block, including its CRLFs and the empty
    /// line that ends it.
    pub max_header_bytes: usize,
    /// Parts per body.
    pub max_parts: usize,
    /// Body bytes of a part without `filename` (a form field). File parts are
    /// unlimited here: they stream, so their size is the storage layer's
    /// business.
    pub max_field_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_header_bytes: 8 * 1024,
            max_parts: 1000,
            max_field_bytes: 1024 * 1024,
        }
    }
}

/// What [`Parser::feed`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    /// A part begins; its headers.
    PartStart(PartHeaders),
    /// Body bytes of the current part: a sub-slice of the input given to
    /// `feed` (never copied). A part's body may arrive as many `Data` events.
    Data(&'a [u8]),
    /// The current part ended (its delimiter was seen).
    PartEnd,
    /// The close delimiter was seen; everything after it is epilogue and is
    /// consumed silently. Returned again on every later `feed`.
    End,
    /// No progress without more input. The bytes not consumed must be
    /// presented again, followed by more input.
    NeedMore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing consumed yet: the first delimiter may lack the leading CRLF.
    Start,
    /// Skipping the preamble, searching for the first `CRLF--boundary`.
    Preamble,
    /// Inside a header block; `scanned` bytes of the (re-presented) input are
    /// complete, already validated lines, so they are not scanned again.
    Headers {
        scanned: usize,
    },
    Body,
    /// Close delimiter consumed and `PartEnd` returned; `End` comes next.
    EndPending,
    Epilogue,
    Failed,
}

/// How the bytes after a `--boundary` match classify it.
enum Tail {
    /// `--`: close delimiter; consume this many bytes after the boundary.
    Close(usize),
    /// OWS CRLF: a delimiter line; consume this many bytes after the boundary.
    Open(usize),
    /// OWS LF: an LF-only delimiter line.
    BareLf,
    /// Anything else: the match is data (or preamble).
    NotDelimiter,
    /// Can't tell yet.
    Incomplete,
}

fn classify(after: &[u8]) -> Result<Tail, MultipartError> {
    match after {
        [] | [b'-'] => return Ok(Tail::Incomplete),
        [b'-', b'-', ..] => return Ok(Tail::Close(2)),
        [b'-', ..] => return Ok(Tail::NotDelimiter),
        _ => {}
    }
    let pad = after
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(after.len());
    if pad > MAX_PADDING {
        return Err(MultipartError::PaddingTooLong { limit: MAX_PADDING });
    }
    Ok(match &after[pad..] {
        [] | [b'\r'] => Tail::Incomplete,
        [b'\r', b'\n', ..] => Tail::Open(pad + 2),
        [b'\n', ..] => Tail::BareLf,
        _ => Tail::NotDelimiter,
    })
}

/// One step of the state machine over `s` (the unconsumed input).
enum Step<'a> {
    /// Return this event, having consumed `n` bytes of `s`.
    Emit(Event<'a>, usize),
    /// Consumed `n` bytes and changed state without an event; keep going.
    Advance(usize),
    /// Consumed `n` bytes (possibly 0); nothing more until more input.
    Wait(usize),
}

/// Outcome of looking at a candidate first delimiter.
enum First<'a> {
    Done(Step<'a>),
    Incomplete,
    NotDelimiter,
}

/// Streaming multipart parser. See the crate docs for the calling convention.
#[derive(Debug, Clone)]
pub struct Parser {
    /// `CRLF--boundary`: what ends a part body.
    finder: Finder<'static>,
    /// Length of `CRLF--boundary`.
    delim_len: usize,
    limits: Limits,
    state: State,
    parts: usize,
    /// Whether the current part is a form field (no filename), and how many
    /// body bytes it has had, for `max_field_bytes`.
    in_field: bool,
    field_bytes: u64,
    error: Option<MultipartError>,
}

impl Parser {
    /// A parser for `boundary` (the bare parameter value, without `--`).
    pub fn new(boundary: &[u8], limits: Limits) -> Result<Self, MultipartError> {
        validate_boundary(boundary)?;
        let mut needle = Vec::with_capacity(boundary.len() + 4);
        needle.extend_from_slice(b"\r\n--");
        needle.extend_from_slice(boundary);
        Ok(Self {
            delim_len: needle.len(),
            finder: Finder::new(&needle).into_owned(),
            limits,
            state: State::Start,
            parts: 0,
            in_field: false,
            field_bytes: 0,
            error: None,
        })
    }

    /// The most unconsumed input the parser can leave to the caller when it
    /// says [`Event::NeedMore`]: the caller's buffer must hold at least this
    /// many bytes plus room to read more.
    pub fn max_retained(&self) -> usize {
        self.limits
            .max_header_bytes
            .max(self.delim_len + MAX_PADDING + 2)
    }

    /// Parts started so far.
    pub fn parts_seen(&self) -> usize {
        self.parts
    }

    /// Consumes a prefix of `input` and reports what it was. Returns the
    /// event and the number of bytes consumed; the caller must present
    /// `input[consumed..]` again (followed by more input) on the next call.
    /// After an error every later call returns the same error.
    pub fn feed<'a>(&mut self, input: &'a [u8]) -> Result<(Event<'a>, usize), MultipartError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let mut pos = 0;
        loop {
            let s = &input[pos..];
            let step = match self.step(s) {
                Ok(step) => step,
                Err(e) => {
                    self.state = State::Failed;
                    self.error = Some(e.clone());
                    return Err(e);
                }
            };
            match step {
                Step::Emit(ev, n) => return Ok((ev, pos + n)),
                Step::Advance(n) => pos += n,
                Step::Wait(n) => return Ok((Event::NeedMore, pos + n)),
            }
        }
    }

    /// Input ended. Ok only if the close delimiter was seen.
    pub fn finish(&self) -> Result<(), MultipartError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        match self.state {
            State::EndPending | State::Epilogue => Ok(()),
            _ => Err(MultipartError::MissingFinalBoundary),
        }
    }

    fn step<'a>(&mut self, s: &'a [u8]) -> Result<Step<'a>, MultipartError> {
        match self.state {
            State::Start => self.start(s),
            State::Preamble => self.preamble(s),
            State::Headers { scanned } => self.headers(s, scanned),
            State::Body => self.body(s),
            State::EndPending => {
                self.state = State::Epilogue;
                Ok(Step::Emit(Event::End, 0))
            }
            State::Epilogue => Ok(Step::Emit(Event::End, s.len())),
            // Unreachable in practice: `feed` returns the stored error first.
            State::Failed => Err(self
                .error
                .clone()
                .unwrap_or(MultipartError::MissingFinalBoundary)),
        }
    }

    fn start<'a>(&mut self, s: &'a [u8]) -> Result<Step<'a>, MultipartError> {
        let dash = &self.finder.needle()[2..];
        let n = s.len().min(dash.len());
        if s[..n] != dash[..n] {
            self.state = State::Preamble;
            return Ok(Step::Advance(0));
        }
        if n < dash.len() {
            return Ok(Step::Wait(0));
        }
        match self.first_delimiter(s, dash.len())? {
            First::Done(step) => Ok(step),
            First::Incomplete => Ok(Step::Wait(0)),
            First::NotDelimiter => {
                self.state = State::Preamble;
                Ok(Step::Advance(0))
            }
        }
    }

    fn preamble<'a>(&mut self, s: &'a [u8]) -> Result<Step<'a>, MultipartError> {
        let mut from = 0;
        while let Some(i) = self.finder.find(&s[from..]) {
            let at = from + i;
            match self.first_delimiter(&s[at..], self.delim_len)? {
                First::Done(Step::Advance(n)) => return Ok(Step::Advance(at + n)),
                First::Done(Step::Emit(ev, n)) => return Ok(Step::Emit(ev, at + n)),
                First::Done(Step::Wait(n)) => return Ok(Step::Wait(at + n)),
                // Drop the preamble before the candidate, keep the candidate.
                First::Incomplete => return Ok(Step::Wait(at)),
                First::NotDelimiter => from = at + 1,
            }
        }
        Ok(Step::Wait(s.len() - self.keep_tail(s)))
    }

    /// `s` starts with the (possibly CRLF-less) `--boundary`, `blen` bytes
    /// long, while we look for the first delimiter.
    fn first_delimiter<'a>(
        &mut self,
        s: &'a [u8],
        blen: usize,
    ) -> Result<First<'a>, MultipartError> {
        Ok(match classify(&s[blen..])? {
            Tail::Open(n) => {
                self.state = State::Headers { scanned: 0 };
                First::Done(Step::Advance(blen + n))
            }
            Tail::Close(n) => {
                self.state = State::Epilogue;
                First::Done(Step::Emit(Event::End, blen + n))
            }
            // An LF-only body would otherwise be skipped as preamble and fail
            // much later, confusingly, as "missing final boundary".
            Tail::BareLf => return Err(MultipartError::BareLf),
            Tail::Incomplete => First::Incomplete,
            Tail::NotDelimiter => First::NotDelimiter,
        })
    }

    fn headers<'a>(&mut self, s: &'a [u8], scanned: usize) -> Result<Step<'a>, MultipartError> {
        let limit = self.limits.max_header_bytes;
        // A caller that breaks the re-presentation contract gets a rescan,
        // never an out-of-bounds index.
        let mut at = if scanned <= s.len() { scanned } else { 0 };
        loop {
            let rest = &s[at..];
            let Some(k) = memchr::memchr2(b'\r', b'\n', rest) else {
                return self.headers_wait(s, at, limit);
            };
            // A line that cannot end within the limit is too large, whatever
            // ends it: a reader that has only seen the first `limit` bytes
            // (headers_wait) says so too, however the input was split.
            let line_end = at + k + 2;
            if line_end > limit {
                return Err(MultipartError::HeadersTooLarge { limit });
            }
            if rest[k] == b'\n' {
                return Err(MultipartError::BareLf);
            }
            match rest.get(k + 1) {
                None => return self.headers_wait(s, at, limit),
                Some(b'\n') => {}
                Some(_) => return Err(MultipartError::MalformedHeader("bare CR in header block")),
            }
            let line = &rest[..k];
            if line.is_empty() {
                let headers = parse_block(&s[..at])?;
                self.parts += 1;
                if self.parts > self.limits.max_parts {
                    return Err(MultipartError::TooManyParts {
                        limit: self.limits.max_parts,
                    });
                }
                self.in_field = !headers.is_file();
                self.field_bytes = 0;
                self.state = State::Body;
                return Ok(Step::Emit(Event::PartStart(headers), line_end));
            }
            validate_line(line)?;
            at = line_end;
        }
    }

    fn headers_wait<'a>(
        &mut self,
        s: &'a [u8],
        scanned: usize,
        limit: usize,
    ) -> Result<Step<'a>, MultipartError> {
        if s.len() >= limit {
            return Err(MultipartError::HeadersTooLarge { limit });
        }
        self.state = State::Headers { scanned };
        Ok(Step::Wait(0))
    }

    fn body<'a>(&mut self, s: &'a [u8]) -> Result<Step<'a>, MultipartError> {
        let mut from = 0;
        // Hot path: one memmem scan over the whole input, one Data event.
        let end = loop {
            match self.finder.find(&s[from..]) {
                Some(0) if from == 0 => match classify(&s[self.delim_len..])? {
                    Tail::Open(n) => {
                        self.state = State::Headers { scanned: 0 };
                        return Ok(Step::Emit(Event::PartEnd, self.delim_len + n));
                    }
                    Tail::Close(n) => {
                        self.state = State::EndPending;
                        return Ok(Step::Emit(Event::PartEnd, self.delim_len + n));
                    }
                    Tail::Incomplete => return Ok(Step::Wait(0)),
                    // Boundary-like bytes inside the data (including an
                    // LF-only line end, which we do not treat as a
                    // delimiter): they are data; search on.
                    Tail::NotDelimiter | Tail::BareLf => from = 1,
                },
                Some(i) => break from + i,
                None => break s.len() - self.keep_tail(&s[from..]),
            }
        };
        if end == 0 {
            return Ok(Step::Wait(0));
        }
        if self.in_field {
            self.field_bytes += end as u64;
            if self.field_bytes > self.limits.max_field_bytes {
                return Err(MultipartError::FieldTooLarge {
                    limit: self.limits.max_field_bytes,
                });
            }
        }
        Ok(Step::Emit(Event::Data(&s[..end]), end))
    }

    /// How many bytes at the end of `t` could be the start of `CRLF--boundary`
    /// and must be held back. The boundary holds no CR, so such a suffix must
    /// start at the last CR within the final `delim_len - 1` bytes.
    fn keep_tail(&self, t: &[u8]) -> usize {
        let window = t.len().saturating_sub(self.delim_len - 1);
        match memchr::memrchr(b'\r', &t[window..]) {
            Some(r) if self.finder.needle().starts_with(&t[window + r..]) => t.len() - (window + r),
            _ => 0,
        }
    }
}
