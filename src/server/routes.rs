//! The admission router with health and readiness, and the metrics router.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};

use super::state::{AppState, close_if_draining};
use super::{admission, metrics_auth};
use crate::engine::ClusterView;

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
