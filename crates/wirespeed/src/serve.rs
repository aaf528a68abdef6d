//! `wirespeed serve`: start-up in order — flags ([`flags`]), what they
//! become ([`settings`]), where the files live ([`target`]), TLS, the port,
//! the lines that say how to reach it ([`reach`]), and a clean stop
//! ([`shutdown`]). The routes live in `wirespeed-service`.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use wirespeed_net::Server;
use wirespeed_service::{
    access_log::Format as AccessFormat, AccessLog, LocalStorage, Metrics, UploadsConfig,
};

mod flags;
mod identity;
mod listen;
mod reach;
mod search;
mod settings;
mod shares;
mod shutdown;
pub mod target;
mod tls;
mod users;

use flags::Switch;
pub use flags::{ServeArgs, AFTER_HELP, LONG_ABOUT};
use target::Target;

/// The storage, before (a bucket's settings) and after (the checked bucket)
/// the runtime starts.
enum Either<L, B> {
    Folder(L),
    S3(B),
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let tokens = settings::tokens(&args)?;
    let s3 = match target::choose(
        args.dir.as_deref(),
        args.s3.storage.as_deref(),
        args.content.create,
    )? {
        Target::S3(url) => Either::S3(target::s3_config(&url, &args.s3)?),
        Target::Folder(dir) => {
            let local = LocalStorage::new(&dir)
                .with_context(|| format!("opening the folder to serve, {}", dir.display()))?
                .with_fsync(!args.no_fsync)
                .with_symlinks_outside(args.content.allow_symlink);
            Either::Folder(match identity::publish_gate(&args.identity)? {
                Some(gate) => local.with_publish_gate(gate),
                None => local,
            })
        }
    };
    let listen = args.listen.addr;
    let access_log = match args.access_log {
        Switch::On => Some(
            AccessLog::stderr(match args.log_format {
                flags::LogFormat::Text => AccessFormat::Text,
                flags::LogFormat::Json => AccessFormat::Json,
            })
            .context("starting the access log's writer thread")?,
        ),
        Switch::Off => None,
    };
    let metrics = Arc::new(Metrics::with_access_log(access_log));
    let flush_log = metrics.clone();
    let mut cfg = settings::service(&args, &tokens, &metrics)?;
    if let (true, Either::Folder(local)) = (args.search, &s3) {
        cfg.search = Some(search::open(&args, local.root())?);
    }
    // Stripped once in front of every route; the URL to hand out has it.
    let prefix = args.path_prefix.clone();
    let base = prefix
        .as_ref()
        .map_or(String::new(), |p| format!("{}/", p.as_str()));
    let ucfg = settings::uploads(&args);
    // The start line comes from the policy that decides every request.
    let mode_line = cfg.policy().describe();
    let auth = cfg.users.clone();
    let events = cfg.events.clone();
    let flush_events = events.clone();
    // Before the server's settings: its default connection cap follows the
    // raised limit.
    let fd_limit = wirespeed_io::raise_open_file_limit();
    let server_cfg = settings::server(&args, metrics)?;
    let congestion_line = format!("congestion control: {}", server_cfg.congestion.describe());

    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all().thread_name("wirespeed");
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    let mut tls = tls::acceptor(
        &args,
        &reach::certificate_names(&args.listen, &args.tls_names),
    )?;
    // Kept here, so the per-start certificate folder goes when serve returns.
    let cert_dir = tls.as_mut().and_then(|t| t.temp_dir.take());
    let cleanup = cert_dir.as_ref().map(|d| d.path().to_path_buf());
    let rt = rt.build().context("starting the async runtime")?;
    // The folder's gate was built with its storage above.
    let s3_gate = match &s3 {
        Either::S3(_) => identity::publish_gate(&args.identity)?,
        Either::Folder(_) => None,
    };
    let served = rt.block_on(async move {
        // The bucket is checked before the port opens: a wrong endpoint,
        // credentials or bucket fails the start with the reason.
        let storage = match s3 {
            Either::S3(c) => {
                let mut st = wirespeed_service::S3Storage::new(&c)?;
                if let Some(gate) = s3_gate {
                    st = st.with_publish_gate(gate);
                }
                st.check().await.context("checking the S3 storage")?;
                Either::S3(st)
            }
            Either::Folder(local) => Either::Folder(local),
        };
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| target::bind_error(listen, e))?;
        let addr = listener.local_addr()?;
        {
            let mut out = std::io::stdout().lock();
            let scheme = if tls.is_some() { "https" } else { "http" };
            writeln!(out, "listening on {scheme}://{addr}")?;
            if let Some(tls::Tls { cert: Some((cert, fingerprint)), .. }) = &tls {
                writeln!(out, "certificate: {}", cert.display())?;
                writeln!(out, "certificate sha-256 fingerprint: {fingerprint}")?;
            }
            // On 0.0.0.0/:: the first line's address is not one to hand out.
            for url in reach::lan_urls(scheme, addr) {
                writeln!(out, "on your network: {url}{base}")?;
            }
            out.flush()?;
        }
        crate::notice::say(&mode_line);
        crate::notice::say(&congestion_line);
        if !base.is_empty() {
            crate::notice::say(&format!(
                "serving under {base} only (--path-prefix): other paths answer 404"
            ));
        }
        if let Some(auth) = auth {
            if let Some(warning) = users::cleartext_warning(listen.ip().is_loopback(), tls.is_some())
            {
                crate::notice::say(warning);
            }
            let root = match &storage {
                Either::Folder(s) => Some(s.root().to_path_buf()),
                _ => None,
            };
            if let Some(root) = &root {
                for w in users::missing_entries(&auth, root) {
                    crate::notice::say(&w);
                }
            }
            users::reload_on_sighup(auth, root).context("listening for SIGHUP")?;
        }
        if let Some(events) = events {
            identity::reopen_on_sighup(events).context("listening for SIGHUP")?;
        }
        let router = match storage {
            Either::Folder(storage) => {
                tracing::info!(%addr, dir = %storage.root().display(), max_connections = server_cfg.max_connections, ?fd_limit, "serving");
                // Leftovers of a crash (temp files the API never shows): removed in
                // the background, so start-up does not wait on a big tree.
                drop(storage.spawn_temp_sweep());
                with_uploads(storage, cfg, ucfg)
            }
            Either::S3(s3) => {
                // One links table for every node on the bucket.
                let mut cfg = cfg;
                if args.search {
                    cfg.search = Some(search::open_storage(&args, s3.place(), s3.clone())?);
                }
                if cfg.shares.is_some() {
                    cfg.links = Some(wirespeed_service::links::SharedLinks::in_bucket(s3.clone()));
                }
                tracing::info!(%addr, storage = s3.place(), max_connections = server_cfg.max_connections, ?fd_limit, "serving");
                // Sign-outs and link revocations meet in the bucket: every
                // node on it refuses them within --revocation-sync.
                if cfg.shares.is_some() || cfg.sessions.is_some() {
                    tokio::spawn(wirespeed_service::revocations::run_sync(
                        s3.clone(),
                        cfg.shares.clone(),
                        cfg.sessions.clone(),
                        std::time::Duration::from_secs(args.revocation_sync),
                    ));
                }
                with_uploads(s3, cfg, ucfg)
            }
        };
        let router = Arc::new(wirespeed_net::Mount::new(prefix, router));
        let grace = server_cfg.shutdown_grace;
        let server = Server::new(server_cfg);
        let stop = shutdown::signal(server.stats(), grace, cleanup);
        match tls {
            Some(tls) => server
                .serve_with(listener, Arc::new(tls.acceptor), router, stop)
                .await
                .context("serving")?,
            None => server
                .serve(listener, router, stop)
                .await
                .context("serving")?,
        }
        tracing::info!("stopped");
        anyhow::Ok(())
    });
    // Every access line of the requests served, before the process exits.
    flush_log.flush_access_log();
    if let Some(events) = flush_events {
        events.flush();
    }
    drop(cert_dir);
    served
}

/// The routes with resumable uploads over `storage`, and the expiry sweep:
/// expired partial uploads removed now and then every quarter of their
/// lifetime (between 1 s and 10 min).
fn with_uploads<S>(
    storage: S,
    cfg: wirespeed_service::ServiceConfig,
    ucfg: UploadsConfig,
) -> wirespeed_net::Router
where
    S: wirespeed_service::Storage + wirespeed_service::PartialUploads + Clone,
{
    let (router, uploads) = wirespeed_service::router_with_uploads(storage, cfg, ucfg);
    uploads.spawn_sweeper(uploads.sweep_period());
    router
}
