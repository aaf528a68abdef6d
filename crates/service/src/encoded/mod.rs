//! `POST` uploads whose file travels inside an encoded body:
//!
//! | Content-Type | target | what is stored |
//! |---|---|---|
//! | `multipart/form-data` | `POST /dir/` | every file part, as `dir/<filename>` ([`form`]) |
//! | `text/xml`, `application/xml`, `application/soap+xml` | `POST /path?element=NAME` | the base64 text of the first element NAME, decoded ([`field`]) |
//! | `application/json` | `POST /path?field=NAME` | the base64 string member NAME of the top-level object, decoded ([`field`]) |
//! | `multipart/related; type="application/xop+xml"` (MTOM) | `POST /path?element=NAME` | the attachment NAME's `xop:Include` points to ([`mtom`]) |
//!
//! Everything streams: bodies are read as slices of the connection buffer
//! and go through the sans-IO codecs (wirespeed-multipart, wirespeed-extract,
//! wirespeed-base64) straight into storage uploads, so no file is ever held
//! in memory (seeds 002 and 003). Every route is all-or-nothing: any error —
//! malformed body, bad base64, a limit, a disconnect — aborts every upload
//! the request started, and nothing becomes visible.
//!
//! Digests: the stored bytes' sha-256 is computed while they stream (as for
//! PUT). A `Repr-Digest`/`Content-Digest` sent *with a POST* describes the
//! request content (the envelope or the multipart body, RFC 9530 §2/§3), not
//! the file inside it, so it is checked against the raw body bytes; the
//! body is only hashed when such a field is present.

mod field;
mod form;
mod mtom;

use std::future::Future;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wirespeed_extract::{ExtractError, JsonFieldExtractor, XmlFieldExtractor};
use wirespeed_multipart::{Event, Limits, MediaType, MultipartError, Parser, PartHeaders};
use wirespeed_net::{Error, Exchange};

use crate::config::ServiceConfig;
use crate::metrics::Metrics;
use crate::path::RelPath;
use crate::respond::WriteGuard;
use crate::storage::Storage;
use crate::upload::HashMode;

/// What the 415 answer lists.
const SUPPORTED: &str = "supported POST bodies: multipart/form-data (POST /dir/), \
text/xml, application/xml or application/soap+xml with ?element=NAME, \
application/json with ?field=NAME, \
multipart/related; type=\"application/xop+xml\" (MTOM) with ?element=NAME";

/// The single-file POSTs (SOAP/JSON field, MTOM) store at a file path.
fn require_file_path(key: &RelPath) -> Result<(), Error> {
    if key.is_root() || key.trailing_slash() {
        return Err(Error::status(
            400,
            "this POST stores one file: it needs a file path, not a directory",
        ));
    }
    Ok(())
}

/// Handle a `POST` to `key` (the hook from the file routes).
pub(crate) async fn post<S: Storage>(
    storage: &S,
    cfg: &ServiceConfig,
    guard: &WriteGuard,
    ex: &mut Exchange,
    key: RelPath,
) -> Result<(), Error> {
    let media = {
        let Some(ct) = ex.header_str("content-type") else {
            return Err(Error::status(
                415,
                format!("POST needs a Content-Type; {SUPPORTED}"),
            ));
        };
        MediaType::parse(ct).map_err(|e| Error::status(400, e.to_string()))?
    };
    let query = Query::parse(ex.query())?;
    crate::respond::check_room(storage, cfg, ex).await?;
    let room = crate::quota::admit_body(storage, cfg, ex, &key).await?;
    // The stored file is hashed when asked for; a Repr-Digest sent with a
    // POST describes the request body and is checked separately.
    let checks = Checks {
        hash: cfg.hash_for(ex, None),
        digest: RequestDigest::from_request(ex, cfg.metrics.clone())?,
    };
    let result = match media.essence() {
        "multipart/form-data" => {
            let boundary = media.boundary().map_err(multipart_error)?.to_owned();
            let format = match query.get("format") {
                None | Some("json") => form::Format::Json,
                Some("html") => form::Format::Html,
                Some(other) => {
                    return Err(Error::status(
                        400,
                        format!("unknown format {other:?}: use json or html"),
                    ))
                }
            };
            query.only(&["format"])?;
            form::post(storage, guard, ex, key, &boundary, format, checks).await
        }
        "text/xml" | "application/xml" | "application/soap+xml" => {
            let element = query.required("element", "the XML element holding the base64 data")?;
            query.only(&["element"])?;
            // A prefixed name is accepted; prefixes are per document, so
            // only the local name is matched.
            let local = element.rsplit(':').next().unwrap_or(element);
            field::post(
                storage,
                guard,
                ex,
                key,
                XmlFieldExtractor::new(local),
                checks,
            )
            .await
        }
        "application/json" => {
            let name = query.required("field", "the JSON member holding the base64 data")?;
            query.only(&["field"])?;
            field::post(
                storage,
                guard,
                ex,
                key,
                JsonFieldExtractor::new(name),
                checks,
            )
            .await
        }
        "multipart/related" => {
            let is_xop = media
                .param("type")
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/xop+xml"));
            if !is_xop {
                return Err(Error::status(
                    415,
                    format!(
                        "multipart/related is accepted only as MTOM (type=\"application/xop+xml\"); {SUPPORTED}"
                    ),
                ));
            }
            let boundary = media.boundary().map_err(multipart_error)?.to_owned();
            let element = query.required("element", "the XML element holding the xop:Include")?;
            query.only(&["element"])?;
            let start = media
                .param("start")
                .map(|s| wirespeed_extract::normalize_content_id(s).to_owned());
            mtom::post(storage, guard, ex, key, &boundary, start, element, checks).await
        }
        other => Err(Error::status(
            415,
            format!("unsupported POST Content-Type {other:?}; {SUPPORTED}"),
        )),
    };
    result.map_err(|e| crate::quota::explain_cut(e, room, cfg))
}

