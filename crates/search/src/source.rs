//! Where the indexer reads the tree: a folder on this host ([`Local`]), or
//! anything else that can list a folder, say what a path holds and read a
//! file (the service's object store, through its own listings). Calls come
//! from the indexer's thread and may block.

use std::io::Read as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::store::Meta;
use crate::text::looks_like_text;

/// What the indexer asks of a tree. Paths are below the root,
/// `/`-separated, `""` for the root itself.
pub trait Source: Send + 'static {
    /// Hands each entry of folder `dir` to `each` (its name and what it
    /// holds) until `each` answers false. An error means the folder's
    /// entries are not known now: the walk stops and forgets nothing. A
    /// folder that is gone or unreadable for good lists as empty.
    fn list(&self, dir: &str, each: &mut dyn FnMut(String, Meta) -> bool) -> std::io::Result<()>;

    /// What `path` holds now; `None`: nothing is there. An error leaves
    /// the index as it is.
    fn stat(&self, path: &str) -> std::io::Result<Option<Meta>>;

    /// The text of file `path` if it reads as text and is at most `max`
    /// bytes.
    fn read_text(&self, path: &str, max: u64) -> Option<String>;
}

/// A folder on this host.
pub struct Local {
    pub root: PathBuf,
}

impl Local {
    fn full(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }
}

impl Source for Local {
    fn list(&self, dir: &str, each: &mut dyn FnMut(String, Meta) -> bool) -> std::io::Result<()> {
        // A folder that cannot be read (gone, no permission) has no names
        // to offer: its rows go with the walk.
        let Ok(entries) = std::fs::read_dir(self.full(dir)) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let Ok(m) = entry.metadata() else { continue };
            if !each(name, meta_of(&m)) {
                break;
            }
        }
        Ok(())
    }

    fn stat(&self, path: &str) -> std::io::Result<Option<Meta>> {
        // Any failure to stat means the name is not there to be found.
        Ok(std::fs::symlink_metadata(self.full(path))
            .ok()
            .map(|m| meta_of(&m)))
    }

    fn read_text(&self, path: &str, max: u64) -> Option<String> {
        read_text(&self.full(path), max)
    }
}

fn meta_of(m: &std::fs::Metadata) -> Meta {
    let dir = m.file_type().is_dir();
    Meta {
        dir,
        size: if dir { 0 } else { m.len() },
        mtime: Some(m.mtime()),
    }
}

/// A file's text, if it is text and at most `max` bytes (a symlink is not
/// followed: it may lead outside the tree).
fn read_text(path: &Path, max: u64) -> Option<String> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut buf = Vec::new();
    f.take(max + 1).read_to_end(&mut buf).ok()?;
    if buf.len() as u64 > max || !looks_like_text(&buf, true) {
        return None;
    }
    String::from_utf8(buf).ok()
}
