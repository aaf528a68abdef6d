//! `--trusted-proxy`: the reverse proxies whose `X-Forwarded-For` and
//! `X-Forwarded-Proto` are believed (the decisions are in
//! `wirespeed_proto::forwarded`).

use std::net::IpAddr;

use ipnet::IpNet;

/// Address ranges of trusted reverse proxies; empty trusts nobody.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    pub fn new(nets: Vec<IpNet>) -> Self {
        TrustedProxies(nets)
    }

    /// One `--trusted-proxy` value: a CIDR range (`10.0.0.0/8`, `fd00::/8`)
    /// or a single address.
    pub fn parse_one(s: &str) -> Result<IpNet, String> {
        let s = s.trim();
        if let Ok(net) = s.parse::<IpNet>() {
            return Ok(net.trunc());
        }
        s.parse::<IpAddr>().map(IpNet::from).map_err(|_| {
            format!(
                "{s:?} is not an address or a CIDR range (e.g. 127.0.0.1, 10.0.0.0/8, fd00::/8)"
            )
        })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is one of them (IPv4-mapped IPv6 addresses as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|n| n.contains(&ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_single_addresses() {
        let t = TrustedProxies::new(
            ["10.0.0.0/8", "192.168.1.7", "fd00::/8", "10.1.2.3/8"]
                .iter()
                .map(|s| TrustedProxies::parse_one(s).unwrap())
                .collect(),
        );
        for yes in ["10.9.9.9", "192.168.1.7", "fd00::1", "::ffff:10.0.0.1"] {
            assert!(t.contains(yes.parse().unwrap()), "{yes}");
        }
        for no in ["11.0.0.1", "192.168.1.8", "fe80::1", "::1"] {
            assert!(!t.contains(no.parse().unwrap()), "{no}");
        }
        assert!(TrustedProxies::default().is_empty());
        let e = TrustedProxies::parse_one("proxy.lan").unwrap_err();
        assert!(e.contains("CIDR"), "{e}");
        assert!(TrustedProxies::parse_one("10.0.0.0/33").is_err());
    }
}
