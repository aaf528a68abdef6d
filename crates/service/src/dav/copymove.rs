//! COPY and MOVE (RFC 4918 §9.8–9), DELETE of whole folders (§9.6) and
//! MKCOL (§9.3), on the storage's own operations: a MOVE is one
//! `Storage::rename`; a COPY writes each file through `Storage::create`,
//! so it is as atomic and durable as a PUT. Partial failures answer 207
//! with the members that failed.

use wirespeed_net::{Error, Exchange, Response};

use super::{decision, parent_of, send_multistatus, xml, Dav};
use crate::answers::{storage_answer, IntoAnswer as _};
use crate::locks::Reach;
use crate::path::{parse_request_path, RelPath};
use crate::policy::{Action, Principal};
use crate::respond::{has_body, WriteGuard};
use crate::storage::{Kind, Listing, Object, Storage, StorageError, Upload, Written};

/// The key a COPY's or MOVE's `Destination` names: an absolute path, or an
/// absolute URI whose authority is this server's `Host` (another server's
/// is 502, RFC 4918 §9.9.4). The control namespace and the root are 403.
pub(crate) fn destination(
    value: Option<&str>,
    host: Option<&str>,
    base: &str,
) -> Result<RelPath, Error> {
    let value = value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| Error::status(400, "COPY and MOVE need a Destination header"))?;
    let path = match value.split_once("://") {
        Some((scheme, rest)) if !scheme.contains('/') => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if !host.is_some_and(|h| h.eq_ignore_ascii_case(authority)) {
                return Err(Error::status(
                    502,
                    "the Destination is on another server: copies and moves stay on this one",
                ));
            }
            if path.is_empty() {
                "/"
            } else {
                path
            }
        }
        _ => value,
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    // Under a path prefix the client names paths with it; elsewhere on
    // the host is another server behind the same proxy.
    let path = wirespeed_net::strip_base(base, path).ok_or_else(|| {
        Error::status(
            502,
            format!("the Destination is outside {base}/: copies and moves stay on this server"),
        )
    })?;
    let key = parse_request_path(path).map_err(|e| match e {
        crate::path::PathError::Hidden => Error::status(403, "the Destination is a reserved path"),
        e => Error::status(400, format!("bad Destination: {e}")),
    })?;
    if key.is_root() {
        return Err(Error::status(403, "nothing may replace the root"));
    }
    Ok(key)
}

/// The deepest folder a COPY goes into below its source.
const MAX_COPY_DEPTH: usize = 64;

/// Buffer of one COPY read.
const COPY_CHUNK: usize = 1 << 20;

