//! `serve`'s options for running it for a team: sign-in by an identity
//! proxy in front (`--user-header`, `--groups-header`), and the checks that
//! refuse a start where the header would be believed from nobody, or would
//! name users no rules file gives rights; the audit trail (`--audit-log`,
//! reopened on SIGHUP) and the event hooks (`--hook`, `--hook-command`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use wirespeed_service::events::{Audit, Events, HookConfig, HookTls, HookUrl, Hooks};
use wirespeed_service::policy::groups::ProxySignIn;

#[derive(Args, Debug)]
pub struct IdentityArgs {
    /// Sign users in by this request header, set by an identity proxy in
    /// front (oauth2-proxy, Authelia, Authentik, Caddy forward_auth):
    /// believed only from --trusted-proxy peers (from others it is ignored
    /// and logged). Without a value: Remote-User. Needs --auth (the rules
    /// file gives the names, and "@group"s, their rights). Off unless given.
    #[arg(
        long,
        value_name = "NAME",
        num_args = 0..=1,
        default_missing_value = "Remote-User"
    )]
    pub user_header: Option<String>,

    /// The proxy's groups header (e.g. Remote-Groups): names separated by
    /// commas or spaces; each that the rules file names as "@group" gives
    /// its rights. Needs --user-header.
    #[arg(long, value_name = "NAME", requires = "user_header")]
    pub groups_header: Option<String>,

    /// Append one JSON line per action that changes or reveals content
    /// (upload, download, listing, delete, move, copy, lock, share links,
    /// sign-in/out, refusals too) to FILE; `-` is stderr (journald takes it
    /// from there). Reopened on SIGHUP, for logrotate.
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,

    /// POST each event (the audit line's JSON) to this http:// or https://
    /// URL, in order, retried with back-off, from a bounded queue
    /// (repeatable).
    #[arg(long = "hook", value_name = "URL", value_parser = HookUrl::parse)]
    pub hooks: Vec<HookUrl>,

    /// Also trust the certificates in FILE (PEM) for https hook URLs, on
    /// top of the built-in Mozilla roots (a receiver with a private CA or
    /// a self-signed certificate). Verification is never turned off.
    #[arg(long, value_name = "FILE", env = "WIRESPEED_HOOK_CACERT")]
    pub hook_cacert: Option<PathBuf>,

    /// Sign each hook POST: X-Wirespeed-Signature: sha256=HEX, the
    /// HMAC-SHA256 of the body under SECRET.
    #[arg(long, value_name = "SECRET", env = "WIRESPEED_HOOK_SECRET")]
    pub hook_secret: Option<String>,

    /// Run CMD (by sh -c) for each event, the JSON on its standard input,
    /// one at a time, killed after 10 s (repeatable).
    #[arg(long = "hook-command", value_name = "CMD")]
    pub hook_commands: Vec<String>,

    /// Before each upload is published (PUT, form POSTs, WebDAV PUT,
    /// tus/IETF completion), run CMD (by sh -c) with {"action":
    /// "upload.before","path","file","size","time"} on stdin, `file` the
    /// complete temporary file (on S3: "s3":{"bucket","key"} and "url", a
    /// presigned GET of the staged object): exit 0 publishes; anything
    /// else, or no answer within 60 s, refuses it (422, the first line CMD
    /// printed) and nothing is published. An http:// or https:// URL
    /// instead of CMD: the same JSON POSTed (signed with --hook-secret); a
    /// 2xx answer publishes, any other refuses (422, the answer's first
    /// line), and no answer within 60 s refuses.
    #[arg(long, value_name = "CMD|URL")]
    pub hook_before_upload: Option<String>,
}

/// The time limit of `--hook-before-upload`.
const GATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The publish gate `--hook-before-upload` asks, if given: a URL when it
/// starts with `http://` or `https://`, else a command.
pub(super) fn publish_gate(
    id: &IdentityArgs,
) -> anyhow::Result<Option<Arc<dyn wirespeed_service::storage::gate::PublishGate>>> {
    let Some(given) = id.hook_before_upload.clone() else {
        return Ok(None);
    };
    if !(given.starts_with("http://") || given.starts_with("https://")) {
        return Ok(Some(Arc::new(wirespeed_service::events::CommandGate {
            command: given,
            timeout: GATE_TIMEOUT,
        })));
    }
    let url = HookUrl::parse(&given).map_err(|e| anyhow::anyhow!("--hook-before-upload {e}"))?;
    Ok(Some(Arc::new(wirespeed_service::events::UrlGate {
        tls: hook_tls(id, url.https)?,
        url,
        secret: secret(id)?,
        timeout: GATE_TIMEOUT,
    })))
}

