//! Users and per-folder rights (`serve --auth FILE`) end to end: the
//! permission matrix — principals (anonymous, alice, bob, a `--token`
//! holder) × routes (GET, HEAD, listing, PUT new/existing, DELETE, form
//! POST, tus create + append, IETF creation, MKCOL, MOVE, metrics,
//! archive) × path kinds (a user's folder, a shared folder, the public
//! root, a drop box; files, folders, missing names) — each cell asserting
//! the status and what is on disk afterwards; then HTTP Basic details
//! (wrong passwords, challenges, curl `-u`).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use common::*;
use wirespeed_service::events::{Audit, Events};
use wirespeed_service::policy::shares::DEFAULT_MAX_EXPIRY;
use wirespeed_service::policy::{password, Shares};
use wirespeed_service::{Access, Metrics, Rights, ServiceConfig, UploadsConfig, Users};

const RULES: &str = r#"
[paths."/"]
"*" = "r"
[paths."/alice"]
alice = "rwd"
[paths."/drop"]
"*" = "w"
[paths."/team"]
alice = "rwd"
bob   = "rws"
[paths."/bobs"]
bob   = "rws"
"#;

const TOKEN: &str = "tok-3141";
const SHARE_KEY: [u8; 32] = [9; 32];

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn users() -> Arc<Users> {
    let text = format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n{RULES}",
        password::hash(b"alice-pw").unwrap(),
        password::hash(b"bob-pw").unwrap()
    );
    Arc::new(Users::from_text("users.toml", &text).unwrap())
}

fn server() -> TestServer {
    audited_server(None)
}

/// The server, its audit trail written to `audit` when given.
fn audited_server(audit: Option<(Captured, Arc<Events>)>) -> TestServer {
    let cfg = ServiceConfig {
        access: Access::new([TOKEN], false),
        users: Some(users()),
        shares: Some(Arc::new(Shares::new(SHARE_KEY, DEFAULT_MAX_EXPIRY))),
        metrics: Some(Arc::new(Metrics::new(false))),
        events: audit.map(|(_, e)| e),
        ..ServiceConfig::default()
    };
    TestServer::with_uploads(cfg, UploadsConfig::default())
}

/// An audit trail the test reads.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The audit lines written since `from` lines, and the count now.
    fn lines_since(&self, events: &Events, from: usize) -> (Vec<serde_json::Value>, usize) {
        events.flush();
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        let all: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let n = all.len();
        (all.into_iter().skip(from).collect(), n)
    }
}

/// Whether an audit line names `who` (a principal of [`principals`]) as
/// the one who asked.
fn names(line: &serde_json::Value, who: &str) -> bool {
    match who {
        "alice" | "bob" => line["user"] == who,
        "token" => line["token"] == true && line["user"].is_null(),
        "team read link" | "team upload link" => {
            line["minter"] == "alice" && line["link"].is_string() && line["user"].is_null()
        }
        _ => line["user"].is_null() && line["token"].is_null() && line["minter"].is_null(),
    }
}

fn basic(user: &str, pw: &str) -> String {
    let raw = format!("{user}:{pw}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// A principal's name and request fields.
type Principal = (&'static str, Vec<(&'static str, String)>);

/// Who asks, as request fields: `Authorization`, or the pseudo-field
/// `x-share` that [`send`] turns into `?share=` (links are minted with the
/// server's key: a link carries its grant, no table needed to verify it).
fn principals() -> &'static [Principal] {
    static ALL: std::sync::OnceLock<Vec<Principal>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let minter = Shares::new(SHARE_KEY, DEFAULT_MAX_EXPIRY);
        let now = unix_now();
        let link = |rights, at| minter.mint("/team/", rights, 3600, "alice", at).unwrap().1;
        let auth = |v: String| vec![("Authorization", v)];
        vec![
            ("anonymous", vec![]),
            ("alice", auth(basic("alice", "alice-pw"))),
            ("bob", auth(basic("bob", "bob-pw"))),
            ("token", auth(format!("Bearer {TOKEN}"))),
            ("team read link", vec![("x-share", link(Rights::READ, now))]),
            (
                "team upload link",
                vec![("x-share", link(Rights::WRITE, now))],
            ),
            (
                "expired link",
                vec![("x-share", link(Rights::READ, now - 7200))],
            ),
        ]
    })
}

