//! Where the local backend keeps the sha-256 it computed for a file, so a
//! later GET/HEAD can answer `Repr-Digest` without reading the file again.
//!
//! A record is bound to the file's identity (device, inode, size, mtime in
//! nanoseconds): a file rewritten or appended to behind the server's back
//! changes at least one of those, and its record is then ignored, never
//! served stale. It lives in the extended attribute [`XATTR`] of the file
//! itself (it goes away with the inode), or, on filesystems without user
//! extended attributes, in a sidecar file `<root>/.wirespeed-digests/<dev>-<ino>`
//! (a reserved name: never served, listed or writable through the API).

use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::{AtFlags, Mode, OFlags, XattrFlags};
use rustix::io::Errno;

use wirespeed_path::TEMP_PREFIX;

/// The extended attribute holding a record.
pub const XATTR: &str = "user.wirespeed.sha256";
/// The sidecar directory under the root (reserved by its `.wirespeed-` prefix).
pub const SIDECAR_DIR: &str = ".wirespeed-digests";

/// Where records are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DigestStore {
    /// In an extended attribute of the file.
    Xattr,
    /// In a hidden sidecar file per inode.
    Sidecar,
}

/// What a record is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_sec: i64,
    pub mtime_nsec: u64,
}

impl Identity {
    // The stat field types differ between targets (u64 here, i64 elsewhere).
    #[allow(clippy::unnecessary_cast)]
    pub fn of(st: &rustix::fs::Stat) -> Identity {
        Identity {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size as u64,
            mtime_sec: st.st_mtime,
            mtime_nsec: st.st_mtime_nsec as u64,
        }
    }
}

