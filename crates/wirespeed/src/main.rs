//! The `wirespeed` command: a thin shell over the library crates.
//! `serve` runs the transfer service; `put`/`get`/`ls`/`rm` are the client;
//! `bench` measures end to end; `completions` prints a shell completion script.

use clap::{Parser, Subcommand};

/// `println!` that ends the process quietly (exit 141, as a SIGPIPE death
/// reads in a shell) when stdout is a closed pipe (`wirespeed ls URL | head
/// -1`), instead of panicking.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, $($t)*).and_then(|()| out.flush()) {
            $crate::output_failed(&e);
        }
    }};
}

/// `print!` with [`outln!`]'s handling of a closed pipe.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if let Err(e) = write!(out, $($t)*).and_then(|()| out.flush()) {
            $crate::output_failed(&e);
        }
    }};
}

/// Exit code of a process whose output pipe was closed (128 + SIGPIPE).
const CLOSED_PIPE_EXIT: i32 = 141;

/// Standard output failed: a closed pipe ends the process quietly; any other
/// error is reported once, then the same.
fn output_failed(e: &std::io::Error) -> ! {
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        eprintln!("error: writing to standard output: {e}");
        std::process::exit(1);
    }
    std::process::exit(CLOSED_PIPE_EXIT);
}

/// Whether an error comes from a closed standard output: `get -o -` into a
/// pipe whose reader left, or a write to stdout returned with `?`. Never a
/// socket's broken pipe (a server that hung up is an error to report).
fn closed_pipe(e: &anyhow::Error) -> bool {
    let broken = |io: &std::io::Error| io.kind() == std::io::ErrorKind::BrokenPipe;
    let stdout_write = e
        .chain()
        .find_map(|c| c.downcast_ref::<wirespeed_client::Error>())
        .is_some_and(|c| {
            matches!(c, wirespeed_client::Error::Io { context, source }
                if *context == wirespeed_client::transfer::OUTPUT_CONTEXT && broken(source))
        });
    stdout_write || e.downcast_ref::<std::io::Error>().is_some_and(broken)
}

mod bench;
mod bench_load;
mod client_cmd;
mod notice;
mod passwd;
mod serve;

#[derive(Parser)]
#[command(
    name = "wirespeed",
    version,
    about = "HTTP/1.1 server, client and data-transfer service whose data path runs at wire speed",
    long_about = "wirespeed moves bytes over HTTP/1.1: uploads and downloads of big files, streamed \
JSON listings, multipart forms, base64 inside XML/SOAP and JSON. `wirespeed serve DIR` serves a \
folder; the other subcommands are its client.\n\nLogging (stderr): set RUST_LOG (e.g. RUST_LOG=debug); \
`serve` writes one access line per request unless --access-log off (RUST_LOG does not change it)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve DIR over HTTP: GET/HEAD files and listings, PUT/POST uploads, DELETE.
    #[command(long_about = serve::LONG_ABOUT, after_help = serve::AFTER_HELP)]
    Serve(Box<serve::ServeArgs>),
    /// Measure end to end: `load URL` (byte-verifying load generator), `json-stream`.
    Bench(bench::BenchArgs),
    /// Upload files, folders (-r) or stdin (-) to URL (PUT, sha-256 checked end to end).
    Put(client_cmd::PutArgs),
    /// Download URLs or folders (-r) to files or stdout (via FILE.part; --continue; Repr-Digest checked).
    Get(client_cmd::GetArgs),
    /// List a directory URL: type, size, modified, name (--json for the raw listing).
    Ls(client_cmd::LsArgs),
    /// Find names anywhere below a folder URL (--content: words inside files), from `serve --search`.
    Find(client_cmd::FindArgs),
    /// Delete file URLs, or a folder and everything in it (-r).
    Rm(client_cmd::RmArgs),
    /// Make a share link for a file or folder URL (--upload: a drop-box link), --list or --revoke them.
    Share(client_cmd::ShareArgs),
    /// What was deleted or overwritten (`trash ls URL`), and putting it back (`trash restore URL`).
    Trash(client_cmd::TrashArgs),
    /// Print an argon2id hash of a password (typed, or stdin's first line) for `serve --auth`.
    Passwd(passwd::PasswdArgs),
    /// Print a shell completion script to stdout (e.g. `wirespeed completions bash`).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) if closed_pipe(&e) => std::process::ExitCode::from(CLOSED_PIPE_EXIT as u8),
        Err(e) => {
            // `{:#}` prints the chain once on one line; returning the error
            // from main would print Debug (and a backtrace with RUST_BACKTRACE).
            eprintln!("error: {e:#}{}", client_cmd::explain(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr; RUST_LOG overrides the default filter (warnings).
/// `serve`'s access lines are not log events: `--access-log` alone decides
/// (`wirespeed_service::access_log`). The returned guard flushes `serve`'s
/// buffered log lines when dropped.
fn init_logging(command: &Command) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let filter = |default: &str| log_filter(std::env::var("RUST_LOG").ok().as_deref(), default);
    let Command::Serve(args) = command else {
        init_subscriber(filter("warn"), false, std::io::stderr);
        return None;
    };
    // A writer thread takes the lines (batched into few writes under load,
    // flushed whenever it catches up), so a slow stderr pipe never stalls
    // a request; if it falls 128k lines behind, lines are dropped instead.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(true)
        .thread_name("wirespeed-log")
        .finish(std::io::BufWriter::with_capacity(
            64 << 10,
            std::io::stderr(),
        ));
    notice::set_json(args.json_logs());
    init_subscriber(filter(args.default_log_filter()), args.json_logs(), writer);
    Some(guard)
}

/// The log filter: `RUST_LOG` when it parses, else `default`. `Targets`
/// takes what people write there (`debug`, `warn,wirespeed=debug`) without
/// `EnvFilter`'s span and field matching, whose regex engine was 340 KiB of
/// the binary (bench/RESULTS.md, "Binary size").
fn log_filter(env: Option<&str>, default: &str) -> tracing_subscriber::filter::Targets {
    let fallback = || default.parse().unwrap_or_default();
    match env.map(str::trim).filter(|v| !v.is_empty()) {
        None => fallback(),
        Some(v) => v.parse().unwrap_or_else(|e| {
            eprintln!(
                "warning: RUST_LOG={v:?} is not a filter ({e}); using {default:?}. \
                 Write a level (error, warn, info, debug, trace) or TARGET=LEVEL pairs \
                 separated by commas, e.g. RUST_LOG=warn,wirespeed=debug"
            );
            fallback()
        }),
    }
}

fn init_subscriber<W>(filter: tracing_subscriber::filter::Targets, json: bool, writer: W)
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    // Colour codes only for a person at a terminal, never into log files.
    let fmt = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(writer);
    if json {
        fmt.json().flatten_event(true).finish().with(filter).init();
    } else {
        fmt.finish().with(filter).init();
    }
}

/// The command line, or clap's error and exit. An unknown subcommand
/// clap finds nothing like (its similarity misses a swap of two letters
/// in a short name: `gte`) gets our suggestion too.
fn parse_cli() -> Cli {
    Cli::try_parse().unwrap_or_else(|e| {
        use clap::CommandFactory;
        let typed = std::env::args().nth(1).unwrap_or_default();
        let rendered = e.render().to_string();
        let near = (e.kind() == clap::error::ErrorKind::InvalidSubcommand
            && !rendered.contains("tip:"))
        .then(|| {
            Cli::command()
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .find(|name| one_edit_apart(&typed, name))
        })
        .flatten();
        match near {
            Some(name) => {
                eprint!(
                    "{}",
                    rendered.trim_end_matches('\n').replace(
                        "\n\nUsage:",
                        &format!("\n\n  tip: a similar subcommand exists: '{name}'\n\nUsage:"),
                    )
                );
                eprintln!();
                std::process::exit(2)
            }
            None => e.exit(),
        }
    })
}

/// One letter inserted, removed, replaced, or two neighbours swapped.
fn one_edit_apart(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let same_prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[same_prefix..], &b[same_prefix..]);
    match (ra.len(), rb.len()) {
        (0, 0) => false,
        (1, 0) | (0, 1) => true,
        (x, y) if x == y => {
            ra[1..] == rb[1..] || (x >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..])
        }
        (x, y) if x == y + 1 => ra[1..] == *rb,
        (x, y) if y == x + 1 => *ra == rb[1..],
        _ => false,
    }
}

