//! `serve`'s options for running it for a team: sign-in by an identity
//! proxy in front (`--user-header`, `--groups-header`), and the checks that
//! refuse a start where the header would be believed from nobody, or would
//! name users no rules file gives rights.

use clap::Args;
use wirespeed_service::policy::groups::ProxySignIn;

use super::flags::ServeArgs;

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
}

/// The proxy's sign-in headers, checked against the other flags.
pub(super) fn proxy_sign_in(args: &ServeArgs) -> anyhow::Result<Option<ProxySignIn>> {
    let Some(user_header) = &args.identity.user_header else {
        return Ok(None);
    };
    if args.trusted_proxies.is_empty() {
        anyhow::bail!(
            "--user-header {user_header} needs --trusted-proxy: the header is believed from \
             trusted proxies only (name the identity proxy's address)"
        );
    }
    if args.auth.is_none() {
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
    Ok(Some(ProxySignIn {
        user_header: checked(user_header)?,
        groups_header: args
            .identity
            .groups_header
            .as_deref()
            .map(checked)
            .transpose()?,
    }))
}
