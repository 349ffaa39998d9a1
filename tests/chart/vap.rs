//! The exported ValidatingAdmissionPolicies and defaults policy, and their mistakes at install time.

use super::*;

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
