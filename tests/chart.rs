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
        .expect("python3 runs (scripts/test installs helm-python-sdk)");
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

#[test]
fn lint_is_clean_for_every_certificate_mode() {
    for values in [
        json!({}),
        json!({"certificates": {"mode": "certManager"}}),
        json!({"certificates": {"mode": "secret", "secret": {"name": "mine", "caBundle": "Y2E="}}}),
        json!({"provider": "huawei", "inventory": {"enabled": true, "loadBalancers": [{"id": "elb-1", "provider": "huawei"}]}}),
        json!({"provider": "alibaba", "inventory": {"cloud": {"enabled": true, "existingSecret": "lbguard-cloud"}},
               "monitoring": {"prometheusRule": {"enabled": true}}}),
    ] {
        let report = helm("lint", &values);
        assert_eq!(report["errors"], json!([]), "{values}: {report}");
        let bad: Vec<&Value> = report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["severity"].as_u64() >= Some(2))
            .collect();
        assert!(bad.is_empty(), "{values}: {bad:?}");
    }
}

#[test]
fn default_install_wires_both_webhooks_to_the_service() {
    let r = render(json!({"provider": "alibaba", "webhook": {"mutate": "always"}}));
    let vwc: ValidatingWebhookConfiguration = r.one("ValidatingWebhookConfiguration");
    let mwc: MutatingWebhookConfiguration = r.one("MutatingWebhookConfiguration");
    let svc: Service = r.one("Service");
    let v = &vwc.webhooks.as_ref().unwrap()[0];
    let m = &mwc.webhooks.as_ref().unwrap()[0];
    assert_eq!(v.admission_review_versions, ["v1"]);
    assert_eq!(v.side_effects, "NoneOnDryRun");
    assert_eq!(m.side_effects, "None");
    assert_eq!(v.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(v.match_policy.as_deref(), Some("Equivalent"));
    assert_eq!(v.timeout_seconds, Some(5));
    assert_eq!(m.reinvocation_policy.as_deref(), Some("IfNeeded"));
    for (cc, path) in [
        (&v.client_config, "/validate"),
        (&m.client_config, "/mutate"),
    ] {
        let s = cc.service.as_ref().unwrap();
        assert_eq!(s.name, svc.metadata.name.clone().unwrap());
        assert_eq!(s.namespace, NS);
        assert_eq!(s.path.as_deref(), Some(path));
        assert_eq!(s.port, Some(443));
    }
    let rule = &v.rules.as_ref().unwrap()[0];
    assert_eq!(rule.api_groups.as_deref(), Some(&[String::new()][..]));
    assert_eq!(
        rule.resources.as_deref(),
        Some(&["services".to_string()][..])
    );
    assert_eq!(
        rule.operations.as_deref(),
        Some(
            &[
                "CREATE".to_string(),
                "UPDATE".to_string(),
                "DELETE".to_string()
            ][..]
        ),
        "DELETE by default, for deletion protection"
    );
    for sel in [
        v.namespace_selector.as_ref().unwrap(),
        m.namespace_selector.as_ref().unwrap(),
    ] {
        let e = &sel.match_expressions.as_ref().unwrap()[0];
        assert_eq!(e.key, "kubernetes.io/metadata.name");
        assert_eq!(e.operator, "NotIn");
        let vals = e.values.as_ref().unwrap();
        for ns in ["kube-system", "kube-node-lease", NS] {
            assert!(vals.iter().any(|x| x == ns), "{ns} not excluded: {vals:?}");
        }
    }
    let mc = &v.match_conditions.as_ref().unwrap()[0];
    assert!(
        mc.expression.contains("object.spec.type == 'LoadBalancer'")
            && mc
                .expression
                .contains("oldObject.spec.type == 'LoadBalancer'")
    );
    assert!(
        m.match_conditions.as_ref().unwrap()[0]
            .expression
            .contains("object.spec.type == 'LoadBalancer'")
    );
    // The Service routes 443 to the pods' https port.
    let port = &svc.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    assert_eq!(port.port, 443);
}

#[test]
fn generated_certificate_secret_and_ca_bundle_agree() {
    let r = render(json!({"webhook": {"mutate": "always"}}));
    let secret: Secret = r.one("Secret");
    let data = secret.data.unwrap();
    let (crt, key, ca) = (&data["tls.crt"].0, &data["tls.key"].0, &data["ca.crt"].0);
    let vwc: ValidatingWebhookConfiguration = r.one("ValidatingWebhookConfiguration");
    let mwc: MutatingWebhookConfiguration = r.one("MutatingWebhookConfiguration");
    let vb = vwc.webhooks.unwrap()[0]
        .client_config
        .ca_bundle
        .clone()
        .unwrap()
        .0;
    let mb = mwc.webhooks.unwrap()[0]
        .client_config
        .ca_bundle
        .clone()
        .unwrap()
        .0;
    assert_eq!(&vb, ca);
    assert_eq!(&mb, ca);
    // The pair is usable by the server, and the CA really signed it for the Service name.
    lbguard::server::tls::certified_key(crt, key, "tls.crt", "tls.key")
        .expect("key matches certificate");
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca).unwrap())
        .unwrap();
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        std::sync::Arc::new(roots),
        std::sync::Arc::new(rustls::crypto::ring::default_provider()),
    )
    .build()
    .unwrap();
    let leaf = rustls::pki_types::CertificateDer::from_pem_slice(crt).unwrap();
    let name = rustls::pki_types::ServerName::try_from(format!("lbguard.{NS}.svc")).unwrap();
    rustls::client::danger::ServerCertVerifier::verify_server_cert(
        &*verifier,
        &leaf,
        &[],
        &name,
        &[],
        rustls::pki_types::UnixTime::now(),
    )
    .expect("certificate valid for the Service DNS name");
    // The Deployment mounts that Secret.
    let dep: Deployment = r.one("Deployment");
    let vols = dep.spec.unwrap().template.spec.unwrap().volumes.unwrap();
    assert!(
        vols.iter()
            .any(|v| v.secret.as_ref().and_then(|s| s.secret_name.as_deref())
                == secret.metadata.name.as_deref())
    );
}

#[test]
fn generated_mode_reuses_the_secret_through_lookup() {
    // Without a cluster lookup finds nothing, so this is the first-install path; the
    // template reads the Secret back with lookup on upgrade (see the chart README).
    let text = std::fs::read_to_string(format!("{CHART}/templates/webhooks.yaml")).unwrap();
    assert!(text.contains("lookup \"v1\" \"Secret\" .Release.Namespace $secretName"));
    let a = render(json!({}));
    let b = render(json!({}));
    let ca = |r: &Rendered| r.kind("Secret")[0]["data"]["ca.crt"].clone();
    assert_ne!(ca(&a), ca(&b), "first installs make a fresh CA");
}

