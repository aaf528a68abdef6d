//! `/-/session`: the browser page's sign-in. `POST` takes a name and a
//! password (JSON, or an HTML form) through the same argon2id check,
//! back-off and unknown-user cost as HTTP Basic (`Users::sign_in`), and
//! sets the session cookie (`policy/sessions.rs`); `DELETE` (or a form's
//! `POST /-/session/sign-out`) signs out: the session is revoked on the
//! server and the cookie cleared; `GET` says who
//! the cookie signs in. Writes from another origin are refused (a page
//! elsewhere must not sign a browser in or out).

use std::sync::Arc;

use wirespeed_net::{Error, Exchange, Handler, Response};

use crate::config::ServiceConfig;
use crate::policy::basic::Credentials;
use crate::policy::sessions::Sessions;
use crate::policy::users::SignIn;
use crate::policy::{Principal, Users};
use crate::Policy;

/// The route.
pub const PATH: &str = "/-/session";
/// Sign-out by a plain form (`POST`), for a page without scripts.
pub const SIGN_OUT: &str = "/-/session/sign-out";

/// A sign-in body is a name and a password: more is refused.
const MAX_BODY: usize = 8 * 1024;

pub struct SessionRoutes {
    pub cfg: ServiceConfig,
    pub policy: Policy,
    pub users: Arc<Users>,
    pub sessions: Arc<Sessions>,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

async fn send_json(ex: &mut Exchange, resp: Response, v: &serde_json::Value) -> Result<(), Error> {
    let resp = resp
        .header("Content-Type", "application/json")
        .header("Cache-Control", "no-store");
    ex.send(resp, format!("{v}\n").as_bytes()).await
}

/// The name and password of a sign-in body: JSON `{"name", "password"}`
/// or a form's `name=…&password=…` (`user` is taken for `name`); the
/// form's `next`, a local path to go to afterwards.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SignInForm {
    pub name: String,
    pub password: String,
    pub next: Option<String>,
    /// Sent as an HTML form (answered with a redirect, not JSON).
    pub html_form: bool,
}

/// Why a sign-in body cannot be read.
#[derive(Debug, PartialEq, Eq)]
pub enum FormError {
    /// Neither JSON nor a form.
    MediaType,
    /// Unreadable, or no name or password.
    Malformed,
}

/// Read a sign-in body of `content_type`. Sans-IO.
pub fn parse_form(content_type: Option<&str>, body: &[u8]) -> Result<SignInForm, FormError> {
    let ct = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase());
    let mut form = SignInForm::default();
    match ct.as_deref() {
        Some("application/json") => {
            let v: serde_json::Value =
                serde_json::from_slice(body).map_err(|_| FormError::Malformed)?;
            let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
            form.name = field("name").or_else(|| field("user")).unwrap_or_default();
            form.password = field("password").ok_or(FormError::Malformed)?;
        }
        Some("application/x-www-form-urlencoded") => {
            form.html_form = true;
            let mut password = None;
            for (k, v) in form_urlencoded::parse(body) {
                match &*k {
                    "name" | "user" => form.name = v.into_owned(),
                    "password" => password = Some(v.into_owned()),
                    "next" => form.next = Some(v.into_owned()),
                    _ => {}
                }
            }
            form.password = password.ok_or(FormError::Malformed)?;
        }
        _ => return Err(FormError::MediaType),
    }
    if form.name.is_empty() {
        return Err(FormError::Malformed);
    }
    // Only a path on this server: never `//elsewhere` or a scheme, nor
    // control characters (browsers drop a tab or a newline from a
    // `Location`, so `/\t/elsewhere` would become `//elsewhere`).
    form.next = form.next.filter(|n| {
        n.starts_with('/')
            && !n.starts_with("//")
            && !n.contains('\\')
            && !n.chars().any(char::is_control)
    });
    Ok(form)
}

/// Whether a request came over TLS (as the server or a trusted proxy
/// says).
fn over_tls(ex: &Exchange, sessions: &Sessions) -> bool {
    sessions.secure || ex.forwarded_proto() == Some("https")
}

