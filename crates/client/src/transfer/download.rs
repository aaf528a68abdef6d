//! Downloads: GET into a file (resumable, through `DEST.part`) or into a
//! writer (stdout), checked against the server's `Repr-Digest`.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::transfer::retry::{self, Notice, RetryPolicy};
use crate::transfer::{get_following, hash_file, hex, parse_sha256, TransferProgress};
use crate::transfer::{mtime, validators};
use crate::{Client, Error, Request, Response, Url};

#[derive(Default, Clone)]
pub struct DownloadOptions {
    /// Continue a partial `DEST.part` with a Range request.
    pub resume: bool,
    pub progress: Option<Arc<dyn TransferProgress>>,
    /// Retries after failures that may pass; each continues the `.part`
    /// with `Range` and `If-Range`.
    pub retry: RetryPolicy,
    /// Told about resumptions and restarts.
    pub notice: Option<Notice>,
    /// Give the file the server's `Last-Modified` (as `wget`, `curl -R`).
    pub keep_mtime: bool,
    /// At most this many connections for one file, by ranges (adaptive up
    /// to it); 0 or 1: one stream (the `Default`), but a partial file of
    /// pieces is still continued by ranges, over one connection.
    pub connections: usize,
    /// Files at least this large may take more than one connection when
    /// `connections` allows ([`crate::transfer::ranges::RANGED_FROM`]
    /// unless told).
    pub ranged_from: u64,
}

#[derive(Debug, Clone)]
pub struct DownloadReport {
    pub dest: PathBuf,
    /// Bytes in the finished file.
    pub bytes: u64,
    /// Bytes that were already there (resume).
    pub resumed_from: u64,
    /// The server sent `Repr-Digest` and the file matches it.
    pub verified: bool,
    /// `resume` found `dest` already complete (the server's size and
    /// version): nothing was transferred.
    pub already_complete: bool,
}

/// The context of an error writing `download_to`'s output (stdout): the
/// binary ends quietly when it is a closed pipe.
pub const OUTPUT_CONTEXT: &str = "writing the output";

/// What every partial download's name starts with.
pub const PART_PREFIX: &str = ".wirespeed-part-";

/// `.wirespeed-part-NAME` beside `dest`: where a download grows until it is
/// complete and verified. Hidden, and under the reserved `.wirespeed-`
/// prefix that no listing entry may take, so it can never be (or be
/// overwritten by) a real file: a folder holding `X` and `X.part` saves
/// both. A name too long for the prefix gets its sha-256 instead.
pub fn part_path(dest: &Path) -> PathBuf {
    let name = dest.file_name().unwrap_or_default();
    let mut part = std::ffi::OsString::from(PART_PREFIX);
    if PART_PREFIX.len() + name.len() <= 255 {
        part.push(name);
    } else {
        let sum: [u8; 32] = Sha256::digest(name.as_encoded_bytes()).into();
        part.push(&hex(&sum)[..40]);
    }
    dest.with_file_name(part)
}

/// Whether a file name is a partial download's ([`part_path`]).
pub fn is_part_name(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().starts_with(PART_PREFIX.as_bytes())
}

/// `bytes START-END/TOTAL` → (start, end, total); total `*` → None.
pub fn parse_content_range(v: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = v.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let (s, e) = range.split_once('-')?;
    let total = if total == "*" {
        None
    } else {
        Some(total.parse().ok()?)
    };
    Some((s.parse().ok()?, e.parse().ok()?, total))
}

