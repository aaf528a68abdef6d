//! The small state file that lets `put --continue` find a partial upload
//! again after the process is gone: one JSON file per (file, URL) under
//! `$XDG_STATE_HOME/wirespeed/uploads/`, holding the upload's URL, its
//! protocol and the file's identity when the upload was created.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::transfer::hex;
use crate::{Error, Url};

/// What makes a local file the same file: its canonical path, size,
/// modification time and inode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIdentity {
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: i128,
    pub dev: u64,
    pub ino: u64,
}

impl FileIdentity {
    pub fn of(path: &Path) -> Result<FileIdentity, Error> {
        let err = |source| Error::File {
            path: path.to_path_buf(),
            source,
        };
        let canonical = fs::canonicalize(path).map_err(err)?;
        let m = fs::metadata(&canonical).map_err(err)?;
        Ok(FileIdentity {
            path: canonical,
            size: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// A partial upload as the state file records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedUpload {
    /// `ietf` or `tus`.
    pub protocol: String,
    /// The upload resource (`/-/uploads/<id>` on wirespeed).
    pub upload_url: String,
    /// Where the file is being stored.
    pub target: String,
    pub file: FileIdentity,
    /// A file sent as tus partial uploads over parallel connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<SavedParts>,
}

/// The partial uploads of a file sent in parallel parts (tus
/// concatenation), joined by a final upload once all are complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedParts {
    /// Which parts are complete on the server, as `ranges::Pieces` records
    /// them (`SIZE PIECE HEX-BITS`).
    pub done: String,
    /// Each part's upload URL once it is created (its offset is the
    /// server's to tell).
    pub urls: Vec<Option<String>>,
}

/// The folder state files live in: `$XDG_STATE_HOME/wirespeed/uploads`,
/// else `~/.local/state/wirespeed/uploads`.
pub fn state_dir() -> Option<PathBuf> {
    state_dir_from(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
}

/// [`state_dir`] from the two variables (a relative `XDG_STATE_HOME` is
/// ignored, as the XDG spec asks).
fn state_dir_from(xdg: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let base = match xdg {
        Some(d) if Path::new(&d).is_absolute() => PathBuf::from(d),
        _ => PathBuf::from(home?).join(".local/state"),
    };
    Some(base.join("wirespeed/uploads"))
}

/// The state file's name for a file and a target URL: the rest of the
/// identity is checked on load, so a changed file is told apart from a
/// missing state.
pub fn state_name(canonical: &Path, target: &Url) -> String {
    let mut h = Sha256::new();
    h.update(canonical.as_os_str().as_encoded_bytes());
    h.update([0]);
    h.update(target.to_string().as_bytes());
    format!("{}.json", &hex(&h.finalize().into())[..40])
}

/// What a lookup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Nothing,
    Found(SavedUpload),
    /// A state for this path and URL, but the file is no longer the same.
    FileChanged(SavedUpload),
}

/// One state file: where it is and what it is for.
#[derive(Debug, Clone)]
pub struct StateFile {
    path: Option<PathBuf>,
    file: FileIdentity,
    target: Url,
}

impl StateFile {
    /// The state file of `file` uploaded to `target` in `dir` (None: no
    /// state kept, e.g. no home folder).
    pub fn new(dir: Option<&Path>, file: FileIdentity, target: &Url) -> StateFile {
        let path = dir.map(|d| d.join(state_name(&file.path, target)));
        StateFile {
            path,
            file,
            target: target.clone(),
        }
    }

    pub fn exists(&self) -> bool {
        self.path.as_deref().is_some_and(Path::exists)
    }

    pub fn lookup(&self) -> Lookup {
        let Some(p) = &self.path else {
            return Lookup::Nothing;
        };
        let Ok(bytes) = fs::read(p) else {
            return Lookup::Nothing;
        };
        match serde_json::from_slice::<SavedUpload>(&bytes) {
            Ok(s) if s.target != self.target.to_string() => Lookup::Nothing,
            Ok(s) if s.file == self.file => Lookup::Found(s),
            Ok(s) => Lookup::FileChanged(s),
            Err(_) => Lookup::Nothing,
        }
    }

    /// Record an upload (atomically: a reader never sees half a file).
    pub fn save(&self, protocol: &str, upload_url: &Url) -> io::Result<()> {
        self.write(SavedUpload {
            protocol: protocol.to_string(),
            upload_url: upload_url.to_string(),
            target: self.target.to_string(),
            file: self.file.clone(),
            parts: None,
        })
    }

    /// Record a file's parallel parts (tus): written after each part is
    /// created or completed, and on disk before the next one starts, so a
    /// crash or a cut loses no record of bytes the server has.
    pub fn save_parts(&self, parts: SavedParts) -> io::Result<()> {
        self.write(SavedUpload {
            protocol: "tus".to_string(),
            upload_url: String::new(),
            target: self.target.to_string(),
            file: self.file.clone(),
            parts: Some(parts),
        })?;
        match self.path.as_deref().and_then(Path::parent) {
            Some(dir) => fs::File::open(dir)?.sync_all(),
            None => Ok(()),
        }
    }

    fn write(&self, saved: SavedUpload) -> io::Result<()> {
        let Some(p) = &self.path else { return Ok(()) };
        if let Some(dir) = p.parent() {
            private_dir(dir)?;
        }
        let tmp = p.with_extension("tmp");
        let _ = fs::remove_file(&tmp);
        // 0600 from the start: the file names URLs and local paths.
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&serde_json::to_vec_pretty(&saved).map_err(io::Error::other)?)?;
        if saved.parts.is_some() {
            f.sync_all()?;
        }
        drop(f);
        fs::rename(&tmp, p)
    }

    pub fn remove(&self) {
        if let Some(p) = &self.path {
            let _ = fs::remove_file(p);
        }
    }
}

/// Create `dir` (and its missing parents) readable by its owner only; an
/// existing `wirespeed/uploads` folder of ours is made so too.
fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let m = fs::metadata(dir)?;
    if m.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    // Its parent `wirespeed/` too (created by us, 0700 above when new).
    if let Some(parent) = dir.parent().filter(|p| p.ends_with("wirespeed")) {
        if let Ok(pm) = fs::metadata(parent) {
            if pm.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(parent, fs::Permissions::from_mode(0o700))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn names_depend_on_the_path_and_the_url_only() {
        let a = state_name(Path::new("/d/a.bin"), &url("http://h:1/x/a.bin"));
        assert_eq!(
            a,
            state_name(Path::new("/d/a.bin"), &url("http://h:1/x/a.bin"))
        );
        assert_ne!(
            a,
            state_name(Path::new("/d/b.bin"), &url("http://h:1/x/a.bin"))
        );
        assert_ne!(
            a,
            state_name(Path::new("/d/a.bin"), &url("http://h:2/x/a.bin"))
        );
        assert_ne!(
            a,
            state_name(Path::new("/d/a.bin"), &url("http://h:1/y/a.bin"))
        );
        assert!(a.ends_with(".json") && a.len() == 45);
    }

    #[test]
    fn a_saved_upload_is_found_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("data.bin");
        fs::write(&f, b"first").unwrap();
        let target = url("http://127.0.0.1:9/up/data.bin");
        let states = dir.path().join("state");
        let st = StateFile::new(Some(&states), FileIdentity::of(&f).unwrap(), &target);
        assert_eq!(st.lookup(), Lookup::Nothing);
        let loc = url("http://127.0.0.1:9/-/uploads/0123");
        st.save("ietf", &loc).unwrap();
        assert!(st.exists());
        // Private: the file 0600, its folders 0700.
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let file = states.join(state_name(&FileIdentity::of(&f).unwrap().path, &target));
        assert_eq!(mode(&file), 0o600, "{}", file.display());
        assert_eq!(mode(&states), 0o700);
        // A folder made before (0755) is closed on the next save.
        fs::set_permissions(&states, fs::Permissions::from_mode(0o755)).unwrap();
        st.save("ietf", &loc).unwrap();
        assert_eq!(mode(&states), 0o700);
        assert_eq!(mode(&file), 0o600);
        match st.lookup() {
            Lookup::Found(s) => {
                assert_eq!(s.protocol, "ietf");
                assert_eq!(s.upload_url, loc.to_string());
            }
            other => panic!("{other:?}"),
        }
        // Another URL for the same file has its own state.
        let other = StateFile::new(
            Some(&states),
            FileIdentity::of(&f).unwrap(),
            &url("http://127.0.0.1:9/up/other.bin"),
        );
        assert_eq!(other.lookup(), Lookup::Nothing);
        // The file grows: same path and URL, another identity.
        fs::OpenOptions::new()
            .append(true)
            .open(&f)
            .unwrap()
            .write_all(b" and more")
            .unwrap();
        let again = StateFile::new(Some(&states), FileIdentity::of(&f).unwrap(), &target);
        assert!(matches!(again.lookup(), Lookup::FileChanged(_)));
        again.remove();
        assert!(!again.exists());
        assert_eq!(st.lookup(), Lookup::Nothing);
    }

    #[test]
    fn parts_are_recorded_and_older_records_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("data.bin");
        fs::write(&f, b"parts").unwrap();
        let target = url("http://127.0.0.1:9/up/data.bin");
        let st = StateFile::new(
            Some(&dir.path().join("state")),
            FileIdentity::of(&f).unwrap(),
            &target,
        );
        let parts = SavedParts {
            done: "5 1 01".into(),
            urls: vec![Some("http://127.0.0.1:9/-/uploads/1".into()), None],
        };
        st.save_parts(parts.clone()).unwrap();
        match st.lookup() {
            Lookup::Found(s) => assert_eq!(s.parts, Some(parts)),
            other => panic!("{other:?}"),
        }
        // A one-upload record (as written before parts existed) has none.
        st.save("tus", &url("http://127.0.0.1:9/-/uploads/2"))
            .unwrap();
        let p = dir
            .path()
            .join("state")
            .join(state_name(&FileIdentity::of(&f).unwrap().path, &target));
        let text = fs::read_to_string(&p).unwrap();
        assert!(!text.contains("parts"), "{text}");
        assert!(matches!(
            st.lookup(),
            Lookup::Found(SavedUpload { parts: None, .. })
        ));
    }