#[test]
fn cert_manager_mode_uses_a_certificate_and_ca_injection() {
    let r =
        render(json!({"certificates": {"mode": "certManager"}, "webhook": {"mutate": "always"}}));
    assert!(r.kind("Secret").is_empty());
    assert_eq!(r.kind("Issuer").len(), 1);
    let cert = r.kind("Certificate")[0];
    assert_eq!(cert["spec"]["secretName"], "lbguard-tls");
    assert_eq!(cert["spec"]["dnsNames"][0], format!("lbguard.{NS}.svc"));
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let w = r.kind(kind)[0];
        assert_eq!(
            w["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            format!("{NS}/lbguard")
        );
        assert!(w["webhooks"][0]["clientConfig"].get("caBundle").is_none());
    }
    let r = render(
        json!({"certificates": {"mode": "certManager", "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}}}}),
    );
    assert!(r.kind("Issuer").is_empty());
    assert_eq!(
        r.kind("Certificate")[0]["spec"]["issuerRef"]["kind"],
        "ClusterIssuer"
    );
}

#[test]
fn existing_secret_mode_uses_the_given_secret_and_ca() {
    let r = render(
        json!({"certificates": {"mode": "secret", "secret": {"name": "corp-tls", "caBundle": "Q0E="}}}),
    );
    assert!(r.kind("Secret").is_empty());
    let w = r.kind("ValidatingWebhookConfiguration")[0];
    assert_eq!(w["webhooks"][0]["clientConfig"]["caBundle"], "Q0E=");
    let dep = r.kind("Deployment")[0];
    assert_eq!(
        dep["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        "corp-tls"
    );
    let out = helm(
        "render",
        &json!({"certificates": {"mode": "secret", "secret": {"name": "corp-tls"}}}),
    );
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .contains("certificates.secret.caBundle"),
        "{out}"
    );
}

/// The mutating webhook is registered only when a default can apply (webhook.mutate auto),
/// always, or never.
#[test]
fn mutating_webhook_only_when_a_default_can_apply() {
    let has = |values: Value| {
        !render(values)
            .kind("MutatingWebhookConfiguration")
            .is_empty()
    };
    assert!(!has(json!({})), "the chart's defaults set nothing");
    assert!(!has(json!({"config": {"cluster": {"flavor": "standard"}}})));
    for values in [
        json!({"inventory": {"enabled": true}}),
        json!({"config": {"defaults": {"volcengineWeight": 50}}}),
        json!({"config": {"defaults": {"huaweiElbClass": "performance"}}}),
        json!({"config": {"defaults": {"ctyunIpModeProxy": true}}}),
        json!({"config": {"defaults": {"annotations": {"example.com/team": "web"}}}}),
        json!({"config": {"cluster": {"flavor": "turbo"}}}),
        json!({"webhook": {"mutate": "always"}}),
    ] {
        assert!(has(values.clone()), "{values}");
    }
    assert!(!has(
        json!({"config": {"cluster": {"flavor": "turbo"}, "defaults": {"huaweiTurboClusterPolicy": false}}})
    ));
    assert!(!has(
        json!({"config": {"defaults": {"enabled": false, "volcengineWeight": 50}}})
    ));
    assert!(!has(
        json!({"webhook": {"mutate": "never"}, "config": {"defaults": {"volcengineWeight": 50}}})
    ));
}

#[test]
fn options_change_the_webhooks() {
    let r = render(
        json!({"webhook": {"matchConditions": false, "protectDeletion": true, "failurePolicy": "Ignore", "excludeNamespaces": ["legacy"]},
               "config": {"defaults": {"volcengineWeight": 50}}}),
    );
    let w = &r.kind("ValidatingWebhookConfiguration")[0]["webhooks"][0];
    assert!(w.get("matchConditions").is_none());
    assert_eq!(
        w["rules"][0]["operations"],
        json!(["CREATE", "UPDATE", "DELETE"])
    );
    assert_eq!(w["failurePolicy"], "Ignore");
    assert!(
        w["namespaceSelector"]["matchExpressions"][0]["values"]
            .as_array()
            .unwrap()
            .contains(&json!("legacy"))
    );
    let m = &r.kind("MutatingWebhookConfiguration")[0]["webhooks"][0];
    assert_eq!(m["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
}

/// DELETE is registered by default, sent only for a Service carrying the configured mark,
/// and not at all without a mark or with protectDeletion off.
#[test]
fn delete_is_sent_only_for_protected_services() {
    let webhook = |values: Value| {
        render(values).kind("ValidatingWebhookConfiguration")[0]["webhooks"][0].clone()
    };
    let w = webhook(json!({}));
    assert_eq!(
        w["rules"][0]["operations"],
        json!(["CREATE", "UPDATE", "DELETE"])
    );
    let cond = w["matchConditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "delete-only-if-protected")
        .expect("a condition for DELETE");
    let expr = cond["expression"].as_str().unwrap();
    // What the API server decides with it: only a DELETE of a marked Service is sent.
    let sent = |op: &str, annotations: Value| {
        let old = json!({"metadata": {"name": "web", "annotations": annotations}, "spec": {"type": "LoadBalancer"}});
        let mut ctx = cel::Context::default();
        ctx.add_variable("oldObject", cel::to_value(&old).unwrap())
            .unwrap();
        ctx.add_variable("request", cel::to_value(json!({"operation": op})).unwrap())
            .unwrap();
        cel::Program::compile(expr).unwrap().execute(&ctx).unwrap() == cel::Value::Bool(true)
    };
    assert!(sent(
        "DELETE",
        json!({"lbguard.io/deletion-protection": "true"})
    ));
    assert!(!sent(
        "DELETE",
        json!({"lbguard.io/deletion-protection": "false"})
    ));
    assert!(!sent("DELETE", json!({"example.com/other": "true"})));
    assert!(sent("UPDATE", json!({})));
    assert!(
        expr.contains("oldObject.metadata.annotations['lbguard.io/deletion-protection'] == 'true'"),
        "{expr}"
    );
    let w = webhook(
        json!({"config": {"deletionProtection": {"annotation": null, "label": "example.com/keep"}}}),
    );
    let expr = w["matchConditions"].as_array().unwrap().last().unwrap()["expression"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        expr.contains("oldObject.metadata.labels['example.com/keep']")
            && !expr.contains("annotations"),
        "{expr}"
    );
    for values in [
        json!({"webhook": {"protectDeletion": false}}),
        json!({"config": {"deletionProtection": {"annotation": null, "label": null}}}),
    ] {
        let w = webhook(values.clone());
        assert_eq!(
            w["rules"][0]["operations"],
            json!(["CREATE", "UPDATE"]),
            "{values}"
        );
        assert!(
            !w["matchConditions"].to_string().contains("DELETE"),
            "{values}"
        );
    }
}

#[test]
fn rendered_config_and_inventory_are_what_lbguard_accepts() {
    let values = json!({
        "provider": "alibaba",
        "config": {"cluster": {"vpcId": "vpc-1", "staleAfter": "2m"}, "ccm": {"users": ["system:serviceaccount:kube-system:cloud-controller-manager"]},
                   "rules": {"in-cluster-access-advice": "off"}, "defaults": {"annotations": {"example.com/team": "platform"}}},
        "inventory": {"enabled": true, "loadBalancers": [{"id": "lb-1", "provider": "alibaba", "addressType": "intranet", "createdBy": "user"}]}
    });
    let r = render(values);
    let cms = r.kind("ConfigMap");
    assert_eq!(cms.len(), 2);
    let config_text = cms[0]["data"]["config.yaml"].as_str().unwrap();
    let config = lbguard::engine::parse_config(config_text, "rendered")
        .unwrap_or_else(|e| panic!("{e}\n{config_text}"));
    assert_eq!(
        config.provider,
        lbguard::config::ProviderChoice::Fixed(lbguard::providers::Provider::Alibaba)
    );
    assert_eq!(
        config.inventory.path.as_deref(),
        Some("/etc/lbguard/inventory/inventory.yaml")
    );
    assert_eq!(config.cluster.vpc_id.as_deref(), Some("vpc-1"));
    let inv = lbguard::inventory::Snapshot::parse(
        cms[1]["data"]["inventory.yaml"].as_str().unwrap(),
        "rendered",
    )
    .unwrap();
    assert_eq!(inv.len(), 1);
    // The inventory is mounted where the config says.
    let dep = r.kind("Deployment")[0];
    let mounts = &dep["spec"]["template"]["spec"]["containers"][0]["volumeMounts"];
    assert!(
        mounts
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["mountPath"] == "/etc/lbguard/inventory")
    );
    // Default values render a config lbguard accepts too.
    let d = render(json!({}));
    lbguard::engine::parse_config(
        d.kind("ConfigMap")[0]["data"]["config.yaml"]
            .as_str()
            .unwrap(),
        "default",
    )
    .unwrap();
}

#[test]
fn pods_are_hardened_spread_and_rolled_on_config_change() {
    let r = render(json!({"priorityClassName": "system-cluster-critical"}));
    let dep: Deployment = r.one("Deployment");
    let spec = dep.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    let pod = spec.template.spec.unwrap();
    assert_eq!(
        pod.priority_class_name.as_deref(),
        Some("system-cluster-critical")
    );
    assert!(pod.affinity.unwrap().pod_anti_affinity.is_some());
    assert_eq!(
        pod.topology_spread_constraints.unwrap()[0].topology_key,
        "kubernetes.io/hostname"
    );
    let c = &pod.containers[0];
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.run_as_non_root, Some(true));
    assert_eq!(
        sc.capabilities.as_ref().unwrap().drop.as_deref(),
        Some(&["ALL".to_string()][..])
    );
    assert_eq!(sc.seccomp_profile.as_ref().unwrap().type_, "RuntimeDefault");
    assert_eq!(
        c.readiness_probe
            .as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap()
            .path
            .as_deref(),
        Some("/readyz")
    );
    assert_eq!(
        c.liveness_probe
            .as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap()
            .path
            .as_deref(),
        Some("/healthz")
    );
    assert!(c.resources.as_ref().unwrap().limits.is_some());
    assert!(c.args.as_ref().unwrap().contains(&"serve".to_string()));
    let pdb: PodDisruptionBudget = r.one("PodDisruptionBudget");
    assert!(pdb.spec.unwrap().min_available.is_some());
    let checksum = |r: &Rendered| {
        r.kind("Deployment")[0]["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
            .clone()
    };
    let other = render(json!({"config": {"rules": {"weight-range": "warn"}}}));
    assert_ne!(checksum(&r), checksum(&other));
    assert_eq!(
        checksum(&r),
        checksum(&render(
            json!({"priorityClassName": "system-cluster-critical"})
        ))
    );
    let inv = |r: &Rendered| {
        r.kind("Deployment")[0]["spec"]["template"]["metadata"]["annotations"]["checksum/inventory"]
            .clone()
    };
    let with_inv = render(
        json!({"inventory": {"enabled": true, "loadBalancers": [{"id": "x", "provider": "ctyun"}]}}),
    );
    assert_ne!(inv(&r), inv(&with_inv));
}

#[test]
fn rbac_is_least_privilege() {
    let r = render(json!({"metrics": {"secure": false}, "config": {"reports": {"api": "off"}}}));
    assert_eq!(r.kind("ClusterRole").len(), 1);
    assert_eq!(
        grants(&r.one("ClusterRole")),
        [
            "/nodes:get,list,watch",
            "/services:get,list,watch",
            "events.k8s.io/events:create,patch",
            "networking.k8s.io/ingresses:get,list,watch",
        ]
    );
    // Policy reports: write access to the report kinds the config may use, and only those.
    let reports = |api: &str| {
        let r = render(json!({"metrics": {"secure": false}, "config": {"reports": {"api": api}}}));
        grants(&r.one("ClusterRole"))
            .into_iter()
            .filter(|g| g.contains("report"))
            .collect::<Vec<_>>()
    };
    let write = "get,list,create,patch,update,delete";
    assert_eq!(
        reports("auto"),
        [
            format!("openreports.io/reports:{write}"),
            format!("wgpolicyk8s.io/policyreports:{write}")
        ]
    );
    assert_eq!(
        reports("wgpolicyk8s"),
        [format!("wgpolicyk8s.io/policyreports:{write}")]
    );
    assert_eq!(
        reports("openreports"),
        [format!("openreports.io/reports:{write}")]
    );
}

#[test]
fn secure_metrics_add_token_and_access_reviews_and_a_reader_role() {
    let r = render(json!({"config": {"reports": {"api": "off"}}}));
    let role: ClusterRole = r.named("ClusterRole", "lbguard");
    assert_eq!(
        grants(&role),
        [
            "/nodes:get,list,watch",
            "/services:get,list,watch",
            "authentication.k8s.io/tokenreviews:create",
            "authorization.k8s.io/subjectaccessreviews:create",
            "events.k8s.io/events:create,patch",
            "networking.k8s.io/ingresses:get,list,watch",
        ]
    );
    let reader: ClusterRole = r.named("ClusterRole", "-metrics-reader");
    let rules = reader.rules.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].non_resource_urls.as_deref(),
        Some(&["/metrics".to_string(), "/report".to_string()][..])
    );
    assert_eq!(rules[0].verbs, ["get"]);
    let args = |r: &Rendered| {
        let d: Deployment = r.one("Deployment");
        d.spec.unwrap().template.spec.unwrap().containers[0]
            .args
            .clone()
            .unwrap()
    };
    assert!(args(&r).contains(&"--metrics-secure=true".to_string()));
    for flag in [
        "--shutdown-delay=5s",
        "--max-connections=4096",
        "--max-inflight=256",
    ] {
        assert!(args(&r).contains(&flag.to_string()), "{flag}");
    }
    // Every flag the chart passes is one `lbguard serve` accepts.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for a in args(&r).iter().skip(1) {
        let flag = a.split('=').next().unwrap();
        assert!(help.contains(flag), "lbguard serve does not know {flag}");
    }
    let plain = render(json!({"metrics": {"secure": false}}));
    assert!(args(&plain).contains(&"--metrics-secure=false".to_string()));
    assert!(plain.kind("ClusterRole").iter().all(|o| {
        !o["metadata"]["name"]
            .as_str()
            .unwrap()
            .ends_with("-metrics-reader")
    }));
    let report = helm("lint", &json!({"metrics": {"secure": false}}));
    assert_eq!(report["errors"], json!([]), "{report}");
}

#[test]
fn listener_claims_get_a_namespaced_role_and_nothing_cluster_wide() {
    let r = render(json!({}));
    let role: Role = r.one("Role");
    assert_eq!(role.metadata.namespace.as_deref(), Some("lbguard-system"));
    let rules = role.rules.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].api_groups.as_deref(),
        Some(&["coordination.k8s.io".to_string()][..])
    );
    assert_eq!(
        rules[0].resources.as_deref(),
        Some(&["leases".to_string()][..])
    );
    assert_eq!(
        rules[0].verbs,
        ["get", "list", "watch", "create", "update", "delete"]
    );
    let binding: RoleBinding = r.one("RoleBinding");
    assert_eq!(
        binding.metadata.namespace.as_deref(),
        Some("lbguard-system")
    );
    assert_eq!(binding.role_ref.kind, "Role");
    assert_eq!(binding.role_ref.name, role.metadata.name.unwrap());
    let sa: ServiceAccount = r.one("ServiceAccount");
    let subject = &binding.subjects.unwrap()[0];
    assert_eq!(Some(&subject.name), sa.metadata.name.as_ref());
    // No lease access through the ClusterRole.
    let cluster_role: ClusterRole = r.named("ClusterRole", "lbguard");
    assert!(cluster_role.rules.unwrap().iter().all(|rule| {
        !rule
            .resources
            .clone()
            .unwrap_or_default()
            .contains(&"leases".to_string())
    }));
    // The pod knows its namespace, where the claims live.
    let d: Deployment = r.one("Deployment");
    let env = d.spec.unwrap().template.spec.unwrap().containers[0]
        .env
        .clone()
        .unwrap();
    let ns = env.iter().find(|e| e.name == "POD_NAMESPACE").unwrap();
    assert_eq!(
        ns.value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path,
        "metadata.namespace"
    );
    // Claims off: no Role at all.
    let off = render(json!({"config": {"claims": {"enabled": false}}}));
    assert!(off.kind("Role").is_empty() && off.kind("RoleBinding").is_empty());
}

