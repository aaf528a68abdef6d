//! zip CRC-32s of files: the cache kept across requests, and the read of
//! one file that combines the holes of a sparse file in instead of reading them.

use std::collections::HashMap;
use std::sync::Mutex;

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

/// CRC-32s of file versions ([`CrcKey`]).
#[derive(Default)]
pub(crate) struct CrcCache {
    map: Mutex<HashMap<CrcKey, u32>>,
}

impl CrcCache {
    pub(super) fn get(&self, key: &CrcKey) -> Option<u32> {
        self.map.lock().ok()?.get(key).copied()
    }

    pub(super) fn put(&self, key: CrcKey, crc: u32) {
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= CRC_CACHE_MAX {
                map.clear();
            }
            map.insert(key, crc);
        }
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
