//! The layout read back by minimal tar and zip readers written here from
//! the specifications (random access, so 4 GiB+ entries are checked
//! without producing their bytes), and every byte range of the pieces
//! equal to the same bytes of the whole.

use std::collections::HashMap;

use proptest::prelude::*;
use wirespeed_archive::{Archive, Entry, Format, Kind, Part};

/// Deterministic content of entry `i` at `off`.
fn data_byte(i: usize, off: u64) -> u8 {
    (i as u64)
        .wrapping_mul(31)
        .wrapping_add(off.wrapping_mul(7)) as u8
}

/// CRC-32 of entry `i`: computed for small files, a marker for huge ones.
fn crc_of(a: &Archive, i: usize) -> u32 {
    let e = &a.entries()[i];
    if e.size > 1 << 20 {
        return 0xC0FF_EE00 ^ i as u32;
    }
    let bytes: Vec<u8> = (0..e.size).map(|o| data_byte(i, o)).collect();
    crc32fast::hash(&bytes)
}

/// Bytes `start..end` assembled from the pieces (data parts: zeros past
/// 1 MiB into an entry, so huge entries cost nothing until read).
fn read(a: &Archive, start: u64, end: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for p in a.pieces(start, end) {
        match p.part {
            Part::Data(i) => out.extend((p.skip..p.skip + p.len).map(|o| data_byte(i, o))),
            part => {
                let mut g = Vec::new();
                a.render(part, part.crc_of(a).map(|i| crc_of(a, i)), &mut g);
                assert_eq!(
                    g.len() as u64,
                    a.span(part).1,
                    "{part:?} renders its length"
                );
                out.extend_from_slice(&g[p.skip as usize..(p.skip + p.len) as usize]);
            }
        }
    }
    assert_eq!(out.len() as u64, end.min(a.len()) - start.min(a.len()));
    out
}

#[derive(Debug, PartialEq)]
struct Read {
    name: String,
    dir: bool,
    size: u64,
    data_at: u64,
    mode: u32,
    mtime: i64,
}

fn octal(field: &[u8]) -> u64 {
    let s = std::str::from_utf8(field).unwrap();
    let s = s.trim_matches(|c| c == '\0' || c == ' ');
    u64::from_str_radix(s, 8).unwrap_or(0)
}

fn cstr(field: &[u8]) -> String {
    let n = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8(field[..n].to_vec()).unwrap()
}

fn read_tar(a: &Archive) -> Vec<Read> {
    let total = a.len();
    assert_eq!(total % 512, 0);
    let mut pos = 0;
    let mut out = Vec::new();
    let mut pax: HashMap<String, String> = HashMap::new();
    loop {
        let h = read(a, pos, pos + 512);
        if h.iter().all(|&b| b == 0) {
            assert!(read(a, pos + 512, pos + 1024).iter().all(|&b| b == 0));
            assert_eq!(pos + 1024, total, "two zero blocks end the archive");
            return out;
        }
        let mut sum_h = h.clone();
        sum_h[148..156].fill(b' ');
        let sum: u64 = sum_h.iter().map(|&b| u64::from(b)).sum();
        assert_eq!(octal(&h[148..156]), sum, "checksum");
        assert_eq!(&h[257..263], b"ustar\0");
        let size = octal(&h[124..136]);
        let pad = (512 - size % 512) % 512;
        match h[156] {
            b'x' => {
                let rec = read(a, pos + 512, pos + 512 + size);
                let mut rest = &rec[..];
                while !rest.is_empty() {
                    let sp = rest.iter().position(|&b| b == b' ').unwrap();
                    let len: usize = std::str::from_utf8(&rest[..sp]).unwrap().parse().unwrap();
                    let kv = std::str::from_utf8(&rest[sp + 1..len - 1]).unwrap();
                    assert_eq!(rest[len - 1], b'\n');
                    let (k, v) = kv.split_once('=').unwrap();
                    pax.insert(k.into(), v.into());
                    rest = &rest[len..];
                }
                pos += 512 + size + pad;
            }
            flag @ (b'0' | b'5') => {
                let prefix = cstr(&h[345..500]);
                let mut name = cstr(&h[0..100]);
                if !prefix.is_empty() {
                    name = format!("{prefix}/{name}");
                }
                let name = pax.remove("path").unwrap_or(name);
                let size = pax.remove("size").map_or(size, |s| s.parse().unwrap());
                let mtime = pax
                    .remove("mtime")
                    .map_or(octal(&h[136..148]) as i64, |s| s.parse().unwrap());
                assert!(pax.is_empty());
                let pad = (512 - size % 512) % 512;
                let dir = flag == b'5';
                assert_eq!(dir, name.ends_with('/'));
                out.push(Read {
                    name: name.trim_end_matches('/').to_string(),
                    dir,
                    size,
                    data_at: pos + 512,
                    mode: octal(&h[100..108]) as u32,
                    mtime,
                });
                pos += 512 + size + pad;
            }
            f => panic!("unexpected typeflag {f}"),
        }
    }
}

