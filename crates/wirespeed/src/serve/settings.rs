//! What the flags become: the service's, the server's and the resumable
//! uploads' settings, and the checks that refuse a start whose flags would
//! leave the server open by mistake.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use wirespeed_net::{FileSend, ServerConfig};
use wirespeed_service::thumbnail::{DiskCache, Thumbnails};
use wirespeed_service::{
    Access, DigestPolicy, HashMode, Metrics, ServiceConfig, UploadPath, UploadsConfig, Writes,
};

use super::flags::{DigestArg, FileSendArg, HashArg, ServeArgs, Switch, UploadArg};
use super::reach;

/// The bearer tokens, refused when one is empty: an empty token (`--token
/// ""`, or WIRESPEED_TOKEN set but empty) would silently leave writes open.
pub(super) fn tokens(args: &ServeArgs) -> anyhow::Result<Vec<String>> {
    let empty_env = std::env::var_os("WIRESPEED_TOKEN").is_some_and(|v| v.is_empty());
    if empty_env || args.tokens.iter().any(|t| t.trim().is_empty()) {
        anyhow::bail!(
            "a --token (or WIRESPEED_TOKEN) is empty: give a non-empty secret, or drop the \
             option to serve without authentication"
        );
    }
    if args.private && args.tokens.is_empty() {
        anyhow::bail!("--private needs at least one non-empty --token");
    }
    Ok(args.tokens.clone())
}

/// The most bytes of thumbnails kept on disk (the oldest go first).
const THUMBNAIL_CACHE_BYTES: u64 = 512 << 20;

/// The service's settings; every route's policy comes from them.
pub(super) fn service(
    args: &ServeArgs,
    tokens: &[String],
    metrics: &Arc<Metrics>,
) -> anyhow::Result<ServiceConfig> {
    let listen = args.listen.addr;
    let auth = args.auth.as_deref().map(super::users::load).transpose()?;
    // Links are minted by someone who signs in: users or token holders.
    let state = super::shares::state_dir(args.state_dir.as_deref());
    let share_links = if auth.is_some() || !tokens.is_empty() {
        Some(super::shares::open(
            state.as_deref(),
            args.share_max_expiry,
        )?)
    } else {
        None
    };
    // The page's sign-in: sessions signed with the links' key.
    let tls = args.tls_cert.is_some() || args.tls_self_signed;
    let sessions = match (&auth, &share_links) {
        (Some(_), Some(links)) => Some(super::shares::sessions(
            links,
            state.as_deref(),
            args.session_expiry,
            tls,
            args.path_prefix.as_ref().map_or("", |p| p.as_str()),
        )?),
        _ => None,
    };
    // A rules file says who may write, as a token does.
    let writes = write_mode(
        listen.ip().is_loopback(),
        !tokens.is_empty() || auth.is_some(),
        args.read_only,
        args.allow_upload,
        args.allow_delete,
    );
    // A name given to --listen or --tls-name is one the server is reached by.
    let mut allow_hosts = args.allow_hosts.clone();
    allow_hosts.extend(args.tls_names.iter().cloned());
    let allowed_hosts =
        reach::allowed_hosts(listen.ip(), args.listen.name.as_deref(), &allow_hosts);
    Ok(ServiceConfig {
        access: Access::new(tokens, args.private),
        users: auth,
        shares: share_links,
        // On a bucket, `serve` gives the shared table once the storage is open.
        links: None,
        sessions,
        writes,
        max_body: args.max_body,
        archive_max_entries: Some(args.archive_max_entries),
        trash_days: args.trash_days,
        quotas: Default::default(),
        upload_path: match args.upload_path {
            UploadArg::Copy => UploadPath::Copy,
            UploadArg::Splice => UploadPath::Splice,
        },
        hash: match args.upload_hash {
            HashArg::Inline => HashMode::Inline,
            HashArg::Concurrent => HashMode::Concurrent,
        },
        allowed_hosts: (!allowed_hosts.allows_any()).then_some(allowed_hosts),
        digest: match args.digest {
            DigestArg::OnRequest => DigestPolicy::OnRequest,
            DigestArg::Always => DigestPolicy::Always,
        },
        metrics: (args.metrics == Switch::On).then(|| metrics.clone()),
        hidden: wirespeed_service::Hidden::new(&args.content.hidden).map_err(anyhow::Error::msg)?,
        index: args.content.index,
        allow_scripts: args.content.allow_scripts,
        // WebDAV locks start empty; every route shares this table.
        locks: Default::default(),
        proxy_sign_in: super::identity::proxy_sign_in(
            &args.identity,
            !args.trusted_proxies.is_empty(),
            args.auth.is_some(),
        )?,
        events: super::identity::events(&args.identity)?,
        // `serve --search` opens it once the folder is (serve/search.rs).
        search: None,
        // Thumbnails are kept beside the other state, outside the served tree.
        thumbnails: Thumbnails::new(
            state
                .as_deref()
                .map(|d| DiskCache::open(&d.join("thumbnails"), THUMBNAIL_CACHE_BYTES)),
        ),
        bandwidth: Default::default(),
    })
}