#[test]
fn ccm_version_auto_may_get_the_controller_workload_only() {
    let ccm_role = |r: &Rendered| -> Vec<Role> {
        r.kind("Role")
            .into_iter()
            .map(|v| serde_json::from_value::<Role>(v.clone()).unwrap())
            .filter(|role| role.metadata.name.as_deref() == Some("lbguard-ccm-version"))
            .collect()
    };
    assert!(ccm_role(&render(json!({}))).is_empty());
    let r = render(
        json!({"provider": "alibaba", "config": {"ccm": {"version": "auto",
        "workloads": {"alibaba": {"name": "ccm", "namespace": "ack-system"}}}}}),
    );
    let roles = ccm_role(&r);
    assert_eq!(roles.len(), 1, "{roles:?}");
    assert_eq!(roles[0].metadata.namespace.as_deref(), Some("ack-system"));
    let rule = &roles[0].rules.as_ref().unwrap()[0];
    assert_eq!(rule.verbs, ["get"]);
    assert_eq!(
        rule.resource_names.as_deref(),
        Some(&["ccm".to_string()][..])
    );
    assert_eq!(
        rule.resources.as_deref(),
        Some(&["deployments".to_string(), "daemonsets".to_string()][..])
    );
    let binding: RoleBinding = r.named("RoleBinding", "lbguard-ccm-version");
    assert_eq!(binding.metadata.namespace.as_deref(), Some("ack-system"));
    // Provider auto: every default-placed controller, one Role per namespace; Huawei's
    // controller is not in the cluster, so nothing is granted for it.
    let r = render(json!({"config": {"ccm": {"version": "auto"}}}));
    let roles = ccm_role(&r);
    assert_eq!(roles.len(), 1);
    assert_eq!(roles[0].metadata.namespace.as_deref(), Some("kube-system"));
    let names = roles[0].rules.as_ref().unwrap()[0].resource_names.clone();
    assert_eq!(names, Some(vec!["cloud-controller-manager".to_string()]));
    let r = render(json!({"provider": "huawei", "config": {"ccm": {"version": "auto"}}}));
    assert!(ccm_role(&r).is_empty());
    let report = helm("lint", &json!({"config": {"ccm": {"version": "auto"}}}));
    assert_eq!(report["errors"], json!([]), "{report}");
}

