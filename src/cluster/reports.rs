//! The audit's results as the Policy Working Group's reports, where Policy Reporter, Kyverno's
//! tooling and other policy engines' users already look: `openreports.io/v1alpha1` Report
//! or `wgpolicyk8s.io/v1alpha2` PolicyReport, one named `lbguard` per namespace that has
//! LoadBalancer Services.
//!
//! - A failing rule is a `fail` result (deny) or a `warn` result (warn) per Service.
//! - A Service with no finding gets one `pass` result (rule `all`), so a clean namespace keeps
//!   a report that says it was checked.
//! - Reports are applied in place (server-side apply) once per audit round and never more
//!   often, each namespace on its own: one that refuses (being deleted, forbidden) is
//!   counted with its reason and tried again next round, and never stops the others. A
//!   namespace without LoadBalancer Services loses its report.
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

/// Why a namespace's report could not be written (the `reason` label of
/// `lbguard_policy_report_failures_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Refusal {
    /// The namespace is being deleted: the API server takes no new object in it.
    Terminating,
    /// RBAC or an admission policy refused the write.
    Forbidden,
    /// Another writer changed the report at the same moment (after one retry).
    Conflict,
    /// The namespace (or the report API) went away.
    NotFound,
    /// The API server rejected the object (its schema).
    Invalid,
    /// No answer in time.
    Timeout,
    /// Throttled, a server error, or no connection.
    Unavailable,
    Other,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Terminating => "terminating",
            Refusal::Forbidden => "forbidden",
            Refusal::Conflict => "conflict",
            Refusal::NotFound => "not_found",
            Refusal::Invalid => "invalid",
            Refusal::Timeout => "timeout",
            Refusal::Unavailable => "unavailable",
            Refusal::Other => "other",
        }
    }

    /// What an error from one namespace's write means.
    pub fn of(e: &kube::Error) -> Self {
        let kube::Error::Api(s) = e else {
            return Refusal::Unavailable;
        };
        let terminating = s
            .details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
            || s.message.contains("because it is being terminated");
        match s.code {
            403 if terminating => Refusal::Terminating,
            403 => Refusal::Forbidden,
            409 => Refusal::Conflict,
            404 | 410 => Refusal::NotFound,
            400 | 422 => Refusal::Invalid,
            429 | 500..=599 => Refusal::Unavailable,
            _ => Refusal::Other,
        }
    }
}

/// One namespace the round could not write, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub namespace: String,
    pub reason: Refusal,
    pub error: String,
}

/// What a round wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Published {
    pub applied: usize,
    pub deleted: usize,
    /// Namespaces whose report could not be written or removed this round; the next round
    /// tries each again on its own.
    pub failed: Vec<Failed>,
}

/// One namespace's write: done, or why not.
type Outcome = (String, Result<(), (Refusal, String)>);

/// How many namespaces are written at once, and how long one write may take: a namespace
/// that hangs or refuses never holds up the others.
const PARALLEL: usize = 8;
const WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

async fn bounded<T>(
    f: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, (Refusal, String)> {
    match tokio::time::timeout(WRITE_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err((Refusal::of(&e), e.to_string())),
        Err(_) => Err((
            Refusal::Timeout,
            format!("no answer within {}s", WRITE_TIMEOUT.as_secs()),
        )),
    }
}

/// Applies one namespace's report; a conflict is tried once more.
async fn apply_one(
    client: &Client,
    r: &ApiResource,
    ns: &str,
    obj: &Value,
) -> Result<(), (Refusal, String)> {
    let reports: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, r);
    let params = PatchParams::apply("lbguard").force();
    let mut tries = 0;
    loop {
        tries += 1;
        match bounded(reports.patch(NAME, &params, &Patch::Apply(obj))).await {
            Err((Refusal::Conflict, _)) if tries < 2 => continue,
            other => return other.map(|_| ()),
        }
    }
}

