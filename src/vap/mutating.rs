//! The config's defaults as one MutatingAdmissionPolicy and its binding, applied by the API
//! server itself (`admissionregistration.k8s.io/v1` from Kubernetes 1.36, `v1beta1` on
//! 1.34–1.35). One mutation per default, in the order `engine::mutate` applies them: each
//! sees the object as the ones before it left it, as each default in the engine sees the ones
//! before it.
//!
//! The same semantics as the webhook: a key the Service has is never touched, so a second
//! pass changes nothing; on an update of a LoadBalancer Service a default for a key that cannot
//! change (Volcengine weight, Huawei class) is never added late, but a value the live Service
//! has is kept when the update drops it. Defaults read from the inventory stay in the webhook.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::providers::catalog;
use crate::vocab::catalog::{Catalog, catalog_annotation};
use crate::vocab::cel::{self, IS_LB, on};
use crate::vocab::config::{Config, Flavor, ProviderChoice};
use crate::vocab::ctx::Versions;
use crate::vocab::provider::Provider;
use crate::vocab::version::{Known, KubeVersion};

/// The policy's name, and its binding's.
pub const NAME: &str = "lbguard-defaults";

/// The API a MutatingAdmissionPolicy is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// GA, Kubernetes 1.36 and newer.
    V1,
    /// Beta, Kubernetes 1.34 and 1.35 (off unless the API server enables it).
    V1beta1,
}

impl Api {
    pub fn api_version(self) -> &'static str {
        match self {
            Api::V1 => "admissionregistration.k8s.io/v1",
            Api::V1beta1 => "admissionregistration.k8s.io/v1beta1",
        }
    }

    /// The API for the cluster version: `Err` says why there is none. Unknown means a
    /// current cluster (the version flag or config says otherwise).
    pub fn for_cluster(versions: &Versions) -> Result<Api, String> {
        match &versions.cluster {
            Known::Yes(v) if *v >= KubeVersion::new(1, 36, 0, 0) => Ok(Api::V1),
            Known::Yes(v) if *v >= KubeVersion::new(1, 34, 0, 0) => Ok(Api::V1beta1),
            Known::Yes(v) => Err(format!(
                "the cluster runs {v}: MutatingAdmissionPolicy needs Kubernetes 1.34 or newer, so the webhook applies every default"
            )),
            _ => Ok(Api::V1),
        }
    }
}

/// One default of the config: its name (as in the config) and whether the policy applies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    /// `Ok`: a mutation of the policy. `Err`: why not (nothing to do, or the webhook's).
    pub state: Result<(), String>,
}

/// What the mutating side of `export-vap` produced.
#[derive(Debug, Clone, Default)]
pub struct Mutating {
    pub rows: Vec<Row>,
    /// The policy and its binding, when some default is exported.
    pub objects: Vec<Value>,
}

impl Mutating {
    pub fn exported(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.state.is_ok())
    }
}

/// Why the inventory's default is never a policy.
pub const INVENTORY: &str = "stays in the webhook: the reused load balancer's address type comes from the inventory (file or cloud), which a policy cannot read";

/// One mutation: a default's CEL apply configuration.
struct Mutation {
    expression: String,
}

/// `Object{}` changes nothing.
const NOTHING: &str = "Object{}";

fn set_annotation(key: &str, value: &str) -> String {
    format!(
        "Object{{metadata: Object.metadata{{annotations: {{{}: {value}}}}}}}",
        cel::lit(key)
    )
}

/// The annotation default `key: value` when `applies` (CEL) holds, as `Builder::annotation`
/// sets it: never over a key the Service has; for a `fixed` key on an update of a
/// LoadBalancer, only the live value, and only when the live Service has one.
fn annotation(applies: &str, key: &str, value: &str, fixed: bool) -> String {
    let has_new = on(&cel::has_annotation(key), "object");
    let set = set_annotation(key, &cel::lit(value));
    if !fixed {
        return format!("({applies}) && !{has_new} ? {set} : {NOTHING}");
    }
    let live = format!("(oldObject != null && {})", on(IS_LB, "oldObject"));
    let has_old = on(&cel::has_annotation(key), "oldObject");
    let keep = set_annotation(key, &on(&cel::annotation(key), "oldObject"));
    format!(
        "({applies}) && !{has_new} ? ({live} ? ({has_old} ? {keep} : {NOTHING}) : {set}) : {NOTHING}"
    )
}

