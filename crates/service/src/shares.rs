//! `/-/shares/PATH`: share links over HTTP. `POST` mints one for PATH
//! (`?expires=SECS`, `&upload` for a folder's drop-box link), `GET` lists
//! the live links at or below PATH, `DELETE ?link=TOKEN` revokes one. Only
//! a signed-in user or a token holder shares, and only what they hold
//! there (`r`, or `w` for an upload link), asked of the one policy
//! through `respond::admit`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use wirespeed_net::{Error, Exchange, Handler, Response};

use crate::path::{parse_request_path, RelPath};
use crate::policy::link_records::Change;
use crate::policy::shares::{human_duration, Live, DEFAULT_EXPIRY};
use crate::policy::{Action, Principal, Rights, Shares};
use crate::respond::admit;
use crate::storage::{Kind, StorageError};
use crate::{Policy, ServiceConfig};

/// The route prefix.
pub const PREFIX: &str = "/-/shares";

pub struct ShareRoutes {
    pub cfg: ServiceConfig,
    pub policy: Policy,
    pub shares: Arc<Shares>,
    /// What a path names, asked before a link to it is minted.
    pub files: Arc<dyn Probe>,
}

/// The answer of [`Probe::kind`].
pub type KindFuture<'a> = Pin<Box<dyn Future<Output = Result<Kind, StorageError>> + Send + 'a>>;

/// The one storage question share links ask: what is at a path. Object
/// safe, so the control routes need not know the storage's type.
pub trait Probe: Send + Sync + 'static {
    fn kind<'a>(&'a self, key: &'a RelPath) -> KindFuture<'a>;
}

fn query_value<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query?.split('&').find_map(|kv| match kv.split_once('=') {
        Some((k, v)) if k == name => Some(v),
        None if kv == name => Some(""),
        _ => None,
    })
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn minter(who: Principal) -> Option<String> {
    match who {
        Principal::User(name) => Some(name.as_str().to_string()),
        Principal::TokenHolder => Some("--token".to_string()),
        Principal::Anyone | Principal::Link(_) => None,
    }
}

/// A link as JSON; its `path` is the URL path, under the server's path
/// prefix `base`, that the link opens with `?share=`.
fn json_of(l: &Live, token: &str, base: &str) -> serde_json::Value {
    serde_json::json!({
        "path": format!("{base}{}", l.grant.path),
        "share": token,
        "id": format!("{:016x}", l.grant.id),
        "rights": l.grant.rights,
        "expires": l.grant.expires,
        "by": l.by,
    })
}

async fn send_json(ex: &mut Exchange, status: u16, v: &serde_json::Value) -> Result<(), Error> {
    let resp = Response::new(status)
        .header("Content-Type", "application/json")
        .header("Cache-Control", "no-store");
    ex.send(resp, format!("{v}\n").as_bytes()).await
}

impl Handler for ShareRoutes {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        let rest = ex.path().get(PREFIX.len()..).unwrap_or("").to_string();
        let rest = if rest.is_empty() {
            "/".to_string()
        } else {
            rest
        };
        let key =
            parse_request_path(&rest).map_err(|e| Error::status(e.status(), e.to_string()))?;
        let upload = query_value(ex.query(), "upload").is_some();
        // Minting needs the right being shared; listing and revoking only
        // a sign-in (asked as metrics are: no right on a path, a principal
        // who signed in), and revoking is the minter's own below.
        let (action, needs) = match (ex.method(), upload) {
            ("POST", true) => (Action::Create, Rights::WRITE),
            ("POST", false) => (Action::Read, Rights::READ),
            _ => (Action::Metrics, Rights::NONE),
        };
        // Minting and revoking change state: never for a page elsewhere
        // (a session cookie would sign it).
        if ex.method() != "GET" {
            crate::respond::refuse_cross_origin(
                ex,
                "cross-origin sharing refused: a page on another site may not mint or revoke links",
            )?;
        }
        // A link never shares (nor lists): only users and token holders.
        if crate::respond::presented_link(ex).is_some() {
            return Err(Error::status(404, "not found"));
        }
        let Some(who) = admit(&self.cfg, &self.policy, ex, action, &key).await? else {
            return Ok(());
        };
        let Some(by) = minter(who) else {
            return Err(Error::status(
                403,
                "sign in to share: a user (HTTP Basic, --user) or the --token",
            ));
        };
        // The token holder sees and revokes every link; a user their own,
        // and any link to where they hold `d` (they could delete what it
        // shares anyway): so the owner of a folder finds and ends the links
        // into it, a removed user's included, without the token.
        let policy = &self.policy;
        let manages = |l: &Live| {
            who == Principal::TokenHolder
                || l.by == by
                || parse_request_path(&l.grant.path)
                    .is_ok_and(|p| policy.rights(who, &p).may_delete())
        };
        match ex.method() {
            "POST" if !self.policy.may_share(who, needs, &key) => Err(Error::status(
                403,
                "sharing here needs the s right (or d) in the rules file (serve --auth): \
                 reading a folder does not make one its publisher",
            )),
            "POST" => self.mint(ex, &key, needs, upload, &by).await,
            "GET" => {
                self.refresh().await?;
                let base = ex.base().to_string();
                let list: Vec<serde_json::Value> = self
                    .shares
                    .list_where(&key, manages, now())
                    .iter()
                    .map(|l| json_of(l, &self.shares.sign(&l.grant), &base))
                    .collect();
                send_json(ex, 200, &serde_json::Value::Array(list)).await
            }
            "DELETE" => {
                let token = query_value(ex.query(), "link").unwrap_or("");
                let id = self.shares.id_of(token);
                // A link minted on another node is in the shared table.
                self.refresh().await?;
                match id {
                    Some(id) if self.shares.revoke_if(id, manages) => {
                        if let Some(links) = &self.cfg.links {
                            links
                                .0
                                .change(&self.shares, Change::Revoke(id))
                                .await
                                .map_err(|e| Error::status(e.status(), e.to_string()))?;
                        }
                        tracing::info!(target: "wirespeed::share", id = %format!("{id:016x}"), by = %by, "share link revoked");
                        ex.send(Response::new(204), b"").await
                    }
                    _ => Err(Error::status(404, "no such live link of yours")),
                }
            }
            _ => Err(Error::status(405, "method not allowed")),
        }
    }
}

