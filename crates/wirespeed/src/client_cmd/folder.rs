//! What folder transfers share: walking a local tree, running transfers
//! `--parallel` at a time, and telling a per-file failure from one that
//! dooms the rest.

use std::future::Future;
use std::path::{Path, PathBuf};

use wirespeed_client::Error;

/// A regular file found under a local folder.
pub struct LocalFile {
    pub path: PathBuf,
    /// Names from the walked folder down to the file.
    pub rel: Vec<String>,
    pub size: u64,
}

/// Every regular file below `root` (symlinks to files are followed; links
/// to folders and special files are skipped with a warning, so a link loop
/// cannot run forever). Names must be UTF-8 to become URLs.
pub fn walk_local(root: &Path) -> anyhow::Result<Vec<LocalFile>> {
    let mut out = Vec::new();
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
            let mut r = rel.clone();
            r.push(name);
            if ft.is_dir() {
                stack.push((path, r));
                continue;
            }
            let meta = if ft.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(m) if m.is_file() => m,
                    _ => {
                        tracing::warn!(path = %path.display(), "skipping a link to a folder or to nothing");
                        continue;
                    }
                }
            } else if ft.is_file() {
                e.metadata()
                    .map_err(|err| anyhow::anyhow!(err).context(path.display().to_string()))?
            } else {
                tracing::warn!(path = %path.display(), "skipping a special file");
                continue;
            };
            out.push(LocalFile {
                path,
                rel: r,
                size: meta.len(),
            });
        }
    }
    Ok(out)
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
/// running ones finish). Returns each started item's result.
pub async fn run_parallel<T, R, F, Fut>(
    items: Vec<T>,
    parallel: usize,
    job: F,
) -> Vec<(String, Result<R, Error>)>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> (String, Fut),
    Fut: Future<Output = Result<R, Error>> + Send + 'static,
{
    let mut set = tokio::task::JoinSet::new();
    let mut items = items.into_iter();
    let mut out = Vec::new();
    let mut stop = false;
    loop {
        while !stop && set.len() < parallel.max(1) {
            let Some(item) = items.next() else { break };
            let (label, fut) = job(item);
            set.spawn(async move { (label, fut.await) });
        }
        let Some(done) = set.join_next().await else {
            break;
        };
        let (label, result) = match done {
            Ok(r) => r,
            Err(e) => (
                "a transfer".to_string(),
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
        out.push((label, result));
    }
    out
}

/// The local path of `rel` below `base`.
pub fn local_path(base: &Path, rel: &[String]) -> PathBuf {
    let mut p = base.to_path_buf();
    p.extend(rel);
    p
}
