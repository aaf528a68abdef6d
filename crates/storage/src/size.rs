//! Sizes for people, in binary units: the one format of the server's
//! messages and the client's progress and summaries (a leaf module, so any
//! module may use it).

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

#[cfg(test)]
mod tests {
    use super::human_size;

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
}
