//! Driving the real server for the model test and the regressions: a
//! rules file on disk (reloaded as SIGHUP does), users signing in with
//! HTTP Basic, share links minted over `POST /-/shares`, the `--token`,
//! and what the server's answers and the disk say afterwards.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use wirespeed_service::policy::shares::DEFAULT_MAX_EXPIRY;
use wirespeed_service::policy::{password, Shares};
use wirespeed_service::{Access, S3Config, S3Storage, ServiceConfig, Users};

use super::model::{Node, Tree};
use crate::common::{Resp, TestServer};

pub const TOKEN: &str = "model-token";
pub const KEY: [u8; 32] = [7; 32];

/// Each name's password hash, made once (argon2id is slow on purpose).
pub fn hash_of(user: &str) -> String {
    static HASHES: OnceLock<std::sync::Mutex<std::collections::HashMap<String, String>>> =
        OnceLock::new();
    let map = HASHES.get_or_init(Default::default);
    let mut map = map.lock().unwrap();
    map.entry(user.to_string())
        .or_insert_with(|| password::hash(format!("{user}-pw").as_bytes()).unwrap())
        .clone()
}

pub fn basic(user: &str) -> String {
    let raw = format!("{user}:{user}-pw");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// Who sends a request, as the server sees it.
#[derive(Clone, Debug)]
pub enum As {
    Anyone,
    User(String),
    Token,
    /// A share link's `share=` value, in the query.
    Link(String),
    /// The same value in the `X-Wirespeed-Share` header (how rclone and
    /// other tools that keep no query carry a link).
    LinkHeader(String),
}

/// A server with a rules file, share links and a `--token`.
pub struct Site {
    pub server: TestServer,
    pub users: Arc<Users>,
    pub shares: Arc<Shares>,
    pub rules_file: PathBuf,
    /// The bucket when the storage is S3 (each restart takes a new prefix).
    s3: Option<S3Config>,
    restarts: u32,
    /// `serve --path-prefix`: every request goes below it, and every path
    /// the server names comes back below it.
    pub prefix: Option<&'static str>,
    /// The storage was last seen holding the tree every operation starts
    /// from (so the next one need not make it again: on S3 that is many
    /// requests).
    pub clean: bool,
    /// The folder's search index (none on S3).
    pub search: Option<Arc<wirespeed_service::search_index::Search>>,
    _dir: tempfile::TempDir,
}

fn config(users: &Arc<Users>, shares: &Arc<Shares>) -> ServiceConfig {
    ServiceConfig {
        access: Access::new([TOKEN], false),
        users: Some(users.clone()),
        shares: Some(shares.clone()),
        // As `serve` runs by default: what a DELETE or an overwrite removes
        // goes to the trash, and the trash routes are judged too.
        trash_days: 30,
        ..ServiceConfig::default()
    }
}

/// The server over a temporary folder, or over `s3`'s bucket below a
/// prefix of its own (`n`).
fn serve(
    users: &Arc<Users>,
    shares: &Arc<Shares>,
    s3: Option<&S3Config>,
    n: u32,
    prefix: Option<&str>,
) -> Served {
    let cfg = config(users, shares);
    // Resumable uploads on: a tus creation or a final joining parts is
    // one more way to write a name.
    // Every principal sends from 127.0.0.1: no per-address cap on parts.
    let ucfg = wirespeed_service::UploadsConfig {
        max_partials_per_client: usize::MAX,
        ..Default::default()
    };
    match (s3, prefix) {
        (None, None) => {
            let (s, search) = TestServer::with_search_and_uploads(cfg, ucfg);
            (s, Some(search))
        }
        (None, Some(p)) => (TestServer::with_uploads_under(cfg, ucfg, Some(p)), None),
        (Some(s3), _) => {
            // A prefix no other site or restart used: the bucket keeps
            // locks and the trash between servers.
            static SERVED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let k = SERVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut c = s3.clone();
            c.prefix = format!("{}-{n}-{k}", s3.prefix);
            let storage = S3Storage::new(&c).unwrap();
            (
                TestServer::with_uploads_on_under(storage, cfg, ucfg, prefix),
                None,
            )
        }
    }
}

type Served = (
    TestServer,
    Option<Arc<wirespeed_service::search_index::Search>>,
);

impl Site {
    /// A server over an empty root with the rules file `text`.
    pub fn start(text: &str) -> Site {
        Site::start_on(text, None)
    }

    /// [`Site::start`] over `s3`'s bucket when given.
    pub fn start_on(text: &str, s3: Option<S3Config>) -> Site {
        Site::start_under(text, s3, None)
    }

    /// [`Site::start_on`], served under `prefix` when given.
    pub fn start_under(text: &str, s3: Option<S3Config>, prefix: Option<&'static str>) -> Site {
        let dir = wirespeed_testkit::fs::tempdir();
        let rules_file = dir.path().join("users.toml");
        std::fs::write(&rules_file, text).unwrap();
        let users = Arc::new(
            Users::load(&rules_file).unwrap_or_else(|e| panic!("rules refused: {e}\n{text}")),
        );
        let shares = Arc::new(Shares::new(KEY, DEFAULT_MAX_EXPIRY));
        let (server, search) = serve(&users, &shares, s3.as_ref(), 0, prefix);
        Site {
            server,
            search,
            users,
            shares,
            rules_file,
            s3,
            restarts: 0,
            prefix,
            clean: false,
            _dir: dir,
        }
    }

    /// A new server (fresh locks; on S3 a new prefix, since locks are
    /// kept in the bucket) with the same rules, links and table.
    pub fn restart(&mut self) {
        self.restarts += 1;
        self.clean = false;
        (self.server, self.search) = serve(
            &self.users,
            &self.shares,
            self.s3.as_ref(),
            self.restarts,
            self.prefix,
        );
    }

    pub fn on_s3(&self) -> bool {
        self.s3.is_some()
    }

    /// Empty the storage, then make `tree` there: on the folder directly,
    /// on S3 through the server as the token holder.
    pub fn reset(&self, tree: &Tree) {
        if !self.on_s3() {
            return reset(self.root(), tree);
        }
        for (name, dir) in self.list_as_token("/") {
            let p = if dir {
                format!("/{name}/")
            } else {
                format!("/{name}")
            };
            let r = self.send(&As::Token, "DELETE", &p, &[], b"");
            assert!(
                r.status == 204 || r.status == 404,
                "reset: DELETE {p}: {} {}",
                r.status,
                r.text()
            );
        }
        for (k, n) in tree {
            let r = match n {
                Node::Dir => self.send(&As::Token, "MKCOL", &format!("/{k}/"), &[], b""),
                Node::File(c) => self.send(&As::Token, "PUT", &format!("/{k}"), &[], c.as_bytes()),
                Node::Link(_) => panic!("no symlinks on S3"),
            };
            assert!(
                (200..300).contains(&r.status),
                "reset: {k}: {} {}",
                r.status,
                r.text()
            );
        }
    }

    /// What is stored: the folder walked directly, or S3 listed and read
    /// through the server as the token holder.
    pub fn walk(&self) -> Tree {
        if !self.on_s3() {
            return walk(self.root());
        }
        let mut out = Tree::new();
        let mut stack = vec![String::new()];
        while let Some(k) = stack.pop() {
            let folder = if k.is_empty() {
                "/".to_string()
            } else {
                format!("/{k}/")
            };
            for (name, dir) in self.list_as_token(&folder) {
                let key = if k.is_empty() {
                    name
                } else {
                    format!("{k}/{name}")
                };
                if dir {
                    out.insert(key.clone(), Node::Dir);
                    stack.push(key);
                } else {
                    let r = self.send(&As::Token, "GET", &format!("/{key}"), &[], b"");
                    assert_eq!(r.status, 200, "walk: GET /{key}: {}", r.text());
                    out.insert(key, Node::File(r.text()));
                }
            }
        }
        out
    }

    /// Store `body` at `rel` (folders made as needed): on the folder
    /// directly, on S3 as the token holder.
    pub fn put_file(&self, rel: &str, body: &str) {
        if !self.on_s3() {
            let p = self.root().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            return std::fs::write(p, body).unwrap();
        }
        let r = self.send(&As::Token, "PUT", &format!("/{rel}"), &[], body.as_bytes());
        assert!((200..300).contains(&r.status), "PUT /{rel}: {}", r.text());
    }

    /// An empty folder at `rel`.
    pub fn mkdir(&self, rel: &str) {
        if !self.on_s3() {
            return std::fs::create_dir_all(self.root().join(rel)).unwrap();
        }
        let r = self.send(&As::Token, "MKCOL", &format!("/{rel}/"), &[], b"");
        assert_eq!(r.status, 201, "MKCOL /{rel}/: {}", r.text());
    }

    /// The file at `rel`, if there is one.
    pub fn read_file(&self, rel: &str) -> Option<String> {
        if !self.on_s3() {
            return std::fs::read_to_string(self.root().join(rel)).ok();
        }
        let r = self.send(&As::Token, "GET", &format!("/{rel}"), &[], b"");
        (r.status == 200).then(|| r.text())
    }

    /// `(name, is a folder)` of a folder's listing, as the token holder.
    fn list_as_token(&self, folder: &str) -> Vec<(String, bool)> {
        let r = self.send(
            &As::Token,
            "GET",
            folder,
            &[("Accept", "application/json")],
            b"",
        );
        assert_eq!(r.status, 200, "listing {folder}: {}", r.text());
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let name = e["name"]
                    .as_str()
                    .unwrap()
                    .trim_end_matches('/')
                    .to_string();
                (name, e["type"] == "dir")
            })
            .collect()
    }

    /// Rewrite the rules file and reload it, as `kill -HUP` does.
    pub fn reload(&self, text: &str) {
        std::fs::write(&self.rules_file, text).unwrap();
        self.users
            .reload()
            .unwrap_or_else(|e| panic!("reload refused: {e}\n{text}"));
    }

    pub fn root(&self) -> &Path {
        &self.server.root
    }

    /// `path` (at the root) as the client names it: below the prefix.
    pub fn url_path(&self, path: &str) -> String {
        format!("{}{path}", self.prefix.unwrap_or(""))
    }

    /// One request as `who` (a link's value goes in the query or its
    /// header), to `path` and `Destination` below the prefix.
    pub fn send(
        &self,
        who: &As,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Resp {
        let mut path = self.url_path(path);
        let mut h: Vec<(&str, String)> = headers
            .iter()
            .map(|(n, v)| {
                if n.eq_ignore_ascii_case("destination") && v.starts_with('/') {
                    (*n, self.url_path(v))
                } else {
                    (*n, v.to_string())
                }
            })
            .collect();
        match who {
            As::Anyone => {}
            As::User(u) => h.push(("Authorization", basic(u))),
            As::Token => h.push(("Authorization", format!("Bearer {TOKEN}"))),
            As::Link(v) => {
                path.push(if path.contains('?') { '&' } else { '?' });
                path.push_str("share=");
                path.push_str(v);
            }
            As::LinkHeader(v) => h.push(("X-Wirespeed-Share", v.clone())),
        }
        let h: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
        self.server.req(method, &path, &h, body)
    }

    /// Mint a link for `path` as `user` (`upload`: a drop-box link); the
    /// answer, and the `share=` value when minted.
    pub fn mint(&self, user: &str, path: &str, upload: bool) -> (Resp, Option<String>) {
        self.mint_as(&As::User(user.into()), path, upload)
    }

    /// [`Site::mint`] as any principal.
    pub fn mint_as(&self, who: &As, path: &str, upload: bool) -> (Resp, Option<String>) {
        let q = if upload { "?upload" } else { "" };
        let r = self.send(who, "POST", &format!("/-/shares{path}{q}"), &[], b"");
        let token = (r.status == 201).then(|| {
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            v["share"].as_str().unwrap().to_string()
        });
        (r, token)
    }
}