/// [`crate::transfer::download_file`] in one stream: the body streams
/// into `DEST.part`, which is renamed to `dest` only once complete (and
/// verified when the server sends `Repr-Digest`). On failure `dest` is
/// untouched; the `.part` file stays for `resume` unless its content is
/// known to be wrong. A failure that may pass (broken connection, 5xx) is
/// retried from where the `.part` ends, with `If-Range` so a file changed
/// meanwhile starts over.
///
/// A `.part` left by an earlier run that recorded the server's version
/// ([`validators`]) is continued with or without `resume`: `If-Range`
/// with that version makes a changed file start over, so continuing is
/// never wrong, and a rerun need not know it was interrupted.
///
/// `answered`: the answer to a GET of `url` already asked (a 200, a 206 of
/// the whole file, or a refusal), which the first attempt takes instead of
/// asking again.
pub(crate) async fn download_stream(
    client: &Client,
    url: &Url,
    dest: &Path,
    opts: &DownloadOptions,
    mut answered: Option<Response>,
) -> Result<DownloadReport, Error> {
    let part = part_path(dest);
    let had = part_len(&part);
    // `-c` on a partial file that recorded nothing (an older client's, or
    // a file system without attributes) resumes without `If-Range`, as
    // `curl -C -` and `wget -c` do: the user said it is the same file.
    let mut validator = (had > 0)
        .then(|| validators::recorded(&part, url).map(|r| r.validator))
        .flatten();
    let mut resume = opts.resume || validator.is_some();
    let mut attempt = 0u32;
    // A refused connection before anything moved: nobody is listening.
    let mut first = true;
    // A leftover `.part` is overwritten when not resuming: progress counts from 0.
    let mut best = if opts.resume { part_len(&part) } else { 0 };
    loop {
        let once = download_once(
            client,
            url,
            dest,
            resume,
            &mut validator,
            opts,
            &mut answered,
        );
        let e = match once.await {
            Ok(r) => return Ok(r),
            Err(e) => e,
        };
        if !retry::retryable(&e) || (first && matches!(e, Error::ConnectionRefused { .. })) {
            remove_if_empty(&part);
            return Err(e);
        }
        first = false;
        let have = part_len(&part);
        if have > best {
            // Bytes arrived since the last failure: the count starts again.
            best = have;
            attempt = 0;
        }
        if attempt >= opts.retry.retries {
            remove_if_empty(&part);
            return Err(e);
        }
        let d = retry::pause(&opts.retry, attempt).await;
        attempt += 1;
        resume = true;
        if let Some(n) = &opts.notice {
            n(&format!(
                "{}; resuming at byte {} after {:.1} s (retry {attempt} of {} without progress)",
                retry::describe(&e),
                part_len(&part),
                d.as_secs_f64(),
                opts.retry.retries
            ));
        }
    }
}

/// A partial file with no bytes keeps nothing worth resuming: removed.
fn remove_if_empty(part: &Path) {
    if std::fs::symlink_metadata(part).is_ok_and(|m| m.is_file() && m.len() == 0) {
        let _ = std::fs::remove_file(part);
    }
}

/// `--continue` (or a tree's rerun) of a file that is already whole: its
/// size is the server's and so is its version, asked with HEAD. A report
/// saying so, and nothing transferred.
pub(crate) async fn already_complete(
    client: &Client,
    url: &Url,
    dest: &Path,
) -> Result<Option<DownloadReport>, Error> {
    let Some(have) = std::fs::metadata(dest)
        .ok()
        .filter(|m| m.is_file() && m.len() > 0)
        .map(|m| m.len())
    else {
        return Ok(None);
    };
    if !is_current(client, url, dest, have).await? {
        return Ok(None);
    }
    Ok(Some(DownloadReport {
        dest: dest.to_path_buf(),
        bytes: have,
        resumed_from: have,
        verified: false,
        already_complete: true,
    }))
}

/// Whether the local file at `dest` (`have` bytes) holds the server's
/// current version of `url`, asked with HEAD: the size must be the server's,
/// and the version too: the validator the download recorded must be the
/// one the server sends now (an edit that keeps the size changes it). A
/// file with no record (an older client's download, a file system without
/// extended attributes) must not be older than `Last-Modified`, as
/// `wget -N` decides; with neither, the size decides alone.
pub async fn is_current(client: &Client, url: &Url, dest: &Path, have: u64) -> Result<bool, Error> {
    let (resp, final_url) = get_following(client, url, |u| Request::new("HEAD", u.clone())).await?;
    refuse_folder(&resp, &final_url)?;
    let resp = resp.error_for_status().await?;
    // A HEAD's body is empty whatever it announces: read the field itself.
    let size = resp
        .header("Content-Length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    if size != Some(have) {
        return Ok(false);
    }
    if let Some(ours) = validators::recorded(dest, url).map(|r| r.validator) {
        return Ok(range_validator(&resp).is_none_or(|theirs| theirs == ours));
    }
    let theirs = resp
        .header("Last-Modified")
        .and_then(mtime::from_last_modified);
    Ok(match (theirs, mtime::of_file(dest)) {
        (Some(t), Some(ours)) => ours >= t,
        _ => true,
    })
}

pub(crate) fn part_len(part: &Path) -> u64 {
    std::fs::metadata(part)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len())
}

/// The validator `If-Range` can carry: a strong ETag, else Last-Modified
/// (RFC 9110 §13.1.5: a weak ETag cannot).
pub(crate) fn range_validator(resp: &Response) -> Option<String> {
    match resp.header("ETag") {
        Some(e) if !e.starts_with("W/") => Some(e.to_string()),
        _ => resp.header("Last-Modified").map(str::to_string),
    }
}

