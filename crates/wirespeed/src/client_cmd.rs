//! `wirespeed put|get|ls|rm`: the client side of the CLI, a thin shell over
//! `wirespeed_client::transfer`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use wirespeed_client::transfer::{self, DownloadOptions, TransferProgress, UploadOptions};
use wirespeed_client::{Client, ClientConfig, ClientTls, Url};

/// Options shared by every client subcommand.
#[derive(Args, Debug, Clone)]
pub struct ClientOpts {
    /// Bearer token sent as `Authorization: Bearer TOKEN`.
    #[arg(
        long,
        env = "WIRESPEED_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
    /// Also trust the PEM certificate(s) in FILE for https:// (e.g. the file
    /// `serve --tls-self-signed` prints, or one from `openssl req -x509`): as
    /// roots, and a server presenting exactly one of them is accepted if it is
    /// in date and names the host. The built-in Mozilla roots stay trusted.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Accept ANY TLS certificate: the connection is encrypted but the server
    /// is not authenticated, so anyone on the path can read and change it.
    /// For tests and throwaway setups only.
    #[arg(long, short = 'k')]
    pub insecure: bool,
    /// Size of each socket read/write and file step, 4K to 64M (suffixes K, M:
    /// KiB, MiB).
    #[arg(long, value_name = "SIZE", default_value = "256K", value_parser = parse_buffer_size)]
    pub buffer_size: usize,
    /// No progress bar and no summary line (errors are still printed).
    /// The bar is also off when stdout or stderr is not a terminal.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  wirespeed put big.iso http://127.0.0.1:8080/isos/\n  \
wirespeed put --digest-first big.iso https://files.example:8443/isos/big.iso --token $T\n  \
wirespeed put --form photo.jpg http://127.0.0.1:8080/photos/"
)]
pub struct PutArgs {
    /// File to upload.
    pub file: PathBuf,
    /// Where to upload. A URL ending in `/` gets the file's name appended.
    pub url: String,
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
    #[arg(long)]
    pub form: bool,
    /// Form field name for `--form`.
    #[arg(long, default_value = "file", requires = "form")]
    pub field: String,
    #[command(flatten)]
    pub opts: ClientOpts,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  wirespeed get http://127.0.0.1:8080/isos/big.iso\n  \
wirespeed get -c http://127.0.0.1:8080/isos/big.iso -o /tmp/big.iso"
)]
pub struct GetArgs {
    /// What to download.
    pub url: String,
    /// Destination file (or an existing directory). Default: the URL's last
    /// path segment in the current directory. The body streams into
    /// `FILE.part`, renamed to FILE only when complete and verified.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Resume: continue an existing `FILE.part` with a Range request (starts
    /// over if the server cannot continue it).
    #[arg(long = "continue", short = 'c')]
    pub resume: bool,
    #[command(flatten)]
    pub opts: ClientOpts,
}

#[derive(Args, Debug)]
pub struct LsArgs {
    /// Directory URL (ending in `/`).
    pub url: String,
    /// Print the server's JSON listing as it is.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub opts: ClientOpts,
}

#[derive(Args, Debug)]
pub struct RmArgs {
    /// File (or empty directory) URL to delete.
    pub url: String,
    #[command(flatten)]
    pub opts: ClientOpts,
}

/// `--buffer-size`: a size ([`crate::size::parse_size`]) from 4K to 64M.
fn parse_buffer_size(s: &str) -> Result<usize, String> {
    let n = crate::size::parse_size(s)?;
    if !(4096..=(64 << 20)).contains(&n) {
        return Err("buffer size must be between 4K and 64M".into());
    }
    Ok(n as usize)
}

fn client(opts: &ClientOpts) -> anyhow::Result<Client> {
    let cfg = ClientConfig {
        read_buffer: opts.buffer_size,
        write_buffer: opts.buffer_size,
        tls: ClientTls {
            cacert: opts.cacert.clone(),
            insecure_accept_anything: opts.insecure,
        },
        token: opts.token.clone().filter(|t| !t.is_empty()),
        ..ClientConfig::default()
    };
    Ok(Client::new(cfg)?)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    // Two workers: the socket task and the file reader/writer thread overlap.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn url(s: &str) -> anyhow::Result<Url> {
    Ok(Url::parse(s)?)
}

/// An indicatif bar as the library's progress sink.
struct Bar(ProgressBar);

impl TransferProgress for Bar {
    fn start(&self, total: Option<u64>, already: u64) {
        if let Some(t) = total {
            self.0.set_length(t);
        }
        self.0.set_position(already);
        // Rate and ETA over this run's bytes only, not the resumed part.
        self.0.reset_eta();
    }
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}

fn progress(opts: &ClientOpts, verb: &str) -> Option<(Arc<dyn TransferProgress>, ProgressBar)> {
    if opts.quiet || !std::io::stderr().is_terminal() || !std::io::stdout().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(verb.to_string());
    Some((Arc::new(Bar(bar.clone())), bar))
}

fn rate(bytes: u64, started: Instant) -> String {
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    format!("{:.1} MB/s", bytes as f64 / secs / 1e6)
}

