//! `LBGuardException`s: what one must hold to be admitted, whether it covers a Service's
//! finding now, and marking the findings it covers. Pure: the caller passes the time.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

pub use super::verdict::Applied;
use super::verdict::Verdict;
use crate::rules::registry;
use crate::vocab::config::Config;
use crate::vocab::exceptions::WILDCARD;
pub use crate::vocab::exceptions::{Exception, ExceptionSet, format_time, parse_time};
use crate::vocab::input::Input;

/// The rule whose findings involve two Services: an exception covers such a finding only
/// pairwise, when each Service's exception names the other.
const SHARED_PORT_RULE: &str = "listener-port-unique";

/// How far ahead the audit looks for exceptions about to expire.
pub const EXPIRING_WITHIN: Duration = Duration::from_secs(7 * 24 * 3600);

/// Everything that keeps an exception from being admitted at `now`, each naming its field:
/// its defects, and an expiry that is not in the future.
pub fn problems(e: &Exception, config: &Config, now: SystemTime) -> Vec<String> {
    let mut out = defects(e, config, now);
    if let Some(t) = e.expires()
        && t <= now
    {
        out.push(format!(
            "spec.expires: {} is not in the future",
            e.spec.expires
        ));
    }
    out
}

/// Everything in `e` the config does not honour, each naming its field. An exception with
/// any covers nothing (its state is `ignored`); the webhook refuses to admit one. The cap
/// counts from its creation (`now` for a file). Nothing is allocated for an exception
/// without defects: every request with a finding asks.
pub fn defects(e: &Exception, config: &Config, now: SystemTime) -> Vec<String> {
    let cfg = &config.exceptions;
    let mut out = Vec::new();
    if e.spec.reason.trim().is_empty() {
        out.push("spec.reason: required: say why the rule does not fit these Services".into());
    }
    match e.expires() {
        _ if e.spec.expires.is_empty() => out.push(format!(
            "spec.expires: required: an RFC 3339 time at most {} days ahead (exceptions.maxDays)",
            cfg.max_days
        )),
        None => {
            if let Err(err) = parse_time(&e.spec.expires) {
                out.push(format!("spec.expires: {err}"));
            }
        }
        Some(t) if t > e.created.unwrap_or(now) + cfg.max_age() => out.push(format!(
            "spec.expires: {} is more than {} days after the exception's creation (exceptions.maxDays: {}); set an earlier time, and create a new exception if it is still needed then",
            e.spec.expires, cfg.max_days, cfg.max_days
        )),
        Some(_) => {}
    }
    if e.spec.rules.is_empty() {
        out.push("spec.rules: required: the rule ids to let through (run `lbguard rules`)".into());
    }
    for (i, rule) in e.spec.rules.iter().enumerate() {
        if rule == WILDCARD {
            if !cfg.allow_wildcard {
                out.push(format!(
                    "spec.rules[{i}]: \"*\" (every rule) is not allowed (exceptions.allowWildcard is false); name the rules"
                ));
            }
        } else if !registry().iter().any(|r| r.id == rule.as_str()) {
            out.push(format!(
                "spec.rules[{i}]: unknown rule id \"{rule}\" (run `lbguard rules` for the list)"
            ));
        } else if cfg.not_exemptable.iter().any(|n| n == rule) {
            out.push(format!(
                "spec.rules[{i}]: \"{rule}\" cannot be exempted (exceptions.notExemptable)"
            ));
        }
    }
    let services = &e.spec.services;
    if services.names.is_empty() && services.selector.is_none() {
        out.push("spec.services: required: names, a selector, or both".into());
    }
    for (i, n) in services.names.iter().enumerate() {
        if n.is_empty() {
            out.push(format!("spec.services.names[{i}]: empty name"));
        }
    }
    if let Some(sel) = &services.selector {
        let wrong = crate::vocab::labels::selector_problems(sel, "spec.services.selector");
        if !wrong.is_empty() {
            out.extend(wrong);
        } else if !positive(sel) && !cfg.allow_wildcard {
            out.push(
                "spec.services.selector: it can match every Service in the namespace (no matchLabels, In or Exists; exceptions.allowWildcard is false); select by a label the Services carry".into(),
            );
        }
    }
    for (i, peer) in e.spec.shares_with.iter().enumerate() {
        let ok = peer.split_once('/').is_some_and(|(ns, n)| {
            [ns, n].iter().all(|p| {
                !p.is_empty()
                    && p.len() <= 63
                    && p.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            })
        });
        if !ok {
            out.push(format!(
                "spec.sharesWith[{i}]: \"{peer}\" is not namespace/name of a Service (e.g. shop/web)"
            ));
        }
    }
    if !e.spec.shares_with.is_empty()
        && !e
            .spec
            .rules
            .iter()
            .any(|r| r == SHARED_PORT_RULE || r == WILDCARD)
    {
        out.push(format!(
            "spec.sharesWith: only {SHARED_PORT_RULE} reads it; add that rule to spec.rules or remove the list"
        ));
    }
    out
}

