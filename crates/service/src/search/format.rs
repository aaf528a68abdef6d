//! Search results as JSON (entries like a listing's, with their path) or
//! as the page's HTML table (the listing's frame and row cells, each row's
//! name its path below the folder searched).

use wirespeed_search::Hit;

use super::{Asked, Page};
use crate::page::listing::{escape_html, human_size, listing_date, rfc3339, Format, Formatter};
use crate::path::{encode_segment_into, RelPath};
use crate::policy::{Policy, Principal};

fn modified(hit: &Hit) -> Option<std::time::SystemTime> {
    let secs = u64::try_from(hit.modified?).ok()?;
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// `path` below `top` as a relative URL (each name encoded, a folder with
/// its `/`), and the link on for its holder.
fn href(top: &RelPath, hit: &Hit, link: Option<&str>) -> String {
    let mut out = String::with_capacity(hit.path.len() + 8);
    for (i, seg) in hit.path.split('/').skip(top.segments().len()).enumerate() {
        if i > 0 {
            out.push('/');
        }
        encode_segment_into(seg, &mut out);
    }
    if hit.dir {
        out.push('/');
    }
    if let Some(t) = link {
        out.push_str("?share=");
        encode_segment_into(t, &mut out);
    }
    out
}

/// The query string of the next page.
fn next_query(asked: &Asked, after: i64) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("q", &asked.text);
    if asked.content {
        q.append_pair("content", "1");
    }
    q.append_pair("after", &after.to_string());
    q.append_pair("limit", &asked.limit.to_string());
    q.finish()
}

/// `{"entries":[{path,name,type,size,modified,href}…],"next":…,"complete":…}`:
/// `path` from the served root, `href` a URL from the folder searched.
pub(super) fn json(
    base: &str,
    top: &RelPath,
    asked: &Asked,
    page: &Page,
    link: Option<&str>,
) -> Vec<u8> {
    let entries: Vec<serde_json::Value> = page
        .hits
        .iter()
        .map(|h| {
            serde_json::json!({
                "path": format!("/{}{}", h.path, if h.dir { "/" } else { "" }),
                "name": h.name,
                "type": if h.dir { "dir" } else { "file" },
                "size": h.size,
                "modified": modified(h).and_then(rfc3339),
                "href": href(top, h, link),
            })
        })
        .collect();
    let next = page.next.map(|a| {
        let mut u = format!("{base}{}?{}", top.to_url(true), next_query(asked, a));
        if let Some(t) = link {
            u.push_str("&share=");
            encode_segment_into(t, &mut u);
        }
        u
    });
    let mut out = serde_json::to_vec(&serde_json::json!({
        "query": asked.text,
        "content": asked.content,
        "entries": entries,
        "next": next,
        "complete": page.complete,
    }))
    .unwrap_or_else(|_| b"{}".to_vec());
    out.push(b'\n');
    out
}

/// The page's frame around a table of results.
pub(super) struct Html<'a> {
    pub policy: &'a Policy,
    pub who: Principal,
    pub key: &'a RelPath,
    pub asked: &'a Asked,
    pub link: Option<&'a str>,
    pub base: &'a str,
    pub nonce: Option<String>,
}

impl Html<'_> {
    pub(super) fn page(self, page: &Page) -> Vec<u8> {
        let mut out = Vec::with_capacity(4096 + 200 * page.hits.len());
        let mut fmt = Formatter::new(Format::Html)
            .with_base(self.base)
            .with_nonce(self.nonce.clone())
            .with_rights(crate::page::page_rights(self.policy, self.who, self.key))
            .with_user(crate::page::PageUser::of(self.policy, self.who))
            .with_link(self.link)
            .with_search(true);
        fmt.begin(&mut out, self.key.segments(), false);
        let mut rows = String::new();
        rows.push_str("<tr class=\"search\"><td class=\"n\" colspan=\"3\">Results for <q>");
        escape_html(&self.asked.text, &mut rows);
        rows.push_str(if self.asked.content {
            "</q> inside files</td></tr>\n"
        } else {
            "</q></td></tr>\n"
        });
        for hit in &page.hits {
            self.row(hit, &mut rows);
        }
        if let Some(after) = page.next {
            rows.push_str("<tr class=\"more\"><td class=\"n\" colspan=\"3\"><a href=\"?");
            escape_html(&next_query(self.asked, after), &mut rows);
            if let Some(t) = self.link {
                rows.push_str("&amp;share=");
                encode_segment_into(t, &mut rows);
            }
            rows.push_str("\">More results</a></td></tr>\n");
        }
        out.extend_from_slice(rows.as_bytes());
        fmt.end(&mut out);
        out
    }

    /// A row in the listing's cells: the name cell shows the path below
    /// the folder searched.
    fn row(&self, hit: &Hit, s: &mut String) {
        s.push_str(if hit.dir { "<tr class=\"d\">" } else { "<tr>" });
        s.push_str("<td class=\"n\"><a href=\"");
        s.push_str(&href(self.key, hit, self.link));
        s.push_str("\">");
        let shown: Vec<&str> = hit
            .path
            .split('/')
            .skip(self.key.segments().len())
            .collect();
        escape_html(&shown.join("/"), s);
        if hit.dir {
            s.push('/');
        }
        s.push_str("</a></td>");
        let t = modified(hit);
        match (t.and_then(rfc3339), t.and_then(listing_date)) {
            (Some(iso), Some(shown)) => {
                s.push_str(&format!("<td data-t=\"{iso}\" class=\"m\">{shown}</td>"))
            }
            _ => s.push_str("<td class=\"m\"></td>"),
        }
        if hit.dir {
            s.push_str("<td class=\"s\">-</td>");
        } else {
            s.push_str("<td title=\"");
            human_size(hit.size, s);
            s.push_str(&format!("\" class=\"s\">{}</td>", hit.size));
        }
        s.push_str("</tr>\n");
    }
}