impl<S: Storage> Dav<'_, S> {
    /// MKCOL: one folder, whose parent exists (409 otherwise, 405 if
    /// something is there, 415 with a body).
    pub(super) async fn mkcol(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        who: Principal,
    ) -> Result<(), Error> {
        if has_body(ex) {
            ex.close_after_response();
            return Err(Error::status(415, "MKCOL takes no body"));
        }
        self.check_locks(ex, &[(key, Reach::Member)], who).await?;
        match self.storage.mkdir(key).await.map_err(|e| e.on_write(key)) {
            Ok(()) => {
                let resp = Response::new(201)
                    .header("Location", format!("{}{}", ex.base(), key.to_url(true)));
                ex.send(resp, b"").await
            }
            Err(StorageError::Exists) => {
                let resp = Response::new(405)
                    .header("Allow", super::ALLOW)
                    .header("Content-Type", "text/plain; charset=utf-8");
                ex.send(resp, b"something already exists at this path\n")
                    .await
            }
            Err(e) => Err(e.into_answer()),
        }
    }

    /// DELETE: a file, or a folder with everything in it; members that
    /// could not be removed are listed in a 207. `Depth: 0` (our own
    /// extension: RFC 4918 defines only infinity) removes a folder only if
    /// it is empty (409 otherwise): `wirespeed rm` without `-r` sends it.
    pub(super) async fn delete(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        who: Principal,
    ) -> Result<(), Error> {
        if key.is_root() {
            return Err(Error::status(403, "the root cannot be deleted"));
        }
        let only_empty = match ex.header_str("depth").map(str::trim) {
            None => false,
            Some(d) if d.eq_ignore_ascii_case("infinity") => false,
            Some("0") => true,
            Some(_) => return Err(Error::status(400, "DELETE takes Depth infinity (or 0)")),
        };
        let meta = self.storage.stat(key).await.map_err(storage_answer)?;
        self.check_locks(ex, &[(key, Reach::Tree)], who).await?;
        // With a trash, what the principal may delete whole goes there in
        // one piece; else member by member below.
        let whole = meta.kind != Kind::Dir || !only_empty;
        if self.cfg.trash_days > 0 && whole && self.deletable_whole(key, &meta, who).await {
            match crate::trash::discard(self.storage, self.cfg, key, &meta).await {
                Ok(()) => {
                    self.forget_locks(key).await;
                    return ex.send(Response::new(204), b"").await;
                }
                // A storage without a trash removes a folder member by
                // member (below), not in one piece.
                Err(StorageError::NotEmpty) => {}
                Err(e) => return Err(e.on_write(key).into_answer()),
            }
        }
        if only_empty {
            self.storage.delete(key).await.map_err(|e| match e {
                StorageError::NotEmpty => Error::status(
                    409,
                    "the folder is not empty (Depth: 0 removes only an empty one; \
                         wirespeed rm -r removes it with everything in it)",
                ),
                e => e.on_write(key).into_answer(),
            })?;
            self.forget_locks(key).await;
            return ex.send(Response::new(204), b"").await;
        }
        let failed = self.remove_tree(key, who).await?;
        self.forget_locks(key).await;
        self.answer_failures(ex, failed, 204).await
    }

    /// Whether `who` may delete `key` and everything below it (no hidden
    /// member, `d` at each): then it can go to the trash in one piece.
    async fn deletable_whole(
        &self,
        key: &RelPath,
        meta: &crate::storage::Meta,
        who: Principal,
    ) -> bool {
        if meta.kind != Kind::Dir {
            return true;
        }
        let mut folders = vec![key.clone()];
        while let Some(dir) = folders.pop() {
            let Ok(mut listing) = self.storage.list(&dir).await else {
                return false;
            };
            while let Ok(Some(batch)) = listing.next_batch().await {
                for e in batch {
                    let Ok(child) = dir.join(&e.name) else {
                        return false;
                    };
                    if self.policy.hides_name(&e.name)
                        || !self.policy.rights(who, &child).may_delete()
                    {
                        return false;
                    }
                    if e.meta.kind == Kind::Dir && !self.storage.is_symlink(&child).await {
                        folders.push(child);
                    }
                }
            }
        }
        true
    }

    /// 207 listing `failed`, or `ok` when nothing failed.
    async fn answer_failures(
        &self,
        ex: &mut Exchange,
        failed: Vec<(RelPath, u16)>,
        ok: u16,
    ) -> Result<(), Error> {
        if failed.is_empty() {
            return ex.send(Response::new(ok), b"").await;
        }
        let mut text = String::new();
        for (k, status) in &failed {
            let href = format!("{}{}", ex.base(), k.to_url(k.trailing_slash()));
            xml::status_response(&href, *status, &mut text);
        }
        send_multistatus(ex, &text).await
    }

    /// Remove `key` and, for a folder, all below it (children first;
    /// symlinks are removed, never followed).
    /// `Err` when the top itself fails and nothing below did (a plain
    /// error answer); otherwise the members that failed.
    async fn remove_tree(
        &self,
        key: &RelPath,
        who: Principal,
    ) -> Result<Vec<(RelPath, u16)>, Error> {
        // Deleted first, opened only when not empty: a symlink (even to a
        // folder) is removed itself, never what it leads to.
        match self.storage.delete(key).await {
            Ok(()) => return Ok(Vec::new()),
            Err(StorageError::NotEmpty) => {}
            Err(e) => return Err(e.on_write(key).into_answer()),
        }
        let mut failed: Vec<(RelPath, u16)> = Vec::new();
        // (folder, listed): a folder is removed when met the second time.
        let mut stack = vec![(key.clone(), false)];
        let mut failed_below: Vec<RelPath> = Vec::new();
        while let Some((dir, listed)) = stack.pop() {
            if listed {
                if failed_below
                    .iter()
                    .any(|f| f.segments().starts_with(dir.segments()))
                {
                    continue; // not empty: its failed member is reported
                }
                match self.storage.delete(&dir).await {
                    // On S3 a folder without a marker is gone with its
                    // last member.
                    Ok(()) | Err(StorageError::NotFound) => {}
                    Err(e) => {
                        if dir == *key && failed.is_empty() {
                            return Err(e.on_write(key).into_answer());
                        }
                        failed.push((dir.clone(), e.status()));
                        failed_below.push(dir);
                    }
                }
                continue;
            }
            stack.push((dir.clone(), true));
            let mut listing = match self.storage.list(&dir).await {
                Ok(l) => l,
                Err(e) => {
                    failed.push((dir.clone(), e.status()));
                    failed_below.push(dir);
                    continue;
                }
            };
            loop {
                let batch = match listing.next_batch().await {
                    Ok(Some(b)) => b,
                    Ok(None) => break,
                    Err(e) => {
                        failed.push((dir.clone(), e.status()));
                        failed_below.push(dir.clone());
                        break;
                    }
                };
                for e in batch {
                    let Ok(child) = dir.join(&e.name) else {
                        continue;
                    };
                    if self.policy.hides_name(&e.name) {
                        // As if absent, so kept: its folder stays, reported
                        // without naming it.
                        if !failed_below.contains(&dir) {
                            failed.push((dir.clone(), 403));
                            failed_below.push(dir.clone());
                        }
                        continue;
                    }
                    // A member the principal may not delete stays (403),
                    // and so do the folders holding it.
                    if !self.policy.rights(who, &child).may_delete() {
                        failed.push((child.clone(), 403));
                        failed_below.push(child);
                        continue;
                    }
                    let removed = if e.meta.kind == Kind::File {
                        crate::trash::discard(self.storage, self.cfg, &child, &e.meta).await
                    } else {
                        self.storage.delete(&child).await
                    };
                    match removed {
                        Ok(()) | Err(StorageError::NotFound) => {}
                        Err(StorageError::NotEmpty) => stack.push((dir_key(child), false)),
                        Err(err) => {
                            failed.push((child.clone(), err.status()));
                            failed_below.push(child);
                        }
                    }
                }
            }
        }
        Ok(failed)
    }

    /// COPY (`Depth: 0` or infinity) or MOVE to `Destination`, honouring
    /// `Overwrite` (an existing destination is removed first: 204; new: 201).
    pub(super) async fn copy_or_move(
        &self,
        ex: &mut Exchange,
        key: &RelPath,
        who: Principal,
        moving: bool,
    ) -> Result<(), Error> {
        let to = destination(
            ex.header_str("destination"),
            ex.header_str("host"),
            ex.base(),
        )?;
        // Admitted at the source: the destination's name is asked here.
        crate::answers::refuse_hidden(self.policy.hidden(), &to)?;
        crate::through_links::check_real(self.storage, self.policy, who, Action::Create, &to)
            .await?;
        let overwrite = match ex.header_str("overwrite").map(str::trim) {
            None | Some("T") | Some("t") => true,
            Some("F") | Some("f") => false,
            Some(_) => return Err(Error::status(400, "Overwrite must be T or F")),
        };
        let deep = match ex.header_str("depth").map(str::trim) {
            None => true,
            Some(d) if d.eq_ignore_ascii_case("infinity") => true,
            Some("0") if !moving => false,
            Some(_) => {
                return Err(Error::status(
                    400,
                    "Depth must be infinity (or 0 for a COPY)",
                ))
            }
        };
        if key.is_root() && moving {
            return Err(Error::status(403, "the root cannot be moved"));
        }
        if to.segments() == key.segments() {
            return Err(Error::status(
                403,
                "the source and the Destination are the same",
            ));
        }
        let src = self.storage.stat(key).await.map_err(storage_answer)?;
        if src.kind == Kind::Dir && to.segments().starts_with(key.segments()) {
            return Err(Error::status(409, "a folder cannot go inside itself"));
        }
        if !moving && src.kind == Kind::Dir && self.storage.is_symlink(key).await {
            return Err(Error::status(
                403,
                "a linked folder is not copied (its link may lead back into the copy)",
            ));
        }
        // The destination is a new name (w), or a replaced one (w and d).
        decision(self.policy.decide(who, Action::Create, &to))?;
        if moving && src.kind == Kind::Dir {
            // A folder's MOVE takes every member away from where it is and
            // puts it where it lands: `d` on each at the source, `w` on each
            // at the destination. The rules answer for a whole tree at once
            // (`Policy::rights_within`); a refusal changes nothing.
            if !self.policy.rights_within(who, key).may_delete() {
                return Err(Error::status(
                    403,
                    "moving this folder needs the d right on everything in it, and a folder \
                     inside it gives you less; nothing was moved",
                ));
            }
            if !self.policy.rights_within(who, &to).may_write() {
                return Err(Error::status(
                    403,
                    "the Destination has folders below it where you may not write, so this \
                     folder cannot land there; nothing was moved",
                ));
            }
        }
        let guard = WriteGuard::new(self.policy, who, &to);
        let parent = parent_of(&to);
        match self.storage.stat(&parent).await {
            Ok(m) if m.kind == Kind::Dir => {}
            Ok(_) | Err(StorageError::NotFound) | Err(StorageError::NotDir) => {
                return Err(Error::status(
                    409,
                    "the Destination's parent folder does not exist",
                ))
            }
            Err(e) => return Err(e.into_answer()),
        }
        let (existing, over_file) = match self.storage.stat(&to).await {
            Ok(m) => (true, m.kind == Kind::File && src.kind == Kind::File),
            Err(StorageError::NotFound) => (false, false),
            Err(e) => return Err(e.into_answer()),
        };
        if existing && !overwrite {
            return Err(Error::status(
                412,
                "the Destination exists and Overwrite is F: nothing was changed",
            ));
        }
        if existing && !guard.may_replace() {
            return Err(guard.refusal());
        }
        let mut targets = vec![(&to, if existing { Reach::Tree } else { Reach::Member })];
        if moving {
            targets.insert(0, (key, Reach::Tree));
        }
        self.check_locks(ex, &targets, who).await?;
        if moving {
            let cfg = self.cfg;
            cfg.quotas
                .ensure_move(self.storage, cfg, key, &to, &src)
                .await?;
        }
        // With a trash, a file replaced goes there first (the name is
        // empty for that moment).
        let trashed = over_file && self.cfg.trash_days > 0;
        if trashed {
            let old = self.storage.stat(&to).await.map_err(storage_answer)?;
            crate::trash::discard(self.storage, self.cfg, &to, &old)
                .await
                .map_err(|e| e.on_write(&to).into_answer())?;
        }
        let over_file = over_file && !trashed;
        // A file over a file is replaced atomically by the rename or the
        // copy's commit; anything else is removed first.
        if existing && !over_file && !trashed {
            let failed = self.remove_tree(&to, who).await?;
            if !failed.is_empty() {
                return self.answer_failures(ex, failed, 204).await;
            }
            self.forget_locks(&to).await;
        }
        let dir = src.kind == Kind::Dir;
        let failed = if moving {
            match self.storage.rename(key, &to, over_file).await {
                Ok(_) => {
                    self.forget_locks(&to).await;
                    self.forget_locks(key).await;
                    Vec::new()
                }
                Err(StorageError::Exists) => {
                    return Err(Error::status(412, "the Destination appeared meanwhile"))
                }
                Err(e) => return Err(e.on_write(key).into_answer()),
            }
        } else {
            self.copy_tree(key, &to, dir, deep, who).await?
        };
        if !failed.is_empty() {
            return self.answer_failures(ex, failed, 201).await;
        }
        let status = if existing { 204 } else { 201 };
        let mut resp = Response::new(status);
        if !existing {
            resp = resp.header("Location", format!("{}{}", ex.base(), to.to_url(dir)));
        }
        ex.send(resp, b"").await
    }

    /// Copy a file, or a folder (its members too when `deep`), with the
    /// dead properties. `Err` when the top fails; else the members that did.
    async fn copy_tree(
        &self,
        from: &RelPath,
        to: &RelPath,
        dir: bool,
        deep: bool,
        who: Principal,
    ) -> Result<Vec<(RelPath, u16)>, Error> {
        if !dir {
            self.copy_file(from, to).await?;
            return Ok(Vec::new());
        }
        self.storage
            .mkdir(to)
            .await
            .map_err(|e| e.on_write(to))
            .map_err(storage_answer)?;
        self.copy_props(from, to).await;
        let mut failed = Vec::new();
        if !deep {
            return Ok(failed);
        }
        let mut stack = vec![(from.clone(), to.clone())];
        while let Some((src, dst)) = stack.pop() {
            let mut listing = match self.storage.list(&src).await {
                Ok(l) => l,
                Err(e) => {
                    failed.push((dst, e.status()));
                    continue;
                }
            };
            while let Some(batch) = listing.next_batch().await.map_err(storage_answer)? {
                for e in batch {
                    if self.policy.hides_name(&e.name) {
                        continue;
                    }
                    let (Ok(s), Ok(d)) = (src.join(&e.name), dst.join(&e.name)) else {
                        continue;
                    };
                    // Unreadable members are left out (where a symlink leads
                    // too); unwritable ones fail.
                    if !crate::through_links::reads_real(self.storage, self.policy, who, &s).await {
                        continue;
                    }
                    if !self.policy.rights(who, &d).may_write() {
                        failed.push((d, 403));
                        continue;
                    }
                    if e.meta.kind == Kind::Dir
                        && (s.segments().len() - from.segments().len() > MAX_COPY_DEPTH
                            || self.storage.is_symlink(&s).await)
                    {
                        // A linked folder is not followed (a link to an
                        // ancestor would copy forever), nor a tree too deep.
                        failed.push((dir_key(d), 508));
                    } else if e.meta.kind == Kind::Dir {
                        match self.storage.mkdir(&d).await {
                            Ok(()) => {
                                self.copy_props(&s, &d).await;
                                stack.push((s, d));
                            }
                            Err(err) => failed.push((dir_key(d), err.status())),
                        }
                    } else if let Err(err) = self.copy_file(&s, &d).await {
                        failed.push((d, err.http_status()));
                    }
                }
            }
        }
        Ok(failed)
    }

    /// One file's bytes through an upload (atomic and durable like a PUT).
    async fn copy_file(&self, from: &RelPath, to: &RelPath) -> Result<(), Error> {
        let mut obj = self.storage.open(from).await.map_err(storage_answer)?;
        let size = obj.meta().size;
        // A copy writes as an upload does: the same size limit and room.
        if let Some(max) = self.cfg.max_body.filter(|&max| size > max) {
            return Err(Error::status(
                413,
                format!(
                    "{from} is {size} bytes, more than the limit of {max} for one file \
                     (serve --max-body); it was not copied"
                ),
            ));
        }
        crate::respond::ensure_room(self.storage, Some(size)).await?;
        let cfg = self.cfg;
        cfg.quotas.ensure(self.storage, cfg, to, Some(size)).await?;
        let mut up = self
            .storage
            .create(to)
            .await
            .map_err(|e| e.on_write(to))
            .map_err(storage_answer)?;
        let mut buf = vec![0u8; (size as usize).clamp(1, COPY_CHUNK)];
        let mut pos = 0u64;
        while pos < size {
            let want = ((size - pos) as usize).min(buf.len());
            let n = match obj.read_at(pos, &mut buf[..want]).await {
                Ok(0) => {
                    up.abort().await;
                    return Err(Error::status(500, "the file shrank while it was copied"));
                }
                Ok(n) => n,
                Err(e) => {
                    up.abort().await;
                    return Err(e.into_answer());
                }
            };
            if let Err(e) = up.write(&buf[..n]).await {
                up.abort().await;
                return Err(e.on_write(to).into_answer());
            }
            pos += n as u64;
        }
        let written: Written = up
            .commit(obj.stored_sha256())
            .await
            .map_err(|e| e.on_write(to))
            .map_err(storage_answer)?;
        let _ = written;
        self.copy_props(from, to).await;
        Ok(())
    }

    /// Dead properties go with a copy (best effort: a backend without them
    /// has none to copy).
    async fn copy_props(&self, from: &RelPath, to: &RelPath) {
        if let Ok(Some(blob)) = self.storage.dead_props(from).await {
            if let Err(e) = self.storage.set_dead_props(to, Some(&blob)).await {
                tracing::debug!(error = %e, path = %to, "properties not copied");
            }
        }
    }
}

