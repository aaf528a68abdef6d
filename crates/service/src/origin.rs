//! Browser-facing request checks, sans-IO: which requests a web page on
//! another site must not be able to make, and which `Host` names a server
//! bound to loopback answers (DNS rebinding).
//!
//! Scripts and command-line clients send neither `Sec-Fetch-Site` nor
//! `Origin`, so they are never affected; browsers send one or both on
//! every state-changing request, and those headers cannot be forged by the
//! page that triggers the request.

/// Whether a state-changing request comes from a page on another origin:
/// `Sec-Fetch-Site` other than `same-origin`/`none`, or an `Origin` whose
/// authority is not the request's `Host` (including `Origin: null`).
pub fn is_cross_origin(
    sec_fetch_site: Option<&str>,
    origin: Option<&str>,
    host: Option<&str>,
) -> bool {
    if let Some(site) = sec_fetch_site {
        if !matches!(site.trim(), "same-origin" | "none") {
            return true;
        }
    }
    match origin.map(str::trim) {
        None => false,
        Some(o) => {
            let authority = o
                .strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"));
            match (authority, host) {
                (Some(a), Some(h)) => !a.eq_ignore_ascii_case(h.trim()),
                _ => true, // "null", another scheme, or no Host to compare
            }
        }
    }
}

/// Names a loopback-bound server answers: `localhost`, `127.0.0.1`, `[::1]`
/// (any port), plus the names given.
#[derive(Debug, Clone, Default)]
pub struct LoopbackHosts {
    extra: Vec<String>,
}

impl LoopbackHosts {
    pub fn new(extra: &[String]) -> Self {
        LoopbackHosts {
            extra: extra.iter().map(|n| n.to_ascii_lowercase()).collect(),
        }
    }

    /// Whether `host` (a `Host` header value, `name[:port]`) is one of them.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim();
        let name = if let Some(rest) = host.strip_prefix('[') {
            match rest.split_once(']') {
                Some((ip, _)) => {
                    return ip == "::1" || self.extra.iter().any(|e| e == &format!("[{ip}]"))
                }
                None => return false,
            }
        } else {
            host.rsplit_once(':').map_or(host, |(n, _)| n)
        };
        let name = name.to_ascii_lowercase();
        name == "localhost" || name == "127.0.0.1" || self.extra.contains(&name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_origin_decisions() {
        let h = Some("127.0.0.1:8080");
        // Scripts: no browser headers.
        assert!(!is_cross_origin(None, None, h));
        // The server's own page.
        assert!(!is_cross_origin(
            Some("same-origin"),
            Some("http://127.0.0.1:8080"),
            h
        ));
        assert!(!is_cross_origin(Some("none"), None, h));
        assert!(!is_cross_origin(None, Some("https://127.0.0.1:8080"), h));
        // Other sites, other ports, opaque origins.
        assert!(is_cross_origin(
            Some("cross-site"),
            Some("https://evil.example"),
            h
        ));
        assert!(is_cross_origin(
            Some("same-site"),
            Some("http://127.0.0.1:3000"),
            h
        ));
        assert!(is_cross_origin(None, Some("https://evil.example"), h));
        assert!(is_cross_origin(None, Some("null"), h));
        assert!(is_cross_origin(None, Some("http://127.0.0.1:3000"), h));
        assert!(is_cross_origin(None, Some("http://127.0.0.1:8080"), None));
    }

    #[test]
    fn loopback_host_names() {
        let l = LoopbackHosts::new(&["files.lan".to_string()]);
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:1",
            "127.0.0.1:8080",
            "[::1]:8080",
            "[::1]",
            "files.lan:80",
        ] {
            assert!(l.allows(ok), "{ok}");
        }
        for no in [
            "rebind.evil.example",
            "rebind.evil.example:8080",
            "127.0.0.2",
            "[::2]:80",
            "",
            "[::1",
            "localhost.evil.example",
        ] {
            assert!(!l.allows(no), "{no}");
        }
    }
}
