//! The links table as every node on a bucket shares it: one record, a
//! line per minted link, and the changes a node makes to it (mint,
//! revoke), decided here without I/O. `links.rs` in the service reads
//! and writes the record (a conditional write on the version read, so two
//! nodes' changes never overwrite each other).
//!
//! The record is text, one link a line after a versioned first line:
//! `ID EXPIRES RIGHTS STATE BY PATH`: the id in 16 hex digits, the expiry
//! in Unix seconds, the rights' letters, `l` (live) or `x` (revoked), then
//! the minter and the path percent-encoded (no space, control character or
//! `%` stays bare). About 60 bytes plus the path a link.

use super::shares::{Grant, Live, MAX_LIVE};

/// The first line of a record this version writes and reads.
const HEADER: &str = "wirespeed-links 1";

/// The most a record may weigh (what a full table of long paths takes).
pub const MAX_RECORD: usize = 8 << 20;

/// Why a stored record is not read (the record is then left alone: a
/// change is refused rather than overwrite what another version wrote).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("the shared links record is not in a format this version reads")]
    UnknownFormat,
    #[error("line {line} of the shared links record: {what}")]
    BadLine { line: usize, what: &'static str },
    #[error("the shared links record holds more than {MAX_LIVE} links")]
    TooMany,
    #[error("the shared links record is larger than {MAX_RECORD} bytes")]
    TooLarge,
}

/// A change one node makes to the shared table.
#[derive(Debug, Clone)]
pub enum Change {
    /// A newly minted link.
    Mint(Live),
    /// Revoke link `id`.
    Revoke(u64),
}

/// The record of `rows` (minted ones only; sorted by id, so the same table
/// is always the same bytes).
pub fn encode<'a>(rows: impl IntoIterator<Item = &'a Live>) -> Vec<u8> {
    let mut rows: Vec<&Live> = rows.into_iter().filter(|l| !l.by.is_empty()).collect();
    rows.sort_by_key(|l| l.grant.id);
    let mut out = String::with_capacity(HEADER.len() + 1 + rows.len() * 64);
    out.push_str(HEADER);
    out.push('\n');
    for l in rows {
        let g = &l.grant;
        out.push_str(&format!("{:016x} {} {} ", g.id, g.expires, g.rights));
        out.push_str(if l.revoked { "x " } else { "l " });
        encode_field(&l.by, &mut out);
        out.push(' ');
        encode_field(&g.path, &mut out);
        out.push('\n');
    }
    out.into_bytes()
}

/// The links in a record.
pub fn decode(blob: &[u8]) -> Result<Vec<Live>, RecordError> {
    if blob.len() > MAX_RECORD {
        return Err(RecordError::TooLarge);
    }
    let text = std::str::from_utf8(blob).map_err(|_| RecordError::UnknownFormat)?;
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err(RecordError::UnknownFormat);
    }
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        if out.len() >= MAX_LIVE {
            return Err(RecordError::TooMany);
        }
        let line_no = i + 2;
        let bad = |what| RecordError::BadLine {
            line: line_no,
            what,
        };
        out.push(decode_line(line).map_err(bad)?);
    }
    Ok(out)
}

fn decode_line(line: &str) -> Result<Live, &'static str> {
    let mut f = line.split(' ');
    let mut next = |what| f.next().filter(|s| !s.is_empty()).ok_or(what);
    let id = next("no id")?;
    if id.len() != 16 {
        return Err("the id is not 16 hex digits");
    }
    let id = u64::from_str_radix(id, 16).map_err(|_| "the id is not 16 hex digits")?;
    let expires = next("no expiry")?
        .parse::<u64>()
        .map_err(|_| "the expiry is not a number")?;
    let rights = next("no rights")?;
    let parsed = super::rights::parse_letters(rights).map_err(|_| "unknown rights")?;
    let revoked = match next("no state")? {
        "l" => false,
        "x" => true,
        _ => return Err("the state is neither l nor x"),
    };
    let by = decode_field(next("no minter")?).ok_or("the minter is not percent-encoded UTF-8")?;
    let path = decode_field(next("no path")?).ok_or("the path is not percent-encoded UTF-8")?;
    if f.next().is_some() {
        return Err("more fields than a link has");
    }
    if by.len() > 255 {
        return Err("the minter's name is longer than 255 bytes");
    }
    wirespeed_path::parse_request_path(&path).map_err(|_| "the path is not a request path")?;
    Ok(Live {
        grant: Grant {
            id,
            expires,
            rights: parsed.letters(),
            path,
            by: by.clone(),
        },
        by,
        revoked,
    })
}

