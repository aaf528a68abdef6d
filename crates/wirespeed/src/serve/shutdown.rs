//! Stopping `serve`: the first SIGINT/SIGTERM says what is left and lets it
//! finish (the grace period); a second one stops at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wirespeed_net::ConnectionStats;

/// Exit status after a second Ctrl-C (128 + SIGINT, as shells report it).
const INTERRUPTED: i32 = 130;

/// The line printed when stopping starts.
pub fn stopping_line(busy: usize, grace: Duration) -> String {
    let what = match busy {
        0 => return "stopping: no transfers in progress".to_string(),
        1 => "finishing 1 transfer".to_string(),
        n => format!("finishing {n} transfers"),
    };
    format!(
        "stopping: {what} (up to {} s; Ctrl-C again to stop now)",
        grace.as_secs()
    )
}

/// Resolves on the first SIGINT or SIGTERM, after saying so on stderr;
/// then a second signal ends the process at once, removing `cleanup`
/// (the temporary certificate folder) first, as drop would have.
pub async fn signal(stats: Arc<ConnectionStats>, grace: Duration, cleanup: Option<PathBuf>) {
    one_signal().await;
    crate::notice::say(&stopping_line(stats.busy(), grace));
    tracing::info!("shutting down");
    tokio::spawn(async move {
        one_signal().await;
        crate::notice::say(&format!(
            "stopped now: {} transfers cut short",
            stats.busy()
        ));
        if let Some(dir) = cleanup {
            let _ = std::fs::remove_dir_all(dir);
        }
        std::process::exit(INTERRUPTED);
    });
}

/// Resolves on SIGINT or SIGTERM.
async fn one_signal() {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopping_lines() {
        let g = Duration::from_secs(10);
        assert_eq!(
            stopping_line(2, g),
            "stopping: finishing 2 transfers (up to 10 s; Ctrl-C again to stop now)"
        );
        assert!(stopping_line(1, g).contains("finishing 1 transfer "));
        assert_eq!(stopping_line(0, g), "stopping: no transfers in progress");
    }
}
