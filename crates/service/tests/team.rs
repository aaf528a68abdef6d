//! Running it for a team: sign-in by an identity proxy in front (its user
//! and groups headers believed from a trusted proxy only, the rules file
//! giving names and "@group"s their rights); the audit trail and the event
//! hooks over one scripted session (every action once, with who, what,
//! where and the status; the hook gets each event once, in order, signed).

mod common;

use std::sync::Arc;

use common::*;
use wirespeed_net::{ServerConfig, TrustedProxies};
use wirespeed_service::events::{sign, Audit, Events, HookConfig, HookUrl, Hooks};
use wirespeed_service::policy::groups::ProxySignIn;
use wirespeed_service::policy::password;
use wirespeed_service::{ServiceConfig, Users};

/// alice signs in with a password; carol only through the proxy (listed in
/// a group, no [users] line); anyone else the proxy names gets what the
/// groups it names give.
fn proxied_server(trusted: &str) -> TestServer {
    let rules = format!(
        "[users]\nalice = \"{}\"\n[groups]\nteam = [\"alice\", \"carol\"]\n\
         [paths.\"/carol\"]\ncarol = \"rwd\"\n\
         [paths.\"/team\"]\n\"@team\" = \"rw\"\n\
         [paths.\"/ops\"]\n\"@ops\" = \"rwd\"\n",
        password::hash(b"alice-pw").unwrap()
    );
    let cfg = ServiceConfig {
        users: Some(Arc::new(Users::from_text("users.toml", &rules).unwrap())),
        proxy_sign_in: Some(ProxySignIn {
            user_header: "remote-user".into(),
            groups_header: Some("remote-groups".into()),
        }),
        ..ServiceConfig::default()
    };
    let server_cfg = ServerConfig {
        trusted_proxies: TrustedProxies::new(vec![TrustedProxies::parse_one(trusted).unwrap()]),
        ..ServerConfig::default()
    };
    let s = TestServer::with_server(cfg, server_cfg);
    for d in ["carol", "team", "ops"] {
        std::fs::create_dir_all(s.root.join(d)).unwrap();
    }
    s
}

/// A request as the proxy signs `user` in (with `groups`, if any); writes
/// carry the page's Origin, as a browser behind the proxy sends.
fn as_user(
    s: &TestServer,
    method: &str,
    path: &str,
    user: &str,
    groups: Option<&str>,
    body: &[u8],
) -> u16 {
    let mut h = vec![("Remote-User", user), SAME_ORIGIN];
    if let Some(g) = groups {
        h.push(("Remote-Groups", g));
    }
    s.req(method, path, &h, body).status
}

#[test]
fn a_proxy_signed_in_user_gets_its_rules_rights_and_its_groups() {
    let s = proxied_server("127.0.0.1");
    // carol: her own folder by name, /team by the file's group.
    assert_eq!(as_user(&s, "PUT", "/carol/a.txt", "carol", None, b"c"), 201);
    assert_eq!(std::fs::read(s.root.join("carol/a.txt")).unwrap(), b"c");
    assert_eq!(as_user(&s, "GET", "/carol/a.txt", "carol", None, b""), 200);
    assert_eq!(as_user(&s, "PUT", "/team/t.txt", "carol", None, b"t"), 201);
    assert_eq!(
        as_user(&s, "DELETE", "/team/t.txt", "carol", None, b""),
        403
    );
    assert_eq!(as_user(&s, "PUT", "/ops/x", "carol", None, b"x"), 403);
    // A groups header adds only the groups the rules file names.
    assert_eq!(
        as_user(&s, "PUT", "/ops/x", "carol", Some("ops"), b"x"),
        201
    );
    // dave is in no list: the proxy's groups are all he has.
    assert_eq!(as_user(&s, "GET", "/team/t.txt", "dave", None, b""), 403);
    assert_eq!(
        as_user(&s, "GET", "/carol/a.txt", "dave", Some("team ops"), b""),
        403
    );
    assert_eq!(
        as_user(&s, "GET", "/team/t.txt", "dave", Some("x,team"), b""),
        200
    );
    assert_eq!(
        as_user(&s, "DELETE", "/ops/x", "dave", Some("ops"), b""),
        204
    );
    assert!(!s.root.join("ops/x").exists());
    // carol has no password: HTTP Basic cannot sign her in.
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "carol:")
    );
    let r = s.req("GET", "/carol/a.txt", &[("Authorization", &basic)], b"");
    assert_eq!(r.status, 401);
    // A name no user may have is refused, not taken as anyone.
    assert_eq!(
        as_user(&s, "GET", "/team/t.txt", "a:b", Some("team"), b""),
        403
    );
}

