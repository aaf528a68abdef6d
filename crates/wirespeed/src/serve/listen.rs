//! `--listen`: a port, an address, or a host name with a port, resolved
//! once at start.

use std::net::{SocketAddr, ToSocketAddrs};

#[derive(Debug, Clone)]
pub struct ListenAddr {
    pub addr: SocketAddr,
    pub name: Option<String>,
}

/// What a `--listen` value says, before any name is resolved.
#[derive(Debug, PartialEq, Eq)]
enum ListenSpec {
    Addr(SocketAddr),
    Port(u16),
    Host(String, u16),
}

const LISTEN_FORMS: &str =
    "expected PORT, IP:PORT, [IPv6]:PORT or HOST:PORT, e.g. 8080, 0.0.0.0:8080, localhost:8080";

fn parse_port(p: &str, whole: &str) -> Result<u16, String> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid address {whole:?}: {LISTEN_FORMS}"));
    }
    p.parse()
        .map_err(|_| format!("invalid address {whole:?}: port {p} is not in 0-65535"))
}

fn parse_listen_spec(s: &str) -> Result<ListenSpec, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err(format!("empty address: {LISTEN_FORMS}"));
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return parse_port(s, s).map(ListenSpec::Port);
    }
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(ListenSpec::Addr(addr));
    }
    if s.matches(':').count() > 1 {
        return Err(format!(
            "invalid address {s:?}: an IPv6 address goes in brackets, e.g. [::1]:8080"
        ));
    }
    if let Some(port) = s.strip_prefix(':') {
        parse_port(port, s)?;
        return Err(format!(
            "{s:?} does not say which interface: give {port} for loopback only, or \
             0.0.0.0:{port} for every interface"
        ));
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!("{s:?} has no port: {LISTEN_FORMS} (e.g. {s}:8080)"));
    };
    if host.contains(':') || host.starts_with('[') {
        return Err(format!(
            "invalid address {s:?}: an IPv6 address goes in brackets, e.g. [::1]:8080"
        ));
    }
    let port = parse_port(port, s)?;
    let name_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if !name_ok {
        return Err(format!("invalid address {s:?}: {LISTEN_FORMS}"));
    }
    Ok(ListenSpec::Host(host.to_ascii_lowercase(), port))
}

/// `--listen`: a bare port is loopback; a host name is resolved now, and its
/// first IPv4 address is taken (what `localhost` users mean), else its first.
pub(super) fn parse_listen(s: &str) -> Result<ListenAddr, String> {
    match parse_listen_spec(s)? {
        ListenSpec::Addr(addr) => Ok(ListenAddr { addr, name: None }),
        ListenSpec::Port(port) => Ok(ListenAddr {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            name: None,
        }),
        ListenSpec::Host(host, port) => {
            let addrs: Vec<SocketAddr> = (host.as_str(), port)
                .to_socket_addrs()
                .map_err(|e| format!("cannot resolve {host:?}: {e}"))?
                .collect();
            let addr = addrs
                .iter()
                .find(|a| a.is_ipv4())
                .or(addrs.first())
                .copied()
                .ok_or_else(|| format!("{host:?} resolves to no address"))?;
            Ok(ListenAddr {
                addr,
                name: Some(host),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_forms() {
        use ListenSpec::*;
        assert_eq!(parse_listen_spec("8080"), Ok(Port(8080)));
        assert_eq!(parse_listen_spec("0"), Ok(Port(0)));
        assert_eq!(
            parse_listen_spec("0.0.0.0:80"),
            Ok(Addr("0.0.0.0:80".parse().unwrap()))
        );
        assert_eq!(
            parse_listen_spec("[::1]:8080"),
            Ok(Addr("[::1]:8080".parse().unwrap()))
        );
        assert_eq!(
            parse_listen_spec("LocalHost:8080"),
            Ok(Host("localhost".into(), 8080))
        );
        assert_eq!(
            parse_listen_spec("files.lan:443"),
            Ok(Host("files.lan".into(), 443))
        );
        for (bad, says) in [
            ("", "empty address"),
            ("70000", "not in 0-65535"),
            ("localhost:99999", "not in 0-65535"),
            (":8080", "0.0.0.0:8080 for every interface"),
            ("localhost", "has no port"),
            ("0.0.0.0", "has no port"),
            ("::1:8080", "in brackets"),
            ("local host:80", "expected PORT"),
            ("host:", "expected PORT"),
            ("host:-1", "expected PORT"),
            ("*:8080", "expected PORT"),
        ] {
            let e = parse_listen_spec(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[test]
    fn listen_resolves_names_and_ports() {
        let a = parse_listen("8080").unwrap();
        assert_eq!(a.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(a.name, None);
        let a = parse_listen("localhost:0").unwrap();
        assert!(a.addr.ip().is_loopback(), "{a:?}");
        assert_eq!(a.name.as_deref(), Some("localhost"));
        let e = parse_listen("no-such-host.invalid:80").unwrap_err();
        assert!(e.contains("cannot resolve"), "{e}");
    }
}