/// Whether a selector requires some label to be present: `matchLabels`, or an `In` or
/// `Exists` expression. Without one (empty, or only `NotIn`/`DoesNotExist`) it matches
/// Services that carry no labels at all, so in effect every Service.
fn positive(sel: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector) -> bool {
    sel.match_labels.as_ref().is_some_and(|m| !m.is_empty())
        || sel
            .match_expressions
            .iter()
            .flatten()
            .any(|e| e.operator == "In" || e.operator == "Exists")
}

/// Where an exception stands at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// It covers its Services' findings of its rules.
    Active,
    /// Its time is over.
    Expired,
    /// It is stored but the config does not honour it (a non-exemptable rule, a wildcard, a
    /// selector that could match anything or that Kubernetes would refuse, an expiry past
    /// `exceptions.maxDays`, e.g. after the cap was lowered): it covers nothing, for these
    /// reasons.
    Ignored(Vec<String>),
}

pub fn state(e: &Exception, config: &Config, now: SystemTime) -> State {
    if e.expires().is_some_and(|t| t <= now) {
        return State::Expired;
    }
    match defects(e, config, now) {
        d if d.is_empty() => State::Active,
        d => State::Ignored(d),
    }
}

/// Whether `e` covers anything at `now`: not expired, and nothing in it the config does not
/// honour (an object created while lbguard did not check it, or one the config no longer
/// allows, covers nothing).
pub fn active(e: &Exception, config: &Config, now: SystemTime) -> bool {
    e.expires().is_some_and(|t| now < t) && defects(e, config, now).is_empty()
}

fn covers_rule(e: &Exception, rule: &str, config: &Config) -> bool {
    let cfg = &config.exceptions;
    !cfg.not_exemptable.iter().any(|n| n == rule)
        && e.spec
            .rules
            .iter()
            .any(|r| r == rule || (r == WILDCARD && cfg.allow_wildcard))
}

fn covers_service(
    e: &Exception,
    config: &Config,
    namespace: &str,
    name: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    if e.namespace != namespace {
        return false;
    }
    let selector = e
        .spec
        .services
        .selector
        .as_ref()
        .filter(|s| positive(s) || config.exceptions.allow_wildcard);
    names_service(e, namespace, name) || (selector.is_some() && e.selects(labels))
}

/// `services.names` lists `namespace/name` (`sharesWith` names a peer, it covers nothing).
fn names_service(e: &Exception, namespace: &str, name: &str) -> bool {
    e.namespace == namespace && e.spec.services.names.iter().any(|n| n == name)
}

/// The Service a finding is about.
pub struct Subject<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl<'a> Subject<'a> {
    /// The request's Service: the new object's labels, or the old one's on DELETE.
    pub fn of(input: &'a Input) -> Self {
        let labels = input
            .object
            .as_ref()
            .or(input.old_object.as_ref())
            .and_then(|s| s.metadata.labels.as_ref())
            .unwrap_or(&NO_LABELS);
        Self {
            namespace: &input.namespace,
            name: &input.name,
            labels,
        }
    }
}