fn u16at(b: &[u8], at: usize) -> u64 {
    u64::from(u16::from_le_bytes([b[at], b[at + 1]]))
}
fn u32at(b: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes(b[at..at + 4].try_into().unwrap()))
}
fn u64at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// (entries, whether any ZIP64 structure was used).
fn read_zip(a: &Archive) -> (Vec<Read>, bool) {
    let total = a.len();
    let eocd = read(a, total - 22, total);
    assert_eq!(u32at(&eocd, 0), 0x0605_4b50);
    assert_eq!(u16at(&eocd, 20), 0, "no comment");
    let (mut count, mut cd_size, mut cd_off) =
        (u16at(&eocd, 10), u32at(&eocd, 12), u32at(&eocd, 16));
    let mut zip64 = false;
    let mut end_at = total - 22;
    if count == 0xFFFF || cd_size == 0xFFFF_FFFF || cd_off == 0xFFFF_FFFF {
        zip64 = true;
        let loc = read(a, total - 42, total - 22);
        assert_eq!(u32at(&loc, 0), 0x0706_4b50);
        let rec_at = u64at(&loc, 8);
        let rec = read(a, rec_at, rec_at + 56);
        assert_eq!(u32at(&rec, 0), 0x0606_4b50);
        assert_eq!(u64at(&rec, 4), 44);
        count = u64at(&rec, 32);
        cd_size = u64at(&rec, 40);
        cd_off = u64at(&rec, 48);
        assert_eq!(rec_at, cd_off + cd_size);
        end_at = rec_at;
    }
    assert_eq!(cd_off + cd_size, end_at);
    let cd = read(a, cd_off, cd_off + cd_size);
    let mut at = 0usize;
    let mut out = Vec::new();
    let mut next_local = 0u64;
    for _ in 0..count {
        assert_eq!(u32at(&cd, at), 0x0201_4b50);
        let flags = u16at(&cd, at + 8);
        assert_eq!(u16at(&cd, at + 10), 0, "stored");
        let crc = u32at(&cd, at + 16);
        let (mut csize, mut usize_) = (u32at(&cd, at + 20), u32at(&cd, at + 24));
        let (nlen, xlen, clen) = (
            u16at(&cd, at + 28) as usize,
            u16at(&cd, at + 30) as usize,
            u16at(&cd, at + 32) as usize,
        );
        let attrs = u32at(&cd, at + 38);
        let mut off = u32at(&cd, at + 42);
        let name_bytes = &cd[at + 46..at + 46 + nlen];
        if flags & (1 << 11) == 0 {
            assert!(
                name_bytes.is_ascii(),
                "non-ASCII name without the UTF-8 flag"
            );
        }
        let name = String::from_utf8(name_bytes.to_vec()).unwrap();
        let mut x = &cd[at + 46 + nlen..at + 46 + nlen + xlen];
        while !x.is_empty() {
            let (id, len) = (u16at(x, 0), u16at(x, 2) as usize);
            let mut f = &x[4..4 + len];
            if id == 1 {
                zip64 = true;
                for v in [&mut usize_, &mut csize, &mut off] {
                    if *v == 0xFFFF_FFFF {
                        *v = u64at(f, 0);
                        f = &f[8..];
                    }
                }
                assert!(f.is_empty(), "ZIP64 extra holds exactly the escaped fields");
            }
            x = &x[4 + len..];
        }
        assert_eq!(csize, usize_);
        at += 46 + nlen + xlen + clen;
        // The local header, then the data and the descriptor.
        assert_eq!(off, next_local, "entries are contiguous");
        let lh = read(a, off, off + 30);
        assert_eq!(u32at(&lh, 0), 0x0403_4b50);
        assert_eq!(u16at(&lh, 6), flags);
        let (lnlen, lxlen) = (u16at(&lh, 26), u16at(&lh, 28));
        assert_eq!(read(a, off + 30, off + 30 + lnlen), name_bytes);
        let local_zip64 = lxlen > 0;
        if local_zip64 {
            zip64 = true;
            assert_eq!(u32at(&lh, 22), 0xFFFF_FFFF);
        }
        let data_at = off + 30 + lnlen + lxlen;
        let mut end = data_at + usize_;
        let dir = name.ends_with('/');
        if flags & (1 << 3) != 0 {
            assert!(!dir);
            let dlen = if local_zip64 { 24 } else { 16 };
            let d = read(a, end, end + dlen);
            assert_eq!(u32at(&d, 0), 0x0807_4b50);
            assert_eq!(u32at(&d, 4), crc, "descriptor CRC = central CRC");
            let (dc, du) = if local_zip64 {
                (u64at(&d, 8), u64at(&d, 16))
            } else {
                (u32at(&d, 8), u32at(&d, 12))
            };
            assert_eq!((dc, du), (usize_, usize_));
            end += dlen;
        } else {
            assert!(dir, "files always carry a descriptor");
            assert_eq!((crc, usize_), (0, 0));
        }
        next_local = end;
        let mode = (attrs >> 16) as u32;
        assert_eq!(mode & 0o170_000, if dir { 0o040_000 } else { 0o100_000 });
        out.push(Read {
            name: name.trim_end_matches('/').to_string(),
            dir,
            size: usize_,
            data_at,
            mode: mode & 0o7777,
            mtime: 0,
        });
        // The CRC is the one of the entry's bytes.
        let i = out.len() - 1;
        if !dir {
            assert_eq!(crc, crc_of(a, i) as u64);
        }
    }
    assert_eq!(
        next_local, cd_off,
        "the central directory follows the entries"
    );
    (out, zip64)
}

