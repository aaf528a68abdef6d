//! What a typed query becomes, without I/O: FTS5 expressions with every
//! user character quoted (a query is data, never FTS5 syntax), and the
//! range of stored paths below a folder.

/// A name query: fragments of three or more characters go to the trigram
/// index (each must occur in the name); shorter ones are `LIKE` patterns
/// checked on the rows the index (or, with none, a scan) yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameQuery {
    /// The FTS5 `MATCH` expression, `None` when every fragment is short.
    pub fts: Option<String>,
    /// `LIKE` patterns (escaped with `\`) for the short fragments.
    pub like: Vec<String>,
}

/// Most fragments a query keeps (the rest are ignored).
pub const MAX_TERMS: usize = 8;

impl NameQuery {
    /// `None` for a query with no fragment at all.
    pub fn parse(text: &str) -> Option<NameQuery> {
        let mut fts = Vec::new();
        let mut like = Vec::new();
        for word in text.split_whitespace().take(MAX_TERMS) {
            if word.chars().count() >= 3 {
                fts.push(quote(word));
            } else {
                like.push(like_pattern(word));
            }
        }
        if fts.is_empty() && like.is_empty() {
            return None;
        }
        Some(NameQuery {
            fts: (!fts.is_empty()).then(|| fts.join(" AND ")),
            like,
        })
    }
}

/// A text query: each word must occur; the last one may be a prefix (the
/// word being typed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextQuery {
    pub fts: String,
}

impl TextQuery {
    pub fn parse(text: &str) -> Option<TextQuery> {
        let words: Vec<&str> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .take(MAX_TERMS)
            .collect();
        let (last, rest) = words.split_last()?;
        let mut fts: Vec<String> = rest.iter().map(|w| quote(w)).collect();
        fts.push(format!("{}*", quote(last)));
        Some(TextQuery {
            fts: fts.join(" AND "),
        })
    }
}

/// An FTS5 string: in double quotes, a quote doubled.
fn quote(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// `%word%` with `%`, `_` and `\` escaped by `\`.
fn like_pattern(word: &str) -> String {
    let mut p = String::with_capacity(word.len() + 2);
    p.push('%');
    for c in word.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

/// The stored paths strictly below folder `below` (`""`: the root), as a
/// half-open range `[lo, hi)` of strings; `None` at the root (everything).
/// Paths are stored without a leading or trailing `/`, so `a/b/…` sorts
/// between `a/b/` and `a/b0` (`'0'` follows `'/'`).
pub fn below_range(below: &str) -> Option<(String, String)> {
    let below = below.trim_matches('/');
    if below.is_empty() {
        return None;
    }
    Some((format!("{below}/"), format!("{below}0")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fragments_split_between_index_and_like() {
        let q = NameQuery::parse("  rep 2024 x_").unwrap();
        assert_eq!(q.fts.as_deref(), Some("\"rep\" AND \"2024\""));
        assert_eq!(q.like, vec!["%x\\_%".to_string()]);
        assert_eq!(NameQuery::parse("   "), None);
        assert_eq!(NameQuery::parse("ab").unwrap().fts, None);
    }

    #[test]
    fn text_words_and_a_prefix_for_the_last() {
        let q = TextQuery::parse("hello, wor").unwrap();
        assert_eq!(q.fts, "\"hello\" AND \"wor\"*");
        assert_eq!(TextQuery::parse("  ,, "), None);
    }

    #[test]
    fn below_ranges() {
        assert_eq!(below_range("/"), None);
        assert_eq!(
            below_range("/a/b/"),
            Some(("a/b/".to_string(), "a/b0".to_string()))
        );
    }

    proptest! {
        /// Whatever is typed, each quoted term is one FTS5 string: the
        /// quotes in it are doubled, so it never ends early.
        #[test]
        fn terms_are_always_one_string(text in ".{0,40}") {
            if let Some(q) = NameQuery::parse(&text) {
                if let Some(fts) = q.fts {
                    for term in fts.split(" AND ") {
                        prop_assert!(term.starts_with('"') && term.ends_with('"'));
                        let inner = &term[1..term.len() - 1];
                        prop_assert!(!inner.replace("\"\"", "").contains('"'));
                    }
                }
            }
        }

        #[test]
        fn a_path_is_in_the_range_of_each_folder_above_it(
            segs in proptest::collection::vec("[a-z0-9 ._-]{1,6}", 2..5)
        ) {
            let path = segs.join("/");
            for k in 1..segs.len() {
                let (lo, hi) = below_range(&segs[..k].join("/")).unwrap();
                prop_assert!(path.as_str() >= lo.as_str() && path.as_str() < hi.as_str());
            }
        }
    }
}
