//! Where a server's control routes are when it answers under a path
//! prefix (`serve --path-prefix /files` behind a proxy's `location
//! /files/`): found by asking `/-/health` under each leading folder of the
//! URL the user gave, the root first.
//!
//! Why not try the route itself at each place until one is not 404: the
//! route's own 404 ("nothing there to share") is an answer, and taking it
//! for "no route here" sent the request on into a file URL.

use crate::{Client, Error, Request, Url};

impl Client {
    /// The path prefix `url`'s server answers under: the first of `""`,
    /// `/a`, `/a/b`… ([`Url::prefix_candidates`]) whose `/-/health` says
    /// 200; `""` when the URL has no folder to try, or none answers (the
    /// request then gets the root's answer, whatever it is).
    pub async fn server_base<'u>(&self, url: &'u Url) -> Result<&'u str, Error> {
        let candidates = url.prefix_candidates();
        if candidates.len() == 1 {
            return Ok("");
        }
        for base in candidates {
            let health = url.resolve(&format!("{base}/-/health"))?;
            let r = self.send(Request::get(health)).await?;
            let ok = r.status() == 200;
            let _ = r.bytes(4096).await;
            if ok {
                return Ok(base);
            }
        }
        Ok("")
    }
}
