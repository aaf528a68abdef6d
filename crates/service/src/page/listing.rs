//! Directory listings as JSON or HTML, formatted entry by entry into a small
//! text buffer that is handed to the engine's body writer as it fills (the
//! writer batches it into 64 KiB chunks). Nothing holds the whole listing.

use std::time::SystemTime;

use crate::page::{PageRights, PageUser};
use crate::path::{encode_segment_into, RelPath};
use crate::storage::{Entry, Kind};

/// Hand formatted text to the body writer once this much has accumulated.
pub const FLUSH_AT: usize = 16 * 1024;

/// The built-in pages' policy, less `script-src` (see [`page_csp`]).
pub const PAGE_CSP: &str = "default-src 'self'; img-src 'self' data:; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'self'";

/// A fresh nonce for the page's `<script>`: 128 random bits as hex (a
/// CSP base64-value), or `None` without randomness (the page then runs no
/// script and stays a readable table).
pub fn new_nonce() -> Option<String> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).ok()?;
    Some(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// [`PAGE_CSP`] admitting only the page's own `<script>` tag, marked with
/// `nonce`. Not a source naming the host: behind a proxy that rewrites
/// `Host` (nginx's default `proxy_pass`) the browser's name differs and the
/// script was blocked, leaving a blank page. Not `'self'`: an uploaded
/// `.js` would run as a script of the page. No nonce: no script.
pub fn page_csp_nonce(nonce: Option<&str>) -> String {
    match nonce {
        Some(n) => format!("{PAGE_CSP}; script-src 'nonce-{n}'"),
        None => format!("{PAGE_CSP}; script-src 'none'"),
    }
}

thread_local! {
    /// The nonce of the page [`locked_page`] built last on this thread,
    /// for the header its caller writes next ([`page_csp`]).
    static LOCKED_NONCE: std::cell::RefCell<Option<String>> =
        const { std::cell::RefCell::new(None) };
}

/// The policy for the page [`locked_page`] just built on this thread (the
/// caller writes it right after, with no await between); `host` no longer
/// matters: the nonce, not the name, admits the script.
pub fn page_csp(_host: Option<&str>) -> String {
    let nonce = LOCKED_NONCE.with(|n| n.borrow_mut().take());
    page_csp_nonce(nonce.as_deref())
}

/// For a browser's GET that lacks the token (it asks for HTML by `Accept`):
/// the page's frame without entries (`data-locked`), whose script asks for
/// the token and fetches the listing with it. `None` for anything else.
/// Where anyone may add files but not read (a drop box), the frame is the
/// upload-only page instead (its script asks for nothing first).
pub fn locked_page(policy: &crate::Policy, ex: &wirespeed_net::Exchange) -> Option<Vec<u8>> {
    let key = crate::path::parse_request_path(ex.path()).unwrap_or_else(|_| RelPath::root());
    let anyone = crate::policy::Principal::Anyone;
    let rights = crate::page::page_rights(policy, anyone, &key);
    frame(policy, ex, anyone, &key, rights, !rights.upload_only())
}

/// For a browser's GET of a folder where `who` may add files but not read
/// them (an upload link): the page's frame without entries, whose script
/// offers only the upload. `None` for anything else (the refusal stands).
pub fn upload_page(
    policy: &crate::Policy,
    ex: &wirespeed_net::Exchange,
    who: crate::policy::Principal,
    key: &RelPath,
) -> Option<Vec<u8>> {
    let rights = crate::page::page_rights(policy, who, key);
    let folder = key.is_root() || key.trailing_slash();
    if !folder || !rights.upload_only() {
        return None;
    }
    frame(policy, ex, who, key, rights, false)
}

/// The page's frame for a browser's GET (HTML by `Accept`), no entries.
fn frame(
    policy: &crate::Policy,
    ex: &wirespeed_net::Exchange,
    who: crate::policy::Principal,
    key: &RelPath,
    rights: PageRights,
    locked: bool,
) -> Option<Vec<u8>> {
    let accept = ex.header_str("accept")?;
    if ex.method() != "GET"
        || !accept.contains("text/html")
        || Format::choose(ex.query(), Some(accept)) != Format::Html
    {
        return None;
    }
    let mut page = Vec::with_capacity(2048);
    let nonce = new_nonce();
    LOCKED_NONCE.with(|n| *n.borrow_mut() = nonce.clone());
    let mut fmt = Formatter::new(Format::Html)
        .with_nonce(nonce)
        .with_rights(rights)
        .with_user(crate::page::PageUser::of(policy, who))
        .with_base(ex.base())
        .with_next(format!("{}{}", ex.base(), key.to_url(key.trailing_slash())));
    fmt.begin(&mut page, key.segments(), locked);
    fmt.end(&mut page);
    Some(page)
}

/// Output format of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Html,
}

