//! Audit: every cached LoadBalancer Service checked as if it were created now, so
//! problems that slipped in before lbguard (or through exemptions) become visible.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Service;
use serde::Serialize;

use super::ClusterState;
use crate::config::{Config, ProviderChoice};
use crate::engine::exceptions::{self, Applied, ExceptionSet, Subject};
use crate::engine::{Input, Inventory, Operation, UserInfo, Versions, evaluate};
use crate::providers::{Provider, catalog};
use crate::rules::Action;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub action: Action,
    pub message: String,
    /// The field the finding names (`metadata.annotations[...]`, `spec.type`).
    pub field: String,
    /// The `LBGuardException` that lets it through (a `skip` in policy reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<Applied>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServiceReport {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The provider whose annotations it carries (the configured one when fixed).
    pub provider: Option<&'static str>,
    pub violations: Vec<Finding>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub checked: usize,
    pub denied: usize,
    pub warned: usize,
    /// Findings an `LBGuardException` let through.
    pub exempted: usize,
}

/// An exception about to expire, as `/report` lists it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Expiring {
    pub namespace: String,
    pub name: String,
    pub expires: String,
    pub rules: Vec<String>,
    pub reason: String,
}

/// An exception the config does not honour, as `/report` lists it: it covers nothing.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Ignored {
    pub namespace: String,
    pub name: String,
    /// Why, each naming its field.
    pub reasons: Vec<String>,
}

/// The result of one audit round (`GET /report`).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Seconds since the Unix epoch; 0 before the first round.
    pub generated_at: u64,
    pub services: Vec<ServiceReport>,
    pub summary: Summary,
    /// Active exceptions that expire within 7 days, soonest first.
    pub expiring_exceptions: Vec<Expiring>,
    /// Exceptions stored but not honoured by the config (they cover nothing), by name.
    pub ignored_exceptions: Vec<Ignored>,
    /// The Services without findings (for policy reports' passes; not in `/report`).
    #[serde(skip)]
    pub clean: Vec<ServiceReport>,
}

impl Report {
    /// Violation counts by (rule, action, namespace), for the audit metric.
    pub fn counts(&self) -> BTreeMap<(&'static str, Action, String), u64> {
        let mut out = BTreeMap::new();
        for s in &self.services {
            for v in s.violations.iter().filter(|v| v.exception.is_none()) {
                *out.entry((v.rule, v.action, s.namespace.clone()))
                    .or_default() += 1;
            }
        }
        out
    }
}

static NO_EXCEPTIONS: ExceptionSet = ExceptionSet::EMPTY;

/// What the audit reads besides the cluster view: the exceptions and the time.
pub struct Granted<'a> {
    pub exceptions: &'a ExceptionSet,
    pub now: SystemTime,
}

impl Granted<'_> {
    pub fn none() -> Granted<'static> {
        Granted {
            exceptions: &NO_EXCEPTIONS,
            now: SystemTime::now(),
        }
    }
}

