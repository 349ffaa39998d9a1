//! The HTTPS admission server's surface: the shared app state, the admission router with
//! health and readiness, and the metrics router. `listen` runs the TLS accept loop,
//! `process` starts the `serve` process, `tasks` runs its background work and `command` is
//! the `serve` command around them.

pub mod admission;
pub mod command;
pub mod devcert;
pub mod events;
pub mod listen;
pub mod metrics;
pub mod metrics_auth;
pub mod process;
pub mod tasks;
pub mod tls;

pub use crate::vocab::duration::parse_duration;
pub use command::{LogFormat, ServeArgs, run};
pub use listen::{Listen, MAX_HEADER_BYTES, serve_tls};
pub use process::{LogDecisions, Running, ServerOptions, claims_namespace, start};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};

use crate::cluster::ClusterState;
use crate::cluster::audit::Report;
use crate::config::Config;
use crate::engine::ClusterView;
use crate::engine::Versions;
use crate::inventory::InventoryStore;
use metrics::Metrics;

/// The API server caps admission bodies near 3 MiB.
pub const BODY_LIMIT: usize = 3 * 1024 * 1024;
/// Longest time to receive headers or a body; the API server's own timeout is at most 30 s.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Shared by every request.
pub struct App {
    pub config: Config,
    /// Cluster and controller versions; the controller's is re-read with `ccm.version: auto`.
    pub versions: arc_swap::ArcSwap<Versions>,
    pub metrics: Arc<Metrics>,
    /// The load balancer inventory, when configured.
    pub inventory: Option<Arc<InventoryStore>>,
    /// The cluster view (empty when standalone).
    pub cluster: Arc<ClusterState>,
    /// The last audit round.
    pub report: arc_swap::ArcSwap<Report>,
    /// Longest time to receive a request body.
    pub request_timeout: Duration,
    /// Config and TLS loaded, not shutting down.
    pub ready: AtomicBool,
    /// Shutting down: answers carry `Connection: close`.
    pub draining: AtomicBool,
    /// Listener claims in the API server (with a cluster and `claims.enabled`).
    pub claims: Option<Arc<crate::claims::Claims>>,
    /// Which decisions are logged at info.
    pub log_decisions: LogDecisions,
    /// Slots for admission requests being evaluated at once (`--max-inflight`).
    pub inflight: Arc<tokio::sync::Semaphore>,
    /// Load balancer facts from the provider's API (`inventory.cloud.enabled`).
    pub cloud: Option<Arc<crate::cloud::Cloud>>,
    /// The cluster's `LBGuardException`s (empty when standalone or `exceptions.enabled` is off).
    pub exceptions: Arc<crate::cluster::exceptions::ExceptionStore>,
}

/// Default `--max-connections`.
pub const MAX_CONNECTIONS: usize = 4096;
/// Default `--max-inflight`.
pub const MAX_INFLIGHT: usize = 256;

pub type AppState = Arc<App>;

impl App {
    pub fn new(config: Config, metrics: Arc<Metrics>) -> AppState {
        Arc::new(App {
            versions: arc_swap::ArcSwap::from_pointee(Versions::from_config(&config)),
            cluster: Arc::new(ClusterState::new(crate::vocab::route::Scope::of(&config))),
            report: arc_swap::ArcSwap::from_pointee(Report::default()),
            config,
            metrics,
            inventory: None,
            request_timeout: REQUEST_TIMEOUT,
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            claims: None,
            log_decisions: LogDecisions::Findings,
            inflight: Arc::new(tokio::sync::Semaphore::new(MAX_INFLIGHT)),
            cloud: None,
            exceptions: Arc::default(),
        })
    }

    /// Takes listener claims through `client` in `namespace`; releases them as this app's
    /// cluster view sees ports go, and collects stale ones. Call before sharing the app.
    pub fn enable_claims(self: &mut Arc<Self>, client: kube::Client, namespace: &str) {
        let claims = Arc::new(crate::claims::Claims::new(
            client,
            namespace,
            Arc::clone(&self.cluster),
            self.config.claims.clone(),
            self.metrics.claims.clone(),
        ));
        let released = crate::claims::watch_releases(
            &self.cluster,
            crate::vocab::route::Scope::of(&self.config),
        );
        Arc::clone(&claims).spawn(released);
        if let Some(app) = Arc::get_mut(self) {
            app.claims = Some(claims);
        }
    }
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(app): State<AppState>) -> axum::response::Response {
    let mut r = if app.ready.load(Ordering::Acquire) && app.cluster.synced() {
        (StatusCode::OK, "ready").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready").into_response()
    };
    close_if_draining(&app, &mut r);
    r
}

/// While shutting down, every answer closes its connection (HTTP/1.1), so a caller never
/// sends its next request into a connection about to close.
pub fn close_if_draining(app: &App, r: &mut axum::response::Response) {
    if app.draining.load(Ordering::Relaxed) {
        r.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
}

/// The admission router, usable without sockets.
pub fn router(app: AppState) -> Router {
    // Admissions past `--max-inflight` wait for a slot (inside the API server's timeout)
    // rather than fail; probes never wait behind them.
    let limit =
        tower::limit::GlobalConcurrencyLimitLayer::with_semaphore(Arc::clone(&app.inflight));
    Router::new()
        .route("/validate", post(admission::validate))
        .route("/mutate", post(admission::mutate_handler))
        .route_layer(limit)
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        // The handlers enforce BODY_LIMIT themselves, with a clear 413.
        .layer(DefaultBodyLimit::disable())
        .with_state(app)
}

async fn metrics_text(State(app): State<AppState>) -> impl IntoResponse {
    let age = app.cluster.stale_for().map_or(0, |a| a.as_secs());
    app.metrics.cache_age_seconds.set(age as i64);
    app.metrics
        .cached_services
        .set(app.cluster.service_count() as i64);
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.render(),
    )
}

async fn report(State(app): State<AppState>) -> impl IntoResponse {
    axum::Json((**app.report.load()).clone())
}

/// The metrics port: `/metrics` and the audit `/report`; with `auth`, every request must
/// carry a bearer token allowed to `get` its path (TokenReview + SubjectAccessReview).
pub fn metrics_router(app: AppState, auth: Option<Arc<metrics_auth::MetricsAuth>>) -> Router {
    let router = Router::new()
        .route("/metrics", get(metrics_text))
        .route("/report", get(report))
        .with_state(app);
    match auth {
        Some(auth) => router.layer(axum::middleware::from_fn_with_state(
            auth,
            metrics_auth::require,
        )),
        None => router,
    }
}
