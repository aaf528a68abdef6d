//! A server's search (`GET FOLDER/?q=TEXT`, `serve --search`): one page of
//! names (or files whose words match) below a folder, and where the next
//! page is.

use std::io;

use crate::transfer::get_following;
use crate::{Client, Error, Request, Url};

/// One result: where it is below the server's root, and what a listing
/// says of it.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct Found {
    pub path: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub size: u64,
    pub modified: Option<String>,
}

/// One page of results.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct FoundPage {
    pub entries: Vec<Found>,
    /// The next page's URL path and query (`None`: the last page).
    pub next: Option<String>,
}

/// The first page's URL: `text` searched below `folder` (its share link
/// kept), names or, with `content`, words inside files.
pub fn search_url(folder: &Url, text: &str, content: bool) -> Result<Url, Error> {
    let folder = folder.as_folder();
    let mut query = format!("?q={}", encode_query(text));
    if content {
        query.push_str("&content=1");
    }
    Ok(folder.resolve(&query)?.with_share_of(&folder))
}

/// The page after `page`, from the first page's URL.
pub fn next_url(first: &Url, page: &FoundPage) -> Result<Option<Url>, Error> {
    match &page.next {
        Some(n) => Ok(Some(first.resolve(n)?.with_share_of(first))),
        None => Ok(None),
    }
}

/// GET one page as JSON.
pub async fn search_page(client: &Client, url: &Url) -> Result<FoundPage, Error> {
    let (resp, final_url) = get_following(client, url, |u| {
        Request::get(u.clone()).header("Accept", "application/json")
    })
    .await?;
    let resp = resp.error_for_status().await?;
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
    serde_json::from_slice(&raw).map_err(|_| Error::Io {
        context: "reading the search results (a server without serve --search answers a listing)",
        source: io::Error::new(io::ErrorKind::InvalidData, "not a search answer"),
    })
}

/// A query value: unreserved bytes as they are, everything else `%XX`.
fn encode_query(v: &str) -> String {
    let mut out = String::with_capacity(v.len() * 3);
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_the_folder_and_its_link() {
        let f = Url::parse("http://h:1/a%20b?share=T").unwrap();
        let u = search_url(&f, "x y&z", true).unwrap();
        assert_eq!(u.path(), "/a%20b/");
        assert!(
            u.to_string()
                .ends_with("/a%20b/?q=x%20y%26z&content=1&share=T"),
            "{u}"
        );
        let page = FoundPage {
            entries: Vec::new(),
            next: Some("/a%20b/?q=x&after=9&share=T".into()),
        };
        let n = next_url(&u, &page).unwrap().unwrap();
        assert!(
            n.to_string().ends_with("/a%20b/?q=x&after=9&share=T"),
            "{n}"
        );
    }
}