    #[test]
    fn identity_sees_a_replaced_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        fs::write(&f, b"same size").unwrap();
        let before = FileIdentity::of(&f).unwrap();
        assert_eq!(before, FileIdentity::of(&f).unwrap());
        let tmp = dir.path().join("y");
        fs::write(&tmp, b"same size").unwrap();
        fs::rename(&tmp, &f).unwrap();
        assert_ne!(before, FileIdentity::of(&f).unwrap(), "a new inode");
    }

    #[test]
    fn the_state_folder_follows_xdg() {
        let some = |s: &str| Some(OsString::from(s));
        assert_eq!(
            state_dir_from(some("/st"), some("/home/u")),
            Some(PathBuf::from("/st/wirespeed/uploads"))
        );
        assert_eq!(
            state_dir_from(some("rel"), some("/home/u")),
            Some(PathBuf::from("/home/u/.local/state/wirespeed/uploads")),
            "a relative XDG_STATE_HOME is ignored"
        );
        assert_eq!(
            state_dir_from(None, some("/home/u")),
            Some(PathBuf::from("/home/u/.local/state/wirespeed/uploads"))
        );
        assert_eq!(state_dir_from(None, None), None);
        let st = StateFile::new(
            None,
            FileIdentity {
                path: "/x".into(),
                size: 1,
                mtime_ns: 0,
                dev: 0,
                ino: 0,
            },
            &url("http://h/x"),
        );
        assert_eq!(st.lookup(), Lookup::Nothing);
        st.save("tus", &url("http://h/-/uploads/1")).unwrap();
        assert!(!st.exists());
    }
}
