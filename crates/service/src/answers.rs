//! Storage failures and policy refusals as HTTP answers.
//!
//! The storage and the policy are crates that know no HTTP engine; this leaf
//! turns what they say into [`Error`]s, so every front answers a full disk,
//! a hidden name or a foreign `Host` the same way.

use wirespeed_net::Error;

use crate::path::RelPath;
use crate::storage::StorageError;

/// The 421 ([`MISDIRECTED`](crate::policy::origin::MISDIRECTED)) for a
/// request whose `Host` (absent: `None`) is not a name `hosts` allows.
pub(crate) fn refuse_misdirected(
    hosts: &crate::policy::origin::AllowedHosts,
    host: Option<&str>,
) -> Result<(), Error> {
    if host.is_some_and(|h| hosts.allows(h)) {
        return Ok(());
    }
    Err(Error::status(
        421,
        crate::policy::origin::MISDIRECTED.trim_end(),
    ))
}

/// A hidden path's answer: 404, the same as a missing one, so nothing says
/// it exists.
pub(crate) fn refuse_hidden(
    hidden: &crate::policy::hidden::Hidden,
    key: &RelPath,
) -> Result<(), Error> {
    if hidden.hides(key) {
        return Err(Error::status(404, "not found"));
    }
    Ok(())
}

/// `e.into_answer()` for [`storage_answer`], where a value is built rather
/// than `?`-returned.
pub(crate) trait IntoAnswer {
    fn into_answer(self) -> Error;
}

impl IntoAnswer for StorageError {
    fn into_answer(self) -> Error {
        storage_answer(self)
    }
}

/// A storage failure as an answer: its status, a warning when the disk
/// filled, an error line for failures, and never the OS error's text.
pub(crate) fn storage_answer(e: StorageError) -> Error {
    {
        let status = e.status();
        match &e {
            // Refused before the body: an answer, not a failure (the
            // access line records the 507).
            crate::storage::StorageError::NoRoom { .. } => {}
            // The disk filled during the upload: once, as a warning.
            crate::storage::StorageError::Full => {
                tracing::warn!(error = %e, "storage full; upload refused (507)")
            }
            _ if status >= 500 => tracing::error!(error = %e, "storage failure"),
            _ => {}
        }
        match e {
            // Never leak OS error text (paths) to clients.
            crate::storage::StorageError::Io(_) => {
                wirespeed_net::Error::status(status, "storage error")
            }
            other => wirespeed_net::Error::status(status, other.to_string()),
        }
    }
}