/// The export-vap output goes in through vap.policies; skipExportedRules turns those rules
/// off in the webhook's config so nothing is checked twice.
#[test]
fn vap_policies_render_and_the_webhook_skips_exported_rules() {
    let export = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["export-vap", "--provider", "volcengine"])
        .output()
        .unwrap();
    assert!(export.status.success());
    let policies = String::from_utf8(export.stdout).unwrap();
    let ids = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["export-vap", "--provider", "volcengine", "--ids"])
        .output()
        .unwrap();
    let ids: Vec<String> = String::from_utf8(ids.stdout)
        .unwrap()
        .trim()
        .split(',')
        .map(String::from)
        .collect();
    assert!(ids.len() >= 5, "{ids:?}");
    let r = render(
        json!({"provider": "volcengine", "vap": {"enabled": true, "policies": policies},
        "webhook": {"skipExportedRules": ids}}),
    );
    let vaps = r.kind("ValidatingAdmissionPolicy");
    let bindings = r.kind("ValidatingAdmissionPolicyBinding");
    // One policy per rule, and one more for a deny rule that also warns (weight-range).
    let mut rules: Vec<&str> = vaps
        .iter()
        .map(|p| p["metadata"]["labels"]["lbguard.io/rule"].as_str().unwrap())
        .collect();
    assert!(
        vaps.iter()
            .any(|p| p["metadata"]["name"] == "lbguard-weight-range-advice")
    );
    rules.sort();
    rules.dedup();
    assert_eq!(rules.len(), ids.len());
    assert_eq!(bindings.len(), vaps.len());
    let config_text = r.kind("ConfigMap")[0]["data"]["config.yaml"]
        .as_str()
        .unwrap()
        .to_string();
    let config = lbguard::engine::parse_config(&config_text, "rendered").unwrap();
    for id in &ids {
        assert_eq!(
            config.rules.get(id),
            Some(&lbguard::rules::Action::Off),
            "{id} still runs in the webhook:\n{config_text}"
        );
    }
    // Off by default; on without policies is an install-time error that says what to do.
    assert!(
        render(json!({}))
            .kind("ValidatingAdmissionPolicy")
            .is_empty()
    );
    let out = helm("render", &json!({"vap": {"enabled": true}}));
    assert!(
        out["error"]
            .as_str()
            .unwrap_or_default()
            .contains("lbguard export-vap"),
        "{out}"
    );
    let out = helm(
        "render",
        &json!({"vap": {"enabled": true, "policies": "kind: Secret\napiVersion: v1\n"}}),
    );
    assert!(
        out["error"]
            .as_str()
            .unwrap_or_default()
            .contains("only lbguard export-vap output"),
        "{out}"
    );
    let out = helm(
        "render",
        &json!({"webhook": {"skipExportedRules": ["no-such-rule"]}}),
    );
    assert!(out.get("error").is_some(), "{out}");
}

