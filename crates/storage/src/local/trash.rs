//! The trash of the folder backend: `.wirespeed-trash` under the root (a
//! reserved name: never listed, served or taken by a request). An entry
//! is the deleted file or folder itself, renamed there whole (no byte is
//! copied; its inode, mtime and attributes stay), under its id, with the
//! caller's record beside it as `ID.json`. A file about to be replaced is
//! linked there instead, so that its name never stands empty.

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::LocalStorage;
use crate::changes::{Change, ChangeKind, Version};
use crate::gate::KeepReplaced;
use crate::resolve::Root;
use crate::StorageError;
use wirespeed_path::RelPath;

/// How an entry gets into the trash.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Renamed there: the name is gone (a delete).
    Move,
    /// Linked there: the name stays until its replacement renames over it.
    Link,
}

/// The trash folder's name under the root.
pub const TRASH_DIR: &str = ".wirespeed-trash";
/// The largest record read back.
const MAX_RECORD: u64 = 64 * 1024;

/// An entry id is the caller's, made of letters, digits and `-` only (it
/// names a file in the trash, or an object key on S3: no path may hide in
/// it).
pub(crate) fn check_id(id: &str) -> Result<(), StorageError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(StorageError::NotFound)
    }
}

/// The trash folder under `root`, made if missing.
fn trash_dir_in(root: &Root) -> Result<OwnedFd, StorageError> {
    match rustix::fs::mkdirat(root.fd(), TRASH_DIR, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(
        root.fd(),
        TRASH_DIR,
        flags,
        Mode::empty(),
    )?)
}

/// Writes entry `id`'s record, then keeps `name` in `parent` as the entry
/// (renamed or linked); the record goes again if that fails.
fn keep_at(
    root: &Root,
    parent: BorrowedFd<'_>,
    name: &str,
    id: &str,
    record: &[u8],
    how: Keep,
    plain_file: bool,
) -> Result<(), StorageError> {
    check_id(id)?;
    let trash = trash_dir_in(root)?;
    let json = format!("{id}.json");
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&trash, json.as_str(), flags, Mode::from_raw_mode(0o600))?;
    std::fs::File::from(fd).write_all(record)?;
    let kept = match how {
        Keep::Move => rustix::fs::renameat(parent, name, &trash, id),
        Keep::Link if plain_file => rustix::fs::linkat(parent, name, &trash, id, AtFlags::empty()),
        // Only a plain file is kept by a second name.
        Keep::Link => Err(Errno::ISDIR),
    };
    if let Err(e) = kept {
        let _ = rustix::fs::unlinkat(&trash, json.as_str(), AtFlags::empty());
        return Err(e.into());
    }
    Ok(())
}

/// At an upload's publication: the plain file `name` in `parent` (`old`,
/// what is there now), about to be renamed over, kept in the trash by a
/// second name when `keep` names an entry for it. An empty file is not
/// kept (nothing to restore; a WebDAV client's LOCK leaves one to fill).
/// A failure refuses the publication: the old bytes are never lost
/// silently.
pub(super) fn keep_replaced(
    keep: &dyn KeepReplaced,
    root: &Root,
    parent: BorrowedFd<'_>,
    name: &str,
    key: &RelPath,
    old: &rustix::fs::Stat,
    by: Option<&str>,
) -> Result<(), StorageError> {
    if FileType::from_raw_mode(old.st_mode) != FileType::RegularFile || old.st_size <= 0 {
        return Ok(());
    }
    let Some((id, record)) = keep.entry(key, old.st_size as u64, by) else {
        return Ok(());
    };
    keep_at(root, parent, name, &id, &record, Keep::Link, true)
}

impl LocalStorage {
    fn trash_dir(&self) -> Result<OwnedFd, StorageError> {
        trash_dir_in(&self.root)
    }

    pub(super) fn trash_entry(
        &self,
        key: &RelPath,
        id: &str,
        record: &[u8],
    ) -> Result<(), StorageError> {
        self.keep_in_trash(key, id, record, Keep::Move)
    }