/// CEL for "the engine applies `p`'s defaults": the provider is fixed to it, or (auto) the
/// new or the live Service carries something of its. `None`: another provider is fixed.
fn provider_applies(config: &Config, p: Provider) -> Option<String> {
    match config.provider {
        ProviderChoice::Fixed(f) if f == p => Some("true".into()),
        ProviderChoice::Fixed(_) => None,
        ProviderChoice::Auto => {
            let cat = catalog(p);
            Some(format!(
                "({} || {}) && ({})",
                super::detects(cat, "object"),
                super::detects(cat, "oldObject"),
                super::route::routed_to(p, &crate::vocab::route::Scope::of(config))
            ))
        }
    }
}

fn present(cat: &Catalog, suffix: &str) -> String {
    on(&catalog_annotation(cat, suffix).present, "object")
}

/// The mutations, in the engine's order, and a row for every default the config can name.
fn mutations(config: &Config, versions: &Versions) -> (Vec<Mutation>, Vec<Row>) {
    let d = &config.defaults;
    let mut out = Vec::new();
    let mut rows = Vec::new();
    let mut row = |name: &str, state: Result<(), String>| {
        rows.push(Row {
            name: name.into(),
            state,
        })
    };
    let other_provider = |p: Provider| format!("the config's provider is not {p}");

    // The engine's order: each provider's (ctyun, alibaba, huawei, volcengine), then the
    // turbo traffic policy, then defaults.annotations.
    let name = "defaults.ctyunIpModeProxy";
    let cat = catalog(Provider::Ctyun);
    match (
        d.ctyun_ip_mode_proxy,
        provider_applies(config, Provider::Ctyun),
    ) {
        (false, _) => row(name, Err("off in the config".into())),
        (true, None) => row(name, Err(other_provider(Provider::Ctyun))),
        (true, Some(_)) if matches!(&versions.cluster, Known::Yes(v) if *v < crate::providers::ctyun::IP_MODE_MIN) => {
            row(
                name,
                Err(format!(
                    "the cluster runs {}: ip-mode needs Kubernetes 1.30 or newer",
                    versions.cluster_text()
                )),
            )
        }
        (true, Some(p)) => {
            let local = "has(object.spec.externalTrafficPolicy) && object.spec.externalTrafficPolicy == 'Local'";
            out.push(Mutation {
                expression: annotation(
                    &format!("({p}) && {local}"),
                    &cat.key("ip-mode"),
                    "proxy",
                    false,
                ),
            });
            row(name, Ok(()));
        }
    }
    let name = "defaults.huaweiElbClass";
    let cat = catalog(Provider::Huawei);
    match (
        &d.huawei_elb_class,
        provider_applies(config, Provider::Huawei),
    ) {
        (None, _) => row(name, Err("not set in the config".into())),
        (Some(_), None) => row(name, Err(other_provider(Provider::Huawei))),
        (Some(class), Some(p)) => {
            let given = format!("({} || {})", present(cat, "id"), present(cat, "autocreate"));
            out.push(Mutation {
                expression: annotation(
                    &format!("({p}) && {given}"),
                    &cat.key("class"),
                    class,
                    true,
                ),
            });
            row(name, Ok(()));
        }
    }
    let name = "defaults.volcengineWeight";
    let cat = catalog(Provider::Volcengine);
    match (
        d.volcengine_weight,
        provider_applies(config, Provider::Volcengine),
    ) {
        (None, _) => row(name, Err("not set in the config".into())),
        (Some(_), None) => row(name, Err(other_provider(Provider::Volcengine))),
        (Some(w), Some(p)) => {
            out.push(Mutation {
                expression: annotation(
                    &format!("({p}) && {}", present(cat, "server-group-id")),
                    &cat.key("weight"),
                    &w.to_string(),
                    true,
                ),
            });
            row(name, Ok(()));
        }
    }
    let name = "defaults.huaweiTurboClusterPolicy";
    if !d.huawei_turbo_cluster_policy {
        row(name, Err("off in the config".into()));
    } else if config.cluster.flavor != Flavor::Turbo {
        row(name, Err("not a turbo cluster (cluster.flavor)".into()));
    } else {
        out.push(Mutation {
            expression: format!(
                "!has(object.spec.externalTrafficPolicy) ? Object{{spec: Object.spec{{externalTrafficPolicy: 'Cluster'}}}} : {NOTHING}"
            ),
        });
        row(name, Ok(()));
    }
    if d.annotations.is_empty() {
        row("defaults.annotations", Err("none set in the config".into()));
    }
    for (k, v) in &d.annotations {
        let name = format!("defaults.annotations[{k}]");
        out.push(Mutation {
            expression: annotation("true", k, v, false),
        });
        row(&name, Ok(()));
    }
    row(
        "inventory address type (ctyun, alibaba)",
        Err(INVENTORY.into()),
    );
    (out, rows)
}

