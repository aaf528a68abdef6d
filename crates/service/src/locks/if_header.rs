//! The WebDAV `If` request header (RFC 4918 §10.4), sans-IO: the parser, and
//! the evaluation over what the caller knows of each resource (its ETag and
//! the lock tokens that cover it).

/// One condition of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// A state token (a lock token, or e.g. `DAV:no-lock`, which never matches).
    Token(String),
    /// An entity tag, quotes included (`"abc"`, `W/"abc"`).
    ETag(String),
}

/// A condition, possibly negated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub not: bool,
    pub cond: Condition,
}

/// One parenthesized list, with the resource it is tagged with (`None`:
/// the request's own resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List {
    pub resource: Option<String>,
    pub terms: Vec<Term>,
}

/// A parsed `If` header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IfHeader {
    pub lists: Vec<List>,
}

/// A malformed `If` header (400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed If header: {0}")]
pub struct IfError(&'static str);

/// The most lists and conditions taken (a header is small).
const MAX_TERMS: usize = 256;

/// What the caller knows of one resource.
#[derive(Debug, Clone, Default)]
pub struct State {
    pub etag: Option<String>,
    /// The tokens of the locks covering it.
    pub tokens: Vec<String>,
}

impl IfHeader {
    /// Parse the header's value.
    pub fn parse(value: &str) -> Result<IfHeader, IfError> {
        let mut p = value.trim();
        let mut lists = Vec::new();
        let mut tag: Option<String> = None;
        let mut tagged: Option<bool> = None;
        let mut terms_seen = 0;
        while !p.is_empty() {
            if let Some(rest) = p.strip_prefix('<') {
                let end = rest.find('>').ok_or(IfError("an unclosed resource tag"))?;
                if tagged == Some(false) {
                    return Err(IfError("tagged and untagged lists mixed"));
                }
                tagged = Some(true);
                tag = Some(rest[..end].to_string());
                p = rest[end + 1..].trim_start();
                if !p.starts_with('(') {
                    return Err(IfError("a resource tag without a list"));
                }
                continue;
            }
            let rest = p.strip_prefix('(').ok_or(IfError("expected ( or <"))?;
            if tagged.is_none() {
                tagged = Some(false);
            }
            let end = rest.find(')').ok_or(IfError("an unclosed list"))?;
            let mut inner = rest[..end].trim();
            p = rest[end + 1..].trim_start();
            let mut terms = Vec::new();
            while !inner.is_empty() {
                terms_seen += 1;
                if terms_seen > MAX_TERMS {
                    return Err(IfError("too many conditions"));
                }
                let mut not = false;
                if inner
                    .get(..3)
                    .is_some_and(|p| p.eq_ignore_ascii_case("not"))
                {
                    not = true;
                    inner = inner[3..].trim_start();
                }
                let cond = if let Some(r) = inner.strip_prefix('<') {
                    let end = r.find('>').ok_or(IfError("an unclosed state token"))?;
                    let token = r[..end].to_string();
                    inner = r[end + 1..].trim_start();
                    Condition::Token(token)
                } else if let Some(r) = inner.strip_prefix('[') {
                    let end = r.find(']').ok_or(IfError("an unclosed entity tag"))?;
                    let tag = r[..end].trim().to_string();
                    inner = r[end + 1..].trim_start();
                    Condition::ETag(tag)
                } else {
                    return Err(IfError("a condition is neither <token> nor [etag]"));
                };
                terms.push(Term { not, cond });
            }
            if terms.is_empty() {
                return Err(IfError("an empty list"));
            }
            lists.push(List {
                resource: tag.clone(),
                terms,
            });
        }
        if lists.is_empty() {
            return Err(IfError("no list"));
        }
        Ok(IfHeader { lists })
    }

    /// The resources the lists are tagged with.
    pub fn resources(&self) -> impl Iterator<Item = &str> {
        self.lists.iter().filter_map(|l| l.resource.as_deref())
    }

    /// Every state token named (negated or not): the lock tokens the client
    /// submits.
    pub fn tokens(&self) -> impl Iterator<Item = &str> {
        self.lists.iter().flat_map(|l| {
            l.terms.iter().filter_map(|t| match &t.cond {
                Condition::Token(tok) if !t.not => Some(tok.as_str()),
                _ => None,
            })
        })
    }

    /// Whether the header holds: any list whose every condition is true of
    /// its resource. `state` answers for a list's resource (`None`: the
    /// request's), and `None` for a resource it cannot say about (every
    /// condition on it is then false).
    pub fn holds(&self, mut state: impl FnMut(Option<&str>) -> Option<State>) -> bool {
        self.lists.iter().any(|list| {
            let st = state(list.resource.as_deref());
            list.terms.iter().all(|t| {
                let yes = match (&t.cond, &st) {
                    (Condition::Token(tok), Some(s)) => s.tokens.iter().any(|k| k == tok),
                    (Condition::ETag(tag), Some(s)) => {
                        // Strong comparison; a weak tag never matches.
                        !tag.starts_with("W/") && s.etag.as_deref() == Some(tag.as_str())
                    }
                    (_, None) => false,
                };
                yes != t.not
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn st(etag: &str, tokens: &[&str]) -> Option<State> {
        Some(State {
            etag: Some(etag.to_string()),
            tokens: tokens.iter().map(|s| s.to_string()).collect(),
        })
    }

    #[test]
    fn parses_the_rfc_forms() {
        let h = IfHeader::parse("(<urn:uuid:1> [\"e1\"]) (Not <DAV:no-lock>)").unwrap();
        assert_eq!(h.lists.len(), 2);
        assert_eq!(h.lists[0].resource, None);
        assert_eq!(
            h.lists[0].terms,
            vec![
                Term {
                    not: false,
                    cond: Condition::Token("urn:uuid:1".into())
                },
                Term {
                    not: false,
                    cond: Condition::ETag("\"e1\"".into())
                },
            ]
        );
        assert!(h.lists[1].terms[0].not);
        assert_eq!(h.tokens().collect::<Vec<_>>(), vec!["urn:uuid:1"]);
        let t = IfHeader::parse("<http://h/a> (<urn:x>) <http://h/b> ([W/\"w\"])").unwrap();
        assert_eq!(
            t.resources().collect::<Vec<_>>(),
            vec!["http://h/a", "http://h/b"]
        );
        for bad in [
            "",
            "(",
            "()",
            "<a>",
            "(<x>) <a> (<y>)",
            "(x)",
            "([\"a\")",
            "<a> x",
            // A multi-byte character where "Not" may start: no panic.
            "(n\u{e9})",
            "(\u{e9}<x>)",
            "(\u{e9}\u{e9})",
            "(\u{10000})",
        ] {
            assert!(IfHeader::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn evaluates_like_litmus_expects() {
        let ok = |h: &str, s: Option<State>| IfHeader::parse(h).unwrap().holds(|_| s.clone());
        assert!(ok("(<t1> [\"e\"])", st("\"e\"", &["t1"])));
        assert!(!ok("(<t1> [\"bad\"])", st("\"e\"", &["t1"])));
        assert!(ok("(<t1x>) (Not <DAV:no-lock>)", st("\"e\"", &["t1"])));
        assert!(!ok(
            "(<t1> [\"x\"]) (Not <DAV:no-lock> [\"x\"])",
            st("\"e\"", &["t1"])
        ));
        assert!(!ok("(<t1>)", st("\"e\"", &[])));
        assert!(!ok("([W/\"e\"])", st("W/\"e\"", &[])));
        assert!(!ok("(<t1>)", None));
        assert!(ok("(Not <t1>)", None));
    }

    proptest! {
        #[test]
        fn never_panics(s in "[<>()\\[\\]a-zA-Z:/\" Wt\u{e9}\u{10000}-]{0,80}") {
            if let Ok(h) = IfHeader::parse(&s) {
                let _ = h.holds(|_| None);
                prop_assert!(!h.lists.is_empty());
            }
        }

        #[test]
        fn tokens_round_trip(toks in proptest::collection::vec("[a-z0-9:-]{1,20}", 1..5)) {
            let header: String = toks.iter().map(|t| format!("(<{t}>) ")).collect();
            let h = IfHeader::parse(&header).unwrap();
            prop_assert_eq!(h.tokens().collect::<Vec<_>>(), toks.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }
}
