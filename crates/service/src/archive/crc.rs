//! zip CRC-32s of files: the cache kept across requests, and the read of
//! one file that combines the holes of a sparse file in instead of reading them.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::storage::changes::{ChangeKind, Changes, Event, Subscription};

/// CRC-32s remembered across requests (about 100 bytes each).
const CRC_CACHE_MAX: usize = 200_000;

/// One version of a file as the CRC cache knows it: the path, size and
/// mtime the plan saw and, for a local file, its identity. The mtime alone
/// can be set back (PROPPATCH, `touch -r`): a same-size replacement would
/// then be zipped with the old CRC.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct CrcKey {
    pub(super) path: String,
    pub(super) size: u64,
    pub(super) mtime: (i64, u32),
    pub(super) file: Option<FileId>,
}

/// Device, inode and change time of an open file: a replacement is
/// another inode, and a rewrite in place moves the change time, which no
/// client can set back.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    ctime: (i64, i64),
}

impl FileId {
    /// `file`'s identity (one fstat), if it can be asked.
    pub(super) fn of(file: &std::fs::File) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt;
        let md = file.metadata().ok()?;
        Some(FileId {
            dev: md.dev(),
            ino: md.ino(),
            ctime: (md.ctime(), md.ctime_nsec()),
        })
    }
}

/// CRC-32s of file versions ([`CrcKey`]): one per path, the version last
/// zipped. It follows the storage's change stream: a file replaced, moved
/// or deleted (or a folder above it) drops its entry, so the memory holds
/// files that still are; a stream that ran ahead of it ([`Event::Missed`])
/// clears it. The key's identity keeps a stale entry from ever answering,
/// whatever the stream says.
#[derive(Default)]
pub(crate) struct CrcCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_path: BTreeMap<String, (CrcKey, u32)>,
    changes: Option<Subscription>,
}

impl Inner {
    /// Applies every change emitted so far.
    fn catch_up(&mut self) {
        let Some(sub) = self.changes.as_mut() else {
            return;
        };
        while let Some(event) = sub.try_next() {
            match event {
                Event::Missed(_) => self.by_path.clear(),
                Event::Change(c) => {
                    if let ChangeKind::Moved { from } = &c.kind {
                        forget_below(&mut self.by_path, &from.to_url(false));
                    }
                    forget_below(&mut self.by_path, &c.path.to_url(false));
                }
            }
        }
    }
}

/// Drops `path` and everything below it (`/` is everything).
fn forget_below(map: &mut BTreeMap<String, (CrcKey, u32)>, path: &str) {
    if path == "/" {
        map.clear();
        return;
    }
    map.remove(path);
    let below = format!("{path}/");
    let doomed: Vec<String> = map
        .range(below.clone()..)
        .take_while(|(k, _)| k.starts_with(&below))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        map.remove(&k);
    }
}

impl CrcCache {
    /// A cache that follows `changes` (a backend without a stream: only
    /// the identity in each key keeps it right).
    pub(crate) fn following(changes: Option<&Changes>) -> Self {
        CrcCache {
            inner: Mutex::new(Inner {
                by_path: BTreeMap::new(),
                changes: changes.map(Changes::subscribe),
            }),
        }
    }

    pub(super) fn get(&self, key: &CrcKey) -> Option<u32> {
        let mut inner = self.inner.lock().ok()?;
        inner.catch_up();
        match inner.by_path.get(&key.path) {
            Some((k, crc)) if k == key => Some(*crc),
            _ => None,
        }
    }

    pub(super) fn put(&self, key: CrcKey, crc: u32) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.catch_up();
            if inner.by_path.len() >= CRC_CACHE_MAX && !inner.by_path.contains_key(&key.path) {
                inner.by_path.clear();
            }
            inner.by_path.insert(key.path.clone(), (key, crc));
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        let mut inner = self.inner.lock().unwrap();
        inner.catch_up();
        inner.by_path.len()
    }
}

