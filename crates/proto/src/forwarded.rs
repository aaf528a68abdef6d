//! `X-Forwarded-For` and `X-Forwarded-Proto` from reverse proxies, sans-IO.
//!
//! Anyone can send these fields, so they are read only when the TCP peer is
//! a proxy the operator trusts, and then `X-Forwarded-For` is read from the
//! right: each trusted proxy appends the address it received the request
//! from, so the rightmost address that is not a trusted proxy is the client
//! (everything left of it was written by that client and proves nothing).

use std::net::{IpAddr, SocketAddr};

/// One `X-Forwarded-For` element: an IP address, optionally with a port
/// (`1.2.3.4:5678`, `[::1]:5678`); `None` for anything else (`unknown`,
/// obfuscated identifiers, garbage).
fn parse_hop(s: &str) -> Option<IpAddr> {
    let s = s.trim().trim_matches('"');
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(sa) = s.parse::<SocketAddr>() {
        return Some(sa.ip());
    }
    let bare = s.strip_prefix('[')?.strip_suffix(']')?;
    bare.parse().ok()
}

/// The client's address: `peer` itself unless `trusted(peer)`; then the
/// rightmost `X-Forwarded-For` hop (over every field line, in order) that is
/// not trusted, or the leftmost hop when all are. An unreadable hop stops
/// the walk at the last address read (a trusted proxy vouched for no more).
pub fn client_addr<'a>(
    peer: IpAddr,
    forwarded_for: impl Iterator<Item = &'a [u8]>,
    trusted: impl Fn(IpAddr) -> bool,
) -> IpAddr {
    if !trusted(peer) {
        return peer;
    }
    let hops: Vec<&str> = forwarded_for
        .filter_map(|v| std::str::from_utf8(v).ok())
        .flat_map(|v| v.split(','))
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        match parse_hop(hop) {
            Some(ip) => {
                client = ip.to_canonical();
                if !trusted(client) {
                    return client;
                }
            }
            None => return client,
        }
    }
    client
}

/// The scheme the client used, from a trusted peer's `X-Forwarded-Proto`
/// (its last element; `http` or `https`, lowercase), else `None`.
pub fn client_proto(peer_trusted: bool, forwarded_proto: Option<&[u8]>) -> Option<&'static str> {
    if !peer_trusted {
        return None;
    }
    let v = std::str::from_utf8(forwarded_proto?).ok()?;
    let last = v.rsplit(',').next()?.trim();
    if last.eq_ignore_ascii_case("https") {
        Some("https")
    } else if last.eq_ignore_ascii_case("http") {
        Some("http")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// 10.0.0.0/8 and ::1 are the trusted proxies here.
    fn trusted(a: IpAddr) -> bool {
        match a {
            IpAddr::V4(v4) => v4.octets()[0] == 10,
            IpAddr::V6(v6) => v6.is_loopback(),
        }
    }

    fn client(peer: &str, lines: &[&str]) -> IpAddr {
        client_addr(ip(peer), lines.iter().map(|l| l.as_bytes()), trusted)
    }

    #[test]
    fn only_trusted_peers_are_believed() {
        assert_eq!(client("203.0.113.9", &["1.2.3.4"]), ip("203.0.113.9"));
        assert_eq!(client("10.0.0.1", &["1.2.3.4"]), ip("1.2.3.4"));
        assert_eq!(client("10.0.0.1", &[]), ip("10.0.0.1"));
        assert_eq!(client("::1", &["[2001:db8::7]:4711"]), ip("2001:db8::7"));
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        // The client forged "6.6.6.6" in front; its real address was appended.
        assert_eq!(
            client("10.0.0.1", &["6.6.6.6, 198.51.100.7, 10.0.0.2"]),
            ip("198.51.100.7")
        );
        // Over several field lines, in order.
        assert_eq!(
            client("10.0.0.1", &["6.6.6.6", "198.51.100.7:5000 , 10.0.0.2"]),
            ip("198.51.100.7")
        );
        // All trusted: the leftmost.
        assert_eq!(client("10.0.0.1", &["10.1.1.1, 10.0.0.2"]), ip("10.1.1.1"));
        // Garbage stops the walk at the last hop a trusted proxy vouched for.
        assert_eq!(
            client("10.0.0.1", &["1.2.3.4, unknown, 10.0.0.2"]),
            ip("10.0.0.2")
        );
        assert_eq!(client("10.0.0.1", &["nonsense"]), ip("10.0.0.1"));
        // IPv4-mapped addresses compare as IPv4.
        assert_eq!(
            client("10.0.0.1", &["::ffff:10.0.0.3, 1.2.3.4"]),
            ip("1.2.3.4")
        );
        assert_eq!(
            client("10.0.0.1", &["1.2.3.4, ::ffff:10.0.0.3"]),
            ip("1.2.3.4")
        );
    }

    #[test]
    fn forwarded_proto() {
        assert_eq!(client_proto(true, Some(b"https")), Some("https"));
        assert_eq!(client_proto(true, Some(b"HTTP")), Some("http"));
        assert_eq!(client_proto(true, Some(b"http, https")), Some("https"));
        assert_eq!(client_proto(true, Some(b"gopher")), None);
        assert_eq!(client_proto(true, None), None);
        assert_eq!(client_proto(false, Some(b"https")), None);
    }

    proptest::proptest! {
        /// Any field value: an answer, never a panic; an untrusted peer is
        /// always the client; a believed client is the peer or a listed hop.
        #[test]
        fn any_forwarded_for(value in "[0-9a-f.:, \\[\\]\"unknow]{0,60}", last in 0u8..=255) {
            let peer = IpAddr::from([10, 0, 0, last]);
            let got = client_addr(peer, std::iter::once(value.as_bytes()), trusted);
            let hops: Vec<IpAddr> = value.split(',').filter_map(parse_hop).map(|i| i.to_canonical()).collect();
            proptest::prop_assert!(got == peer || hops.contains(&got), "{} from {:?}", got, value);
            let outsider = IpAddr::from([203, 0, 113, last]);
            proptest::prop_assert_eq!(client_addr(outsider, std::iter::once(value.as_bytes()), trusted), outsider);
            let _ = client_proto(true, Some(value.as_bytes()));
        }
    }
}