pub fn put(args: PutArgs) -> anyhow::Result<()> {
    let client = client(&args.opts)?;
    let target = url(&args.url)?;
    let bar = progress(&args.opts, "put");
    let started = Instant::now();
    let rt = runtime()?;
    if args.form {
        let p = bar.as_ref().map(|b| b.0.clone());
        let result = rt.block_on(transfer::upload_form(
            &client,
            &target,
            &args.file,
            &args.field,
            p,
        ));
        if let Some((_, b)) = &bar {
            b.finish_and_clear();
        }
        let (status, text) = result
            .with_context(|| format!("form upload of {} to {target}", args.file.display()))?;
        if !args.opts.quiet {
            println!("{status} {}", text.trim());
        }
        return Ok(());
    }
    let opts = UploadOptions {
        digest_first: args.digest_first,
        verify: !args.no_verify,
        progress: bar.as_ref().map(|b| b.0.clone()),
    };
    let result = rt.block_on(transfer::upload_file(&client, &target, &args.file, &opts));
    if let Some((_, b)) = &bar {
        b.finish_and_clear();
    }
    let rep = result.with_context(|| format!("uploading {} to {target}", args.file.display()))?;
    if !args.opts.quiet {
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
        println!(
            "{} -> {} ({} bytes, {}), {check}",
            args.file.display(),
            rep.url,
            rep.bytes,
            rate(rep.bytes, started),
        );
    }
    Ok(())
}

fn destination(target: &Url, output: Option<&Path>) -> anyhow::Result<PathBuf> {
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

pub fn get(args: GetArgs) -> anyhow::Result<()> {
    let client = client(&args.opts)?;
    let target = url(&args.url)?;
    let dest = destination(&target, args.output.as_deref())?;
    let bar = progress(&args.opts, "get");
    let opts = DownloadOptions {
        resume: args.resume,
        progress: bar.as_ref().map(|b| b.0.clone()),
    };
    let started = Instant::now();
    let rt = runtime()?;
    let result = rt.block_on(transfer::download_file(&client, &target, &dest, &opts));
    if let Some((_, b)) = &bar {
        b.finish_and_clear();
    }
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
        let resumed = if rep.resumed_from > 0 {
            format!(", resumed at {}", rep.resumed_from)
        } else {
            String::new()
        };
        let check = if rep.verified {
            ", sha-256 verified"
        } else {
            ""
        };
        println!(
            "{target} -> {} ({} bytes{resumed}, {}{check})",
            dest.display(),
            rep.bytes,
            rate(rep.bytes - rep.resumed_from, started)
        );
    }
    Ok(())
}

pub fn ls(args: LsArgs) -> anyhow::Result<()> {
    let client = client(&args.opts)?;
    let target = url(&args.url)?;
    let (raw, entries) = runtime()?
        .block_on(transfer::list(&client, &target))
        .with_context(|| format!("listing {target}"))?;
    if args.json {
        print!("{raw}");
        if !raw.ends_with('\n') {
            println!();
        }
        return Ok(());
    }
    let width = entries
        .iter()
        .map(|e| e.size.to_string().len())
        .max()
        .unwrap_or(1)
        .max(4);
    println!(
        "{:<4}  {:>width$}  {:<20}  NAME",
        "TYPE", "SIZE", "MODIFIED"
    );
    for e in &entries {
        let (kind, size, suffix) = if e.kind == "dir" {
            ("dir", "-".to_string(), "/")
        } else {
            ("file", e.size.to_string(), "")
        };
        println!(
            "{kind:<4}  {size:>width$}  {:<20}  {}{suffix}",
            printable(e.modified.as_deref().unwrap_or("-")),
            printable(&e.name)
        );
    }
    Ok(())
}

/// A name from the network made safe for a terminal: control characters
/// (ESC, BEL, CR, LF, DEL, C1) are shown as escapes (`\u{1b}`) instead of
/// being interpreted, so a file name cannot retitle, clear or recolour the
/// terminal of whoever lists the folder.
pub fn printable(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

pub fn rm(args: RmArgs) -> anyhow::Result<()> {
    let client = client(&args.opts)?;
    let target = url(&args.url)?;
    let status = runtime()?
        .block_on(transfer::delete(&client, &target))
        .with_context(|| format!("deleting {target}"))?;
    if !args.opts.quiet {
        println!("deleted {target} ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_sizes() {
        assert_eq!(parse_buffer_size("256K"), Ok(256 * 1024));
        assert_eq!(parse_buffer_size("1m"), Ok(1 << 20));
        assert_eq!(parse_buffer_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_buffer_size("8192"), Ok(8192));
        assert_eq!(parse_buffer_size("64M"), Ok(64 << 20));
        assert!(parse_buffer_size("1").is_err());
        assert!(parse_buffer_size("x").is_err());
        assert!(parse_buffer_size("1G").is_err());
    }

    #[test]
    fn destinations() {
        let u = Url::parse("http://h/a/b%20c.bin").unwrap();
        assert_eq!(destination(&u, None).unwrap(), PathBuf::from("b c.bin"));
        assert_eq!(
            destination(&u, Some(Path::new("/nonexistent/x"))).unwrap(),
            PathBuf::from("/nonexistent/x")
        );
        assert!(destination(&Url::parse("http://h/").unwrap(), None).is_err());
    }
}

#[cfg(test)]
mod printable_tests {
    use super::printable;

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(printable("plain ünï.txt"), "plain ünï.txt");
        let evil = "a\u{1b}]0;pwned\u{7}b\r\n\u{7f}\u{9b}";
        let shown = printable(evil);
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert_eq!(shown, "a\\u{1b}]0;pwned\\u{7}b\\u{d}\\u{a}\\u{7f}\\u{9b}");
    }
}
