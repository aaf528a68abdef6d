//! The `wirespeed` command: a thin shell over the library crates.
//! `serve` runs the transfer service; `put`/`get`/`ls`/`rm` are the client;
//! `bench` measures end to end.

use clap::{Parser, Subcommand};

mod bench;
mod bench_load;
mod client_cmd;
mod serve;
mod size;

#[derive(Parser)]
#[command(
    name = "wirespeed",
    version,
    about = "HTTP/1.1 server, client and data-transfer service whose data path runs at wire speed",
    long_about = "wirespeed moves bytes over HTTP/1.1: uploads and downloads of big files, streamed \
JSON listings, multipart forms, base64 inside XML/SOAP and JSON. `wirespeed serve DIR` serves a \
folder; the other subcommands are its client.\n\nLogging: set RUST_LOG (e.g. RUST_LOG=debug)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve DIR over HTTP: GET/HEAD files and listings, PUT/POST uploads, DELETE.
    #[command(long_about = serve::LONG_ABOUT)]
    Serve(serve::ServeArgs),
    /// Measure end to end: `load URL` (byte-verifying load generator), `json-stream`.
    Bench(bench::BenchArgs),
    /// Upload files, folders (-r) or stdin (-) to URL (PUT, sha-256 checked end to end).
    Put(client_cmd::PutArgs),
    /// Download URLs or folders (-r) to files or stdout (via FILE.part; --continue; Repr-Digest checked).
    Get(client_cmd::GetArgs),
    /// List a directory URL: type, size, modified, name (--json for the raw listing).
    Ls(client_cmd::LsArgs),
    /// Delete file URLs, or a folder and everything in it (-r).
    Rm(client_cmd::RmArgs),
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            // `{:#}` prints the chain once on one line; returning the error
            // from main would print Debug (and a backtrace with RUST_BACKTRACE).
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<std::process::ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(args)?,
        Command::Bench(args) => return bench::run(args),
        Command::Put(args) => client_cmd::put(args)?,
        Command::Get(args) => client_cmd::get(args)?,
        Command::Ls(args) => client_cmd::ls(args)?,
        Command::Rm(args) => client_cmd::rm(args)?,
    }
    Ok(std::process::ExitCode::SUCCESS)
}