fn check(a: &Archive) -> bool {
    let (got, zip64) = match a.format() {
        Format::Tar => (read_tar(a), false),
        Format::Zip => read_zip(a),
    };
    assert_eq!(got.len(), a.entries().len());
    for (i, (r, e)) in got.iter().zip(a.entries()).enumerate() {
        assert_eq!(r.name, e.name);
        assert_eq!(r.dir, e.kind == Kind::Dir);
        assert_eq!(r.size, e.size);
        assert_eq!(r.mode, e.mode);
        if a.format() == Format::Tar {
            assert_eq!(r.mtime, e.mtime);
        }
        if e.size <= 1 << 20 {
            let bytes = read(a, r.data_at, r.data_at + r.size);
            assert!(bytes
                .iter()
                .enumerate()
                .all(|(o, &b)| b == data_byte(i, o as u64)));
        }
    }
    zip64
}

fn entry(name: &str, kind: Kind, size: u64) -> Entry {
    Entry {
        name: name.into(),
        kind,
        size,
        mtime: 1_700_000_000,
        mtime_nsec: 5,
        mode: if kind == Kind::Dir { 0o755 } else { 0o644 },
    }
}

fn name_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ._-]{1,30}",
        "[a-zé漢字 ü-]{1,20}",
        // Long names: up to 255 bytes per component.
        (1usize..=255).prop_map(|n| "n".repeat(n)),
        (1usize..=85).prop_map(|n| "é漢".repeat(n / 2 + 1).chars().take(n).collect()),
    ]
}

fn plan_strategy() -> impl Strategy<Value = Vec<Entry>> {
    prop::collection::vec(
        (
            prop::collection::vec(name_strategy(), 1..4),
            any::<bool>(),
            0u64..3000,
            -10i64..10_000_000_000,
        ),
        0..12,
    )
    .prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (parts, dir, size, mtime))| {
                // Unique, and never "." or "..".
                let name = parts
                    .iter()
                    .map(|p| format!("{i}{p}"))
                    .collect::<Vec<_>>()
                    .join("/");
                let kind = if dir { Kind::Dir } else { Kind::File };
                let mut e = entry(&name, kind, if dir { 0 } else { size });
                e.mtime = mtime;
                e
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn archives_read_back(entries in plan_strategy(), zip in any::<bool>()) {
        let format = if zip { Format::Zip } else { Format::Tar };
        let mut entries = entries;
        if format == Format::Zip {
            // DOS time only holds 1980..2107: compared by the tar reader only.
            for e in &mut entries { e.mtime = e.mtime.max(0); }
        }
        let a = Archive::plan(format, entries).unwrap();
        let zip64 = check(&a);
        prop_assert!(!zip64, "small archives never use ZIP64");
    }

    #[test]
    fn any_range_equals_the_same_bytes_of_the_whole(entries in plan_strategy(), zip in any::<bool>(), cuts in prop::collection::vec(any::<u64>(), 1..6)) {
        let format = if zip { Format::Zip } else { Format::Tar };
        let a = Archive::plan(format, entries).unwrap();
        let whole = read(&a, 0, a.len());
        for c in cuts {
            let s = c % (a.len() + 1);
            let e = s + (c >> 32) % (a.len() - s + 1);
            prop_assert_eq!(&read(&a, s, e)[..], &whole[s as usize..e as usize]);
        }
        // Pieces tile the range with no empty piece.
        let mut pos = 0;
        for p in a.pieces(0, a.len()) {
            prop_assert!(p.len > 0);
            let (start, len) = a.span(p.part);
            prop_assert_eq!(start + p.skip, pos);
            prop_assert!(p.skip + p.len <= len);
            pos += p.len;
        }
        prop_assert_eq!(pos, a.len());
    }

    #[test]
    fn the_etag_follows_the_plan(entries in plan_strategy(), which in any::<usize>(), change in 0u8..4) {
        prop_assume!(!entries.is_empty());
        let a = Archive::plan(Format::Tar, entries.clone()).unwrap();
        prop_assert_eq!(a.etag(), Archive::plan(Format::Tar, entries.clone()).unwrap().etag());
        prop_assert_ne!(a.etag(), Archive::plan(Format::Zip, entries.clone()).unwrap().etag());
        let mut changed = entries;
        let i = which % changed.len();
        match change {
            0 => changed[i].mtime_nsec += 1,
            1 => changed[i].mtime += 1,
            2 => changed[i].name.push('x'),
            _ => { changed[i].kind = Kind::File; changed[i].size += 1; }
        }
        prop_assert_ne!(a.etag(), Archive::plan(Format::Tar, changed).unwrap().etag());
    }
}