/// CRC-32 of the first `size` bytes of `file`: data read positionally,
/// 1 MiB at a time; holes of a sparse file (SEEK_HOLE) combined in
/// arithmetically, never read (a sparse disk image costs its data only).
pub(super) fn crc_of_file(
    file: &std::fs::File,
    size: u64,
    buf: &mut Vec<u8>,
) -> std::io::Result<u32> {
    use rustix::fs::{seek, SeekFrom};
    use std::os::unix::fs::FileExt;
    // A hole reads as zeros: a file shorter than the plan must not.
    if file.metadata()?.len() < size {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let mut h = crc32fast::Hasher::new();
    let want_len = (size as usize).clamp(1, 1 << 20);
    if buf.len() < want_len {
        buf.resize(want_len, 0);
    }
    let mut pos = 0;
    while pos < size {
        // Where data starts again (ENXIO: none before the end; an error
        // where holes are unknown: read everything).
        let data = match seek(file, SeekFrom::Data(pos)) {
            Ok(d) => d.min(size),
            Err(rustix::io::Errno::NXIO) => size,
            Err(_) => pos,
        };
        if data > pos {
            h.combine(&zeros(data - pos));
            pos = data;
            continue;
        }
        let hole = seek(file, SeekFrom::Hole(pos)).map_or(size, |h| h.clamp(pos + 1, size));
        while pos < hole {
            let want = ((hole - pos) as usize).min(buf.len());
            let n = file.read_at(&mut buf[..want], pos)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            h.update(&buf[..n]);
            pos += n as u64;
        }
    }
    Ok(h.finalize())
}

/// The CRC-32 state of `n` zero bytes, by doubling (O(log n) combines).
fn zeros(mut n: u64) -> crc32fast::Hasher {
    let mut out = crc32fast::Hasher::new();
    let mut block = crc32fast::Hasher::new();
    block.update(&[0]);
    while n > 0 {
        if n & 1 == 1 {
            out.combine(&block);
        }
        let copy = block.clone();
        block.combine(&copy);
        n >>= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::parse_request_path;
    use crate::storage::changes::Change;

    fn key(path: &str, size: u64) -> CrcKey {
        CrcKey {
            path: path.into(),
            size,
            mtime: (1, 0),
            file: None,
        }
    }

    #[test]
    fn the_crc_cache_drops_what_the_change_stream_says_changed() {
        let hub = Changes::new(8);
        let cache = CrcCache::following(Some(&hub));
        for p in ["/a/x", "/a/y", "/ab", "/b/z", "/c"] {
            cache.put(key(p, 1), 7);
        }
        assert_eq!(cache.get(&key("/a/x", 1)), Some(7));
        // Another version of the same path is never answered.
        assert_eq!(cache.get(&key("/a/x", 2)), None);
        let at = |p: &str| parse_request_path(p).unwrap();
        hub.emit(Change::new(ChangeKind::Deleted, at("/a"), None, None));
        assert_eq!(cache.get(&key("/a/x", 1)), None);
        assert_eq!(
            cache.get(&key("/ab", 1)),
            Some(7),
            "a sibling with a longer name stays"
        );
        hub.emit(Change::new(
            ChangeKind::Moved { from: at("/b") },
            at("/d"),
            None,
            None,
        ));
        assert_eq!(cache.get(&key("/b/z", 1)), None);
        assert_eq!(cache.len(), 2);
        // Falling behind the stream clears everything it may have missed.
        for i in 0..20 {
            hub.emit(Change::new(
                ChangeKind::Created,
                at(&format!("/n{i}")),
                None,
                None,
            ));
        }
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn crc_of_sparse_files_equals_reading_them() {
        use std::io::{Seek, SeekFrom, Write};
        let dir = wirespeed_testkit::fs::tempdir();
        let path = dir.path().join("sparse");
        let mut f = std::fs::File::create(&path).unwrap();
        // hole, data, hole, data, trailing hole
        f.seek(SeekFrom::Start(3 << 20)).unwrap();
        f.write_all(&[7u8; 5000]).unwrap();
        f.seek(SeekFrom::Start(9 << 20)).unwrap();
        f.write_all(b"tail").unwrap();
        f.set_len((12 << 20) + 3).unwrap();
        let all = std::fs::read(&path).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        assert_eq!(
            crc_of_file(&f, all.len() as u64, &mut Vec::new()).unwrap(),
            crc32fast::hash(&all)
        );
        // A prefix that ends inside a hole and one inside data.
        for cut in [(1 << 20) + 1, (3 << 20) + 10] {
            assert_eq!(
                crc_of_file(&f, cut as u64, &mut Vec::new()).unwrap(),
                crc32fast::hash(&all[..cut])
            );
        }
        for n in [0u64, 1, 2, 3, 1000, 65_537] {
            let mut h = zeros(n);
            h.update(b"x");
            assert_eq!(
                h.finalize(),
                crc32fast::hash(&[vec![0; n as usize], b"x".to_vec()].concat())
            );
        }
        // Shorter than promised: an error, never a CRC.
        assert!(crc_of_file(&f, all.len() as u64 + 1, &mut Vec::new()).is_err());
    }
}
