//! The HTML answer a browser gets for a missing path instead of plain
//! text: a short page with a link to the folder above.

use wirespeed_net::{Error, Exchange, Response};

use crate::page::listing::{escape_html, page_csp_nonce, Format};
use crate::path::{encode_segment_into, RelPath};

/// Whether this request is a browser's navigation (it asks for HTML first).
pub fn wants_html(ex: &Exchange) -> bool {
    ex.method() == "GET"
        && ex.header_str("accept").is_some_and(|a| {
            a.contains("text/html") && Format::choose(None, Some(a)) == Format::Html
        })
}

/// A browser's 404: a short page with a link to the nearest folder above.
pub async fn send_not_found(ex: &mut Exchange, key: &RelPath) -> Result<(), Error> {
    let body = not_found_html(ex.base(), key.segments());
    let resp = Response::new(404)
        .header("Content-Type", Format::Html.content_type())
        // No script on this page.
        .header("Content-Security-Policy", page_csp_nonce(None))
        .header("Cache-Control", "no-cache");
    ex.send(resp, body.as_bytes()).await
}

fn not_found_html(base: &str, segments: &[String]) -> String {
    let mut name = String::new();
    escape_html(segments.last().map_or("", String::as_str), &mut name);
    let mut up = format!("{base}/");
    let mut up_name = String::from("/");
    for seg in segments.iter().take(segments.len().saturating_sub(1)) {
        encode_segment_into(seg, &mut up);
        up.push('/');
        escape_html(seg, &mut up_name);
        up_name.push('/');
    }
    let css = crate::page::assets::url_under(base, "page.css");
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
    fn not_found_links_up_and_escapes() {
        let page = not_found_html("", &["a b".into(), "<x>".into()]);
        assert!(
            page.contains("<a href=\"/a%20b/\" rel=\"up\">Back to /a b/</a>"),
            "{page}"
        );
        assert!(page.contains("<strong>&lt;x&gt;</strong>"), "{page}");
        assert!(!page.contains("<x>"));
        let page = not_found_html("", &["gone.txt".into()]);
        assert!(
            page.contains("<a href=\"/\" rel=\"up\">Back to /</a>"),
            "{page}"
        );
        // Under a path prefix the link and the styles carry it.
        let page = not_found_html("/files", &["d".into(), "gone.txt".into()]);
        assert!(
            page.contains("<a href=\"/files/d/\" rel=\"up\">Back to /d/</a>"),
            "{page}"
        );
        assert!(page.contains("href=\"/files/-/assets/"), "{page}");
    }
}
