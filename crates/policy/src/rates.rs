//! `[rate]` in the rules file: how fast each principal's bytes may move,
//! summed over all of its connections, and the whole server's cap.
//! Sans-IO: text in, [`Rates`] or a reason out; who a request counts
//! against ([`Policy::rate_key`]).
//!
//! ```toml
//! [rate.user]        # bytes per second, each direction, all connections
//! alice = "20M"
//! "*" = "5M"         # each anonymous address (IPv6: each /64)
//! [rate]
//! total = "200M"     # the whole server, each direction
//! ```
//!
//! A rate is a whole number with an optional suffix K, M, G or T (powers of
//! 1024, as every size on the command line; `B`, `iB` and `/s` may follow):
//! `"20M"` is 20 MiB per second. Uploads and downloads are paced apart,
//! each at the rate. A share link's bytes count against its minter (a link
//! acts for its minter), a `--token` holder's only against the total.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use serde::Deserialize;
use toml::Spanned;

use super::rules::UserName;
use super::{shares, Policy, Principal};

/// `[rate]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRates {
    total: Option<Spanned<String>>,
    #[serde(default)]
    user: BTreeMap<Spanned<String>, Spanned<String>>,
}

/// The rates of a rules file (bytes per second).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rates {
    pub total: Option<u64>,
    /// Each anonymous address (`"*"`).
    pub anonymous: Option<u64>,
    users: HashMap<UserName, u64>,
}

/// Whose bucket a request's bytes count against, besides the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateKey {
    User(UserName),
    /// An anonymous address: IPv4 whole, IPv6 by its /64 (one host holds a
    /// whole /64, so a limit per address would be no limit).
    Address(IpAddr),
}

impl Rates {
    /// Nothing is paced.
    pub fn is_empty(&self) -> bool {
        self.total.is_none() && self.anonymous.is_none() && self.users.is_empty()
    }

    /// The rate of a principal's bucket.
    pub fn of(&self, key: RateKey) -> Option<u64> {
        match key {
            RateKey::User(u) => self.users.get(&u).copied(),
            RateKey::Address(_) => self.anonymous,
        }
    }

    /// Check `[rate]`: `user` names a configured user (found by `known`) or
    /// `"*"`. A refusal is the text offset to blame and the reason.
    pub(crate) fn from_raw(
        raw: &RawRates,
        known: impl Fn(&str) -> Option<UserName>,
    ) -> Result<Rates, (usize, String)> {
        let rate = |v: &Spanned<String>| parse_rate(v.get_ref()).map_err(|r| (v.span().start, r));
        let mut rates = Rates {
            total: raw.total.as_ref().map(rate).transpose()?,
            ..Rates::default()
        };
        for (who, value) in &raw.user {
            let r = rate(value)?;
            if who.get_ref() == "*" {
                rates.anonymous = Some(r);
                continue;
            }
            let Some(name) = known(who.get_ref()) else {
                return Err((
                    who.span().start,
                    format!(
                        "{:?} is named in [rate.user] but missing from [users] \
                         (\"*\" is each anonymous address)",
                        who.get_ref()
                    ),
                ));
            };
            rates.users.insert(name, r);
        }
        Ok(rates)
    }
}

/// `"20M"` → 20 MiB per second. Strict: digits, then at most one unit
/// (K, M, G, T; with `B` or `iB`; any case), then optionally `/s`; no
/// space, sign, fraction or zero (leave a principal out to leave it unpaced).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("{text:?} is not a rate: bytes per second like \"500K\", \"20M\" or \"1G\" (powers of 1024)")
    };
    let s = text.strip_suffix("/s").unwrap_or(text);
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    if digits.is_empty() {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(bad()),
    };
    if n == 0 {
        return Err(format!(
            "{text:?}: a rate of zero would stop every transfer (leave the name out to leave it unpaced)"
        ));
    }
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large a rate"))
}

impl Policy {
    /// The rates of the rules file, if one is loaded and has any.
    pub fn rates(&self) -> Option<std::sync::Arc<super::rules::Rules>> {
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
                let (name, _) = self.users()?.rules().user(&grant.by)?;
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
    use proptest::prelude::*;

    #[test]
    fn rates_by_example() {
        assert_eq!(parse_rate("20M"), Ok(20 << 20));
        assert_eq!(parse_rate("5m"), Ok(5 << 20));
        assert_eq!(parse_rate("500K"), Ok(500 << 10));
        assert_eq!(parse_rate("1GiB/s"), Ok(1 << 30));
        assert_eq!(parse_rate("2MB"), Ok(2 << 20));
        assert_eq!(parse_rate("1000"), Ok(1000));
        for bad in [
            "", "M", "0", "0M", "-5M", "+5M", "1.5M", "5X", "5 M M", "M5", "5Mbit", "99999999999T",
            "5M/", "5/s/s", "2 MB", " 5M", "5M ",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad:?} accepted");
        }
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

    proptest! {
        /// Every number with every unit reads back as number × unit, and
        /// anything with a character outside the grammar is refused.
        #[test]
        fn rate_round_trip(n in 1u64..1_000_000, unit in 0usize..5, form in 0usize..4, per_s in any::<bool>()) {
            let letters = ["", "K", "M", "G", "T"];
            let suffix = match (unit, form) {
                (0, 0 | 1) => String::new(),
                (0, _) => "B".into(),
                (_, 0) => letters[unit].into(),
                (_, 1) => letters[unit].to_lowercase(),
                (_, 2) => format!("{}B", letters[unit]),
                _ => format!("{}iB", letters[unit]),
            };
            let text = format!("{n}{suffix}{}", if per_s { "/s" } else { "" });
            let expect = n.checked_mul(1u64 << (10 * unit as u32));
            prop_assert_eq!(parse_rate(&text).ok(), expect);
        }

        #[test]
        fn junk_is_refused(text in "[0-9]{0,4}[^0-9KMGTkmgtiIbB/s\\s]{1,3}[0-9A-Za-z]{0,2}") {
            prop_assert!(parse_rate(&text).is_err(), "{:?}", text);
        }
    }
}
