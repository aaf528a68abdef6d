//! LOCK and UNLOCK (RFC 4918 §9.10–11), and the check every write passes:
//! the `If` header must hold (412), and each lock on what the write changes
//! must have its token submitted (423).

use std::time::Instant;

use wirespeed_net::{Error, Exchange, Response};

use super::if_header::{IfHeader, State};
use super::lock::{new_token, parse_timeout, Lock, LockRefused};
use super::{parent_of, read_xml_body, xml, Dav, XML};
use crate::path::{parse_request_path, RelPath};
use crate::storage::{Kind, Storage, StorageError, Upload};

/// What a write changes, so which locks it needs the tokens of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reach {
    /// The resource's own state (PROPPATCH).
    Own,
    /// The resource and its parent's membership (PUT, MKCOL, a new name).
    Member,
    /// Also everything below it (DELETE, MOVE, an overwritten destination).
    Tree,
}

/// The key an `If` header's resource tag names (an absolute URL or path).
fn tag_key(tag: &str) -> Option<RelPath> {
    let path = match tag.split_once("://") {
        Some((_, rest)) => &rest[rest.find('/')?..],
        None => tag,
    };
    parse_request_path(path.split(['?', '#']).next()?).ok()
}

impl<S: Storage> Dav<'_, S> {
    /// The state the `If` header is evaluated against for `key`.
    async fn state(&self, key: &RelPath) -> State {
        let etag = match self.storage.stat(key).await {
            Ok(m) if m.kind == Kind::File => Some(crate::respond::etag(&m)),
            _ => None,
        };
        State {
            etag,
            tokens: self
                .locks
                .covering(key.segments())
                .into_iter()
                .map(|l| l.token)
                .collect(),
        }
    }

    /// The request's `If` header, evaluated: 400 if malformed, 412 if it
    /// does not hold. Returns it (or `None` without one).
    async fn evaluate_if(
        &self,
        value: Option<String>,
        key: &RelPath,
    ) -> Result<Option<IfHeader>, Error> {
        let Some(value) = value else {
            return Ok(None);
        };
        let h = IfHeader::parse(&value).map_err(|e| Error::status(400, e.to_string()))?;
        let own = self.state(key).await;
        let mut tagged = Vec::new();
        for tag in h.resources() {
            let st = match tag_key(tag) {
                Some(k) => Some(self.state(&k).await),
                None => None,
            };
            tagged.push((tag.to_string(), st));
        }
        let holds = h.holds(|res| match res {
            None => Some(own.clone()),
            Some(tag) => tagged
                .iter()
                .find(|(t, _)| t == tag)
                .and_then(|(_, s)| s.clone()),
        });
        if !holds {
            return Err(Error::status(
                412,
                "precondition failed: the If header does not hold",
            ));
        }
        Ok(Some(h))
    }

    /// The check before a write to each of `targets`: 412 when the `If`
    /// header fails, 423 when a lock on what changes was not submitted.
    pub(crate) async fn check_locks(
        &self,
        ex: &mut Exchange,
        targets: &[(&RelPath, Reach)],
    ) -> Result<(), Error> {
        let header = self.evaluate_if(if_value(ex), targets[0].0).await?;
        let submitted: Vec<&str> = header.iter().flat_map(|h| h.tokens()).collect();
        for (key, reach) in targets {
            let mut need = self.locks.covering(key.segments());
            if *reach >= Reach::Member && !key.is_root() {
                need.extend(self.locks.covering(key.parent()));
            }
            if *reach == Reach::Tree {
                need.extend(self.locks.below(key.segments()));
            }
            for l in &need {
                let held = submitted.iter().any(|t| {
                    *t == l.token
                        || (!l.exclusive
                            && need
                                .iter()
                                .any(|o| o.token == *t && !o.exclusive && o.root == l.root))
                });
                if !held {
                    return Err(Error::status(
                        423,
                        format!(
                            "locked: {} is locked; submit its lock token in an If header",
                            l.root_url
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// LOCK: a new lock (an unmapped URL becomes an empty file, 201), or a
    /// refresh (no body, the token in `If`).
    pub(super) async fn lock(&self, ex: &mut Exchange, key: &RelPath) -> Result<(), Error> {
        let timeout = parse_timeout(ex.header_str("timeout"));
        let body = read_xml_body(ex).await?;
        if body.iter().all(u8::is_ascii_whitespace) {
            let h = self.evaluate_if(if_value(ex), key).await?.ok_or_else(|| {
                Error::status(
                    400,
                    "a LOCK without a body refreshes: it needs If with the token",
                )
            })?;
            let tokens: Vec<String> = h.tokens().map(str::to_string).collect();
            for t in tokens {
                if let Some(l) = self.locks.refresh(&t, key.segments(), timeout) {
                    return send_lock(ex, 200, &l, false).await;
                }
            }
            return Err(Error::status(
                412,
                "no lock of the If header covers this resource",
            ));
        }
        let info = xml::parse_lockinfo(&body).map_err(|e| Error::status(400, e.to_string()))?;
        let infinite = match ex.header_str("depth").map(str::trim) {
            None => true,
            Some(d) if d.eq_ignore_ascii_case("infinity") => true,
            Some("0") => false,
            Some(_) => return Err(Error::status(400, "LOCK takes Depth 0 or infinity")),
        };
        let meta = match self.storage.stat(key).await {
            Ok(m) => Some(m),
            Err(StorageError::NotFound) => None,
            Err(e) => return Err(e.into()),
        };
        if meta.is_none() {
            // A new, empty file: its parent must exist, and the parent's
            // locks must be submitted.
            let parent = parent_of(key);
            if key.is_root() || key.trailing_slash() {
                return Err(Error::status(409, "only a file can be created by LOCK"));
            }
            match self.storage.stat(&parent).await {
                Ok(m) if m.kind == Kind::Dir => {}
                Ok(_) | Err(StorageError::NotFound) => {
                    return Err(Error::status(409, "the parent folder does not exist"))
                }
                Err(e) => return Err(e.into()),
            }
            self.check_locks(ex, &[(key, Reach::Member)]).await?;
        } else {
            self.evaluate_if(if_value(ex), key).await?;
        }
        let dir = meta.is_some_and(|m| m.kind == Kind::Dir);
        let lock = Lock {
            token: new_token(),
            root: key.segments().to_vec(),
            root_url: key.to_url(dir),
            infinite: infinite && dir,
            exclusive: info.exclusive,
            owner: info.owner,
            timeout,
            expires: Instant::now() + timeout,
        };
        let lock = match self.locks.lock(lock) {
            Ok(l) => l,
            Err(LockRefused::Conflict) => {
                return super::send_condition(ex, 423, "no-conflicting-lock").await
            }
            Err(LockRefused::Full) => {
                return Err(Error::status(
                    503,
                    "too many locks are held; try again later",
                ))
            }
        };
        if meta.is_none() {
            let made = async {
                let up = self.storage.create(key).await?;
                up.commit(None).await
            }
            .await;
            if let Err(e) = made {
                self.locks.unlock(&lock.token, key.segments());
                return Err(e.on_write(key).into());
            }
            return send_lock(ex, 201, &lock, true).await;
        }
        send_lock(ex, 200, &lock, true).await
    }

    /// UNLOCK: the lock named by `Lock-Token`, if it covers the resource.
    pub(super) async fn unlock(&self, ex: &mut Exchange, key: &RelPath) -> Result<(), Error> {
        let token = ex
            .header_str("lock-token")
            .map(|t| {
                t.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(|| Error::status(400, "UNLOCK needs a Lock-Token header"))?;
        if self.locks.unlock(&token, key.segments()) {
            return ex.send(Response::new(204), b"").await;
        }
        super::send_condition(ex, 409, "lock-token-matches-request-uri").await
    }
}

/// The `If` header's value, owned (the exchange is not held across awaits).
fn if_value(ex: &Exchange) -> Option<String> {
    ex.header_str("if").map(str::to_string)
}

/// The answer to a LOCK: the lock's discovery, and its token when new.
async fn send_lock(ex: &mut Exchange, status: u16, l: &Lock, new: bool) -> Result<(), Error> {
    let mut body = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:prop xmlns:D=\"DAV:\"><D:lockdiscovery>",
    );
    l.write_active(Instant::now(), &mut body);
    body.push_str("</D:lockdiscovery></D:prop>\n");
    let mut resp = Response::new(status).header("Content-Type", XML);
    if new {
        resp = resp.header("Lock-Token", format!("<{}>", l.token));
    }
    ex.send(resp, body.as_bytes()).await
}

#[cfg(test)]
mod tests {
    use super::tag_key;

    #[test]
    fn tags_name_paths() {
        assert_eq!(
            tag_key("http://h:1/a/b%20c").unwrap().to_url(false),
            "/a/b%20c"
        );
        assert_eq!(tag_key("/x/").unwrap().to_url(true), "/x/");
        assert!(tag_key("http://h").is_none());
        assert!(tag_key("/../x").is_none());
    }
}
