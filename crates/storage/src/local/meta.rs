//! What the local backend reports about a file or folder.

use std::os::fd::BorrowedFd;
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FileType, OFlags};

use crate::resolve::Root;
use crate::{Kind, Meta};

/// Metadata of a regular file or directory; `None` for anything else
/// (FIFOs, sockets, devices are never served: opening a FIFO would block).
pub(super) fn meta_of(st: &rustix::fs::Stat) -> Option<Meta> {
    let kind = match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => Kind::Dir,
        FileType::RegularFile => Kind::File,
        _ => return None,
    };
    let modified = u64::try_from(st.st_mtime)
        .ok()
        .map(|s| SystemTime::UNIX_EPOCH + Duration::new(s, st.st_mtime_nsec as u32));
    Some(Meta {
        kind,
        size: if kind == Kind::File {
            st.st_size as u64
        } else {
            0
        },
        modified,
    })
}

/// Listing metadata of one entry; symlinks are followed only when they stay
/// inside the root (others are left out, as GET would refuse them anyway).
pub(super) fn entry_meta(
    root: &Root,
    dir: BorrowedFd<'_>,
    segments: &[String],
    name: &str,
) -> Option<Meta> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
        let mut full = segments.to_vec();
        full.push(name.to_string());
        let fd = root.open_at(&full, OFlags::PATH).ok()?;
        return meta_of(&rustix::fs::fstat(&fd).ok()?);
    }
    meta_of(&st)
}

/// The mode every published file gets, whatever the protocol: 0666 less
/// the process umask, as any program creating a file would give it
/// (resumable data is kept 0600 while partial and set to this at the end).
pub(crate) fn published_mode() -> u32 {
    static MODE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *MODE.get_or_init(|| 0o666 & !process_umask())
}

/// The umask, read from `/proc/self/status` (setting it to read it would
/// race with other threads); 022 where the kernel does not say.
fn process_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}
