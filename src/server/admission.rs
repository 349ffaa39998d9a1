//! The admission edge: AdmissionReview in, AdmissionReview out; the engine sees only its
//! own `Input`. Responses are kube's `AdmissionResponse`. Requests are read through a
//! borrowed envelope instead of kube's `AdmissionRequest<Service>`, which deserializes every
//! managedFields entry into a `serde_json::Value` tree: that cost lbguard 44% of its
//! throughput against a bare TLS baseline (BENCHMARKS.md).

use std::time::Instant;

use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1::Service;
use kube::core::admission::AdmissionResponse;
use serde::Deserialize;
use serde_json::value::RawValue;
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

/// What a request turned into: the review to send and labels for logs and metrics.
struct Answer {
    response: AdmissionResponse,
    operation: &'static str,
    rules: Vec<&'static str>,
    namespace: String,
    name: String,
    dry_run: bool,
    /// Listener claims to take before the allowed answer goes out.
    claims: Vec<crate::claims::ClaimKey>,
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
    let mut answer = match span.in_scope(|| answer(&app, endpoint, &bytes)) {
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
        || app.log_decisions == super::LogDecisions::All;
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
                    rules = ?answer.rules,
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
    let mut r = Json(encode_review(answer.response)).into_response();
    super::close_if_draining(&app, &mut r);
    r
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
                claims: vec![],
            })
        }
        None => Err(Reject(message)),
    }
}

/// After an allowed CREATE/UPDATE (not a dry run), the Service's listener ports are held
/// in the cluster view until the watch shows it. If a concurrent admission took one of
/// them first, this one becomes a listener-port-unique finding.
fn hold_ports(app: &AppState, input: &Input, verdict: &mut Verdict) -> bool {
    let admitting = matches!(input.operation, Operation::Create | Operation::Update);
    if !admitting || input.dry_run || !verdict.allowed() || verdict.exempt.is_some() {
        return false;
    }
    let Some(svc) = input
        .object
        .as_ref()
        .filter(|s| crate::engine::Svc(s).is_lb())
    else {
        return false;
    };
    let old = match input.operation {
        Operation::Update => input
            .old_object
            .as_ref()
            .filter(|o| crate::engine::Svc(o).is_lb()),
        _ => None,
    };
    // An update that keeps its load balancers and ports holds nothing new: the watch
    // already shows them. Most updates are like that, and this skips a write lock.
    let uses = |s| crate::cluster::lb_uses(app.config.provider, crate::engine::Svc(s));
    if let Some(old) = old
        && uses(svc) == uses(old)
    {
        return false;
    }
    let tolerate = match old {
        Some(old) => app.cluster.clashes(crate::engine::Svc(old)),
        None => Vec::new(),
    };
    let Err(conflicts) = app.cluster.reserve(
        crate::engine::Svc(svc),
        crate::cluster::RESERVATION_TTL,
        &tolerate,
    ) else {
        return true;
    };
    let action = app.config.action_for("listener-port-unique", Action::Deny);
    if action == Action::Off {
        return true;
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
    true
}

/// The parts of an AdmissionReview lbguard reads. Objects stay raw JSON until needed, so a
/// request costs one pass over the body and no `serde_json::Value` tree.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    api_version: Option<Value>,
    kind: Option<Value>,
    #[serde(borrow)]
    request: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Gvk {
    #[serde(default)]
    group: String,
    #[serde(default)]
    kind: String,
}

#[derive(Deserialize, Default)]
struct RawUser {
    username: Option<String>,
    groups: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReviewRequest<'a> {
    #[serde(default)]
    uid: Option<String>,
    kind: Gvk,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    operation: String,
    #[serde(default)]
    user_info: RawUser,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    old_object: Option<&'a RawValue>,
    #[serde(default)]
    dry_run: Option<bool>,
}

#[derive(Deserialize)]
struct UidOnly {
    uid: Option<String>,
}

/// The ObjectMeta fields rules read; managedFields and the rest are skipped unparsed.
#[derive(Deserialize)]
struct SlimMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    annotations: Option<std::collections::BTreeMap<String, String>>,
    labels: Option<std::collections::BTreeMap<String, String>>,
    finalizers: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct SlimService {
    metadata: SlimMeta,
    spec: Option<k8s_openapi::api::core::v1::ServiceSpec>,
}

fn service(raw: Option<&RawValue>, which: &str) -> Result<Option<Service>, String> {
    let Some(raw) = raw.filter(|r| r.get() != "null") else {
        return Ok(None);
    };
    // The plain parse first; the path-tracking one (which allocates per key) only to word
    // the error of a Service that does not parse.
    let slim: SlimService = match serde_json::from_str(raw.get()) {
        Ok(s) => s,
        Err(plain) => {
            let mut de = serde_json::Deserializer::from_str(raw.get());
            return Err(
                match serde_path_to_error::deserialize::<_, SlimService>(&mut de) {
                    Err(e) => format!(
                        "cannot read the Service in the request: request.{which}.{}: {}",
                        e.path(),
                        e.inner()
                    ),
                    Ok(_) => {
                        format!("cannot read the Service in the request: request.{which}: {plain}")
                    }
                },
            );
        }
    };
    let m = slim.metadata;
    Ok(Some(Service {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: m.name,
            namespace: m.namespace,
            uid: m.uid,
            annotations: m.annotations,
            labels: m.labels,
            finalizers: m.finalizers,
            ..Default::default()
        },
        spec: slim.spec,
        status: None,
    }))
}

