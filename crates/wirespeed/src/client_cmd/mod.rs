//! `wirespeed put|get|ls|rm`: the client side of the CLI, a thin shell over
//! `wirespeed_client::transfer`. Shared here: options, the client, progress
//! bars, the parallel runner; one file per subcommand.

mod find;
mod folder;
mod form;
mod get;
mod get_args;
mod get_jobs;
mod get_tree;
mod interrupt;
mod json_lines;
mod progress;
mod put;
mod put_plan;
mod put_tree;
mod report;
mod rm;
mod share;
mod status_hint;
mod trash;

pub use find::{find, FindArgs};
pub use get::get;
pub use get_args::GetArgs;
pub use put::{put, PutArgs};
pub use rm::{rm, RmArgs};
pub use share::{share, ShareArgs};
pub use status_hint::explain;
pub use trash::{trash, TrashArgs};

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use progress::Progress;
use wirespeed_client::transfer::{self, WalkLimits};
use wirespeed_client::{Client, ClientConfig, ClientTls, Url};

/// How to reach and sign in to the server: every client subcommand's
/// options, and all that `ls` and `share` take (their `--help` lists only
/// flags that do something there).
#[derive(Args, Debug, Clone)]
pub struct ConnOpts {
    /// Bearer token sent as `Authorization: Bearer TOKEN`.
    #[arg(
        long,
        env = "WIRESPEED_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
    /// Sign in as this user of the server's rules file (`serve --auth`), by
    /// HTTP Basic. The password comes from WIRESPEED_PASSWORD, else it is
    /// asked for on the terminal; never give it on the command line.
    #[arg(long, value_name = "NAME", env = "WIRESPEED_USER")]
    pub user: Option<String>,
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
}

/// The options of the commands that move bytes (`put`, `get`): the
/// connection's, the size of each read and write, and quiet.
#[derive(Args, Debug, Clone)]
pub struct ClientOpts {
    #[command(flatten)]
    pub conn: ConnOpts,
    /// Size of each socket read/write and file step, 4K to 64M (suffixes K, M:
    /// KiB, MiB).
    #[arg(long, value_name = "SIZE", default_value = "256K", value_parser = parse_buffer_size)]
    pub buffer_size: usize,
    /// No progress bar and no summary line (errors are still printed).
    /// The bar (on stderr) is also off when stderr is not a terminal.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// TCP congestion control for our connections (we send the uploads).
    /// Default: auto — bbr when the kernel offers it and allows it to this
    /// user (else the system default), and an upload on bbr moves to cubic
    /// once its link shows 2 s without random loss (bbr gives up ~2% of a
    /// clean link to its round-trip probe), back to bbr if loss then costs it
    /// the rate. Or: a name the kernel offers (bbr, cubic, reno, …), kept for
    /// the connection's life; `system` for the system default; names to try
    /// in order ending in `system` as the fallback.
    #[arg(long, value_name = "auto|NAME[,NAME…][,system]", value_parser = wirespeed_io::congestion::Request::parse)]
    pub congestion_control: Option<wirespeed_io::congestion::Request>,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  wirespeed ls http://127.0.0.1:8080/isos/\n  \
wirespeed ls 'http://127.0.0.1:8080/my photos/'      # typed names are percent-encoded\n  \
wirespeed ls --json http://127.0.0.1:8080/ | jq .\n\n\
A URL without its trailing `/` is followed to the folder. A URL that is a file \
fails with `is a file, not a folder; use get`; a server that answers no JSON \
listing (not wirespeed) fails with a message saying so."
)]
pub struct LsArgs {
    /// Directory URL (ending in `/`).
    pub url: String,
    /// Print the server's JSON listing as it is.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub opts: ConnOpts,
}