#[test]
fn the_user_header_from_an_untrusted_peer_is_ignored() {
    // The test's client is 127.0.0.1: not in 10.0.0.0/8.
    let s = proxied_server("10.0.0.0/8");
    assert_eq!(as_user(&s, "PUT", "/carol/a.txt", "carol", None, b"c"), 401);
    assert_eq!(
        as_user(&s, "PUT", "/ops/a.txt", "dave", Some("ops"), b"c"),
        401
    );
    assert!(!s.root.join("carol/a.txt").exists());
    assert!(!s.root.join("ops/a.txt").exists());
    std::fs::write(s.root.join("carol/b.txt"), b"b").unwrap();
    assert_eq!(as_user(&s, "GET", "/carol/b.txt", "carol", None, b""), 401);
}

/// A sink the test reads.
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

/// What the receiver got: each POST's signature header and body.
type Received = Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// How a receiver answers a POST's body: status line and body.
type Answerer = fn(&[u8]) -> (&'static str, &'static str);

/// A loopback HTTP receiver: each POST's signature header and body.
fn receiver() -> (String, Received) {
    receiver_with(None, |_| ("204 No Content", ""))
}

/// A loopback receiver, over TLS when `tls` is given (its URL is then
/// https), answering each POST as `answer` says.
fn receiver_with(tls: Option<Arc<rustls::ServerConfig>>, answer: Answerer) -> (String, Received) {
    use std::io::{BufRead, BufReader, Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{}/hook", l.local_addr().unwrap());
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let g = got.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(tcp) = conn else { return };
            let mut conn: Box<dyn ReadWrite> = match &tls {
                None => Box::new(tcp),
                Some(cfg) => {
                    let c = rustls::ServerConnection::new(cfg.clone()).unwrap();
                    Box::new(rustls::StreamOwned::new(c, tcp))
                }
            };
            let (mut len, mut sig) = (0usize, String::new());
            let mut body = Vec::new();
            {
                let mut r = BufReader::new(&mut conn);
                loop {
                    let mut line = String::new();
                    // A client that gave up (a refused certificate) sends nothing.
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let (k, v) = line.split_once(':').unwrap_or(("", ""));
                    match k.to_ascii_lowercase().as_str() {
                        "content-length" => len = v.trim().parse().unwrap(),
                        "x-wirespeed-signature" => sig = v.trim().to_string(),
                        _ => {}
                    }
                }
                body.resize(len, 0);
                if len == 0 || r.read_exact(&mut body).is_err() {
                    continue;
                }
            }
            g.lock().unwrap().push((sig, body.clone()));
            let (status, text) = answer(&body);
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = conn.write_all(resp.as_bytes());
            let _ = conn.flush();
        }
    });
    (url, got)
}

trait ReadWrite: std::io::Read + std::io::Write {}
impl<T: std::io::Read + std::io::Write> ReadWrite for T {}

const SECRET: &str = "hook-secret-1";

fn audited_server(hook_url: &str) -> (TestServer, Captured, Arc<Events>) {
    let rules = format!(
        "[users]\nalice = \"{}\"\nbob = \"{}\"\n[paths.\"/\"]\nalice = \"rwd\"\nbob = \"r\"\n",
        password::hash(b"alice-pw").unwrap(),
        password::hash(b"bob-pw").unwrap()
    );
    let (shares, sessions) = signed_tables([5; 32]);
    let out = Captured::default();
    let hooks = Hooks::start(HookConfig {
        urls: vec![HookUrl::parse(hook_url).unwrap()],
        secret: Some(SECRET.as_bytes().to_vec()),
        ..HookConfig::default()
    })
    .unwrap();
    let events = Arc::new(Events::new(
        Some(Audit::to_sink(Box::new(out.clone())).unwrap()),
        Some(hooks),
    ));
    let cfg = ServiceConfig {
        users: Some(Arc::new(Users::from_text("users.toml", &rules).unwrap())),
        shares: Some(shares),
        sessions: Some(sessions),
        events: Some(events.clone()),
        ..ServiceConfig::default()
    };
    (
        TestServer::with_uploads(cfg, wirespeed_service::UploadsConfig::default()),
        out,
        events,
    )
}

