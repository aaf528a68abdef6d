//! `put -r` run again: a file the server already has, by its listing's
//! size and time, is not sent again, so a rerun sends what changed (the
//! quick check of `rsync`, at the second the server keeps: uploads send
//! `X-OC-Mtime` and a wirespeed server gives the stored file that time).

use std::collections::HashMap;
use std::path::Path;

use wirespeed_client::transfer::{self, WalkLimits};
use wirespeed_client::{Client, Error, Url};

/// A listed file: its size and time (Unix seconds, if listed).
type Listed = (u64, Option<i64>);

/// The files below the folder `base` on the server, by their names from
/// `base` down. A folder that is not there yet, or that we may not list,
/// has none; a listing that cannot be read otherwise (another kind of
/// server) is said by the caller, and everything is sent.
pub(super) async fn listed_files(
    client: &Client,
    base: &Url,
) -> Result<HashMap<Vec<String>, Listed>, Error> {
    let walk = match transfer::walk(client, base, WalkLimits::default()).await {
        Ok(w) => w,
        // Not there yet, or not ours to read (an upload-only link, a drop
        // box): nothing is known to be there.
        Err(Error::Status {
            status: 401 | 403 | 404,
            ..
        }) => return Ok(HashMap::new()),
        Err(e) => return Err(e),
    };
    Ok(walk
        .entries
        .into_iter()
        .filter(|e| !e.dir)
        .map(|e| {
            let when = e.modified.as_deref().and_then(transfer::parse_listing_time);
            (e.rel, (e.size, when))
        })
        .collect())
}

/// Whether the server's copy is this local file already: the same size,
/// and the same time to the second when times are sent (`X-OC-Mtime`);
/// without them (`--no-mtime`) the server's time is its upload's, so a
/// copy not older than the file counts, as `wget -N` decides.
pub(super) fn unchanged(
    local: &Path,
    size: u64,
    listed: Option<&Listed>,
    times_sent: bool,
) -> bool {
    let Some(&(remote_size, Some(remote_time))) = listed else {
        return false;
    };
    let Some(ours) = transfer::mtime::of_file(local)
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_secs()).ok())
    else {
        return false;
    };
    remote_size == size
        && if times_sent {
            ours == remote_time
        } else {
            ours <= remote_time
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn same_size_and_second_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"12345").unwrap();
        let t = UNIX_EPOCH + Duration::new(1_700_000_000, 700_000_000);
        transfer::mtime::apply(&f, t).unwrap();
        let at = |size, secs| Some((size, Some(secs)));
        assert!(unchanged(&f, 5, at(5, 1_700_000_000).as_ref(), true));
        assert!(!unchanged(&f, 5, at(6, 1_700_000_000).as_ref(), true));
        assert!(!unchanged(&f, 5, at(5, 1_700_000_001).as_ref(), true));
        assert!(!unchanged(&f, 5, at(5, 1_699_999_999).as_ref(), true));
        assert!(!unchanged(&f, 5, None, true));
        assert!(!unchanged(&f, 5, Some(&(5, None)), true));
        // Without times sent: the server's upload time, not older.
        assert!(unchanged(&f, 5, at(5, 1_700_000_100).as_ref(), false));
        assert!(!unchanged(&f, 5, at(5, 1_699_999_000).as_ref(), false));
    }
}
