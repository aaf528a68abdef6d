//! The end of a transfer command: its failures on stderr and its
//! error, the rate of files; shared by `put`, `get` and `rm`.

use std::time::Instant;

use anyhow::bail;
use wirespeed_client::Error;

use super::folder;
use super::status_hint::hint;

/// Print each failure (the first 20) and turn them into the command's error.
pub(super) fn report_failures(
    failed: Vec<(String, Error)>,
    count: usize,
    what: &str,
) -> anyhow::Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    for (label, e) in failed.iter().take(20) {
        eprintln!("error: {label}: {}{}", chain(e), hint(e));
    }
    if failed.len() > 20 {
        eprintln!("... and {} more", failed.len() - 20);
    }
    let n = failed.len();
    match failed.iter().find(|(_, e)| !folder::only_this_file(e)) {
        Some((_, fatal)) => bail!(
            "{n} of {count} {what}s failed; no new ones were started after: {}{}",
            chain(fatal),
            hint(fatal)
        ),
        None => bail!("{n} of {count} {what}s failed"),
    }
}

/// An error and its causes on one line, each once.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

pub(super) fn files_rate(n: usize, started: Instant) -> String {
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    format!("{:.0} files/s", n as f64 / secs)
}
