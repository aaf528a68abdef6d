//! Handlers and a small typed router. A handler is a type implementing
//! [`Handler`] (an `async fn` in a trait impl); the router dispatches on method
//! and path to boxed handlers and answers 404/405 itself.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::{Error, Exchange};

/// Answers requests. Implement with an `async fn`:
///
/// ```ignore
/// struct Hello;
/// impl Handler for Hello {
///     async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
///         ex.send_text(200, "hello").await
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, ex: &mut Exchange) -> impl Future<Output = Result<(), Error>> + Send;
}

type BoxFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

/// Object-safe mirror of [`Handler`] so routes can hold different handler types.
trait DynHandler: Send + Sync {
    fn call<'a>(&'a self, ex: &'a mut Exchange) -> BoxFuture<'a>;
}

impl<H: Handler> DynHandler for H {
    fn call<'a>(&'a self, ex: &'a mut Exchange) -> BoxFuture<'a> {
        Box::pin(self.handle(ex))
    }
}

enum PathPattern {
    Exact(String),
    /// Pattern written as `/prefix/*`: the path starts with `/prefix/`.
    Prefix(String),
}

impl PathPattern {
    fn parse(pattern: &str) -> Self {
        match pattern.strip_suffix('*') {
            Some(prefix) => PathPattern::Prefix(prefix.to_string()),
            None => PathPattern::Exact(pattern.to_string()),
        }
    }

    fn matches(&self, path: &str) -> bool {
        match self {
            PathPattern::Exact(p) => path == p,
            PathPattern::Prefix(p) => path.starts_with(p.as_str()),
        }
    }
}

struct Route {
    methods: Vec<String>,
    pattern: PathPattern,
    name: Arc<str>,
    handler: Arc<dyn DynHandler>,
}

/// Routes by method and path; first match wins, in the order added.
///
/// ```ignore
/// let router = Router::new()
///     .route(&["GET"], "/-/health", Health)
///     .route(&["GET", "PUT", "DELETE"], "/*", Files::new(root));
/// ```
/// Patterns match the path exactly as sent, still percent-encoded
/// (`/%2D/health` is not `/-/health`): handlers behind a prefix must decode
/// and validate the rest of the path themselves, and a route that guards
/// something must not rely on a more specific route matching first.
/// `GET` routes also answer `HEAD`. A path that matches a route but not its
/// method gets 405 with `Allow`; no match at all gets 404.
#[derive(Default)]
pub struct Router {
    routes: Vec<Route>,
}

impl Router {
    pub fn new() -> Self {
        Router::default()
    }

    /// Add a route. `pattern` is an exact path, or a prefix ending in `*`.
    pub fn route<H: Handler>(mut self, methods: &[&str], pattern: &str, handler: H) -> Self {
        let mut methods: Vec<String> = methods.iter().map(|m| m.to_string()).collect();
        if methods.iter().any(|m| m == "GET") && !methods.iter().any(|m| m == "HEAD") {
            methods.push("HEAD".to_string());
        }
        self.routes.push(Route {
            methods,
            pattern: PathPattern::parse(pattern),
            name: Arc::from(pattern),
            handler: Arc::new(handler),
        });
        self
    }
}

impl Handler for Router {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        let mut allowed: Vec<&str> = Vec::new();
        for route in &self.routes {
            if !route.pattern.matches(ex.path()) {
                continue;
            }
            if route.methods.iter().any(|m| m == ex.method()) {
                ex.set_route(route.name.clone());
                return route.handler.call(ex).await;
            }
            allowed.extend(route.methods.iter().map(String::as_str));
        }
        if allowed.is_empty() {
            return Err(Error::status(404, "not found"));
        }
        allowed.sort_unstable();
        allowed.dedup();
        let resp = crate::Response::new(405)
            .header("Allow", allowed.join(", "))
            .header("Content-Type", "text/plain; charset=utf-8");
        ex.send(resp, b"method not allowed\n").await
    }
}

#[cfg(test)]
mod tests {
    use super::PathPattern;

    #[test]
    fn patterns() {
        assert!(PathPattern::parse("/-/health").matches("/-/health"));
        assert!(!PathPattern::parse("/-/health").matches("/-/healthz"));
        assert!(PathPattern::parse("/*").matches("/a/b"));
        assert!(PathPattern::parse("/-/*").matches("/-/x"));
        assert!(!PathPattern::parse("/-/*").matches("/x"));
    }
}