/// Checks every cached Service; only Services with findings are listed.
pub fn audit(
    state: &ClusterState,
    config: &Config,
    versions: &Versions,
    inventory: &dyn Inventory,
    granted: &Granted,
) -> (Report, Vec<Service>) {
    let services = state.services();
    let mut report = Report {
        generated_at: granted
            .now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        expiring_exceptions: exceptions::expiring(
            granted.exceptions.all(),
            config,
            granted.now,
            exceptions::EXPIRING_WITHIN,
        )
        .into_iter()
        .map(|e| Expiring {
            namespace: e.namespace.clone(),
            name: e.name.clone(),
            expires: e
                .expires()
                .map_or_else(|| e.spec.expires.clone(), exceptions::format_time),
            rules: e.spec.rules.clone(),
            reason: e.spec.reason.clone(),
        })
        .collect(),
        ignored_exceptions: granted
            .exceptions
            .all()
            .iter()
            .filter_map(|e| match exceptions::state(e, config, granted.now) {
                exceptions::State::Ignored(reasons) => Some(Ignored {
                    namespace: e.namespace.clone(),
                    name: e.name.clone(),
                    reasons,
                }),
                _ => None,
            })
            .collect(),
        ..Default::default()
    };
    let mut offending = Vec::new();
    report.summary.checked = services.len();
    let user = UserInfo {
        username: "lbguard-audit".into(),
        groups: vec![],
    };
    for svc in services {
        let Ok(input) = Input::new(Operation::Create, Some(svc), None, user.clone()) else {
            continue;
        };
        let mut verdict = evaluate(&input, config, versions, state, inventory);
        exceptions::apply(
            &mut verdict,
            &Subject::of(&input),
            granted.exceptions,
            config,
            granted.now,
        );
        if verdict.foreign {
            report.summary.checked -= 1;
            continue;
        }
        let meta = input.object.as_ref().map(|s| &s.metadata);
        let uid = meta.and_then(|m| m.uid.clone()).unwrap_or_default();
        let provider = match config.provider {
            ProviderChoice::Fixed(p) => Some(p.as_str()),
            ProviderChoice::Auto => input.object.as_ref().and_then(|s| {
                Provider::ALL
                    .into_iter()
                    .find(|p| catalog(*p).detect(s))
                    .map(Provider::as_str)
            }),
        };
        if verdict.violations.is_empty() {
            report.clean.push(ServiceReport {
                namespace: input.namespace.clone(),
                name: input.name.clone(),
                uid,
                provider,
                violations: Vec::new(),
            });
            continue;
        }
        let exempted = verdict
            .violations
            .iter()
            .filter(|v| v.exception.is_some())
            .count();
        report.summary.exempted += exempted;
        if !verdict.allowed() {
            report.summary.denied += 1;
        } else if exempted < verdict.violations.len() {
            report.summary.warned += 1;
        }
        report.services.push(ServiceReport {
            namespace: input.namespace.clone(),
            name: input.name.clone(),
            uid,
            provider,
            violations: verdict
                .violations
                .iter()
                .map(|v| Finding {
                    rule: v.rule,
                    action: v.action,
                    message: v.message.clone(),
                    field: v.field.clone(),
                    exception: v.exception.clone(),
                })
                .collect(),
        });
        // Events go to Services with a finding no exception covers.
        if let Some(s) = input.object
            && verdict.violations.iter().any(|v| v.exception.is_none())
        {
            offending.push(s);
        }
    }
    report
        .services
        .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    report
        .clean
        .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    (report, offending)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EmptyInventory;
    use crate::providers::Provider::Ctyun;
    use crate::testkit::{cfg, cluster_with, lb};

    #[test]
    fn audit_reports_conflicts_between_existing_services() {
        let config = cfg("");
        let state = cluster_with(
            &config,
            &[
                lb().named("shop", "a").pa(Ctyun, "id", "lb-1").build(),
                lb().named("shop", "b").pa(Ctyun, "id", "lb-1").build(),
                lb().named("shop", "c").pa(Ctyun, "id", "lb-2").build(),
                lb().named("web", "bad")
                    .pa(Ctyun, "address-type", "public")
                    .build(),
            ],
        );
        let (report, offending) = audit(
            &state,
            &config,
            &Versions::from_config(&config),
            &EmptyInventory,
            &Granted::none(),
        );
        assert_eq!(report.summary.checked, 4);
        assert_eq!(report.summary.denied, 3);
        let names: Vec<&str> = report.services.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "bad"]);
        assert_eq!(offending.len(), 3);
        let counts = report.counts();
        assert_eq!(
            counts[&("listener-port-unique", Action::Deny, "shop".to_string())],
            2
        );
        assert_eq!(
            counts[&("address-type-value", Action::Deny, "web".to_string())],
            1
        );
    }
}