/// `lbguard export-vap` for `config` (its MutatingAdmissionPolicy and one validating rule).
fn export_with_defaults(config: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, config).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["export-vap", "--rules", "address-type-value", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// vap.defaults installs the MutatingAdmissionPolicy from vap.policies, tells the webhook to
/// leave those defaults to it, and webhook.mutate auto then registers no mutating webhook
/// unless the inventory's default is left for it.
#[test]
fn vap_defaults_install_the_policy_and_the_webhook_steps_back() {
    let policies =
        export_with_defaults("cluster:\n  version: v1.36.2\ndefaults:\n  volcengineWeight: 50\n");
    assert!(
        policies.contains("kind: MutatingAdmissionPolicy\n"),
        "{policies}"
    );
    let config =
        json!({"defaults": {"volcengineWeight": 50}, "exemptions": {"namespaces": ["team-x"]}});
    let on = render(json!({"config": config, "vap": {"defaults": true, "policies": policies}}));
    assert_eq!(on.kind("MutatingAdmissionPolicy").len(), 1);
    let binding = on.kind("MutatingAdmissionPolicyBinding")[0];
    // The webhook's namespaces and the config's exempt ones.
    let skipped = &binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0];
    assert_eq!(skipped["operator"], "NotIn");
    assert_eq!(
        skipped["values"],
        json!(["kube-system", "kube-node-lease", NS, "team-x"])
    );
    // vap.enabled is off: the validating policy in the same file is not installed.
    assert!(on.kind("ValidatingAdmissionPolicy").is_empty());
    assert!(
        on.kind("MutatingWebhookConfiguration").is_empty(),
        "nothing is left for it"
    );
    let text = on.kind("ConfigMap")[0]["data"]["config.yaml"]
        .as_str()
        .unwrap()
        .to_string();
    let parsed = lbguard::engine::parse_config(&text, "rendered").unwrap();
    assert!(parsed.defaults.exported, "{text}");

    // The inventory's default stays with the webhook.
    let with_inventory = render(
        json!({"config": config, "inventory": {"enabled": true}, "vap": {"defaults": true, "policies": policies}}),
    );
    assert_eq!(with_inventory.kind("MutatingWebhookConfiguration").len(), 1);
    // Off: the webhook applies them, and the config says so.
    let off = render(json!({"config": config}));
    assert_eq!(off.kind("MutatingWebhookConfiguration").len(), 1);
    assert!(off.kind("MutatingAdmissionPolicy").is_empty());
    let text = off.kind("ConfigMap")[0]["data"]["config.yaml"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !lbguard::engine::parse_config(&text, "rendered")
            .unwrap()
            .defaults
            .exported
    );
    // Both toggles: both kinds.
    let both = render(
        json!({"config": config, "vap": {"enabled": true, "defaults": true, "policies": policies}}),
    );
    assert_eq!(both.kind("ValidatingAdmissionPolicy").len(), 1);
    assert_eq!(both.kind("MutatingAdmissionPolicy").len(), 1);
}

/// The wrong combinations fail at install time and say what to do.
#[test]
fn vap_defaults_mistakes_fail_at_install_time() {
    let policies =
        export_with_defaults("cluster:\n  version: v1.36.2\ndefaults:\n  volcengineWeight: 50\n");
    let config = json!({"defaults": {"volcengineWeight": 50}});
    let error = |values: Value| -> String {
        let out = helm("render", &values);
        out["error"].as_str().unwrap_or_default().to_string()
    };
    // The policy without the toggle would default everything twice, silently.
    let e = error(json!({"config": config, "vap": {"enabled": true, "policies": policies}}));
    assert!(e.contains("set vap.defaults=true"), "{e}");
    // The toggle without the policy would lose the defaults.
    let validating_only = export_with_defaults("cluster:\n  version: v1.36.2\n");
    assert!(!validating_only.contains("kind: MutatingAdmissionPolicy"));
    let e =
        error(json!({"config": config, "vap": {"defaults": true, "policies": validating_only}}));
    assert!(e.contains("needs the MutatingAdmissionPolicy"), "{e}");
    let e = error(json!({"vap": {"defaults": true}}));
    assert!(e.contains("lbguard export-vap"), "{e}");
    // Nothing to default: the toggle needs no policy.
    let quiet = render(json!({"vap": {"defaults": true, "policies": validating_only}}));
    assert!(quiet.kind("MutatingAdmissionPolicy").is_empty());
    assert!(quiet.kind("MutatingWebhookConfiguration").is_empty());
}