impl Format {
    /// `?format=json` / `?format=html` decide; otherwise JSON only if
    /// `Accept` prefers `application/json` to `text/html` by q-value (RFC
    /// 9110 §12.5.1). Ties, `*/*`, no `Accept`, or neither acceptable: HTML
    /// (a listing in some form beats a 406).
    pub fn choose(query: Option<&str>, accept: Option<&str>) -> Format {
        if let Some(q) = query {
            for pair in q.split('&') {
                match pair {
                    "format=json" => return Format::Json,
                    "format=html" => return Format::Html,
                    _ => {}
                }
            }
        }
        let wants_json = accept
            .is_some_and(|a| accept_q(a, "application", "json") > accept_q(a, "text", "html"));
        if wants_json {
            Format::Json
        } else {
            Format::Html
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Html => "text/html; charset=utf-8",
        }
    }
}

/// The q-value, in thousandths, that an `Accept` header value gives the media
/// type `ty/sub`: the one of the most specific range that matches it (`ty/sub`
/// over `ty/*` over `*/*`, RFC 9110 §12.5.1), 0 if none does. Ranges with a
/// malformed q-value are ignored.
pub fn accept_q(accept: &str, ty: &str, sub: &str) -> u16 {
    let mut best: Option<(u8, u16)> = None; // (specificity, q)
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let Some((rt, rs)) = parts.next().and_then(|m| m.trim().split_once('/')) else {
            continue;
        };
        let (rt, rs) = (rt.trim(), rs.trim());
        let specificity = if rt == "*" && rs == "*" {
            1
        } else if rt.eq_ignore_ascii_case(ty) && rs == "*" {
            2
        } else if rt.eq_ignore_ascii_case(ty) && rs.eq_ignore_ascii_case(sub) {
            3
        } else {
            continue;
        };
        let mut q = Some(1000);
        for param in parts {
            if let Some((name, value)) = param.split_once('=') {
                if name.trim().eq_ignore_ascii_case("q") {
                    q = parse_qvalue(value.trim());
                }
            }
        }
        let Some(q) = q else { continue };
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.map_or(0, |(_, q)| q)
}

/// RFC 9110 §12.4.2 `qvalue`: `0[.ddd]` or `1[.000]`, in thousandths.
fn parse_qvalue(v: &str) -> Option<u16> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut thousandths = 0u16;
    for (i, b) in frac.bytes().enumerate() {
        thousandths += u16::from(b - b'0') * [100, 10, 1][i];
    }
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// RFC 3339 UTC at one-second resolution (what Last-Modified carries too).
pub fn rfc3339(t: SystemTime) -> Option<String> {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    let dt = time::OffsetDateTime::from_unix_timestamp(i64::try_from(secs).ok()?).ok()?;
    dt.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// A listing row's date, UTC to the second, as lighttpd writes it
/// (`2023-Nov-14 22:13:20`): the form lftp reads exactly.
pub(crate) fn listing_date(t: SystemTime) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    let dt = time::OffsetDateTime::from_unix_timestamp(i64::try_from(secs).ok()?).ok()?;
    Some(format!(
        "{:04}-{}-{:02} {:02}:{:02}:{:02}",
        dt.year(),
        MONTHS[usize::from(u8::from(dt.month())) - 1],
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    ))
}

