//! Exceptions: the CRD, the roles that grant them, their webhook and their config.

use super::*;

/// Exceptions: the CRD in crds/ (what Helm installs first, and `--skip-crds` leaves out),
/// the roles that grant them (aggregated to namespace admins only when asked), and the
/// webhook that checks them against the config.
#[test]
fn exceptions_get_their_crd_roles_and_a_webhook() {
    let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        lbguard::yaml::from_str(
            &std::fs::read_to_string(format!("{CHART}/crds/lbguardexceptions.yaml")).unwrap(),
        )
        .unwrap();
    assert_eq!(crd.spec.group, lbguard::vocab::exceptions::GROUP);
    assert_eq!(crd.spec.names.kind, lbguard::vocab::exceptions::KIND);
    assert_eq!(crd.spec.names.plural, lbguard::vocab::exceptions::PLURAL);
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(
        crd.spec.versions[0].name,
        lbguard::vocab::exceptions::VERSION
    );
    let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    assert_eq!(
        schema["openAPIV3Schema"]["properties"]["spec"]["required"],
        json!(["services", "rules", "reason", "expires"])
    );

    let r = render(json!({}));
    let editor: ClusterRole = r.named("ClusterRole", "-exception-editor");
    assert_eq!(
        grants(&editor),
        ["lbguard.io/lbguardexceptions:get,list,watch,create,update,patch,delete"]
    );
    let labels = |role: &ClusterRole| role.metadata.labels.clone().unwrap_or_default();
    assert!(!labels(&editor).contains_key("rbac.authorization.k8s.io/aggregate-to-admin"));
    let viewer: ClusterRole = r.named("ClusterRole", "-exception-viewer");
    assert_eq!(
        grants(&viewer),
        ["lbguard.io/lbguardexceptions:get,list,watch"]
    );
    assert_eq!(
        labels(&viewer)["rbac.authorization.k8s.io/aggregate-to-view"],
        "true"
    );
    let admins = render(json!({"exceptionRoles": {"aggregateToAdmin": true}}));
    let editor: ClusterRole = admins.named("ClusterRole", "-exception-editor");
    assert_eq!(
        labels(&editor)["rbac.authorization.k8s.io/aggregate-to-admin"],
        "true"
    );

    let vwc: ValidatingWebhookConfiguration = r.one("ValidatingWebhookConfiguration");
    let hooks = vwc.webhooks.unwrap();
    let ex = hooks
        .iter()
        .find(|w| w.name == "exceptions.lbguard.io")
        .expect("a webhook for exceptions");
    let rule = &ex.rules.as_ref().unwrap()[0];
    assert_eq!(
        rule.api_groups.as_deref(),
        Some(&["lbguard.io".to_string()][..])
    );
    assert_eq!(
        rule.resources.as_deref(),
        Some(&["lbguardexceptions".to_string()][..])
    );
    assert_eq!(
        rule.operations.as_deref(),
        Some(&["CREATE".to_string(), "UPDATE".to_string()][..])
    );
    assert_eq!(
        ex.client_config.service.as_ref().unwrap().path.as_deref(),
        Some("/validate")
    );
    let config = super::cloud::rendered_config(&render(
        json!({"config": {"exceptions": {"maxDays": 7, "notExemptable": ["lb-id-immutable"]}}}),
    ));
    assert_eq!(config.exceptions.max_days, 7);
    assert_eq!(config.exceptions.not_exemptable, ["lb-id-immutable"]);
    let bad = helm(
        "schema",
        &json!({"config": {"exceptions": {"notExemptable": ["no-such-rule"]}}}),
    );
    assert!(
        bad["error"]
            .as_str()
            .unwrap_or("")
            .contains("/config/exceptions/notExemptable/0"),
        "{bad}"
    );

    let off = render(json!({"config": {"exceptions": {"enabled": false}}}));
    assert!(off.kind("ClusterRole").iter().all(|o| {
        !o["metadata"]["name"]
            .as_str()
            .unwrap()
            .contains("exception")
    }));
    let vwc: ValidatingWebhookConfiguration = off.one("ValidatingWebhookConfiguration");
    let names: Vec<String> = vwc.webhooks.unwrap().into_iter().map(|w| w.name).collect();
    assert_eq!(
        names,
        ["validate.lbguard.io", "deletion-protection.lbguard.io"]
    );
}
