//! `POST /dir/` with `multipart/form-data`: browser and `curl -F` uploads.
//!
//! Each file part (one with a `filename`) streams into its own storage
//! upload for `dir/<sanitized filename>`, hashed as it goes; the other parts
//! are form fields, collected in memory under a small total budget.
//!
//! All or nothing: the uploads stay open (temporary files) until the close
//! delimiter has been seen and the whole body read; only then are they
//! committed, in body order. Any error before that aborts every one of
//! them. Consequences worth knowing:
//! - a file replaced by the POST changes only once the whole request has
//!   arrived, and all the form's files appear together at the end;
//! - the commits themselves are separate renames: if one fails (disk full,
//!   a directory appeared at the name meanwhile), files committed before it
//!   stay and the ones after it are aborted; the error says so.
//!
//! Answer: `201` (or `200` if the form carried no file) with
//! `{"files": [{"name", "path", "size", "sha256", "created"}], "fields": {name: value}}`.
//! `sha256` is present when the request asked for digests (`Want-Repr-Digest:
//! sha-256=…`, or the server runs with `--digest always`), in lowercase hex: this is a JSON body for people and scripts,
//! where hex is what `sha256sum` prints (the RFC 9530 base64 form stays in
//! the `Repr-Digest` header of single-file uploads). A field name sent more
//! than once maps to an array of its values, in order. With `?format=html`
//! (for browser forms) the answer is `303 See Other` back to the listing.

use serde_json::{Map, Value};
use wirespeed_multipart::{Limits, PartHeaders};
use wirespeed_net::{Error, Exchange, Response};

use super::{Checks, Feeder, Parts};
use crate::answers::storage_answer;
use crate::digest::hex;
use crate::path::{RelPath, MAX_NAME_BYTES};
use crate::respond::WriteGuard;
use crate::storage::{Storage, Upload, Written};
use crate::upload::{HashMode, StoredHasher};

/// Files per form. Every file is an open temporary file until the end of
/// the request (that is what makes the form all-or-nothing), so this bounds
/// the descriptors one request can hold.
pub(crate) const MAX_FILES: usize = 100;
/// All form fields together: names, values and [`FIELD_OVERHEAD`] per
/// field (the parser bounds each value and each header block).
pub(crate) const MAX_FIELDS_BYTES: usize = 1024 * 1024;
/// Form fields (parts without a filename) per form. The parser's part limit
/// is the same today; this keeps the field map bounded if that one changes.
pub(crate) const MAX_FIELDS: usize = 1000;
/// What one field costs besides its name and value (map entry, `String`
/// headers, JSON value), charged against [`MAX_FIELDS_BYTES`] so that many
/// empty fields are not free.
pub(crate) const FIELD_OVERHEAD: usize = 64;

/// How to answer a successful form upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    /// 303 back to the directory listing.
    Html,
}

/// The stored name for a part's `filename`, or why there is none.
///
/// Browsers send a bare name, but old ones (and some tools) send a full
/// client path (`C:\Users\me\a.txt`), so everything up to the last `/` or
/// `\` is dropped. Control characters become `_` (they are legal on Linux
/// but break terminals, logs and other clients' filesystems). Names that
/// are empty after this, too long, or the `-` control namespace at the root
/// are refused, never silently renamed: the client should learn that its
/// name was not usable. Everything else a key segment must satisfy (`.`,
/// `..`, our temporary-file prefix) is checked once, by `RelPath::join`.
pub(crate) fn sanitize_filename(raw: &str, at_root: bool) -> Result<String, String> {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let name: String = base
        .chars()
        .map(|c| if c.is_control() { '_' } else { c })
        .collect();
    let name = name.trim();
    if name.is_empty() {
        return Err(format!(
            "file name {raw:?} is empty once its path is removed"
        ));
    }
    if at_root && name == "-" {
        return Err(format!("file name {raw:?} is reserved"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "file name {:?}... is longer than {MAX_NAME_BYTES} bytes",
            name.chars().take(40).collect::<String>()
        ));
    }
    Ok(name.to_owned())
}

