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
    /// [`refuse_name`]).
    pub rel: Vec<String>,
    pub url: Url,
    pub dir: bool,
    pub size: u64,
    /// The listing's modification time (RFC 3339 on wirespeed), if any.
    pub modified: Option<String>,
}

/// Deepest folder nesting [`walk`] descends into (a symlink loop on the
/// server would otherwise never end).
pub const MAX_DEPTH: usize = 64;

/// The name prefix wirespeed keeps for itself (the server's partial
/// uploads, the client's partial downloads): never taken from a listing,
/// so a remote file can never overwrite or pose as one of them.
pub const RESERVED_PREFIX: &str = ".wirespeed-";

/// Whether `name` starts with [`RESERVED_PREFIX`] (ASCII case ignored, as
/// case-insensitive file systems would).
pub fn reserved_name(name: &str) -> bool {
    name.len() >= RESERVED_PREFIX.len()
        && name.as_bytes()[..RESERVED_PREFIX.len()].eq_ignore_ascii_case(RESERVED_PREFIX.as_bytes())
}

/// A name from a listing that is safe to create locally: exactly one
/// normal path component (not empty, `.`, `..`, and without `/` or NUL),
/// so a hostile server cannot write outside the destination.
pub fn safe_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Why a listed name is not taken, if it is not.
pub fn refuse_name(name: &str) -> Option<&'static str> {
    if !safe_name(name) {
        Some("not a plain file name (it could leave the destination)")
    } else if reserved_name(name) {
        Some("names starting with .wirespeed- are reserved by wirespeed")
    } else {
        None
    }
}

/// How much of a remote tree [`walk`] holds: a hostile or huge listing
/// fails with [`Error::WalkLimit`] instead of filling memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// Files and folders in the whole tree.
    pub max_entries: u64,
    /// Bytes the found entries take, added up: each one's names from the
    /// walked folder down, its URL and its record ([`held_bytes`]). Besides
    /// them the walk holds one folder's listing at a time (at most 64 MiB
    /// of JSON).
    pub max_name_bytes: u64,
}

/// What one found entry takes in memory, near enough to bound a walk by:
/// its record (twice: the list of entries grows by doubling), its names'
/// list and each name, its URL and its time, each heap block rounded up
/// as the allocator does and with its bookkeeping.
pub fn held_bytes(e: &RemoteEntry) -> u64 {
    let block = |n: usize| if n == 0 { 0 } else { n.div_ceil(16) * 16 + 16 };
    let names = block(e.rel.len() * std::mem::size_of::<String>())
        + e.rel.iter().map(|n| block(n.len())).sum::<usize>();
    let strings = block(e.url.target.len())
        + block(e.url.host.len())
        + e.modified.as_ref().map_or(0, |m| block(m.len()));
    (2 * std::mem::size_of::<RemoteEntry>() + names + strings) as u64
}

impl Default for WalkLimits {
    fn default() -> Self {
        WalkLimits {
            max_entries: 1_000_000,
            max_name_bytes: 256 << 20,
        }
    }
}

