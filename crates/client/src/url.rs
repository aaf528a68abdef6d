//! Just enough URL handling for `http://` and `https://` targets: scheme,
//! host (DNS name, IPv4, bracketed IPv6), port, and the request target.
//!
//! URLs are taken as people type or paste them: `ü`, spaces and other
//! characters a request target may not hold are percent-encoded (UTF-8),
//! while `%XX` escapes already present (copied from a listing) are kept as
//! they are, never encoded twice.

use std::fmt;

use crate::Error;

/// How many leading segments [`Url::prefix_candidates`] tries as a path
/// prefix: each costs a request where the root is not the server's.
pub const MAX_PREFIX_DEPTH: usize = 4;

/// An `http` or `https` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `https`?
    pub tls: bool,
    /// Host without IPv6 brackets.
    pub host: String,
    pub port: u16,
    /// Path and query, always starting with `/`, percent-encoded (only
    /// RFC 3986 path/query characters and `%XX` escapes).
    pub target: String,
}

fn invalid(url: &str, reason: &'static str) -> Error {
    Error::InvalidUrl {
        url: url.to_string(),
        reason,
    }
}

impl Url {
    pub fn parse(s: &str) -> Result<Url, Error> {
        let (tls, rest) = if let Some(r) = strip_prefix_ci(s, "http://") {
            (false, r)
        } else if let Some(r) = strip_prefix_ci(s, "https://") {
            (true, r)
        } else {
            return Err(invalid(s, "only http:// and https:// URLs are supported"));
        };
        // The fragment is never sent.
        let rest = rest.split_once('#').map_or(rest, |(a, _)| a);
        let (authority, target) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'?' => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        if authority.contains('@') {
            return Err(invalid(
                s,
                "user:password@ in URLs is not supported; use --token",
            ));
        }
        let default_port = if tls { 443 } else { 80 };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| invalid(s, "unclosed [ in IPv6 host"))?;
            let port = match after {
                "" => default_port,
                p => parse_port(
                    s,
                    p.strip_prefix(':')
                        .ok_or_else(|| invalid(s, "junk after IPv6 host"))?,
                )?,
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), parse_port(s, p)?),
                None => (authority.to_string(), default_port),
            }
        };
        if host.is_empty() {
            return Err(invalid(s, "missing host"));
        }
        Ok(Url {
            tls,
            host,
            port,
            target: encode_target(&target),
        })
    }

    /// `host[:port]` for the Host header (port omitted when it is the default).
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == if self.tls { 443 } else { 80 } {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// Resolve a `Location` value against this URL (absolute, or an
    /// absolute or relative path).
    pub fn resolve(&self, location: &str) -> Result<Url, Error> {
        let location = location.trim();
        if strip_prefix_ci(location, "http://").is_some()
            || strip_prefix_ci(location, "https://").is_some()
        {
            return Url::parse(location);
        }
        if location.starts_with("//") {
            let scheme = if self.tls { "https:" } else { "http:" };
            return Url::parse(&format!("{scheme}{location}"));
        }
        let location = location.split_once('#').map_or(location, |(a, _)| a);
        let target = if location.starts_with('/') {
            encode_target(location)
        } else {
            let base = self.path();
            let dir = &base[..base.rfind('/').map_or(0, |i| i + 1)];
            let dir = if dir.is_empty() { "/" } else { dir };
            encode_target(&format!("{dir}{location}"))
        };
        Ok(Url {
            tls: self.tls,
            host: self.host.clone(),
            port: self.port,
            target,
        })
    }

    /// Same scheme, host and port.
    pub fn same_origin(&self, other: &Url) -> bool {
        self.tls == other.tls
            && self.host.eq_ignore_ascii_case(&other.host)
            && self.port == other.port
    }

    /// The path without the query (still percent-encoded).
    pub fn path(&self) -> &str {
        self.target.split_once('?').map_or(&self.target, |(p, _)| p)
    }

    /// The path prefixes this URL's server may be served under (wirespeed's
    /// `serve --path-prefix` behind a proxy), the root first: `""`, then
    /// each leading run of whole segments but the last (`/files`,
    /// `/files/d` for `/files/d/a.txt`), at most [`MAX_PREFIX_DEPTH`] deep.
    /// A server's control routes (`/-/uploads/`, `/-/shares/`) sit below
    /// its prefix; the client asks at each until one is there.
    pub fn prefix_candidates(&self) -> Vec<&str> {
        let path = self.path();
        let mut out = vec![""];
        for (i, _) in path.match_indices('/').skip(1).take(MAX_PREFIX_DEPTH) {
            out.push(&path[..i]);
        }
        out
    }

    /// The path of control route `route` (`/-/shares`) for this URL's path
    /// under the prefix `base`: `{base}{route}{the path below base}`
    /// (`None` when the path is not below `base`).
    pub fn control_path(&self, base: &str, route: &str) -> Option<String> {
        let rest = self
            .path()
            .strip_prefix(base)
            .filter(|r| r.starts_with('/'))?;
        Some(format!("{base}{route}{rest}"))
    }

    /// A URL whose path ends with `/` gets `name` (percent-encoded) appended;
    /// any other URL is returned unchanged.
    pub fn with_file_name(&self, name: &str) -> Url {
        if !self.path().ends_with('/') {
            return self.clone();
        }
        let mut u = self.clone();
        let (path, query) = match self.target.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (self.target.as_str(), None),
        };
        u.target = format!("{path}{}", encode_segment(name));
        if let Some(q) = query {
            u.target.push('?');
            u.target.push_str(q);
        }
        u
    }

    /// `name` (percent-encoded) appended to a URL whose path ends with `/`,
    /// plus a `/` when it names a folder. The query is dropped but for its
    /// share link (`share=`): a folder link's credential covers what is
    /// below it, so every child asked through the link must carry it.
    pub fn child(&self, name: &str, folder: bool) -> Url {
        let mut u = self.clone();
        let path = self.path();
        let sep = if path.ends_with('/') { "" } else { "/" };
        u.target = format!(
            "{path}{sep}{}{}",
            encode_segment(name),
            if folder { "/" } else { "" }
        );
        u.with_share_of(self)
    }

    /// The `share=TOKEN` parameter of the query, if the URL is a share link.
    pub fn share_param(&self) -> Option<&str> {
        let (_, query) = self.target.split_once('?')?;
        query.split('&').find(|p| p.starts_with("share="))
    }

    /// This URL with `from`'s share link added to its query, unless it has
    /// one already (a redirect's `Location`, a child, an upload's place:
    /// wherever the link's holder is sent next on the same server).
    pub fn with_share_of(&self, from: &Url) -> Url {
        let Some(share) = from.share_param() else {
            return self.clone();
        };
        if self.share_param().is_some() || !self.same_origin(from) {
            return self.clone();
        }
        let mut u = self.clone();
        u.target
            .push(if u.target.contains('?') { '&' } else { '?' });
        u.target.push_str(share);
        u
    }

    /// The same URL with its path ending in `/` (a folder).
    pub fn as_folder(&self) -> Url {
        if self.path().ends_with('/') {
            return self.clone();
        }
        let mut u = self.clone();
        u.target = match self.target.split_once('?') {
            Some((p, q)) => format!("{p}/?{q}"),
            None => format!("{}/", self.target),
        };
        u
    }

    /// The last path segment, percent-decoded (a default download name).
    pub fn file_name(&self) -> Option<String> {
        let seg = self.path().rsplit('/').next()?;
        if seg.is_empty() {
            return None;
        }
        let name = decode(seg);
        (!name.is_empty() && name != "." && name != ".." && !name.contains('/')).then_some(name)
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}{}",
            if self.tls { "https" } else { "http" },
            self.authority(),
            self.target
        )
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len()
        && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes()))
    .then(|| &s[prefix.len()..])
}

