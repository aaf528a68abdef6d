//! `wirespeed rm`: files, or folders with everything in them (-r).

use anyhow::{bail, Context};
use clap::Args;
use wirespeed_client::transfer::RemoteEntry;
use wirespeed_client::{transfer, Client, Error, Url};

use super::report::report_failures;
use super::{folder, plain_client, printable, runtime, url, ConnOpts, ParallelOpts, WalkOpts};

const AFTER_HELP: &str = "\
Examples:
  wirespeed rm http://127.0.0.1:8080/isos/big.iso
  wirespeed rm http://127.0.0.1:8080/a.txt http://127.0.0.1:8080/b.txt
  wirespeed rm -r http://127.0.0.1:8080/old-backup/

-r lists the folder (JSON listings), deletes its files (--parallel at a time),
then its folders deepest first, then the folder itself; a file URL is simply
deleted. Without -r a folder is
deleted only if it is empty (the server answers 409 otherwise).";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct RmArgs {
    /// File URLs to delete (folders: only empty ones, or any with -r).
    #[arg(required = true, num_args = 1.., value_name = "URL")]
    pub urls: Vec<String>,
    /// Delete folders and everything in them.
    #[arg(long, short = 'r')]
    pub recursive: bool,
    #[command(flatten)]
    pub parallel: ParallelOpts,
    #[command(flatten)]
    pub walk: WalkOpts,
    /// No `deleted …` lines (errors are still printed).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub opts: ConnOpts,
}

pub fn rm(args: RmArgs) -> anyhow::Result<()> {
    let parallel = usize::from(args.parallel.parallel);
    let client = plain_client(&args.opts, parallel)?;
    let targets = args
        .urls
        .iter()
        .map(|u| url(u))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let rt = runtime()?;
    for target in &targets {
        if args.recursive {
            match rt.block_on(transfer::walk(&client, target, args.walk.limits())) {
                Ok(walk) => {
                    if !args.quiet {
                        for (what, why) in &walk.skipped {
                            eprintln!("skipped {}: {why}", printable(what));
                        }
                    }
                    rm_tree(&args, &client, &rt, &walk.root, walk.entries, parallel)?;
                    continue;
                }
                // A file: deleted like without -r.
                Err(Error::NotAFolder { .. }) => {}
                Err(e) => return Err(e).with_context(|| format!("listing {target}")),
            }
        }
        let status = rt
            .block_on(transfer::delete(&client, target))
            .with_context(|| format!("deleting {target}"))?;
        if !args.quiet {
            outln!("deleted {target} ({status})");
        }
    }
    Ok(())
}

fn rm_tree(
    args: &RmArgs,
    client: &Client,
    rt: &tokio::runtime::Runtime,
    root: &Url,
    entries: Vec<RemoteEntry>,
    parallel: usize,
) -> anyhow::Result<()> {
    if root.path() == "/" {
        bail!("{root} is the server's root folder; delete what is in it instead");
    }
    let (dirs, files): (Vec<_>, Vec<_>) = entries.into_iter().partition(|e| e.dir);
    let count = files.len();
    let mut failed = Vec::new();
    let mut deleted = 0usize;
    let job = |e: RemoteEntry| {
        let client = client.clone();
        (e.url.to_string(), async move {
            transfer::delete(&client, &e.url).await
        })
    };
    rt.block_on(folder::run_parallel(
        files,
        parallel,
        job,
        |label, r| match r {
            Ok(_) => deleted += 1,
            Err(e) => failed.push((label, e)),
        },
    ));
    report_failures(failed, count, "delete")?;
    // Deepest first: a folder is empty once everything below it is gone.
    let mut dirs = dirs;
    dirs.sort_by_key(|d| std::cmp::Reverse(d.rel.len()));
    for d in dirs.iter().map(|d| &d.url).chain([root]) {
        match rt.block_on(transfer::delete(client, d)) {
            // On S3 a folder is only its keys' common prefix: it vanished
            // with its last file, and is deleted all the same.
            Err(Error::Status { status: 404, .. }) => {}
            r => {
                r.with_context(|| format!("deleting the folder {d}"))?;
            }
        }
    }
    if !args.quiet {
        outln!(
            "deleted {root} ({deleted} files, {} folders)",
            dirs.len() + 1
        );
    }
    Ok(())
}