/// The metric names PromQL in `text` selects: names before a `{` and any `lbguard_` name.
fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let bytes = text.as_bytes();
    let is_name = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut i = 0;
    while i < bytes.len() {
        if is_name(bytes[i]) && (i == 0 || !is_name(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && is_name(bytes[i]) {
                i += 1;
            }
            let word = &text[start..i];
            let selector = bytes.get(i) == Some(&b'{');
            if (selector || word.starts_with("lbguard_"))
                && !word.chars().next().unwrap().is_ascii_digit()
            {
                out.insert(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every sample name lbguard exports, from its own exposition's TYPE lines.
fn exported_metric_names() -> std::collections::BTreeSet<String> {
    use lbguard::server::metrics::{
        AuditLabels, EndpointLabels, KindLabels, Metrics, RequestLabels, ViolationLabels,
    };
    let m = Metrics::new();
    // Labelled families show up once they have a series.
    let _ = m.requests.get_or_create(&RequestLabels {
        endpoint: "validate",
        operation: "CREATE",
        verdict: "allowed",
    });
    let _ = m.violations.get_or_create(&ViolationLabels {
        rule: "x",
        action: "deny",
    });
    let _ = m.latency.get_or_create(&EndpointLabels {
        endpoint: "validate",
    });
    let _ = m
        .watch_errors
        .get_or_create(&KindLabels { kind: "Service" });
    let _ = m.cloud.requests.get_or_create(&lbguard::cloud::ApiLabels {
        provider: "alibaba",
        operation: "x",
        result: "ok",
    });
    let _ = m
        .cloud
        .latency
        .get_or_create(&lbguard::cloud::OperationLabels {
            provider: "alibaba",
            operation: "x",
        });
    let _ = m.audit_violations.get_or_create(&AuditLabels {
        rule: "x",
        action: "deny",
        namespace: "n".into(),
    });
    let text = m.render();
    let mut out = std::collections::BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        match kind {
            "counter" => {
                out.insert(format!("{name}_total"));
            }
            "histogram" => {
                for s in ["_bucket", "_sum", "_count"] {
                    out.insert(format!("{name}{s}"));
                }
            }
            _ => {
                out.insert(name.to_string());
            }
        }
    }
    out
}

#[test]
fn monitoring_renders_and_uses_only_metrics_lbguard_exports() {
    let r = render(json!({"monitoring": {
        "serviceMonitor": {"enabled": true, "prometheusServiceAccount": {"name": "prometheus", "namespace": "monitoring"}},
        "prometheusRule": {"enabled": true},
        "dashboard": {"enabled": true}},
        "provider": "alibaba",
        "inventory": {"cloud": {"enabled": true, "existingSecret": "s", "refresh": "2m"}}}));
    let exported = exported_metric_names();
    assert!(
        exported.contains("lbguard_admission_requests_total"),
        "{exported:?}"
    );
    // The alerts.
    let rule = r.kind("PrometheusRule");
    assert_eq!(rule.len(), 1);
    let alerts = rule[0]["spec"]["groups"][0]["rules"].as_array().unwrap();
    let names: Vec<&str> = alerts
        .iter()
        .map(|a| a["alert"].as_str().unwrap())
        .collect();
    for want in [
        "LbguardDown",
        "LbguardAdmissionErrors",
        "LbguardSlowAdmissions",
        "LbguardClusterCacheStale",
        "LbguardCertificateReloadFailing",
        "LbguardInventoryReloadFailing",
        "LbguardAuditViolations",
        "LbguardCloudApiFailing",
        "LbguardCloudFactsStale",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    let stale = alerts
        .iter()
        .find(|a| a["alert"] == "LbguardCloudFactsStale")
        .unwrap();
    assert!(
        stale["expr"].as_str().unwrap().ends_with("> 3 * 120"),
        "three refresh intervals of 2m: {}",
        stale["expr"]
    );
    let mut used = std::collections::BTreeSet::new();
    for a in alerts {
        let expr = a["expr"].as_str().unwrap();
        assert!(expr.contains(r#"job="lbguard""#), "{expr}");
        used.extend(metric_names(expr));
    }
    // The p99 alert fires at 80% of the webhook's 5 s timeout.
    let slow = alerts
        .iter()
        .find(|a| a["alert"] == "LbguardSlowAdmissions")
        .unwrap();
    assert!(
        slow["expr"].as_str().unwrap().trim_end().ends_with("> 4"),
        "{slow}"
    );
    // The dashboard, in a ConfigMap the Grafana sidecar picks up.
    let cm = r
        .kind("ConfigMap")
        .into_iter()
        .find(|c| c["metadata"]["name"] == "lbguard-dashboard")
        .unwrap();
    assert_eq!(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    let dashboard: Value =
        serde_json::from_str(cm["data"]["lbguard.json"].as_str().unwrap()).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 8);
    for p in panels {
        for t in p["targets"].as_array().unwrap() {
            used.extend(metric_names(t["expr"].as_str().unwrap()));
        }
    }
    for v in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["query"].as_str() {
            used.extend(metric_names(q));
        }
    }
    // `up` is Prometheus' own scrape metric.
    let unknown: Vec<&String> = used
        .iter()
        .filter(|n| *n != "up" && !exported.contains(*n))
        .collect();
    assert!(
        unknown.is_empty(),
        "metrics lbguard does not export: {unknown:?}"
    );
    assert!(used.len() >= 10, "{used:?}");
    // Scraping secure metrics: HTTPS with the webhook's CA and Prometheus' token, which the
    // chart lets read /metrics.
    let sm = &r.kind("ServiceMonitor")[0]["spec"]["endpoints"][0];
    assert_eq!(sm["port"], "metrics");
    assert_eq!(sm["scheme"], "https");
    assert_eq!(sm["tlsConfig"]["ca"]["secret"]["key"], "ca.crt");
    assert_eq!(sm["tlsConfig"]["serverName"], "lbguard.lbguard-system.svc");
    let crb: ClusterRoleBinding = r.named("ClusterRoleBinding", "-metrics-reader");
    assert_eq!(
        crb.subjects.unwrap()[0].namespace.as_deref(),
        Some("monitoring")
    );
    // Plain metrics: plain HTTP. Off by default, and no LbguardDown alert under Ignore.
    let r = render(
        json!({"metrics": {"secure": false}, "webhook": {"failurePolicy": "Ignore"},
        "monitoring": {"serviceMonitor": {"enabled": true}, "prometheusRule": {"enabled": true}}}),
    );
    assert_eq!(
        r.kind("ServiceMonitor")[0]["spec"]["endpoints"][0]["scheme"],
        "http"
    );
    let alerts = r.kind("PrometheusRule")[0]["spec"]["groups"][0]["rules"].clone();
    assert!(
        alerts
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["alert"] != "LbguardDown")
    );
    let d = render(json!({}));
    assert!(d.kind("ServiceMonitor").is_empty() && d.kind("PrometheusRule").is_empty());
    let report = helm(
        "lint",
        &json!({"monitoring": {"serviceMonitor": {"enabled": true}, "prometheusRule": {"enabled": true}, "dashboard": {"enabled": true}}}),
    );
    assert_eq!(report["errors"], json!([]), "{report}");
}

#[test]
fn the_cloud_source_gets_its_config_and_the_secret_mounted_read_only() {
    let values = json!({
        "provider": "huawei",
        "config": {"cluster": {"id": "c-1"}},
        "inventory": {"cloud": {"enabled": true, "existingSecret": "elb-readonly", "region": "cn-north-4", "onError": "deny", "qps": 3}}
    });
    let r = render(values);
    let config_text = r.kind("ConfigMap")[0]["data"]["config.yaml"]
        .as_str()
        .unwrap();
    let config = lbguard::engine::parse_config(config_text, "rendered")
        .unwrap_or_else(|e| panic!("{e}\n{config_text}"));
    let cloud = &config.inventory.cloud;
    assert!(cloud.enabled);
    assert_eq!(cloud.region.as_deref(), Some("cn-north-4"));
    assert_eq!(cloud.credentials_dir.as_deref(), Some("/etc/lbguard/cloud"));
    assert_eq!(cloud.on_error, lbguard::config::OnCloudError::Deny);
    assert_eq!(cloud.qps, 3);
    assert_eq!(config.cluster.id.as_deref(), Some("c-1"));
    let pod = &r.kind("Deployment")[0]["spec"]["template"]["spec"];
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == "/etc/lbguard/cloud")
        .expect("the Secret is mounted where the config says");
    assert_eq!(mount["readOnly"], true);
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    assert_eq!(volume["secret"]["secretName"], "elb-readonly");
    let env = pod["containers"][0]["env"].as_array().unwrap();
    assert!(
        env.iter()
            .any(|e| e["name"] == "LBGUARD_REPLICAS" && e["value"] == "2"),
        "the replicas share inventory.cloud.qps: {env:?}"
    );
    // ... and the refresh: a Lease each, in the release namespace, named after the pod.
    assert!(
        env.iter()
            .any(|e| e["name"] == "LBGUARD_FLEET" && e["value"] == "lbguard"),
        "{env:?}"
    );
    for (name, field) in [
        ("POD_NAME", "metadata.name"),
        ("POD_NAMESPACE", "metadata.namespace"),
    ] {
        let e = env.iter().find(|e| e["name"] == name).unwrap();
        assert_eq!(e["valueFrom"]["fieldRef"]["fieldPath"], field, "{name}");
    }
    let no_claims = render(json!({
        "provider": "huawei",
        "config": {"claims": {"enabled": false}},
        "inventory": {"cloud": {"enabled": true, "existingSecret": "s", "region": "r"}}
    }));
    let role: Role = no_claims.one("Role");
    assert_eq!(role.metadata.namespace.as_deref(), Some("lbguard-system"));
    let rule = &role.rules.unwrap()[0];
    assert_eq!(rule.resources.as_deref(), Some(&["leases".to_string()][..]));
    assert_eq!(
        rule.verbs,
        ["get", "list", "watch", "create", "update", "delete"]
    );
    assert_eq!(no_claims.kind("RoleBinding").len(), 1);
    // The address type default can come from the cloud: the mutating webhook is there.
    assert_eq!(r.kind("MutatingWebhookConfiguration").len(), 1);
    // Without a provider, or with credentials that cannot work, the install fails with the reason.
    for (values, word) in [
        (
            json!({"provider": "ctyun", "inventory": {"cloud": {"enabled": true}}}),
            "only an access key",
        ),
        (
            json!({"provider": "alibaba", "inventory": {"cloud": {"enabled": true, "credentials": {"source": "static"}}}}),
            "existingSecret",
        ),
        (
            json!({"provider": "alibaba", "inventory": {"cloud": {"enabled": true, "existingSecret": "s", "credentials": {"source": "oidc"}}}}),
            "unset one of them",
        ),
        (
            json!({"provider": "huawei", "inventory": {"cloud": {"enabled": true, "credentials": {"ackRoleName": "r"}}}}),
            "ACK RRSA",
        ),
        (
            json!({"provider": "alibaba", "inventory": {"cloud": {"enabled": true, "credentials": {"ackRoleName": "r", "projectedToken": {"audience": "sts.aliyuncs.com"}}}}}),
            "exclude each other",
        ),
        (
            json!({"inventory": {"cloud": {"enabled": true, "existingSecret": "s"}}}),
            "provider",
        ),
        (
            json!({"provider": "alibaba", "inventory": {"cloud": {"onError": "retry"}}}),
            "onError",
        ),
        // 3 s of cloud look-up + 2 s of claims + 1 s of margin does not fit in 5 s.
        (
            json!({"provider": "alibaba", "inventory": {"cloud": {"enabled": true, "existingSecret": "s", "timeout": "3s"}}}),
            "does not fit in webhook.timeoutSeconds",
        ),
    ] {
        let out = helm("render", &values);
        let err = out["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{values} was accepted"));
        assert!(err.contains(word), "{values}: {err}");
    }
}

#[test]
fn wrong_values_fail_at_install_time() {
    for (values, word) in [
        (json!({"provider": "aws"}), "provider"),
        (json!({"replicaCount": 0}), "replicaCount"),
        (
            json!({"webhook": {"failurePolicy": "Maybe"}}),
            "failurePolicy",
        ),
        (json!({"certificates": {"mode": "vault"}}), "mode"),
        (
            json!({"config": {"rules": {"lb-id-immutable": "block"}}}),
            "lb-id-immutable",
        ),
        (json!({"config": {"clusterr": {}}}), "clusterr"),
    ] {
        let out = helm("schema", &values);
        let err = out["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{values} was accepted"));
        assert!(err.contains(word), "{values}: {err}");
    }
    assert_eq!(
        helm("schema", &json!({"provider": "volcengine"})),
        json!({"ok": true})
    );
}

#[test]
fn schema_knows_exactly_the_registered_rule_ids() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{CHART}/values.schema.json")).unwrap(),
    )
    .unwrap();
    let mut listed: Vec<String> = serde_json::from_value(
        schema["properties"]["config"]["properties"]["rules"]["propertyNames"]["enum"].clone(),
    )
    .unwrap();
    let mut registered: Vec<String> = lbguard::rules::registry()
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    listed.sort();
    registered.sort();
    assert_eq!(
        listed, registered,
        "regenerate the rule id enum in values.schema.json"
    );
    let out = helm(
        "schema",
        &json!({"config": {"rules": {"lb-id-imutable": "off"}}}),
    );
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .contains("lb-id-imutable"),
        "{out}"
    );
}

