//! Browser-facing request checks, sans-IO: which requests a web page on
//! another site must not be able to make, and which `Host` names a server
//! answers (DNS rebinding).
//!
//! Scripts and command-line clients send neither `Sec-Fetch-Site` nor
//! `Origin`, so they are never affected; browsers send one or both on
//! every state-changing request, and those headers cannot be forged by the
//! page that triggers the request.

use std::net::IpAddr;

/// The 421 answer's text: what the server answers, and the two fixes.
pub const MISDIRECTED: &str = "misdirected request: this server answers only the names and \
addresses it is reached by (its own addresses, the machine's host names, and serve \
--allow-host names; a guard against DNS rebinding). Add the name you used with \
serve --allow-host NAME (or --allow-host '*'), or, behind a reverse proxy, pass the \
client's Host on with its port (nginx: proxy_set_header Host $http_host)\n";

/// The port a URL of `scheme` means when it names none (RFC 6454 §4).
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        s if s.eq_ignore_ascii_case("http") => Some(80),
        s if s.eq_ignore_ascii_case("https") => Some(443),
        _ => None,
    }
}

/// A `host[:port]` authority split in two (an IPv6 host keeps its
/// brackets; a trailing dot goes); `None` for a port that is not a number.
/// Borrowed, so the per-request Host check allocates nothing; compare hosts
/// with `eq_ignore_ascii_case`.
fn split_authority(a: &str) -> Option<(&str, Option<u16>)> {
    let a = a.trim();
    let (host, port) = if a.starts_with('[') {
        let end = a.find(']')?;
        let port = match &a[end + 1..] {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (&a[..=end], port)
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(p.parse::<u16>().ok()?),
    };
    Some((host.strip_suffix('.').unwrap_or(host), port))
}

/// Whether a state-changing request comes from a page on another origin:
/// `Sec-Fetch-Site` other than `same-origin`/`none`, or an `Origin` that is
/// not the request's `Host` (including `Origin: null`). Ports compare with
/// their scheme's default filled in (RFC 6454: `https://files.lan` is
/// `files.lan:443`); `scheme` is the request's own when known (TLS, or a
/// trusted proxy's `X-Forwarded-Proto`), and then the Origin's must match it.
pub fn is_cross_origin(
    sec_fetch_site: Option<&str>,
    origin: Option<&str>,
    host: Option<&str>,
    scheme: Option<&str>,
) -> bool {
    if let Some(site) = sec_fetch_site {
        if !matches!(site.trim(), "same-origin" | "none") {
            return true;
        }
    }
    let Some(o) = origin.map(str::trim) else {
        return false;
    };
    let Some((o_scheme, o_authority)) = o.split_once("://") else {
        return true; // "null" or garbage
    };
    let Some(o_default) = default_port(o_scheme) else {
        return true; // another scheme
    };
    if scheme.is_some_and(|s| !s.eq_ignore_ascii_case(o_scheme)) {
        return true;
    }
    let (Some((o_host, o_port)), Some((h_host, h_port))) =
        (split_authority(o_authority), host.and_then(split_authority))
    else {
        return true; // no Host to compare, or an unreadable one
    };
    if !o_host.eq_ignore_ascii_case(h_host) {
        return true;
    }
    let o_port = o_port.unwrap_or(o_default);
    // A Host without a port means the request scheme's default; when the
    // scheme is unknown, the Origin's own.
    let h_port = h_port.unwrap_or_else(|| scheme.and_then(default_port).unwrap_or(o_default));
    o_port != h_port
}

/// The `Host` names and addresses a server answers (others get 421): the
/// addresses it is reachable by, the machine's names, and the operator's
/// `--allow-host` names; `*` among the names allows any. Any port.
#[derive(Debug, Clone, Default)]
pub struct AllowedHosts {
    any: bool,
    names: Vec<String>,
    ips: Vec<IpAddr>,
}

impl AllowedHosts {
    /// `names` (host names, IP literals, `[IPv6]`, or `*`) and `ips`.
    pub fn new(names: &[String], ips: &[IpAddr]) -> Self {
        let mut h = AllowedHosts {
            any: false,
            names: Vec::new(),
            ips: ips.iter().map(|ip| ip.to_canonical()).collect(),
        };
        for n in names {
            let n = n.trim();
            if n == "*" {
                h.any = true;
                continue;
            }
            let bare = n.trim_start_matches('[').trim_end_matches(']');
            match bare.parse::<IpAddr>() {
                Ok(ip) => h.ips.push(ip.to_canonical()),
                Err(_) => h.names.push(
                    n.trim_end_matches('.').to_ascii_lowercase(), // "files.lan." is "files.lan"
                ),
            }
        }
        h
    }

    /// What a loopback bind answers: `localhost`, `127.0.0.1`, `[::1]`,
    /// plus `extra`.
    pub fn loopback(extra: &[String]) -> Self {
        let mut names = vec!["localhost".to_string()];
        names.extend_from_slice(extra);
        AllowedHosts::new(
            &names,
            &[[127, 0, 0, 1].into(), std::net::Ipv6Addr::LOCALHOST.into()],
        )
    }

    /// Whether any Host is answered (`--allow-host '*'`).
    pub fn allows_any(&self) -> bool {
        self.any
    }

    /// Whether `host` (a `Host` header value, `name[:port]`) is one of them.
    pub fn allows(&self, host: &str) -> bool {
        if self.any {
            return true;
        }
        let Some((name, _port)) = split_authority(host) else {
            return false;
        };
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            // An IPv6 address must come in brackets.
            if ip.is_ipv6() != name.starts_with('[') {
                return false;
            }
            return self.ips.contains(&ip.to_canonical());
        }
        !name.is_empty() && self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_origin_decisions() {
        let h = Some("127.0.0.1:8080");
        let x = |site, origin, host| is_cross_origin(site, origin, host, None);
        // Scripts: no browser headers.
        assert!(!x(None, None, h));
        // The server's own page.
        assert!(!x(Some("same-origin"), Some("http://127.0.0.1:8080"), h));
        assert!(!x(Some("none"), None, h));
        assert!(!x(None, Some("https://127.0.0.1:8080"), h));
        // Other sites, other ports, opaque origins.
        assert!(x(Some("cross-site"), Some("https://evil.example"), h));
        assert!(x(Some("same-site"), Some("http://127.0.0.1:3000"), h));
        assert!(x(None, Some("https://evil.example"), h));
        assert!(x(None, Some("null"), h));
        assert!(x(None, Some("ftp://127.0.0.1:8080"), h));
        assert!(x(None, Some("http://127.0.0.1:3000"), h));
        assert!(x(None, Some("http://127.0.0.1:8080"), None));
    }

    #[test]
    fn default_ports_are_the_same_origin() {
        let x = |origin, host, scheme| is_cross_origin(None, Some(origin), Some(host), scheme);
        // Behind a TLS proxy that forwards Host with its port (`Host: files.lan:443`).
        assert!(!x("https://files.lan", "files.lan:443", None));
        assert!(!x("https://files.lan", "files.lan:443", Some("https")));
        assert!(!x("https://files.lan:443", "files.lan", None));
        assert!(!x("http://files.lan", "files.lan:80", None));
        assert!(!x("http://FILES.lan", "files.LAN.", None));
        assert!(!x("https://[::1]", "[::1]:443", None));
        // Another port, or the scheme the request did not come by.
        assert!(x("http://files.lan", "files.lan:443", None));
        assert!(x("https://files.lan", "files.lan:80", None));
        assert!(x("https://files.lan:8443", "files.lan", None));
        assert!(x("http://files.lan", "files.lan", Some("https")));
        assert!(x("https://files.lan", "files.lan:443", Some("http")));
        assert!(x("https://files.lan", "files.lan:x", None));
        assert!(x("https://files.lan", "other.lan:443", None));
    }

    #[test]
    fn loopback_host_names() {
        let l = AllowedHosts::loopback(&["files.lan".to_string()]);
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:1",
            "localhost.",
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
            "::1",
            "localhost.evil.example",
            "localhost:port",
        ] {
            assert!(!l.allows(no), "{no}");
        }
    }

    #[test]
    fn any_bind_answers_its_addresses_and_names() {
        let lan: IpAddr = "192.168.1.5".parse().unwrap();
        let v6: IpAddr = "fd00::5".parse().unwrap();
        let h = AllowedHosts::new(
            &[
                "nas".into(),
                "nas.local".into(),
                "Files.Lan.".into(),
                "[fd00::9]".into(),
            ],
            &[lan, v6, "127.0.0.1".parse().unwrap()],
        );
        for ok in [
            "192.168.1.5:8080",
            "192.168.1.5",
            "[fd00::5]:80",
            "[FD00::9]",
            "nas:8080",
            "NAS.local",
            "files.lan",
            "127.0.0.1:1",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for no in [
            "rebind.evil.example:8080",
            "192.168.1.6",
            "[fd00::6]",
            "nas.evil",
        ] {
            assert!(!h.allows(no), "{no}");
        }
        assert!(!h.allows_any());
        let any = AllowedHosts::new(&["*".into()], &[]);
        assert!(any.allows_any() && any.allows("rebind.evil.example"));
    }

    proptest::proptest! {
        /// Any Host or Origin value: a decision, never a panic; case and a
        /// trailing dot never change it; an allowed name stays allowed on
        /// any port.
        #[test]
        fn host_checks_take_any_input(host in "\\PC{0,40}", origin in "\\PC{0,40}", port in 0u16..) {
            let h = AllowedHosts::new(&["files.lan".into(), "[fd00::1]".into()], &["10.0.0.1".parse().unwrap()]);
            let _ = h.allows(&host);
            let _ = is_cross_origin(None, Some(&origin), Some(&host), None);
            let _ = is_cross_origin(None, Some(&origin), Some(&host), Some("https"));
            proptest::prop_assert_eq!(h.allows(&host), h.allows(&host.to_ascii_uppercase()));
            for name in ["files.lan", "FILES.LAN.", "10.0.0.1", "[fd00::1]"] {
                let with_port = format!("{name}:{port}");
                proptest::prop_assert!(h.allows(&with_port), "{}", with_port);
            }
            let same = format!("files.lan:{port}");
            let o = format!("http://files.lan:{port}");
            proptest::prop_assert!(!is_cross_origin(None, Some(&o), Some(&same), None));
        }
    }
}
