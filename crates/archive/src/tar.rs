//! POSIX ustar headers, with a pax extended header (typeflag `x`) before an
//! entry whose name is not ASCII or does not fit ustar's name/prefix
//! fields, whose size is 8 GiB or more, or whose mtime ustar cannot hold.

use crate::{Entry, Kind};

const BLOCK: u64 = 512;
/// Two zero blocks end the archive.
pub(crate) const END_LEN: u64 = 2 * BLOCK;
/// The largest value of an 11-digit octal field (size, mtime).
const OCTAL_11_MAX: u64 = (1 << 33) - 1;

pub(crate) fn pad_len(size: u64) -> u64 {
    (BLOCK - size % BLOCK) % BLOCK
}

/// The name as stored: folders end in `/`.
fn tar_name(e: &Entry) -> std::borrow::Cow<'_, str> {
    match e.kind {
        Kind::Dir => format!("{}/", e.name).into(),
        Kind::File => e.name.as_str().into(),
    }
}

/// ustar's `prefix` (≤ 155 bytes) and `name` (≤ 100 bytes) for an ASCII
/// name, split at a `/`; `None` when it does not fit.
fn split_ustar(name: &str) -> Option<(&str, &str)> {
    if !name.is_ascii() {
        return None;
    }
    if name.len() <= 100 {
        return Some(("", name));
    }
    // The last usable '/' keeps the prefix as long as allowed.
    let bytes = name.as_bytes();
    let trailing = usize::from(bytes.last() == Some(&b'/'));
    (1..bytes.len() - trailing)
        .rev()
        .filter(|&p| bytes[p] == b'/')
        .find(|&p| p <= 155 && name.len() - p - 1 <= 100)
        .map(|p| (&name[..p], &name[p + 1..]))
}

fn mtime_fits(e: &Entry) -> bool {
    (0..=OCTAL_11_MAX as i64).contains(&e.mtime)
}

/// The pax records this entry needs (empty: none).
fn pax_records(e: &Entry) -> Vec<u8> {
    let mut out = Vec::new();
    let name = tar_name(e);
    if split_ustar(&name).is_none() {
        record(&mut out, "path", &name);
    }
    if e.size > OCTAL_11_MAX {
        record(&mut out, "size", &e.size.to_string());
    }
    if !mtime_fits(e) {
        record(&mut out, "mtime", &e.mtime.to_string());
    }
    out
}

/// One pax record, `LEN key=value\n`, where LEN counts itself.
fn record(out: &mut Vec<u8>, key: &str, value: &str) {
    let rest = 1 + key.len() + 1 + value.len() + 1;
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    out.extend_from_slice(format!("{len} {key}={value}\n").as_bytes());
}

/// Bytes before the entry's data: the pax header and its records (if
/// any), then the ustar header.
pub(crate) fn header_len(e: &Entry) -> u64 {
    let pax = pax_records(e).len() as u64;
    if pax == 0 {
        BLOCK
    } else {
        BLOCK + pax + pad_len(pax) + BLOCK
    }
}

pub(crate) fn header(e: &Entry, out: &mut Vec<u8>) {
    let pax = pax_records(e);
    let name = tar_name(e);
    if !pax.is_empty() {
        // The pax header's own name only has to be harmless.
        let pax_name = format!("PaxHeaders/{}", ascii_tail(&name, 89));
        block(out, ("", &pax_name), 0o644, pax.len() as u64, e.mtime, b'x');
        out.extend_from_slice(&pax);
        out.resize(out.len() + pad_len(pax.len() as u64) as usize, 0);
    }
    let fallback;
    let fields = match split_ustar(&name) {
        Some(f) => f,
        None => {
            // Readers without pax see a truncated, ASCII-only name.
            fallback = ascii_tail(&name, 100);
            ("", fallback.as_str())
        }
    };
    let flag = match e.kind {
        Kind::File => b'0',
        Kind::Dir => b'5',
    };
    block(out, fields, e.mode & 0o7777, e.size, e.mtime, flag);
}

/// The last `max` bytes of `name` with every non-ASCII byte as `_`.
fn ascii_tail(name: &str, max: usize) -> String {
    let s: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii() && b != 0 {
                char::from(b)
            } else {
                '_'
            }
        })
        .collect();
    s[s.len().saturating_sub(max)..].to_string()
}

/// One 512-byte ustar header. Values a field cannot hold are written as 0
/// (a pax record carries them).
fn block(
    out: &mut Vec<u8>,
    (prefix, name): (&str, &str),
    mode: u32,
    size: u64,
    mtime: i64,
    flag: u8,
) {
    let mut b = [0u8; BLOCK as usize];
    put(&mut b[0..100], name.as_bytes());
    octal(&mut b[100..108], u64::from(mode));
    octal(&mut b[108..116], 0); // uid
    octal(&mut b[116..124], 0); // gid
    octal(&mut b[124..136], if size > OCTAL_11_MAX { 0 } else { size });
    let mtime = u64::try_from(mtime).ok().filter(|&m| m <= OCTAL_11_MAX);
    octal(&mut b[136..148], mtime.unwrap_or(0));
    b[148..156].fill(b' ');
    b[156] = flag;
    b[257..263].copy_from_slice(b"ustar\0");
    b[263..265].copy_from_slice(b"00");
    octal(&mut b[329..337], 0); // devmajor
    octal(&mut b[337..345], 0); // devminor
    put(&mut b[345..500], prefix.as_bytes());
    let sum: u32 = b.iter().map(|&x| u32::from(x)).sum();
    // Six octal digits, NUL, space (what GNU tar writes).
    let digits = format!("{sum:06o}");
    b[148..154].copy_from_slice(digits.as_bytes());
    b[154] = 0;
    b[155] = b' ';
    out.extend_from_slice(&b);
}

fn put(field: &mut [u8], bytes: &[u8]) {
    let n = bytes.len().min(field.len());
    field[..n].copy_from_slice(&bytes[..n]);
}

/// `value` in octal, zero-filled, ending in NUL.
fn octal(field: &mut [u8], value: u64) {
    let digits = format!("{value:0width$o}", width = field.len() - 1);
    put(field, digits.as_bytes());
    if let Some(last) = field.last_mut() {
        *last = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_record_length_counts_itself() {
        let mut out = Vec::new();
        record(&mut out, "path", "a");
        assert_eq!(out, b"9 path=a\n");
        // Crossing a digit boundary: 95 + "99 " → 100 needs three digits.
        let mut out = Vec::new();
        let v = "x".repeat(91);
        record(&mut out, "path", &v);
        let len: usize = std::str::from_utf8(&out)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(len, out.len());
    }

    #[test]
    fn ustar_split() {
        assert_eq!(split_ustar("a/b"), Some(("", "a/b")));
        let long = format!("{}/{}", "d".repeat(120), "f".repeat(90));
        assert_eq!(split_ustar(&long), Some((&long[..120], &long[121..])));
        assert_eq!(split_ustar(&"x".repeat(101)), None);
        assert_eq!(split_ustar("caf\u{e9}"), None);
    }
}