/// The config's defaults as a MutatingAdmissionPolicy for `api` (`Err`: why none, e.g.
/// `--mutating off` or a cluster too old).
pub fn export(config: &Config, versions: &Versions, api: Result<Api, String>) -> Mutating {
    let (muts, mut rows) = mutations(config, versions);
    let api = match api {
        _ if !config.defaults.enabled => Err("defaults.enabled is false".to_string()),
        a => a,
    };
    let api = match api {
        Ok(a) => a,
        Err(why) => {
            for r in rows.iter_mut().filter(|r| r.state.is_ok()) {
                r.state = Err(why.clone());
            }
            return Mutating {
                rows,
                objects: Vec::new(),
            };
        }
    };
    if muts.is_empty() {
        return Mutating {
            rows,
            objects: Vec::new(),
        };
    }
    let labels = BTreeMap::from([
        ("app.kubernetes.io/managed-by", "lbguard"),
        ("lbguard.io/defaults", "true"),
    ]);
    let ex = &config.exemptions;
    let mut conditions = vec![
        json!({
            "name": "is-load-balancer",
            "expression": cel::inline(&format!("object != null && {}", on(IS_LB, "object"))),
        }),
        json!({
            "name": "served-by-provider",
            "expression": super::route::ours(config),
        }),
    ];
    if !ex.users.is_empty() || !ex.groups.is_empty() {
        let users: Vec<&str> = ex.users.iter().map(String::as_str).collect();
        let groups: Vec<&str> = ex.groups.iter().map(String::as_str).collect();
        conditions.push(json!({
            "name": "not-exempt",
            "expression": format!(
                "!(request.userInfo.username in {}) && !request.userInfo.groups.exists(g, g in {})",
                cel::list(&users),
                cel::list(&groups)
            ),
        }));
    }
    let mutations: Vec<Value> = muts
        .iter()
        .map(|m| {
            json!({
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": cel::inline(&m.expression)},
            })
        })
        .collect();
    let policy = json!({
        "apiVersion": api.api_version(),
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": NAME, "labels": labels},
        "spec": {
            // As the chart's mutating webhook: a policy that cannot run fails the write
            // rather than letting a Service through without its defaults.
            "failurePolicy": "Fail",
            // Runs again when a later mutation changed the object, as the webhook's
            // reinvocationPolicy: IfNeeded.
            "reinvocationPolicy": "IfNeeded",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["services"],
                "operations": ["CREATE", "UPDATE"],
            }]},
            "matchConditions": conditions,
            "mutations": mutations,
        },
    });
    let mut binding_spec = json!({"policyName": NAME});
    if !ex.namespaces.is_empty() {
        binding_spec["matchResources"] = json!({"namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ex.namespaces,
        }]}});
    }
    let binding = json!({
        "apiVersion": api.api_version(),
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": NAME, "labels": labels},
        "spec": binding_spec,
    });
    Mutating {
        rows,
        objects: vec![policy, binding],
    }
}

#[cfg(test)]
#[path = "mutating_tests.rs"]
mod tests;
