//! `put`'s plan: the command line expanded into uploads before the first
//! byte goes out (folders walked, names checked, what cannot be sent set
//! aside), and on a rerun of `put -r` the files the server has already.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use wirespeed_client::transfer;
use wirespeed_client::{Error, Url};

use super::folder::{self, LocalFile};
use super::put_tree;
use super::report::chain;

/// One file to upload and where.
pub(super) struct Job {
    pub path: PathBuf,
    pub url: Url,
    pub size: u64,
    /// Under `-r`: which of the plan's folders it is in, and its names
    /// from there down.
    pub tree: Option<(usize, Vec<String>)>,
}

/// `base` + `rel` as nested folder names and a file name.
fn join(base: &Url, rel: &[String]) -> Url {
    let mut u = base.clone();
    for (i, name) in rel.iter().enumerate() {
        u = u.child(name, i + 1 < rel.len());
    }
    u
}

/// The name a local folder or file gets on the server (`.` and `dir/..`
/// resolve to the real name).
fn local_name(p: &Path) -> anyhow::Result<String> {
    let name = match p.file_name() {
        Some(n) => n.to_os_string(),
        None => std::fs::canonicalize(p)
            .with_context(|| p.display().to_string())?
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default(),
    };
    match name.to_str() {
        Some(n) if !n.is_empty() => Ok(n.to_string()),
        _ => bail!(
            "{}: no usable (UTF-8) name to put in the URL; give the full URL",
            p.display()
        ),
    }
}

/// The command line expanded: uploads, local files that cannot be sent
/// (reported, the others go on), entries `-r` skipped.
pub(super) struct Plan {
    pub jobs: Vec<Job>,
    /// The server folders `-r` uploads into.
    pub folders: Vec<Url>,
    pub failed: Vec<(String, Error)>,
    pub skipped: Vec<folder::Skipped>,
}

/// A file that is not sent; the error names it (so the label does not).
fn not_sent(path: &Path, why: &str) -> (String, Error) {
    (
        "cannot upload".to_string(),
        Error::File {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, why.to_string()),
        },
    )
}

/// Expand the command line into uploads; everything is checked before the
/// first byte goes out.
pub(super) fn plan(files: &[PathBuf], recursive: bool, target: &Url) -> anyhow::Result<Plan> {
    let folder_url = target.path().ends_with('/');
    if files.len() > 1 && !folder_url {
        bail!("several files go into a folder: end the URL with `/` ({target}/)");
    }
    let mut jobs = Vec::new();
    let mut failed = Vec::new();
    let mut skipped = Vec::new();
    let mut folders = Vec::new();
    for src in files {
        let meta = match std::fs::metadata(src) {
            Ok(m) => m,
            Err(source) => {
                failed.push((
                    "cannot upload".to_string(),
                    Error::File {
                        path: src.clone(),
                        source,
                    },
                ));
                continue;
            }
        };
        if meta.is_dir() {
            if !recursive {
                bail!(
                    "{} is a folder: use -r to upload it and everything in it",
                    src.display()
                );
            }
            let base = if folder_url {
                target.child(&local_name(src)?, true)
            } else {
                target.as_folder()
            };
            let (files, skips) = folder::walk_local(src)?;
            skipped.extend(skips);
            for LocalFile { path, rel, size } in files {
                jobs.push(Job {
                    url: join(&base, &rel),
                    path,
                    size,
                    tree: Some((folders.len(), rel)),
                });
            }
            folders.push(base);
        } else if meta.is_file() {
            let url = if folder_url {
                target.child(&local_name(src)?, false)
            } else {
                target.clone()
            };
            if url.file_name().is_some_and(|n| transfer::reserved_name(&n)) {
                failed.push(not_sent(
                    src,
                    "names starting with .wirespeed- are reserved by wirespeed; upload it under \
                     another name (give the full URL)",
                ));
                continue;
            }
            jobs.push(Job {
                path: src.clone(),
                url,
                size: meta.len(),
                tree: None,
            });
        } else {
            failed.push(not_sent(src, "not a regular file"));
        }
    }
    Ok(Plan {
        jobs,
        folders,
        failed,
        skipped,
    })
}

/// The jobs whose file the server does not have already (by its listing;
/// see `put_tree`), and those it has.
pub(super) async fn drop_unchanged(
    client: &wirespeed_client::Client,
    folders: &[Url],
    jobs: Vec<Job>,
    times_sent: bool,
    quiet: bool,
) -> (Vec<Job>, Vec<Job>) {
    let mut listed = Vec::with_capacity(folders.len());
    for f in folders {
        listed.push(match put_tree::listed_files(client, f).await {
            Ok(m) => Some(m),
            Err(e) => {
                if !quiet {
                    eprintln!(
                        "cannot read the server's listing of {f} ({}): sending every file",
                        chain(&e)
                    );
                }
                None
            }
        });
    }
    jobs.into_iter().partition(|j| {
        let Some((i, rel)) = &j.tree else { return true };
        let there = listed.get(*i).and_then(Option::as_ref);
        !there.is_some_and(|m| put_tree::unchanged(&j.path, j.size, m.get(rel), times_sent))
    })
}