/// `change` applied to `rows` at `now`: links past their expiry leave the
/// table (they are refused anyway). `Err` when a mint finds the table
/// full; `Ok(false)` when a revocation names no live link.
pub fn apply(rows: &mut Vec<Live>, change: &Change, now: u64) -> Result<bool, String> {
    rows.retain(|l| l.grant.expires > now);
    match change {
        Change::Mint(live) => {
            if rows.len() >= MAX_LIVE {
                return Err(format!("{MAX_LIVE} links are live; revoke some first"));
            }
            rows.retain(|l| l.grant.id != live.grant.id);
            rows.push(live.clone());
            Ok(true)
        }
        Change::Revoke(id) => match rows.iter_mut().find(|l| l.grant.id == *id) {
            Some(l) if !l.revoked => {
                l.revoked = true;
                Ok(true)
            }
            _ => Ok(false),
        },
    }
}

/// Add to `rows` the links of `mine` they lack (room permitting): a
/// node's links from before the table was shared. Whether any was added.
pub fn merge(rows: &mut Vec<Live>, mine: Vec<Live>) -> bool {
    let known: std::collections::HashSet<u64> = rows.iter().map(|l| l.grant.id).collect();
    let before = rows.len();
    for l in mine {
        if rows.len() >= MAX_LIVE {
            break;
        }
        if !l.by.is_empty() && !known.contains(&l.grant.id) {
            rows.push(l);
        }
    }
    rows.len() > before
}

