//! `wirespeed put`: one file, several files, folders (-r) or stdin (-).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use wirespeed_client::transfer::saved::{state_dir, FileIdentity, StateFile};
use wirespeed_client::transfer::{
    self, ClientProtocol, ProtocolChoice, UploadOptions, UploadReport,
};
use wirespeed_client::{Error, Url};

use super::folder;
use super::json_lines::{FileLine, JsonLines, Status};
use super::progress::{human_size, Progress};
use super::put_plan::{drop_unchanged, plan, Job, Plan};
use super::report::{chain, files_rate, report_failures};
use super::{
    client, interrupt, notice, progress, runtime, total_progress, url, ClientOpts, ParallelOpts,
    RetryOpts,
};

const AFTER_HELP: &str = "\
Examples:
  wirespeed put big.iso http://127.0.0.1:8080/isos/          # -> /isos/big.iso
  wirespeed put a.txt b.txt c.txt http://127.0.0.1:8080/docs/  # several files into a folder
  wirespeed put -r photos http://127.0.0.1:8080/backup/      # -> /backup/photos/...
  wirespeed put -r photos http://127.0.0.1:8080/pics         # -> /pics/... (the folder's contents)
  tar c dir | wirespeed put - http://127.0.0.1:8080/dir.tar  # stdin, streamed (chunked)
  wirespeed put -r photos http://127.0.0.1:8080/backup/      # again: sends only what changed
  wirespeed put -n -r photos http://127.0.0.1:8080/backup/   # upload only what is not there yet
  wirespeed put --digest-first big.iso https://files.example:8443/isos/big.iso --token $T
  wirespeed put --form photo.jpg http://127.0.0.1:8080/photos/

Folders: like `cp -r`, `put -r DIR URL/` creates URL/DIR/ and `put -r DIR URL`
(no trailing /) makes URL the copy of DIR. The server creates the folders a
file needs; empty local folders are not created on the server. Links to files
are followed; links to folders or to nothing, special files and names
starting with .wirespeed- (reserved by wirespeed) are skipped, one line each
(`skipped PATH: why`).

Reruns: before sending, `put -r` reads the server's listing of the folder
(JSON, a wirespeed server) and does not send a file whose size and
modification time (to the second, as sent with X-OC-Mtime) the server
already has; so running it again sends what changed, like `rsync`'s quick
check (an edit that keeps both the size and the second is not seen).

--no-clobber: like `cp -n`, `rsync --ignore-existing` and `wget -nc`, a file
that exists on the server is skipped and reported on stderr (`exists, not
replaced`), the other files are still uploaded, and skipping alone is not an
error: the exit status is 0 unless a transfer failed. The server checks
(`If-None-Match: *`), so a file created meanwhile by someone else is kept too.
Without it an existing file is replaced, and `replaced URL` is said on stderr
(unless -q).

Resuming: files of 8 MiB and more are uploaded resumably when the server
offers it (asked with OPTIONS /-/uploads/): with the IETF draft \"Resumable
Uploads for HTTP\" (interop version 8) if announced, else tus 1.0. The upload
is created with an empty request, then the file is appended from the
server's offset; a broken connection, a timeout or a 5xx is retried
(--retries N) from the offset the server reports. A server without resumable
uploads gets a plain PUT, which cannot resume: a retry sends the file again
from byte 0 (so do smaller files, and --protocol put, and -n, whose
create-only check needs a PUT). --protocol ietf|tus forces one protocol at
any size.

Parallel parts: one file of 64 MiB or more goes up over parallel connections
when the server announces tus concatenation: the file is cut into parts (at
most 256), each sent as a tus partial upload, then one final upload has the
server join them into the file (no copy where its file system can avoid
one). It starts with one connection and, every 3 s or so, opens as many
again while the added ones each carried a third of one's share (one more
while together they carried that), up to 8 (--connections N: up to N; 1:
one upload). Across a long, lossy link this is what fills it when the
congestion control is CUBIC. The parts' URLs and which are complete are kept
in the state file, so a rerun sends only the missing bytes. A server without
concatenation (or --digest-first, --protocol ietf|put, -n) gets one upload.

