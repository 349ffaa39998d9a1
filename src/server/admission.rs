//! The admission edge: AdmissionReview in, AdmissionReview out. kube's types stay here;
//! the engine sees only its own `Input`.

use std::time::Instant;

use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1::Service;
use kube::core::admission::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, Operation as KOp,
};
use serde_json::{Value, json};

use super::{AppState, BODY_LIMIT};
use crate::engine::{
    EmptyInventory, Input, Inventory, Operation, UserInfo, Verdict, Violation, evaluate, mutate,
};
use crate::rules::Action;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Validate,
    Mutate,
}

impl Endpoint {
    fn as_str(self) -> &'static str {
        match self {
            Endpoint::Validate => "validate",
            Endpoint::Mutate => "mutate",
        }
    }
}

pub async fn validate(State(app): State<AppState>, req: Request) -> Response {
    handle(app, Endpoint::Validate, req.into_body()).await
}

pub async fn mutate_handler(State(app): State<AppState>, req: Request) -> Response {
    handle(app, Endpoint::Mutate, req.into_body()).await
}

fn bad_request(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// What a request turned into: the review to send and labels for logs and metrics.
struct Answer {
    response: AdmissionResponse,
    operation: &'static str,
    rules: Vec<&'static str>,
    namespace: String,
    name: String,
    dry_run: bool,
}

async fn handle(app: AppState, endpoint: Endpoint, body: Body) -> Response {
    let started = Instant::now();
    let bytes =
        match tokio::time::timeout(app.request_timeout, axum::body::to_bytes(body, BODY_LIMIT))
            .await
        {
            Err(_) => {
                return bad_request(
                    StatusCode::REQUEST_TIMEOUT,
                    "request body not received in time",
                );
            }
            Ok(Err(e)) => {
                let too_big = std::error::Error::source(&e)
                    .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
                return if too_big {
                    bad_request(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("request body exceeds {} bytes", BODY_LIMIT),
                    )
                } else {
                    bad_request(
                        StatusCode::BAD_REQUEST,
                        format!("cannot read request body: {e}"),
                    )
                };
            }
            Ok(Ok(b)) => b,
        };
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => return bad_request(StatusCode::BAD_REQUEST, format!("body is not JSON: {e}")),
    };
    let answer = match answer(&app, endpoint, value) {
        Ok(a) => a,
        Err(Reject(message)) => return bad_request(StatusCode::BAD_REQUEST, message),
    };
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
    tracing::info!(
        endpoint = endpoint.as_str(),
        uid = %answer.response.uid,
        namespace = %answer.namespace,
        name = %answer.name,
        operation = answer.operation,
        dry_run = answer.dry_run,
        verdict,
        rules = ?answer.rules,
        latency_us = elapsed.as_micros() as u64,
        "admission decision"
    );
    Json(encode_review(answer.response)).into_response()
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

/// A request that cannot be answered with an AdmissionReview: HTTP 400 with this message.
pub struct Reject(String);

/// A review that is not allowed, with the request's uid when it can be read.
fn refuse(uid: Option<&str>, message: String) -> Result<Answer, Reject> {
    match uid {
        Some(uid) => {
            let mut response = AdmissionResponse::invalid(format!("lbguard: {message}"));
            response.uid = uid.to_string();
            response.result.code = 400;
            Ok(Answer {
                response,
                operation: "UNKNOWN",
                rules: vec![],
                namespace: String::new(),
                name: String::new(),
                dry_run: false,
            })
        }
        None => Err(Reject(message)),
    }
}

/// After an allowed CREATE/UPDATE (not a dry run), the Service's listener ports are held
/// in the cluster view until the watch shows it. If a concurrent admission took one of
/// them first, this one becomes a listener-port-unique finding.
fn hold_ports(app: &AppState, input: &Input, verdict: &mut Verdict) {
    let admitting = matches!(input.operation, Operation::Create | Operation::Update);
    if !admitting || input.dry_run || !verdict.allowed() || verdict.exempt.is_some() {
        return;
    }
    let Some(svc) = input
        .object
        .as_ref()
        .filter(|s| crate::engine::Svc(s).is_lb())
    else {
        return;
    };
    let Err(conflicts) = app
        .cluster
        .reserve(crate::engine::Svc(svc), crate::cluster::RESERVATION_TTL)
    else {
        return;
    };
    let action = app.config.action_for("listener-port-unique", Action::Deny);
    if action == Action::Off {
        return;
    }
    app.metrics.reservation_conflicts.inc();
    for c in conflicts {
        verdict.violations.push(Violation {
            rule: "listener-port-unique",
            action,
            field: "spec.ports".into(),
            message: format!("[listener-port-unique] {c} (admitted concurrently, not yet visible in the cluster); use another port or another load balancer"),
        });
    }
}

fn op(o: &KOp) -> Operation {
    match o {
        KOp::Create => Operation::Create,
        KOp::Update => Operation::Update,
        KOp::Delete => Operation::Delete,
        KOp::Connect => Operation::Connect,
    }
}

fn answer(app: &AppState, endpoint: Endpoint, value: Value) -> Result<Answer, Reject> {
    let api_version = value.get("apiVersion").and_then(Value::as_str);
    let kind = value.get("kind").and_then(Value::as_str);
    let request = value.get("request");
    let uid = request
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .map(str::to_owned);
    if kind != Some("AdmissionReview") || api_version != Some("admission.k8s.io/v1") {
        return refuse(
            uid.as_deref(),
            format!(
                "expected an admission.k8s.io/v1 AdmissionReview, got apiVersion {:?} kind {:?}",
                api_version.unwrap_or(""),
                kind.unwrap_or("")
            ),
        );
    }
    let Some(request) = request.filter(|r| r.is_object()) else {
        return refuse(None, "AdmissionReview has no request".into());
    };
    let Some(uid) = uid else {
        return refuse(None, "AdmissionReview request has no uid".into());
    };
    let group = request.pointer("/kind/group").and_then(Value::as_str);
    let req_kind = request.pointer("/kind/kind").and_then(Value::as_str);
    if group != Some("") || req_kind != Some("Service") {
        // Not ours: allow at once, whatever it is.
        let mut response = AdmissionResponse::invalid("");
        response.uid = uid;
        response.allowed = true;
        response.result = Default::default();
        return Ok(Answer {
            response,
            operation: "OTHER",
            rules: vec![],
            namespace: String::new(),
            name: String::new(),
            dry_run: false,
        });
    }
    let review: AdmissionReview<Service> = match serde_path_to_error::deserialize(value) {
        Ok(r) => r,
        Err(e) => {
            return refuse(
                Some(&uid),
                format!(
                    "cannot read the Service in the request: {}: {}",
                    e.path(),
                    e.inner()
                ),
            );
        }
    };
    let req: AdmissionRequest<Service> = match review.try_into() {
        Ok(r) => r,
        Err(_) => return refuse(Some(&uid), "AdmissionReview has no request".into()),
    };
    let operation = op(&req.operation);
    let user = UserInfo {
        username: req.user_info.username.clone().unwrap_or_default(),
        groups: req.user_info.groups.clone().unwrap_or_default(),
    };
    let mut input = match Input::new(operation, req.object.clone(), req.old_object.clone(), user) {
        Ok(i) => i,
        Err(e) => return refuse(Some(&uid), e.to_string()),
    };
    input.uid = req.uid.clone();
    input.dry_run = req.dry_run;
    if let Some(ns) = &req.namespace {
        input.namespace = ns.clone();
    }
    if !req.name.is_empty() {
        input.name = req.name.clone();
    }
    let mut response = AdmissionResponse::from(&req);
    let config = &app.config;
    let snapshot = app.inventory.as_ref().map(|s| s.snapshot());
    let inventory: &dyn Inventory = match &snapshot {
        Some(s) => s.as_ref(),
        None => &EmptyInventory,
    };
    let mut rules = Vec::new();
    match endpoint {
        Endpoint::Validate => {
            let mut verdict = evaluate(&input, config, &app.versions, &*app.cluster, inventory);
            hold_ports(app, &input, &mut verdict);
            for v in &verdict.violations {
                app.metrics
                    .violations
                    .get_or_create(&super::metrics::ViolationLabels {
                        rule: v.rule,
                        action: v.action.as_str(),
                    })
                    .inc();
            }
            rules = verdict.rule_ids();
            let warnings = verdict.warnings();
            if let Some(message) = verdict.denial_message() {
                response = response.deny(message);
                response.result.code = 403;
                response.result.reason = "Forbidden".into();
            }
            if verdict.exempt.is_some() {
                response
                    .audit_annotations
                    .insert("exempt".into(), verdict.exempt.clone().unwrap_or_default());
            }
            if !warnings.is_empty() {
                response.warnings = Some(warnings);
            }
            let denied: Vec<&str> = verdict
                .violations
                .iter()
                .filter(|v| v.action == Action::Deny)
                .map(|v| v.rule)
                .collect();
            if !denied.is_empty() {
                response
                    .audit_annotations
                    .insert("denied-by".into(), denied.join(","));
            }
        }
        Endpoint::Mutate => {
            if let Some(m) = mutate(&input, config, &app.versions, inventory)
                && m.changed()
            {
                let patch = serde_json::to_value(input.object.as_ref())
                    .and_then(|before| Ok((before, serde_json::to_value(&m.desired)?)))
                    .map(|(before, after)| json_patch::diff(&before, &after));
                match patch {
                    Ok(p) if !p.0.is_empty() => {
                        response.warnings = Some(m.warnings());
                        for (i, d) in m.applied.iter().enumerate() {
                            response
                                .audit_annotations
                                .insert(format!("default-{i}"), format!("{}={}", d.field, d.value));
                        }
                        response = match response.with_patch(p) {
                            Ok(r) => r,
                            Err(e) => {
                                return refuse(Some(&uid), format!("cannot encode patch: {e}"));
                            }
                        };
                        rules.push("defaults");
                    }
                    Ok(_) => {}
                    Err(e) => return refuse(Some(&uid), format!("cannot compute patch: {e}")),
                }
            }
        }
    }
    Ok(Answer {
        response,
        operation: operation.as_str(),
        rules,
        namespace: input.namespace,
        name: input.name,
        dry_run: input.dry_run,
    })
}