/// One request: `auth`'s `x-share` becomes the `share=` query parameter.
fn send(
    s: &TestServer,
    m: &str,
    p: &str,
    auth: &[(&str, &str)],
    extra: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let mut path = p.to_string();
    let mut h = Vec::new();
    for (n, v) in auth {
        if *n == "x-share" {
            path.push(if path.contains('?') { '&' } else { '?' });
            path.push_str("share=");
            path.push_str(v);
        } else {
            h.push((*n, *v));
        }
    }
    h.extend_from_slice(extra);
    s.req(m, &path, &h, body)
}

/// The tree every cell starts from.
const FIXTURE: [(&str, &str); 5] = [
    ("pub.txt", "public"),
    ("alice/a.txt", "alice's"),
    ("team/t.txt", "team's"),
    ("drop/d.txt", "dropped"),
    ("drop/sub/s.txt", "deeper"),
];

fn reset(root: &Path) {
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    for (name, body) in FIXTURE {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
}

/// Every file and folder under `root` (reserved `.wirespeed-` names aside):
/// path → content (`/` for a folder).
fn tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".wirespeed-")
            {
                continue;
            }
            if p.is_dir() {
                out.insert(name, "/".into());
                walk(root, &p, out);
            } else {
                out.insert(name, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// One route: how to send it as a principal, and what a success leaves
/// on disk (checked absent after a refusal: the tree is the fixture's).
struct Route {
    name: &'static str,
    send: fn(&TestServer, &[(&str, &str)]) -> u16,
    /// `(path, content)` a success leaves (`/` a folder, `-` removed).
    effect: &'static [(&'static str, &'static str)],
}

fn req(
    s: &TestServer,
    m: &str,
    p: &str,
    auth: &[(&str, &str)],
    extra: &[(&str, &str)],
    body: &[u8],
) -> u16 {
    send(s, m, p, auth, extra, body).status
}

fn form(s: &TestServer, folder: &str, name: &str, auth: &[(&str, &str)]) -> u16 {
    let body = format!(
        "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{name}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\nformed\r\n--b--\r\n"
    );
    req(
        s,
        "POST",
        folder,
        auth,
        &[("Content-Type", "multipart/form-data; boundary=b")],
        body.as_bytes(),
    )
}

/// tus: creation, then one PATCH with the rest; the creation's status if
/// refused, else the PATCH's.
fn tus(s: &TestServer, target: &str, auth: &[(&str, &str)]) -> u16 {
    let tus = ("Tus-Resumable", "1.0.0");
    let h = [tus, ("Upload-Length", "5")];
    let r = send(s, "POST", &format!("/-/uploads{target}"), auth, &h, b"");
    if r.status != 201 {
        return r.status;
    }
    let loc = r.header("location").unwrap().to_string();
    let h = [
        tus,
        ("Content-Type", "application/offset+octet-stream"),
        ("Upload-Offset", "0"),
    ];
    send(s, "PATCH", &loc, auth, &h, b"tused").status
}

fn ietf(s: &TestServer, target: &str, auth: &[(&str, &str)]) -> u16 {
    let h = [
        ("Upload-Draft-Interop-Version", "8"),
        ("Upload-Complete", "?1"),
    ];
    req(s, "PUT", target, auth, &h, b"ietf!")
}

/// A folder archive: each `(content, readers)` must be in it exactly when
/// the asker is one of `readers`.
fn archive_has(
    s: &TestServer,
    auth: &[(&str, &str)],
    path: &str,
    contents: &[(&str, &[&str])],
) -> u16 {
    let who = principals()
        .iter()
        .find(|(_, a)| a.first().map(|(_, v)| v.as_str()) == auth.first().map(|(_, v)| *v))
        .map_or("anonymous", |(w, _)| w);
    let r = send(s, "GET", path, auth, &[], b"");
    if r.status == 200 {
        for (content, readers) in contents {
            let present = find(&r.body, content.as_bytes()).is_some();
            assert_eq!(
                present,
                readers.contains(&who),
                "{path} as {who}: {content}"
            );
        }
    }
    r.status
}

fn routes() -> Vec<Route> {
    macro_rules! route {
        ($name:expr, |$s:ident, $a:ident| $send:expr, $effect:expr) => {
            Route {
                name: $name,
                send: |$s, $a| $send,
                effect: $effect,
            }
        };
    }
    vec![
        route!(
            "GET public file",
            |s, a| req(s, "GET", "/pub.txt", a, &[], b""),
            &[]
        ),
        route!(
            "HEAD public file",
            |s, a| req(s, "HEAD", "/pub.txt", a, &[], b""),
            &[]
        ),
        route!(
            "GET alice's file",
            |s, a| req(s, "GET", "/alice/a.txt", a, &[], b""),
            &[]
        ),
        route!(
            "GET team file",
            |s, a| req(s, "GET", "/team/t.txt", a, &[], b""),
            &[]
        ),
        route!(
            "GET drop-box file",
            |s, a| req(s, "GET", "/drop/d.txt", a, &[], b""),
            &[]
        ),
        route!(
            "GET drop-box missing",
            |s, a| req(s, "GET", "/drop/none", a, &[], b""),
            &[]
        ),
        route!(
            "GET alice's missing",
            |s, a| req(s, "GET", "/alice/none", a, &[], b""),
            &[]
        ),
        route!(
            "GET public listing",
            |s, a| req(s, "GET", "/?format=json", a, &[], b""),
            &[]
        ),
        route!(
            "GET alice's listing",
            |s, a| req(s, "GET", "/alice/?format=json", a, &[], b""),
            &[]
        ),
        route!(
            "GET drop-box listing",
            |s, a| req(s, "GET", "/drop/?format=json", a, &[], b""),
            &[]
        ),
        route!(
            "PUT new at root",
            |s, a| req(s, "PUT", "/new.txt", a, &[], b"new"),
            &[("new.txt", "new")]
        ),
        route!(
            "PUT new in alice",
            |s, a| req(s, "PUT", "/alice/n.txt", a, &[], b"new"),
            &[("alice/n.txt", "new")]
        ),
        route!(
            "PUT over alice's file",
            |s, a| req(s, "PUT", "/alice/a.txt", a, &[], b"over"),
            &[("alice/a.txt", "over")]
        ),
        route!(
            "PUT new in team",
            |s, a| req(s, "PUT", "/team/n.txt", a, &[], b"new"),
            &[("team/n.txt", "new")]
        ),
        route!(
            "PUT over team file",
            |s, a| req(s, "PUT", "/team/t.txt", a, &[], b"over"),
            &[("team/t.txt", "over")]
        ),
        route!(
            "PUT new in drop box",
            |s, a| req(s, "PUT", "/drop/n.txt", a, &[], b"new"),
            &[("drop/n.txt", "new")]
        ),
        route!(
            "PUT over drop-box file",
            |s, a| req(s, "PUT", "/drop/d.txt", a, &[], b"over"),
            &[("drop/d.txt", "over")]
        ),
        route!(
            "DELETE public file",
            |s, a| req(s, "DELETE", "/pub.txt", a, &[], b""),
            &[("pub.txt", "-")]
        ),
        route!(
            "DELETE alice's file",
            |s, a| req(s, "DELETE", "/alice/a.txt", a, &[], b""),
            &[("alice/a.txt", "-")]
        ),
        route!(
            "DELETE team file",
            |s, a| req(s, "DELETE", "/team/t.txt", a, &[], b""),
            &[("team/t.txt", "-")]
        ),
        route!(
            "DELETE drop-box file",
            |s, a| req(s, "DELETE", "/drop/d.txt", a, &[], b""),
            &[("drop/d.txt", "-")]
        ),
        route!(
            "DELETE drop-box missing",
            |s, a| req(s, "DELETE", "/drop/none", a, &[], b""),
            &[]
        ),
        route!(
            "form POST new in team",
            |s, a| form(s, "/team/", "f.txt", a),
            &[("team/f.txt", "formed")]
        ),
        route!(
            "form POST over drop-box file",
            |s, a| form(s, "/drop/", "d.txt", a),
            &[("drop/d.txt", "formed")]
        ),
        route!(
            "form POST new in drop box",
            |s, a| form(s, "/drop/", "f.txt", a),
            &[("drop/f.txt", "formed")]
        ),
        route!(
            "tus create+append in alice",
            |s, a| tus(s, "/alice/u.bin", a),
            &[("alice/u.bin", "tused")]
        ),
        route!(
            "tus create+append in team",
            |s, a| tus(s, "/team/u.bin", a),
            &[("team/u.bin", "tused")]
        ),
        route!(
            "tus create+append in drop box",
            |s, a| tus(s, "/drop/u.bin", a),
            &[("drop/u.bin", "tused")]
        ),
        route!(
            "tus create over drop-box file",
            |s, a| tus(s, "/drop/d.txt", a),
            &[("drop/d.txt", "tused")]
        ),
        route!(
            "IETF create in alice",
            |s, a| ietf(s, "/alice/i.bin", a),
            &[("alice/i.bin", "ietf!")]
        ),
        route!(
            "IETF create in drop box",
            |s, a| ietf(s, "/drop/i.bin", a),
            &[("drop/i.bin", "ietf!")]
        ),
        route!(
            "MKCOL in alice",
            |s, a| req(s, "MKCOL", "/alice/m/", a, &[], b""),
            &[("alice/m", "/")]
        ),
        route!(
            "MKCOL in drop box",
            |s, a| req(s, "MKCOL", "/drop/m/", a, &[], b""),
            &[("drop/m", "/")]
        ),
        route!(
            "MOVE within team",
            |s, a| req(
                s,
                "MOVE",
                "/team/t.txt",
                a,
                &[("Destination", "/team/moved.txt")],
                b""
            ),
            &[("team/t.txt", "-"), ("team/moved.txt", "team's")]
        ),
        route!(
            "MOVE alice's file to team",
            |s, a| req(
                s,
                "MOVE",
                "/alice/a.txt",
                a,
                &[("Destination", "/team/a.txt")],
                b""
            ),
            &[("alice/a.txt", "-"), ("team/a.txt", "alice's")]
        ),
        route!(
            "MOVE team file into drop box",
            |s, a| req(
                s,
                "MOVE",
                "/team/t.txt",
                a,
                &[("Destination", "/drop/t.txt")],
                b""
            ),
            &[("team/t.txt", "-"), ("drop/t.txt", "team's")]
        ),
        route!(
            "GET metrics",
            |s, a| req(s, "GET", "/-/metrics", a, &[], b""),
            &[]
        ),
        route!(
            "GET archive of team",
            |s, a| archive_has(
                s,
                a,
                "/team/?archive=tar",
                &[("team's", &["alice", "bob", "token", "team read link"])]
            ),
            &[]
        ),
        route!(
            "GET archive of root",
            |s, a| archive_has(
                s,
                a,
                "/?archive=tar",
                &[
                    ("public", &["anonymous", "alice", "bob", "token"]),
                    ("alice's", &["alice", "token"]),
                    ("team's", &["alice", "bob", "token", "team read link"]),
                    ("dropped", &["token"]),
                    ("deeper", &["token"]),
                ]
            ),
            &[]
        ),
        route!(
            "GET archive of drop box",
            |s, a| archive_has(s, a, "/drop/?archive=tar", &[("dropped", &["token"])]),
            &[]
        ),
    ]
}

/// Expected statuses: anonymous, alice, bob, token holder, a read link and
/// an upload link for /team/, an expired link. Anonymous gets 401 wherever
/// credentials would help (the token always would); a link gets 404 for
/// anything it does not grant, an expired one 410 (it says it has ended)
/// everywhere (metrics ignore links: 401 as anonymous).
const EXPECTED: &[(&str, [u16; 7])] = &[
    ("GET public file", [200, 200, 200, 200, 404, 404, 410]),
    ("HEAD public file", [200, 200, 200, 200, 404, 404, 410]),
    ("GET alice's file", [401, 200, 403, 200, 404, 404, 410]),
    ("GET team file", [401, 200, 200, 200, 200, 404, 410]),
    ("GET drop-box file", [401, 403, 403, 200, 404, 404, 410]),
    ("GET drop-box missing", [401, 403, 403, 404, 404, 404, 410]),
    ("GET alice's missing", [401, 404, 403, 404, 404, 404, 410]),
    ("GET public listing", [200, 200, 200, 200, 404, 404, 410]),
    ("GET alice's listing", [401, 200, 403, 200, 404, 404, 410]),
    ("GET drop-box listing", [401, 403, 403, 200, 404, 404, 410]),
    ("PUT new at root", [401, 403, 403, 201, 404, 404, 410]),
    ("PUT new in alice", [401, 201, 403, 201, 404, 404, 410]),
    ("PUT over alice's file", [401, 204, 403, 204, 404, 404, 410]),
    ("PUT new in team", [401, 201, 201, 201, 404, 201, 410]),
    ("PUT over team file", [401, 204, 403, 204, 404, 403, 410]),
    ("PUT new in drop box", [201, 201, 201, 201, 404, 404, 410]),
    (
        "PUT over drop-box file",
        [403, 403, 403, 204, 404, 404, 410],
    ),
    ("DELETE public file", [401, 403, 403, 204, 404, 404, 410]),
    ("DELETE alice's file", [401, 204, 403, 204, 404, 404, 410]),
    ("DELETE team file", [401, 204, 403, 204, 404, 404, 410]),
    ("DELETE drop-box file", [401, 403, 403, 204, 404, 404, 410]),
    (
        "DELETE drop-box missing",
        [401, 403, 403, 404, 404, 404, 410],
    ),
    ("form POST new in team", [401, 201, 201, 201, 404, 201, 410]),
    (
        "form POST over drop-box file",
        [403, 403, 403, 201, 404, 404, 410],
    ),
    (
        "form POST new in drop box",
        [201, 201, 201, 201, 404, 404, 410],
    ),
    (
        "tus create+append in alice",
        [401, 204, 403, 204, 404, 404, 410],
    ),
    (
        "tus create+append in team",
        [401, 204, 204, 204, 404, 204, 410],
    ),
    (
        "tus create+append in drop box",
        [204, 204, 204, 204, 404, 404, 410],
    ),
    (
        "tus create over drop-box file",
        [403, 403, 403, 204, 404, 404, 410],
    ),
    ("IETF create in alice", [401, 201, 403, 201, 404, 404, 410]),
    (
        "IETF create in drop box",
        [201, 201, 201, 201, 404, 404, 410],
    ),
    ("MKCOL in alice", [401, 201, 403, 201, 404, 404, 410]),
    ("MKCOL in drop box", [201, 201, 201, 201, 404, 404, 410]),
    ("MOVE within team", [401, 201, 403, 201, 404, 404, 410]),
    (
        "MOVE alice's file to team",
        [401, 201, 403, 201, 404, 404, 410],
    ),
    (
        "MOVE team file into drop box",
        [401, 201, 403, 201, 404, 404, 410],
    ),
    ("GET metrics", [401, 200, 200, 200, 401, 401, 401]),
    ("GET archive of team", [401, 200, 200, 200, 200, 404, 410]),
    ("GET archive of root", [200, 200, 200, 200, 404, 404, 410]),
    (
        "GET archive of drop box",
        [401, 403, 403, 200, 404, 404, 410],
    ),
];

#[test]
fn permission_matrix_status_and_disk() {
    let out = Captured::default();
    let events = Arc::new(Events::new(
        Some(Audit::to_sink(Box::new(out.clone())).unwrap()),
        None,
    ));
    let s = audited_server(Some((out.clone(), events.clone())));
    let mut audited = 0;
    let routes = routes();
    assert_eq!(routes.len(), EXPECTED.len());
    reset(&s.root);
    let fixture = tree(&s.root);
    let mut failures = Vec::new();
    let mut cells = 0;
    for (route, (name, want)) in routes.iter().zip(EXPECTED) {
        assert_eq!(route.name, *name, "the tables are in the same order");
        for ((who, auth), want) in principals().iter().zip(want) {
            reset(&s.root);
            let auth: Vec<(&str, &str)> = auth.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let got = (route.send)(&s, &auth);
            cells += 1;
            // Each cell's answer is in the audit trail, with who asked
            // (HEAD and the metrics page reveal no content: not audited).
            let (lines, now) = out.lines_since(&events, audited);
            audited = now;
            let audits = !name.starts_with("HEAD") && !name.contains("metrics");
            if audits
                && !lines
                    .iter()
                    .any(|l| l["status"] == got && names(l, who) && l["action"].is_string())
            {
                failures.push(format!(
                    "{name} as {who}: no audit line with status {got} naming them: {lines:?}"
                ));
            }
            if got != *want {
                failures.push(format!("{name} as {who}: {got}, expected {want}"));
                continue;
            }
            let after = tree(&s.root);
            if (200..300).contains(&got) {
                let mut expected = fixture.clone();
                for (path, content) in route.effect {
                    match *content {
                        "-" => {
                            expected.remove(*path);
                        }
                        c => {
                            expected.insert(path.to_string(), c.to_string());
                        }
                    }
                }
                if after != expected {
                    failures.push(format!(
                        "{name} as {who}: disk {after:?}, expected {expected:?}"
                    ));
                }
            } else if after != fixture {
                failures.push(format!(
                    "{name} as {who} was refused ({got}) but changed the disk: {after:?}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cells} cells failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn listings_show_only_what_the_principal_holds_rights_on() {
    let s = server();
    reset(&s.root);
    let names = |auth: &[(&str, &str)]| {
        let r = s.req("GET", "/?format=json", auth, b"");
        assert_eq!(r.status, 200);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&[]), ["drop", "pub.txt"]);
    let bob = basic("bob", "bob-pw");
    assert_eq!(
        names(&[("Authorization", &bob)]),
        ["drop", "pub.txt", "team"]
    );
    let alice = basic("alice", "alice-pw");
    assert_eq!(
        names(&[("Authorization", &alice)]),
        ["alice", "drop", "pub.txt", "team"]
    );
}

#[test]
fn wrong_credentials_are_401_with_both_challenges() {
    let s = server();
    reset(&s.root);
    for auth in [
        basic("alice", "bob-pw"),
        basic("mallory", "x"),
        "Basic !!".to_string(),
    ] {
        // Even where anyone may read: wrong credentials are never "anyone".
        let r = s.req("GET", "/pub.txt", &[("Authorization", &auth)], b"");
        assert_eq!(r.status, 401, "{auth}");
        assert!(r.text().contains("wrong user name or password"));
    }
    let r = s.req("PUT", "/alice/x", &[], b"x");
    assert_eq!(r.status, 401);
    let challenges: Vec<&str> = r
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("www-authenticate"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(
        challenges,
        [
            "Basic realm=\"wirespeed\", charset=\"UTF-8\"",
            "Bearer realm=\"wirespeed\""
        ]
    );
    assert!(!s.root.join("alice/x").exists());
    // Every 401 names what this server takes: users (Basic) or the token,
    // the metrics and resumable routes included.
    for (m, p) in [
        ("PUT", "/alice/x"),
        ("GET", "/-/metrics"),
        ("POST", "/alice/"),
    ] {
        let extra: &[(&str, &str)] = if m == "POST" {
            &[("Tus-Resumable", "1.0.0"), ("Upload-Length", "1")]
        } else {
            &[]
        };
        let r = s.req(m, p, extra, b"");
        assert_eq!(r.status, 401, "{m} {p}");
        assert!(r.text().contains("sign in"), "{m} {p}: {}", r.text());
    }
}

#[test]
fn curl_signs_in_with_u() {
    let s = server();
    reset(&s.root);
    let code = |args: &[&str]| {
        let mut all = vec!["-o", "/dev/null", "-w", "%{http_code}"];
        all.extend_from_slice(args);
        let (_, out) = curl(&all);
        String::from_utf8(out).unwrap()
    };
    let team = s.url("/team/c.txt");
    let file = s.tmp.path().join("c.txt");
    std::fs::write(&file, "by curl").unwrap();
    let f = file.to_str().unwrap();
    assert_eq!(code(&["-u", "bob:bob-pw", "-T", f, &team]), "201");
    assert_eq!(
        std::fs::read_to_string(s.root.join("team/c.txt")).unwrap(),
        "by curl"
    );
    assert_eq!(
        code(&["-u", "bob:bob-pw", "-T", f, &team]),
        "403",
        "bob may not replace"
    );
    assert_eq!(code(&["-u", "bob:wrong", &s.url("/team/t.txt")]), "401");
    assert_eq!(
        code(&["-u", "alice:alice-pw", "-X", "DELETE", &team]),
        "204"
    );
    assert!(!s.root.join("team/c.txt").exists());
}

#[test]
fn a_link_reaches_nothing_beyond_its_grant_and_every_failure_looks_unknown() {
    let s = server();
    reset(&s.root);
    std::fs::create_dir_all(s.root.join("teamx")).unwrap();
    std::fs::write(s.root.join("teamx/x.txt"), "sibling").unwrap();
    let link = principals()[4].1[0].1.clone();
    let get = |path: &str| s.get(path);
    assert_eq!(get(&format!("/team/t.txt?share={link}")).status, 200);
    let not_found = get("/team/t.txt?share=unknown.link").text();
    for path in [
        "/team/../alice/a.txt",
        "/team/%2e%2e/alice/a.txt",
        "/team%2F..%2Falice/a.txt",
        "/team/..%2Fpub.txt",
        "/teamx/x.txt",
        "/pub.txt",
        "/",
    ] {
        let r = get(&format!("{path}?share={link}"));
        assert!(
            r.status == 404 || r.status == 400,
            "{path}: {} {}",
            r.status,
            r.text()
        );
        assert!(!r.text().contains("sibling") && !r.text().contains("alice's"));
    }
    // Altered: one character of the signature or of the payload.
    let (payload, tag) = link.split_once('.').unwrap();
    let flip = |s: &str| {
        let mut b = s.as_bytes().to_vec();
        b[3] = if b[3] == b'A' { b'B' } else { b'A' };
        String::from_utf8(b).unwrap()
    };
    for bad in [
        format!("{}.{tag}", flip(payload)),
        format!("{payload}.{}", flip(tag)),
    ] {
        let r = get(&format!("/team/t.txt?share={bad}"));
        assert_eq!(r.status, 404);
        assert_eq!(r.text(), not_found, "the same answer as an unknown link");
    }
    // An expired link says so (410), and nothing about its path.
    let expired = &principals()[6].1[0].1;
    let r = get(&format!("/team/t.txt?share={expired}"));
    assert_eq!(r.status, 410, "{}", r.text());
    assert!(
        r.text().contains("expired") && !r.text().contains("team"),
        "{}",
        r.text()
    );
}

#[test]
fn the_shares_api_shares_only_what_one_holds() {
    let s = server();
    reset(&s.root);
    let alice = basic("alice", "alice-pw");
    let bob = basic("bob", "bob-pw");
    fn as_(who: &str) -> Vec<(&str, &str)> {
        vec![("Authorization", who)]
    }
    let post = |path: &str, who: &[(&str, &str)]| s.req("POST", path, who, b"");
    assert_eq!(post("/-/shares/alice/a.txt", &[]).status, 401);
    assert_eq!(post("/-/shares/alice/a.txt", &as_(&bob)).status, 403);
    // Writing into the public drop box does not make bob its publisher:
    // sharing is a right of its own (`s`, which bob holds in /bobs).
    let r = post("/-/shares/drop/?upload", &as_(&bob));
    assert_eq!(r.status, 403, "{}", r.text());
    // Nothing there: 404, said only to whom may learn it. Bob, who may
    // not read alice's folder, gets the same 403 for a name that is there
    // and one that is not.
    let r = post("/-/shares/bobs/?upload", &as_(&bob));
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(post("/-/shares/alice/nothing.txt", &as_(&bob)).status, 403);
    assert_eq!(
        post("/-/shares/alice/nothing.txt", &as_(&alice)).status,
        404
    );
    std::fs::create_dir_all(s.root.join("bobs")).unwrap();
    assert_eq!(post("/-/shares/bobs/?upload", &as_(&bob)).status, 201);
    assert_eq!(
        post("/-/shares/drop/", &as_(&bob)).status,
        403,
        "bob cannot read the drop box"
    );
    assert_eq!(
        post("/-/shares/alice/a.txt?upload", &as_(&alice)).status,
        400,
        "upload links are for folders"
    );
    assert_eq!(
        post("/-/shares/alice/a.txt?expires=99999999", &as_(&alice)).status,
        400
    );
    let r = post("/-/shares/alice/a.txt?expires=60", &as_(&alice));
    assert_eq!(r.status, 201, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let token = v["share"].as_str().unwrap().to_string();
    assert_eq!(v["rights"], "r");
    assert!(v["expires"].as_u64().unwrap() <= unix_now() + 60);
    assert_eq!(
        s.get(&format!("/alice/a.txt?share={token}")).text(),
        "alice's"
    );
    // A link cannot mint links.
    assert_eq!(
        post(&format!("/-/shares/alice/a.txt?share={token}"), &[]).status,
        404
    );
    // Each sees their own; the token holder sees all.
    let list = |who: &[(&str, &str)]| {
        let r = s.req("GET", "/-/shares/", who, b"");
        assert_eq!(r.status, 200);
        serde_json::from_slice::<Vec<serde_json::Value>>(&r.body)
            .unwrap()
            .len()
    };
    let tok = format!("Bearer {TOKEN}");
    assert_eq!(
        (list(&as_(&alice)), list(&as_(&bob)), list(&as_(&tok))),
        (1, 1, 2)
    );
    // Only the minter (or the token holder) revokes; then the link is dead.
    let revoke = |who: &[(&str, &str)]| {
        s.req("DELETE", &format!("/-/shares/?link={token}"), who, b"")
            .status
    };
    assert_eq!(revoke(&as_(&bob)), 404);
    assert_eq!(revoke(&as_(&alice)), 204);
    assert_eq!(s.get(&format!("/alice/a.txt?share={token}")).status, 410);
    assert_eq!(revoke(&as_(&alice)), 404, "once");
}

/// The owner of a folder (`d` there) finds and ends the links into it that
/// others minted, without the token; someone with less sees none of them.
#[test]
fn the_owner_of_a_folder_lists_and_revokes_links_into_it() {
    let s = server();
    std::fs::create_dir_all(s.root.join("team")).unwrap();
    std::fs::write(s.root.join("team/t.txt"), b"team's").unwrap();
    let (alice, bob) = (basic("alice", "alice-pw"), basic("bob", "bob-pw"));
    let r = s.req(
        "POST",
        "/-/shares/team/t.txt",
        &[("Authorization", &bob), SAME_ORIGIN],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let minted: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let link = minted["share"].as_str().unwrap().to_string();
    assert_eq!(s.get(&format!("/team/t.txt?share={link}")).status, 200);
    // bob (rw, no d) sees his own link only; alice (d on /team) sees it too.
    let listed = |who: &str| {
        let r = s.req("GET", "/-/shares/team/", &[("Authorization", who)], b"");
        assert_eq!(r.status, 200, "{}", r.text());
        serde_json::from_slice::<Vec<serde_json::Value>>(&r.body).unwrap()
    };
    assert_eq!(listed(&alice).len(), 1);
    assert_eq!(listed(&alice)[0]["by"], "bob");
    let revoke = format!("/-/shares/team/?link={link}");
    let r = s.req(
        "DELETE",
        &revoke,
        &[("Authorization", &alice), SAME_ORIGIN],
        b"",
    );
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(s.get(&format!("/team/t.txt?share={link}")).status, 410);
    assert!(listed(&bob).is_empty());
}