/// Applies every namespace's report, each on its own (a namespace that refuses, e.g. one
/// being deleted, is recorded and skipped), and deletes lbguard's reports of namespaces that
/// have none now (and of the other API, when the cluster moved from one to the other).
/// `Err` only when lbguard's existing reports cannot be listed.
pub async fn publish(
    client: &Client,
    api: ReportApi,
    desired: &BTreeMap<String, Value>,
    installed: &BTreeSet<(String, String)>,
) -> Published {
    use futures::StreamExt;
    let r = api.resource();
    let mut out = Published::default();
    // Each write owns what it needs: the futures run concurrently.
    let writes: Vec<_> = desired
        .iter()
        .map(|(ns, obj)| {
            let (client, r, ns, obj) = (client.clone(), r.clone(), ns.clone(), obj.clone());
            async move {
                let result = apply_one(&client, &r, &ns, &obj).await;
                (ns, result)
            }
        })
        .collect();
    let results: Vec<Outcome> = futures::stream::iter(writes)
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    for (ns, result) in results {
        match result {
            Ok(()) => out.applied += 1,
            Err((reason, error)) => out.failed.push(Failed {
                namespace: ns,
                reason,
                error,
            }),
        }
    }
    let mut prune = vec![(api, desired.keys().cloned().collect::<BTreeSet<_>>())];
    let other = api.other().resource();
    if installed.contains(&(other.group.clone(), other.version.clone())) {
        prune.push((api.other(), BTreeSet::new()));
    }
    for (which, keep) in prune {
        let res = which.resource();
        let all: Api<DynamicObject> = Api::all_with(client.clone(), &res);
        let existing = match bounded(all.list(&ListParams::default().labels(MANAGED_BY))).await {
            Ok(l) => l.items,
            Err((reason, error)) => {
                out.failed.push(Failed {
                    namespace: String::new(),
                    reason,
                    error: format!("listing lbguard's {}: {error}", res.plural),
                });
                continue;
            }
        };
        let stale: Vec<(String, String)> = existing
            .into_iter()
            .filter_map(|o| Some((o.metadata.namespace?, o.metadata.name?)))
            .filter(|(ns, _)| !keep.contains(ns))
            .collect();
        let deletes: Vec<_> = stale
            .into_iter()
            .map(|(ns, name)| {
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &res);
                async move {
                    let r = match bounded(api.delete(&name, &DeleteParams::default())).await {
                        Ok(_) | Err((Refusal::NotFound, _)) => Ok(()),
                        Err(e) => Err(e),
                    };
                    (ns, r)
                }
            })
            .collect();
        let results: Vec<Outcome> = futures::stream::iter(deletes)
            .buffer_unordered(PARALLEL)
            .collect()
            .await;
        for (ns, result) in results {
            match result {
                Ok(()) => out.deleted += 1,
                Err((reason, error)) => out.failed.push(Failed {
                    namespace: ns,
                    reason,
                    error,
                }),
            }
        }
    }
    out.failed.sort_by(|a, b| a.namespace.cmp(&b.namespace));
    out
}

/// One audit round's reports: discover, build, write. A namespace that refuses is logged
/// (once per reason: `failing` remembers the namespaces that failed last round) and tried
/// again next round; the others are written regardless.
pub async fn round(
    client: &Client,
    choice: ReportsApi,
    report: &Report,
    failing: &mut BTreeMap<String, Refusal>,
) -> Option<Published> {
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
    let p = publish(client, api, &desired, &installed).await;
    let now: BTreeMap<String, Refusal> = p
        .failed
        .iter()
        .map(|f| (f.namespace.clone(), f.reason))
        .collect();
    for f in &p.failed {
        if failing.get(&f.namespace) == Some(&f.reason) {
            tracing::debug!(namespace = %f.namespace, reason = f.reason.as_str(), error = %f.error, "policy report still not written; trying next round");
        } else {
            tracing::warn!(namespace = %f.namespace, reason = f.reason.as_str(), error = %f.error, "policy report not written for this namespace; the others are, and it is tried again next round");
        }
    }
    for ns in failing.keys().filter(|ns| !now.contains_key(*ns)) {
        tracing::info!(namespace = %ns, "policy report written again");
    }
    *failing = now;
    tracing::debug!(
        applied = p.applied,
        deleted = p.deleted,
        failed = p.failed.len(),
        ?api,
        "policy reports written"
    );
    Some(p)
}

#[cfg(test)]
#[path = "reports_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "reports_refusals.rs"]
mod refusals;
