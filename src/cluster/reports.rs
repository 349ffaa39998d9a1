//! The audit's results as the Policy Working Group's reports, where Policy Reporter, Kyverno's
//! tooling and other policy engines' users already look: `openreports.io/v1alpha1` Report
//! or `wgpolicyk8s.io/v1alpha2` PolicyReport, one named `lbguard` per namespace that has
//! LoadBalancer Services.
//!
//! - A failing rule is a `fail` result (deny) or a `warn` result (warn) per Service.
//! - A Service with no finding gets one `pass` result (rule `all`), so a clean namespace keeps
//!   a report that says it was checked.
//! - Reports are applied in place (server-side apply) once per audit round and never more
//!   often. A namespace without LoadBalancer Services loses its report.
//! - Which API is used is found by API discovery on every round, so a CRD installed later is
//!   picked up.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::ApiResource;
use kube::{Client, core::GroupVersionKind};
use serde_json::{Value, json};

use super::audit::{Report, ServiceReport};
use crate::config::ReportsApi;
use crate::rules::Action;

/// The report objects' name in each namespace.
pub const NAME: &str = "lbguard";
const MANAGED_BY: &str = "app.kubernetes.io/managed-by=lbguard";

/// A report API lbguard can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportApi {
    /// `openreports.io/v1alpha1` Report, the successor.
    OpenReports,
    /// `wgpolicyk8s.io/v1alpha2` PolicyReport.
    WgPolicy,
}

impl ReportApi {
    pub fn resource(self) -> ApiResource {
        let (group, version, kind, plural) = match self {
            ReportApi::OpenReports => ("openreports.io", "v1alpha1", "Report", "reports"),
            ReportApi::WgPolicy => (
                "wgpolicyk8s.io",
                "v1alpha2",
                "PolicyReport",
                "policyreports",
            ),
        };
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    }

    fn other(self) -> Self {
        match self {
            ReportApi::OpenReports => ReportApi::WgPolicy,
            ReportApi::WgPolicy => ReportApi::OpenReports,
        }
    }
}

/// The report APIs the API server serves.
pub async fn installed(client: &Client) -> Result<BTreeSet<(String, String)>, kube::Error> {
    let groups = client.list_api_groups().await?;
    Ok(groups
        .groups
        .into_iter()
        .flat_map(|g| {
            g.versions
                .into_iter()
                .map(move |v| (g.name.clone(), v.version))
        })
        .collect())
}

/// Which API to write, given the config and what is installed.
pub fn choose(choice: ReportsApi, installed: &BTreeSet<(String, String)>) -> Option<ReportApi> {
    let has = |api: ReportApi| {
        let r = api.resource();
        installed.contains(&(r.group, r.version))
    };
    match choice {
        ReportsApi::Off => None,
        ReportsApi::Openreports => has(ReportApi::OpenReports).then_some(ReportApi::OpenReports),
        ReportsApi::Wgpolicyk8s => has(ReportApi::WgPolicy).then_some(ReportApi::WgPolicy),
        ReportsApi::Auto => [ReportApi::OpenReports, ReportApi::WgPolicy]
            .into_iter()
            .find(|a| has(*a)),
    }
}

fn severity(a: Action) -> &'static str {
    match a {
        Action::Deny => "high",
        _ => "medium",
    }
}

fn subject(s: &ServiceReport) -> Value {
    let mut r =
        json!({"apiVersion": "v1", "kind": "Service", "namespace": s.namespace, "name": s.name});
    if !s.uid.is_empty() {
        r["uid"] = json!(s.uid);
    }
    r
}