fn basic(user: &str, pw: &str) -> String {
    let raw = format!("{user}:{pw}");
    format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, raw)
    )
}

#[test]
fn audit_and_hooks_tell_each_action_once_in_order_signed() {
    let (url, got) = receiver();
    let (s, out, events) = audited_server(&url);
    let alice = basic("alice", "alice-pw");
    let bob = basic("bob", "bob-pw");
    let a: &[(&str, &str)] = &[("Authorization", &alice), SAME_ORIGIN];
    // The script: each step's request, and what its line must say.
    let mut want: Vec<(&str, Option<&str>, &str, u16)> = Vec::new();
    let (r, cookie) = sign_in(&s, "alice", "alice-pw");
    assert_eq!(r.status, 200, "{}", r.text());
    want.push(("signin", Some("alice"), "/-/session", 200));
    assert_eq!(s.req("PUT", "/a.txt", a, b"hello").status, 201);
    want.push(("upload", Some("alice"), "/a.txt", 201));
    assert_eq!(
        s.req("GET", "/a.txt", &[("Authorization", &alice)], b"")
            .status,
        200
    );
    want.push(("download", Some("alice"), "/a.txt", 200));
    assert_eq!(
        s.req("GET", "/", &[("Authorization", &alice)], b"").status,
        200
    );
    want.push(("list", Some("alice"), "/", 200));
    let h = [
        ("Authorization", alice.as_str()),
        SAME_ORIGIN,
        ("Destination", "http://test/b.txt"),
    ];
    assert_eq!(s.req("COPY", "/a.txt", &h, b"").status, 201);
    want.push(("copy", Some("alice"), "/a.txt", 201));
    let h = [
        ("Authorization", alice.as_str()),
        SAME_ORIGIN,
        ("Destination", "http://test/c.txt"),
    ];
    assert_eq!(s.req("MOVE", "/b.txt", &h, b"").status, 201);
    want.push(("move", Some("alice"), "/b.txt", 201));
    let lockinfo = "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope>\
        <D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>";
    let h = [
        ("Authorization", alice.as_str()),
        SAME_ORIGIN,
        ("Depth", "0"),
    ];
    let r = s.req("LOCK", "/c.txt", &h, lockinfo.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    want.push(("lock", Some("alice"), "/c.txt", 200));
    let tok = format!(
        "<{}>",
        r.header("lock-token")
            .unwrap()
            .trim_matches(|c| c == '<' || c == '>')
    );
    let h = [
        ("Authorization", alice.as_str()),
        SAME_ORIGIN,
        ("Lock-Token", tok.as_str()),
    ];
    assert_eq!(s.req("UNLOCK", "/c.txt", &h, b"").status, 204);
    want.push(("unlock", Some("alice"), "/c.txt", 204));
    let r = s.req("POST", "/-/shares/a.txt", a, b"");
    assert_eq!(r.status, 201, "{}", r.text());
    want.push(("share.mint", Some("alice"), "/-/shares/a.txt", 201));
    let minted: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let link = minted["share"].as_str().unwrap().to_string();
    let used = format!("/a.txt?share={link}");
    assert_eq!(s.get(&used).status, 200);
    want.push(("download", None, "/a.txt", 200));
    let revoke = format!("/-/shares/?link={link}");
    let r = s.req("DELETE", &revoke, a, b"");
    assert_eq!(r.status, 204, "{}", r.text());
    want.push(("share.revoke", Some("alice"), "/-/shares/", 204));
    // A refusal is told too, with who was refused.
    let h = [("Authorization", bob.as_str()), SAME_ORIGIN];
    assert_eq!(s.req("DELETE", "/a.txt", &h, b"").status, 403);
    want.push(("delete", Some("bob"), "/a.txt", 403));
    assert_eq!(s.req("DELETE", "/a.txt", a, b"").status, 204);
    want.push(("delete", Some("alice"), "/a.txt", 204));
    let cookie = cookie.unwrap();
    let h = [("Cookie", cookie.as_str()), SAME_ORIGIN];
    assert_eq!(s.req("DELETE", "/-/session", &h, b"").status, 204);
    want.push(("signout", Some("alice"), "/-/session", 204));

    events.flush();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines.sort_by_key(|v| v["seq"].as_u64());
    assert_eq!(lines.len(), want.len(), "{text}");
    for (v, (action, user, path, status)) in lines.iter().zip(&want) {
        assert_eq!(v["action"], *action, "{v}");
        assert_eq!(v["user"].as_str(), *user, "{v}");
        assert_eq!(v["path"], *path, "{v}");
        assert_eq!(v["status"], *status, "{v}");
        assert_eq!(v["address"], "127.0.0.1", "{v}");
        assert!(v["time"].as_str().unwrap().ends_with('Z'), "{v}");
    }
    // The link's download names the link and the one it acts for.
    let used = &lines[9];
    assert_eq!(used["minter"], "alice", "{used}");
    assert!(used["link"].is_string(), "{used}");
    assert_eq!(lines[4]["to"], "http://test/b.txt");
    assert_eq!(lines[1]["bytes_in"], 5);
    assert_eq!(lines[2]["bytes_out"], 5);

    // The hook: the same events, each once, in order, signed.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while got.lock().unwrap().len() < want.len() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let got = got.lock().unwrap().clone();
    assert_eq!(got.len(), want.len());
    for (i, (sig, body)) in got.iter().enumerate() {
        assert_eq!(*sig, sign(SECRET.as_bytes(), body), "event {i}");
        let v: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!(v, lines[i], "event {i}");
        assert_eq!(v["seq"], i as u64 + 1);
    }
}

/// Refuses a file holding EICAR (reading the temporary file it is shown)
/// and any name ending in .exe, saying why; publishes the rest.
const CHECK: &str = r#"e=$(cat)
case "$e" in *'"action":"upload.before"'*) ;; *) exit 3;; esac
case "$e" in *'"path":"'*'.exe"'*) echo "no programs here"; exit 1;; esac
f=$(printf '%s' "$e" | sed -n 's/.*"file":"\([^"]*\)".*/\1/p')
if grep -q EICAR "$f"; then echo "virus found: EICAR"; echo more; exit 1; fi"#;