Across runs: a resumable upload is recorded in a small state file under
$XDG_STATE_HOME/wirespeed/uploads/ (else ~/.local/state/wirespeed/uploads/),
keyed by the file (path, size, modification time, inode) and the URL, and
removed when the upload completes. Running the same command again after an
interrupted or killed run (Ctrl-C prints it) continues that upload when the
file is still the same; `put --continue FILE URL` does too, and says so when
nothing is recorded. If the file changed, or the server no longer has the
upload, a new one is started and this is said. A server that cannot take a
resumable upload now (503, 507 to the creation) gets a plain PUT, said once.

Times: each file's modification time is sent as `X-OC-Mtime` (Unix
seconds, as rclone and ownCloud clients send it); a wirespeed server gives
the stored file that time before publishing it and answers `X-OC-Mtime:
accepted`, so `get` and `wget` bring it back. --no-mtime: the server keeps
its time of upload.

Exit status: 0 when every file was stored (or skipped with -n), 1 otherwise.
A file that cannot be read or is refused is reported and the others go on;
an unreachable, unauthorised or full server stops the rest.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct PutArgs {
    /// Files to upload (folders with -r); `-` reads standard input, streamed
    /// with chunked transfer-encoding (URL must then name the file).
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where to upload. A URL ending in `/` is a folder: each file keeps its
    /// name inside it. Several files need a folder URL.
    #[arg(value_name = "URL")]
    pub url: String,
    /// Upload folders and everything in them.
    #[arg(long, short = 'r')]
    pub recursive: bool,
    /// Never replace a file on the server: skip it and say so (see below).
    #[arg(long, short = 'n')]
    pub no_clobber: bool,
    /// Hash the file before sending and send `Repr-Digest`, so the server
    /// refuses (and does not store) a body corrupted on the way. Without it
    /// the file is hashed while it streams and checked against the
    /// `Repr-Digest` the server answers.
    #[arg(long)]
    pub digest_first: bool,
    /// Do not hash the file on this side: no end-to-end check, the transfer is
    /// only as safe as TCP. Saves the sha-256's CPU (it lets the body go out
    /// with sendfile); the server still hashes what it stores.
    #[arg(long, conflicts_with = "digest_first")]
    pub no_verify: bool,
    /// Send a `multipart/form-data` POST (as a browser form would) to URL
    /// (a directory, ending in `/`) instead of a PUT.
    #[arg(long, conflicts_with_all = ["recursive", "no_clobber"])]
    pub form: bool,
    /// Form field name for `--form`.
    #[arg(long, default_value = "file", requires = "form")]
    pub field: String,
    /// Do not send the files' modification times (`X-OC-Mtime`, sent by
    /// default; a wirespeed server gives the stored file that time, as
    /// rclone's and ownCloud's clients expect): the server's time of
    /// upload is kept instead.
    #[arg(long)]
    pub no_mtime: bool,
    /// Upload protocol: auto (resumable from 8 MiB if the server offers it),
    /// ietf, tus, or put (never resumable; retried from byte 0).
    #[arg(long, value_name = "PROTOCOL", default_value = "auto", value_parser = parse_protocol)]
    pub protocol: ProtocolChoice,
    /// Continue the interrupted upload of FILE to URL recorded by an earlier
    /// run (see "Across runs" below).
    #[arg(long = "continue", short = 'c', conflicts_with_all = ["form", "no_clobber"])]
    pub continue_saved: bool,
    /// Largest append of a resumable upload (suffixes K, M, G), e.g. for a
    /// proxy that limits request bodies; default: the whole rest, or the
    /// server's `max-append-size`.
    #[arg(long, value_name = "SIZE", value_parser = wirespeed_units::parse_size)]
    pub append_size: Option<u64>,
    /// At most N parallel connections for one file (default: adaptive, up
    /// to 8): a file of 64 MiB or more goes up as tus partial uploads,
    /// joined by the server into the file (tus concatenation), starting
    /// with one connection and adding one while the total keeps growing.
    /// 1: one upload. A server that cannot join uploads gets one upload.
    /// A cut upload continues with only the missing parts' bytes.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub connections: Option<u16>,
    /// Files at least this large go in parallel parts (tests and benches).
    #[arg(long, value_name = "SIZE", hide = true, value_parser = wirespeed_units::parse_size)]
    pub parts_from: Option<u64>,
    /// Say what became of each file as JSON Lines on stdout, one line per
    /// file as it is done, then a summary line (docs/client.md); errors
    /// stay on stderr.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub parallel: ParallelOpts,
    #[command(flatten)]
    pub retry: RetryOpts,
    #[command(flatten)]
    pub opts: ClientOpts,
}