/// Lowercase hex, as `sha256sum` prints it (the records here, the form answer's
/// `sha256`).
pub fn hex(sum: &[u8; 32]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(64);
    for b in sum {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The record's text: `v1 DEV INO SIZE SEC NSEC HEX` (readable with `getfattr`).
pub fn encode(id: &Identity, sum: &[u8; 32]) -> String {
    let hex = hex(sum);
    format!(
        "v1 {} {} {} {} {} {hex}",
        id.dev, id.ino, id.size, id.mtime_sec, id.mtime_nsec
    )
}

/// The sum in `record` if it is well-formed and bound to exactly `id`.
pub fn decode(record: &[u8], id: &Identity) -> Option<[u8; 32]> {
    let text = std::str::from_utf8(record).ok()?;
    let mut f = text.split(' ');
    if f.next()? != "v1" {
        return None;
    }
    let dev: u64 = f.next()?.parse().ok()?;
    let ino: u64 = f.next()?.parse().ok()?;
    let size: u64 = f.next()?.parse().ok()?;
    let sec: i64 = f.next()?.parse().ok()?;
    let nsec: u64 = f.next()?.parse().ok()?;
    let hex = f.next()?;
    if f.next().is_some() || hex.len() != 64 {
        return None;
    }
    let found = Identity {
        dev,
        ino,
        size,
        mtime_sec: sec,
        mtime_nsec: nsec,
    };
    if found != *id {
        return None;
    }
    let mut sum = [0u8; 32];
    for (i, out) in sum.iter_mut().enumerate() {
        *out = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(sum)
}

/// Decide where records go on the filesystem of `root`: a user extended
/// attribute on a scratch file, or the sidecar if the filesystem refuses
/// them (`ENOTSUP`). Any other failure (a read-only root) keeps `Xattr`:
/// storing will fail and be logged, reading finds nothing.
pub fn probe(root: BorrowedFd<'_>) -> DigestStore {
    let name = format!("{TEMP_PREFIX}probe-{}", std::process::id());
    let file = match rustix::fs::openat(
        root,
        name.as_str(),
        OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    ) {
        Ok(f) => f,
        Err(_) => return DigestStore::Xattr,
    };
    let store = match rustix::fs::fsetxattr(&file, XATTR, b"probe", XattrFlags::empty()) {
        Err(Errno::NOTSUP) => DigestStore::Sidecar,
        _ => DigestStore::Xattr,
    };
    let _ = rustix::fs::unlinkat(root, name.as_str(), AtFlags::empty());
    store
}

fn sidecar_name(id: &Identity) -> String {
    format!("{SIDECAR_DIR}/{:x}-{:x}", id.dev, id.ino)
}

/// The sum recorded for `file` (whose identity is `id`), if valid.
pub fn read(
    store: DigestStore,
    root: BorrowedFd<'_>,
    file: BorrowedFd<'_>,
    id: &Identity,
) -> Option<[u8; 32]> {
    let mut buf = [0u8; 160];
    let n = match store {
        DigestStore::Xattr => rustix::fs::fgetxattr(file, XATTR, &mut buf[..]).ok()?,
        DigestStore::Sidecar => {
            let fd = rustix::fs::openat(
                root,
                sidecar_name(id).as_str(),
                OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                Mode::empty(),
            )
            .ok()?;
            rustix::io::read(&fd, &mut buf[..]).ok()?
        }
    };
    decode(&buf[..n], id)
}

/// Record `sum` for `file` (identity `id`).
pub fn write(
    store: DigestStore,
    root: BorrowedFd<'_>,
    file: BorrowedFd<'_>,
    id: &Identity,
    sum: &[u8; 32],
) -> std::io::Result<()> {
    let record = encode(id, sum);
    match store {
        DigestStore::Xattr => {
            rustix::fs::fsetxattr(file, XATTR, record.as_bytes(), XattrFlags::empty())?
        }
        DigestStore::Sidecar => {
            match rustix::fs::mkdirat(root, SIDECAR_DIR, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            // A torn write reads back as a malformed record: ignored.
            let fd = rustix::fs::openat(
                root,
                sidecar_name(id).as_str(),
                OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::TRUNC
                    | OFlags::CLOEXEC
                    | OFlags::NOFOLLOW,
                Mode::from_raw_mode(0o600),
            )?;
            let mut rest = record.as_bytes();
            while !rest.is_empty() {
                let n = rustix::io::write(&fd, rest)?;
                rest = &rest[n..];
            }
        }
    }
    Ok(())
}

/// Drop the sidecar record of a file that was removed or replaced (extended
/// attributes go away with their inode by themselves).
pub fn forget(store: DigestStore, root: BorrowedFd<'_>, id: &Identity) {
    if store == DigestStore::Sidecar {
        let _ = rustix::fs::unlinkat(root, sidecar_name(id).as_str(), AtFlags::empty());
    }
}

/// The identity of an open file.
pub fn identity(file: impl AsFd) -> std::io::Result<Identity> {
    Ok(Identity::of(&rustix::fs::fstat(file)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id() -> Identity {
        Identity {
            dev: 2049,
            ino: 1234567,
            size: 13,
            mtime_sec: 1_763_900_000,
            mtime_nsec: 123_456_789,
        }
    }

    #[test]
    fn record_round_trips_only_for_the_same_identity() {
        let sum = [0xabu8; 32];
        let rec = encode(&id(), &sum);
        assert_eq!(decode(rec.as_bytes(), &id()), Some(sum));
        for other in [
            Identity { size: 14, ..id() },
            Identity { ino: 1, ..id() },
            Identity { dev: 1, ..id() },
            Identity {
                mtime_nsec: 123_456_790,
                ..id()
            },
            Identity {
                mtime_sec: 0,
                ..id()
            },
        ] {
            assert_eq!(decode(rec.as_bytes(), &other), None, "{other:?}");
        }
    }

    #[test]
    fn malformed_records_are_ignored() {
        let good = encode(&id(), &[7; 32]);
        for bad in [
            "",
            "v2 2049 1234567 13 1763900000 123456789 00",
            &good[..good.len() - 1],
            &format!("{good} extra"),
            &good.replace("v1", "v1 "),
        ] {
            assert_eq!(decode(bad.as_bytes(), &id()), None, "{bad:?}");
        }
    }

    proptest! {
        /// Arbitrary bytes never decode to a sum unless they are a record.
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes, &id());
        }
    }

    /// Both stores on a real filesystem: a record is read back for the same
    /// file, and not after the file changed.
    #[test]
    fn both_stores_bind_to_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let root = rustix::fs::open(
            tmp.path(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        for store in [DigestStore::Xattr, DigestStore::Sidecar] {
            if store == DigestStore::Xattr && probe(root.as_fd()) == DigestStore::Sidecar {
                eprintln!("this filesystem has no user xattrs; skipping the xattr half");
                continue;
            }
            let path = tmp.path().join(format!("f-{store:?}"));
            std::fs::write(&path, b"hello").unwrap();
            let f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            let id0 = identity(&f).unwrap();
            write(store, root.as_fd(), f.as_fd(), &id0, &[9; 32]).unwrap();
            assert_eq!(read(store, root.as_fd(), f.as_fd(), &id0), Some([9; 32]));
            use std::io::Write;
            (&f).write_all(b", world").unwrap();
            let id1 = identity(&f).unwrap();
            assert_eq!(read(store, root.as_fd(), f.as_fd(), &id1), None);
            forget(store, root.as_fd(), &id0);
        }
    }
}