fn run() -> anyhow::Result<std::process::ExitCode> {
    let cli = parse_cli();
    let _log_guard = init_logging(&cli.command);
    match cli.command {
        Command::Serve(args) => serve::run(*args)?,
        Command::Bench(args) => return bench::run(args),
        Command::Put(args) => client_cmd::put(args)?,
        Command::Get(args) => client_cmd::get(args)?,
        Command::Ls(args) => client_cmd::ls(args)?,
        Command::Find(args) => client_cmd::find(args)?,
        Command::Rm(args) => client_cmd::rm(args)?,
        Command::Trash(args) => client_cmd::trash(args)?,
        Command::Passwd(args) => passwd::run(args)?,
        Command::Share(args) => client_cmd::share(args)?,
        Command::Completions { shell } => {
            use clap::CommandFactory;
            use std::io::Write;
            // Into memory first: `generate` panics on a write error (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "wirespeed", &mut script);
            std::io::stdout().write_all(&script)?;
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::{log_filter, one_edit_apart};
    use tracing::Level;

    #[test]
    fn near_subcommand_names() {
        for (typed, name) in [
            ("gte", "get"),
            ("ge", "get"),
            ("gett", "get"),
            ("pt", "put"),
            ("shrae", "share"),
            ("lss", "ls"),
        ] {
            assert!(one_edit_apart(typed, name), "{typed} {name}");
        }
        for (typed, name) in [
            ("get", "get"),
            ("xyz", "get"),
            ("tge", "put"),
            ("", "ls"),
            ("rmm", "ls"),
        ] {
            assert!(!one_edit_apart(typed, name), "{typed} {name}");
        }
    }

    #[test]
    fn log_filter_reads_levels_and_target_pairs_and_falls_back_on_nonsense() {
        let default = "warn,wirespeed::notice=info";
        let f = log_filter(None, default);
        assert!(f.would_enable("wirespeed::notice", &Level::INFO));
        assert!(!f.would_enable("wirespeed::serve", &Level::INFO));
        assert!(f.would_enable("wirespeed::serve", &Level::WARN));

        let f = log_filter(Some("debug"), default);
        assert!(f.would_enable("rustls", &Level::DEBUG));
        assert!(!f.would_enable("rustls", &Level::TRACE));

        let f = log_filter(Some("warn,wirespeed=debug"), default);
        assert!(f.would_enable("wirespeed::serve", &Level::DEBUG));
        assert!(!f.would_enable("hyper", &Level::INFO));

        // Not a filter: the default, not silence and not everything.
        let f = log_filter(Some("wirespeed=loud"), default);
        assert!(f.would_enable("wirespeed::notice", &Level::INFO));
        assert!(!f.would_enable("wirespeed::serve", &Level::INFO));
        // Empty is unset.
        let f = log_filter(Some("  "), default);
        assert!(f.would_enable("x", &Level::WARN));
        assert!(!f.would_enable("x", &Level::INFO));
    }
}
