//! Running it for a team: sign-in by an identity proxy in front (its user
//! and groups headers believed from a trusted proxy only, the rules file
//! giving names and "@group"s their rights).

mod common;

use std::sync::Arc;

use common::*;
use wirespeed_net::{ServerConfig, TrustedProxies};
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
