//! What folder transfers share: walking a local tree, running transfers
//! `--parallel` at a time, and telling a per-file failure from one that
//! dooms the rest.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Component, Path, PathBuf};

use wirespeed_client::Error;

/// A regular file found under a local folder.
pub struct LocalFile {
    pub path: PathBuf,
    /// Names from the walked folder down to the file.
    pub rel: Vec<String>,
    pub size: u64,
}

/// A local entry `put -r` does not send, and why.
pub struct Skipped {
    pub path: PathBuf,
    pub why: &'static str,
}

/// Every regular file below `root` (symlinks to files are followed; links
/// to folders, dangling links, special files and reserved `.wirespeed-`
/// names are skipped and returned, so a link loop cannot run forever).
/// Names must be UTF-8 to become URLs.
pub fn walk_local(root: &Path) -> anyhow::Result<(Vec<LocalFile>, Vec<Skipped>)> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let mut stack = vec![(root.to_path_buf(), Vec::<String>::new())];
    while let Some((dir, rel)) = stack.pop() {
        let mut entries = std::fs::read_dir(&dir)
            .map_err(|e| anyhow::anyhow!(e).context(format!("reading {}", dir.display())))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!(e).context(format!("reading {}", dir.display())))?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                anyhow::bail!(
                    "{}: the name is not UTF-8, so it cannot be put in a URL",
                    path.display()
                );
            };
            let ft = e
                .file_type()
                .map_err(|err| anyhow::anyhow!(err).context(path.display().to_string()))?;
            if wirespeed_client::transfer::reserved_name(&name) {
                skipped.push(Skipped {
                    path,
                    why: "names starting with .wirespeed- are reserved by wirespeed",
                });
                continue;
            }
            let mut r = rel.clone();
            r.push(name);
            if ft.is_dir() {
                stack.push((path, r));
                continue;
            }
            let meta = if ft.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(m) if m.is_file() => m,
                    Ok(m) => {
                        let why = if m.is_dir() {
                            "a link to a folder (not followed)"
                        } else {
                            "a link to a special file"
                        };
                        skipped.push(Skipped { path, why });
                        continue;
                    }
                    Err(_) => {
                        skipped.push(Skipped {
                            path,
                            why: "a link to nothing",
                        });
                        continue;
                    }
                }
            } else if ft.is_file() {
                e.metadata()
                    .map_err(|err| anyhow::anyhow!(err).context(path.display().to_string()))?
            } else {
                skipped.push(Skipped {
                    path,
                    why: "a special file (not a regular file)",
                });
                continue;
            };
            out.push(LocalFile {
                path,
                rel: r,
                size: meta.len(),
            });
        }
    }
    Ok((out, skipped))
}

/// Whether the other transfers may go on after `e`: a problem with this one
/// file (unreadable, refused, corrupted) yes; a server that is gone, refuses
/// us or is full, no.
pub fn only_this_file(e: &Error) -> bool {
    match e {
        Error::File { .. }
        | Error::DigestMismatch { .. }
        | Error::BodyLength { .. }
        | Error::Exists { .. } => true,
        Error::Status { status, .. } => {
            (400..500).contains(status) && !matches!(status, 401 | 403 | 407 | 421 | 429)
        }
        _ => false,
    }
}

/// Run `job` over `items`, `parallel` at a time, in order of start. After
/// an error for which `only_this_file` is false no new job starts (the
/// running ones finish). Each started item's label and result go to `done`
/// as it finishes (not kept: a tree's million results are said, not held).
pub async fn run_parallel<T, L, R, F, Fut, D>(items: Vec<T>, parallel: usize, job: F, mut done: D)
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> (L, Fut),
    Fut: Future<Output = Result<R, Error>> + Send + 'static,
    D: FnMut(L, Result<R, Error>),
{
    let mut set = tokio::task::JoinSet::new();
    // Labels stay here, so a task that panicked is still named.
    let mut labels = HashMap::new();
    let mut items = items.into_iter();
    let mut stop = false;
    loop {
        while !stop && set.len() < parallel.max(1) {
            let Some(item) = items.next() else { break };
            let (label, fut) = job(item);
            labels.insert(set.spawn(fut).id(), label);
        }
        let Some(finished) = set.join_next_with_id().await else {
            break;
        };
        let (id, result) = match finished {
            Ok(r) => r,
            Err(e) => (
                e.id(),
                Err(Error::Io {
                    context: "a transfer task failed",
                    source: std::io::Error::other(e.to_string()),
                }),
            ),
        };
        if let Err(e) = &result {
            if !only_this_file(e) {
                stop = true;
            }
        }
        if let Some(label) = labels.remove(&id) {
            done(label, result);
        }
    }
}

/// The local path of `rel` below `base`, or None unless every name in
/// `rel` is exactly one normal path component (no `..`, root, `a/b`), so
/// the path cannot leave `base` whatever a listing said.
pub fn local_path(base: &Path, rel: &[String]) -> Option<PathBuf> {
    let mut p = base.to_path_buf();
    for name in rel {
        let mut parts = Path::new(name).components();
        match (parts.next(), parts.next()) {
            (Some(Component::Normal(n)), None) if n == name.as_str() => p.push(n),
            _ => return None,
        }
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_stay_below_their_base() {
        let rel = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let base = Path::new("dest");
        assert_eq!(
            local_path(base, &rel(&["a", "b c", ".x"])),
            Some(PathBuf::from("dest/a/b c/.x"))
        );
        for bad in [
            &["..", "x"][..],
            &["/etc/x"],
            &["a/../../b"],
            &["."],
            &[""],
            &["a/"],
        ] {
            assert_eq!(local_path(base, &rel(bad)), None, "{bad:?}");
        }
    }
}