/// `--buffer-size`: a size ([`wirespeed_units::parse_size`]) from 4K to 64M.
fn parse_buffer_size(s: &str) -> Result<usize, String> {
    let n = wirespeed_units::parse_size(s).map_err(|e| e.to_string())?;
    if !(4096..=(64 << 20)).contains(&n) {
        return Err("buffer size must be between 4K and 64M".into());
    }
    Ok(n as usize)
}

/// `--retries`: shared by `put` and `get`.
#[derive(Args, Debug, Clone, Copy)]
pub struct RetryOpts {
    /// Retries after a failure that may pass (broken connection, timeout,
    /// refused connection, 5xx, 408, 409, 429), waiting 0.5 s doubling up to
    /// 30 s (randomised) between them; the count starts again whenever bytes
    /// got through. Other client errors (4xx) are not retried. 0: none.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub retries: u32,
}

impl RetryOpts {
    fn policy(&self) -> transfer::retry::RetryPolicy {
        transfer::retry::RetryPolicy {
            retries: self.retries,
            ..Default::default()
        }
    }
}

/// Where retrying transfers say what they do: stderr, unless -q.
fn notice(opts: &ClientOpts) -> Option<transfer::retry::Notice> {
    (!opts.quiet).then(|| Arc::new(progress::say) as transfer::retry::Notice)
}

/// `--parallel`: transfers at once for folders and several files.
#[derive(Args, Debug, Clone, Copy)]
pub struct ParallelOpts {
    /// Transfers at once for folders (-r) and several files, each on its own
    /// kept-alive connection (reused from file to file), 1 to 256.
    #[arg(long, short = 'P', value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub parallel: u16,
}

/// Limits of a remote walk (`get -r`, `rm -r`).
#[derive(Args, Debug, Clone, Copy)]
pub struct WalkOpts {
    /// Most files and folders a remote tree may hold (-r): a bigger or
    /// hostile listing fails before anything is transferred.
    #[arg(long, value_name = "N", default_value_t = WalkLimits::default().max_entries)]
    pub max_entries: u64,
    /// Most bytes a remote tree's walk may hold in memory (-r): each
    /// entry's names, URL and record, added up (about 500 bytes an entry
    /// with a short path), besides one folder's listing at a time;
    /// suffixes K, M, G.
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = wirespeed_units::parse_size)]
    pub max_names: u64,
}

impl WalkOpts {
    fn limits(&self) -> WalkLimits {
        WalkLimits {
            max_entries: self.max_entries,
            max_name_bytes: self.max_names,
        }
    }
}

/// A client that moves bytes (`--buffer-size`) whose pool keeps
/// `parallel` connections per server.
fn client(opts: &ClientOpts, parallel: usize) -> anyhow::Result<Client> {
    let congestion = wirespeed_io::congestion::Congestion::resolve(
        &opts.congestion_control.clone().unwrap_or_default(),
    )?;
    client_with(&opts.conn, Some(opts.buffer_size), parallel, congestion)
}

/// A client with the default buffers, for `ls`, `rm` and `share`.
fn plain_client(opts: &ConnOpts, parallel: usize) -> anyhow::Result<Client> {
    client_with(opts, None, parallel, Default::default())
}

fn client_with(
    opts: &ConnOpts,
    buffer: Option<usize>,
    parallel: usize,
    congestion: wirespeed_io::congestion::Congestion,
) -> anyhow::Result<Client> {
    status_hint::token_given(opts.token.as_deref().is_some_and(|t| !t.is_empty()));
    let defaults = ClientConfig::default();
    let cfg = ClientConfig {
        max_idle_per_host: defaults.max_idle_per_host.max(parallel),
        read_buffer: buffer.unwrap_or(defaults.read_buffer),
        write_buffer: buffer.unwrap_or(defaults.write_buffer),
        tls: ClientTls {
            cacert: opts.cacert.clone(),
            insecure_accept_anything: opts.insecure,
        },
        token: opts.token.clone().filter(|t| !t.is_empty()),
        basic: sign_in(opts)?,
        congestion,
        ..defaults
    };
    Ok(Client::new(cfg)?)
}

