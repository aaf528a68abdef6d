//! Assembling a final upload (tus concatenation) in the folder backend
//! without copying bytes through the server: the first part's file is the
//! base and the others are appended to it by the kernel — cloned by
//! `FICLONERANGE` where the filesystem shares blocks (btrfs, XFS), else
//! copied in the kernel by `copy_file_range` (no user-space buffer). The
//! base is then published by one rename, like any completed upload.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use wirespeed_resumable::UploadId;

use super::partial::data_name;
use super::LocalStorage;
use crate::partial::PartialUploads as _;
use crate::{CommitCheck, StorageError, Written};
use rustix::fs::{Mode, OFlags};
use wirespeed_path::RelPath;

/// `FICLONERANGE` (`_IOW(0x94, 13, struct file_clone_range)`), which libc
/// does not name.
const FICLONERANGE: libc::c_ulong = 0x4020_940d;

#[repr(C)]
struct FileCloneRange {
    src_fd: i64,
    src_offset: u64,
    src_length: u64,
    dest_offset: u64,
}

/// Shares `len` bytes of `src` at the end (`at`) of `dst`; false where the
/// filesystem cannot (no reflink, unaligned offset, another filesystem).
fn clone_range(dst: &File, src: &File, at: u64, len: u64) -> bool {
    let arg = FileCloneRange {
        src_fd: i64::from(src.as_raw_fd()),
        src_offset: 0,
        src_length: len,
        dest_offset: at,
    };
    // SAFETY: FICLONERANGE reads one `file_clone_range` that lives for the
    // call; both descriptors are open files we own.
    let r = unsafe { libc::ioctl(dst.as_raw_fd(), FICLONERANGE as _, &arg) };
    r == 0
}

/// Appends the whole of `src` (`len` bytes) to `dst`, which holds `at`.
pub(super) fn append_file(dst: &File, src: &File, at: u64, len: u64) -> io::Result<()> {
    if len == 0 || clone_range(dst, src, at, len) {
        return Ok(());
    }
    let (mut from, mut to) = (0u64, at);
    while from < len {
        let chunk = usize::try_from(len - from)
            .unwrap_or(usize::MAX)
            .min(1 << 30);
        let n = rustix::fs::copy_file_range(src, Some(&mut from), dst, Some(&mut to), chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a partial upload is shorter than its record",
            ));
        }
    }
    Ok(())
}

impl LocalStorage {
    pub(super) async fn concat_local(
        &self,
        parts: &[UploadId],
        key: &RelPath,
        check: Option<CommitCheck>,
        mtime: Option<std::time::SystemTime>,
    ) -> Result<Written, StorageError> {
        let Some((first, rest)) = parts.split_first() else {
            return Err(StorageError::Conflict("a final upload needs a part"));
        };
        let (this, first_id, rest_ids) = (self.clone(), *first, rest.to_vec());
        // Append the others to the first part's data, in the kernel.
        let (base, base_len) = tokio::task::spawn_blocking(move || {
            let dir = this.uploads_dir(false)?;
            let open = |id: &UploadId, flags| -> Result<File, StorageError> {
                Ok(File::from(rustix::fs::openat(
                    &dir,
                    data_name(id).as_str(),
                    flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?))
            };
            let base = open(&first_id, OFlags::RDWR)?;
            let base_len = base.metadata()?.len();
            let mut at = base_len;
            let grown = rest_ids
                .iter()
                .try_for_each(|id| -> Result<(), StorageError> {
                    let src = open(id, OFlags::RDONLY)?;
                    let len = src.metadata()?.len();
                    append_file(&base, &src, at, len)?;
                    at += len;
                    Ok(())
                });
            if let Err(e) = grown {
                // The first part stays what it was: the final can be retried.
                let _ = base.set_len(base_len);
                return Err(e);
            }
            if let Some(t) = mtime {
                base.set_modified(t)?;
            }
            Ok((base, base_len))
        })
        .await
        .map_err(|e| StorageError::Io(io::Error::other(e)))??;
        let undo = base.try_clone()?;
        let data = super::partial::LocalPartial::of(base, self.fsync);
        match self.complete_partial(first, data, key, check).await {
            Ok(w) => {
                for id in rest {
                    if let Err(e) = self.delete_partial(id).await {
                        tracing::warn!(%id, error = %e, "could not remove a used partial upload");
                    }
                }
                Ok(w)
            }
            Err(e) => {
                let _ = undo.set_len(base_len);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partial::PartialData as _;
    use wirespeed_resumable::{Protocol, UploadState};

    fn id(n: u8) -> UploadId {
        UploadId::from_random([n; 16])
    }

    async fn part(s: &LocalStorage, n: u8, bytes: &[u8]) {
        let state = UploadState::new(
            Protocol::Tus,
            "/d/".into(),
            Some(bytes.len() as u64),
            0,
            1 << 40,
        );
        let mut data = s.create_partial(&id(n), &state).await.unwrap();
        data.write(bytes).await.unwrap();
    }

    #[tokio::test]
    async fn parts_are_joined_in_order_and_published_once() {
        let tmp = tempfile::tempdir().unwrap();
        let s = LocalStorage::new(tmp.path()).unwrap();
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        part(&s, 1, b"head-").await;
        part(&s, 2, &big).await;
        part(&s, 3, b"").await;
        part(&s, 4, b"-tail").await;
        let key = wirespeed_path::parse_request_path("/out/f.bin").unwrap();
        // A refused publication leaves every part as it was.
        let refuse: CommitCheck = Box::new(|_| false);
        let ids = [id(1), id(2), id(3), id(4)];
        assert!(matches!(
            s.concat_partials(&ids, &key, Some(refuse), None).await,
            Err(StorageError::PreconditionFailed)
        ));
        assert_eq!(s.load_partial(&id(1)).await.unwrap().offset, 5);
        assert_eq!(s.list_partials().await.unwrap().len(), 4);
        let w = s.concat_partials(&ids, &key, None, None).await.unwrap();
        assert_eq!(w, Written::Created);
        let mut want = b"head-".to_vec();
        want.extend_from_slice(&big);
        want.extend_from_slice(b"-tail");
        assert_eq!(std::fs::read(tmp.path().join("out/f.bin")).unwrap(), want);
        assert!(s.list_partials().await.unwrap().is_empty());
    }
}
