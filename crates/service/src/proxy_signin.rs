//! Sign-in by an identity proxy in front (oauth2-proxy, Authelia,
//! Authentik, Caddy's forward_auth): its user header (`--user-header`,
//! `Remote-User` by default) names the user and its groups header
//! (`--groups-header`) the groups, believed from a `--trusted-proxy` peer
//! only. From anyone else the same header is ignored — the request goes
//! on as its other credentials say — and logged: a client that sends it
//! directly is trying to be someone, or a proxy is missing from
//! `--trusted-proxy`.

use wirespeed_net::Exchange;

use crate::policy::{Policy, Principal};

/// `None`: no proxy sign-in (off, no header, or an untrusted peer's);
/// otherwise the user it signs in, or why it is refused (403).
pub(crate) fn signed_in(policy: &Policy, ex: &Exchange) -> Option<Result<Principal, String>> {
    let headers = policy.proxy_sign_in()?;
    let name = ex.header(&headers.user_header)?;
    if !ex.from_trusted_proxy() {
        tracing::warn!(
            target: "wirespeed::signin",
            peer = %ex.peer_addr(),
            header = %headers.user_header,
            "user header from a peer that is no --trusted-proxy ignored"
        );
        return None;
    }
    let Ok(name) = std::str::from_utf8(name) else {
        return Some(Err(format!(
            "the {} header is not UTF-8",
            headers.user_header
        )));
    };
    // An empty name is the proxy letting an unsigned request through.
    if name.trim().is_empty() {
        return None;
    }
    let groups = headers
        .groups_header
        .as_deref()
        .and_then(|h| ex.header_str(h));
    Some(policy.proxy_user(name, groups).map_err(|e| {
        tracing::warn!(target: "wirespeed::signin", client = %ex.client_ip(), user = %name, reason = %e, "proxy sign-in refused");
        format!("{e}")
    }))
}
