//! MS-DOS date and time (zip's mtime), from Unix seconds, in UTC.

/// `(time, date)` fields for `secs` since the epoch, clamped to the DOS
/// range 1980-01-01 ..= 2107-12-31.
pub(crate) fn dos(secs: i64) -> (u16, u16) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    if y < 1980 {
        return (0, (1 << 5) | 1);
    }
    if y > 2107 {
        return ((23 << 11) | (59 << 5) | 29, (127 << 9) | (12 << 5) | 31);
    }
    let (h, min, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let time = (h << 11) | (min << 5) | (s / 2);
    let date = ((y - 1980) << 9) | (i64::from(m) << 5) | i64::from(d);
    (time as u16, date as u16)
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(-1), (1969, 12, 31));
        // 2023-11-14 22:13:20 UTC
        let (t, d) = dos(1_700_000_000);
        assert_eq!(d, ((2023 - 1980) << 9) | (11 << 5) | 14);
        assert_eq!(t, (22 << 11) | (13 << 5) | 10);
        assert_eq!(dos(0), (0, 33));
        assert_eq!(dos(i64::MAX / 2).1 >> 9, 127);
    }
}
