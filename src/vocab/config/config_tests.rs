//! Tests of the config's schema, loading and checks.

use super::*;

#[test]
fn full_example_parses() {
    let text = r#"
provider: auto
cluster:
  version: v1.31.4
  flavor: standard
  proxyMode: iptables
  vpcId: vpc-123
ccm:
  version: v1.45.1
  users: [system:serviceaccount:kube-system:cloud-controller-manager]
  groups: []
quotas:
  listenersPerLoadBalancer: 50
rules:
  in-cluster-access-advice: off
exemptions:
  namespaces: [kube-system]
  users: []
  groups: []
deletionProtection:
  annotation: lbguard.io/deletion-protection
defaults:
  enabled: true
  volcengineWeight: null
  huaweiElbClass: null
  ctyunIpModeProxy: false
  annotations: {}
inventory:
  path: null
  unknownLoadBalancer: warn
  cloud:
    enabled: false
    region: null
    endpoint: null
    credentialsDir: null
    refresh: 5m
    timeout: 1500ms
    qps: 5
    onError: warn
"#;
    let c = Config::parse(text, "t.yaml").unwrap();
    assert_eq!(c.provider, ProviderChoice::Auto);
    assert_eq!(c.rules["in-cluster-access-advice"], Action::Off);
    assert_eq!(c.cluster.proxy_mode, ProxyMode::Iptables);
}

#[test]
fn fixed_provider_parses() {
    let c = Config::parse("provider: huawei\n", "t").unwrap();
    assert_eq!(c.provider, ProviderChoice::Fixed(Provider::Huawei));
}

#[test]
fn unknown_key_is_named() {
    let e = Config::parse("cluster:\n  flavour: turbo\n", "t.yaml").unwrap_err();
    assert!(e.to_string().contains("flavour"), "{e}");
}

#[test]
fn claims_defaults_and_overrides() {
    let c = Config::default();
    assert!(c.claims.enabled);
    assert_eq!(c.claims.timeout.0, std::time::Duration::from_secs(2));
    assert_eq!(c.claims.grace.0, std::time::Duration::from_secs(60));
    assert_eq!(c.claims.on_error, OnClaimError::Deny);
    let c = Config::parse(
        "claims:\n  onError: allow\n  timeout: 500ms\n  namespace: guard\n",
        "t",
    )
    .unwrap();
    assert_eq!(c.claims.on_error, OnClaimError::Allow);
    assert_eq!(c.claims.timeout.0, std::time::Duration::from_millis(500));
    assert_eq!(c.claims.namespace.as_deref(), Some("guard"));
    let e = Config::parse("claims:\n  timeout: 30s\n", "t").unwrap_err();
    assert!(e.to_string().contains("claims.timeout"), "{e}");
    assert!(Config::parse("claims:\n  onError: maybe\n", "t").is_err());
}

#[test]
fn cloud_defaults_and_problems() {
    let c = Config::default().inventory.cloud;
    assert!(!c.enabled);
    assert_eq!(c.refresh.0, std::time::Duration::from_secs(300));
    assert_eq!(c.timeout.0, std::time::Duration::from_millis(1500));
    assert_eq!((c.qps, c.on_error), (5, OnCloudError::Warn));
    for (text, want) in [
        (
            "inventory:\n  cloud:\n    timeout: 0s\n",
            "inventory.cloud.timeout",
        ),
        ("inventory:\n  cloud:\n    qps: 0\n", "inventory.cloud.qps"),
        (
            "inventory:\n  cloud:\n    refresh: 500ms\n",
            "inventory.cloud.refresh",
        ),
        (
            "inventory:\n  cloud:\n    endpoint: http://x\n",
            "inventory.cloud.endpoint",
        ),
        (
            "inventory:\n  cloud:\n    enabled: true\n",
            "fixed provider",
        ),
    ] {
        let e = Config::parse(text, "t").unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
    assert!(Config::parse("inventory:\n  cloud:\n    onError: maybe\n", "t").is_err());
    let e = Config::parse(
            "provider: alibaba\nclaims:\n  timeout: 4s\ninventory:\n  cloud:\n    enabled: true\n    timeout: 6s\n",
            "t",
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("does not fit in the webhook's timeoutSeconds"),
        "{e}"
    );
    assert!(
        Config::parse(
            "provider: alibaba\ninventory:\n  cloud:\n    enabled: true\n    cacheSize: 0\n",
            "t"
        )
        .is_err()
    );
    let c = Config::parse(
        "provider: alibaba\ninventory:\n  cloud:\n    enabled: true\n    onError: deny\n",
        "t",
    )
    .unwrap();
    assert_eq!(c.inventory.cloud.on_error.action(), Action::Deny);
}

#[test]
fn bad_action_is_rejected() {
    assert!(Config::parse("rules:\n  lb-id-immutable: maybe\n", "t").is_err());
}