fn parse_port(url: &str, p: &str) -> Result<u16, Error> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(url, "invalid port"));
    }
    p.parse().map_err(|_| invalid(url, "port out of range"))
}

/// Percent-encode one path segment: everything but RFC 3986 unreserved
/// characters and a few harmless sub-delimiters.
pub fn encode_segment(s: &str) -> String {
    encode_where(s, |b, _| {
        b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b)
    })
}

/// A request target as typed: characters outside RFC 3986's path and query
/// grammar (space, non-ASCII, controls, quotes, angle brackets, braces, `[`, `]`, a `%` that
/// starts no `%XX`) become `%XX` of their UTF-8 bytes; valid escapes stay.
pub fn encode_target(s: &str) -> String {
    let hex = |c: Option<&u8>| c.is_some_and(u8::is_ascii_hexdigit);
    encode_where(s, |c, rest| {
        c.is_ascii_alphanumeric()
            || b"-._~!$&'()*+,;=:@/?".contains(&c)
            || (c == b'%' && hex(rest.first()) && hex(rest.get(1)))
    })
}

/// `s` with every byte `keep(byte, bytes after it)` refuses written as `%XX`.
fn encode_where(s: &str, keep: impl Fn(u8, &[u8]) -> bool) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in b.iter().enumerate() {
        if keep(c, &b[i + 1..]) {
            out.push(c as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(c >> 4)] as char);
            out.push(HEX[usize::from(c & 15)] as char);
        }
    }
    out
}