/// An allowed response for `uid`, built on kube's type.
fn allowed(uid: String) -> AdmissionResponse {
    let mut response = AdmissionResponse::invalid("");
    response.uid = uid;
    response.allowed = true;
    response.result = Default::default();
    response
}

/// A well-formed review read in one pass: envelope and request together, the objects left
/// raw. Anything else goes the careful way (`read_request_slowly`) for a precise error.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FastEnvelope<'a> {
    #[serde(borrow)]
    api_version: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    request: ReviewRequest<'a>,
}

/// Why a review cannot be evaluated: the request's uid when it can be read, and the message.
type Unreadable = (Option<String>, String);

/// The request and its uid, or why the review cannot be evaluated.
fn read_request(bytes: &[u8]) -> Result<(String, ReviewRequest<'_>), Unreadable> {
    if let Ok(env) = serde_json::from_slice::<FastEnvelope>(bytes)
        && env.kind == "AdmissionReview"
        && env.api_version == "admission.k8s.io/v1"
        && let Some(uid) = env.request.uid.clone().filter(|u| !u.is_empty())
    {
        return Ok((uid, env.request));
    }
    read_request_slowly(bytes)
}

fn read_request_slowly(bytes: &[u8]) -> Result<(String, ReviewRequest<'_>), Unreadable> {
    let env: Envelope =
        serde_json::from_slice(bytes).map_err(|e| (None, format!("body is not JSON: {e}")))?;
    // The uid alone is dug out when the request does not parse, so even a broken request
    // gets an answer it can be matched to.
    let parsed = env
        .request
        .map(|r| serde_json::from_str::<ReviewRequest>(r.get()));
    let uid = match &parsed {
        Some(Ok(r)) => r.uid.clone(),
        _ => env
            .request
            .and_then(|r| serde_json::from_str::<UidOnly>(r.get()).ok())
            .and_then(|u| u.uid),
    }
    .filter(|u| !u.is_empty());
    let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).unwrap_or("").to_string();
    let (api_version, kind) = (text(&env.api_version), text(&env.kind));
    if kind != "AdmissionReview" || api_version != "admission.k8s.io/v1" {
        return Err((
            uid,
            format!(
                "expected an admission.k8s.io/v1 AdmissionReview, got apiVersion {api_version:?} kind {kind:?}"
            ),
        ));
    }
    if !env
        .request
        .is_some_and(|r| r.get().trim_start().starts_with('{'))
    {
        return Err((None, "AdmissionReview has no request".into()));
    }
    let Some(uid) = uid else {
        return Err((None, "AdmissionReview request has no uid".into()));
    };
    match parsed {
        Some(Ok(r)) => Ok((uid, r)),
        Some(Err(e)) => Err((Some(uid), format!("cannot read the request: {e}"))),
        None => Err((None, "AdmissionReview has no request".into())),
    }
}

