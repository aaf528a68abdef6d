//! The control routes under `/-/`: health, the page's assets, metrics,
//! share links, the page's sign-in.

use wirespeed_net::{Error, Exchange, Handler, Response, Router};

use crate::config::ServiceConfig;
use crate::metrics;
use crate::page::assets;

/// `GET /-/health`: 200 while the process serves requests.
pub struct Health;

impl Handler for Health {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        let resp = Response::new(200)
            .header("Content-Type", "text/plain; charset=utf-8")
            .header("Cache-Control", "no-store");
        ex.send(resp, b"ok\n").await
    }
}

/// The control routes every router starts with: `/-/health`, the page's
/// `/-/assets/…`, `/-/shares/…` when share links are on, `/-/session` when
/// users sign in, and `/-/metrics`
/// when `cfg.metrics` is set.
pub(crate) fn control_routes(
    cfg: &ServiceConfig,
    files: std::sync::Arc<dyn crate::shares::Probe>,
) -> Router {
    let router = Router::new().route(&["GET"], "/-/health", Health).route(
        &["GET"],
        "/-/assets/*",
        assets::Assets,
    );
    let router = match &cfg.shares {
        Some(shares) => {
            let routes = || crate::events::Recorded {
                inner: crate::shares::ShareRoutes {
                    cfg: cfg.clone(),
                    policy: cfg.policy(),
                    shares: shares.clone(),
                    files: files.clone(),
                },
                events: cfg.events.clone(),
            };
            let methods = ["GET", "POST", "DELETE"];
            router
                .route(&methods, crate::shares::PREFIX, routes())
                .route(&methods, "/-/shares/*", routes())
        }
        None => router,
    };
    let router = match (&cfg.sessions, &cfg.users) {
        (Some(sessions), Some(users)) => {
            let routes = || crate::events::Recorded {
                inner: crate::session::SessionRoutes {
                    cfg: cfg.clone(),
                    policy: cfg.policy(),
                    users: users.clone(),
                    sessions: sessions.clone(),
                },
                events: cfg.events.clone(),
            };
            router
                .route(&["GET", "POST", "DELETE"], crate::session::PATH, routes())
                .route(&["POST"], crate::session::SIGN_OUT, routes())
        }
        _ => router,
    };
    match &cfg.metrics {
        Some(metrics) => {
            let page = metrics::MetricsPage {
                metrics: metrics.clone(),
                policy: cfg.policy(),
                allowed_hosts: cfg.allowed_hosts.clone(),
            };
            router.route(&["GET"], "/-/metrics", page)
        }
        None => router,
    }
}
