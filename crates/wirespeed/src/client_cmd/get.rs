//! `wirespeed get`: one URL to a file or stdout, several URLs into a
//! folder, folders (-r) by walking their JSON listings.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use wirespeed_client::transfer::{self, DownloadOptions};
use wirespeed_client::{Client, Url};

use super::get_args::GetArgs;
use super::get_jobs::{check_parent, folder_name, run_jobs, summary, Job};
use super::json_lines::{FileLine, JsonLines, Status};
use super::report::chain;
use super::{client, get_tree, interrupt, notice, progress, runtime, url};

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
        connections: args.connections.map_or(
            wirespeed_client::transfer::ranges::DEFAULT_MAX_CONNECTIONS,
            usize::from,
        ),
        ranged_from: args
            .ranged_from
            .unwrap_or(wirespeed_client::transfer::ranges::RANGED_FROM),
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
    }

    #[test]
    fn urls_or_a_destination() {
        assert!(looks_like_url("HTTPS://x") && !looks_like_url("dir"));
    }
}
