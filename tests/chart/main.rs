//! The Helm chart, rendered and linted by Helm's own SDK (helm-python-sdk): every object
//! parses into its k8s-openapi type, the webhooks are wired as documented, the certificate
//! modes agree with themselves, and the rendered config is one lbguard accepts.

use std::collections::BTreeMap;
use std::process::Command;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::Deserialize;
use serde_json::{Value, json};

const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/lbguard");
const HELPER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/chart/helm.py");
const NS: &str = "lbguard-system";

fn helm(action: &str, values: &Value) -> Value {
    let out = Command::new("python3")
        .args([HELPER, action, CHART, &values.to_string(), NS])
        .output()
        .expect("python3 runs (scripts/venv installs helm-python-sdk in target/venv: put its bin/ first on PATH)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Every rendered object, by kind, in template order.
struct Rendered(Vec<Value>);

impl Rendered {
    fn kind(&self, kind: &str) -> Vec<&Value> {
        self.0.iter().filter(|o| o["kind"] == kind).collect()
    }

    fn one<T: for<'de> Deserialize<'de>>(&self, kind: &str) -> T {
        let all = self.kind(kind);
        assert_eq!(all.len(), 1, "expected one {kind}");
        serde_json::from_value(all[0].clone()).unwrap_or_else(|e| panic!("{kind}: {e}"))
    }

    /// The one object of `kind` whose name ends with `suffix`.
    fn named<T: for<'de> Deserialize<'de>>(&self, kind: &str, suffix: &str) -> T {
        let all: Vec<&Value> = self
            .kind(kind)
            .into_iter()
            .filter(|o| o["metadata"]["name"].as_str().unwrap().ends_with(suffix))
            .collect();
        assert_eq!(all.len(), 1, "expected one {kind} named *{suffix}");
        serde_json::from_value(all[0].clone()).unwrap_or_else(|e| panic!("{kind}: {e}"))
    }
}

/// A ClusterRole's grants as "group/resource:verbs", sorted.
fn grants(role: &ClusterRole) -> Vec<String> {
    let mut grants: Vec<String> = Vec::new();
    for rule in role.rules.clone().unwrap_or_default() {
        for g in rule.api_groups.unwrap_or_default() {
            for res in rule.resources.clone().unwrap_or_default() {
                grants.push(format!("{g}/{res}:{}", rule.verbs.join(",")));
            }
        }
    }
    grants.sort();
    grants
}

fn render(values: Value) -> Rendered {
    let out = helm("render", &values);
    assert!(
        out.get("error").is_none(),
        "render failed: {}",
        out["error"]
    );
    let templates: BTreeMap<String, String> =
        serde_json::from_value(out["templates"].clone()).unwrap();
    let mut objects = Vec::new();
    for (path, text) in templates {
        if path.ends_with("NOTES.txt") {
            continue;
        }
        for doc in lbguard::yaml::documents(&text) {
            objects.push(doc.unwrap_or_else(|e| panic!("{path}: {e}")));
        }
    }
    let r = Rendered(objects);
    every_object_parses(&r);
    r
}

fn every_object_parses(r: &Rendered) {
    fn parse<T: for<'de> Deserialize<'de>>(v: &Value) {
        serde_json::from_value::<T>(v.clone()).unwrap_or_else(|e| panic!("{}: {e}", v["kind"]));
    }
    for o in &r.0 {
        assert!(
            o["apiVersion"].is_string() && o["metadata"]["name"].is_string(),
            "{o}"
        );
        match o["kind"].as_str().unwrap() {
            "Deployment" => parse::<Deployment>(o),
            "Service" => parse::<Service>(o),
            "ServiceAccount" => parse::<ServiceAccount>(o),
            "ConfigMap" => parse::<ConfigMap>(o),
            "Secret" => parse::<Secret>(o),
            "PodDisruptionBudget" => parse::<PodDisruptionBudget>(o),
            "ClusterRole" => parse::<ClusterRole>(o),
            "ClusterRoleBinding" => parse::<ClusterRoleBinding>(o),
            "Role" => parse::<Role>(o),
            "RoleBinding" => parse::<RoleBinding>(o),
            "ValidatingWebhookConfiguration" => parse::<ValidatingWebhookConfiguration>(o),
            "MutatingWebhookConfiguration" => parse::<MutatingWebhookConfiguration>(o),
            "ValidatingAdmissionPolicy" => parse::<ValidatingAdmissionPolicy>(o),
            "ValidatingAdmissionPolicyBinding" => parse::<ValidatingAdmissionPolicyBinding>(o),
            // cert-manager's and the Prometheus Operator's kinds have no k8s-openapi type:
            // check their shape.
            "Issuer" | "Certificate" | "ServiceMonitor" | "PrometheusRule" => {
                assert!(o["spec"].is_object(), "{o}")
            }
            // No k8s-openapi type before 1.34 (the e2e suite checks them on the API server).
            "MutatingAdmissionPolicy" => assert!(o["spec"]["mutations"].is_array(), "{o}"),
            "MutatingAdmissionPolicyBinding" => {
                assert!(o["spec"]["policyName"].is_string(), "{o}")
            }
            other => panic!("unexpected kind {other}"),
        }
    }
}

mod certificates;
mod cloud;
mod deletion;
mod exceptions;
mod monitoring;
mod notes;
mod permissions;
mod vap;
mod workload;
