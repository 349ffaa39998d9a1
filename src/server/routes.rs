//! The admission router with health and readiness, the admission port's service around it,
//! and the metrics router.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower::ServiceExt;

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

/// The admission router, usable without sockets. Admissions wait for an in-flight slot in
/// their handler; probes never wait behind them.
pub fn router(app: AppState) -> Router {
    Router::new()
        .route("/validate", post(admission::validate))
        .route("/mutate", post(admission::mutate_handler))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        // The handlers enforce BODY_LIMIT themselves, with a clear 413.
        .layer(DefaultBodyLimit::disable())
        .with_state(app)
}

/// The admission port's service: `POST /validate` and `/mutate` straight to their handler,
/// anything else through `router`. The router's matching, per-request service clones,
/// extensions and boxed layers cost some 8,000 instructions an admission (BENCHMARKS.md,
/// #41, eleventh pass); the answers are the same.
#[derive(Clone)]
pub struct AdmissionService {
    app: AppState,
    router: Router,
}

/// The service `serve` runs on the admission port.
pub fn admission_service(app: AppState) -> AdmissionService {
    AdmissionService {
        router: router(Arc::clone(&app)),
        app,
    }
}

impl<B> tower::Service<axum::http::Request<B>> for AdmissionService
where
    B: axum::body::HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: axum::http::Request<B>) -> Self::Future {
        let endpoint = match (req.method(), req.uri().path()) {
            (&Method::POST, "/validate") => Some(admission::Endpoint::Validate),
            (&Method::POST, "/mutate") => Some(admission::Endpoint::Mutate),
            _ => None,
        };
        match endpoint {
            Some(endpoint) => {
                let app = Arc::clone(&self.app);
                let body = Body::new(req.into_body());
                Box::pin(async move { Ok(admission::handle(app, endpoint, body).await) })
            }
            None => {
                let req: Request = req.map(Body::new);
                Box::pin(self.router.clone().oneshot(req))
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    use super::{admission_service, router};
    use crate::server::App;
    use crate::server::metrics::Metrics;

    const UPDATE: &str = include_str!("../../tests/fixtures/review-update.json");
    const CREATE: &str = include_str!("../../tests/fixtures/review-create.json");

    fn denied_update() -> String {
        let mut r: serde_json::Value = serde_json::from_str(UPDATE).unwrap();
        let anns = &mut r["request"]["object"]["metadata"]["annotations"];
        anns["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners"] =
            "yes".into();
        anns["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-adress-type"] =
            "intranet".into();
        r.to_string()
    }

    async fn answer<S>(svc: S, method: &str, path: &str, body: &str) -> (u16, Vec<u8>)
    where
        S: tower::Service<
                Request<Body>,
                Response = axum::response::Response,
                Error = std::convert::Infallible,
            >,
    {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, bytes.to_vec())
    }

    /// The admission port's service answers every request as the router does: its own path
    /// for the two admissions, the router's for the rest.
    #[tokio::test]
    async fn the_service_answers_as_the_router_does() {
        let config = crate::engine::parse_config(
            "defaults:\n  annotations:\n    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-remove-unscheduled-backend: \"on\"\n",
            "routes",
        )
        .unwrap();
        let app = App::new(config, Arc::new(Metrics::new()));
        app.ready.store(true, std::sync::atomic::Ordering::Release);
        let denied = denied_update();
        let cases = [
            ("POST", "/validate", UPDATE, 200),
            ("POST", "/validate", CREATE, 200),
            ("POST", "/validate", denied.as_str(), 200),
            ("POST", "/mutate", CREATE, 200),
            ("POST", "/validate", "{", 400),
            ("GET", "/validate", "", 405),
            ("PUT", "/mutate", CREATE, 405),
            ("GET", "/healthz", "", 200),
            ("GET", "/readyz", "", 200),
            ("POST", "/validate/", UPDATE, 404),
            ("POST", "/other", UPDATE, 404),
        ];
        for (method, path, body, status) in cases {
            let ours = answer(admission_service(Arc::clone(&app)), method, path, body).await;
            let theirs = answer(router(Arc::clone(&app)), method, path, body).await;
            assert_eq!(ours.0, status, "{method} {path}");
            assert_eq!(ours, theirs, "{method} {path}");
        }
        // The cases above reach the engine: a denial, a patch.
        let (_, denial) = answer(
            admission_service(Arc::clone(&app)),
            "POST",
            "/validate",
            &denied,
        )
        .await;
        let denial: serde_json::Value = serde_json::from_slice(&denial).unwrap();
        assert_eq!(denial["response"]["allowed"], false, "{denial}");
        let (_, patch) = answer(
            admission_service(Arc::clone(&app)),
            "POST",
            "/mutate",
            CREATE,
        )
        .await;
        let patch: serde_json::Value = serde_json::from_slice(&patch).unwrap();
        assert!(patch["response"]["patch"].is_string(), "{patch}");
    }
}