/// A bucket's configuration for the S3 backend on `m` (keys below `prefix`).
pub fn s3_config(m: &wirespeed_testkit::minio::Minio, bucket: &str, prefix: &str) -> S3Config {
    use wirespeed_testkit::minio::{PASSWORD, USER};
    let mut cfg = S3Config::from_url(&format!("s3://{bucket}/{prefix}")).unwrap();
    cfg.endpoint = Some(m.endpoint());
    cfg.region = Some("us-east-1".into());
    cfg.credentials = Some((USER.into(), PASSWORD.into()));
    cfg
}

/// Empty `root`, then make `tree` there.
pub fn reset(root: &Path, tree: &Tree) {
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    make(root, tree);
}

/// Make `tree` under `root` (folders first: the map is sorted by path).
pub fn make(root: &Path, tree: &Tree) {
    for (k, n) in tree {
        let p = root.join(k);
        match n {
            Node::Dir => std::fs::create_dir_all(&p).unwrap(),
            Node::File(c) => {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, c).unwrap();
            }
            Node::Link(t) => {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(t, &p).unwrap();
            }
        }
    }
}

/// What is under `root` (reserved `.wirespeed-` names aside), links not
/// followed.
pub fn walk(root: &Path) -> Tree {
    fn go(root: &Path, dir: &Path, out: &mut Tree) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".wirespeed-")
            {
                continue;
            }
            let k = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(k, Node::Link(t.to_string_lossy().into_owned()));
            } else if meta.is_dir() {
                out.insert(k, Node::Dir);
                go(root, &p, out);
            } else {
                let c = std::fs::read(&p).unwrap();
                out.insert(k, Node::File(String::from_utf8_lossy(&c).into_owned()));
            }
        }
    }
    let mut out = Tree::new();
    go(root, root, &mut out);
    out
}