#[test]
fn huge_entries_use_pax_and_zip64_only_where_needed() {
    let entries = vec![
        entry("small-before", Kind::File, 10),
        entry("five-gib", Kind::File, 5 << 30),
        entry("exactly-4gib-minus-1", Kind::File, 0xFFFF_FFFF),
        entry("nine-gib", Kind::File, 9 << 30),
        entry("dir-after", Kind::Dir, 0),
        entry("dir-after/small-after", Kind::File, 1000),
    ];
    let tar = Archive::plan(Format::Tar, entries.clone()).unwrap();
    check(&tar);
    let zip = Archive::plan(Format::Zip, entries).unwrap();
    assert!(check(&zip));
    // The first entry's central record has no ZIP64 field; the big ones
    // and the ones past 4 GiB do.
    let mut first = Vec::new();
    zip.render(Part::Central(0), Some(0), &mut first);
    assert_eq!(first.len(), 46 + "small-before".len());
    let mut big = Vec::new();
    zip.render(Part::Central(1), Some(0), &mut big);
    assert_eq!(big.len(), 46 + "five-gib".len() + 4 + 16);
    let mut after = Vec::new();
    zip.render(Part::Central(5), Some(0), &mut after);
    assert_eq!(after.len(), 46 + "dir-after/small-after".len() + 4 + 8);
    // Only the 9 GiB entry needs a pax size in tar.
    assert_eq!(tar.span(Part::Header(1)).1, 512);
    assert_eq!(tar.span(Part::Header(3)).1, 512 * 3);
}

#[test]
fn many_entries_use_the_zip64_end_record() {
    let entries: Vec<Entry> = (0..70_000)
        .map(|i| entry(&format!("f{i}"), Kind::File, 0))
        .collect();
    let zip = Archive::plan(Format::Zip, entries).unwrap();
    assert!(check(&zip));
    let few: Vec<Entry> = (0..65_534)
        .map(|i| entry(&format!("f{i}"), Kind::File, 0))
        .collect();
    assert!(!check(&Archive::plan(Format::Zip, few).unwrap()));
}

#[test]
fn empty_archives() {
    let tar = Archive::plan(Format::Tar, vec![]).unwrap();
    assert_eq!(tar.len(), 1024);
    check(&tar);
    let zip = Archive::plan(Format::Zip, vec![]).unwrap();
    assert_eq!(zip.len(), 22);
    check(&zip);
}

#[test]
fn bad_plans_are_refused() {
    for name in [
        "",
        "/abs",
        "a//b",
        "a/../b",
        "..",
        "a/.",
        "nul\0",
        "back\\slash",
    ] {
        assert!(
            Archive::plan(Format::Tar, vec![entry(name, Kind::File, 0)]).is_err(),
            "{name:?}"
        );
    }
    let long = "x".repeat(70_000);
    assert!(Archive::plan(Format::Zip, vec![entry(&long, Kind::File, 0)]).is_err());
    assert!(Archive::plan(Format::Tar, vec![entry(&long, Kind::File, 0)]).is_ok());
    assert!(Archive::plan(Format::Tar, vec![entry("d", Kind::Dir, 3)]).is_err());
}