fn parse_protocol(s: &str) -> Result<ProtocolChoice, String> {
    match s {
        "auto" => Ok(ProtocolChoice::Auto),
        other => ClientProtocol::from_name(other)
            .map(ProtocolChoice::Force)
            .ok_or_else(|| "expected auto, ietf, tus or put".to_string()),
    }
}

/// The failure's hint: a partial upload kept on the server can be continued.
fn continue_hint(path: &Path, url: &Url) -> String {
    let Ok(url) = transfer::upload_url(url, path) else {
        return String::new();
    };
    let Ok(id) = FileIdentity::of(path) else {
        return String::new();
    };
    if StateFile::new(state_dir().as_deref(), id, &url).exists() {
        format!(
            " (the partial upload is kept: `wirespeed put --continue {} {url}` continues it)",
            path.display()
        )
    } else {
        String::new()
    }
}

fn check_line(rep: &UploadReport) -> String {
    let check = match (rep.sha256, rep.server_sha256) {
        (Some(ours), Some(_)) => {
            format!("sha-256 {} verified by the server", transfer::hex(&ours))
        }
        (Some(ours), None) => format!(
            "sha-256 {} NOT verified (the server sent no Repr-Digest)",
            transfer::hex(&ours)
        ),
        (None, _) => "not verified (--no-verify)".to_string(),
    };
    match rep.parallel {
        Some(p) => format!(
            "{check}; sent as {} parts over {} connection{}",
            p.parts,
            p.connections,
            if p.connections == 1 { "" } else { "s" }
        ),
        None => check,
    }
}