/// Streaming formatter: `begin`, then `entry` per entry, then `end`.
pub struct Formatter {
    format: Format,
    count: usize,
    rights: PageRights,
    user: PageUser,
    /// Where the no-script sign-in form returns (default: the folder).
    next: Option<String>,
    /// The nonce of the page's `<script>` ([`page_csp_nonce`]).
    nonce: Option<String>,
    /// `?share=TOKEN` when a link's holder asked with the link in the URL:
    /// every href carries it on, so crawlers (`wget -r`) stay inside the
    /// link; empty for everyone else.
    link: String,
    /// The server's path prefix, before every URL the page names.
    base: String,
    /// The server searches (`serve --search`): the page shows its box.
    search: bool,
}

impl Formatter {
    pub fn new(format: Format) -> Self {
        Formatter {
            format,
            count: 0,
            rights: PageRights::ALL,
            user: PageUser::NoUsers,
            next: None,
            nonce: None,
            link: String::new(),
            base: String::new(),
            search: false,
        }
    }

    /// Whether the page offers the search box (off by default).
    pub fn with_search(mut self, on: bool) -> Self {
        self.search = on;
        self
    }

    /// The share link every href carries on (`None`: none, the default).
    pub fn with_link(mut self, token: Option<&str>) -> Self {
        self.link = token.map_or(String::new(), |t| format!("?share={}", encode_query(t)));
        self
    }

    /// The server's path prefix (`serve --path-prefix`), `""` at the root.
    pub fn with_base(mut self, base: &str) -> Self {
        self.base = base.to_string();
        self
    }

    /// The nonce the page's `<script>` carries (the one its
    /// `Content-Security-Policy` names).
    pub fn with_nonce(mut self, nonce: Option<String>) -> Self {
        self.nonce = nonce;
        self
    }

    /// Where the page's no-script sign-in form goes back to (a file's
    /// locked page: the file).
    pub fn with_next(mut self, next: String) -> Self {
        self.next = Some(next);
        self
    }

    /// Who the HTML page says is signed in (none by default).
    pub fn with_user(mut self, user: PageUser) -> Self {
        self.user = user;
        self
    }

    /// The actions the HTML page offers (all by default).
    pub fn with_rights(mut self, rights: PageRights) -> Self {
        self.rights = rights;
        self
    }

    /// `segments` are the directory's decoded names (none: the root).
    /// `locked`: a private server's answer to a browser without the token,
    /// the page's frame only (its script asks for the token, then fetches
    /// the listing with it).
    pub fn begin(&mut self, out: &mut Vec<u8>, segments: &[String], locked: bool) {
        match self.format {
            Format::Json => out.push(b'['),
            Format::Html => html_begin(out, segments, locked, self),
        }
    }