/// The config the chart renders, as lbguard reads it.
fn rendered_config(r: &Rendered) -> lbguard::config::Config {
    let cm: ConfigMap = r.named("ConfigMap", "-config");
    let text = &cm.data.unwrap()["config.yaml"];
    lbguard::engine::parse_config(text, "rendered").unwrap()
}

#[test]
fn workload_identity_needs_no_secret_ack_rrsa_through_its_webhook() {
    let r = render(json!({
        "provider": "alibaba",
        "serviceAccount": {"labels": {"team": "net"}},
        "inventory": {"cloud": {"enabled": true, "region": "cn-hangzhou",
            "credentials": {"ackRoleName": "lbguard-slb-readonly"}}}
    }));
    every_object_parses(&r);
    let sa: ServiceAccount = r.one("ServiceAccount");
    let annotations = sa.metadata.annotations.unwrap();
    assert_eq!(
        annotations["pod-identity.alibabacloud.com/role-name"],
        "lbguard-slb-readonly"
    );
    assert_eq!(sa.metadata.labels.unwrap()["team"], "net");
    let d: Deployment = r.one("Deployment");
    let pod = d.spec.unwrap().template;
    assert_eq!(
        pod.metadata.unwrap().labels.unwrap()["pod-identity.alibabacloud.com/injection"],
        "on"
    );
    let spec = pod.spec.unwrap();
    let volumes: Vec<String> = spec.volumes.unwrap().into_iter().map(|v| v.name).collect();
    assert!(
        !volumes.iter().any(|v| v.starts_with("cloud-")),
        "the webhook mounts the token, no Secret: {volumes:?}"
    );
    let config = rendered_config(&r);
    assert_eq!(config.inventory.cloud.credentials_dir, None);
    assert_eq!(
        config.inventory.cloud.credentials.source,
        lbguard::config::CredentialSource::Auto
    );
}

#[test]
fn workload_identity_without_a_webhook_mounts_a_token_for_the_sts() {
    for (provider, audience, variable, role) in [
        (
            "alibaba",
            "sts.aliyuncs.com",
            "ALIBABA_CLOUD_OIDC_TOKEN_FILE",
            ("ALIBABA_CLOUD_ROLE_ARN", "acs:ram::1:role/lbguard"),
        ),
        (
            "volcengine",
            "sts.volcengine.com",
            "VOLCENGINE_OIDC_TOKEN_FILE",
            ("VOLCENGINE_OIDC_ROLE_TRN", "trn:iam::1:role/lbguard"),
        ),
        (
            "huawei",
            "lbguard-client",
            "HUAWEICLOUD_OIDC_TOKEN_FILE",
            ("HUAWEICLOUD_OIDC_AGENCY_URN", "iam::1:agency:lbguard"),
        ),
    ] {
        let r = render(json!({
            "provider": provider,
            "inventory": {"cloud": {"enabled": true, "region": "r",
                "credentials": {"source": "oidc", "stsEndpoint": "https://sts.internal",
                    "projectedToken": {"audience": audience, "expirationSeconds": 7200},
                    "env": {role.0: role.1}}}}
        }));
        every_object_parses(&r);
        let d: Deployment = r.one("Deployment");
        let spec = d.spec.unwrap().template.spec.unwrap();
        let token = spec
            .volumes
            .unwrap()
            .into_iter()
            .find(|v| v.name == "cloud-token")
            .unwrap_or_else(|| panic!("{provider}: no token volume"));
        let source = &token.projected.unwrap().sources.unwrap()[0];
        let sat = source.service_account_token.as_ref().unwrap();
        assert_eq!(sat.audience.as_deref(), Some(audience), "{provider}");
        assert_eq!(sat.expiration_seconds, Some(7200), "{provider}");
        let c = &spec.containers[0];
        let env = c.env.clone().unwrap();
        let value = |n: &str| {
            env.iter()
                .find(|e| e.name == n)
                .and_then(|e| e.value.clone())
        };
        assert_eq!(
            value(variable).as_deref(),
            Some("/var/run/secrets/lbguard/cloud-token/token"),
            "{provider}"
        );
        assert_eq!(value(role.0).as_deref(), Some(role.1), "{provider}");
        let mount = c
            .volume_mounts
            .as_ref()
            .unwrap()
            .iter()
            .find(|m| m.name == "cloud-token")
            .unwrap();
        assert_eq!(mount.read_only, Some(true));
        let config = rendered_config(&r);
        let creds = &config.inventory.cloud.credentials;
        assert_eq!(creds.source, lbguard::config::CredentialSource::Oidc);
        assert_eq!(creds.sts_endpoint.as_deref(), Some("https://sts.internal"));
    }
    // A secret in env is refused by the schema: it belongs in existingSecret.
    let out = helm(
        "schema",
        &json!({"provider": "alibaba", "inventory": {"cloud": {"credentials": {"env": {"ALIBABA_CLOUD_ACCESS_KEY_SECRET": "x"}}}}}),
    );
    assert!(out["error"].as_str().is_some(), "{out}");
}

