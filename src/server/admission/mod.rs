//! The admission edge: AdmissionReview in, AdmissionReview out; the engine sees only its
//! own `Input`. This file holds the handlers and the response side (metrics, the decision
//! log); `decode` reads requests, `decide` turns one into a verdict, a patch and the listener
//! claims to take, `answer` holds what is answered and `encode` writes it as JSON.

mod answer;
mod decide;
mod decode;
mod encode;
mod exception;

use std::time::Instant;

use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

pub use answer::{Endpoint, Reject};
use decide::{Step, apply_claims, decide, prepare};
pub use encode::encode_review;
use encode::review_response;
use tracing::Instrument;

use super::state::{AppState, BODY_LIMIT, LogDecisions, close_if_draining};

pub async fn validate(State(app): State<AppState>, req: Request) -> Response {
    handle(app, Endpoint::Validate, req.into_body()).await
}

pub async fn mutate_handler(State(app): State<AppState>, req: Request) -> Response {
    handle(app, Endpoint::Mutate, req.into_body()).await
}

fn bad_request(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// A request that gets no AdmissionReview back (unreadable, too big, malformed): the API
/// server counts it as a webhook failure, so it is counted as `verdict="error"`.
fn failed(
    app: &AppState,
    endpoint: Endpoint,
    status: StatusCode,
    message: impl Into<String>,
) -> Response {
    app.metrics
        .requests
        .get_or_create(&super::metrics::RequestLabels {
            endpoint: endpoint.as_str(),
            operation: "UNKNOWN",
            verdict: "error",
        })
        .inc();
    bad_request(status, message)
}

/// Answers one admission request at `endpoint`.
pub async fn handle(app: AppState, endpoint: Endpoint, body: Body) -> Response {
    // Admissions past `--max-inflight` wait for a slot (inside the API server's timeout)
    // rather than fail. The semaphore is never closed; were it, the request goes on.
    let _slot = app.inflight.acquire().await.ok();
    let started = Instant::now();
    let bytes =
        match tokio::time::timeout(app.request_timeout, axum::body::to_bytes(body, BODY_LIMIT))
            .await
        {
            Err(_) => {
                return failed(
                    &app,
                    endpoint,
                    StatusCode::REQUEST_TIMEOUT,
                    "request body not received in time",
                );
            }
            Ok(Err(e)) => {
                let too_big = std::error::Error::source(&e)
                    .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
                return if too_big {
                    failed(
                        &app,
                        endpoint,
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("request body exceeds {} bytes", BODY_LIMIT),
                    )
                } else {
                    failed(
                        &app,
                        endpoint,
                        StatusCode::BAD_REQUEST,
                        format!("cannot read request body: {e}"),
                    )
                };
            }
            Ok(Ok(b)) => b,
        };
    // One span per request, covering the evaluation; fields are recorded once parsed. The
    // decision line repeats them so JSON logs carry them on the line itself. It is a debug
    // span: at info, formatting its fields on every request cost about 10% of throughput
    // (BENCHMARKS.md) and added nothing the decision line does not say.
    let span = tracing::debug_span!(
        "admission",
        endpoint = endpoint.as_str(),
        uid = tracing::field::Empty,
        namespace = tracing::field::Empty,
        name = tracing::field::Empty,
        operation = tracing::field::Empty,
        dry_run = tracing::field::Empty,
    );
    let step = span.in_scope(|| prepare(&bytes));
    let answer = match step {
        Step::Done(r) => *r,
        Step::Exception(r) => Ok(exception::review(&app, *r)),
        Step::Ready(p) => {
            let view = match &app.cloud {
                Some(cloud) => {
                    let ids: Vec<String> = cloud
                        .named_id(p.input.object.as_ref())
                        .into_iter()
                        .collect();
                    let groups = cloud.named_server_groups(p.input.object.as_ref());
                    Some(
                        cloud
                            .view(&ids, &groups, app.inventory_snapshot())
                            .instrument(span.clone())
                            .await,
                    )
                }
                None => None,
            };
            span.in_scope(|| decide(&app, endpoint, *p, view.as_ref()))
        }
    };
    let mut answer = match answer {
        Ok(a) => a,
        Err(Reject(message)) => return failed(&app, endpoint, StatusCode::BAD_REQUEST, message),
    };
    if let (false, Some(claims)) = (answer.claims.is_empty(), &app.claims) {
        let keys = std::mem::take(&mut answer.claims);
        // A CREATE with generateName has no name yet: its own request is the holder, so two
        // such Services never pass for one (the claim goes stale once the real name shows).
        let holder = if answer.name.is_empty() {
            format!(
                "{}/(generated in {})",
                answer.namespace, answer.response.uid
            )
        } else {
            format!("{}/{}", answer.namespace, answer.name)
        };
        let outcome = claims.claim(&holder, &keys).await;
        span.in_scope(|| apply_claims(&app, &mut answer, &keys, outcome));
    }
    let elapsed = started.elapsed();
    let verdict = if answer.response.allowed {
        "allowed"
    } else {
        "denied"
    };
    let m = &app.metrics;
    m.requests
        .get_or_create(&super::metrics::RequestLabels {
            endpoint: endpoint.as_str(),
            operation: answer.operation,
            verdict,
        })
        .inc();
    m.latency
        .get_or_create(&super::metrics::EndpointLabels {
            endpoint: endpoint.as_str(),
        })
        .observe(elapsed.as_secs_f64());
    // A clean allow is the common case and says nothing an operator acts on: it goes to
    // debug unless `--log-decisions all`, which keeps the log (and its cost) to findings.
    let r = &answer.response;
    let notable = !r.allowed
        || r.warnings.as_ref().is_some_and(|w| !w.is_empty())
        || r.patch.is_some()
        || !r.audit_annotations.is_empty()
        || app.log_decisions == LogDecisions::All;
    macro_rules! decision {
        ($level:expr) => {
            span.in_scope(|| {
                tracing::event!(
                    $level,
                    uid = answer.response.uid.as_str(),
                    namespace = answer.namespace.as_str(),
                    name = answer.name.as_str(),
                    operation = answer.operation,
                    dry_run = answer.dry_run,
                    verdict,
                    rules = answer::rule_list(&answer.rules).as_str(),
                    latency_us = elapsed.as_micros() as u64,
                    "admission decision"
                )
            })
        };
    }
    if notable {
        decision!(tracing::Level::INFO);
    } else {
        decision!(tracing::Level::DEBUG);
    }
    let mut r = review_response(answer.response);
    close_if_draining(&app, &mut r);
    r
}