    pub fn entry(&mut self, out: &mut Vec<u8>, e: &Entry) {
        let modified = e.meta.modified.and_then(rfc3339);
        let dir = e.meta.kind == Kind::Dir;
        match self.format {
            Format::Json => {
                if self.count > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"\n{\"name\":");
                // serde_json escapes quotes, backslashes and control characters.
                if serde_json::to_writer(&mut *out, &e.name).is_err() {
                    out.extend_from_slice(b"\"\"");
                }
                out.extend_from_slice(if dir {
                    b",\"type\":\"dir\""
                } else {
                    b",\"type\":\"file\""
                });
                out.extend_from_slice(format!(",\"size\":{}", e.meta.size).as_bytes());
                if !self.link.is_empty() {
                    // A link's holder gets where each entry is, link and all.
                    let mut href = String::with_capacity(e.name.len() + self.link.len() + 4);
                    encode_segment_into(&e.name, &mut href);
                    if dir {
                        href.push('/');
                    }
                    href.push_str(&self.link);
                    out.extend_from_slice(format!(",\"href\":\"{href}\"").as_bytes());
                }
                match modified {
                    Some(m) => out.extend_from_slice(format!(",\"modified\":\"{m}\"}}").as_bytes()),
                    None => out.extend_from_slice(b",\"modified\":null}"),
                }
            }
            Format::Html => {
                // One row per line, in the cell order and classes of
                // lighttpd's listing (name, modified, size, exact bytes and
                // a date with seconds, each the text right after its
                // `class="…">`), which lftp and other tools parse without a
                // HEAD per file; the page's script reads the same cells.
                let mut s = String::with_capacity(256 + 4 * e.name.len());
                s.push_str(if dir { "<tr class=\"d\">" } else { "<tr>" });
                s.push_str("<td class=\"n\"><a href=\"");
                encode_segment_into(&e.name, &mut s);
                if dir {
                    s.push('/');
                }
                s.push_str(&self.link);
                s.push_str("\">");
                escape_html(&e.name, &mut s);
                if dir {
                    s.push('/');
                }
                s.push_str("</a></td>");
                match (&modified, e.meta.modified.and_then(listing_date)) {
                    (Some(iso), Some(shown)) => {
                        s.push_str(&format!("<td data-t=\"{iso}\" class=\"m\">{shown}</td>"))
                    }
                    _ => s.push_str("<td class=\"m\"></td>"),
                }
                if dir {
                    s.push_str("<td class=\"s\">-</td>");
                } else {
                    // People without the script read the title.
                    s.push_str("<td title=\"");
                    human_size(e.meta.size, &mut s);
                    s.push_str(&format!("\" class=\"s\">{}</td>", e.meta.size));
                }
                s.push_str("</tr>\n");
                out.extend_from_slice(s.as_bytes());
            }
        }
        self.count += 1;
    }

    pub fn end(&mut self, out: &mut Vec<u8>) {
        match self.format {
            Format::Json => out.extend_from_slice(b"\n]\n"),
            Format::Html if self.link.is_empty() => out.extend_from_slice(HTML_END.as_bytes()),
            Format::Html => {
                // The JSON button's GET form drops its action's query: the
                // link goes along as a field of the form.
                let token = self.link.trim_start_matches("?share=");
                let field = format!(
                    "<input type=\"hidden\" name=\"share\" value=\"{token}\"><button type=\"submit\""
                );
                let end = HTML_END.replacen("<button type=\"submit\"", &field, 1);
                out.extend_from_slice(end.as_bytes());
            }
        }
    }
}

/// A query value percent-encoded (a link's token is URL-safe already;
/// this keeps anything else from breaking out of the href).
fn encode_query(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    encode_segment_into(v, &mut out);
    out
}

/// The JSON listing is offered by a GET form, not a link: crawlers
/// (`wget -r`, which ignores `rel=nofollow`) follow links, never forms.
const HTML_END: &str = "</tbody></table></main>\n\
<p id=\"empty\" class=\"empty\" hidden>This folder is empty.</p>\n\
<footer>wirespeed &middot; <form class=\"json\" method=\"get\">\
<button type=\"submit\" name=\"format\" value=\"json\">JSON</button></form></footer>\n</body></html>\n";