/// Percent-decode (invalid escapes are kept as they are; invalid UTF-8 is replaced).
pub fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_candidates_are_whole_leading_segments() {
        let u = Url::parse("http://h/files/d/a%20b.txt?share=x").unwrap();
        assert_eq!(u.prefix_candidates(), ["", "/files", "/files/d"]);
        assert_eq!(
            Url::parse("http://h/a.txt").unwrap().prefix_candidates(),
            [""]
        );
        assert_eq!(Url::parse("http://h/").unwrap().prefix_candidates(), [""]);
        let deep = Url::parse("http://h/1/2/3/4/5/6/f").unwrap();
        assert_eq!(deep.prefix_candidates().len(), 1 + MAX_PREFIX_DEPTH);
        assert_eq!(
            u.control_path("/files", "/-/shares").as_deref(),
            Some("/files/-/shares/d/a%20b.txt")
        );
        assert_eq!(
            u.control_path("", "/-/uploads").as_deref(),
            Some("/-/uploads/files/d/a%20b.txt")
        );
        assert_eq!(u.control_path("/fil", "/-/shares"), None);
    }

    #[test]
    fn parses() {
        let u = Url::parse("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.target.as_str()),
            (false, "127.0.0.1", 8080, "/a/b?x=1")
        );
        let u = Url::parse("HTTPS://[::1]/").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.authority()),
            (true, "::1", 443, "[::1]".to_string())
        );
        let u = Url::parse("http://h:81?q").unwrap();
        assert_eq!(u.target, "/?q");
        assert_eq!(u.to_string(), "http://h:81/?q");
        assert!(Url::parse("ftp://x/").is_err());
        assert!(Url::parse("http://:80/").is_err());
        assert!(Url::parse("http://h:99999/").is_err());
    }

    #[test]
    fn typed_targets_are_encoded_once() {
        let t = |s: &str| Url::parse(s).unwrap().target;
        assert_eq!(t("http://h/w/ünï.txt"), "/w/%C3%BCn%C3%AF.txt");
        assert_eq!(t("http://h/w/%C3%BCn%C3%AF.txt"), "/w/%C3%BCn%C3%AF.txt");
        assert_eq!(t("http://h/a b/c d?x=ä b"), "/a%20b/c%20d?x=%C3%A4%20b");
        assert_eq!(t("http://h/100%/50%2"), "/100%25/50%252");
        assert_eq!(t("http://h/a%2fb"), "/a%2fb");
        assert_eq!(t("http://h/\"<>`{|}^[]"), "/%22%3C%3E%60%7B%7C%7D%5E%5B%5D");
        assert_eq!(t("http://h/tab\there"), "/tab%09here");
        let u = Url::parse("http://h/d/x").unwrap();
        assert_eq!(u.resolve("ü b").unwrap().target, "/d/%C3%BC%20b");
        assert_eq!(u.resolve("/e/%41 b#f").unwrap().target, "/e/%41%20b");
    }

    #[test]
    fn children_and_folders() {
        let u = Url::parse("http://h/d/").unwrap();
        assert_eq!(u.child("a b", false).target, "/d/a%20b");
        assert_eq!(u.child("ü", true).target, "/d/%C3%BC/");
        assert_eq!(
            Url::parse("http://h/d").unwrap().child("x", false).target,
            "/d/x"
        );
        assert_eq!(
            Url::parse("http://h/d?q").unwrap().as_folder().target,
            "/d/?q"
        );
        assert_eq!(u.as_folder(), u);
        // A share link's children carry the link; other parameters stay behind.
        let link = Url::parse("http://h/d/?format=json&share=a.b").unwrap();
        assert_eq!(link.child("x", false).target, "/d/x?share=a.b");
        assert_eq!(link.child("s", true).target, "/d/s/?share=a.b");
        let other = Url::parse("http://h/d/?archive=zip").unwrap();
        assert_eq!(
            other.with_share_of(&link).target,
            "/d/?archive=zip&share=a.b"
        );
        assert_eq!(link.with_share_of(&link), link, "never twice");
        let elsewhere = Url::parse("http://other/d/").unwrap();
        assert_eq!(elsewhere.with_share_of(&link), elsewhere, "another origin");
    }

    #[test]
    fn file_names() {
        let u = Url::parse("http://h/dir/").unwrap();
        assert_eq!(u.with_file_name("a b%.txt").target, "/dir/a%20b%25.txt");
        assert_eq!(
            u.with_file_name("a b%.txt").file_name().unwrap(),
            "a b%.txt"
        );
        let u = Url::parse("http://h/dir/x").unwrap();
        assert_eq!(u.with_file_name("y").target, "/dir/x");
        assert_eq!(Url::parse("http://h/").unwrap().file_name(), None);
        assert_eq!(decode("%4"), "%4");
        assert_eq!(decode("a%2"), "a%2");
    }
}
