//! Serving under a path prefix (`serve --path-prefix /files`), for a reverse
//! proxy that passes `/files/...` through unchanged. The prefix is matched
//! and stripped here, once, before any route: handlers see the paths they
//! would see at the root, and read the prefix back from
//! [`Exchange::base`](crate::Exchange::base) to put it in every URL they make.

use crate::{Error, Exchange, Handler};

/// A validated path prefix: `/` followed by one or more segments, no
/// trailing slash (`/files`, `/a/b`). Segments are matched byte for byte
/// as sent, so they are limited to characters a client never needs to
/// percent-encode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPrefix(String);

/// Why a `--path-prefix` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    #[error("a path prefix starts with / (e.g. /files)")]
    NotAbsolute,
    #[error("a path prefix has no empty, . or .. segments")]
    BadSegment,
    #[error(
        "a path prefix is letters, digits and - . _ ~ between slashes (no % escapes): {0:?} is not"
    )]
    BadChar(char),
}

/// Where a request's path stands against the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Under the prefix: the handlers' path starts at this byte (a `/`).
    Inside(usize),
    /// The prefix itself without its slash: redirect to the folder.
    Bare,
    /// Anywhere else: not served.
    Outside,
}

impl PathPrefix {
    /// Parse a prefix as given on the command line; `Ok(None)` for `/` or
    /// nothing (served at the root). One trailing slash is dropped.
    pub fn parse(given: &str) -> Result<Option<PathPrefix>, PrefixError> {
        let trimmed = given.strip_suffix('/').unwrap_or(given);
        if trimmed.is_empty() {
            return Ok(None);
        }
        let rest = trimmed.strip_prefix('/').ok_or(PrefixError::NotAbsolute)?;
        for seg in rest.split('/') {
            if seg.is_empty() || seg == "." || seg == ".." {
                return Err(PrefixError::BadSegment);
            }
            if let Some(c) = seg
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')))
            {
                return Err(PrefixError::BadChar(c));
            }
        }
        Ok(Some(PathPrefix(trimmed.to_string())))
    }

    /// The prefix, without a trailing slash.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where `path` (the request target's path, as sent) stands.
    pub fn place(&self, path: &str) -> Placement {
        if path == self.0 {
            return Placement::Bare;
        }
        match strip_base(&self.0, path) {
            Some(_) => Placement::Inside(self.0.len()),
            None => Placement::Outside,
        }
    }

    /// `path` (a path at the root, starting with `/`) under the prefix.
    pub fn join(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }
}

/// `path` below the prefix `base` (as [`Exchange::base`](crate::Exchange::base)
/// gives it: `""` at the root), starting with `/`; `None` when it is not
/// under it. For the URLs requests carry in fields (WebDAV's `Destination`
/// and `If`), which name paths as the client sees them.
pub fn strip_base<'a>(base: &str, path: &'a str) -> Option<&'a str> {
    path.strip_prefix(base).filter(|rest| rest.starts_with('/'))
}

/// A handler served under a [`PathPrefix`]: requests outside it get 404,
/// the bare prefix a 301 to the folder, the rest reach `inner` with the
/// prefix stripped. Without a prefix, every request reaches `inner` as is.
pub struct Mount<H> {
    prefix: Option<PathPrefix>,
    inner: H,
}

impl<H: Handler> Mount<H> {
    pub fn new(prefix: Option<PathPrefix>, inner: H) -> Self {
        Mount { prefix, inner }
    }
}

impl<H: Handler> Handler for Mount<H> {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        let Some(prefix) = &self.prefix else {
            return self.inner.handle(ex).await;
        };
        match prefix.place(ex.path()) {
            Placement::Inside(at) => {
                ex.mount_at(at);
                self.inner.handle(ex).await
            }
            Placement::Bare => {
                ex.send_moved(format!("{}/", prefix.as_str()), b"moved to the folder\n")
                    .await
            }
            Placement::Outside => Err(Error::status(
                404,
                format!("not found: this server serves under {}/", prefix.as_str()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> PathPrefix {
        PathPrefix::parse(s).unwrap().unwrap()
    }

    #[test]
    fn parses_prefixes() {
        assert_eq!(PathPrefix::parse("").unwrap(), None);
        assert_eq!(PathPrefix::parse("/").unwrap(), None);
        assert_eq!(p("/files/").as_str(), "/files");
        assert_eq!(p("/a/b.c").as_str(), "/a/b.c");
        assert_eq!(PathPrefix::parse("files"), Err(PrefixError::NotAbsolute));
        assert_eq!(PathPrefix::parse("/a//b"), Err(PrefixError::BadSegment));
        assert_eq!(PathPrefix::parse("/a/../b"), Err(PrefixError::BadSegment));
        assert_eq!(PathPrefix::parse("/a%20b"), Err(PrefixError::BadChar('%')));
        assert_eq!(PathPrefix::parse("/a b"), Err(PrefixError::BadChar(' ')));
    }

    #[test]
    fn strips_bases() {
        assert_eq!(strip_base("", "/a"), Some("/a"));
        assert_eq!(strip_base("", "a"), None);
        assert_eq!(strip_base("/files", "/files/a%20b"), Some("/a%20b"));
        assert_eq!(strip_base("/files", "/files/"), Some("/"));
        assert_eq!(strip_base("/files", "/files"), None);
        assert_eq!(strip_base("/files", "/filesx/a"), None);
        assert_eq!(strip_base("/files", "/a"), None);
    }

    #[test]
    fn places_paths() {
        let f = p("/files");
        assert_eq!(f.place("/files/"), Placement::Inside(6));
        assert_eq!(f.place("/files/a/b"), Placement::Inside(6));
        assert_eq!(f.place("/files"), Placement::Bare);
        assert_eq!(f.place("/filesx/a"), Placement::Outside);
        assert_eq!(f.place("/"), Placement::Outside);
        assert_eq!(f.place("/-/health"), Placement::Outside);
        assert_eq!(f.place("/Files/a"), Placement::Outside);
        assert_eq!(f.place("/%66iles/a"), Placement::Outside);
    }

    proptest! {
        /// Any path under the prefix comes back whole after strip and join.
        #[test]
        fn inside_round_trips(
            segs in proptest::collection::vec("[a-z0-9_~-][a-z0-9._~-]{0,7}", 1..4),
            path in "/[ -~]{0,40}",
        ) {
            let prefix = p(&format!("/{}", segs.join("/")));
            let full = prefix.join(&path);
            match prefix.place(&full) {
                Placement::Inside(at) => {
                    prop_assert_eq!(&full[at..], path.as_str());
                    prop_assert_eq!(prefix.join(&full[at..]), full);
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }

        /// Nothing that does not start with the prefix and a slash is
        /// served under it.
        #[test]
        fn outside_is_never_inside(
            seg in "[a-z]{1,6}",
            path in "[ -~]{0,40}",
        ) {
            let prefix = p(&format!("/{seg}"));
            let inside = path.starts_with(&format!("/{seg}/"));
            let bare = path == format!("/{seg}");
            match prefix.place(&path) {
                Placement::Inside(at) => {
                    prop_assert!(inside);
                    prop_assert!(path[at..].starts_with('/'));
                }
                Placement::Bare => prop_assert!(bare),
                Placement::Outside => prop_assert!(!inside && !bare),
            }
        }
    }
}