/// How two trees differ, one line per path.
pub fn diff(want: &Tree, got: &Tree) -> String {
    let mut out = Vec::new();
    let keys: BTreeSet<&String> = want.keys().chain(got.keys()).collect();
    for k in keys {
        match (want.get(k), got.get(k)) {
            (Some(a), Some(b)) if a == b => {}
            (a, b) => out.push(format!("  {k}: expected {a:?}, found {b:?}")),
        }
    }
    out.join("\n")
}

/// Names in a JSON listing.
pub fn listed(r: &Resp) -> BTreeSet<String> {
    let v: serde_json::Value = serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("listing is not JSON ({e}): {}", r.text()));
    v.as_array()
        .unwrap_or_else(|| panic!("listing is not an array: {v}"))
        .iter()
        .map(|e| {
            e["name"]
                .as_str()
                .unwrap()
                .trim_end_matches('/')
                .to_string()
        })
        .collect()
}

/// A search's results as paths below `folder` (`sub/f2.txt`).
pub fn searched(r: &Resp, folder: &str) -> BTreeSet<String> {
    let v: serde_json::Value = serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("search answer is not JSON ({e}): {}", r.text()));
    let top = format!("{}/", folder.trim_end_matches('/'));
    v["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("search answer has no entries: {v}"))
        .iter()
        .map(|e| {
            let p = e["path"].as_str().unwrap().trim_end_matches('/');
            p.strip_prefix(top.as_str())
                .unwrap_or_else(|| panic!("result {p} is not below {top}"))
                .to_string()
        })
        .collect()
}