// ---- query ----------------------------------------------------------------

/// The decoded query parameters of a POST.
struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// `a=b&c=d`, each name and value percent-decoded once (`+` is a space,
    /// as in HTML forms). Repeated names are refused: which one would win
    /// is a guess we would rather not make for the client.
    fn parse(q: Option<&str>) -> Result<Self, Error> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for item in q.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
            let (k, v) = item.split_once('=').unwrap_or((item, ""));
            let (k, v) = (decode_component(k)?, decode_component(v)?);
            if pairs.iter().any(|(n, _)| *n == k) {
                return Err(Error::status(
                    400,
                    format!("query parameter {k:?} given twice"),
                ));
            }
            pairs.push((k, v));
        }
        Ok(Query { pairs })
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn required(&self, name: &str, what: &str) -> Result<&str, Error> {
        match self.get(name) {
            Some(v) if !v.is_empty() && v.len() <= 1024 => Ok(v),
            Some(v) if !v.is_empty() => Err(Error::status(
                400,
                format!("?{name}= is longer than 1024 bytes"),
            )),
            _ => Err(Error::status(
                400,
                format!("this Content-Type needs ?{name}=NAME ({what})"),
            )),
        }
    }

    /// Unknown parameters are refused so that a typo (`?elment=`) or the
    /// wrong one for the type (`?field=` on XML) is not silently ignored
    /// (`share=`, a share link, is the policy's and always allowed).
    fn only(&self, allowed: &[&str]) -> Result<(), Error> {
        match self
            .pairs
            .iter()
            .find(|(n, _)| !allowed.contains(&n.as_str()) && n != "share")
        {
            Some((n, _)) => Err(Error::status(
                400,
                format!(
                    "unexpected query parameter {n:?} for this Content-Type (expected: {})",
                    allowed.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }
}

fn decode_component(s: &str) -> Result<String, Error> {
    let plus = s.replace('+', " ");
    let bytes = crate::path::percent_decode(&plus)
        .map_err(|_| Error::status(400, "malformed percent-encoding in the query"))?;
    String::from_utf8(bytes).map_err(|_| Error::status(400, "the query is not UTF-8 once decoded"))
}

// ---- errors -----------------------------------------------------------------

/// Multipart errors are the client's: 413 for the limits, 400 otherwise.
fn multipart_error(e: MultipartError) -> Error {
    let status = if e.is_limit() { 413 } else { 400 };
    Error::status(status, format!("multipart: {e}"))
}

/// Extraction errors are all the client's (400). A sink error is the base64
/// decoder refusing the field's text.
fn extract_error(e: ExtractError) -> Error {
    match e {
        ExtractError::Sink(inner) => {
            Error::status(400, format!("invalid base64 in the field: {inner}"))
        }
        other => Error::status(400, other.to_string()),
    }
}

// ---- request digest -----------------------------------------------------------

const DIGEST_MISMATCH: &str =
    "digest mismatch: the request body does not match the announced sha-256; nothing was stored";

/// What a POST's bytes are checked and hashed with: where the stored file
/// is hashed (`None`: not), and the digest the request announced.
pub(super) struct Checks {
    hash: Option<HashMode>,
    digest: RequestDigest,
}

/// Checks a `Repr-Digest`/`Content-Digest` sent with the POST against the
/// raw request body (see the module docs); free when none was sent.
struct RequestDigest {
    expected: Option<[u8; 32]>,
    hasher: Option<Sha256>,
    /// Where a mismatch is counted, at the one place it is found.
    metrics: Option<Arc<Metrics>>,
}

impl RequestDigest {
    fn from_request(ex: &Exchange, metrics: Option<Arc<Metrics>>) -> Result<Self, Error> {
        let expected = crate::digest::expected_from(ex)?;
        Ok(RequestDigest {
            expected,
            hasher: expected.map(|_| Sha256::new()),
            metrics,
        })
    }

    fn update(&mut self, piece: &[u8]) {
        if let Some(h) = self.hasher.as_mut() {
            h.update(piece);
        }
    }

    fn verify(self) -> Result<(), Error> {
        let (Some(want), Some(h)) = (self.expected, self.hasher) else {
            return Ok(());
        };
        if <[u8; 32]>::from(h.finalize()) != want {
            if let Some(m) = &self.metrics {
                m.digest_mismatch();
            }
            return Err(Error::status(400, DIGEST_MISMATCH));
        }
        Ok(())
    }
}

// ---- the multipart feeding loop -------------------------------------------------------

/// What a multipart route does with the parser's events.
trait Parts: Send {
    fn start(&mut self, h: PartHeaders) -> impl Future<Output = Result<(), Error>> + Send;
    /// Body bytes of the current part (borrowed from the connection buffer,
    /// or from the small tail buffer near a read boundary).
    fn data(&mut self, d: &[u8]) -> impl Future<Output = Result<(), Error>> + Send;
    fn end(&mut self) -> impl Future<Output = Result<(), Error>> + Send;
}

/// Drives a [`Parser`] over body pieces lent by `read_body`.
///
/// The parser may leave a few bytes unconsumed at the end of a piece (a
/// possible delimiter start, an unfinished header block); those go to
/// `tail`, and the next piece is presented after them. To avoid copying
/// file data, only a bounded prefix of the next piece (`step` bytes) is
/// appended to the tail; as soon as the parser has consumed past the old
/// tail, the tail is dropped and parsing continues directly on the lent
/// slice. So per read at most `max_retained + step` bytes are copied, and
/// the tail never holds more than that.
struct Feeder {
    parser: Parser,
    tail: Vec<u8>,
    step: usize,
    ended: bool,
    /// Small data events gathered into one write (see [`COALESCE_BELOW`]).
    pending: Vec<u8>,
}

/// Data events shorter than this are gathered (up to [`COALESCE_MAX`])
/// before they reach the part: a body full of near-miss delimiters
/// (`\r\n--BOUNDARYX` repeated) yields an event every few bytes, which
/// would otherwise cost a write(2) and a hash update each.
const COALESCE_BELOW: usize = 16 * 1024;
/// Gathered bytes flushed at once.
const COALESCE_MAX: usize = 64 * 1024;

impl Feeder {
    fn new(boundary: &str, limits: Limits) -> Result<Self, Error> {
        let parser = Parser::new(boundary.as_bytes(), limits).map_err(multipart_error)?;
        let step = parser.max_retained();
        Ok(Feeder {
            tail: Vec::with_capacity(2 * step),
            parser,
            step,
            ended: false,
            pending: Vec::new(),
        })
    }

    /// Parse the next piece of the body. After the close delimiter the rest
    /// (epilogue) is ignored.
    async fn feed<P: Parts>(&mut self, piece: &[u8], parts: &mut P) -> Result<(), Error> {
        let mut rest = piece;
        while !self.ended && !self.tail.is_empty() && !rest.is_empty() {
            let old = self.tail.len();
            let take = rest.len().min(self.step);
            self.tail.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            let used = drive(
                &mut self.parser,
                &mut self.ended,
                &self.tail,
                &mut self.pending,
                parts,
            )
            .await?;
            if used >= old {
                // The old tail is gone; what is left of the buffer is a copy
                // of the piece: rewind and go on from the piece itself.
                let unconsumed = self.tail.len() - used;
                let at = piece.len() - rest.len() - unconsumed;
                rest = &piece[at..];
                self.tail.clear();
            } else {
                self.tail.drain(..used);
            }
        }
        if !self.ended && self.tail.is_empty() && !rest.is_empty() {
            let used = drive(
                &mut self.parser,
                &mut self.ended,
                rest,
                &mut self.pending,
                parts,
            )
            .await?;
            self.tail.extend_from_slice(&rest[used..]);
        }
        if self.ended {
            self.tail.clear();
        }
        Ok(())
    }

    /// The body ended: fine only after the close delimiter.
    fn finish(&self) -> Result<(), Error> {
        if self.ended {
            return Ok(());
        }
        self.parser.finish().map_err(multipart_error)?;
        Ok(())
    }
}

/// Feed `input` until the parser needs more; returns the bytes consumed
/// (all of them once the close delimiter was seen).
async fn drive<P: Parts>(
    parser: &mut Parser,
    ended: &mut bool,
    input: &[u8],
    pending: &mut Vec<u8>,
    parts: &mut P,
) -> Result<usize, Error> {
    let mut off = 0;
    loop {
        let (ev, n) = parser.feed(&input[off..]).map_err(multipart_error)?;
        off += n;
        if let Event::Data(d) = &ev {
            if d.len() < COALESCE_BELOW {
                pending.extend_from_slice(d);
                if pending.len() >= COALESCE_MAX {
                    parts.data(pending).await?;
                    pending.clear();
                }
                continue;
            }
        }
        if !pending.is_empty() {
            parts.data(pending).await?;
            pending.clear();
        }
        match ev {
            Event::PartStart(h) => parts.start(h).await?,
            Event::Data(d) => parts.data(d).await?,
            Event::PartEnd => parts.end().await?,
            Event::End => {
                *ended = true;
                return Ok(input.len());
            }
            Event::NeedMore => return Ok(off),
        }
    }
}
