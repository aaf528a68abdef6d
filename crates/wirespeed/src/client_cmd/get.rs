//! `wirespeed get`: one URL to a file or stdout, several URLs into a
//! folder, folders (-r) by walking their JSON listings.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::progress::human_size;

use anyhow::{bail, Context};
use clap::Args;
use wirespeed_client::transfer::{self, DownloadOptions, DownloadReport};
use wirespeed_client::{url::decode, Client, Error, Url};

use super::json_lines::{FileLine, JsonLines, Status};
use super::report::{chain, files_rate, report_failures};
use super::{
    client, folder, get_tree, interrupt, notice, progress, runtime, total_progress, url,
    ClientOpts, ParallelOpts, RetryOpts, WalkOpts,
};

const AFTER_HELP: &str = "\
Examples:
  wirespeed get http://127.0.0.1:8080/isos/big.iso             # -> ./big.iso
  wirespeed get -c http://127.0.0.1:8080/isos/big.iso -o /tmp/big.iso
  wirespeed get 'http://127.0.0.1:8080/w/ünï 1.txt'            # encoded for you; %XX kept
  wirespeed get http://127.0.0.1:8080/a.txt http://127.0.0.1:8080/b.txt dl/
  wirespeed get http://127.0.0.1:8080/dir.tar -o - | tar x     # to stdout
  wirespeed get -r http://127.0.0.1:8080/photos/ backup        # -> backup/photos/..., every run
  wirespeed get -n -r http://127.0.0.1:8080/photos/            # -> ./photos/, keep existing files
  wirespeed get 127.0.0.1:8080/a.txt                           # no scheme: http:// (as curl)
  wirespeed get -r --archive zip http://127.0.0.1:8080/photos/ # -> ./photos.zip, one download

Every file arrives as .wirespeed-part-FILE (hidden, beside it; the
.wirespeed- prefix is reserved, so no remote file can take that name) and
is renamed to FILE only when complete (and verified, when the server sends
Repr-Digest); any non-2xx final answer leaves no file and exits 1. The
destination's folder must exist: it is checked before anything is
transferred. Ctrl-C keeps what arrived, prints the command that continues
and exits 130. The server's version of the bytes (its ETag, else
Last-Modified) is recorded on the file (extended attribute
user.wirespeed.validator): running the same command again continues a
partial file, with or without -c, when the server still has that version
(If-Range), and starts over when it changed.

Retries: a broken connection, a timeout or a 5xx is retried (--retries N,
default 10) from where FILE.part ends, with `Range: bytes=N-` and `If-Range`
(the ETag, else Last-Modified): if the file changed on the server meanwhile,
it answers the whole new file and the download starts again from byte 0.
Output to stdout (-o -) is not retried: bytes written cannot be taken back.

Folders: `get -r URL/NAME/ DEST` always writes DEST/NAME/ (DEST is created
if missing, like `wget -P DEST`); without DEST, ./NAME/. NAME is the last
name of the URL you typed: a redirect may change where the listing is read,
never where files are written. The server's root (no NAME) goes into DEST
itself. So the same command always writes the same tree, and a rerun
continues it: files whose size matches the listing and that are not older
than it are kept (a file fetched within the second it is listed with is
kept only if the server's version is still the recorded one: HEAD), files
whose size or version changed are downloaded again, partial files are
resumed (unless older than the listed file), partial files no longer listed are removed, and the exit status is 1 if any file failed. The listing is
read as JSON (`?format=json`), so -r needs a wirespeed server; a name that
is not one plain file name (`..`, `/etc/x`, `a/../b`) or starts with
.wirespeed- is skipped and said (`skipped URL: why`). A tree above
--max-entries entries or --max-names bytes of names fails before any
transfer.

--archive tar|zip: the folder arrives as one archive with an exact length,
so a cut download resumes (-c, retries) like a file; if the folder changed
meanwhile, the server answers the new archive whole.

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
    /// Download a folder as one archive the server builds
    /// (`?archive=tar|zip`): one file, resumable like any other (-c, retries
    /// with Range/If-Range). Default name: FOLDER.tar or FOLDER.zip.
    #[arg(long, value_name = "FORMAT", value_parser = ["tar", "zip"])]
    pub archive: Option<String>,
    /// Do not give files the server's modification time (`Last-Modified`,
    /// kept by default as `wget` and `curl -R` do): they get the time of
    /// the download instead.
    #[arg(long)]
    pub no_mtime: bool,
    /// Say what became of each file as JSON Lines on stdout, one line per
    /// file as it is done, then a summary line (docs/client.md); errors
    /// stay on stderr. Not with -o - (the file is stdout then).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub parallel: ParallelOpts,
    #[command(flatten)]
    pub retry: RetryOpts,
    #[command(flatten)]
    pub walk: WalkOpts,
    #[command(flatten)]
    pub opts: ClientOpts,
}

/// Whether the last argument is a URL rather than the destination: it has
/// a scheme, or reads as `HOST:PORT/…`.
fn looks_like_url(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    if l.starts_with("http://") || l.starts_with("https://") {
        return true;
    }
    let authority = l.split('/').next().unwrap_or("");
    authority.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
    })
}

