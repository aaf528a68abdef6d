//! `wirespeed get`: one URL to a file or stdout, several URLs into a
//! folder, folders (-r) by walking their JSON listings.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::progress::human_size;

use anyhow::{bail, Context};
use clap::Args;
use wirespeed_client::transfer::{self, DownloadOptions, DownloadReport};
use wirespeed_client::{url::decode, Client, Error, Url};

use super::put::{files_rate, report_failures};
use super::{
    client, folder, notice, progress, runtime, total_progress, url, ClientOpts, ParallelOpts,
    RetryOpts,
};

const AFTER_HELP: &str = "\
Examples:
  wirespeed get http://127.0.0.1:8080/isos/big.iso             # -> ./big.iso
  wirespeed get -c http://127.0.0.1:8080/isos/big.iso -o /tmp/big.iso
  wirespeed get 'http://127.0.0.1:8080/w/ünï 1.txt'            # encoded for you; %XX kept
  wirespeed get http://127.0.0.1:8080/a.txt http://127.0.0.1:8080/b.txt dl/
  wirespeed get http://127.0.0.1:8080/dir.tar -o - | tar x     # to stdout
  wirespeed get -r http://127.0.0.1:8080/photos/ backup        # -> backup/photos/... if backup exists
  wirespeed get -n -r http://127.0.0.1:8080/photos/            # -> ./photos/, keep existing files

Every file arrives as FILE.part and is renamed to FILE only when complete
(and verified, when the server sends Repr-Digest); any non-2xx final answer
leaves no file and exits 1. The destination's folder must exist: it is
checked before anything is transferred.

Retries: a broken connection, a timeout or a 5xx is retried (--retries N,
default 10) from where FILE.part ends, with `Range: bytes=N-` and `If-Range`
(the ETag, else Last-Modified): if the file changed on the server meanwhile,
it answers the whole new file and the download starts again from byte 0.
Output to stdout (-o -) is not retried: bytes written cannot be taken back.

Folders: like `cp -r`, `get -r URL/NAME/ DEST` creates DEST/NAME/ when DEST
is an existing folder, and makes DEST the copy of NAME otherwise. The listing
is read as JSON (`?format=json`), so -r needs a wirespeed server; names that
could leave DEST (`..`, `/`) are skipped with a warning.

Times: like `wget` and `curl -R`, each file gets the server's modification
time (`Last-Modified`), set before it is renamed into place; --no-mtime
leaves the time of the download.

--no-clobber: like `wget -nc` and `cp -n`, an existing local file is not
downloaded again (checked before transferring); this is reported on stderr and
is not an error. Without it, files are replaced.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct GetArgs {
    /// What to download: one or more URLs, optionally followed by the
    /// destination (same as -o).
    #[arg(required = true, num_args = 1.., value_name = "URL")]
    pub args: Vec<String>,
    /// Destination file, or an existing folder (several URLs, -r: a folder).
    /// `-` writes to standard output. Default: the URL's last path segment in
    /// the current folder.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Resume: continue an existing `FILE.part` left by an earlier run with a
    /// Range request (starts over if the server cannot continue it). Within
    /// one run, failures are resumed anyway (--retries).
    #[arg(long = "continue", short = 'c')]
    pub resume: bool,
    /// Download folders and everything in them.
    #[arg(long, short = 'r')]
    pub recursive: bool,
    /// Never replace a local file: skip it and say so.
    #[arg(long, short = 'n')]
    pub no_clobber: bool,
    /// Do not give files the server's modification time (`Last-Modified`,
    /// kept by default as `wget` and `curl -R` do): they get the time of
    /// the download instead.
    #[arg(long)]
    pub no_mtime: bool,
    #[command(flatten)]
    pub parallel: ParallelOpts,
    #[command(flatten)]
    pub retry: RetryOpts,
    #[command(flatten)]
    pub opts: ClientOpts,
}

fn looks_like_url(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.starts_with("http://") || l.starts_with("https://")
}

pub(super) fn destination(target: &Url, output: Option<&Path>) -> anyhow::Result<PathBuf> {
    let name = target.file_name();
    match output {
        Some(p) if p.is_dir() => match name {
            Some(n) => Ok(p.join(n)),
            None => bail!(
                "{target} has no file name to save as inside {}; give -o FILE",
                p.display()
            ),
        },
        Some(p) => Ok(p.to_path_buf()),
        None => match name {
            Some(n) => Ok(PathBuf::from(n)),
            None => bail!("{target} has no file name to save as; give -o FILE"),
        },
    }
}

