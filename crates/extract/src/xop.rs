//! MTOM/XOP: find the `xop:Include` that stands in for a field's base64 text.
//!
//! The root part of an MTOM message is small (the binary travels in other
//! MIME parts), so this takes the whole root part. It runs the same
//! well-formedness-checking tokenizer as the streaming extractor (with
//! attribute capture switched on) and resolves namespace prefixes itself, so
//! `xop:Include`, `x:Include` or a default-namespace `Include` all match as
//! long as the namespace is the XOP one.

use crate::xml::{local_name, Ev, Tokenizer};
use crate::{ExtractError, DEFAULT_MAX_DEPTH, DEFAULT_MAX_NAME_LEN};

/// The XOP include namespace (W3C XOP 1.0).
pub const XOP_INCLUDE_NS: &str = "http://www.w3.org/2004/08/xop/include";

/// Strips surrounding whitespace and `<` `>` from a Content-ID (header value
/// or `cid:` reference), so both sides can be compared as-is.
pub fn normalize_content_id(id: &str) -> &str {
    let id = id.trim();
    let id = id.strip_prefix('<').unwrap_or(id);
    id.strip_suffix('>').unwrap_or(id).trim()
}

/// Decodes `%XX` escapes (RFC 2392 `cid:` URLs are percent-encoded).
fn percent_decode(s: &[u8]) -> Result<Vec<u8>, ExtractError> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| ExtractError::Xop("bad percent-escape in href".into()))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// In-scope namespace bindings: a stack of URIs per prefix, and per open
/// element the prefixes it bound. Resolving a prefix is one hash lookup
/// whatever the number of bindings in scope (a scan of every binding per
/// element made a root part with many bindings and many elements quadratic).
#[derive(Default)]
struct Scopes {
    /// prefix (empty for the default namespace) → URIs, innermost last.
    uris: std::collections::HashMap<Vec<u8>, Vec<Vec<u8>>>,
    /// Prefixes bound by each open element.
    frames: Vec<Vec<Vec<u8>>>,
}

impl Scopes {
    fn push(&mut self, attrs: &[(Vec<u8>, Vec<u8>)]) {
        let mut bound = Vec::new();
        for (name, value) in attrs {
            let prefix = if name == b"xmlns" {
                Vec::new()
            } else if let Some(prefix) = name.strip_prefix(b"xmlns:") {
                prefix.to_vec()
            } else {
                continue;
            };
            self.uris
                .entry(prefix.clone())
                .or_default()
                .push(value.clone());
            bound.push(prefix);
        }
        self.frames.push(bound);
    }

    fn pop(&mut self) {
        for prefix in self.frames.pop().unwrap_or_default() {
            if let Some(stack) = self.uris.get_mut(&prefix) {
                stack.pop();
            }
        }
    }

    fn resolve(&self, qname: &[u8]) -> Option<&[u8]> {
        let prefix = match memchr::memchr(b':', qname) {
            Some(i) => &qname[..i],
            None => b"",
        };
        self.uris
            .get(prefix)
            .and_then(|stack| stack.last())
            .map(Vec::as_slice)
    }
}

/// Finds the first element whose local name is `name` in an MTOM root part
/// and returns the Content-ID its `<xop:Include href="cid:..."/>` child
/// points to: without `cid:`, percent-decoded, without `<>` (compare it with
/// [`normalize_content_id`] of each part's Content-ID header).
///
/// The whole root part must be well-formed XML (same rules as
/// [`crate::XmlFieldExtractor`], DTDs refused).
pub fn find_xop_include(xml_root_part_bytes: &[u8], name: &str) -> Result<String, ExtractError> {
    let mut tok = Tokenizer::new(DEFAULT_MAX_DEPTH, DEFAULT_MAX_NAME_LEN).with_capture();
    let mut scopes = Scopes::default();
    // Depth of the field element once found; the href once found.
    let mut field_depth: Option<usize> = None;
    let mut field_closed = false;
    let mut href: Option<Vec<u8>> = None;
    let mut pos = 0;
    while let Some(ev) = tok.next(xml_root_part_bytes, &mut pos)? {
        match ev {
            Ev::Start { empty } => {
                scopes.push(tok.attrs());
                // Depth of this element (for an empty one the tokenizer did
                // not count it).
                let depth = tok.depth() + usize::from(empty);
                if field_depth.is_none()
                    && !field_closed
                    && local_name(tok.name()) == name.as_bytes()
                {
                    field_depth = Some(depth);
                    field_closed = empty;
                } else if !field_closed
                    && href.is_none()
                    && field_depth.is_some_and(|d| depth == d + 1)
                    && local_name(tok.name()) == b"Include"
                    && scopes.resolve(tok.name()) == Some(XOP_INCLUDE_NS.as_bytes())
                {
                    let value = tok
                        .attrs()
                        .iter()
                        .find(|(n, _)| n == b"href")
                        .map(|(_, v)| v.clone())
                        .ok_or_else(|| ExtractError::Xop("xop:Include without href".into()))?;
                    href = Some(value);
                }
                if empty {
                    scopes.pop();
                }
            }
            Ev::End => {
                scopes.pop();
                if field_depth.is_some_and(|d| tok.depth() < d) {
                    field_closed = true;
                }
            }
            Ev::Text(_) | Ev::Small(..) => {}
        }
    }
    tok.advance_base(xml_root_part_bytes.len());
    tok.finish()?;
    if field_depth.is_none() {
        return Err(ExtractError::FieldNotFound {
            name: name.to_owned(),
        });
    }
    let href =
        href.ok_or_else(|| ExtractError::Xop(format!("<{name}> has no xop:Include child")))?;
    let href = std::str::from_utf8(&href)
        .map_err(|_| ExtractError::Xop("href is not UTF-8".into()))?
        .trim();
    let cid = href
        .get(..4)
        .filter(|s| s.eq_ignore_ascii_case("cid:"))
        .map(|_| &href[4..])
        .ok_or_else(|| ExtractError::Xop(format!("href {href:?} is not a cid: URL")))?;
    let decoded = String::from_utf8(percent_decode(cid.as_bytes())?)
        .map_err(|_| ExtractError::Xop("content-id is not UTF-8".into()))?;
    let id = normalize_content_id(&decoded);
    if id.is_empty() {
        return Err(ExtractError::Xop("empty content-id in href".into()));
    }
    Ok(id.to_owned())
}