/// The members' last names in a PROPFIND answer (the folder itself left out).
pub fn propfound(r: &Resp, folder: &str) -> BTreeSet<String> {
    let text = r.text();
    let mut out = BTreeSet::new();
    for part in text.split("<D:href>").skip(1) {
        let href = part.split("</D:href>").next().unwrap_or("");
        let href = href.split('?').next().unwrap_or(href);
        if href.trim_end_matches('/') == folder.trim_end_matches('/') {
            continue;
        }
        if let Some(name) = href.trim_end_matches('/').rsplit('/').next() {
            out.insert(name.to_string());
        }
    }
    out
}

/// Entries of a ustar archive, relative to its top folder (its first
/// name), with the file bytes.
pub fn tar_entries(data: &[u8]) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut pos = 0;
    let field = |b: &[u8]| {
        let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    let mut pax_name: Option<String> = None;
    while pos + 512 <= data.len() {
        let h = &data[pos..pos + 512];
        if h.iter().all(|b| *b == 0) {
            break;
        }
        let name = field(&h[0..100]);
        let prefix = field(&h[345..500]);
        let size_text = field(&h[124..136]);
        let size = u64::from_str_radix(size_text.trim(), 8).unwrap_or(0) as usize;
        let kind = h[156];
        let body_at = pos + 512;
        let body = data.get(body_at..body_at + size).unwrap_or(&[]).to_vec();
        pos = body_at + size.div_ceil(512) * 512;
        if kind == b'x' {
            let text = String::from_utf8_lossy(&body).into_owned();
            pax_name = text
                .lines()
                .find_map(|l| l.split_once(" path=").map(|(_, v)| v.to_string()));
            continue;
        }
        let full = pax_name.take().unwrap_or_else(|| {
            if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            }
        });
        let full = full.trim_end_matches('/');
        let Some((_, rel)) = full.split_once('/') else {
            continue; // the top folder itself
        };
        out.push((rel.to_string(), (kind != b'5').then_some(body)));
    }
    out
}

/// The token of a LOCK's answer (`Lock-Token: <…>`).
pub fn lock_token(r: &Resp) -> Option<String> {
    r.header("lock-token").map(|t| {
        t.trim()
            .trim_start_matches('<')
            .trim_end_matches('>')
            .to_string()
    })
}

pub const LOCKINFO: &[u8] = b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\
<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>\
<D:locktype><D:write/></D:locktype><D:owner>model</D:owner></D:lockinfo>";

pub const PROPPATCH: &[u8] = b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\
<D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:model\"><D:set><D:prop>\
<Z:note>set by the model test</Z:note></D:prop></D:set></D:propertyupdate>";

/// The start of a body, for failure reports.
pub fn snippet(r: &Resp) -> String {
    let t = r.text();
    let t: String = t.chars().take(160).collect();
    t.replace('\n', " ")
}
