//! Where the load goes: `http://HOST[:PORT]/prefix/`. Object names are
//! appended to the prefix, which always ends in `/`.

use crate::LoadError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Host as written (for the Host field), without brackets for IPv6.
    pub host: String,
    pub port: u16,
    /// The path prefix, starting and ending with `/`.
    pub prefix: String,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, LoadError> {
        let bad = |why: &str| LoadError::Url(format!("{url:?}: {why}"));
        let rest = if let Some(r) = url.strip_prefix("http://") {
            r
        } else if url.starts_with("https://") {
            return Err(bad("https is not supported by bench load; use http://"));
        } else {
            return Err(bad("expected http://HOST:PORT/prefix/"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        if path.contains(['?', '#']) {
            return Err(bad("no query or fragment: the prefix is a folder"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            (h, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            Some(p) => p.parse().map_err(|_| bad("the port is not a number"))?,
            None => 80,
        };
        let mut prefix = path.to_string();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        Ok(Target {
            host: host.to_string(),
            port,
            prefix,
        })
    }

    /// The Host field value.
    pub fn authority(&self) -> String {
        let h = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == 80 {
            h
        } else {
            format!("{h}:{}", self.port)
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}{}", self.authority(), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn parses_urls() {
        let t = Target::parse("http://127.0.0.1:8080/data/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.prefix.as_str()),
            ("127.0.0.1", 8080, "/data/")
        );
        let t = Target::parse("http://localhost/x").unwrap();
        assert_eq!((t.port, t.prefix.as_str()), (80, "/x/"));
        assert_eq!(t.url(), "http://localhost/x/");
        let t = Target::parse("http://[::1]:9/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.authority()),
            ("::1", "[::1]:9".to_string())
        );
        assert_eq!(Target::parse("http://h:1").unwrap().prefix, "/");
        for bad in [
            "https://h/",
            "ftp://h/",
            "http://:80/",
            "http://h:x/",
            "http://h/?a",
            "h:80",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