/// The page's head, header, upload form and table head. The rows are a
/// plain table in the document, what crawlers and tools (rclone, wget,
/// lftp) read; with scripting on, the style sheet hides it (no layout of
/// thousands of rows) and the page's script reads it and renders its own
/// table, what is on screen first.
fn html_begin(out: &mut Vec<u8>, segments: &[String], locked: bool, f: &Formatter) {
    let (rights, user, next, link) = (f.rights, f.user, f.next.as_deref(), f.link.as_str());
    let nonce = f.nonce.as_deref();
    let base = f.base.as_str();
    // The loader's modules, fetched at once rather than import by import
    // (each tag carries the nonce: the policy admits nothing else).
    let preload: String = match nonce {
        Some(n) => crate::page::assets::modules()
            .map(|m| {
                format!(
                    "<link rel=\"modulepreload\" href=\"{}\" nonce=\"{n}\">",
                    crate::page::assets::url_under(base, m)
                )
            })
            .collect(),
        None => String::new(),
    };
    let nonce = nonce.map_or(String::new(), |n| format!(" nonce=\"{n}\""));
    // Folders above `rights.top` (a share link's own folder) are names,
    // not links: the link does not reach them.
    let mut title = String::from("/");
    let mut crumbs = if rights.top == 0 {
        let mut home = String::from("<a href=\"");
        escape_html(base, &mut home);
        home.push_str("/\">Home</a>");
        home
    } else {
        String::from("<span>Home</span>")
    };
    let mut href = format!("{base}/");
    for (i, seg) in segments.iter().enumerate() {
        escape_html(seg, &mut title);
        title.push('/');
        encode_segment_into(seg, &mut href);
        href.push('/');
        crumbs.push_str("<span class=\"sep\">/</span>");
        if i + 1 >= rights.top {
            crumbs.push_str("<a href=\"");
            crumbs.push_str(&href);
            crumbs.push_str(link);
            crumbs.push_str("\">");
            escape_html(seg, &mut crumbs);
            crumbs.push_str("</a>");
        } else {
            crumbs.push_str("<span>");
            escape_html(seg, &mut crumbs);
            crumbs.push_str("</span>");
        }
    }
    let up = if segments.len() <= rights.top {
        String::new()
    } else {
        format!("<tr class=\"d up\"><td class=\"n\"><a href=\"../{link}\" rel=\"up\">../</a></td><td class=\"m\"></td><td class=\"s\">-</td></tr>\n")
    };
    let (css, js, icon) = (
        crate::page::assets::url_under(base, "page.css"),
        crate::page::assets::url_under(base, "page.js"),
        crate::page::assets::url_under(base, "icon.svg"),
    );
    let mut state = String::from(if locked { " data-locked=\"1\"" } else { "" });
    // The script reads the prefix here: the one place it learns it.
    if !base.is_empty() {
        state.push_str(" data-base=\"");
        escape_html(base, &mut state);
        state.push('"');
    }
    if rights.share {
        state.push_str(" data-share=\"1\"");
    }
    if f.search && rights.read {
        state.push_str(" data-search=\"1\"");
    }
    if rights.top > 0 {
        state.push_str(&format!(" data-top=\"{}\"", rights.top));
    }
    // Without scripts, a plain form signs in (`/-/session` answers 303
    // back here); with them, the script shows its own.
    let mut signin = String::new();
    if user == PageUser::SignedOut {
        signin.push_str(&format!(
            "<noscript><form id=\"signin-form\" method=\"post\" action=\"{base}/-/session\">\
<input name=\"name\" autocomplete=\"username\" aria-label=\"User name\" placeholder=\"User name\" required> \
<input type=\"password\" name=\"password\" autocomplete=\"current-password\" aria-label=\"Password\" \
placeholder=\"Password\" required><input type=\"hidden\" name=\"next\" value=\""
        ));
        escape_html(next.unwrap_or(&href), &mut signin);
        signin.push_str("\"> <button type=\"submit\">Sign in</button></form></noscript>");
    }
    if let PageUser::SignedIn(name) = user {
        signin.push_str(&format!(
            "<noscript><form id=\"signout-form\" method=\"post\" action=\"{base}/-/session/sign-out\">"
        ));
        escape_html(name.as_str(), &mut signin);
        signin.push_str(" <button type=\"submit\">Sign out</button></form></noscript>");
    }
    // The script shows a sign-in form, or the name and Sign out.
    match user {
        PageUser::NoUsers => {}
        PageUser::SignedOut => state.push_str(" data-users=\"1\""),
        PageUser::SignedIn(name) => {
            state.push_str(" data-users=\"1\" data-user=\"");
            escape_html(name.as_str(), &mut state);
            state.push('"');
        }
    }
    let can = rights.attribute();
    // Without the right to upload, no form (the script adds no buttons either).
    let form = if rights.write {
        let and_link = link.replacen('?', "&", 1);
        format!("<form id=\"upform\" method=\"post\" action=\"?format=html{and_link}\" enctype=\"multipart/form-data\">\
<input type=\"file\" name=\"file\" id=\"files\" multiple> <button type=\"submit\">Upload</button></form>")
    } else {
        String::new()
    };
    let note = if rights.upload_only() {
        "<p id=\"upload-only\" class=\"note\">Upload only: add files here. \
What this folder holds is not shown.</p>\n"
    } else {
        ""
    };
    out.extend_from_slice(
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"color-scheme\" content=\"light dark\"><title>Index of {title}</title>\
<link rel=\"icon\" href=\"{icon}\" type=\"image/svg+xml\"><link rel=\"stylesheet\" href=\"{css}\">\
<script src=\"{js}\"{nonce} defer></script>{preload}</head><body{state} data-can=\"{can}\">\n\
<header><nav class=\"crumbs\" aria-label=\"Folder\">{crumbs}<span class=\"sep\">/</span></nav>\
<h1>Index of {title}</h1>{signin}</header>\n\
<div class=\"bar\" id=\"bar\">{form}</div>\n{note}\
<main><table id=\"rows\"><thead><tr><th class=\"n\">Name</th><th class=\"m\">Modified (UTC)</th>\
<th class=\"s\">Size (bytes)</th></tr></thead><tbody>\n{up}"
        )
        .as_bytes(),
    );
}