/// `--user NAME`: its password from WIRESPEED_PASSWORD, or typed at the
/// terminal (not echoed).
fn sign_in(opts: &ConnOpts) -> anyhow::Result<Option<wirespeed_client::BasicAuth>> {
    let Some(user) = opts.user.clone().filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    if user.contains(':') {
        anyhow::bail!("--user {user:?}: a user name cannot contain ':' (HTTP Basic)");
    }
    let password = match std::env::var("WIRESPEED_PASSWORD") {
        Ok(p) => p,
        Err(_) => ask_password(&user)?,
    };
    status_hint::user_given(true);
    Ok(Some(wirespeed_client::BasicAuth { user, password }))
}

/// The password of `user`, typed at the terminal. Without one (a script,
/// cron, a pipe) the fix is said plainly, not the terminal's errno.
fn ask_password(user: &str) -> anyhow::Result<String> {
    let no_terminal = || {
        anyhow::anyhow!(
            "--user {user} needs a password, and there is no terminal to type it at: set \
             WIRESPEED_PASSWORD (e.g. from your password manager), or run this in a terminal"
        )
    };
    if std::fs::File::open("/dev/tty").is_err() {
        return Err(no_terminal());
    }
    rpassword::prompt_password(format!("password for {user}: "))
        .context("reading the password from the terminal")
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    // Two workers: the socket task and the file reader/writer thread overlap.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// A URL as typed; without a scheme, `http://` is assumed (as curl does).
fn url(s: &str) -> anyhow::Result<Url> {
    Ok(Url::parse(&with_scheme(s))?)
}

/// `host:port/path` → `http://host:port/path`; anything with `://` as is.
fn with_scheme(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains("://") || s.is_empty() {
        std::borrow::Cow::Borrowed(s)
    } else {
        std::borrow::Cow::Owned(format!("http://{s}"))
    }
}

/// A progress meter for `verb`, with a bar when stderr is a terminal
/// (also when stdout is not: `get -o - | tar x`, `get URL > log`).
fn progress(opts: &ClientOpts, verb: &'static str) -> Progress {
    Progress::new(show_bar(opts), verb)
}

/// One meter and bar over `total` bytes shared by many transfers.
fn total_progress(opts: &ClientOpts, verb: &'static str, total: u64) -> Progress {
    Progress::shared(show_bar(opts), verb, total)
}

fn show_bar(opts: &ClientOpts) -> bool {
    !opts.quiet && std::io::stderr().is_terminal()
}

pub fn ls(args: LsArgs) -> anyhow::Result<()> {
    let client = plain_client(&args.opts, 1)?;
    let target = url(&args.url)?;
    let (raw, entries) = runtime()?
        .block_on(transfer::list(&client, &target))
        .with_context(|| format!("listing {target}"))?;
    if args.json {
        out!("{raw}");
        if !raw.ends_with('\n') {
            outln!();
        }
        return Ok(());
    }
    let width = entries
        .iter()
        .map(|e| e.size.to_string().len())
        .max()
        .unwrap_or(1)
        .max(4);
    outln!(
        "{:<4}  {:>width$}  {:<20}  NAME",
        "TYPE",
        "SIZE",
        "MODIFIED"
    );
    for e in &entries {
        let (kind, size, suffix) = if e.kind == "dir" {
            ("dir", "-".to_string(), "/")
        } else {
            ("file", e.size.to_string(), "")
        };
        outln!(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_without_a_scheme_are_http() {
        assert_eq!(with_scheme("h:8080/a"), "http://h:8080/a");
        assert_eq!(with_scheme("https://h/a"), "https://h/a");
        assert_eq!(
            url("127.0.0.1:9/x").unwrap().to_string(),
            "http://127.0.0.1:9/x"
        );
        assert!(url("ftp://h/x").is_err());
    }

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