/// `--hook-secret`, refused empty.
fn secret(id: &IdentityArgs) -> anyhow::Result<Option<Vec<u8>>> {
    if id.hook_secret.as_deref() == Some("") {
        anyhow::bail!("--hook-secret is empty: give a secret, or drop the option");
    }
    Ok(id.hook_secret.as_ref().map(|s| s.as_bytes().to_vec()))
}

/// The TLS config of https hooks (`needed`: some URL is https): the
/// Mozilla roots and `--hook-cacert`'s certificates, verified always.
fn hook_tls(id: &IdentityArgs, needed: bool) -> anyhow::Result<Option<HookTls>> {
    if !needed {
        return Ok(None);
    }
    let opts = wirespeed_tls::ClientTls {
        cacert: id.hook_cacert.clone(),
        insecure_accept_anything: false,
    };
    let cfg = wirespeed_tls::client_config(&opts).context("--hook-cacert")?;
    Ok(Some(cfg))
}

/// The audit trail and the hooks, started; `None` when neither is asked.
pub(super) fn events(id: &IdentityArgs) -> anyhow::Result<Option<Arc<Events>>> {
    let audit = id
        .audit_log
        .as_deref()
        .map(|p| Audit::open(p).with_context(|| format!("--audit-log {}", p.display())))
        .transpose()?;
    let secret = secret(id)?;
    let hooks = if id.hooks.is_empty() && id.hook_commands.is_empty() {
        None
    } else {
        let cfg = HookConfig {
            urls: id.hooks.clone(),
            secret,
            commands: id.hook_commands.clone(),
            tls: hook_tls(id, id.hooks.iter().any(|u| u.https))?,
            ..HookConfig::default()
        };
        Some(Hooks::start(cfg).context("starting the hooks' thread")?)
    };
    if audit.is_none() && hooks.is_none() {
        return Ok(None);
    }
    Ok(Some(Arc::new(Events::new(audit, hooks))))
}

/// Reopen the audit file on every SIGHUP (after logrotate moved it).
pub(super) fn reopen_on_sighup(events: Arc<Events>) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            if let Some(a) = events.audit() {
                if let Err(e) = a.reopen() {
                    crate::notice::say(&format!(
                        "--audit-log: reopening failed, lines go on to the old file: {e}"
                    ));
                }
            }
        }
    });
    Ok(())
}

/// The proxy's sign-in headers, checked against the other flags (whether
/// any `--trusted-proxy` and an `--auth` file are given).
pub(super) fn proxy_sign_in(
    id: &IdentityArgs,
    trusted_proxies: bool,
    rules_file: bool,
) -> anyhow::Result<Option<ProxySignIn>> {
    let Some(user_header) = &id.user_header else {
        return Ok(None);
    };
    if !trusted_proxies {
        anyhow::bail!(
            "--user-header {user_header} needs --trusted-proxy: the header is believed from \
             trusted proxies only (name the identity proxy's address)"
        );
    }
    if !rules_file {
        anyhow::bail!(
            "--user-header {user_header} needs --auth FILE: the rules file gives the signed-in \
             names and \"@group\"s their rights"
        );
    }
    let checked = |h: &str| -> anyhow::Result<String> {
        let ok = !h.is_empty()
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        anyhow::ensure!(ok, "{h:?} is not a header name (letters, digits, - and _)");
        Ok(h.to_ascii_lowercase())
    };
    // `--user-header` may stand alone (Remote-User), so a folder written
    // right after it would be taken for the header's name and another
    // folder served: refuse a name that is also a path here.
    if std::path::Path::new(user_header).exists() {
        anyhow::bail!(
            "--user-header {user_header}: {user_header:?} is also a file or folder here; \
             write --user-header=NAME for a header name, or put the folder before the flags"
        );
    }
    Ok(Some(ProxySignIn {
        user_header: checked(user_header)?,
        groups_header: id.groups_header.as_deref().map(checked).transpose()?,
    }))
}