/// The folder `dest` is to be created in must exist (checked before the transfer).
fn check_parent(dest: &Path) -> anyhow::Result<()> {
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
fn folder_name(u: &Url) -> Option<String> {
    let seg = u.path().trim_end_matches('/').rsplit('/').next()?;
    let name = decode(seg);
    transfer::safe_name(&name).then_some(name)
}

/// One file to download and where.
struct Job {
    url: Url,
    dest: PathBuf,
    /// From the listing (0 when not known).
    size: u64,
}

pub fn get(args: GetArgs) -> anyhow::Result<()> {
    let mut urls = args.args.clone();
    let mut output = args.output.clone();
    if urls.len() > 1 && !looks_like_url(urls.last().map_or("", String::as_str)) {
        let last = urls.pop().map(PathBuf::from);
        if output.is_some() {
            bail!("give the destination once: as the last argument or with -o");
        }
        output = last;
    }
    let targets = urls
        .iter()
        .map(|u| url(u))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let parallel = usize::from(args.parallel.parallel);
    let client = client(&args.opts, parallel)?;
    let rt = runtime()?;
    let stdout = output.as_deref() == Some(Path::new("-"));
    if stdout {
        let [target] = targets.as_slice() else {
            bail!("-o - (stdout) takes one URL");
        };
        if args.recursive || args.resume {
            bail!("-o - (stdout) cannot be used with -r or --continue");
        }
        let mut out = tokio::io::stdout();
        // The bytes go to stdout; the bar, if stderr is a terminal, to stderr.
        let p = progress(&args.opts, "get");
        let result = rt.block_on(transfer::download_to(
            &client,
            target,
            &mut out,
            Some(p.sink()),
        ));
        p.finish();
        result.with_context(|| format!("downloading {target} to stdout"))?;
        return Ok(());
    }
    if args.recursive {
        return get_folders(&args, &client, &rt, &targets, output.as_deref());
    }
    if let [target] = targets.as_slice() {
        return get_one(&args, &client, &rt, target, output.as_deref());
    }
    let dir = output.unwrap_or_else(|| PathBuf::from("."));
    if !dir.is_dir() {
        bail!(
            "several URLs are saved into a folder, and {} is not one",
            dir.display()
        );
    }
    let mut jobs = Vec::new();
    for target in targets {
        let Some(name) = target.file_name() else {
            bail!("{target} has no file name to save as");
        };
        jobs.push(Job {
            dest: dir.join(name),
            url: target,
            size: 0,
        });
    }
    run_jobs(&args, &client, &rt, jobs, true, &dir)
}

fn get_one(
    args: &GetArgs,
    client: &Client,
    rt: &tokio::runtime::Runtime,
    target: &Url,
    output: Option<&Path>,
) -> anyhow::Result<()> {
    let dest = destination(target, output)?;
    check_parent(&dest)?;
    if args.no_clobber && dest.exists() {
        if !args.opts.quiet {
            eprintln!("{} exists, not replaced (--no-clobber)", dest.display());
        }
        return Ok(());
    }
    let p = progress(&args.opts, "get");
    let opts = DownloadOptions {
        resume: args.resume,
        progress: Some(p.sink()),
        retry: args.retry.policy(),
        notice: notice(&args.opts),
        keep_mtime: !args.no_mtime,
    };
    let result = rt.block_on(transfer::download_file(client, target, &dest, &opts));
    p.finish();
    let rep = result.with_context(|| {
        let part = transfer::part_path(&dest);
        let keep = if part.exists() {
            format!(
                " (partial data kept in {}; resume with --continue)",
                part.display()
            )
        } else {
            String::new()
        };
        format!("downloading {target} to {}{keep}", dest.display())
    })?;
    if !args.opts.quiet {
        println!("{}", summary(target, &rep, &p.meter().rate()));
    }
    Ok(())
}

fn summary(target: &Url, rep: &DownloadReport, rate: &str) -> String {
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

fn get_folders(
    args: &GetArgs,
    client: &Client,
    rt: &tokio::runtime::Runtime,
    targets: &[Url],
    output: Option<&Path>,
) -> anyhow::Result<()> {
    let mut jobs = Vec::new();
    let mut top = PathBuf::from(".");
    for target in targets {
        let (root, entries) = rt
            .block_on(transfer::walk(client, target))
            .with_context(|| format!("listing {target}"))?;
        let name = folder_name(&root);
        let base = match (output, name) {
            (Some(d), Some(n)) if d.is_dir() => d.join(n),
            (Some(d), None) if d.is_dir() => d.to_path_buf(),
            (Some(d), _) if targets.len() == 1 => {
                check_parent(d)?;
                d.to_path_buf()
            }
            (Some(d), _) => bail!(
                "several folders are saved into a folder, and {} is not one",
                d.display()
            ),
            (None, Some(n)) => PathBuf::from(n),
            (None, None) => bail!("{root} has no name to save as; give a destination folder"),
        };
        if let Some(d) = output {
            top = d.to_path_buf();
        }
        std::fs::create_dir_all(&base).with_context(|| base.display().to_string())?;
        for e in entries {
            let dest = folder::local_path(&base, &e.rel);
            if e.dir {
                std::fs::create_dir_all(&dest).with_context(|| dest.display().to_string())?;
            } else {
                jobs.push(Job {
                    url: e.url,
                    dest,
                    size: e.size,
                });
            }
        }
    }
    run_jobs(args, client, rt, jobs, false, &top)
}

/// Download `jobs` `--parallel` at a time; `per_file` prints a line each.
fn run_jobs(
    args: &GetArgs,
    client: &Client,
    rt: &tokio::runtime::Runtime,
    jobs: Vec<Job>,
    per_file: bool,
    top: &Path,
) -> anyhow::Result<()> {
    let quiet = args.opts.quiet;
    let count = jobs.len();
    let (jobs, existing): (Vec<Job>, Vec<Job>) = if args.no_clobber {
        jobs.into_iter().partition(|j| !j.dest.exists())
    } else {
        (jobs, Vec::new())
    };
    if !quiet && per_file {
        for j in &existing {
            eprintln!("{} exists, not replaced (--no-clobber)", j.dest.display());
        }
    }
    let started = Instant::now();
    let p = total_progress(&args.opts, "get", jobs.iter().map(|j| j.size).sum());
    let opts = DownloadOptions {
        resume: args.resume,
        progress: Some(p.sink()),
        retry: args.retry.policy(),
        notice: notice(&args.opts),
        keep_mtime: !args.no_mtime,
    };
    let parallel = usize::from(args.parallel.parallel);
    let results = rt.block_on(folder::run_parallel(jobs, parallel, |job| {
        let (client, opts) = (client.clone(), opts.clone());
        let label = job.url.to_string();
        (label, async move {
            transfer::download_file(&client, &job.url, &job.dest, &opts)
                .await
                .map(|rep| (job.url, rep))
        })
    }));
    p.finish();
    let (mut saved, mut bytes) = (0usize, 0u64);
    let mut failed: Vec<(String, Error)> = Vec::new();
    for (label, r) in results {
        match r {
            Ok((u, rep)) => {
                saved += 1;
                bytes += rep.bytes;
                if per_file && !quiet {
                    println!("{}", summary(&u, &rep, &p.meter().rate()));
                }
            }
            Err(e) => failed.push((label, e)),
        }
    }
    if !quiet {
        println!(
            "{saved} of {count} files saved to {} ({}, {}, {})",
            top.display(),
            human_size(bytes),
            p.meter().rate(),
            files_rate(saved, started)
        );
        if !per_file && !existing.is_empty() {
            eprintln!(
                "{} files exist and were not replaced (--no-clobber)",
                existing.len()
            );
        }
    }
    report_failures(failed, count, "download")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations() {
        let u = Url::parse("http://h/a/b%20c.bin").unwrap();
        assert_eq!(destination(&u, None).unwrap(), PathBuf::from("b c.bin"));
        assert_eq!(
            destination(&u, Some(Path::new("/nonexistent/x"))).unwrap(),
            PathBuf::from("/nonexistent/x")
        );
        assert!(destination(&Url::parse("http://h/").unwrap(), None).is_err());
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
        assert!(looks_like_url("HTTPS://x") && !looks_like_url("dir"));
    }
}
