//! `serve --auth FILE`: the rules file at start (a bad one stops the start
//! with its file, line and reason), its reload on `SIGHUP` (a bad reload
//! keeps the rules in force and says why), and the warning that passwords
//! travel in clear without TLS beyond loopback.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wirespeed_service::Users;

/// The rules file, checked.
pub fn load(path: &Path) -> anyhow::Result<Arc<Users>> {
    match Users::load(path) {
        Ok(users) => Ok(Arc::new(users)),
        Err(e) => Err(anyhow::anyhow!("--auth {e}")),
    }
}

/// Reload `users` on every `SIGHUP`, for as long as the server runs (and
/// warn again of entries naming nothing in the served folder `root`).
pub fn reload_on_sighup(users: Arc<Users>, root: Option<PathBuf>) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            crate::notice::say(&reload_line(&users));
            if let Some(root) = &root {
                for w in missing_entries(&users, root) {
                    crate::notice::say(&w);
                }
            }
        }
    });
    Ok(())
}

/// A warning for each rules entry that names nothing in `root`: its rights
/// govern no file, and the folder the admin meant (another case, another
/// spelling) falls under the parent's rights. Suggests a name that differs
/// only in case or Unicode form when the parent folder has one.
pub fn missing_entries(users: &Users, root: &Path) -> Vec<String> {
    let rules = users.rules();
    let mut out = Vec::new();
    for segments in rules.entry_paths() {
        let mut p = root.to_path_buf();
        p.extend(segments);
        if segments.is_empty() || std::fs::symlink_metadata(&p).is_ok() {
            continue;
        }
        let shown = format!("/{}", segments.join("/"));
        let hint = similar_name(&p)
            .map(|n| {
                let mut meant = segments[..segments.len() - 1].to_vec();
                meant.push(n);
                format!(
                    " (did you mean \"/{}\"? entries are compared byte for byte but for \
                     Unicode form)",
                    meant.join("/")
                )
            })
            .unwrap_or_default();
        out.push(format!(
            "warning: {}: [paths.{shown:?}] names nothing in the served folder, so its rights \
             govern no file{hint}",
            users.path().display()
        ));
    }
    out
}

/// A name in `p`'s folder equal to `p`'s last name but for case.
fn similar_name(p: &Path) -> Option<String> {
    let want = p.file_name()?.to_str()?.to_lowercase();
    std::fs::read_dir(p.parent()?)
        .ok()?
        .take(100_000)
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .find(|n| n.to_lowercase() == want)
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
