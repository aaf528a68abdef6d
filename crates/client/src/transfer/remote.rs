//! The remote side of folders: JSON listings, walking a folder tree,
//! delete.

use std::io;

use crate::transfer::get_following;
use crate::{Client, Error, Request, Response, Url};

/// One listing entry (the service's JSON listing).
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct Entry {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub size: u64,
    pub modified: Option<String>,
}

/// GET a directory listing as JSON (`Accept: application/json`). Returns the
/// raw JSON and the parsed entries.
pub async fn list(client: &Client, url: &Url) -> Result<(String, Vec<Entry>), Error> {
    let (raw, entries, _) = list_following(client, url).await?;
    Ok((raw, entries))
}

/// [`list`], also returning the folder's URL after redirects (`/d` → `/d/`).
/// A file is [`Error::NotAFolder`]; an answer that is not JSON (another
/// server's HTML index) is [`Error::NotAListing`].
pub async fn list_following(
    client: &Client,
    url: &Url,
) -> Result<(String, Vec<Entry>, Url), Error> {
    let (resp, final_url) = get_following(client, url, |u| {
        Request::get(u.clone()).header("Accept", "application/json")
    })
    .await?;
    let resp: Response = resp.error_for_status().await?;
    if !final_url.path().ends_with('/') {
        drop(resp);
        return Err(Error::NotAFolder {
            url: final_url.to_string(),
        });
    }
    let content_type = resp.header("Content-Type").unwrap_or("").to_string();
    if !content_type
        .to_ascii_lowercase()
        .starts_with("application/json")
    {
        drop(resp);
        return Err(Error::NotAListing {
            url: final_url.to_string(),
            content_type,
        });
    }
    let raw = resp.bytes(64 << 20).await?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let entries: Vec<Entry> = serde_json::from_str(&raw).map_err(|e| Error::Io {
        context: "reading the JSON listing",
        source: io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
    })?;
    Ok((raw, entries, final_url))
}

/// One file or folder found by [`walk`].
#[derive(Debug, Clone)]
pub struct RemoteEntry {
    /// Names from the walked folder down to this entry (each one checked by
    /// [`safe_name`]).
    pub rel: Vec<String>,
    pub url: Url,
    pub dir: bool,
    pub size: u64,
}

/// Deepest folder nesting [`walk`] descends into (a symlink loop on the
/// server would otherwise never end).
pub const MAX_DEPTH: usize = 64;

/// A name from a listing that is safe to create locally: not empty, `.`,
/// `..`, and without `/` or NUL (a hostile server must not write outside
/// the destination).
pub fn safe_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Every file and folder below the folder `url`, folders before their
/// contents. Returns the folder's URL after redirects and the entries.
/// Unsafe names are skipped with a warning.
pub async fn walk(client: &Client, url: &Url) -> Result<(Url, Vec<RemoteEntry>), Error> {
    let (_, first, root) = list_following(client, url).await?;
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([(root.clone(), Vec::new(), first)]);
    while let Some((folder, rel, entries)) = queue.pop_front() {
        for e in entries {
            if !safe_name(&e.name) {
                tracing::warn!(name = ?e.name, folder = %folder, "skipping an unsafe name in a listing");
                continue;
            }
            let dir = e.kind == "dir";
            let mut path: Vec<String> = rel.clone();
            path.push(e.name.clone());
            let url = folder.child(&e.name, dir);
            if dir {
                if path.len() > MAX_DEPTH {
                    return Err(Error::Io {
                        context: "walking the folder",
                        source: io::Error::other(format!(
                            "{url} is nested deeper than {MAX_DEPTH} folders (a link loop?)"
                        )),
                    });
                }
                let (_, sub, _) = list_following(client, &url).await?;
                queue.push_back((url.clone(), path.clone(), sub));
            }
            out.push(RemoteEntry {
                rel: path,
                url,
                dir,
                size: e.size,
            });
        }
    }
    Ok((root, out))
}

/// DELETE `url`; returns the status.
pub async fn delete(client: &Client, url: &Url) -> Result<u16, Error> {
    let resp = client
        .send(Request::delete(url.clone()))
        .await?
        .error_for_status()
        .await?;
    let status = resp.status();
    let _ = resp.bytes(64 * 1024).await;
    Ok(status)
}