/// Marks every finding of `verdict` that an active exception covers. A finding that names
/// another Service (a shared listener port) is covered only pairwise: an exception covering
/// this Service names that one (`services.names`, or `sharesWith` with its namespace), and an
/// exception of that Service's namespace names it and names this one. Only the Services' own
/// namespaces' exceptions are read.
pub fn apply(
    verdict: &mut Verdict,
    subject: &Subject,
    exceptions: &ExceptionSet,
    config: &Config,
    now: SystemTime,
) {
    if verdict.violations.is_empty() {
        return;
    }
    let live: Vec<&Exception> = exceptions
        .in_namespace(subject.namespace)
        .iter()
        .filter(|e| active(e, config, now))
        .collect();
    if live.is_empty() {
        return;
    }
    for v in verdict
        .violations
        .iter_mut()
        .filter(|v| v.exception.is_none())
    {
        let found = match &v.peer {
            None => live.iter().copied().find(|e| {
                covers_rule(e, v.rule, config)
                    && covers_service(e, config, subject.namespace, subject.name, subject.labels)
            }),
            Some(peer) => shared(subject, peer, v.rule, &live, exceptions, config, now),
        };
        if let Some(e) = found {
            v.exception = Some(Applied::of(e));
        }
    }
}

/// The exception that lets `subject` share with `peer` (namespace/name) for `rule`, when both
/// sides name each other.
fn shared<'a>(
    subject: &Subject,
    peer: &str,
    rule: &str,
    live: &[&'a Exception],
    exceptions: &ExceptionSet,
    config: &Config,
    now: SystemTime,
) -> Option<&'a Exception> {
    let (ns, name) = peer.split_once('/')?;
    // The peer's own exception (one that lists it; its labels are not at hand) names us.
    let theirs = exceptions.in_namespace(ns).iter().any(|e| {
        active(e, config, now)
            && covers_rule(e, rule, config)
            && names_service(e, ns, name)
            && e.names(subject.namespace, subject.name)
    });
    if !theirs {
        return None;
    }
    live.iter().copied().find(|e| {
        covers_rule(e, rule, config)
            && covers_service(e, config, subject.namespace, subject.name, subject.labels)
            && e.names(ns, name)
    })
}

/// Whether the exceptions let `subject` share a listener port with `holder` (namespace/name):
/// each is named by an active exception for `listener-port-unique` that names the other.
pub fn shared_port_allowed(
    subject: &Subject,
    holder: &str,
    exceptions: &ExceptionSet,
    config: &Config,
    now: SystemTime,
) -> Option<Applied> {
    let live: Vec<&Exception> = exceptions
        .in_namespace(subject.namespace)
        .iter()
        .filter(|e| active(e, config, now))
        .collect();
    shared(
        subject,
        holder,
        SHARED_PORT_RULE,
        &live,
        exceptions,
        config,
        now,
    )
    .map(Applied::of)
}

/// Exceptions still active that expire within `within` of `now`, soonest first.
pub fn expiring<'a>(
    exceptions: &'a [Exception],
    config: &Config,
    now: SystemTime,
    within: Duration,
) -> Vec<&'a Exception> {
    let mut out: Vec<&Exception> = exceptions
        .iter()
        .filter(|e| active(e, config, now) && e.expires().is_some_and(|t| t <= now + within))
        .collect();
    out.sort_by_key(|e| e.expires());
    out
}

/// Exceptions whose time is over at `now`.
pub fn expired(exceptions: &[Exception], now: SystemTime) -> Vec<&Exception> {
    exceptions
        .iter()
        .filter(|e| e.expires().is_some_and(|t| t <= now))
        .collect()
}

#[cfg(test)]
#[path = "exceptions_tests.rs"]
mod tests;