pub fn put(args: PutArgs) -> anyhow::Result<()> {
    let parallel = usize::from(args.parallel.parallel);
    let client = client(&args.opts, parallel)?;
    let target = url(&args.url)?;
    let quiet = args.opts.quiet;
    // With --json, stdout is the JSON lines alone.
    let human = !quiet && !args.json;
    let mut json = JsonLines::new(args.json, Status::Sent);
    let rt = runtime()?;
    let upload_opts = UploadOptions {
        digest_first: args.digest_first,
        verify: !args.no_verify,
        no_clobber: args.no_clobber,
        progress: None,
        retry: args.retry.policy(),
        protocol: args.protocol,
        continue_saved: args.continue_saved,
        state_dir: state_dir(),
        notice: notice(&args.opts),
        append_size: args.append_size,
        send_mtime: !args.no_mtime,
        // Files of a tree share the connections (--parallel): one each.
        connections: 1,
        parts_from: args
            .parts_from
            .unwrap_or(wirespeed_client::transfer::ranges::RANGED_FROM),
        ..UploadOptions::default()
    };
    if args.files.iter().any(|f| f.as_os_str() == "-") {
        if args.files.len() > 1 || args.recursive || args.form || args.digest_first {
            bail!("`-` (stdin) is uploaded alone, without -r, --form or --digest-first");
        }
        let p = progress(&args.opts, "put");
        let opts = UploadOptions {
            progress: Some(p.sink()),
            ..upload_opts
        };
        let result = rt.block_on(transfer::upload_stream(
            &client,
            &target,
            tokio::io::stdin(),
            &opts,
        ));
        p.finish();
        let one = One::new(Path::new("-"), &target, "stdin");
        return report_one(result, &one, &p, quiet, &mut json);
    }
    if args.form {
        let [file] = args.files.as_slice() else {
            bail!("--form uploads one file");
        };
        let p = progress(&args.opts, "put");
        let result = rt.block_on(transfer::upload_form(
            &client,
            &target,
            file,
            &args.field,
            Some(p.sink()),
        ));
        p.finish();
        let what = || format!("form upload of {} to {target}", file.display());
        let rep = result.with_context(what).and_then(|(status, text)| {
            rt.block_on(super::form::report(
                &target,
                file,
                status,
                &text,
                args.no_verify,
            ))
            .with_context(what)
        });
        let rep = match rep {
            Ok(rep) => rep,
            Err(e) => {
                json.file(FileLine {
                    why: Some(format!("{e:#}")),
                    ..FileLine::new(file, &target.to_string(), 0, Status::Failed)
                });
                json.finish(&target.to_string(), 1);
                return Err(e);
            }
        };
        let label = file.display().to_string();
        let one = One::new(file, &target, &label);
        return report_one(Ok(rep), &one, &p, quiet, &mut json);
    }
    let Plan {
        jobs,
        folders,
        failed: not_sent,
        skipped,
    } = plan(&args.files, args.recursive, &target)?;
    for s in &skipped {
        if !quiet {
            eprintln!("skipped {}: {}", s.path.display(), s.why);
        }
        json.file(FileLine {
            path: Some(&s.path),
            url: None,
            bytes: 0,
            status: Status::Skipped,
            verified: None,
            why: Some(s.why.to_string()),
        });
    }
    // Every file the command line names or a folder holds, sent or not.
    let planned = (jobs.len() + not_sent.len() + skipped.len()) as u64;
    // A rerun sends what changed (-n asks the server for each file anyway).
    let jobs = if folders.is_empty() || args.no_clobber {
        jobs
    } else {
        let (jobs, unchanged) = rt.block_on(drop_unchanged(
            &client,
            &folders,
            jobs,
            !args.no_mtime,
            quiet,
        ));
        if !quiet && !unchanged.is_empty() {
            eprintln!(
                "{} files unchanged on the server (size and time as listed), not sent",
                unchanged.len()
            );
        }
        for j in &unchanged {
            json.file(FileLine::new(
                &j.path,
                &j.url.to_string(),
                j.size,
                Status::Unchanged,
            ));
        }
        jobs
    };
    if jobs.is_empty() {
        for (_, e) in &not_sent {
            json.file(not_sent_line(e));
        }
        json.finish(&target.to_string(), planned);
        if let Some((_, e)) = not_sent.into_iter().next() {
            // The error names the file already.
            return Err(e.into());
        }
        if human {
            outln!("nothing to upload");
        }
        return Ok(());
    }
    let started = Instant::now();
    let again = interrupt::rerun_command(None);
    if let ([job], false, true) = (jobs.as_slice(), args.recursive, not_sent.is_empty()) {
        let p = progress(&args.opts, "put");
        let opts = UploadOptions {
            progress: Some(p.sink()),
            connections: args.connections.map_or(
                wirespeed_client::transfer::ranges::DEFAULT_MAX_CONNECTIONS,
                usize::from,
            ),
            ..upload_opts
        };
        let result = interrupt::block_on(
            &rt,
            transfer::upload_file(&client, &job.url, &job.path, &opts),
            &again,
        );
        p.finish();
        let label = format!(
            "{}{}",
            job.path.display(),
            if result.is_err() {
                continue_hint(&job.path, &job.url)
            } else {
                String::new()
            }
        );
        let one = One::new(&job.path, &job.url, &label);
        return report_one(result, &one, &p, quiet, &mut json);
    }
    let total: u64 = jobs.iter().map(|j| j.size).sum();
    let count = jobs.len() + not_sent.len();
    let p = total_progress(&args.opts, "put", total);
    let opts = UploadOptions {
        progress: Some(p.sink()),
        ..upload_opts
    };
    // Per-file lines for files named on the command line (a few: they are
    // kept for after the bar); a summary for folders.
    let per_file = !args.recursive;
    let mut lines = Vec::new();
    let (mut stored, mut bytes, mut replaced, mut exist) = (0usize, 0u64, 0usize, 0usize);
    let mut failed = Vec::new();
    for (label, e) in not_sent {
        json.file(not_sent_line(&e));
        failed.push((label, e));
    }
    let job = |job: Job| {
        let (client, opts) = (client.clone(), opts.clone());
        let label = (
            job.path.display().to_string(),
            job.path.clone(),
            job.url.clone(),
        );
        (label, async move {
            transfer::upload_file(&client, &job.url, &job.path, &opts).await
        })
    };
    let done = |(label, path, url): (String, PathBuf, Url), r: Result<UploadReport, Error>| {
        let url_text = url.to_string();
        let mut line = FileLine::new(&path, &url_text, 0, Status::Sent);
        match r {
            Ok(rep) => {
                stored += 1;
                bytes += rep.bytes;
                line.bytes = rep.bytes;
                line.verified = Some(verified(&rep));
                if rep.replaced() {
                    replaced += 1;
                    if per_file && !quiet {
                        lines.push((true, format!("replaced {}", rep.url)));
                    }
                }
                if per_file && human {
                    lines.push((
                        false,
                        format!(
                            "{label} -> {} ({}), {}",
                            rep.url,
                            human_size(rep.bytes),
                            check_line(&rep)
                        ),
                    ));
                }
            }
            Err(Error::Exists { url }) => {
                exist += 1;
                line.status = Status::Exists;
                if per_file && !quiet {
                    lines.push((true, format!("{url} exists, not replaced (--no-clobber)")));
                }
            }
            Err(e) => {
                line.status = Status::Failed;
                line.why = Some(chain(&e));
                json.file(line);
                failed.push((label, e));
                return;
            }
        }
        json.file(line);
    };
    let run = folder::run_parallel(jobs, parallel, job, done);
    interrupt::block_on(&rt, run, &again);
    p.finish();
    for (to_stderr, line) in lines {
        if to_stderr {
            eprintln!("{line}");
        } else {
            outln!("{line}");
        }
    }
    json.finish(&target.to_string(), planned);
    if human {
        outln!(
            "{stored} of {count} files stored to {target} ({}, {}, {})",
            human_size(bytes),
            p.meter().rate(),
            files_rate(stored, started)
        );
    }
    if !quiet {
        if !per_file && replaced > 0 {
            eprintln!("{replaced} existing files replaced");
        }
        if !per_file && exist > 0 {
            eprintln!("{exist} files exist and were not replaced (--no-clobber)");
        }
    }
    report_failures(failed, count, "upload")
}

