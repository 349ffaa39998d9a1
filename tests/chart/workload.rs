//! The webhooks' options, the rendered config, the pods, RBAC, secure metrics, claims and the controller's workload.

use super::*;

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
    assert_eq!(w["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
    let d = &r.kind("ValidatingWebhookConfiguration")[0]["webhooks"][1];
    assert_eq!(d["name"], "deletion-protection.lbguard.io");
    assert!(d.get("matchConditions").is_none());
    assert_eq!(d["rules"][0]["operations"], json!(["DELETE"]));
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
    let off = json!({"metrics": {"secure": false}, "config": {"reports": {"api": "off"}, "exceptions": {"enabled": false}}});
    let r = render(off.clone());
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
    // Exceptions (on by default): lbguard reads them, nothing more.
    let mut on = off;
    on["config"]["exceptions"]["enabled"] = json!(true);
    let r = render(on);
    assert_eq!(
        grants(&r.named("ClusterRole", "lbguard")),
        [
            "/nodes:get,list,watch",
            "/services:get,list,watch",
            "events.k8s.io/events:create,patch",
            "lbguard.io/lbguardexceptions:get,list,watch",
            "networking.k8s.io/ingresses:get,list,watch",
        ]
    );
    // Policy reports: write access to the report kinds the config may use, and only those.
    let reports = |api: &str| {
        let r = render(json!({"metrics": {"secure": false}, "config": {"reports": {"api": api}}}));
        grants(&r.named("ClusterRole", "lbguard"))
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
            "lbguard.io/lbguardexceptions:get,list,watch",
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

/// The image has no default command: the pods run `serve` because the chart says so, with
/// arguments `lbguard serve` accepts.
#[test]
fn the_pods_run_serve_with_arguments_lbguard_accepts() {
    use clap::Parser;
    let r = render(json!({}));
    let dep: Deployment = r.one("Deployment");
    let pod = dep.spec.unwrap().template.spec.unwrap();
    let container = &pod.containers[0];
    assert!(container.command.is_none(), "the image's entrypoint runs");
    let args = container.args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("serve"), "{args:?}");
    let cli = lbguard::cli::Cli::try_parse_from(std::iter::once("lbguard".to_string()).chain(args))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(cli.command, lbguard::cli::Command::Serve(_)));
}