/// The session cookie value a request presents: this server's cookie
/// ([`Sessions::cookie_name`]) sent once (`None` without sessions).
fn presented(ex: &Exchange, sessions: &Sessions) -> Option<String> {
    let https = ex.forwarded_proto() == Some("https");
    let (host, cookie) = (ex.header_str("host"), ex.header_str("cookie"));
    sessions.presented(host, cookie, https).map(str::to_owned)
}

impl Handler for SessionRoutes {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        crate::respond::check_host(self.cfg.allowed_hosts.as_ref(), ex)?;
        if ex.method() != "GET" {
            crate::respond::refuse_cross_origin(
                ex,
                "cross-origin sign-in refused: a page on another site may not sign you in or out",
            )?;
        }
        let secure = over_tls(ex, &self.sessions);
        let host = ex.header_str("host").map(str::to_owned);
        let host = host.as_deref();
        let cookie = presented(ex, &self.sessions);
        let sign_out = ex.path() == SIGN_OUT;
        match ex.method() {
            "POST" if sign_out => {
                // A page without scripts signs out with a form: back home.
                self.sign_out(ex, cookie.as_deref());
                let resp = Response::new(303)
                    .header("Set-Cookie", self.sessions.clear_cookie(host, secure))
                    .header("Location", format!("{}/", ex.base()))
                    .header("Cache-Control", "no-store");
                ex.send(resp, b"").await
            }
            "POST" => self.sign_in(ex, host, secure).await,
            "DELETE" if !sign_out => {
                self.sign_out(ex, cookie.as_deref());
                let resp = Response::new(204)
                    .header("Set-Cookie", self.sessions.clear_cookie(host, secure))
                    .header("Cache-Control", "no-store");
                ex.send(resp, b"").await
            }
            "GET" => {
                let who = cookie
                    .as_deref()
                    .and_then(|t| self.policy.session_user(t, ex.client_ip()));
                let user = match who {
                    Some(Principal::User(name)) => serde_json::Value::from(name.as_str()),
                    _ => serde_json::Value::Null,
                };
                send_json(ex, Response::new(200), &serde_json::json!({ "user": user })).await
            }
            _ => Err(Error::status(405, "method not allowed")),
        }
    }
}

impl SessionRoutes {
    /// End the cookie's session, if it is a live one.
    fn sign_out(&self, ex: &Exchange, cookie: Option<&str>) {
        let Some(token) = cookie else {
            return;
        };
        if let Ok(session) = self.sessions.verify(token, now()) {
            self.sessions.revoke(&session, now());
            crate::storage::changes::set_actor(session.user.as_str().into());
            tracing::info!(target: "wirespeed::signin", user = %session.user, client = %ex.client_ip(), "signed out");
        }
    }

