//! `get -r`: where a remote tree is written, and reruns that continue it.
//!
//! The rule (see `get --help`): `get -r URL/NAME/ DEST` writes DEST/NAME/
//! on every run, NAME taken from the URL as typed, never from a redirect;
//! every local path is built from names checked to be one plain component.
//! A rerun keeps up-to-date files, resumes partial ones and removes
//! partial files the listing no longer has.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use wirespeed_client::transfer::{self, RemoteEntry};
use wirespeed_client::{Client, Url};

use super::get_args::GetArgs;
use super::get_jobs::{check_parent, folder_name, run_jobs, Job};
use super::json_lines::{FileLine, JsonLines, Status};
use super::{folder, printable};

pub(super) fn get_folders(
    args: &GetArgs,
    client: &Client,
    rt: &tokio::runtime::Runtime,
    targets: &[Url],
    output: Option<&Path>,
    json: &mut JsonLines,
) -> anyhow::Result<()> {
    let quiet = args.opts.quiet;
    if let Some(d) = output {
        if d.exists() && !d.is_dir() {
            bail!("{} exists and is not a folder", d.display());
        }
        // DEST is created if missing, but not its parents (a typo stays a
        // typo); checked before any request.
        check_parent(d)?;
    }
    let mut jobs = Vec::new();
    let mut up_to_date = 0usize;
    let mut kept_parts = HashSet::new();
    let mut folders = Vec::new();
    // Up to date by the listing, but fetched within the second they were
    // listed with: the server is asked whether that is still its version.
    let mut to_confirm = Vec::new();
    for target in targets {
        // The local name comes from what was typed: a redirect may change
        // where the listing is read, never where files are written.
        let base = match (output, folder_name(target)) {
            (Some(d), Some(n)) => d.join(n),
            (Some(d), None) => d.to_path_buf(),
            (None, Some(n)) => PathBuf::from(n),
            (None, None) => bail!("{target} has no name to save as; give a destination folder"),
        };
        let walk = rt
            .block_on(transfer::walk(client, target, args.walk.limits()))
            .with_context(|| format!("listing {target}"))?;
        for (what, why) in &walk.skipped {
            if !quiet {
                eprintln!("skipped {}: {why}", printable(what));
            }
            json.file(FileLine {
                path: None,
                url: Some(what),
                bytes: 0,
                status: Status::Skipped,
                verified: None,
                why: Some(why.to_string()),
            });
        }
        std::fs::create_dir_all(&base).with_context(|| base.display().to_string())?;
        folders.push(base.clone());
        for e in walk.entries {
            let Some(dest) = folder::local_path(&base, &e.rel) else {
                // `walk` checked every name; this is the last line of defence.
                eprintln!(
                    "skipped {}: not a plain file name",
                    printable(&e.url.to_string())
                );
                continue;
            };
            if e.dir {
                std::fs::create_dir_all(&dest).with_context(|| dest.display().to_string())?;
                folders.push(dest);
            } else if is_up_to_date(&dest, &e) {
                if racy(&dest, &e) {
                    to_confirm.push(Job {
                        url: e.url,
                        dest,
                        size: e.size,
                    });
                } else {
                    up_to_date += 1;
                    json.file(FileLine::new(
                        &dest,
                        &e.url.to_string(),
                        e.size,
                        Status::Unchanged,
                    ));
                }
            } else {
                jobs.push(job(e, dest, &mut kept_parts));
            }
        }
    }
    for (j, current) in rt.block_on(confirm(client, to_confirm, args.parallel.parallel)) {
        if current {
            up_to_date += 1;
            json.file(FileLine::new(
                &j.dest,
                &j.url.to_string(),
                j.size,
                Status::Unchanged,
            ));
        } else {
            kept_parts.insert(transfer::part_path(&j.dest));
            jobs.push(j);
        }
    }
    let stale = remove_stale_parts(&folders, &kept_parts);
    if !quiet && up_to_date > 0 {
        eprintln!("{up_to_date} files up to date (size and time as listed), kept");
    }
    if !quiet && stale > 0 {
        eprintln!(
            "{stale} stale partial files removed (their file is gone from the server, complete \
             or changed)"
        );
    }
    let top = output.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    run_jobs(args, client, rt, jobs, false, &top, json)
}

