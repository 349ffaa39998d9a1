//! The cloud source's config, Secret, workload identity, private CA and proxy; wrong values and rule ids; Services of other implementations.

use super::*;

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
pub(super) fn rendered_config(r: &Rendered) -> lbguard::config::Config {
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
