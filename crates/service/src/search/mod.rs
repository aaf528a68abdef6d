//! Search below a folder: `GET /PATH/?q=TEXT` for names, `&content=1` for
//! words inside text files; HTML by default, JSON by `Accept` or
//! `&format=json`. The index hands out candidates in a stable order; each
//! one is shown only if the principal could reach it by listing: every
//! folder on the way and the name itself readable and not hidden, and
//! readable where a symlink on its path really leads. A page is bounded
//! (`limit`, and a bound on candidates judged per request) and ends with a
//! continuation (`after`).

mod follow;
mod format;
mod source;

use std::sync::Arc;

use wirespeed_net::{Error, Exchange, Response};
use wirespeed_search::{Hit, NameQuery, Search, TextQuery};

use crate::config::ServiceConfig;
use crate::page::listing::Format;
use crate::path::RelPath;
use crate::policy::{Policy, Principal};
use crate::storage::Storage;

pub(crate) use follow::follow;
pub use source::StorageSource;

/// Results per page unless `limit` says less.
pub const DEFAULT_LIMIT: usize = 100;
/// Most results one page holds.
pub const MAX_LIMIT: usize = 1000;
/// Candidates judged per request, per result asked: a query whose matches
/// the principal mostly may not see ends early with a continuation rather
/// than scanning the whole index.
const JUDGED_PER_RESULT: usize = 20;

/// What `?q=…` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub text: String,
    pub content: bool,
    pub after: i64,
    pub limit: usize,
}

/// The search a query string asks for, if any (`q` present and not empty).
pub fn wanted(query: Option<&str>) -> Option<Asked> {
    let mut asked = Asked {
        text: String::new(),
        content: false,
        after: 0,
        limit: DEFAULT_LIMIT,
    };
    let mut any = false;
    for (k, v) in form_urlencoded::parse(query?.as_bytes()) {
        match &*k {
            "q" => {
                asked.text = v.into_owned();
                any = true;
            }
            "content" => asked.content = matches!(&*v, "1" | "true" | "yes" | "on"),
            "after" => asked.after = v.parse().unwrap_or(0).max(0),
            "limit" => asked.limit = v.parse().unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
            _ => {}
        }
    }
    (any && !asked.text.trim().is_empty()).then_some(asked)
}

/// One page of results, judged.
pub(crate) struct Page {
    pub hits: Vec<Hit>,
    /// Where the next page starts (`None`: no more).
    pub next: Option<i64>,
    pub complete: bool,
}

/// Answers a search below folder `key`, which `who` was admitted to read.
pub(crate) async fn send<S: Storage>(
    storage: &S,
    cfg: &ServiceConfig,
    policy: &Policy,
    ex: &mut Exchange,
    key: &RelPath,
    who: Principal,
    asked: Asked,
) -> Result<(), Error> {
    let Some(search) = cfg.search.clone() else {
        return Err(Error::status(
            404,
            "search is off on this server (serve --search)",
        ));
    };
    let page = judged_page(storage, policy, &search, key, who, &asked).await?;
    let format = Format::choose(ex.query(), ex.header_str("accept"));
    let link = matches!(who, Principal::Link(_))
        .then(|| crate::policy::shares::from_query(ex.query()))
        .flatten()
        .map(str::to_string);
    let mut resp = Response::new(200)
        .header("Content-Type", format.content_type())
        .header("Vary", "Accept")
        .header("Cache-Control", "no-cache");
    let body = match format {
        Format::Json => format::json(ex.base(), key, &asked, &page, link.as_deref()),
        Format::Html => {
            let nonce = crate::page::listing::new_nonce();
            let csp = crate::page::listing::page_csp_nonce(nonce.as_deref());
            resp = resp.header("Content-Security-Policy", csp);
            let html = format::Html {
                policy,
                who,
                key,
                asked: &asked,
                link: link.as_deref(),
                base: ex.base(),
                nonce,
            };
            html.page(&page)
        }
    };
    ex.send(resp, &body).await
}

async fn judged_page<S: Storage>(
    storage: &S,
    policy: &Policy,
    search: &Arc<Search>,
    key: &RelPath,
    who: Principal,
    asked: &Asked,
) -> Result<Page, Error> {
    let below = key.segments().join("/");
    let mut hits = Vec::new();
    let mut after = asked.after;
    let mut judged = 0;
    let budget = asked.limit * JUDGED_PER_RESULT;
    let batch = (asked.limit * 2).min(MAX_LIMIT);
    loop {
        let candidates = candidates(search, &below, asked, after, batch).await?;
        let exhausted = candidates.len() < batch;
        for hit in candidates {
            after = hit.id;
            judged += 1;
            if visible(storage, policy, who, key, &hit.path).await {
                hits.push(hit);
                if hits.len() == asked.limit {
                    return Ok(Page {
                        hits,
                        next: Some(after),
                        complete: search.status().complete,
                    });
                }
            }
        }
        if exhausted {
            return Ok(Page {
                hits,
                next: None,
                complete: search.status().complete,
            });
        }
        if judged >= budget {
            return Ok(Page {
                hits,
                next: Some(after),
                complete: search.status().complete,
            });
        }
    }
}

/// The index's next candidates, off the async workers (SQLite blocks).
async fn candidates(
    search: &Arc<Search>,
    below: &str,
    asked: &Asked,
    after: i64,
    limit: usize,
) -> Result<Vec<Hit>, Error> {
    let (search, below, text, content) = (
        search.clone(),
        below.to_string(),
        asked.text.clone(),
        asked.content,
    );
    let found = tokio::task::spawn_blocking(move || {
        if content {
            match TextQuery::parse(&text) {
                Some(q) => search.texts(&below, &q, after, limit),
                None => Ok(Vec::new()),
            }
        } else {
            match NameQuery::parse(&text) {
                Some(q) => search.names(&below, &q, after, limit),
                None => Ok(Vec::new()),
            }
        }
    })
    .await
    .map_err(|_| Error::status(500, "the search failed"))?;
    found.map_err(|e| Error::status(503, format!("{e}; try again")))
}

/// Whether `who` could find `path` by listing down from `top`: each folder
/// below `top` on the way and the name itself readable and not hidden, and
/// readable where it really is if a symlink leads elsewhere.
async fn visible<S: Storage>(
    storage: &S,
    policy: &Policy,
    who: Principal,
    top: &RelPath,
    path: &str,
) -> bool {
    let mut at = top.clone();
    let skip = top.segments().len();
    for seg in path.split('/').skip(skip) {
        at = match at.join(seg) {
            Ok(p) => p,
            Err(_) => return false,
        };
        if !policy.reads(who, &at) {
            return false;
        }
    }
    if at.segments().len() <= skip {
        return false;
    }
    crate::through_links::reads_real(storage, policy, who, &at).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_query_string_asks() {
        assert_eq!(wanted(None), None);
        assert_eq!(wanted(Some("format=json")), None);
        assert_eq!(wanted(Some("q=+")), None);
        let a = wanted(Some("q=r%C3%A9sum%C3%A9+2024&content=1&after=7&limit=5000")).unwrap();
        assert_eq!(a.text, "résumé 2024");
        assert!(a.content);
        assert_eq!((a.after, a.limit), (7, MAX_LIMIT));
        assert_eq!(wanted(Some("q=x&after=-3&limit=0")).unwrap().after, 0);
        assert_eq!(wanted(Some("q=x&limit=0")).unwrap().limit, 1);
    }
}
