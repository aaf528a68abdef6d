//! The browser page's static files, embedded in the binary and served at
//! `/-/assets/<version>/<name>`; the version is a hash of their contents, so
//! they can be cached for a year and a new build is fetched at once.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use wirespeed_net::{Error, Exchange, Handler, Response};

const JS: &str = "text/javascript; charset=utf-8";

/// A JavaScript asset: `assets/<name>`.
macro_rules! js {
    ($name:literal) => {
        ($name, JS, include_bytes!(concat!("../../assets/", $name)))
    };
}

/// (name, content type, bytes) of every asset. `page.js` is the loader the
/// page's `<script>` names; the page itself is the modules under `page/`
/// (see [`MODULE_DIR`]); `vendor/` holds libraries served as they came.
const FILES: &[(&str, &str, &[u8])] = &[
    js!("page.js"),
    js!("page/main.js"),
    js!("page/context.js"),
    js!("page/dom.js"),
    js!("page/dialogs.js"),
    js!("page/api.js"),
    js!("page/signin.js"),
    js!("page/listing.js"),
    js!("page/selection.js"),
    js!("page/downloads.js"),
    js!("page/menus.js"),
    js!("page/actions.js"),
    js!("page/share.js"),
    js!("page/links.js"),
    js!("page/trash.js"),
    js!("page/toolbar.js"),
    js!("page/search.js"),
    js!("page/drop.js"),
    js!("page/upload.js"),
    js!("page/transfer.js"),
    js!("page/tus.js"),
    js!("page/grid.js"),
    js!("page/kinds.js"),
    js!("page/gallery.js"),
    js!("page/render.js"),
    // tus-js-client's browser build, fetched on the first large upload.
    js!("vendor/tus.min.js"),
    (
        "vendor/tus-js-client.LICENSE",
        "text/plain; charset=utf-8",
        include_bytes!("../../assets/vendor/tus-js-client.LICENSE"),
    ),
    (
        "page.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/page.css"),
    ),
    (
        "icon.svg",
        "image/svg+xml",
        include_bytes!("../../assets/icon.svg"),
    ),
    FAVICON,
];

/// Where the page's modules are: every one is preloaded with the page
/// (`<link rel="modulepreload">`), so that the imports do not wait for
/// each other.
const MODULE_DIR: &str = "page/";

/// The names of the page's modules, `main.js` first.
pub fn modules() -> impl Iterator<Item = &'static str> {
    FILES
        .iter()
        .map(|(name, _, _)| *name)
        .filter(|name| name.starts_with(MODULE_DIR))
}

/// Answered at `/favicon.ico` when the served folder has none.
pub const FAVICON: (&str, &str, &[u8]) = (
    "favicon.ico",
    "image/x-icon",
    include_bytes!("../../assets/favicon.ico"),
);

/// The first 12 hex digits of the SHA-256 of all assets.
pub fn version() -> &'static str {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| {
        let mut h = Sha256::new();
        for (name, _, bytes) in FILES {
            h.update(name.as_bytes());
            h.update(bytes);
        }
        let sum = h.finalize();
        sum[..6].iter().map(|b| format!("{b:02x}")).collect()
    })
}

/// The gzip of a text asset (made once, at the best level); `None` for
/// the others (icons are small or compressed already).
fn gzipped(name: &str) -> Option<&'static [u8]> {
    static GZ: OnceLock<Vec<(&'static str, Vec<u8>)>> = OnceLock::new();
    GZ.get_or_init(|| {
        FILES
            .iter()
            .filter(|(_, ty, _)| ty.starts_with("text/") || ty.ends_with("+xml"))
            .map(|(n, _, bytes)| (*n, crate::page::compress::gzip_all(bytes)))
            .collect()
    })
    .iter()
    .find(|(n, _)| *n == name)
    .map(|(_, gz)| gz.as_slice())
}

/// The URL path of asset `name` in this build.
pub fn url(name: &str) -> String {
    url_under("", name)
}

/// [`url`] under the server's path prefix `base` (`""` at the root).
pub fn url_under(base: &str, name: &str) -> String {
    format!("{base}/-/assets/{}/{name}", version())
}

/// `GET /-/assets/<version>/<name>`: no token needed (the files are the
/// same in every wirespeed). Another version's URL still gets today's file,
/// but revalidated, so a page from an older build keeps working.
pub struct Assets;

impl Handler for Assets {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        let rest = ex.path().strip_prefix("/-/assets/").unwrap_or("");
        let (v, name) = rest.split_once('/').unwrap_or(("", rest));
        let Some((_, ty, bytes)) = FILES.iter().find(|(n, _, _)| *n == name) else {
            return Err(Error::status(404, "no such asset"));
        };
        let cache = if v == version() {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        };
        let mut resp = Response::new(200)
            .header("Content-Type", *ty)
            .header("Cache-Control", cache)
            .header("X-Content-Type-Options", "nosniff");
        if let Some(gz) = gzipped(name) {
            resp = resp.header("Vary", "Accept-Encoding");
            if crate::page::compress::accepts_gzip(ex.header_str("accept-encoding")) {
                resp = resp.header("Content-Encoding", "gzip");
                return ex.send(resp, gz).await;
            }
        }
        ex.send(resp, bytes).await
    }
}

/// The embedded favicon as a response (for `/favicon.ico` when the folder
/// has none).
pub async fn send_favicon(ex: &mut Exchange) -> Result<(), Error> {
    let resp = Response::new(200)
        .header("Content-Type", FAVICON.1)
        .header("Cache-Control", "public, max-age=86400");
    ex.send(resp, FAVICON.2).await
}