/// A size in bytes as people read it: `999 B`, `1.5 KiB`, `12.0 MiB` (the
/// page's script formats the same way).
pub fn human_size(n: u64, out: &mut String) {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        out.push_str(&format!("{n} B"));
        return;
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    out.push_str(&format!("{v:.1} {}", UNITS[unit]));
}

/// Escape text for HTML element content and quoted attribute values.
pub fn escape_html(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Meta;
    use std::time::Duration;

    fn entry(name: &str, kind: Kind) -> Entry {
        Entry {
            name: name.to_string(),
            meta: Meta {
                kind,
                size: if kind == Kind::File { 42 } else { 0 },
                modified: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
            },
        }
    }

    #[test]
    fn choose_format() {
        assert_eq!(Format::choose(Some("format=json"), None), Format::Json);
        assert_eq!(
            Format::choose(Some("a=1&format=json"), Some("text/html")),
            Format::Json
        );
        assert_eq!(
            Format::choose(None, Some("text/html, application/json;q=0.9")),
            Format::Html
        );
        assert_eq!(
            Format::choose(None, Some("text/html, application/json;q=0.5")),
            Format::Html
        );
        assert_eq!(Format::choose(None, Some("application/json")), Format::Json);
        assert_eq!(
            Format::choose(None, Some("application/json, */*;q=0.1")),
            Format::Json
        );
        assert_eq!(
            Format::choose(None, Some("text/html;q=0.4, application/json;q=0.5")),
            Format::Json
        );
        // A browser's own Accept.
        assert_eq!(
            Format::choose(
                None,
                Some("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
            ),
            Format::Html
        );
        assert_eq!(
            Format::choose(None, Some("application/json;q=0, */*")),
            Format::Html
        );
        assert_eq!(Format::choose(None, Some("image/png")), Format::Html);
        assert_eq!(
            Format::choose(None, Some("application/*, text/html;q=0.2")),
            Format::Json
        );
        assert_eq!(
            Format::choose(Some("format=html"), Some("application/json")),
            Format::Html
        );
        assert_eq!(Format::choose(None, Some("*/*")), Format::Html);
        assert_eq!(Format::choose(None, None), Format::Html);
    }

    #[test]
    fn q_values() {
        assert_eq!(accept_q("text/html", "text", "html"), 1000);
        assert_eq!(accept_q("TEXT/HTML;Q=0.5", "text", "html"), 500);
        assert_eq!(accept_q("text/*;q=0.3, */*;q=0.1", "text", "html"), 300);
        assert_eq!(accept_q("*/*;q=0.1, text/html;q=0", "text", "html"), 0);
        assert_eq!(accept_q("*/*;q=0.1", "text", "html"), 100);
        assert_eq!(accept_q("application/json", "text", "html"), 0);
        assert_eq!(accept_q("text/html;level=1;q=0.25", "text", "html"), 250);
        assert_eq!(accept_q("text/html; q=1.0", "text", "html"), 1000);
        // Malformed q-values drop their range.
        for bad in ["2", "0.1234", "-1", "", "1.5", "0.x"] {
            let a = format!("text/html;q={bad}, */*;q=0.2");
            assert_eq!(accept_q(&a, "text", "html"), 200, "{a}");
        }
        assert_eq!(accept_q("", "text", "html"), 0);
        assert_eq!(accept_q("garbage, ,;", "text", "html"), 0);
    }

    #[test]
    fn json_is_valid_and_escaped() {
        let mut f = Formatter::new(Format::Json);
        let mut out = Vec::new();
        f.begin(&mut out, &[], false);
        for n in ["plain", "quo\"te", "back\\slash", "ctl\u{1}\n", "<b>&", "é"] {
            f.entry(&mut out, &entry(n, Kind::File));
        }
        f.entry(&mut out, &entry("d", Kind::Dir));
        f.end(&mut out);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(a.len(), 7);
        assert_eq!(a[1]["name"], "quo\"te");
        assert_eq!(a[3]["name"], "ctl\u{1}\n");
        assert_eq!(a[0]["size"], 42);
        assert_eq!(a[0]["type"], "file");
        assert_eq!(a[6]["type"], "dir");
        assert_eq!(a[0]["modified"], "2023-11-14T22:13:20Z");
        let mut empty = Vec::new();
        let mut f = Formatter::new(Format::Json);
        f.begin(&mut empty, &[], false);
        f.end(&mut empty);
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&empty).unwrap(),
            serde_json::json!([])
        );
    }

    #[test]
    fn html_under_a_path_prefix_names_it_everywhere() {
        let mut f = Formatter::new(Format::Html)
            .with_base("/files")
            .with_user(PageUser::SignedOut);
        let mut out = Vec::new();
        f.begin(&mut out, &["d".to_string()], false);
        f.entry(&mut out, &entry("a.txt", Kind::File));
        f.end(&mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains(" data-base=\"/files\""), "{s}");
        assert!(s.contains("<a href=\"/files/\">Home</a>"), "{s}");
        assert!(s.contains("<a href=\"/files/d/\">d</a>"), "{s}");
        assert!(s.contains("action=\"/files/-/session\""), "{s}");
        assert!(s.contains("name=\"next\" value=\"/files/d/\""), "{s}");
        for asset in ["page.css", "page.js", "icon.svg"] {
            assert!(
                s.contains(&crate::page::assets::url_under("/files", asset)),
                "{s}"
            );
        }
        assert!(!s.contains("\"/-/"), "no URL at the host's root: {s}");
        // Rows stay relative: they are right under any prefix.
        assert!(s.contains("href=\"a.txt\""), "{s}");
    }

    #[test]
    fn html_is_escaped_and_linked() {
        let mut f = Formatter::new(Format::Html);
        let mut out = Vec::new();
        f.begin(&mut out, &["<x>".to_string()], false);
        f.entry(&mut out, &entry("<script>\"'&.txt", Kind::File));
        f.entry(&mut out, &entry("sub dir", Kind::Dir));
        f.end(&mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("Index of /&lt;x&gt;/"));
        assert!(
            s.contains("href=\"%3Cscript%3E%22%27%26.txt\">&lt;script&gt;&quot;&#39;&amp;.txt</a>")
        );
        assert!(s.contains("href=\"sub%20dir/\">sub dir/</a>"));
        assert!(
            s.contains("<a href=\"/%3Cx%3E/\">&lt;x&gt;</a>"),
            "breadcrumb"
        );
        assert!(s.contains(
            "<td data-t=\"2023-11-14T22:13:20Z\" class=\"m\">2023-Nov-14 22:13:20</td>\
             <td title=\"42 B\" class=\"s\">42</td></tr>\n"
        ));
        assert!(s.contains("sub dir/</a></td><td data-t"));
        assert!(s.contains("<td class=\"s\">-</td></tr>\n"));
        assert!(s.contains("href=\"../\""));
        assert!(!s.contains("<script>"));
        assert!(!s.contains("noscript"), "rows are in the document");
        assert!(!s.contains("href=\"?"), "no link into a non-listing");
        assert_eq!(
            listing_date(SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400)).unwrap(),
            "2000-Feb-29 00:00:00"
        );
    }

    #[test]
    fn human_sizes() {
        let h = |n| {
            let mut s = String::new();
            human_size(n, &mut s);
            s
        };
        assert_eq!(h(0), "0 B");
        assert_eq!(h(1023), "1023 B");
        assert_eq!(h(1024), "1.0 KiB");
        assert_eq!(h(1536), "1.5 KiB");
        assert_eq!(h(12 << 20), "12.0 MiB");
        assert_eq!(h(3 << 30), "3.0 GiB");
        assert_eq!(h(u64::MAX), "16.0 EiB");
    }
}
