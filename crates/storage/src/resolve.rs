//! Path containment for the local backend: every path is opened relative to
//! a descriptor of the root, and never resolves outside it.
//!
//! With `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` the kernel does
//! the whole walk and refuses any step out of the root (`..` through a
//! symlink, an absolute symlink, a `/proc` magic link) in one system call,
//! so there is no window between a check and the open for someone who can
//! swap a directory for a symlink on the host. Where openat2 is missing
//! (kernels before 5.6: `ENOSYS`) or filtered (seccomp: `EPERM`), the
//! walk falls back to canonicalize-then-check-then-open, which has that
//! window; the fallback is logged once.
//!
//! Symlinks that stay inside the root keep working on both paths.
//! `RESOLVE_BENEATH` refuses every absolute symlink (`EXDEV`), even one that
//! points back inside the root; for those the path is canonicalized, checked,
//! and the canonical path opened again with `RESOLVE_BENEATH`, so even that
//! second walk cannot leave the root if the tree changes in between.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::StorageError;
use wirespeed_path::is_reserved_name;

/// The root directory, held open.
#[derive(Debug)]
pub struct Root {
    path: PathBuf,
    fd: OwnedFd,
    /// openat2 is usable (cleared for good on the first ENOSYS/EPERM).
    beneath: AtomicBool,
    /// Symlinks leading outside the root are followed (`serve --allow-symlink`).
    outside: AtomicBool,
}