    /// The file at `key` kept in the trash as a second name of the same
    /// inode, its own name left in place: the upload about to replace it
    /// publishes by one rename over that name, so no reader ever finds the
    /// name empty. Nothing is emitted (the replacement is the change).
    pub(super) fn trash_link(
        &self,
        key: &RelPath,
        id: &str,
        record: &[u8],
    ) -> Result<(), StorageError> {
        self.keep_in_trash(key, id, record, Keep::Link)
    }

    fn keep_in_trash(
        &self,
        key: &RelPath,
        id: &str,
        record: &[u8],
        how: Keep,
    ) -> Result<(), StorageError> {
        check_id(id)?;
        let Some(name) = key.name() else {
            return Err(StorageError::Forbidden);
        };
        let parent = self
            .root
            .open_at(key.parent(), OFlags::PATH | OFlags::DIRECTORY)?;
        let st = rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW)?;
        let plain = FileType::from_raw_mode(st.st_mode) == FileType::RegularFile;
        keep_at(&self.root, parent.as_fd(), name, id, record, how, plain)?;
        if how == Keep::Link {
            return Ok(());
        }
        let before = if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            Version::folder()
        } else {
            Version::of_stat(&st)
        };
        self.changes.emit(Change::new(
            ChangeKind::Deleted,
            key.clone(),
            Some(before),
            None,
        ));
        Ok(())
    }

    pub(super) fn trash_records(&self, max: usize) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        let dir = match std::fs::read_dir(self.root.path().join(TRASH_DIR)) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let trash = self.trash_dir()?;
        let mut out = Vec::new();
        for entry in dir {
            let name = entry?.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if check_id(id).is_err() {
                continue;
            }
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let Ok(fd) =
                rustix::fs::openat(&trash, name.to_str().unwrap_or(""), flags, Mode::empty())
            else {
                continue;
            };
            let mut buf = Vec::new();
            std::fs::File::from(fd)
                .take(MAX_RECORD)
                .read_to_end(&mut buf)?;
            out.push((id.to_owned(), buf));
            if out.len() >= max {
                break;
            }
        }
        Ok(out)
    }

    pub(super) fn untrash(&self, id: &str, to: &RelPath) -> Result<(), StorageError> {
        check_id(id)?;
        let Some(name) = to.name() else {
            return Err(StorageError::Exists);
        };
        let trash = self.trash_dir()?;
        let st = rustix::fs::statat(&trash, id, AtFlags::SYMLINK_NOFOLLOW)?;
        // The folders on the way back, if they went meanwhile.
        for depth in 1..=to.parent().len() {
            let above = &to.parent()[..depth - 1];
            let dir = self.root.open_at(above, OFlags::PATH | OFlags::DIRECTORY)?;
            match rustix::fs::mkdirat(
                &dir,
                to.parent()[depth - 1].as_str(),
                Mode::from_raw_mode(0o755),
            ) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let parent = self
            .root
            .open_at(to.parent(), OFlags::PATH | OFlags::DIRECTORY)?;
        rustix::fs::renameat_with(&trash, id, &parent, name, RenameFlags::NOREPLACE).map_err(
            |e| match e {
                Errno::EXIST | Errno::NOTEMPTY => StorageError::Exists,
                e => e.into(),
            },
        )?;
        let _ = rustix::fs::unlinkat(&trash, format!("{id}.json").as_str(), AtFlags::empty());
        let after = if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            Version::folder()
        } else {
            Version::of_stat(&st)
        };
        self.changes.emit(Change::new(
            ChangeKind::Created,
            to.clone(),
            None,
            Some(after),
        ));
        Ok(())
    }

    pub(super) fn purge_trash(&self, id: &str) -> Result<(), StorageError> {
        check_id(id)?;
        let trash = self.root.path().join(TRASH_DIR);
        let item = trash.join(id);
        match std::fs::symlink_metadata(&item) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&item)?,
            Ok(_) => std::fs::remove_file(&item)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        match std::fs::remove_file(trash.join(format!("{id}.json"))) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}