pub(super) fn destination(target: &Url, output: Option<&Path>) -> anyhow::Result<PathBuf> {
    let name = target.file_name();
    let into_folder = output.is_none_or(|p| p.is_dir());
    if name.is_none() && into_folder && target.path().ends_with('/') {
        bail!(
            "{target} is a folder: use `wirespeed get -r {target}` to download it (or \
             `--archive zip` for one file, `wirespeed ls` to list it)"
        );
    }
    if let Some(p) = output.filter(|p| names_a_folder(p) && !p.is_dir()) {
        bail!(
            "cannot save into {}: the folder does not exist (create it first)",
            p.display()
        );
    }
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

/// `DIR/` (or `.`/`..`): the user means a folder, never a file name.
fn names_a_folder(p: &Path) -> bool {
    let s = p.as_os_str().as_encoded_bytes();
    s.ends_with(b"/") || p.file_name().is_none()
}

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
        if args.recursive || args.resume || args.json {
            bail!("-o - (stdout) cannot be used with -r, --continue or --json");
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
    let mut json = JsonLines::new(args.json, Status::Saved);
    if let Some(format) = &args.archive {
        let [target] = targets.as_slice() else {
            bail!("--archive takes one folder URL");
        };
        return get_archive(
            &args,
            &client,
            &rt,
            target,
            format,
            output.as_deref(),
            &mut json,
        );
    }
    if args.recursive {
        return get_tree::get_folders(&args, &client, &rt, &targets, output.as_deref(), &mut json);
    }
    if let [target] = targets.as_slice() {
        return get_one(&args, &client, &rt, target, output.as_deref(), &mut json);
    }
    let dir = output.unwrap_or_else(|| PathBuf::from("."));
    if names_a_folder(&dir) && !dir.is_dir() {
        bail!(
            "cannot save into {}: the folder does not exist",
            dir.display()
        );
    }
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
    run_jobs(&args, &client, &rt, jobs, true, &dir, &mut json)
}

fn get_one(
    args: &GetArgs,
    client: &Client,
    rt: &tokio::runtime::Runtime,
    target: &Url,
    output: Option<&Path>,
    json: &mut JsonLines,
) -> anyhow::Result<()> {
    let dest = destination(target, output)?;
    check_parent(&dest)?;
    let url = target.to_string();
    let mut line = FileLine::new(&dest, &url, 0, Status::Saved);
    if args.no_clobber && dest.exists() {
        if !args.opts.quiet {
            eprintln!("{} exists, not replaced (--no-clobber)", dest.display());
        }
        line.status = Status::Exists;
        line.bytes = std::fs::metadata(&dest).map_or(0, |m| m.len());
        json.file(line);
        json.finish(&url, 1);
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
    let again = interrupt::rerun_command(Some(("--continue", "-c")));
    let result = interrupt::block_on(
        rt,
        transfer::download_file(client, target, &dest, &opts),
        &again,
    );
    p.finish();
    let rep = match result {
        Ok(rep) => rep,
        Err(e) => {
            line.status = Status::Failed;
            line.why = Some(chain(&e));
            json.file(line);
            json.finish(&url, 1);
            let part = transfer::part_path(&dest);
            let keep = if part.exists() {
                format!(
                    " (partial data kept in {}; `{again}` continues it)",
                    part.display()
                )
            } else {
                String::new()
            };
            let what = format!("downloading {target} to {}{keep}", dest.display());
            return Err(anyhow::Error::new(e).context(what));
        }
    };
    line.bytes = rep.bytes;
    line.verified = Some(rep.verified);
    if rep.already_complete {
        line.status = Status::Unchanged;
    }
    json.file(line);
    json.finish(&url, 1);
    if rep.already_complete {
        if !args.opts.quiet {
            eprintln!(
                "{} is already complete ({} bytes, the server's size); nothing to do",
                dest.display(),
                rep.bytes
            );
        }
        return Ok(());
    }
    if !args.opts.quiet && !args.json {
        outln!("{}", summary(target, &rep, &p.meter().rate()));
    }
    Ok(())
}

/// A folder as one archive (`?archive=FORMAT`), saved like a file.
fn get_archive(
    args: &GetArgs,
    client: &Client,
    rt: &tokio::runtime::Runtime,
    target: &Url,
    format: &str,
    output: Option<&Path>,
    json: &mut JsonLines,
) -> anyhow::Result<()> {
    let folder = target.as_folder();
    let name = format!(
        "{}.{format}",
        folder_name(&folder).unwrap_or_else(|| "files".to_string())
    );
    let output = match output {
        Some(p) if p.is_dir() => p.join(&name),
        Some(p) => p.to_path_buf(),
        None => PathBuf::from(&name),
    };
    let mut archive = folder.clone();
    archive.target = format!("{}?archive={format}", folder.path());
    let archive = archive.with_share_of(&folder);
    get_one(args, client, rt, &archive, Some(&output), json)
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
    fn destinations() {
        let u = Url::parse("http://h/a/b%20c.bin").unwrap();
        assert_eq!(destination(&u, None).unwrap(), PathBuf::from("b c.bin"));
        assert_eq!(
            destination(&u, Some(Path::new("/nonexistent/x"))).unwrap(),
            PathBuf::from("/nonexistent/x")
        );
        let folder = destination(&Url::parse("http://h/d/").unwrap(), None).unwrap_err();
        assert!(
            folder.to_string().contains("get -r http://h/d/"),
            "{folder}"
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
