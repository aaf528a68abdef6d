//! `[rate]` in the rules file: how fast each principal's bytes may move,
//! summed over all of its connections, and the whole server's cap.
//! Sans-IO: text in, [`Rates`] or a reason out (who a request counts
//! against is `rate_keys.rs`).
//!
//! ```toml
//! [rate.user]        # bytes per second, each direction, all connections
//! alice = "20M"      # a [users] name, or one listed in [groups] (proxy sign-in)
//! "@team" = "10M"    # each member of the group, on their own (not shared)
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

use serde::Deserialize;
use toml::Spanned;

use super::groups::{GroupSet, Groups};

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
    users: HashMap<String, u64>,
    /// `"@group"`: each member's own rate (by its group bit).
    groups: Vec<(u8, u64)>,
}

impl Rates {
    /// Nothing is paced.
    pub fn is_empty(&self) -> bool {
        self.total.is_none()
            && self.anonymous.is_none()
            && self.users.is_empty()
            && self.groups.is_empty()
    }

    /// The rate named for `name` itself.
    pub fn user(&self, name: &str) -> Option<u64> {
        self.users.get(name).copied()
    }

    /// The rate of user `name` in `groups` (those the file lists it in and
    /// those a trusted proxy named): its own line, else the highest of its
    /// groups' lines (as rights, the most a group gives).
    pub fn for_user(&self, name: &str, groups: GroupSet) -> Option<u64> {
        self.user(name).or_else(|| {
            let of_groups = self.groups.iter().filter(|(bit, _)| groups.contains(*bit));
            of_groups.map(|(_, r)| *r).max()
        })
    }

    /// Check `[rate]`: `user` names a user with a password (`known`), one
    /// listed in `[groups]`, an `"@group"` or `"*"`. A refusal is the text
    /// offset to blame and the reason.
    pub(crate) fn from_raw(
        raw: &RawRates,
        known: impl Fn(&str) -> bool,
        groups: &mut Groups,
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
            if let Some(group) = who.get_ref().strip_prefix('@') {
                let bit = groups.define(group).map_err(|e| (who.span().start, e))?;
                rates.groups.push((bit, r));
                continue;
            }
            if !known(who.get_ref()) && !groups.is_member(who.get_ref()) {
                return Err((
                    who.span().start,
                    format!(
                        "{:?} is named in [rate.user] but missing from [users] and [groups] \
                         (\"*\" is each anonymous address, \"@name\" each member of a group)",
                        who.get_ref()
                    ),
                ));
            }
            rates.users.insert(who.get_ref().clone(), r);
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
            "",
            "M",
            "0",
            "0M",
            "-5M",
            "+5M",
            "1.5M",
            "5X",
            "5 M M",
            "M5",
            "5Mbit",
            "99999999999T",
            "5M/",
            "5/s/s",
            "2 MB",
            " 5M",
            "5M ",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_rules_file_checks_its_rate_lines() {
        use crate::rules::Rules;
        let hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$GpZ3sK/oH9p7VIiV56G/64Zo/8GDdQbVdtVbHL5i4nE";
        let ok = Rules::parse(&format!(
            "[users]\nalice = \"{hash}\"\n[rate.user]\nalice = \"20M\"\n\"*\" = \"5M\"\n[rate]\ntotal = \"200M\"\n"
        ))
        .unwrap();
        assert_eq!(ok.rates().user("alice"), Some(20 << 20));
        assert_eq!(
            (ok.rates().anonymous, ok.rates().total),
            (Some(5 << 20), Some(200 << 20))
        );
        for (text, line, says) in [
            (
                "[rate.user]\nzed = \"5M\"\n",
                2,
                "missing from [users] and [groups]",
            ),
            ("[rate.user]\n\"@a:b\" = \"5M\"\n", 2, "has a ':'"),
            ("[rate.user]\n\"*\" = \"5 M\"\n", 2, "not a rate"),
            ("[rate]\ntotal = \"0\"\n", 2, "zero"),
            ("[rate]\ntotl = \"5M\"\n", 2, "unknown field"),
        ] {
            let e = Rules::parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.reason.contains(says), "{text}: {e}");
        }
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