fn answer(app: &AppState, endpoint: Endpoint, bytes: &[u8]) -> Result<Answer, Reject> {
    let (uid, req) = match read_request(bytes) {
        Ok(r) => r,
        Err((uid, message)) => return refuse(uid.as_deref(), message),
    };
    if !req.kind.group.is_empty() || req.kind.kind != "Service" {
        // Not ours: allow at once, whatever it is.
        return Ok(Answer {
            response: allowed(uid),
            operation: "OTHER",
            rules: vec![],
            namespace: String::new(),
            name: String::new(),
            dry_run: false,
            claims: vec![],
        });
    }
    let operation = match req.operation.as_str() {
        "CREATE" => Operation::Create,
        "UPDATE" => Operation::Update,
        "DELETE" => Operation::Delete,
        "CONNECT" => Operation::Connect,
        other => return refuse(Some(&uid), format!("unknown operation {other:?}")),
    };
    let (object, old_object) = match (
        service(req.object, "object"),
        service(req.old_object, "oldObject"),
    ) {
        (Ok(o), Ok(old)) => (o, old),
        (Err(e), _) | (_, Err(e)) => return refuse(Some(&uid), e),
    };
    let user = UserInfo {
        username: req.user_info.username.unwrap_or_default(),
        groups: req.user_info.groups.unwrap_or_default(),
    };
    let mut input = match Input::new(operation, object, old_object, user) {
        Ok(i) => i,
        Err(e) => return refuse(Some(&uid), e.to_string()),
    };
    input.uid = uid.clone();
    input.dry_run = req.dry_run.unwrap_or(false);
    if let Some(ns) = req.namespace {
        input.namespace = ns;
    }
    if let Some(name) = req.name.filter(|n| !n.is_empty()) {
        input.name = name;
    }
    let span = tracing::Span::current();
    span.record("uid", uid.as_str());
    span.record("namespace", input.namespace.as_str());
    span.record("name", input.name.as_str());
    span.record("operation", input.operation.as_str());
    span.record("dry_run", input.dry_run);
    let mut response = allowed(uid.clone());
    let config = &app.config;
    let snapshot = app.inventory.as_ref().map(|s| s.snapshot());
    let inventory: &dyn Inventory = match &snapshot {
        Some(s) => s.as_ref(),
        None => &EmptyInventory,
    };
    let mut rules = Vec::new();
    let mut claims = Vec::new();
    match endpoint {
        Endpoint::Validate => {
            let mut verdict = evaluate(
                &input,
                config,
                &app.versions.load(),
                &*app.cluster,
                inventory,
            );
            if hold_ports(app, &input, &mut verdict) {
                claims = claims_needed(app, &input, &verdict);
            }
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
            if let Some(m) = mutate(&input, config, &app.versions.load(), inventory)
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
        claims,
    })
}

/// The listener claims an allowed admission must take: none for dry runs, exempt requests,
/// denials, load balancers the CCM creates (no id annotation), or ports the live object
/// already held.
fn claims_needed(app: &AppState, input: &Input, verdict: &Verdict) -> Vec<crate::claims::ClaimKey> {
    let admitting = matches!(input.operation, Operation::Create | Operation::Update);
    if app.claims.is_none()
        || !admitting
        || input.dry_run
        || !verdict.allowed()
        || verdict.exempt.is_some()
        || app.config.action_for("listener-port-unique", Action::Deny) == Action::Off
    {
        return Vec::new();
    }
    let Some(new) = input.object.as_ref() else {
        return Vec::new();
    };
    let old = match input.operation {
        Operation::Update => input.old_object.as_ref().map(crate::engine::Svc),
        _ => None,
    };
    crate::claims::wanted(app.config.provider, crate::engine::Svc(new), old)
}

/// Turns a failed claim into the answer: a holder is a `listener-port-unique` finding; an
/// unreachable API server follows `claims.onError`.
fn apply_claims(
    app: &AppState,
    answer: &mut Answer,
    keys: &[crate::claims::ClaimKey],
    outcome: Result<(), crate::claims::ClaimError>,
) {
    use crate::claims::ClaimError;
    use crate::config::OnClaimError;
    const RULE: &str = "listener-port-unique";
    let (action, messages) = match outcome {
        Ok(()) => return,
        Err(ClaimError::Held(held)) => (
            app.config.action_for(RULE, Action::Deny),
            held.iter()
                .map(|(key, holder)| {
                    format!(
                        "[{RULE}] {} is held by {holder} (its claim was recorded by another lbguard replica or request); use another port or another load balancer",
                        key.describe()
                    )
                })
                .collect::<Vec<_>>(),
        ),
        Err(ClaimError::Unavailable(e)) => {
            let ports: Vec<String> = keys.iter().map(|k| k.describe()).collect();
            match app.config.claims.on_error {
                OnClaimError::Deny => (
                    Action::Deny,
                    vec![format!(
                        "[{RULE}] the listener claim for {} could not be recorded in the API server ({e}); nothing was changed, retry the request",
                        ports.join(", ")
                    )],
                ),
                OnClaimError::Allow => (
                    Action::Warn,
                    vec![format!(
                        "[{RULE}] the listener claim for {} could not be recorded ({e}); admitted without the cross-replica port check",
                        ports.join(", ")
                    )],
                ),
            }
        }
    };
    app.metrics
        .violations
        .get_or_create(&super::metrics::ViolationLabels {
            rule: RULE,
            action: action.as_str(),
        })
        .inc();
    if !answer.rules.contains(&RULE) {
        answer.rules.push(RULE);
    }
    let response = &mut answer.response;
    match action {
        Action::Deny => {
            app.cluster.unreserve(&answer.namespace, &answer.name);
            *response =
                std::mem::replace(response, allowed(String::new())).deny(messages.join("; "));
            response.result.code = 403;
            response.result.reason = "Forbidden".into();
            response
                .audit_annotations
                .insert("denied-by".into(), RULE.into());
        }
        Action::Warn => {
            response
                .warnings
                .get_or_insert_with(Vec::new)
                .extend(messages);
        }
        Action::Off => {}
    }
}
