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
/// when the other Service is named by an exception for it too.
const SHARED_PORT_RULE: &str = "listener-port-unique";

/// How far ahead the audit looks for exceptions about to expire.
pub const EXPIRING_WITHIN: Duration = Duration::from_secs(7 * 24 * 3600);

/// Everything that keeps an exception from being admitted at `now`, each naming its field.
pub fn problems(e: &Exception, config: &Config, now: SystemTime) -> Vec<String> {
    let cfg = &config.exceptions;
    let mut out = Vec::new();
    if e.spec.reason.trim().is_empty() {
        out.push("spec.reason: required: say why the rule does not fit these Services".into());
    }
    match parse_time(&e.spec.expires) {
        _ if e.spec.expires.is_empty() => out.push(format!(
            "spec.expires: required: an RFC 3339 time at most {} days ahead (exceptions.maxDays)",
            cfg.max_days
        )),
        Err(err) => out.push(format!("spec.expires: {err}")),
        Ok(t) if t <= now => out.push(format!(
            "spec.expires: {} is not in the future",
            e.spec.expires
        )),
        Ok(t) if t > e.created.unwrap_or(now) + cfg.max_age() => out.push(format!(
            "spec.expires: {} is more than {} days after the exception's creation (exceptions.maxDays: {}); set an earlier time, and create a new exception if it is still needed then",
            e.spec.expires, cfg.max_days, cfg.max_days
        )),
        Ok(_) => {}
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
        match kube::core::Selector::try_from(sel.clone()) {
            Err(err) => out.push(format!("spec.services.selector: {err}")),
            Ok(_) if !positive(sel) && !cfg.allow_wildcard => out.push(
                "spec.services.selector: it can match every Service in the namespace (no matchLabels, In or Exists; exceptions.allowWildcard is false); select by a label the Services carry".into(),
            ),
            Ok(_) => {}
        }
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

/// Whether `e` covers anything at `now`: not expired, and its expiry within the config's cap
/// of its creation (an object created while lbguard did not check it gets no more).
pub fn active(e: &Exception, config: &Config, now: SystemTime) -> bool {
    let Some(expires) = e.expires() else {
        return false;
    };
    let created = e.created.unwrap_or(now);
    now < expires
        && expires <= created + config.exceptions.max_age()
        && !e.spec.reason.trim().is_empty()
}

fn covers_rule(e: &Exception, rule: &str, config: &Config) -> bool {
    let cfg = &config.exceptions;
    !cfg.not_exemptable.iter().any(|n| n == rule)
        && e.spec
            .rules
            .iter()
            .any(|r| r == rule || (r == WILDCARD && cfg.allow_wildcard))
}

fn names(e: &Exception, namespace: &str, name: &str) -> bool {
    e.namespace == namespace && e.spec.services.names.iter().any(|n| n == name)
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
    names(e, namespace, name) || (selector.is_some() && e.selects(labels))
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
/// another Service (a shared listener port) is covered only when an active exception in
/// that Service's namespace names it for the same rule. Only the Services' own namespaces'
/// exceptions are read.
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
        let Some(e) = live.iter().find(|e| {
            covers_rule(e, v.rule, config)
                && covers_service(e, config, subject.namespace, subject.name, subject.labels)
        }) else {
            continue;
        };
        if let Some(peer) = &v.peer
            && !peer_covered(exceptions, peer, v.rule, config, now)
        {
            continue;
        }
        v.exception = Some(Applied::of(e));
    }
}

/// Whether an active exception names `peer` (namespace/name) for `rule`.
pub fn peer_covered(
    exceptions: &ExceptionSet,
    peer: &str,
    rule: &str,
    config: &Config,
    now: SystemTime,
) -> bool {
    let Some((ns, name)) = peer.split_once('/') else {
        return false;
    };
    exceptions
        .in_namespace(ns)
        .iter()
        .any(|e| active(e, config, now) && covers_rule(e, rule, config) && names(e, ns, name))
}

/// Whether the exceptions let `subject` share a listener port with `holder` (namespace/name):
/// both named for `listener-port-unique` by active exceptions.
pub fn shared_port_allowed(
    subject: &Subject,
    holder: &str,
    exceptions: &ExceptionSet,
    config: &Config,
    now: SystemTime,
) -> Option<Applied> {
    let mine = exceptions
        .in_namespace(subject.namespace)
        .iter()
        .find(|e| {
            active(e, config, now)
                && covers_rule(e, SHARED_PORT_RULE, config)
                && covers_service(e, config, subject.namespace, subject.name, subject.labels)
        })?;
    peer_covered(exceptions, holder, SHARED_PORT_RULE, config, now).then(|| Applied::of(mine))
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
