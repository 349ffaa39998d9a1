//! One request to a verdict: the engine's evaluation or mutation, the in-memory hold on an
//! admitted Service's ports, and which listener claims the answer waits for.

use super::answer::{Answer, Endpoint, Reject, allowed, refuse};
use super::decode::{RawUser, read_request, read_service_review, service};
use crate::engine::{Input, Operation, UserInfo, Verdict, Violation, evaluate_owned, mutate};
use crate::rules::Action;
use crate::server::state::AppState;

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
        .filter(|s| crate::engine::Svc::new(s).is_lb())
    else {
        return false;
    };
    let old = match input.operation {
        Operation::Update => input
            .old_object
            .as_ref()
            .filter(|o| crate::engine::Svc::new(o).is_lb()),
        _ => None,
    };
    // An update that keeps its load balancers and ports holds nothing new: the watch
    // already shows them. Most updates are like that, and this skips a write lock.
    let uses = |s| crate::cluster::lb_uses(app.cluster.scope(), crate::engine::Svc::new(s));
    let new_uses = uses(svc);
    let old_uses = old.map(uses);
    if old_uses.as_ref() == Some(&new_uses) {
        return false;
    }
    let mut tolerate = old_uses
        .map(|o| app.cluster.clashes_of(&o))
        .unwrap_or_default();
    // Services an exception lets this one share a port with (both named for the rule).
    let shared: Vec<&str> = verdict
        .violations
        .iter()
        .filter(|v| v.rule == "listener-port-unique" && v.exception.is_some())
        .filter_map(|v| v.peer.as_deref())
        .collect();
    if !shared.is_empty() {
        tolerate.extend(
            app.cluster
                .clashes_with(crate::engine::Svc::new(svc), &shared),
        );
    }
    let Err(conflicts) =
        app.cluster
            .reserve_uses(new_uses, crate::cluster::RESERVATION_TTL, &tolerate)
    else {
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
            inventory: false,
            peer: None,
            exception: None,
            message: format!("[listener-port-unique] {c} (admitted concurrently, not yet visible in the cluster); use another port or another load balancer"),
        });
    }
    true
}

/// Lets through the findings the cluster's `LBGuardException`s cover.
fn exempt(app: &AppState, input: &Input, verdict: &mut Verdict) {
    if verdict.violations.is_empty() {
        return;
    }
    let exceptions = app.exceptions.snapshot();
    crate::engine::exceptions::apply(
        verdict,
        &crate::engine::exceptions::Subject::of(input),
        &exceptions,
        &app.config,
        std::time::SystemTime::now(),
    );
}

/// A request read and checked, before it is evaluated.
pub(super) struct Prepared {
    uid: String,
    pub input: Input,
}

/// What reading a request gave: an answer already, or a Service to evaluate.
pub(super) enum Step {
    Done(Box<Result<Answer, Reject>>),
    /// An `LBGuardException` to check against the config.
    Exception(Box<super::exception::Review>),
    Ready(Box<Prepared>),
}

/// Reads the request; `decide` evaluates it once the inventory facts are at hand.
pub(super) fn prepare(bytes: &[u8]) -> Step {
    match read_input(bytes) {
        Ok(p) => Step::Ready(Box::new(p)),
        Err(done) => done,
    }
}

fn read_input(bytes: &[u8]) -> Result<Prepared, Step> {
    let done = |r| Step::Done(Box::new(r));
    // The common case, a well-formed Service review, in one pass; anything else (other
    // kinds, exceptions, malformed reviews or objects) the careful way below.
    if let Some((uid, mut req)) = read_service_review(bytes) {
        let (object, old_object) = req.objects();
        return service_input(
            uid,
            Request {
                operation: &req.operation,
                user: req.user_info,
                object,
                old_object,
                namespace: req.namespace,
                name: req.name,
                dry_run: req.dry_run,
            },
        );
    }
    let (uid, req) = match read_request(bytes) {
        Ok(r) => r,
        Err((uid, message)) => return Err(done(refuse(uid.as_deref(), message))),
    };
    if req.kind.group == crate::vocab::exceptions::GROUP
        && req.kind.kind == crate::vocab::exceptions::KIND
    {
        return Err(Step::Exception(Box::new(super::exception::Review::new(
            uid,
            &req.operation,
            req.namespace,
            req.object,
            req.old_object,
        ))));
    }
    if !req.kind.group.is_empty() || req.kind.kind != "Service" {
        // Not ours: allow at once, whatever it is.
        return Err(done(Ok(Answer {
            response: allowed(uid),
            operation: "OTHER",
            rules: vec![],
            namespace: String::new(),
            name: String::new(),
            labels: Default::default(),
            dry_run: false,
            claims: vec![],
        })));
    }
    if let Err(e) = operation(&req.operation) {
        return Err(done(refuse(Some(&uid), e)));
    }
    let (object, old_object) = match (
        service(req.object, "object"),
        service(req.old_object, "oldObject"),
    ) {
        (Ok(o), Ok(old)) => (o, old),
        (Err(e), _) | (_, Err(e)) => return Err(done(refuse(Some(&uid), e))),
    };
    service_input(
        uid,
        Request {
            operation: &req.operation,
            user: req.user_info,
            object,
            old_object,
            namespace: req.namespace,
            name: req.name,
            dry_run: req.dry_run,
        },
    )
}

