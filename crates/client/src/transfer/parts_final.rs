//! The end of an upload in parts (`parts.rs`): one final upload
//! (`Upload-Concat: final;URL…`) has the server join the complete parts
//! under the file's URL, waited for while the server is still joining.

use std::path::Path;
use std::time::Duration;

use wirespeed_resumable::client::encode_metadata;
use wirespeed_resumable::tus;

use crate::transfer::put::UploadOptions;
use crate::transfer::resume::stored_digest;
use crate::transfer::retry;
use crate::transfer::saved::StateFile;
use crate::{Client, Error, Request, Url};

/// How often a final upload still being joined is asked again, and for
/// how long at most.
const JOIN_POLL: Duration = Duration::from_millis(250);
const JOIN_WAIT: Duration = Duration::from_secs(3600);

/// What the final upload needs of the parts upload.
pub(super) struct Final<'a> {
    pub client: &'a Client,
    /// Where uploads are created (`/-/uploads/<target path>`).
    pub creation: &'a Url,
    pub path: &'a Path,
    pub opts: &'a UploadOptions,
    pub record: &'a StateFile,
    /// The parts' paths, in order, space-separated.
    pub names: String,
    pub count: usize,
}

fn say(opts: &UploadOptions, m: &str) {
    if let Some(n) = &opts.notice {
        n(m)
    }
}

/// The final upload: the server joins the parts under `url`. A retry after
/// a cut may find the parts already taken by the first attempt: then the
/// stored file's digest tells whether that attempt published ours.
pub(super) async fn join(s: &Final<'_>, url: &Url, ours: Option<[u8; 32]>) -> Result<(), Error> {
    let (names, count) = (&s.names, s.count);
    let name = s
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let policy = s.opts.retry;
    let mut attempt = 0;
    loop {
        let mut req = Request::new("POST", s.creation.clone())
            .header("Tus-Resumable", tus::VERSION)
            .header("Upload-Concat", format!("final;{names}"))
            .header(
                "Upload-Metadata",
                encode_metadata(&[("filename", name.as_bytes())]),
            );
        if let Some(t) = s.opts.mtime_field(s.path) {
            req = req.header(crate::transfer::mtime::FIELD, t);
        }
        let e = match final_request(s, req).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let taken = attempt > 0 && matches!(e.status(), Some(400 | 409));
        if taken {
            if let Some(o) = ours {
                if stored_digest(s.client, url).await? == Some(o) {
                    return Ok(());
                }
            }
        }
        if let Some(status @ 400..=499) = e.status().filter(|st| *st != 408 && *st != 429) {
            // The same parts would be refused again: a rerun starts anew.
            s.record.remove();
            return Err(Error::Resumable(format!(
                "the server refused to join the {count} parts into {url} ({status}): {e}; \
                 the record of the parts is dropped, so running the command again starts a \
                 new upload"
            )));
        }
        if !retry::retryable(&e) || attempt >= policy.retries {
            return Err(e);
        }
        let d = retry::pause(&policy, attempt).await;
        attempt += 1;
        say(
            s.opts,
            &format!(
                "{}; asking the server to join the parts again after {:.1} s",
                retry::describe(&e),
                d.as_secs_f64()
            ),
        );
    }
}

/// Sends the final upload's creation and waits until the file is joined.
async fn final_request(s: &Final<'_>, req: Request) -> Result<(), Error> {
    let resp = s.client.send(req).await?.error_for_status().await?;
    let joined = resp.header("Upload-Offset").is_some();
    let location = resp.header("Location").map(str::to_string);
    let _ = resp.bytes(64 * 1024).await;
    if joined {
        return Ok(());
    }
    let Some(location) = location else {
        return Err(Error::Resumable(
            "the server created the final upload without a Location".into(),
        ));
    };
    let location = s.creation.resolve(&location)?.with_share_of(s.creation);
    // Still joining: its HEAD has no Upload-Offset until it is published.
    let started = tokio::time::Instant::now();
    while started.elapsed() < JOIN_WAIT {
        tokio::time::sleep(JOIN_POLL).await;
        let req = Request::new("HEAD", location.clone()).header("Tus-Resumable", tus::VERSION);
        let resp = s.client.send(req).await?.error_for_status().await?;
        if resp.header("Upload-Offset").is_some() {
            return Ok(());
        }
    }
    Err(Error::Timeout("the server joining the parts"))
}
