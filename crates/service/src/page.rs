//! What the browser page offers, and the HTML answers browsers get instead
//! of plain text (a 404 with a way back).

use wirespeed_net::{Error, Exchange, Response};

use crate::listing::{escape_html, Format, PAGE_CSP};
use crate::path::{encode_segment_into, RelPath};
use crate::ServiceConfig;

/// The actions the folder page shows: only what the server would take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRights {
    /// Listing and downloads.
    pub read: bool,
    /// Upload and New folder.
    pub write: bool,
    /// Delete (and, with `write`, Rename, a MOVE).
    pub delete: bool,
}

impl PageRights {
    /// Everything (a server with no policy of its own).
    pub const ALL: PageRights = PageRights {
        read: true,
        write: true,
        delete: true,
    };

    /// The `data-can` value of the page's `<body>`: the rights' names.
    pub fn attribute(self) -> &'static str {
        match (self.write, self.delete) {
            (true, true) => "read write delete",
            (true, false) => "read write",
            (false, true) => "read delete",
            (false, false) => "read",
        }
    }
}

/// The one place the page's rights are decided, from the server's write
/// policy: a token server offers its writes (the page asks for the token
/// when the server says 401); a read-only or exposed server only those it
/// takes from anyone.
pub fn page_rights(cfg: &ServiceConfig, _ex: &Exchange) -> PageRights {
    PageRights {
        read: true,
        write: cfg.writes.upload,
        delete: cfg.writes.delete,
    }
}

/// Whether this request is a browser's navigation (it asks for HTML first).
pub fn wants_html(ex: &Exchange) -> bool {
    ex.method() == "GET"
        && ex.header_str("accept").is_some_and(|a| {
            a.contains("text/html") && Format::choose(None, Some(a)) == Format::Html
        })
}

/// A browser's 404: a short page with a link to the nearest folder above.
pub async fn send_not_found(ex: &mut Exchange, key: &RelPath) -> Result<(), Error> {
    let body = not_found_html(key.segments());
    let resp = Response::new(404)
        .header("Content-Type", Format::Html.content_type())
        .header("Content-Security-Policy", PAGE_CSP)
        .header("Cache-Control", "no-cache");
    ex.send(resp, body.as_bytes()).await
}

fn not_found_html(segments: &[String]) -> String {
    let mut name = String::new();
    escape_html(segments.last().map_or("", String::as_str), &mut name);
    let mut up = String::from("/");
    let mut up_name = String::from("/");
    for seg in segments.iter().take(segments.len().saturating_sub(1)) {
        encode_segment_into(seg, &mut up);
        up.push('/');
        escape_html(seg, &mut up_name);
        up_name.push('/');
    }
    let css = crate::assets::url("page.css");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"color-scheme\" content=\"light dark\"><title>Not found</title>\
<link rel=\"stylesheet\" href=\"{css}\"></head><body>\n\
<main class=\"notfound\"><h1>Not found</h1>\n<p>There is no <strong>{name}</strong> here.</p>\n\
<p><a href=\"{up}\" rel=\"up\">Back to {up_name}</a></p></main>\n</body></html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_attribute() {
        assert_eq!(PageRights::ALL.attribute(), "read write delete");
        let ro = PageRights {
            read: true,
            write: false,
            delete: false,
        };
        assert_eq!(ro.attribute(), "read");
    }

    #[test]
    fn not_found_links_up_and_escapes() {
        let page = not_found_html(&["a b".into(), "<x>".into()]);
        assert!(
            page.contains("<a href=\"/a%20b/\" rel=\"up\">Back to /a b/</a>"),
            "{page}"
        );
        assert!(page.contains("<strong>&lt;x&gt;</strong>"), "{page}");
        assert!(!page.contains("<x>"));
        let page = not_found_html(&["gone.txt".into()]);
        assert!(
            page.contains("<a href=\"/\" rel=\"up\">Back to /</a>"),
            "{page}"
        );
    }
}
