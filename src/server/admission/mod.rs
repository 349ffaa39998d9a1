//! The admission edge: AdmissionReview in, AdmissionReview out; the engine sees only its
//! own `Input`. This file holds the handlers and the response side (kube's
//! `AdmissionResponse`, metrics, the decision log); `decode` reads requests, `decide` turns
//! one into a verdict, a patch and the listener claims to take, `answer` holds what is
//! answered.

mod answer;
mod decide;
mod decode;
mod exception;

use std::time::Instant;

use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kube::core::admission::AdmissionResponse;
use serde_json::{Value, json};

pub use answer::{Endpoint, Reject};
use decide::{Step, apply_claims, decide, prepare};
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

async fn handle(app: AppState, endpoint: Endpoint, body: Body) -> Response {
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
                    uid = %answer.response.uid,
                    namespace = %answer.namespace,
                    name = %answer.name,
                    operation = answer.operation,
                    dry_run = answer.dry_run,
                    verdict,
                    rules = %answer::RuleIds(&answer.rules),
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

/// The AdmissionReview as the HTTP response: `encode_review`'s JSON, byte for byte, written
/// without building its `Value` tree (an allocation per key, and the keys sorted into maps)
/// for the answers without a patch, nearly all of them.
fn review_response(response: AdmissionResponse) -> Response {
    let plain = response.patch.is_none()
        && response.result.metadata.is_none()
        && response.result.details.is_none();
    if !plain {
        return Json(encode_review(response)).into_response();
    }
    // Sized for the answer up front: growing the buffer while writing a denial's message
    // and warnings reallocated it four times (some 10,000 instructions, BENCHMARKS.md #41).
    let text: usize = response.result.message.len()
        + response
            .warnings
            .iter()
            .flatten()
            .map(String::len)
            .sum::<usize>()
        + response
            .audit_annotations
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>();
    let mut body = Vec::with_capacity(256 + text + text / 8);
    if serde_json::to_writer(&mut body, &PlainReview::of(&response)).is_err() {
        body.clear();
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// An AdmissionReview without a patch, its keys in the order of `encode_review`'s `Value`
/// (sorted, as serde_json's maps keep them), each skipped where kube's types skip it.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PlainReview<'a> {
    api_version: &'a str,
    kind: &'a str,
    response: PlainResponse<'a>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PlainResponse<'a> {
    allowed: bool,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    audit_annotations: std::collections::BTreeMap<&'a str, &'a str>,
    status: PlainStatus<'a>,
    uid: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    warnings: Option<&'a [String]>,
}

#[derive(serde::Serialize)]
struct PlainStatus<'a> {
    #[serde(skip_serializing_if = "is_zero")]
    code: u16,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a kube::core::response::StatusSummary>,
}

fn is_zero(n: &u16) -> bool {
    *n == 0
}

impl<'a> PlainReview<'a> {
    fn of(r: &'a AdmissionResponse) -> Self {
        Self {
            api_version: &r.types.api_version,
            kind: &r.types.kind,
            response: PlainResponse {
                allowed: r.allowed,
                audit_annotations: r
                    .audit_annotations
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect(),
                status: PlainStatus {
                    code: r.result.code,
                    message: &r.result.message,
                    reason: &r.result.reason,
                    status: r.result.status.as_ref(),
                },
                uid: &r.uid,
                warnings: r.warnings.as_deref(),
            },
        }
    }
}

/// The AdmissionReview JSON. kube serializes `patch` (Go `[]byte`) as an array of numbers
/// (kube-rs issue 1781); the API server requires base64, so it is encoded here.
pub fn encode_review(mut response: AdmissionResponse) -> Value {
    use base64::Engine;
    let patch = response.patch.take();
    let mut review = serde_json::to_value(response.into_review()).unwrap_or_else(|e| {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "response": {"allowed": false, "status": {"code": 500, "message": format!("lbguard: cannot encode response: {e}")}}})
    });
    if let (Some(p), Some(r)) = (
        patch,
        review.get_mut("response").and_then(Value::as_object_mut),
    ) {
        r.insert(
            "patch".into(),
            Value::String(base64::engine::general_purpose::STANDARD.encode(p)),
        );
    }
    review
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod encode_tests;
