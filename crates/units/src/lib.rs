//! Byte sizes for people, both ways, in binary units.
//!
//! [`human_size`] is the one format of the server's messages, the page's
//! listings and the client's progress; [`parse_size`] the one reader of
//! sizes typed by people (command-line options, the rules file's quotas).
//! A leaf crate, so the policy and the storage share it without depending
//! on each other.

/// Bytes for people: exact below 1 KiB, else in the largest binary unit it
/// reaches, rounded down to a tenth unless whole, e.g. `10 GiB`, `1.5 MiB`.
pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut unit = 0;
    while unit + 1 < UNITS.len() && n >> (10 * (unit + 2)) > 0 {
        unit += 1;
    }
    let size = 1u64 << (10 * (unit + 1));
    if n & (size - 1) == 0 {
        format!("{} {}", n / size, UNITS[unit])
    } else {
        let tenths = u128::from(n) * 10 / u128::from(size);
        format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit])
    }
}

/// Why a typed size was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// No leading whole number.
    #[error("not a size: {0:?} (a whole number with K, M, G or T, e.g. 4096, 256K, 50G)")]
    NotASize(String),
    /// A suffix other than K, M, G, T (with or without `B`/`iB`).
    #[error("unknown size unit {unit:?} in {text:?} (use K, M, G or T, e.g. 50G)")]
    UnknownUnit { unit: String, text: String },
    /// More than a u64 holds.
    #[error("size too large: {0:?}")]
    TooLarge(String),
}

/// `10G`, `512M`, `64KiB`, `256 K`, `1000` → bytes. K/M/G/T with or without
/// `B`/`iB` all mean powers of 1024 (what people mean by a file's size);
/// case and spaces around the unit are ignored. Range checks are the
/// caller's (each option has its own).
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let text = s.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() {
        return Err(SizeError::NotASize(text.to_string()));
    }
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(SizeError::UnknownUnit {
                unit: unit.trim().to_string(),
                text: text.to_string(),
            })
        }
    };
    let too_large = || SizeError::TooLarge(text.to_string());
    let n: u64 = digits.parse().map_err(|_| too_large())?;
    n.checked_mul(1u64 << shift).ok_or_else(too_large)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_for_people() {
        assert_eq!(human_size(0), "0 bytes");
        assert_eq!(human_size(1023), "1023 bytes");
        assert_eq!(human_size(1024), "1 KiB");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(10 << 30), "10 GiB");
        assert_eq!(human_size(12 << 30), "12 GiB");
        assert_eq!(human_size((1 << 20) - 1), "1023.9 KiB");
        assert_eq!(human_size(u64::MAX), "15.9 EiB");
    }

    #[test]
    fn typed_sizes() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("10G"), Ok(10 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size(" 256 K "), Ok(256 << 10));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert!(matches!(parse_size(""), Err(SizeError::NotASize(_))));
        assert!(matches!(parse_size("G"), Err(SizeError::NotASize(_))));
        assert!(matches!(parse_size("-1"), Err(SizeError::NotASize(_))));
        let unit = parse_size("5X").unwrap_err();
        assert!(unit.to_string().contains("\"X\""), "{unit}");
        assert!(matches!(
            parse_size("1.5G"),
            Err(SizeError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_size("99999999999T"),
            Err(SizeError::TooLarge(_))
        ));
        assert!(matches!(
            parse_size("99999999999999999999"),
            Err(SizeError::TooLarge(_))
        ));
    }

    proptest! {
        /// Every whole number of every unit reads back exactly, in any case.
        #[test]
        fn whole_units_read_back(n in 0u64..1 << 20, unit in 0usize..5, b in 0usize..3, upper: bool) {
            let letter = ["", "K", "M", "G", "T"][unit];
            let tail = if letter.is_empty() { "" } else { ["", "B", "iB"][b] };
            let mut text = format!("{n}{letter}{tail}");
            if !upper { text = text.to_lowercase(); }
            prop_assert_eq!(parse_size(&text), Ok(n << (10 * unit)));
        }

        /// A fraction, a sign, an exponent or a stray letter is refused.
        #[test]
        fn anything_else_is_refused(s in "[0-9]{0,3}[.,+eEX-]{1,2}[0-9]{0,2}[KMGT]?") {
            prop_assert!(parse_size(&s).is_err());
        }

        /// Whatever is typed, the answer is a number or a reason, never a panic.
        #[test]
        fn any_text_is_read_or_refused(s in ".{0,24}") {
            let _ = parse_size(&s);
        }

        /// What `human_size` prints never claims more than there is.
        #[test]
        fn human_sizes_round_down(n: u64) {
            let shown = human_size(n);
            let (num, unit) = shown.split_once(' ').unwrap();
            let shift = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
                .iter().position(|u| *u == unit).unwrap() as u32;
            let tenths: u128 = match num.split_once('.') {
                Some((w, f)) => w.parse::<u128>().unwrap() * 10 + f.parse::<u128>().unwrap(),
                None => num.parse::<u128>().unwrap() * 10,
            };
            prop_assert!(tenths << (10 * shift) <= u128::from(n) * 10);
        }
    }
}
