//! Whose bucket a request's bytes count against (`[rate]`, `rates.rs`): a
//! user their own, a share link its minter's (a link acts for its minter),
//! an anonymous client its address's, a `--token` holder only the total.

use std::net::IpAddr;
use std::sync::Arc;

use super::rules::{Rules, UserName};
use super::{shares, Policy, Principal};

/// Whose bucket a request's bytes count against, besides the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateKey {
    User(UserName),
    /// An anonymous address: IPv4 whole, IPv6 by its /64 (one host holds a
    /// whole /64, so a limit per address would be no limit).
    Address(IpAddr),
}

/// The rate of `key`'s bucket under `rules`: a user's own line, else its
/// groups' (listed in the file, or named by the proxy that signed it in).
pub fn rate_of(rules: &Rules, key: RateKey) -> Option<u64> {
    let rates = rules.rates();
    match key {
        RateKey::User(u) => {
            let groups = rules.groups().of(u.as_str()).union(u.proxy_groups());
            rates.for_user(u.as_str(), groups)
        }
        RateKey::Address(_) => rates.anonymous,
    }
}

impl Policy {
    /// The rates of the rules file, if one is loaded and has any.
    pub fn rates(&self) -> Option<Arc<Rules>> {
        let rules = self.users()?.rules();
        (!rules.rates().is_empty()).then_some(rules)
    }

    /// Whose bucket `who`'s bytes count against (from `addr` when
    /// anonymous), if anyone's: a user's own, a link's minter's, an
    /// anonymous address's; none for a `--token` holder.
    pub fn rate_key(&self, who: Principal, addr: IpAddr) -> Option<RateKey> {
        match who {
            Principal::Anyone => Some(RateKey::Address(address_key(addr))),
            Principal::TokenHolder => None,
            Principal::User(name) => Some(RateKey::User(name)),
            Principal::Link(id) => {
                let grant = self.shares()?.grant(id)?;
                if grant.by == shares::TOKEN_MINTER {
                    return None;
                }
                // A minter known only from [groups] (proxy sign-in) too.
                let name = self.users()?.rules().known(&grant.by)?;
                Some(RateKey::User(name))
            }
        }
    }
}

/// IPv4 (and IPv4-mapped) whole; IPv6 cut to its /64.
fn address_key(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_names_and_groups_get_their_rates() {
        let hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$GpZ3sK/oH9p7VIiV56G/64Zo/8GDdQbVdtVbHL5i4nE";
        let rules = Rules::parse(&format!(
            "[users]\nalice = \"{hash}\"\n[groups]\nteam = [\"alice\", \"carol\", \"dan\"]\n\
             ops = [\"dan\"]\n[rate.user]\ncarol = \"1M\"\nalice = \"3M\"\n\
             \"@team\" = \"2M\"\n\"@ops\" = \"4M\"\n\"@night\" = \"8M\"\n"
        ))
        .unwrap();
        let rate = |name: &str, header: &str| {
            let u = UserName::intern(name).with_groups(rules.groups().from_header(header));
            rate_of(&rules, RateKey::User(u))
        };
        // carol has no password: listed in [groups], signed in by the proxy.
        assert_eq!(rate("carol", ""), Some(1 << 20));
        // Her own line wins over her group's.
        assert_eq!(rate("alice", ""), Some(3 << 20));
        // dan: the highest of his listed groups.
        assert_eq!(rate("dan", ""), Some(4 << 20));
        // erin is named by the proxy only, with a group its header names.
        assert_eq!(rate("erin", "night"), Some(8 << 20));
        assert_eq!(rate("erin", "team"), Some(2 << 20));
        assert_eq!(rate("erin", "other"), None);
    }

    #[test]
    fn a_v6_address_counts_by_its_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(address_key(mapped), "10.0.0.1".parse::<IpAddr>().unwrap());
    }
}
