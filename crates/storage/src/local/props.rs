//! WebDAV dead properties, set modification times and link checks on the
//! local backend.
//!
//! A resource's dead properties are one extended attribute, [`PROPS_XATTR`],
//! holding the WebDAV layer's serialized set: one `fsetxattr` replaces it
//! whole, so a PROPPATCH is all or nothing, and the properties move with the
//! inode on MOVE and go away with it on DELETE.

use rustix::fs::{OFlags, XattrFlags};
use rustix::io::Errno;

use super::LocalStorage;
use crate::StorageError;
use wirespeed_path::RelPath;

/// The extended attribute holding a resource's dead properties.
pub const PROPS_XATTR: &str = "user.wirespeed.dav";
/// The largest set kept (ext4 keeps about 4 KiB of attributes per inode
/// unless `ea_inode` is on; larger sets fail there with 507).
pub const MAX_PROPS: usize = 64 * 1024;

/// The extended attribute naming a file's owner: the principal whose
/// request wrote it (a rename keeps it, a copy is owned by its copier).
pub const OWNER_XATTR: &str = "user.wirespeed.owner";

/// Records `owner` on a file about to be published (a filesystem without
/// user attributes keeps no owner: its files count for no user).
pub(super) fn record_owner(file: &std::fs::File, owner: &str) {
    if let Err(e) = rustix::fs::fsetxattr(file, OWNER_XATTR, owner.as_bytes(), XattrFlags::empty())
    {
        tracing::debug!(error = %e, "the file's owner was not recorded");
    }
}

impl LocalStorage {
    /// The owner recorded with `key`, if any.
    pub(super) fn read_owner(&self, key: &RelPath) -> Option<String> {
        let fd = self.open_props(key).ok()?;
        let mut buf = [0u8; 256];
        let n = rustix::fs::fgetxattr(&fd, OWNER_XATTR, &mut buf).ok()?;
        String::from_utf8(buf[..n].to_vec()).ok()
    }

    /// A readable descriptor of a file or folder (never a FIFO's blocking open).
    fn open_props(&self, key: &RelPath) -> Result<std::os::fd::OwnedFd, StorageError> {
        self.root
            .open_at(key.segments(), OFlags::RDONLY | OFlags::NONBLOCK)
    }

    pub(super) fn read_props(&self, key: &RelPath) -> Result<Option<Vec<u8>>, StorageError> {
        let fd = self.open_props(key)?;
        let mut buf = vec![0u8; MAX_PROPS];
        match rustix::fs::fgetxattr(&fd, PROPS_XATTR, &mut buf) {
            Ok(n) => {
                buf.truncate(n);
                Ok(Some(buf))
            }
            Err(Errno::NODATA) | Err(Errno::NOTSUP) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) fn write_props(
        &self,
        key: &RelPath,
        blob: Option<&[u8]>,
    ) -> Result<(), StorageError> {
        let fd = self.open_props(key)?;
        let r = match blob {
            Some(b) if b.len() > MAX_PROPS => return Err(StorageError::Full),
            Some(b) => rustix::fs::fsetxattr(&fd, PROPS_XATTR, b, XattrFlags::empty()),
            None => match rustix::fs::fremovexattr(&fd, PROPS_XATTR) {
                Err(Errno::NODATA) => Ok(()),
                other => other,
            },
        };
        match r {
            Ok(()) => Ok(()),
            Err(Errno::NOTSUP) => Err(StorageError::Unsupported(
                "WebDAV properties (this filesystem has no user extended attributes)",
            )),
            Err(Errno::NOSPC) | Err(Errno::RANGE) | Err(Errno::TOOBIG) => Err(StorageError::Full),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) fn link_at(&self, key: &RelPath) -> bool {
        let Some(name) = key.name() else {
            return false;
        };
        self.root
            .open_at(key.parent(), OFlags::PATH | OFlags::DIRECTORY)
            .and_then(|dir| {
                rustix::fs::statat(&dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(StorageError::from)
            })
            .is_ok_and(|st| {
                rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
            })
    }

    pub(super) fn touch(
        &self,
        key: &RelPath,
        t: std::time::SystemTime,
    ) -> Result<(), StorageError> {
        let file = std::fs::File::from(self.open_props(key)?);
        file.set_modified(t)?;
        Ok(())
    }
}