async fn download_once(
    client: &Client,
    url: &Url,
    dest: &Path,
    resume: bool,
    validator: &mut Option<String>,
    opts: &DownloadOptions,
    answered: &mut Option<Response>,
) -> Result<DownloadReport, Error> {
    let part = part_path(dest);
    let file_err = |p: &Path| {
        let p = p.to_path_buf();
        move |source| Error::File { path: p, source }
    };
    let mut have = if resume { part_len(&part) } else { 0 };
    let mut resp = loop {
        if let Some(resp) = answered.take().filter(|_| have == 0) {
            let resp = resp.error_for_status().await?;
            *validator = range_validator(&resp);
            break resp;
        }
        let range = have;
        let if_range = validator.clone();
        let (resp, final_url) = get_following(client, url, |u| {
            let req = Request::get(u.clone());
            match (range, &if_range) {
                (0, _) => req,
                (r, Some(v)) => req
                    .header("Range", format!("bytes={r}-"))
                    .header("If-Range", v.clone()),
                (r, None) => req.header("Range", format!("bytes={r}-")),
            }
        })
        .await?;
        refuse_folder(&resp, &final_url)?;
        if have == 0 {
            let resp = resp.error_for_status().await?;
            *validator = range_validator(&resp);
            break resp;
        }
        match resp.status() {
            206 => {
                let cr = resp.header("Content-Range").and_then(parse_content_range);
                match cr {
                    Some((start, _, _)) if start == have => {
                        if validator.is_none() {
                            *validator = range_validator(&resp);
                        }
                        break resp;
                    }
                    _ => tracing::info!(
                        ?cr,
                        have,
                        "Content-Range does not continue the partial file; restarting"
                    ),
                }
            }
            200 => {
                // The file changed (If-Range) or the server ignores ranges:
                // take the whole body into the `.part` from byte 0.
                let why = if if_range.is_some() {
                    "the file changed on the server"
                } else {
                    "the server sent the whole file"
                };
                if let Some(n) = &opts.notice {
                    n(&format!("{why}; restarting from byte 0"));
                }
                *validator = range_validator(&resp);
                have = 0;
                break resp;
            }
            416 => {
                let total = resp
                    .header("Content-Range")
                    .and_then(parse_content_range_star);
                if total == Some(have) {
                    // Already complete: nothing more to fetch.
                    drop(resp);
                    return finish_download(&part, dest, have, 0, None, None).await;
                }
                tracing::info!(?total, have, "range not satisfiable; restarting");
            }
            _ => {
                return Err(resp
                    .error_for_status()
                    .await
                    .err()
                    .unwrap_or(Error::NoResponse))
            }
        }
        have = 0;
    };
    let expected = resp.header("Repr-Digest").and_then(parse_sha256);
    let modified = opts
        .keep_mtime
        .then(|| {
            resp.header("Last-Modified")
                .and_then(mtime::from_last_modified)
        })
        .flatten();
    let total = resp.content_length().map(|n| n + have);
    if let Some(p) = &opts.progress {
        p.start(total, have);
    }
    // Resuming with a digest to check: the bytes already on disk count too.
    let hasher = Arc::new(Mutex::new(match (expected, have) {
        (Some(_), n) if n > 0 => hash_file(&part, Some(n), None).await?,
        _ => Sha256::new(),
    }));
    let file = if have > 0 {
        let f = OpenOptions::new()
            .append(true)
            .open(&part)
            .map_err(file_err(&part))?;
        // Drop anything past `have` (there is none unless the file grew).
        f.set_len(have).map_err(file_err(&part))?;
        f
    } else {
        File::create(&part).map_err(file_err(&part))?
    };
    // The version these bytes are, for the rerun that continues them (a
    // file created over an old `.part` keeps that one's record otherwise).
    let served_at = resp
        .header("Date")
        .and_then(mtime::from_last_modified)
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_secs()).ok());
    validators::record(&part, url, validator.as_deref(), served_at);
    let observer: Option<crate::Observer> = expected.map(|_| {
        let h = hasher.clone();
        Box::new(move |b: &[u8]| {
            if let Ok(mut h) = h.lock() {
                h.update(b);
            }
        }) as crate::Observer
    });
    let progress = opts.progress.clone();
    let advance = move |n: u64| {
        if let Some(p) = &progress {
            p.advance(n)
        }
    };
    let written = resp
        .write_to_file(file, &part, observer, Some(&advance))
        .await?;
    let sum = expected.map(|_| {
        let h = hasher
            .lock()
            .map(|mut h| std::mem::take(&mut *h))
            .unwrap_or_default();
        <[u8; 32]>::from(h.finalize())
    });
    if let Some(t) = modified {
        // On the `.part`, so the file appears under its name with its time.
        if let Err(e) = mtime::apply(&part, t) {
            tracing::warn!(path = %part.display(), error = %e, "could not set the modification time");
        }
    }
    finish_download(&part, dest, have + written, have, expected, sum).await
}