struct FileSlot<U> {
    name: String,
    key: RelPath,
    up: U,
    hasher: StoredHasher,
    size: u64,
}

enum Current {
    None,
    File(usize),
    Field {
        name: Option<String>,
        value: Vec<u8>,
    },
    /// A file input left empty: browsers send `filename=""` and no data.
    NoFile,
}

struct Form<'a, S: Storage> {
    storage: &'a S,
    guard: &'a WriteGuard,
    dir: RelPath,
    files: Vec<FileSlot<S::Upload>>,
    fields: Map<String, Value>,
    fields_count: usize,
    fields_bytes: usize,
    cur: Current,
    hash: Option<HashMode>,
}

impl<S: Storage> Form<'_, S> {
    /// Charge `n` bytes to the fields budget.
    fn charge_fields(&mut self, n: usize) -> Result<(), Error> {
        self.fields_bytes = self.fields_bytes.saturating_add(n);
        if self.fields_bytes > MAX_FIELDS_BYTES {
            return Err(Error::status(
                413,
                format!("form fields exceed {MAX_FIELDS_BYTES} bytes in total"),
            ));
        }
        Ok(())
    }

    fn add_field(&mut self, name: String, value: Vec<u8>) {
        let value = Value::String(String::from_utf8_lossy(&value).into_owned());
        match self.fields.get_mut(&name) {
            None => {
                self.fields.insert(name, value);
            }
            Some(Value::Array(a)) => a.push(value),
            Some(prev) => {
                let first = prev.take();
                *prev = Value::Array(vec![first, value]);
            }
        }
    }

    async fn abort_all(&mut self) {
        for f in self.files.drain(..) {
            f.up.abort().await;
        }
    }
}

impl<S: Storage> Parts for Form<'_, S> {
    async fn start(&mut self, h: PartHeaders) -> Result<(), Error> {
        let Some(raw) = h.filename else {
            self.fields_count += 1;
            if self.fields_count > MAX_FIELDS {
                return Err(Error::status(
                    413,
                    format!("more than {MAX_FIELDS} fields in one form"),
                ));
            }
            let name_len = h.name.as_ref().map_or(0, String::len);
            self.charge_fields(name_len + FIELD_OVERHEAD)?;
            self.cur = Current::Field {
                name: h.name,
                value: Vec::new(),
            };
            return Ok(());
        };
        if raw.is_empty() {
            self.cur = Current::NoFile;
            return Ok(());
        }
        let name =
            sanitize_filename(&raw, self.dir.is_root()).map_err(|m| Error::status(400, m))?;
        if self.files.iter().any(|f| f.name == name) {
            return Err(Error::status(
                400,
                format!("two files named {name:?} in one form"),
            ));
        }
        if self.files.len() >= MAX_FILES {
            return Err(Error::status(
                413,
                format!("more than {MAX_FILES} files in one form"),
            ));
        }
        let key = self
            .dir
            .join(&name)
            .map_err(|e| Error::status(400, format!("file name {raw:?}: {e}")))?;
        // The guard refuses a hidden name (the policy hides it).
        let up = self.guard.create(self.storage, &key, None).await?;
        self.files.push(FileSlot {
            name,
            key,
            up,
            hasher: StoredHasher::new(self.hash),
            size: 0,
        });
        self.cur = Current::File(self.files.len() - 1);
        Ok(())
    }

    async fn data(&mut self, d: &[u8]) -> Result<(), Error> {
        match &mut self.cur {
            Current::File(i) => {
                let f = &mut self.files[*i];
                // No per-file limit: a file is part of the body, which
                // `limit_body` already bounds (413).
                f.size += d.len() as u64;
                f.up.write(d).await.map_err(storage_answer)?;
                f.hasher.wrote(d, &mut f.up);
            }
            Current::Field { .. } => {
                self.charge_fields(d.len())?;
                if let Current::Field { value, .. } = &mut self.cur {
                    value.extend_from_slice(d);
                }
            }
            Current::NoFile if !d.is_empty() => {
                return Err(Error::status(
                    400,
                    "a file part with an empty filename carries data",
                ));
            }
            Current::NoFile | Current::None => {}
        }
        Ok(())
    }

    async fn end(&mut self) -> Result<(), Error> {
        // A field without a name cannot be reported; it is dropped.
        if let Current::Field {
            name: Some(name),
            value,
        } = std::mem::replace(&mut self.cur, Current::None)
        {
            self.add_field(name, value);
        }
        Ok(())
    }
}