fn encode_field(s: &str, out: &mut String) {
    for &b in s.as_bytes() {
        if b <= b' ' || b == b'%' || b >= 0x7f {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
}

fn decode_field(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn live(id: u64, expires: u64, by: &str, path: &str, revoked: bool) -> Live {
        Live {
            grant: Grant {
                id,
                expires,
                rights: "r".into(),
                path: path.into(),
                by: by.into(),
            },
            by: by.into(),
            revoked,
        }
    }

    fn key(l: &Live) -> (u64, u64, String, String, String, bool) {
        let g = &l.grant;
        (
            g.id,
            g.expires,
            g.rights.clone(),
            g.by.clone(),
            g.path.clone(),
            l.revoked,
        )
    }

    #[test]
    fn a_record_reads_back_and_says_what_is_wrong() {
        let rows = vec![
            live(2, 9, "bob smith é", "/team/a%20b/x.txt", true),
            live(1, 7, "alice", "/alice/", false),
        ];
        let blob = encode(&rows);
        let text = String::from_utf8(blob.clone()).unwrap();
        assert!(text.starts_with("wirespeed-links 1\n0000000000000001 7 r l alice /alice/\n"));
        assert!(
            text.contains("x bob%20smith%20%C3%A9 /team/a%2520b/x.txt\n"),
            "{text}"
        );
        let back: Vec<_> = decode(&blob).unwrap().iter().map(key).collect();
        let mut want: Vec<_> = rows.iter().map(key).collect();
        want.sort();
        assert_eq!(back, want);
        // Only minted links are shared (a link known here only by its
        // signature has no minter).
        assert_eq!(
            decode(&encode(&[live(3, 9, "", "/x", false)]))
                .unwrap()
                .len(),
            0
        );
        assert_eq!(
            decode(b"wirespeed-links 2\n").err(),
            Some(RecordError::UnknownFormat)
        );
        assert_eq!(decode(b"\xff").err(), Some(RecordError::UnknownFormat));
        for (bad, line) in [
            ("wirespeed-links 1\n1 7 r l a /x\n", 2),
            (
                "wirespeed-links 1\n0000000000000001 7 r l a /x\n0000000000000001 7 q l a /x\n",
                3,
            ),
            ("wirespeed-links 1\n0000000000000001 7 r z a /x\n", 2),
            ("wirespeed-links 1\n0000000000000001 7 r l a /x extra\n", 2),
            ("wirespeed-links 1\n0000000000000001 7 r l a%G1 /x\n", 2),
            ("wirespeed-links 1\n0000000000000001 7 r l a x\n", 2),
            ("wirespeed-links 1\n0000000000000001 7 r l a\n", 2),
        ] {
            match decode(bad.as_bytes()) {
                Err(RecordError::BadLine { line: l, .. }) => assert_eq!(l, line, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        let mut many = String::from("wirespeed-links 1\n");
        for id in 0..=MAX_LIVE as u64 {
            many.push_str(&format!("{id:016x} 7 r l a /x\n"));
        }
        assert_eq!(decode(many.as_bytes()).err(), Some(RecordError::TooMany));
    }

    #[test]
    fn changes_drop_the_expired_and_respect_the_cap() {
        let mut rows = vec![
            live(1, 100, "a", "/a", false),
            live(2, 50, "a", "/b", false),
        ];
        assert_eq!(apply(&mut rows, &Change::Revoke(1), 60), Ok(true));
        assert_eq!(rows.len(), 1, "the expired link left");
        assert!(rows[0].revoked);
        assert_eq!(apply(&mut rows, &Change::Revoke(1), 60), Ok(false), "once");
        assert_eq!(apply(&mut rows, &Change::Revoke(9), 60), Ok(false));
        let mut full: Vec<Live> = (0..MAX_LIVE as u64)
            .map(|i| live(i, 100, "a", "/a", false))
            .collect();
        assert!(apply(
            &mut full,
            &Change::Mint(live(u64::MAX, 100, "a", "/a", false)),
            60
        )
        .is_err());
        // Expired links make room.
        assert_eq!(
            apply(
                &mut full,
                &Change::Mint(live(u64::MAX, 200, "a", "/a", false)),
                100
            ),
            Ok(true)
        );
        assert_eq!(full.len(), 1);
        // A node's own links join the table once, without duplicates.
        let mut rows = vec![live(1, 100, "a", "/a", false)];
        let mine = vec![
            live(1, 100, "a", "/a", false),
            live(5, 100, "b", "/b", false),
        ];
        assert!(merge(&mut rows, mine.clone()));
        assert_eq!(rows.len(), 2);
        assert!(!merge(&mut rows, mine));
    }

    proptest! {
        #[test]
        fn any_table_round_trips(
            rows in proptest::collection::vec(
                (any::<u64>(), any::<u64>(), "[a-zA-Z0-9 %é-]{1,20}", "(/[a-zA-Z0-9 %ü_.-]{1,12}){1,3}/?", any::<bool>(), any::<bool>()),
                0..20,
            )
        ) {
            let mut seen = std::collections::HashSet::new();
            let rows: Vec<Live> = rows
                .into_iter()
                .filter(|r| seen.insert(r.0))
                .filter(|r| wirespeed_path::parse_request_path(&r.3).is_ok())
                .map(|(id, exp, by, path, revoked, write)| {
                    let mut l = live(id, exp, &by, &path, revoked);
                    l.grant.rights = if write { "w".into() } else { "r".into() };
                    l
                })
                .collect();
            let back: Vec<_> = decode(&encode(&rows)).unwrap().iter().map(key).collect();
            let mut want: Vec<_> = rows.iter().map(key).collect();
            want.sort();
            prop_assert_eq!(back, want);
        }

        #[test]
        fn any_bytes_are_a_record_or_a_typed_error(tail in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut blob = b"wirespeed-links 1\n".to_vec();
            blob.extend_from_slice(&tail);
            let _ = decode(&blob);
            let _ = decode(&tail);
        }
    }
}