/// A Service review's request, its objects read.
struct Request<'a> {
    operation: &'a str,
    user: RawUser,
    object: Option<k8s_openapi::api::core::v1::Service>,
    old_object: Option<k8s_openapi::api::core::v1::Service>,
    namespace: Option<String>,
    name: Option<String>,
    dry_run: Option<bool>,
}

fn operation(op: &str) -> Result<Operation, String> {
    match op {
        "CREATE" => Ok(Operation::Create),
        "UPDATE" => Ok(Operation::Update),
        "DELETE" => Ok(Operation::Delete),
        "CONNECT" => Ok(Operation::Connect),
        other => Err(format!("unknown operation {other:?}")),
    }
}

fn service_input(uid: String, req: Request) -> Result<Prepared, Step> {
    let done = |r| Step::Done(Box::new(r));
    let operation = match operation(req.operation) {
        Ok(o) => o,
        Err(e) => return Err(done(refuse(Some(&uid), e))),
    };
    let (object, old_object) = (req.object, req.old_object);
    let user = UserInfo {
        username: req.user.username.unwrap_or_default(),
        groups: req.user.groups.unwrap_or_default(),
    };
    let mut input = match Input::new(operation, object, old_object, user) {
        Ok(i) => i,
        Err(e) => return Err(done(refuse(Some(&uid), e.to_string()))),
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
    Ok(Prepared { uid, input })
}

/// Evaluates a prepared request. `view` holds the cloud's facts when `inventory.cloud` is on.
pub(super) fn decide(
    app: &AppState,
    endpoint: Endpoint,
    prepared: Prepared,
    view: Option<&crate::cloud::View>,
) -> Result<Answer, Reject> {
    let Prepared { uid, mut input } = prepared;
    let mut response = allowed(uid.clone());
    let config = &app.config;
    // The cloud's view was made with the file's snapshot: the same one, read once.
    let snapshot = match view {
        Some(v) => v.file_arc(),
        None => app.inventory_snapshot(),
    };
    let inventory = crate::inventory::choose(
        view.map(|v| v as &dyn crate::vocab::ctx::Inventory),
        snapshot.as_deref(),
    );
    let inventory = &inventory;
    let mut rules = Vec::new();
    let mut claims = Vec::new();
    match endpoint {
        Endpoint::Validate => {
            let mut verdict = evaluate_owned(
                &mut input,
                config,
                &app.versions.load(),
                &*app.cluster,
                inventory,
            );
            exempt(app, &input, &mut verdict);
            if hold_ports(app, &input, &mut verdict) {
                claims = claims_needed(app, &input, &verdict);
            }
            for v in &verdict.violations {
                if v.exception.is_some() {
                    app.metrics
                        .exempted
                        .get_or_create(&crate::server::metrics::RuleLabels { rule: v.rule })
                        .inc();
                    continue;
                }
                app.metrics
                    .violations
                    .get_or_create(&crate::server::metrics::ViolationLabels {
                        rule: v.rule,
                        action: v.action.as_str(),
                    })
                    .inc();
            }
            rules = verdict.rule_ids();
            let warnings = verdict.warnings();
            if let Some(message) = verdict.denial_message() {
                // What kube's `deny` does, without copying the message once more.
                response.allowed = false;
                response.result.message = message;
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
    let labels = crate::engine::exceptions::Subject::of(&input)
        .labels
        .clone();
    Ok(Answer {
        response,
        operation: input.operation.as_str(),
        labels,
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
        Operation::Update => input.old_object.as_ref().map(crate::engine::Svc::new),
        _ => None,
    };
    crate::claims::wanted(app.cluster.scope(), crate::engine::Svc::new(new), old)
}

/// Turns a failed claim into the answer: a holder is a `listener-port-unique` finding; an
/// unreachable API server follows `claims.onError`.
pub(super) fn apply_claims(
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
        Err(ClaimError::Held(held)) => {
            // Both Services named for the rule by exceptions: the port may be shared.
            let exceptions = app.exceptions.snapshot();
            let subject = crate::engine::exceptions::Subject {
                namespace: &answer.namespace,
                name: &answer.name,
                labels: &answer.labels,
            };
            let now = std::time::SystemTime::now();
            let allowed_by: Vec<_> = held
                .iter()
                .map(|(_, holder)| {
                    crate::engine::exceptions::shared_port_allowed(
                        &subject,
                        holder,
                        &exceptions,
                        &app.config,
                        now,
                    )
                })
                .collect();
            let exempted = allowed_by.iter().all(Option::is_some);
            let action = app.config.action_for(RULE, Action::Deny);
            let messages = held
                .iter()
                .zip(&allowed_by)
                .map(|((key, holder), by)| {
                    let what = format!(
                        "[{RULE}] {} is held by {holder} (its claim was recorded by another lbguard replica or request)",
                        key.describe()
                    );
                    match by {
                        Some(e) if exempted => format!("{what} ({})", e.describe()),
                        _ => format!("{what}; use another port or another load balancer"),
                    }
                })
                .collect::<Vec<_>>();
            if exempted && action != Action::Off {
                app.metrics
                    .exempted
                    .get_or_create(&crate::server::metrics::RuleLabels { rule: RULE })
                    .inc();
                answer
                    .response
                    .warnings
                    .get_or_insert_with(Vec::new)
                    .extend(messages);
                return;
            }
            (action, messages)
        }
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
        .get_or_create(&crate::server::metrics::ViolationLabels {
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