/// The reports for one audit round, by namespace.
pub fn build(report: &Report, api: ReportApi) -> BTreeMap<String, Value> {
    let timestamp = json!({"seconds": report.generated_at, "nanos": 0});
    let mut by_ns: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for s in report.services.iter().chain(&report.clean) {
        let results = by_ns.entry(s.namespace.as_str()).or_default();
        let policy = s.provider.unwrap_or("lbguard");
        if s.violations.is_empty() {
            results.push(json!({
                "source": "lbguard",
                "policy": policy,
                "rule": "all",
                "result": "pass",
                "severity": "info",
                "scored": true,
                "timestamp": timestamp,
                "message": "no lbguard rule finds a problem",
                "resources": [subject(s)],
            }));
        }
        for v in &s.violations {
            let mut properties = json!({"field": v.field, "action": v.action.as_str()});
            let result = match &v.exception {
                Some(e) => {
                    properties["exception"] = json!(e.key());
                    properties["reason"] = json!(e.reason);
                    properties["expires"] = json!(e.expires);
                    "skip"
                }
                None if v.action == Action::Deny => "fail",
                None => "warn",
            };
            results.push(json!({
                "source": "lbguard",
                "policy": policy,
                "rule": v.rule,
                "category": "LoadBalancer",
                "result": result,
                "severity": severity(v.action),
                "scored": true,
                "timestamp": timestamp,
                "message": v.message,
                "resources": [subject(s)],
                "properties": properties,
            }));
        }
    }
    let r = api.resource();
    by_ns
        .into_iter()
        .map(|(ns, results)| {
            let count = |what: &str| results.iter().filter(|x| x["result"] == what).count();
            let mut obj = json!({
                "apiVersion": r.api_version,
                "kind": r.kind,
                "metadata": {
                    "name": NAME,
                    "namespace": ns,
                    "labels": {"app.kubernetes.io/managed-by": "lbguard"},
                },
                "summary": {
                    "pass": count("pass"),
                    "fail": count("fail"),
                    "warn": count("warn"),
                    "error": 0,
                    "skip": count("skip"),
                },
                "results": results,
            });
            if api == ReportApi::OpenReports {
                obj["source"] = json!("lbguard");
            }
            (ns.to_string(), obj)
        })
        .collect()
}

/// What a round wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Published {
    pub applied: usize,
    pub deleted: usize,
}

/// Applies every namespace's report and deletes lbguard's reports of namespaces that have
/// none now (and of the other API, when the cluster moved from one to the other).
pub async fn publish(
    client: &Client,
    api: ReportApi,
    desired: &BTreeMap<String, Value>,
    installed: &BTreeSet<(String, String)>,
) -> Result<Published, kube::Error> {
    let r = api.resource();
    let mut out = Published::default();
    let params = PatchParams::apply("lbguard").force();
    for (ns, obj) in desired {
        let reports: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &r);
        reports.patch(NAME, &params, &Patch::Apply(obj)).await?;
        out.applied += 1;
    }
    let mut prune = vec![(api, desired.keys().cloned().collect::<BTreeSet<_>>())];
    let other = api.other().resource();
    if installed.contains(&(other.group.clone(), other.version.clone())) {
        prune.push((api.other(), BTreeSet::new()));
    }
    for (which, keep) in prune {
        let res = which.resource();
        let all: Api<DynamicObject> = Api::all_with(client.clone(), &res);
        let existing = all.list(&ListParams::default().labels(MANAGED_BY)).await?;
        for o in existing.items {
            let (Some(ns), Some(name)) = (o.metadata.namespace.clone(), o.metadata.name.clone())
            else {
                continue;
            };
            if keep.contains(&ns) {
                continue;
            }
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &res);
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => out.deleted += 1,
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

/// One audit round's reports: discover, build, write. Errors are logged; the next round
/// tries again.
pub async fn round(client: &Client, choice: ReportsApi, report: &Report) -> Option<Published> {
    if choice == ReportsApi::Off {
        return None;
    }
    let installed = match installed(client).await {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!(error = %e, "policy reports: API discovery failed; trying next round");
            return None;
        }
    };
    let Some(api) = choose(choice, &installed) else {
        tracing::debug!(?choice, "policy reports: no report API installed");
        return None;
    };
    let desired = build(report, api);
    match publish(client, api, &desired, &installed).await {
        Ok(p) => {
            tracing::debug!(
                applied = p.applied,
                deleted = p.deleted,
                ?api,
                "policy reports written"
            );
            Some(p)
        }
        Err(e) => {
            tracing::warn!(error = %e, ?api, "policy reports: write failed; trying next round");
            None
        }
    }
}

#[cfg(test)]
#[path = "reports_tests.rs"]
mod tests;