/// The download of a listed file into `dest`; its partial file is kept
/// unless older than the listed file (it holds another version's bytes:
/// not resumed, the stale sweep removes it).
fn job(e: RemoteEntry, dest: PathBuf, kept_parts: &mut HashSet<PathBuf>) -> Job {
    let part = transfer::part_path(&dest);
    if !changed_since(&part, &e) {
        kept_parts.insert(part);
    }
    Job {
        url: e.url,
        dest,
        size: e.size,
    }
}

/// Ask the server (HEAD, `parallel` at once) whether each file is still
/// its current version: the listing's size and second cannot tell a
/// same-size edit within the second, its version can. A failed question
/// answers "not current": the download that follows reports the failure.
async fn confirm(client: &Client, files: Vec<Job>, parallel: u16) -> Vec<(Job, bool)> {
    let mut set = tokio::task::JoinSet::new();
    let mut files = files.into_iter();
    let mut out = Vec::new();
    loop {
        while set.len() < usize::from(parallel.max(1)) {
            let Some(j) = files.next() else { break };
            let client = client.clone();
            set.spawn(async move {
                let current = transfer::is_current(&client, &j.url, &j.dest, j.size).await;
                (j, current.unwrap_or(false))
            });
        }
        match set.join_next().await {
            Some(Ok(done)) => out.push(done),
            Some(Err(e)) => tracing::warn!(error = %e, "a version check failed"),
            None => return out,
        }
    }
}

/// A local file that is the listed one already: same size, and not older
/// than the listing's time (as `wget -N` decides; no time listed: size
/// alone). Never a link or anything but a regular file.
fn is_up_to_date(dest: &Path, e: &RemoteEntry) -> bool {
    let Ok(m) = std::fs::symlink_metadata(dest) else {
        return false;
    };
    if !m.is_file() || m.len() != e.size {
        return false;
    }
    !changed_since(dest, e)
}

/// Whether a file the listing calls up to date may still have changed
/// within the very second it was listed with: it was downloaded (by the
/// server's clock, recorded with it) before that second had passed, so a
/// same-size edit in that second leaves the listing as it was. Only then
/// is the server asked for its version (HEAD); a file fetched later can
/// only have changed into a later second, which the listing shows. A
/// record without the server's time is asked about too.
fn racy(dest: &Path, e: &RemoteEntry) -> bool {
    let Some(rec) = transfer::validators::recorded(dest, &e.url) else {
        return false;
    };
    let listed = e.modified.as_deref().and_then(transfer::parse_listing_time);
    match (rec.served_at, listed) {
        (Some(served), Some(listed)) => served <= listed + 1,
        _ => true,
    }
}

/// Whether the server's file is newer than the local file at `path`
/// (by the listing's time; unknown: no).
fn changed_since(path: &Path, e: &RemoteEntry) -> bool {
    let Some(remote) = e.modified.as_deref().and_then(transfer::parse_listing_time) else {
        return false;
    };
    std::fs::symlink_metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .is_some_and(|d| (d.as_secs() as i64) < remote)
}

/// Remove the partial downloads in `folders` that no job of this run will
/// continue (their file is gone from the server, complete, or changed).
fn remove_stale_parts(folders: &[PathBuf], keep: &HashSet<PathBuf>) -> usize {
    let mut removed = 0;
    for dir in folders {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let path = entry.path();
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if is_file
                && transfer::is_part_name(&entry.file_name())
                && !keep.contains(&path)
                && std::fs::remove_file(&path).is_ok()
            {
                removed += 1;
            }
        }
    }
    removed
}