/// A remote tree as [`walk`] found it.
#[derive(Debug, Clone)]
pub struct Walk {
    /// The folder's URL after redirects (where it was read; never a local name).
    pub root: Url,
    /// Files and folders below it, folders before their contents.
    pub entries: Vec<RemoteEntry>,
    /// Entries not taken: their URL (or folder and raw name) and why.
    pub skipped: Vec<(String, &'static str)>,
}

/// Every file and folder below the folder `url`, folders before their
/// contents, within `limits`. Names that are not one safe path component,
/// and reserved names ([`refuse_name`]), are skipped and reported. A
/// folder is listed when its turn comes, so one listing is held at a time.
pub async fn walk(client: &Client, url: &Url, limits: WalkLimits) -> Result<Walk, Error> {
    let (_, first, root) = list_following(client, url).await?;
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let (mut count, mut held) = (0u64, 0u64);
    let mut first = Some(first);
    let mut queue = std::collections::VecDeque::from([(root.clone(), Vec::new())]);
    while let Some((folder, rel)) = queue.pop_front() {
        let entries = match first.take() {
            Some(listed) => listed,
            None => list_following(client, &folder).await?.1,
        };
        for e in entries {
            if let Some(why) = refuse_name(&e.name) {
                let shown = if safe_name(&e.name) {
                    folder.child(&e.name, false).to_string()
                } else {
                    format!("{folder} entry {:?}", e.name)
                };
                skipped.push((shown, why));
                continue;
            }
            let dir = e.kind == "dir";
            let mut path: Vec<String> = rel.clone();
            path.push(e.name);
            count += 1;
            if count > limits.max_entries {
                return Err(Error::WalkLimit {
                    what: "entries",
                    limit: limits.max_entries,
                });
            }
            let url = folder.child(path.last().map_or("", String::as_str), dir);
            if dir {
                if path.len() > MAX_DEPTH {
                    return Err(Error::Io {
                        context: "walking the folder",
                        source: io::Error::other(format!(
                            "{url} is nested deeper than {MAX_DEPTH} folders (a link loop?)"
                        )),
                    });
                }
                queue.push_back((url.clone(), path.clone()));
            }
            let entry = RemoteEntry {
                rel: path,
                url,
                dir,
                size: e.size,
                modified: e.modified,
            };
            held += held_bytes(&entry);
            if held > limits.max_name_bytes {
                return Err(Error::WalkLimit {
                    what: "bytes of names and URLs",
                    limit: limits.max_name_bytes,
                });
            }
            out.push(entry);
        }
    }
    Ok(Walk {
        root,
        entries: out,
        skipped,
    })
}

/// DELETE `url`; returns the status. `Depth: 0`: a folder goes only if
/// empty (409 otherwise), since a WebDAV server removes a folder with
/// everything in it on a plain DELETE; `rm -r` empties folders first.
pub async fn delete(client: &Client, url: &Url) -> Result<u16, Error> {
    let resp = client
        .send(Request::delete(url.clone()).header("Depth", "0"))
        .await?
        .error_for_status()
        .await?;
    let status = resp.status();
    let _ = resp.bytes(64 * 1024).await;
    Ok(status)
}

/// A listing's `modified` (`2023-11-14T22:13:20Z`, UTC, optional
/// fraction) as seconds since the epoch; None for anything else.
pub fn parse_listing_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let rest = &s[19..];
    let rest = match rest.strip_prefix('.') {
        Some(f) => f.trim_start_matches(|c: char| c.is_ascii_digit()),
        None => rest,
    };
    if rest != "Z"
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&d)
        || h > 23
        || mi > 59
        || sec > 60
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_listing_may_not_give() {
        for bad in ["", ".", "..", "../x", "/etc/x", "a/../../b", "a\0b"] {
            assert!(!safe_name(bad), "{bad:?}");
            assert!(refuse_name(bad).is_some(), "{bad:?}");
        }
        for reserved in [".wirespeed-part-x", ".WireSpeed-x", ".wirespeed-"] {
            assert!(
                safe_name(reserved) && reserved_name(reserved),
                "{reserved:?}"
            );
            assert!(refuse_name(reserved).unwrap().contains("reserved"));
        }
        for ok in ["x", "x.part", ".x", "..x", "a b", "ü", ".wirespeed"] {
            assert_eq!(refuse_name(ok), None, "{ok:?}");
        }
    }

    #[test]
    fn listing_times() {
        assert_eq!(parse_listing_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_listing_time("2023-11-14T22:13:20Z"),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_listing_time("2024-02-29T00:00:00.5Z"),
            Some(1_709_164_800)
        );
        for bad in [
            "",
            "2023-11-14 22:13:20Z",
            "2023-11-14T22:13:20+01:00",
            "2023-13-01T00:00:00Z",
            "x023-11-14T22:13:20Z",
        ] {
            assert_eq!(parse_listing_time(bad), None, "{bad:?}");
        }
    }
}