/// `inventory.cloud.caBundle` mounts a ConfigMap key read-only and names it in the config's
/// `caFile`; nothing of it without the value.
#[test]
fn a_private_endpoints_ca_bundle_is_mounted_and_named_in_the_config() {
    let r = render(json!({
        "provider": "huawei",
        "inventory": {"cloud": {"enabled": true, "region": "r", "endpoint": "https://elb.internal",
            "existingSecret": "keys",
            "caBundle": {"configMap": "corp-ca", "key": "bundle.pem"}}}
    }));
    every_object_parses(&r);
    let d: Deployment = r.one("Deployment");
    let spec = d.spec.unwrap().template.spec.unwrap();
    let volume = spec
        .volumes
        .unwrap()
        .into_iter()
        .find(|v| v.name == "cloud-ca")
        .expect("a cloud-ca volume");
    let cm = volume.config_map.unwrap();
    assert_eq!(cm.name, "corp-ca");
    let items = cm.items.unwrap();
    assert_eq!(
        (items[0].key.as_str(), items[0].path.as_str()),
        ("bundle.pem", "bundle.pem")
    );
    let mount = spec.containers[0]
        .volume_mounts
        .as_ref()
        .unwrap()
        .iter()
        .find(|m| m.name == "cloud-ca")
        .expect("mounted")
        .clone();
    assert_eq!(mount.read_only, Some(true));
    let config = rendered_config(&r);
    assert_eq!(
        config.inventory.cloud.ca_file.as_deref(),
        Some(format!("{}/bundle.pem", mount.mount_path).as_str())
    );
    // Without the value: no volume, no caFile.
    let r = render(json!({
        "provider": "huawei",
        "inventory": {"cloud": {"enabled": true, "region": "r", "existingSecret": "keys"}}
    }));
    let d: Deployment = r.one("Deployment");
    let spec = d.spec.unwrap().template.spec.unwrap();
    assert!(spec.volumes.unwrap().iter().all(|v| v.name != "cloud-ca"));
    assert_eq!(rendered_config(&r).inventory.cloud.ca_file, None);
    // Values without the key at all (`helm upgrade --reuse-values` from a release before
    // it): no volume either, and no error.
    let r = render(json!({
        "provider": "huawei",
        "inventory": {"cloud": {"enabled": true, "region": "r", "existingSecret": "keys",
            "caBundle": null}}
    }));
    every_object_parses(&r);
    assert_eq!(rendered_config(&r).inventory.cloud.ca_file, None);
    // The source off: nothing of the bundle.
    let r = render(json!({
        "inventory": {"cloud": {"enabled": false, "caBundle": {"configMap": "corp-ca"}}}
    }));
    let d: Deployment = r.one("Deployment");
    let spec = d.spec.unwrap().template.spec.unwrap();
    assert!(spec.volumes.unwrap().iter().all(|v| v.name != "cloud-ca"));
    // A key that is no file name is refused by the schema.
    for key in ["../etc/passwd", "..", "."] {
        let out = helm(
            "schema",
            &json!({"inventory": {"cloud": {"caBundle": {"configMap": "c", "key": key}}}}),
        );
        assert!(out["error"].as_str().is_some(), "{key}: {out}");
    }
}

/// `proxy.*` becomes HTTPS_PROXY and NO_PROXY in the pod (from a Secret when named), values
/// lbguard's own reading accepts; nothing is set by default; a proxy lbguard cannot use is
/// refused at install time.
#[test]
fn proxy_values_become_the_pods_https_proxy_and_no_proxy() {
    let env = |values: Value| -> Vec<Value> {
        let r = render(values);
        let dep = r.kind("Deployment")[0].clone();
        dep["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e["name"].as_str().unwrap().contains("PROXY"))
            .collect()
    };
    assert_eq!(env(json!({})), Vec::<Value>::new());
    let set =
        env(json!({"proxy": {"https": "http://proxy.corp:3128", "noProxy": ".corp,10.0.0.0/8"}}));
    assert_eq!(
        set,
        vec![
            json!({"name": "HTTPS_PROXY", "value": "http://proxy.corp:3128"}),
            json!({"name": "NO_PROXY", "value": ".corp,10.0.0.0/8"}),
        ]
    );
    // What the pod gets is what lbguard reads at start.
    let vars: BTreeMap<String, String> = set
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["value"].as_str().unwrap().into(),
            )
        })
        .collect();
    let proxy = lbguard::cloud::proxy::Proxy::from_env(&|n| vars.get(n).cloned())
        .unwrap()
        .unwrap();
    assert_eq!(proxy.host(), "proxy.corp:3128");
    assert!(!proxy.proxies("api.corp", 443));
    assert!(proxy.proxies("slb.example.com", 443));

    let secret = env(
        json!({"proxy": {"https": "http://ignored:1", "httpsFromSecret": {"name": "corp-proxy"}}}),
    );
    assert_eq!(
        secret,
        vec![
            json!({"name": "HTTPS_PROXY", "valueFrom": {"secretKeyRef": {"name": "corp-proxy", "key": "https"}}})
        ]
    );

    for values in [
        json!({"proxy": {"https": "https://proxy.corp:443"}}),
        json!({"proxy": {"https": "socks5://proxy.corp:1080"}}),
        json!({"proxy": {"http": "http://proxy.corp:3128"}}),
    ] {
        let out = helm("schema", &values);
        let err = out["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{values} was accepted"));
        assert!(
            err.contains("proxy") || err.contains("http"),
            "{values}: {err}"
        );
    }
}

/// The webhooks select the Services lbguard checks, as `export-vap` and the engine do: the
/// condition is the binary's own text for the rendered config, and MetalLB's Services (any
/// class no controller of the provider serves) never reach the webhook.
#[test]
fn the_webhooks_skip_services_of_other_load_balancer_implementations() {
    let always = json!({"mutate": "always"});
    for values in [
        json!({"provider": "alibaba", "webhook": always}),
        json!({"provider": "huawei", "webhook": always}),
        json!({"provider": "auto", "webhook": always, "config": {"loadBalancerClasses": {"corp.example/lb": "default", "corp.example/nlb": "nlb"}}}),
        json!({"provider": "volcengine", "webhook": always, "config": {"loadBalancerClasses": {"corp.example/lb": "default"}}}),
    ] {
        let r = render(values.clone());
        let want = lbguard::vap::route::ours(&rendered_config(&r));
        let v: ValidatingWebhookConfiguration = r.one("ValidatingWebhookConfiguration");
        let conditions = v.webhooks.unwrap()[0].match_conditions.clone().unwrap();
        let served = conditions
            .iter()
            .find(|c| c.name == "served-by-provider")
            .unwrap_or_else(|| panic!("{values}: no served-by-provider condition"));
        assert_eq!(served.expression, want, "{values}");
        let m: MutatingWebhookConfiguration = r.one("MutatingWebhookConfiguration");
        {
            let conditions = m.webhooks.unwrap()[0].match_conditions.clone().unwrap();
            assert!(
                conditions
                    .iter()
                    .any(|c| c.name == "served-by-provider" && c.expression == want),
                "{values}"
            );
        }
    }
    let r = render(json!({"provider": "alibaba"}));
    let v: ValidatingWebhookConfiguration = r.one("ValidatingWebhookConfiguration");
    let text = serde_json::to_string(&v).unwrap();
    assert!(text.contains("'alibabacloud.com/nlb'"), "{text}");
    let bad = helm(
        "render",
        &json!({"provider": "alibaba", "config": {"loadBalancerClasses": {"x": "clb"}}}),
    );
    assert!(bad.get("error").is_some(), "{bad}");
}