    async fn sign_in(
        &self,
        ex: &mut Exchange,
        host: Option<&str>,
        secure: bool,
    ) -> Result<(), Error> {
        if ex.content_length().is_some_and(|n| n > MAX_BODY as u64) {
            crate::respond::close_if_body(ex);
            return Err(Error::status(413, "a sign-in is a name and a password"));
        }
        let body = ex.read_body_to_vec(MAX_BODY).await?;
        let form = match parse_form(ex.header_str("content-type"), &body) {
            Ok(f) => f,
            Err(FormError::MediaType) => {
                return Err(Error::status(
                    415,
                    "send the name and password as JSON or as a form",
                ))
            }
            Err(FormError::Malformed) => {
                return Err(Error::status(400, "a sign-in needs a name and a password"))
            }
        };
        let creds = Credentials {
            user: form.name.clone(),
            password: form.password.into_bytes(),
        };
        // The stamp is that of the hash the password was checked against,
        // never of one a reload put in meanwhile.
        let (name, stamp) = match self.users.sign_in(&creds, ex.client_ip()).await {
            SignIn::User { name, stamp } => {
                // The audit trail and hooks name who signed in.
                crate::storage::changes::set_actor(name.as_str().into());
                (name, stamp)
            }
            SignIn::TooMany { retry_after } => {
                let secs = crate::policy::limiter::whole_seconds(retry_after);
                let resp = Response::new(429).header("Retry-After", secs.to_string());
                let says = "too many sign-in attempts: try again later";
                return send_json(
                    ex,
                    resp,
                    &serde_json::json!({ "error": says, "retry_after": secs }),
                )
                .await;
            }
            SignIn::Wrong => {
                let resp = Response::new(401).header(
                    "WWW-Authenticate",
                    format!(
                        "Session realm=\"wirespeed\", form=\"{}/-/session\"",
                        ex.base()
                    ),
                );
                return send_json(
                    ex,
                    resp,
                    &serde_json::json!({ "error": "wrong user name or password" }),
                )
                .await;
            }
        };
        let (session, token) = self
            .sessions
            .mint(name.as_str(), stamp, now())
            .map_err(|e| Error::status(503, e))?;
        tracing::info!(target: "wirespeed::signin", user = %name, client = %ex.client_ip(), "signed in (session)");
        let resp = Response::new(if form.html_form { 303 } else { 200 })
            .header("Set-Cookie", self.sessions.set_cookie(host, &token, secure));
        if form.html_form {
            // Only back under this server's prefix, never to a
            // neighbour's path on the same host.
            let home = format!("{}/", ex.base());
            let to = form
                .next
                .as_deref()
                .filter(|n| n.starts_with(&home))
                .unwrap_or(&home);
            let resp = resp
                .header("Location", to)
                .header("Cache-Control", "no-store");
            return ex.send(resp, b"").await;
        }
        send_json(
            ex,
            resp,
            &serde_json::json!({ "user": name.as_str(), "expires": session.expires }),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn json_and_forms() {
        let f = parse_form(
            Some("application/json; charset=utf-8"),
            br#"{"name":"bob","password":"pw"}"#,
        )
        .unwrap();
        assert_eq!((f.name.as_str(), f.password.as_str()), ("bob", "pw"));
        assert!(!f.html_form);
        let f = parse_form(
            Some("application/x-www-form-urlencoded"),
            b"user=b%C3%B6b&password=a+b%26c&next=%2Fteam%2F",
        )
        .unwrap();
        assert_eq!(f.name, "böb");
        assert_eq!(f.password, "a b&c");
        assert_eq!(f.next.as_deref(), Some("/team/"));
        assert!(f.html_form);
        let f = parse_form(
            Some("application/x-www-form-urlencoded"),
            b"name=a&password=&next=//evil.example/",
        )
        .unwrap();
        assert_eq!(f.next, None, "never another host");
        for bad in [
            "%2F%09%2Fevil.example",
            "/%0A/evil.example",
            "/%0D%0A/x",
            "/a%7Fb",
        ] {
            let body = format!("name=a&password=p&next={bad}");
            let f = parse_form(Some("application/x-www-form-urlencoded"), body.as_bytes());
            assert_eq!(f.unwrap().next, None, "{bad}");
        }
        assert_eq!(f.password, "");
        assert_eq!(
            parse_form(Some("text/plain"), b"x"),
            Err(FormError::MediaType)
        );
        assert_eq!(parse_form(None, b"x"), Err(FormError::MediaType));
        assert_eq!(
            parse_form(Some("application/json"), br#"{"name":"bob"}"#),
            Err(FormError::Malformed)
        );
        assert_eq!(
            parse_form(Some("application/json"), br#"{"password":"x"}"#),
            Err(FormError::Malformed)
        );
    }

    proptest! {
        #[test]
        fn never_panics(body in prop::collection::vec(any::<u8>(), 0..100), json in any::<bool>()) {
            let ct = if json { "application/json" } else { "application/x-www-form-urlencoded" };
            let _ = parse_form(Some(ct), &body);
        }
    }
}
