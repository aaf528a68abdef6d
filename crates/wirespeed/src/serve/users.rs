//! `serve --auth FILE`: the rules file at start (a bad one stops the start
//! with its file, line and reason), its reload on `SIGHUP` (a bad reload
//! keeps the rules in force and says why), and the warning that passwords
//! travel in clear without TLS beyond loopback.

use std::path::Path;
use std::sync::Arc;

use wirespeed_service::Users;

/// The rules file, checked.
pub fn load(path: &Path) -> anyhow::Result<Arc<Users>> {
    match Users::load(path) {
        Ok(users) => Ok(Arc::new(users)),
        Err(e) => Err(anyhow::anyhow!("--auth {e}")),
    }
}

/// Reload `users` on every `SIGHUP`, for as long as the server runs.
pub fn reload_on_sighup(users: Arc<Users>) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            crate::notice::say(&reload_line(&users));
        }
    });
    Ok(())
}

/// Reload once; the operator's line either way.
pub fn reload_line(users: &Users) -> String {
    match users.reload() {
        Ok((n_users, n_paths)) => format!(
            "reloaded {}: {n_users} users, {n_paths} paths",
            users.path().display()
        ),
        Err(e) => format!("reload refused, the previous rules stay in force: {e}"),
    }
}

/// The warning of a server taking passwords over plain HTTP beyond
/// loopback, if that is this one.
pub fn cleartext_warning(loopback: bool, tls: bool) -> Option<&'static str> {
    (!loopback && !tls).then_some(
        "warning: users sign in with passwords, and this server listens beyond loopback \
         without TLS: passwords travel in clear; add --tls-cert/--tls-key or \
         --tls-self-signed, or serve behind an HTTPS proxy",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_only_in_clear_beyond_loopback() {
        assert!(cleartext_warning(false, false).is_some());
        assert!(cleartext_warning(true, false).is_none());
        assert!(cleartext_warning(false, true).is_none());
    }
}
