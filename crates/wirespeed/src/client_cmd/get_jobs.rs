//! Running `get`'s downloads: the files to fetch, `--parallel` at a time,
//! and the lines that report them; shared by `get` (several URLs, one file)
//! and `get -r` (`get_tree.rs`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::bail;
use wirespeed_client::transfer::{self, DownloadOptions, DownloadReport};
use wirespeed_client::{url::decode, Client, Error, Url};

use super::get_args::GetArgs;
use super::json_lines::{FileLine, JsonLines, Status};
use super::progress::human_size;
use super::report::{chain, files_rate, report_failures};
use super::{folder, interrupt, notice, total_progress};

/// The folder `dest` is to be created in must exist (checked before the transfer).
pub(super) fn check_parent(dest: &Path) -> anyhow::Result<()> {
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        bail!(
            "cannot save {}: the folder {} does not exist (create it first)",
            dest.display(),
            parent.display()
        );
    }
    Ok(())
}

/// A folder URL's own name (`/a/b%20c/` → `b c`), if it has a safe one.
pub(super) fn folder_name(u: &Url) -> Option<String> {
    let seg = u.path().trim_end_matches('/').rsplit('/').next()?;
    let name = decode(seg);
    transfer::refuse_name(&name).is_none().then_some(name)
}

/// One file to download and where.
pub(super) struct Job {
    pub url: Url,
    pub dest: PathBuf,
    /// From the listing (0 when not known).
    pub size: u64,
}

pub(super) fn summary(target: &Url, rep: &DownloadReport, rate: &str) -> String {
    let resumed = if rep.resumed_from > 0 {
        format!(", resumed at {}", human_size(rep.resumed_from))
    } else {
        String::new()
    };
    let check = if rep.verified {
        ", sha-256 verified"
    } else {
        ""
    };
    format!(
        "{target} -> {} ({}{resumed}, {rate}{check})",
        rep.dest.display(),
        human_size(rep.bytes),
    )
}

/// Download `jobs` `--parallel` at a time; `per_file` prints a line each.
pub(super) fn run_jobs(
    args: &GetArgs,
    client: &Client,
    rt: &tokio::runtime::Runtime,
    jobs: Vec<Job>,
    per_file: bool,
    top: &Path,
    json: &mut JsonLines,
) -> anyhow::Result<()> {
    let quiet = args.opts.quiet;
    let human = !quiet && !args.json;
    let count = jobs.len();
    let planned = json.said() + count as u64;
    let (jobs, existing): (Vec<Job>, Vec<Job>) = if args.no_clobber {
        jobs.into_iter().partition(|j| !j.dest.exists())
    } else {
        (jobs, Vec::new())
    };
    for j in &existing {
        if !quiet && per_file {
            eprintln!("{} exists, not replaced (--no-clobber)", j.dest.display());
        }
        let bytes = std::fs::metadata(&j.dest).map_or(0, |m| m.len());
        json.file(FileLine::new(
            &j.dest,
            &j.url.to_string(),
            bytes,
            Status::Exists,
        ));
    }
    let started = Instant::now();
    let p = total_progress(&args.opts, "get", jobs.iter().map(|j| j.size).sum());
    let opts = DownloadOptions {
        // A tree's rerun continues its partial files (-c or not).
        resume: args.resume || args.recursive,
        progress: Some(p.sink()),
        retry: args.retry.policy(),
        notice: notice(&args.opts),
        keep_mtime: !args.no_mtime,
        // Files of a tree already share the connections (--parallel).
        connections: 1,
        ranged_from: u64::MAX,
    };
    let parallel = usize::from(args.parallel.parallel);
    let again = interrupt::rerun_command((!args.recursive).then_some(("--continue", "-c")));
    let (mut saved, mut bytes) = (0usize, 0u64);
    let mut failed: Vec<(String, Error)> = Vec::new();
    // Per-file lines for URLs named on the command line (a few: kept for
    // after the bar).
    let mut lines = Vec::new();
    let job = |job: Job| {
        let (client, opts) = (client.clone(), opts.clone());
        let label = (job.url.clone(), job.dest.clone());
        (label, async move {
            transfer::download_file(&client, &job.url, &job.dest, &opts).await
        })
    };
    let done = |(u, dest): (Url, PathBuf), r: Result<DownloadReport, Error>| {
        let url = u.to_string();
        let mut line = FileLine::new(&dest, &url, 0, Status::Saved);
        match r {
            Ok(rep) => {
                saved += 1;
                bytes += rep.bytes;
                line.bytes = rep.bytes;
                line.verified = Some(rep.verified);
                if per_file && human {
                    lines.push(summary(&u, &rep, &p.meter().rate()));
                }
            }
            Err(e) => {
                line.status = Status::Failed;
                line.why = Some(chain(&e));
                failed.push((url.clone(), e));
            }
        }
        json.file(line);
    };
    let run = folder::run_parallel(jobs, parallel, job, done);
    interrupt::block_on(rt, run, &again);
    p.finish();
    for line in lines {
        outln!("{line}");
    }
    json.finish(&top.display().to_string(), planned);
    if human {
        outln!(
            "{saved} of {count} files saved to {} ({}, {}, {})",
            top.display(),
            human_size(bytes),
            p.meter().rate(),
            files_rate(saved, started)
        );
    }
    if !quiet && !per_file && !existing.is_empty() {
        eprintln!(
            "{} files exist and were not replaced (--no-clobber)",
            existing.len()
        );
    }
    report_failures(failed, count, "download")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_must_exist() {
        assert!(check_parent(Path::new("/nonexistent/x")).is_err());
        assert!(check_parent(Path::new("x")).is_ok());
    }

    #[test]
    fn folder_names() {
        let n = |s: &str| folder_name(&Url::parse(s).unwrap());
        assert_eq!(n("http://h/a/b%20c/").as_deref(), Some("b c"));
        assert_eq!(n("http://h/ü/").as_deref(), Some("ü"));
        assert_eq!(n("http://h/"), None);
        assert_eq!(n("http://h/a/%2E%2E/"), None);
    }
}