impl Root {
    /// Open `path` (canonicalized; it must be a directory).
    pub fn open(path: &Path) -> std::io::Result<Root> {
        let path = std::fs::canonicalize(path)?;
        let fd = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Root {
            path,
            fd,
            beneath: AtomicBool::new(true),
            outside: AtomicBool::new(false),
        })
    }

    /// Follow symlinks that lead outside the root (the operator put them
    /// there); names are still single segments, never `..`.
    pub fn follow_symlinks_outside(&self, on: bool) {
        self.outside.store(on, Ordering::Relaxed);
    }

    fn outside_allowed(&self) -> bool {
        self.outside.load(Ordering::Relaxed)
    }

    /// Use the check-then-open fallback even where openat2 works (tests,
    /// and a way to compare the two).
    pub fn force_checks(&self) {
        self.beneath.store(false, Ordering::Relaxed);
    }

    /// Whether opens go through openat2.
    pub fn uses_openat2(&self) -> bool {
        self.beneath.load(Ordering::Relaxed)
    }

    /// The canonical root path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root's descriptor (read-only, a directory).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Open `segments` below the root (the root itself for none) with
    /// `flags` (`O_CLOEXEC`, and `O_NOCTTY` unless `O_PATH`, added). Refuses with
    /// [`StorageError::Forbidden`] any resolution that leaves the root.
    pub fn open_at(&self, segments: &[String], flags: OFlags) -> Result<OwnedFd, StorageError> {
        // openat2, unlike openat, refuses (EINVAL) flags that do not apply,
        // such as O_NOCTTY with O_PATH.
        let flags = if flags.contains(OFlags::PATH) {
            flags | OFlags::CLOEXEC
        } else {
            flags | OFlags::CLOEXEC | OFlags::NOCTTY
        };
        if self.uses_openat2() {
            // The relative path, NUL-terminated on the stack when it fits
            // (every small GET opens one: no allocation for it).
            let mut stack = [0u8; 256];
            let joined;
            let rel: &std::ffi::CStr = match join_on_stack(segments, &mut stack) {
                Some(c) => c,
                None => {
                    joined = std::ffi::CString::new(segments.join("/"))
                        .map_err(|_| StorageError::Forbidden)?;
                    &joined
                }
            };
            let resolve = if self.outside_allowed() {
                ResolveFlags::NO_MAGICLINKS
            } else {
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS
            };
            // EAGAIN: the kernel saw a concurrent rename that could have
            // let the walk escape, and asks for a retry.
            for _ in 0..4 {
                match rustix::fs::openat2(&self.fd, rel, flags, Mode::empty(), resolve) {
                    Ok(fd) => return Ok(fd),
                    Err(Errno::AGAIN) | Err(Errno::INTR) => continue,
                    Err(Errno::XDEV) => {
                        let canon = self.checked(segments)?;
                        let rel = canon
                            .strip_prefix(&self.path)
                            .map_err(|_| StorageError::Outside)?;
                        let rel = if rel.as_os_str().is_empty() {
                            Path::new(".")
                        } else {
                            rel
                        };
                        return Ok(rustix::fs::openat2(
                            &self.fd,
                            rel,
                            flags,
                            Mode::empty(),
                            resolve,
                        )?);
                    }
                    Err(Errno::NOSYS) | Err(Errno::PERM) | Err(Errno::TOOBIG) => {
                        if self.beneath.swap(false, Ordering::Relaxed) {
                            tracing::warn!(
                                "openat2 is not available here; path containment falls back to \
                                 check-then-open (a symlink swapped in between could be followed)"
                            );
                        }
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            if self.uses_openat2() {
                return Err(StorageError::Io(std::io::Error::other(
                    "openat2 kept asking for a retry (concurrent renames)",
                )));
            }
        }
        let canon = self.checked(segments)?;
        Ok(rustix::fs::open(&canon, flags, Mode::empty())?)
    }

    /// Where `segments` lead once the symlinks on the way are followed, as
    /// segments below the root; `None` when no symlink is on the way (the
    /// common case: one `openat2` that refuses symlinks), when the path
    /// leads out of the root (`--allow-symlink`: the operator's choice), or
    /// when nothing on the way exists. A missing tail is appended as named
    /// (a new name in a linked folder lands in the link's target).
    pub fn real_segments(&self, segments: &[String]) -> Option<Vec<String>> {
        for n in (0..=segments.len()).rev() {
            let prefix = &segments[..n];
            match self.probe_no_symlinks(prefix) {
                Probe::Plain => return None,
                Probe::Missing => continue,
                Probe::Linked => {
                    let mut real = self.canonical_segments(prefix)?;
                    real.extend(segments[n..].iter().cloned());
                    return (real != segments).then_some(real);
                }
            }
        }
        None
    }

    /// Whether `prefix` resolves without following any symlink.
    fn probe_no_symlinks(&self, prefix: &[String]) -> Probe {
        if self.uses_openat2() {
            // The relative path on the stack when it fits, as `open_at` does.
            let mut stack = [0u8; 256];
            let joined;
            let rel: &std::ffi::CStr = match join_on_stack(prefix, &mut stack) {
                Some(c) => c,
                None => match std::ffi::CString::new(prefix.join("/")) {
                    Ok(c) => {
                        joined = c;
                        &joined
                    }
                    Err(_) => return Probe::Missing,
                },
            };
            let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
            let flags = OFlags::PATH | OFlags::CLOEXEC;
            // EAGAIN/EINTR: asked again, as `open_at` does; anything else
            // unknown is judged as linked, so the caller asks where it leads
            // (and finds nothing if it cannot tell).
            for _ in 0..4 {
                match rustix::fs::openat2(&self.fd, rel, flags, Mode::empty(), how) {
                    Ok(_) => return Probe::Plain,
                    Err(Errno::AGAIN) | Err(Errno::INTR) => {}
                    Err(Errno::NOENT) | Err(Errno::NOTDIR) => return Probe::Missing,
                    Err(_) => return Probe::Linked,
                }
            }
            return Probe::Linked;
        }
        let mut p = self.path.clone();
        p.extend(prefix);
        match std::fs::canonicalize(&p) {
            Ok(c) if c == p => Probe::Plain,
            Ok(_) => Probe::Linked,
            Err(_) => Probe::Missing,
        }
    }

    /// The canonical place of `prefix` as segments below the root (`None`
    /// outside it, or when it cannot be told).
    fn canonical_segments(&self, prefix: &[String]) -> Option<Vec<String>> {
        let mut p = self.path.clone();
        p.extend(prefix);
        let canon = std::fs::canonicalize(p).ok()?;
        let rel = canon.strip_prefix(&self.path).ok()?;
        rel.components()
            .map(|c| c.as_os_str().to_str().map(str::to_owned))
            .collect()
    }

    /// The fallback's check: canonicalize, then require the result inside
    /// the root and free of reserved names.
    fn checked(&self, segments: &[String]) -> Result<PathBuf, StorageError> {
        let mut p = self.path.clone();
        p.extend(segments);
        let canon = std::fs::canonicalize(p)?;
        let Ok(rel) = canon.strip_prefix(&self.path) else {
            if self.outside_allowed() {
                return Ok(canon);
            }
            return Err(StorageError::Outside);
        };
        if rel
            .components()
            .any(|c| c.as_os_str().to_str().is_none_or(is_reserved_name))
        {
            return Err(StorageError::NotFound);
        }
        Ok(canon)
    }
}

/// What a walk that refuses symlinks found.
enum Probe {
    Plain,
    Linked,
    Missing,
}

/// `segments` joined by `/` (`.` for none) and NUL-terminated in `buf`, if
/// they fit and hold no NUL.
fn join_on_stack<'b>(segments: &[String], buf: &'b mut [u8; 256]) -> Option<&'b std::ffi::CStr> {
    let mut n = 0;
    let mut push = |bytes: &[u8]| -> Option<()> {
        let end = n + bytes.len();
        buf.get_mut(n..end)?.copy_from_slice(bytes);
        n = end;
        Some(())
    };
    if segments.is_empty() {
        push(b".")?;
    }
    for (i, seg) in segments.iter().enumerate() {
        if i > 0 {
            push(b"/")?;
        }
        push(seg.as_bytes())?;
    }
    push(b"\0")?;
    std::ffi::CStr::from_bytes_with_nul(&buf[..n]).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn joined_on_the_stack_when_it_fits() {
        let mut buf = [0u8; 256];
        let segs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(join_on_stack(&[], &mut buf).unwrap().to_bytes(), b".");
        assert_eq!(
            join_on_stack(&segs(&["a", "b.txt"]), &mut buf)
                .unwrap()
                .to_bytes(),
            b"a/b.txt"
        );
        assert!(join_on_stack(&segs(&[&"x".repeat(255)]), &mut buf).is_some());
        assert!(join_on_stack(&segs(&[&"x".repeat(256)]), &mut buf).is_none());
        assert!(join_on_stack(&segs(&["a\0b"]), &mut buf).is_none());
    }

    use super::*;
    use std::os::unix::fs::symlink;

    fn segs(p: &str) -> Vec<String> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    /// Both resolution paths agree on what is inside and what is out.
    #[test]
    fn containment_on_both_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("d/f"), b"in").unwrap();
        std::fs::write(tmp.path().join("secret"), b"out").unwrap();
        symlink("../secret", root.join("up")).unwrap();
        symlink("d/f", root.join("inside")).unwrap();
        symlink(tmp.path().join("secret"), root.join("abs-out")).unwrap();
        symlink(root.join("d/f"), root.join("abs-in")).unwrap();
        for force in [false, true] {
            let r = Root::open(&root).unwrap();
            if force {
                r.force_checks();
            }
            assert!(r.open_at(&segs("d/f"), OFlags::RDONLY).is_ok());
            assert!(r.open_at(&segs("inside"), OFlags::RDONLY).is_ok());
            assert!(r.open_at(&segs("abs-in"), OFlags::RDONLY).is_ok());
            assert!(r.open_at(&[], OFlags::RDONLY).is_ok());
            for out in ["up", "abs-out"] {
                let e = r.open_at(&segs(out), OFlags::RDONLY).unwrap_err();
                assert!(
                    matches!(e, StorageError::Outside),
                    "{out} (checks forced: {force}): {e:?}"
                );
                assert!(e.to_string().contains("--allow-symlink"), "{e}");
            }
            // With --allow-symlink they lead where they point.
            r.follow_symlinks_outside(true);
            for out in ["up", "abs-out"] {
                assert!(r.open_at(&segs(out), OFlags::RDONLY).is_ok(), "{out}");
            }
            r.follow_symlinks_outside(false);
            assert!(matches!(
                r.open_at(&segs("missing"), OFlags::RDONLY),
                Err(StorageError::NotFound)
            ));
        }
        if !Root::open(&root).unwrap().uses_openat2() {
            eprintln!("note: openat2 unavailable here; only the fallback was exercised");
        }
    }
}