/// `POST /dir/` with a multipart/form-data body.
pub(crate) async fn post<S: Storage>(
    storage: &S,
    guard: &WriteGuard,
    ex: &mut Exchange,
    dir: RelPath,
    boundary: &str,
    format: Format,
    checks: Checks,
) -> Result<(), Error> {
    if !dir.trailing_slash() {
        let hint = format!("{}{}", ex.base(), dir.to_url(true));
        return Err(Error::status(
            400,
            format!("form uploads go to a directory: POST {hint}"),
        ));
    }
    let Checks { hash, mut digest } = checks;
    let limits = Limits::default();
    let mut feeder = Feeder::new(boundary, limits)?;
    let mut form = Form {
        storage,
        guard,
        dir: dir.clone(),
        files: Vec::new(),
        fields: Map::new(),
        fields_count: 0,
        fields_bytes: 0,
        cur: Current::None,
        hash,
    };
    let received: Result<(), Error> = async {
        while let Some(piece) = ex.read_body().await? {
            digest.update(piece);
            feeder.feed(piece, &mut form).await?;
        }
        feeder.finish()?;
        digest.verify()
    }
    .await;
    if let Err(e) = received {
        form.abort_all().await;
        return Err(e);
    }

    // Every digest before any commit: a failure here still stores nothing.
    let mut sums = Vec::with_capacity(form.files.len());
    let mut failed = None;
    for f in &mut form.files {
        match f.hasher.finish(f.size).await {
            Ok(sum) => sums.push(sum),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if let Some(e) = failed {
        form.abort_all().await;
        return Err(e);
    }
    let mut files = Vec::with_capacity(form.files.len());
    let mut slots = std::mem::take(&mut form.files).into_iter().zip(sums);
    while let Some((f, sum)) = slots.next() {
        match f.up.commit(sum).await {
            Ok(written) => {
                let mut file = serde_json::json!({
                    "name": f.name,
                    "path": format!("{}{}", ex.base(), f.key.to_url(false)),
                    "size": f.size,
                    "created": written == Written::Created,
                });
                if let Some(sum) = &sum {
                    file["sha256"] = Value::String(hex(sum));
                }
                files.push(file);
            }
            Err(e) => {
                let e = e.on_write(&f.key);
                for (rest, _) in slots {
                    rest.up.abort().await;
                }
                let done: Vec<&str> = files.iter().filter_map(|v| v["name"].as_str()).collect();
                tracing::warn!(error = %e, committed = ?done, "form upload failed while committing");
                let status = e.status();
                let guarded = form.guard.explain(Error::status(status, ""));
                let (status, why) = match guarded.http_status() {
                    403 | 423 => (guarded.http_status(), guarded.to_string()),
                    _ if status >= 500 => (status, "storage error".to_string()),
                    _ => (status, e.to_string()),
                };
                return Err(Error::status(
                    status,
                    format!(
                        "storing {:?} failed ({}); already stored from this form: {:?}",
                        f.name, why, done
                    ),
                ));
            }
        }
    }
    let any = !files.is_empty();
    if format == Format::Html {
        let resp = Response::new(303)
            .header("Location", format!("{}{}", ex.base(), dir.to_url(true)))
            .header("Content-Type", "text/plain; charset=utf-8");
        return ex.send(resp, b"uploaded\n").await;
    }
    let body = serde_json::json!({ "files": files, "fields": Value::Object(std::mem::take(&mut form.fields)) });
    let mut text = serde_json::to_vec(&body).map_err(|e| Error::status(500, e.to_string()))?;
    text.push(b'\n');
    let resp = Response::new(if any { 201 } else { 200 })
        .header("Content-Type", "application/json")
        .header("Cache-Control", "no-store");
    ex.send(resp, &text).await
}