/// A folder's key as a folder (its URL ends in `/`).
fn dir_key(key: RelPath) -> RelPath {
    parse_request_path(&key.to_url(true)).unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::destination;

    #[test]
    fn destinations() {
        let d = |v: &str| destination(Some(v), Some("h:1"), "").map(|k| k.to_url(false));
        assert_eq!(d("http://h:1/a%20b").unwrap(), "/a%20b");
        assert_eq!(d("/x/y").unwrap(), "/x/y");
        assert_eq!(d("http://other/x").unwrap_err().http_status(), 502);
        assert_eq!(d("/").unwrap_err().http_status(), 403);
        assert_eq!(d("/-/x").unwrap_err().http_status(), 403);
        assert_eq!(d("/../x").unwrap_err().http_status(), 400);
        assert_eq!(destination(None, None, "").unwrap_err().http_status(), 400);
        // Under a path prefix: named with it, and nothing outside it.
        let p = |v: &str| destination(Some(v), Some("h:1"), "/files").map(|k| k.to_url(false));
        assert_eq!(p("http://h:1/files/a%20b").unwrap(), "/a%20b");
        assert_eq!(p("/files/x/y").unwrap(), "/x/y");
        assert_eq!(p("http://h:1/a").unwrap_err().http_status(), 502);
        assert_eq!(p("/filesx/a").unwrap_err().http_status(), 502);
        assert_eq!(p("/files/").unwrap_err().http_status(), 403);
    }
}
