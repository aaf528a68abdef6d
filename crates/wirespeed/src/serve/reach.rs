//! How a server is reached: the addresses a bind covers, the machine's host
//! names, the `Host` values it answers (a guard against DNS rebinding)
//! and the URLs the start line hands out on a LAN.

use std::net::{IpAddr, SocketAddr};

use wirespeed_service::origin::AllowedHosts;

/// The machine's addresses now (empty, with a warning, if they cannot be read).
fn interface_addresses() -> Vec<IpAddr> {
    match if_addrs::get_if_addrs() {
        Ok(ifs) => ifs.iter().map(|i| i.ip()).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the network interfaces; only --allow-host names and the bound address are answered");
            Vec::new()
        }
    }
}

/// The addresses a bind to `ip` is reached by: every interface address of
/// its family for an unspecified bind (both families for `::`, which takes
/// IPv4 too on Linux), else `ip` alone; loopback binds also answer both
/// loopback addresses.
pub fn bound_addresses(ip: IpAddr, interfaces: &[IpAddr]) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => {
            interfaces.iter().copied().filter(IpAddr::is_ipv4).collect()
        }
        IpAddr::V6(v6) if v6.is_unspecified() => interfaces.to_vec(),
        other => vec![other],
    };
    if ip.is_loopback() {
        out.extend([
            IpAddr::from([127, 0, 0, 1]),
            IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
        ]);
    }
    out.sort();
    out.dedup();
    out
}

/// The machine's host names: the kernel's node name, its short form when it
/// is a dotted name, and `NAME.local` (mDNS) for a short one.
pub fn host_names() -> Vec<String> {
    let node = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .to_ascii_lowercase();
    names_for(&node)
}

fn names_for(node: &str) -> Vec<String> {
    let node = node.trim().trim_end_matches('.');
    if node.is_empty() || node == "localhost" {
        return Vec::new();
    }
    let mut out = vec![node.to_string()];
    match node.split_once('.') {
        Some((short, _)) => out.push(short.to_string()),
        None => out.push(format!("{node}.local")),
    }
    out
}

/// What the server answers on `bind`: its addresses, `localhost` when it
/// covers loopback, the machine's names, the `--listen` name and
/// `--allow-host` names (`*`: anything).
pub fn allowed_hosts(bind: IpAddr, listen_name: Option<&str>, allow: &[String]) -> AllowedHosts {
    let ips = bound_addresses(bind, &interface_addresses());
    let mut names: Vec<String> = Vec::new();
    if ips.iter().any(IpAddr::is_loopback) {
        names.push("localhost".into());
    }
    names.extend(host_names());
    names.extend(listen_name.map(str::to_string));
    names.extend(allow.iter().cloned());
    AllowedHosts::new(&names, &ips)
}

/// What a `--tls-self-signed` certificate names besides localhost and the
/// loopback addresses: the bind's addresses, the machine's names, the
/// `--listen` name and `--tls-name` names.
pub fn certificate_names(listen: &super::listen::ListenAddr, tls_names: &[String]) -> Vec<String> {
    let mut names: Vec<String> = bound_addresses(listen.addr.ip(), &interface_addresses())
        .iter()
        .map(IpAddr::to_string)
        .collect();
    names.extend(host_names());
    names.extend(listen.name.clone());
    names.extend(tls_names.iter().cloned());
    names
}

/// The URLs to hand out for a server on `addr` (an unspecified bind): one
/// per address other machines can use (no loopback, no link-local IPv6,
/// which would need a zone), IPv4 first.
pub fn lan_urls(scheme: &str, addr: SocketAddr) -> Vec<String> {
    lan_urls_from(scheme, addr, &interface_addresses())
}

fn lan_urls_from(scheme: &str, addr: SocketAddr, interfaces: &[IpAddr]) -> Vec<String> {
    if !addr.ip().is_unspecified() {
        return Vec::new();
    }
    let mut ips: Vec<IpAddr> = bound_addresses(addr.ip(), interfaces)
        .into_iter()
        .filter(|ip| match ip {
            IpAddr::V4(v4) => !v4.is_loopback() && !v4.is_unspecified(),
            IpAddr::V6(v6) => {
                !v6.is_loopback() && !v6.is_unspecified() && (v6.segments()[0] & 0xffc0) != 0xfe80
            }
        })
        .collect();
    ips.sort_by_key(|ip| ip.is_ipv6());
    ips.iter()
        .map(|ip| format!("{scheme}://{}", SocketAddr::new(*ip, addr.port())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(s: &[&str]) -> Vec<IpAddr> {
        s.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn binds_cover_their_addresses() {
        let ifs = ips(&["127.0.0.1", "192.168.1.5", "::1", "fd00::5", "fe80::1"]);
        assert_eq!(
            bound_addresses("0.0.0.0".parse().unwrap(), &ifs),
            ips(&["127.0.0.1", "192.168.1.5"])
        );
        assert_eq!(bound_addresses("::".parse().unwrap(), &ifs).len(), 5);
        assert_eq!(
            bound_addresses("192.168.1.5".parse().unwrap(), &ifs),
            ips(&["192.168.1.5"])
        );
        assert_eq!(
            bound_addresses("127.0.0.1".parse().unwrap(), &[]),
            ips(&["127.0.0.1", "::1"])
        );
    }

    #[test]
    fn lan_urls_skip_loopback_and_link_local() {
        let ifs = ips(&[
            "127.0.0.1",
            "192.168.1.5",
            "::1",
            "fd00::5",
            "fe80::1",
            "10.0.0.2",
        ]);
        let any: SocketAddr = "[::]:8080".parse().unwrap();
        assert_eq!(
            lan_urls_from("http", any, &ifs),
            [
                "http://10.0.0.2:8080",
                "http://192.168.1.5:8080",
                "http://[fd00::5]:8080"
            ]
        );
        let v4: SocketAddr = "0.0.0.0:443".parse().unwrap();
        assert_eq!(
            lan_urls_from("https", v4, &ifs),
            ["https://10.0.0.2:443", "https://192.168.1.5:443"]
        );
        let one: SocketAddr = "192.168.1.5:80".parse().unwrap();
        assert!(lan_urls_from("http", one, &ifs).is_empty());
    }

    #[test]
    fn node_names() {
        assert_eq!(names_for("NAS"), ["NAS", "NAS.local"]);
        assert_eq!(names_for("nas.example.org."), ["nas.example.org", "nas"]);
        assert!(names_for("localhost").is_empty());
        assert!(names_for("").is_empty());
    }
}