/// The one file of a single upload: its local path, its URL, how errors
/// name it.
struct One<'a> {
    path: &'a Path,
    url: String,
    label: &'a str,
}

impl<'a> One<'a> {
    fn new(path: &'a Path, url: &Url, label: &'a str) -> One<'a> {
        One {
            path,
            url: url.to_string(),
            label,
        }
    }
}

/// Whether the server confirmed our hash (its `Repr-Digest`, checked).
fn verified(rep: &UploadReport) -> bool {
    rep.sha256.is_some() && rep.server_sha256.is_some()
}

/// The line of a file the plan could not send (the error names it).
fn not_sent_line(e: &Error) -> FileLine<'_> {
    let path = match e {
        Error::File { path, .. } => Some(path.as_path()),
        _ => None,
    };
    FileLine {
        path,
        url: None,
        bytes: 0,
        status: Status::Failed,
        verified: None,
        why: Some(chain(e)),
    }
}

/// The summary of a single upload, its notices, and its exit.
fn report_one(
    result: Result<UploadReport, Error>,
    one: &One<'_>,
    progress: &Progress,
    quiet: bool,
    json: &mut JsonLines,
) -> anyhow::Result<()> {
    let mut line = FileLine::new(one.path, &one.url, 0, Status::Sent);
    let rep = match result {
        Ok(rep) => rep,
        Err(Error::Exists { url }) => {
            if !quiet {
                eprintln!("{url} exists, not replaced (--no-clobber)");
            }
            line.status = Status::Exists;
            json.file(line);
            json.finish(&one.url, 1);
            return Ok(());
        }
        Err(e) => {
            line.status = Status::Failed;
            line.why = Some(chain(&e));
            json.file(line);
            json.finish(&one.url, 1);
            return Err(anyhow::Error::new(e).context(format!("uploading {}", one.label)));
        }
    };
    if !quiet && rep.replaced() {
        eprintln!("replaced {}", rep.url);
    }
    line.bytes = rep.bytes;
    line.verified = Some(verified(&rep));
    json.file(line);
    json.finish(&one.url, 1);
    if !quiet && !json.on() {
        outln!(
            "{} -> {} ({}, {}), {}",
            one.label,
            rep.url,
            human_size(rep.bytes),
            progress.meter().rate(),
            check_line(&rep)
        );
    }
    Ok(())
}