fn parse_content_range_star(v: &str) -> Option<u64> {
    v.trim().strip_prefix("bytes */")?.parse().ok()
}

pub(crate) async fn finish_download(
    part: &Path,
    dest: &Path,
    bytes: u64,
    resumed_from: u64,
    expected: Option<[u8; 32]>,
    got: Option<[u8; 32]>,
) -> Result<DownloadReport, Error> {
    if let (Some(e), Some(g)) = (expected, got) {
        if e != g {
            // Known-bad bytes must not be resumed from.
            let _ = std::fs::remove_file(part);
            return Err(Error::DigestMismatch {
                what: "download",
                ours: hex(&g),
                theirs: hex(&e),
            });
        }
    }
    std::fs::rename(part, dest).map_err(|source| Error::File {
        path: dest.to_path_buf(),
        source,
    })?;
    Ok(DownloadReport {
        dest: dest.to_path_buf(),
        bytes,
        resumed_from,
        verified: expected.is_some() && got.is_some(),
        already_complete: false,
    })
}

/// GET `url` into `w` (stdout): bytes are written as they arrive, so a
/// `Repr-Digest` mismatch can only be reported after the fact (an error).
/// Returns the byte count and whether a digest was checked.
pub async fn download_to<W: tokio::io::AsyncWrite + Unpin + ?Sized>(
    client: &Client,
    url: &Url,
    w: &mut W,
    progress: Option<Arc<dyn TransferProgress>>,
) -> Result<(u64, bool), Error> {
    use tokio::io::AsyncWriteExt;
    let (resp, final_url) = get_following(client, url, |u| Request::get(u.clone())).await?;
    refuse_folder(&resp, &final_url)?;
    let mut resp = resp.error_for_status().await?;
    let expected = resp.header("Repr-Digest").and_then(parse_sha256);
    if let Some(p) = &progress {
        p.start(resp.content_length(), 0);
    }
    let mut h = Sha256::new();
    let mut buf = vec![0u8; client.config().read_buffer.max(4096)];
    let mut total = 0u64;
    loop {
        let n = resp.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        if expected.is_some() {
            h.update(&buf[..n]);
        }
        w.write_all(&buf[..n])
            .await
            .map_err(Error::io(OUTPUT_CONTEXT))?;
        total += n as u64;
        if let Some(p) = &progress {
            p.advance(n as u64);
        }
    }
    w.flush().await.map_err(Error::io(OUTPUT_CONTEXT))?;
    if let Some(e) = expected {
        let got: [u8; 32] = h.finalize().into();
        if got != e {
            return Err(Error::DigestMismatch {
                what: "download (already written out)",
                ours: hex(&got),
                theirs: hex(&e),
            });
        }
    }
    Ok((total, expected.is_some()))
}

/// A folder's listing is not the file the user asked for: a download that
/// ended at a URL with a trailing `/` is an error that points to `ls`,
/// unless it asked for the folder as an archive (`?archive=`).
pub(crate) fn refuse_folder(resp: &Response, final_url: &Url) -> Result<(), Error> {
    let archive = final_url
        .target
        .split_once('?')
        .is_some_and(|(_, q)| q.split('&').any(|p| p.starts_with("archive=")));
    if !final_url.path().ends_with('/') || archive {
        return Ok(());
    }
    Err(Error::Status {
        status: resp.status(),
        reason: "Is a folder".to_string(),
        message: format!(
            "{} is a folder: use `wirespeed get -r` to download it (or `wirespeed ls` to list it)",
            final_url.target
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_names_are_reserved_and_fit() {
        assert_eq!(
            part_path(Path::new("d/X")),
            PathBuf::from("d/.wirespeed-part-X")
        );
        assert_ne!(part_path(Path::new("X")), Path::new("X.part"));
        assert!(crate::transfer::reserved_name(".wirespeed-part-X"));
        assert!(is_part_name(
            part_path(Path::new("a b")).file_name().unwrap()
        ));
        let long = "n".repeat(250);
        let p = part_path(Path::new(&long));
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(
            name.len() <= 255 && is_part_name(p.file_name().unwrap()),
            "{name}"
        );
        assert_ne!(p, part_path(Path::new(&"m".repeat(250))));
    }
}