impl ShareRoutes {
    /// This node's copy of the shared links table, brought up to date
    /// (one conditional read); nothing without a bucket.
    async fn refresh(&self) -> Result<(), Error> {
        match &self.cfg.links {
            Some(links) => links
                .0
                .refresh(&self.shares, std::time::Duration::ZERO)
                .await
                .map_err(|e| Error::status(e.status(), e.to_string())),
            None => Ok(()),
        }
    }

    async fn mint(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        needs: Rights,
        upload: bool,
        by: &str,
    ) -> Result<(), Error> {
        let folder = key.trailing_slash() || key.is_root();
        if upload && !folder {
            return Err(Error::status(
                400,
                "an upload link is for a folder: end the URL with /",
            ));
        }
        let max = self.shares.max_expiry;
        let secs = match query_value(ex.query(), "expires") {
            None => DEFAULT_EXPIRY.min(max),
            Some(v) => match v.parse::<u64>() {
                Ok(s) if (1..=max).contains(&s) => s,
                Ok(s) if s > max => {
                    return Err(Error::status(
                        400,
                        format!(
                            "a link may live at most {} on this server (serve \
                             --share-max-expiry); ask for less",
                            human_duration(max)
                        ),
                    ))
                }
                _ => {
                    return Err(Error::status(
                        400,
                        "expires must be a whole number of seconds, at least 1",
                    ))
                }
            },
        };
        let path = key.to_url(folder);
        // A link to nothing is a typo handed out (and an upload link would
        // make a folder its minter never meant). Saying what is there
        // tells the minter no more than they may learn already: they read
        // here (a GET), or for an upload link write here (MKCOL answers
        // whether the folder exists).
        match self.files.kind(key).await {
            Ok(Kind::Dir) if !folder => {
                return Err(Error::status(
                    409,
                    format!("{path} is a folder: end the URL with / to share it and all it holds"),
                ))
            }
            Ok(Kind::File) if folder => {
                return Err(Error::status(
                    404,
                    format!("no folder {path} to share (a file has that name: drop the /)"),
                ))
            }
            Ok(_) => {}
            Err(StorageError::NotFound | StorageError::NotDir) => {
                let hint = if upload {
                    ": create the folder first (the page's New folder, or WebDAV MKCOL)"
                } else {
                    ""
                };
                return Err(Error::status(
                    404,
                    format!("nothing at {path} to share{hint}"),
                ));
            }
            Err(e) => return Err(crate::answers::storage_answer(e)),
        }
        let (grant, token) = match &self.cfg.links {
            None => self
                .shares
                .mint(&path, needs, secs, by, now())
                .map_err(|e| Error::status(503, e))?,
            // On a bucket the link exists once the shared table holds it.
            Some(links) => {
                let live = self
                    .shares
                    .new_link(&path, needs, secs, by, now())
                    .map_err(|e| Error::status(503, e))?;
                let grant = live.grant.clone();
                links
                    .0
                    .change(&self.shares, Change::Mint(live))
                    .await
                    .map_err(|e| Error::status(e.status(), e.to_string()))?;
                let token = self.shares.sign(&grant);
                (grant, token)
            }
        };
        tracing::info!(target: "wirespeed::share", id = %format!("{:016x}", grant.id), path = %path, rights = %grant.rights, by = %by, "share link minted");
        let live = Live {
            grant,
            by: by.to_string(),
            revoked: false,
        };
        let body = json_of(&live, &token, ex.base());
        send_json(ex, 201, &body).await
    }
}
