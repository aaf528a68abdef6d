//! `wirespeed serve`: argument parsing and start-up; the routes live in
//! `wirespeed-service`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use wirespeed_net::{FileSend, Server, ServerConfig};
use wirespeed_service::{Access, DigestPolicy, HashMode, LocalStorage, ServiceConfig, UploadPath};

use crate::size::parse_size;

/// `serve --help`: the routes at a glance.
pub const LONG_ABOUT: &str = "Serve DIR over HTTP/1.1.\n\n\
Routes:\n  \
GET/HEAD /path     a file (sendfile; ETag, Last-Modified, single byte ranges, If-None-Match, If-Range);\n                     \
Repr-Digest when one is recorded, or computed on Want-Repr-Digest\n  \
GET /dir/          a listing: HTML, or JSON with ?format=json or Accept: application/json\n  \
PUT /path          upload (atomic: temp file, fsync, rename); 201 new, 204 replaced;\n                     \
507 at once if the Content-Length exceeds the free space; with Want-Repr-Digest: sha-256=N\n                     \
(or a Repr-Digest/Content-Digest to check) hashes the body and answers Repr-Digest;\n                     \
If-None-Match: * creates only, If-Match: ETAG replaces only that version (412)\n  \
DELETE /path       a file or an empty directory\n  \
GET /-/health      200 while serving\n  \
POST /dir/         multipart/form-data upload of one or more files\n  \
POST /path?element=NAME   base64 in an XML/SOAP element (text/xml, application/soap+xml) or MTOM/XOP\n  \
POST /path?field=NAME     base64 in a top-level JSON string field (application/json)\n\n\
On start, prints one line `listening on http://ADDR` to stdout (the real address, useful with \
port 0); with TLS, `listening on https://ADDR` followed by the certificate lines of \
--tls-self-signed. SIGINT/SIGTERM stop accepting and let requests in flight finish.";

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Folder to serve (created if missing).
    #[arg(default_value = "./data")]
    pub dir: PathBuf,

    /// Address to listen on; port 0 picks a free port (printed at start).
    #[arg(
        long,
        short = 'l',
        default_value = "127.0.0.1:8080",
        value_name = "ADDR"
    )]
    pub listen: SocketAddr,

    /// Access token; writes (PUT/POST/DELETE) then need `Authorization: Bearer TOKEN`.
    /// Repeat for several tokens. Prefer the environment variable: command lines are
    /// visible to other local users.
    #[arg(
        long = "token",
        value_name = "TOKEN",
        env = "WIRESPEED_TOKEN",
        hide_env_values = true
    )]
    pub tokens: Vec<String>,

    /// On a loopback address the server answers only `Host: localhost`, `127.0.0.1`
    /// or `[::1]` (any port): other names get 421, which stops DNS-rebinding pages.
    /// Add a name here to allow it too (repeatable).
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,

    /// Reads need a token too (everything but /-/health). Requires --token.
    #[arg(long, requires = "tokens")]
    pub private: bool,

    /// Largest accepted upload body, in bytes; suffixes K, M, G, T (powers of 1024),
    /// e.g. 10G. Bigger uploads get 413. Default: unlimited.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub max_body: Option<u64>,

    /// Do not fsync uploads before renaming them into place: faster, but after a
    /// power loss an upload that was acknowledged may be empty or short.
    #[arg(long)]
    pub no_fsync: bool,

    /// How upload bodies reach the disk: `splice` (zero-copy socket→pipe→file on
    /// plain TCP with a Content-Length; the measured faster one) or `copy` (read
    /// into the connection buffer, then write). Chunked and TLS bodies always copy.
    #[arg(long, value_enum, default_value_t = UploadArg::Splice, value_name = "PATH")]
    pub upload_path: UploadArg,

    /// Where upload sha-256 digests are computed: `concurrent` (a helper thread
    /// hashes the stored bytes right behind the writer) or `inline` (on the
    /// connection's task).
    #[arg(long, value_enum, default_value_t = HashArg::Concurrent, value_name = "MODE")]
    pub upload_hash: HashArg,

    /// When uploads are hashed (sha-256): `on-request` (when the client sends
    /// `Want-Repr-Digest: sha-256=N` or a Repr-Digest/Content-Digest to check; costs
    /// ~0.7 CPU-s/GiB) or `always`. A computed digest is recorded with the file
    /// (extended attribute) and answered as Repr-Digest by later GETs.
    #[arg(long, value_enum, default_value_t = DigestArg::OnRequest, value_name = "WHEN")]
    pub digest: DigestArg,

    /// How file downloads leave on plain TCP: `auto` (a 1 MiB read/write loop
    /// for loopback clients, where it measured ~1.4x faster, sendfile(2) for
    /// everyone else), `sendfile`, or `copy`.
    #[arg(long, value_enum, default_value_t = FileSendArg::Auto, value_name = "MODE")]
    pub file_send: FileSendArg,

    /// Read buffer per connection while a request body streams in (copy path);
    /// suffixes K, M (powers of 1024). Bigger means fewer read/write calls.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "256K")]
    pub body_buffer: u64,

    /// Worker threads of the async runtime (default: one per CPU).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    /// Close a kept-alive connection after this many idle seconds.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    pub idle_timeout: u64,

    /// Give up on a request body (or a slow reader of a response) after this many
    /// seconds without progress.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub io_timeout: u64,

    /// On SIGINT/SIGTERM, how long requests in flight may take to finish.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub shutdown_grace: u64,

    /// Serve HTTPS with this certificate chain (PEM). Needs --tls-key.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    pub tls_cert: Option<PathBuf>,

    /// Private key (PEM) for --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Serve HTTPS with a certificate for localhost/127.0.0.1/::1 generated at
    /// start. Its path and SHA-256 fingerprint are printed after the listening
    /// line; give the file to clients with --cacert.
    #[arg(long)]
    pub tls_self_signed: bool,

    /// Where --tls-self-signed writes its certificate (default: a folder in the
    /// system temp dir). Never the served folder.
    #[arg(long, value_name = "DIR", requires = "tls_self_signed")]
    pub tls_cert_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FileSendArg {
    Auto,
    Sendfile,
    Copy,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HashArg {
    Inline,
    Concurrent,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DigestArg {
    OnRequest,
    Always,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum UploadArg {
    Copy,
    Splice,
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating the folder to serve, {}", args.dir.display()))?;
    // An empty token (`--token ""`, or WIRESPEED_TOKEN set but empty) would
    // silently leave writes open: refuse to start instead.
    let empty_env = std::env::var_os("WIRESPEED_TOKEN").is_some_and(|v| v.is_empty());
    if empty_env || args.tokens.iter().any(|t| t.trim().is_empty()) {
        anyhow::bail!(
            "a --token (or WIRESPEED_TOKEN) is empty: give a non-empty secret, or drop the \
             option to serve without authentication"
        );
    }
    let tokens = args.tokens.clone();
    if args.private && tokens.is_empty() {
        anyhow::bail!("--private needs at least one non-empty --token");
    }
    let storage = LocalStorage::new(&args.dir)
        .with_context(|| format!("opening the folder to serve, {}", args.dir.display()))?
        .with_fsync(!args.no_fsync);
    let cfg = ServiceConfig {
        access: Access::new(&tokens, args.private),
        max_body: args.max_body,
        upload_path: match args.upload_path {
            UploadArg::Copy => UploadPath::Copy,
            UploadArg::Splice => UploadPath::Splice,
        },
        hash: match args.upload_hash {
            HashArg::Inline => HashMode::Inline,
            HashArg::Concurrent => HashMode::Concurrent,
        },
        loopback_hosts: args
            .listen
            .ip()
            .is_loopback()
            .then(|| wirespeed_service::origin::LoopbackHosts::new(&args.allow_hosts)),
        digest: match args.digest {
            DigestArg::OnRequest => DigestPolicy::OnRequest,
            DigestArg::Always => DigestPolicy::Always,
        },
    };
    let server_cfg = ServerConfig {
        idle_timeout: Duration::from_secs(args.idle_timeout),
        body_timeout: Duration::from_secs(args.io_timeout),
        write_timeout: Duration::from_secs(args.io_timeout),
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        file_send: match args.file_send {
            FileSendArg::Auto => FileSend::Auto,
            FileSendArg::Sendfile => FileSend::Sendfile,
            FileSendArg::Copy => FileSend::Copy,
        },
        body_buffer: usize::try_from(args.body_buffer)
            .ok()
            .filter(|n| (16 << 10..=64 << 20).contains(n))
            .context("--body-buffer must be between 16K and 64M")?,
        ..ServerConfig::default()
    };

    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all().thread_name("wirespeed");
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    let tls = tls_acceptor(&args)?;
    let rt = rt.build().context("starting the async runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        let addr = listener.local_addr()?;
        {
            let mut out = std::io::stdout().lock();
            let scheme = if tls.is_some() { "https" } else { "http" };
            writeln!(out, "listening on {scheme}://{addr}")?;
            if let Some((_, Some((cert, fingerprint)))) = &tls {
                writeln!(out, "certificate: {}", cert.display())?;
                writeln!(out, "certificate sha-256 fingerprint: {fingerprint}")?;
            }
            out.flush()?;
        }
        tracing::info!(%addr, dir = %storage.root().display(), "serving");
        // Leftovers of a crash (temp files the API never shows): removed in
        // the background, so start-up does not wait on a big tree.
        drop(storage.spawn_temp_sweep());
        let router = Arc::new(wirespeed_service::router(storage, cfg));
        let server = Server::new(server_cfg);
        match tls {
            Some((acceptor, _)) => server
                .serve_with(listener, Arc::new(acceptor), router, shutdown_signal())
                .await
                .context("serving")?,
            None => server
                .serve(listener, router, shutdown_signal())
                .await
                .context("serving")?,
        }
        tracing::info!("stopped");
        anyhow::Ok(())
    })
}

/// The TLS acceptor asked for on the command line, with the generated
/// certificate's path and fingerprint for `--tls-self-signed`.
type Tls = (wirespeed_tls::Acceptor, Option<(PathBuf, String)>);

fn tls_acceptor(args: &ServeArgs) -> anyhow::Result<Option<Tls>> {
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let acceptor = wirespeed_tls::server_from_files(cert, key).with_context(|| {
            format!(
                "loading TLS certificate {} and key {}",
                cert.display(),
                key.display()
            )
        })?;
        return Ok(Some((acceptor, None)));
    }
    if !args.tls_self_signed {
        return Ok(None);
    }
    let dir = args.tls_cert_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("wirespeed-tls-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating the certificate folder {}", dir.display()))?;
    let (acceptor, cert, fingerprint) = wirespeed_tls::server_self_signed(&dir)
        .with_context(|| format!("generating a self-signed certificate in {}", dir.display()))?;
    Ok(Some((acceptor, Some((cert, fingerprint)))))
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGTERM; only SIGINT stops the server");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("shutting down");
}