#[test]
fn a_pre_publication_hook_refuses_uploads_on_every_write_front() {
    let dir = tempfile::tempdir().unwrap();
    let gate = wirespeed_service::events::CommandGate {
        command: CHECK.into(),
        timeout: std::time::Duration::from_secs(20),
    };
    let storage = wirespeed_service::LocalStorage::new(dir.path())
        .unwrap()
        .with_fsync(false)
        .with_publish_gate(Arc::new(gate));
    let s = TestServer::with_uploads_on(
        storage,
        ServiceConfig::default(),
        wirespeed_service::UploadsConfig::default(),
    );
    let published = |name: &str| dir.path().join(name).exists();
    // PUT (WebDAV's PUT is the same route).
    let r = s.req("PUT", "/bad.txt", &[], b"xx EICAR xx");
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(r.text().contains("virus found: EICAR"), "{}", r.text());
    assert!(!published("bad.txt"));
    assert_eq!(s.req("PUT", "/tool.exe", &[], b"MZ").status, 422);
    assert!(!published("tool.exe"));
    assert_eq!(s.req("PUT", "/good.txt", &[], b"fine").status, 201);
    assert!(published("good.txt"));
    // A form POST.
    let form = |name: &str, content: &str| {
        let body = format!(
            "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{name}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n{content}\r\n--b--\r\n"
        );
        let h = [("Content-Type", "multipart/form-data; boundary=b")];
        s.req("POST", "/", &h, body.as_bytes())
    };
    assert_eq!(form("f.txt", "EICAR").status, 422);
    assert!(!published("f.txt"));
    assert!(form("g.txt", "ok").status < 300);
    assert!(published("g.txt"));
    // tus: creation, then the one PATCH that completes it.
    let tus = ("Tus-Resumable", "1.0.0");
    let r = s.req(
        "POST",
        "/-/uploads/t.txt",
        &[tus, ("Upload-Length", "5")],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let loc = r.header("location").unwrap().to_string();
    let h = [
        tus,
        ("Content-Type", "application/offset+octet-stream"),
        ("Upload-Offset", "0"),
    ];
    let r = s.req("PATCH", &loc, &h, b"EICAR");
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(!published("t.txt"));
    // IETF: one complete upload.
    let h = [
        ("Upload-Draft-Interop-Version", "8"),
        ("Upload-Complete", "?1"),
    ];
    let r = s.req("PUT", "/i.exe", &h, b"ietf!");
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(!published("i.exe"));
    // Nothing of the refused uploads is left behind but the uploads' own folder.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with(".wirespeed-"))
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(left, ["g.txt", "good.txt"]);
}

/// A self-signed certificate for 127.0.0.1 (its PEM in `dir`), as a
/// receiver's TLS config, and the hooks' client config trusting it
/// (`--hook-cacert`), or trusting only the built-in roots.
fn tls_pair(
    dir: &std::path::Path,
    trusted: bool,
) -> (
    Arc<rustls::ServerConfig>,
    wirespeed_service::events::HookTls,
) {
    let cert = wirespeed_tls::self_signed(dir).unwrap();
    let opts = wirespeed_tls::ClientTls {
        cacert: trusted.then(|| cert.cert_path.clone()),
        insecure_accept_anything: false,
    };
    let client = wirespeed_tls::client_config(&opts).unwrap();
    (Arc::new(cert.config), client)
}

#[test]
fn an_https_hook_gets_each_event_signed() {
    let dir = tempfile::tempdir().unwrap();
    let (server_tls, client_tls) = tls_pair(dir.path(), true);
    let (url, got) = receiver_with(Some(server_tls), |_| ("200 OK", "ok"));
    assert!(url.starts_with("https://"));
    let hooks = Hooks::start(HookConfig {
        urls: vec![HookUrl::parse(&url).unwrap()],
        secret: Some(SECRET.as_bytes().to_vec()),
        tls: Some(client_tls),
        ..HookConfig::default()
    })
    .unwrap();
    let events = Arc::new(Events::new(None, Some(hooks)));
    let s = TestServer::with(ServiceConfig {
        events: Some(events.clone()),
        ..ServiceConfig::default()
    });
    assert_eq!(s.put("/a.txt", b"hello").status, 201);
    assert_eq!(s.get("/a.txt").status, 200);
    events.flush();
    let got = got.lock().unwrap().clone();
    let actions: Vec<String> = got
        .iter()
        .map(|(sig, body)| {
            assert_eq!(*sig, sign(SECRET.as_bytes(), body));
            let v: serde_json::Value = serde_json::from_slice(body).unwrap();
            v["action"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(actions, ["upload", "download"]);
}

/// Refuses names ending in .exe, saying why; publishes the rest.
fn scanner(body: &[u8]) -> (&'static str, &'static str) {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    if v["path"].as_str().unwrap().ends_with(".exe") {
        ("422 Unprocessable Content", "no programs here\nsecond line")
    } else {
        ("204 No Content", "")
    }
}

/// A folder whose uploads a URL gate checks, and the server over it.
fn url_gated(gate: wirespeed_service::events::UrlGate) -> (tempfile::TempDir, TestServer) {
    let dir = tempfile::tempdir().unwrap();
    let storage = wirespeed_service::LocalStorage::new(dir.path())
        .unwrap()
        .with_fsync(false)
        .with_publish_gate(Arc::new(gate));
    let s = TestServer::with_uploads_on(
        storage,
        ServiceConfig::default(),
        wirespeed_service::UploadsConfig::default(),
    );
    (dir, s)
}

#[test]
fn a_pre_publication_url_refuses_uploads_over_https_and_fails_closed() {
    let certs = tempfile::tempdir().unwrap();
    let (server_tls, client_tls) = tls_pair(certs.path(), true);
    let (url, got) = receiver_with(Some(server_tls.clone()), scanner);
    let gate = wirespeed_service::events::UrlGate {
        url: HookUrl::parse(&url).unwrap(),
        secret: Some(SECRET.as_bytes().to_vec()),
        tls: Some(client_tls),
        timeout: std::time::Duration::from_secs(10),
    };
    let (dir, s) = url_gated(gate.clone());
    let r = s.req("PUT", "/tool.exe", &[], b"MZ");
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(
        r.text().trim().ends_with(": no programs here"),
        "{}",
        r.text()
    );
    assert!(!dir.path().join("tool.exe").exists());
    let ietf = [
        ("Upload-Draft-Interop-Version", "8"),
        ("Upload-Complete", "?1"),
    ];
    assert_eq!(s.req("POST", "/i.exe", &ietf, b"MZ").status, 422);
    assert!(!dir.path().join("i.exe").exists());
    assert_eq!(s.put("/fine.txt", b"ok").status, 201);
    assert!(dir.path().join("fine.txt").exists());
    let got = got.lock().unwrap().clone();
    assert_eq!(got.len(), 3);
    for (sig, body) in &got {
        assert_eq!(*sig, sign(SECRET.as_bytes(), body));
        let v: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!(v["action"], "upload.before");
    }
    // The same receiver, its certificate not trusted (only the built-in
    // roots): the check cannot be asked, so nothing is published.
    let (_, untrusted) = tls_pair(certs.path(), false);
    let (dir, s) = url_gated(wirespeed_service::events::UrlGate {
        tls: Some(untrusted),
        ..gate
    });
    let r = s.put("/fine.txt", b"ok");
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(r.text().contains("could not be asked"), "{}", r.text());
    assert!(!dir.path().join("fine.txt").exists());
}

/// The audit lines of what the trash does: listing, restoring (with the
/// entry), and the expiry sweep (what went for good, by nobody); and a
/// proxy's user header sent by a peer that is no trusted proxy, ignored
/// and told as such.
#[test]
fn the_trash_and_an_ignored_user_header_are_audited() {
    let rules = format!(
        "[users]\nalice = \"{}\"\n[paths.\"/\"]\nalice = \"rwd\"\n",
        password::hash(b"alice-pw").unwrap()
    );
    let out = Captured::default();
    let events = Arc::new(Events::new(
        Some(Audit::to_sink(Box::new(out.clone())).unwrap()),
        None,
    ));
    let cfg = ServiceConfig {
        users: Some(Arc::new(Users::from_text("users.toml", &rules).unwrap())),
        events: Some(events.clone()),
        trash_days: 30,
        proxy_sign_in: Some(ProxySignIn {
            user_header: "remote-user".into(),
            groups_header: None,
        }),
        ..ServiceConfig::default()
    };
    // The test's client, 127.0.0.1, is no trusted proxy.
    let server_cfg = ServerConfig {
        trusted_proxies: TrustedProxies::new(
            vec![TrustedProxies::parse_one("10.0.0.0/8").unwrap()],
        ),
        ..ServerConfig::default()
    };
    let s = TestServer::with_server(cfg, server_cfg);
    let alice = basic("alice", "alice-pw");
    let a: &[(&str, &str)] = &[("Authorization", &alice), SAME_ORIGIN];
    for name in ["/a.txt", "/b.txt"] {
        assert_eq!(s.req("PUT", name, a, b"bytes").status, 201);
        assert_eq!(s.req("DELETE", name, a, b"").status, 204);
    }
    // The entry of /b.txt went long ago: the next listing's sweep removes it.
    let trash = s.root.join(".wirespeed-trash");
    let records: Vec<_> = std::fs::read_dir(&trash)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    let mut ids = std::collections::HashMap::new();
    for r in &records {
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(r).unwrap()).unwrap();
        let id = r.file_stem().unwrap().to_str().unwrap().to_string();
        ids.insert(v["path"].as_str().unwrap().to_string(), id);
        if v["path"] == "/b.txt" {
            v["at"] = 1_000.into();
            std::fs::write(r, v.to_string()).unwrap();
        }
    }
    let r = s.req("GET", "/-/trash/", a, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let restore = format!("/-/trash?restore={}&as=a2.txt", ids["/a.txt"]);
    let r = s.req("POST", &restore, a, b"");
    assert_eq!(r.status, 201, "{}", r.text());
    // Carol's header from an untrusted peer: ignored (401), and said so.
    let h = [("Remote-User", "carol")];
    assert_eq!(s.req("GET", "/a2.txt", &h, b"").status, 401);
    assert_eq!(s.req("OPTIONS", "/", &h, b"").status, 401);

    events.flush();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Each worker thread writes its own buffer: in order by seq.
    lines.sort_by_key(|v| v["seq"].as_u64());
    let tail: Vec<_> = lines[4..]
        .iter()
        .map(|v| {
            (
                v["action"].as_str().unwrap(),
                v["path"].as_str().unwrap(),
                v["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tail,
        [
            ("trash.expire", "/b.txt", 200),
            ("trash.list", "/-/trash/", 200),
            ("trash.restore", "/-/trash", 201),
            ("download", "/a2.txt", 401),
            ("request", "/", 401),
        ],
        "{text}"
    );
    let expired = &lines[4];
    assert!(
        expired["user"].is_null() && expired["address"].is_null(),
        "{expired}"
    );
    assert_eq!(expired["entry"]["id"], ids["/b.txt"].as_str());
    assert_eq!(
        (
            expired["entry"]["by"].as_str(),
            expired["entry"]["size"].as_u64()
        ),
        (Some("alice"), Some(5))
    );
    assert!(!trash.join(&ids["/b.txt"]).exists());
    assert_eq!(lines[5]["user"], "alice");
    let restored = &lines[6];
    assert_eq!(restored["user"], "alice");
    assert_eq!(restored["entry"]["id"], ids["/a.txt"].as_str());
    assert_eq!(restored["entry"]["as"], "a2.txt");
    for ignored in &lines[7..] {
        assert!(ignored["user"].is_null(), "{ignored}");
        assert_eq!(ignored["ignored_user_header"], "carol", "{ignored}");
    }
    // Lines without the header do not carry the field.
    assert!(lines[..7]
        .iter()
        .all(|v| v.get("ignored_user_header").is_none()));
}

/// `[rate.user]` paces people the proxy signs in: carol (listed only in
/// `[groups]`) by her own line, erin (named only by the proxy) by the
/// `"@ops"` line of the group its header names. Loose bounds: speed is
/// the benchmark's to measure.
#[test]
fn proxy_signed_in_names_and_groups_get_their_rate() {
    let rules =
        "[groups]\nteam = [\"carol\"]\n[paths.\"/\"]\n\"@team\" = \"r\"\n\"@ops\" = \"r\"\n\
                 [rate.user]\ncarol = \"1M\"\n\"@ops\" = \"1M\"\n";
    let cfg = ServiceConfig {
        users: Some(Arc::new(Users::from_text("users.toml", rules).unwrap())),
        proxy_sign_in: Some(ProxySignIn {
            user_header: "remote-user".into(),
            groups_header: Some("remote-groups".into()),
        }),
        ..ServiceConfig::default()
    };
    let server_cfg = ServerConfig {
        trusted_proxies: TrustedProxies::new(vec![TrustedProxies::parse_one("127.0.0.1").unwrap()]),
        ..ServerConfig::default()
    };
    let s = TestServer::with_server(cfg, server_cfg);
    std::fs::write(s.root.join("big"), vec![1u8; 3 << 19]).unwrap();
    let took = |h: &[(&str, &str)]| {
        let t = std::time::Instant::now();
        let r = s.req("GET", "/big", h, b"");
        assert_eq!((r.status, r.body.len()), (200, 3 << 19));
        t.elapsed()
    };
    // Side by side: each has a bucket of its own.
    let (carol, erin) = std::thread::scope(|sc| {
        let c = sc.spawn(|| took(&[("Remote-User", "carol")]));
        let e = sc.spawn(|| took(&[("Remote-User", "erin"), ("Remote-Groups", "ops")]));
        (c.join().unwrap(), e.join().unwrap())
    });
    // 1.5 MiB at 1 MiB/s, less the bucket's first tenth of a second.
    let paced = std::time::Duration::from_millis(1000)..std::time::Duration::from_secs(5);
    assert!(paced.contains(&carol), "carol took {carol:?}");
    assert!(paced.contains(&erin), "erin took {erin:?}");
}