/// The HTTP server's settings. Call after raising the open-file limit: the
/// default connection cap follows it.
pub(super) fn server(args: &ServeArgs, metrics: Arc<Metrics>) -> anyhow::Result<ServerConfig> {
    Ok(ServerConfig {
        head_timeout: Duration::from_secs(args.head_timeout),
        max_connections: args
            .max_connections
            .unwrap_or_else(wirespeed_net::default_max_connections),
        max_connections_per_ip: args.max_connections_per_ip,
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
        observer: Some(metrics),
        trusted_proxies: wirespeed_net::TrustedProxies::new(args.trusted_proxies.clone()),
        congestion: wirespeed_io::congestion::Congestion::resolve(
            &args.congestion_control.clone().unwrap_or_default(),
        )?,
        ..ServerConfig::default()
    })
}

/// The resumable uploads' limits.
pub(super) fn uploads(args: &ServeArgs) -> UploadsConfig {
    UploadsConfig {
        limits: wirespeed_resumable::Limits {
            max_size: args
                .upload_max_size
                .or(args.max_body)
                .unwrap_or(wirespeed_resumable::Limits::default().max_size),
            max_append_size: None,
            lifetime_secs: args.upload_expiry,
        },
        max_partials: args.max_partial_uploads,
        max_partials_per_client: args.max_partial_uploads_per_client,
        empty_expiry_secs: args.upload_empty_expiry,
        ..UploadsConfig::default()
    }
}

/// Which writes a server takes at all (the presets the policy turns into
/// rights; `Policy::describe` says what they mean on the start line).
fn write_mode(
    loopback: bool,
    tokens: bool,
    read_only: bool,
    allow_upload: bool,
    allow_delete: bool,
) -> Writes {
    if read_only {
        Writes::read_only()
    } else if tokens || loopback {
        Writes::default()
    } else {
        Writes::exposed(allow_upload, allow_delete)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_modes() {
        use wirespeed_service::{Access, Policy};
        let line = |l, t: bool, p, r, u, d| {
            let access = Access::new(if t { vec!["t"] } else { vec![] }, p);
            Policy::from_presets(&access, write_mode(l, t, r, u, d)).describe()
        };
        assert_eq!(
            write_mode(false, false, false, true, false),
            Writes::exposed(true, false)
        );
        assert!(line(false, false, false, false, false, false)
            .starts_with("mode: read-only (listening beyond loopback"));
        let up = line(false, false, false, false, true, false);
        assert!(up.contains("deletes and replaces refused"), "{up}");
        assert_eq!(
            line(true, false, false, false, false, false),
            "mode: read-write for anyone (loopback)"
        );
        assert_eq!(
            line(false, true, false, false, false, false),
            "mode: read-write, writes need a token"
        );
        assert!(line(false, true, true, false, false, false).starts_with("mode: private"));
        for (l, t) in [(true, false), (false, true), (false, false)] {
            assert_eq!(write_mode(l, t, true, false, false), Writes::read_only());
            assert!(
                line(l, t, false, true, false, false).starts_with("mode: read-only (--read-only)")
            );
        }
    }
}
