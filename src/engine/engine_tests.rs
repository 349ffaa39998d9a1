use super::*;
use crate::providers::Provider::{Alibaba, Ctyun, Huawei, Volcengine};
use crate::testkit::{Expect::*, cfg, create, delete, expect, k, lb, run, update};

#[test]
fn config_can_turn_a_deny_into_a_warning_or_off() {
    let input = update(lb().pa(Ctyun, "id", "a"), lb().pa(Ctyun, "id", "b"));
    expect(&input, &cfg(""), "lb-id-immutable", Deny);
    expect(
        &input,
        &cfg("rules:\n  lb-id-immutable: warn\n"),
        "lb-id-immutable",
        Warn,
    );
    let v = expect(
        &input,
        &cfg("rules:\n  lb-id-immutable: off\n"),
        "lb-id-immutable",
        Pass,
    );
    assert!(v.allowed());
}

#[test]
fn advisory_findings_stay_warnings_under_deny() {
    let s = lb()
        .pa(Volcengine, "id", "clb-1")
        .pa(Volcengine, "server-group-id", "rsp-1:80")
        .pa(Volcengine, "weight", "0");
    let v = run(&create(s), &cfg(""));
    assert!(v.allowed(), "{v:#?}");
    assert!(v.warnings().iter().any(|w| w.starts_with("[weight-range]")));
}

#[test]
fn exempt_namespace_is_not_checked_and_says_so() {
    let mut input = update(lb().pa(Ctyun, "id", "a"), lb().pa(Ctyun, "id", "b"));
    input.namespace = "kube-system".into();
    let v = run(&input, &cfg("exemptions:\n  namespaces: [kube-system]\n"));
    assert!(v.allowed());
    assert!(v.violations.is_empty());
    assert_eq!(v.exempt.as_deref(), Some("namespace kube-system is exempt"));
    assert!(v.warnings()[0].contains("not checked"));
}

#[test]
fn exempt_user_and_group() {
    let input = update(lb().pa(Ctyun, "id", "a"), lb().pa(Ctyun, "id", "b"));
    assert!(run(&input, &cfg("exemptions:\n  users: [alice]\n")).allowed());
    assert!(
        run(
            &input,
            &cfg("exemptions:\n  groups: [system:authenticated]\n")
        )
        .allowed()
    );
    assert!(!run(&input, &cfg("exemptions:\n  users: [bob]\n")).allowed());
}

#[test]
fn every_finding_is_collected() {
    let old = lb()
        .pa(Volcengine, "id", "clb-1")
        .pa(Volcengine, "server-group-id", "rsp-1:80")
        .pa(Volcengine, "weight", "5");
    let new = lb()
        .pa(Volcengine, "id", "clb-2")
        .pa(Volcengine, "server-group-id", "rsp-2:9999")
        .pa(Volcengine, "weight", "500");
    let v = run(&update(old, new), &cfg(""));
    let ids = v.rule_ids();
    for id in [
        "lb-id-immutable",
        "server-group-immutable",
        "weight-immutable",
        "server-group-format",
        "weight-range",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    assert_eq!(
        v.denial_message().unwrap().matches("; [").count() + 1,
        v.denials().count()
    );
}

#[test]
fn fixed_provider_ignores_other_providers_rules() {
    let s = lb().pa(Alibaba, "address-type", "public");
    expect(
        &create(s.clone()),
        &cfg("provider: alibaba\n"),
        "address-type-value",
        Deny,
    );
    expect(
        &create(s),
        &cfg("provider: huawei\n"),
        "address-type-value",
        Pass,
    );
}

#[test]
fn several_providers_are_a_warning() {
    let s = lb()
        .pa(Alibaba, "spec", "slb.s1.small")
        .pa(Huawei, "class", "union");
    let v = run(&create(s), &cfg(""));
    assert!(
        v.notes.iter().any(|n| n.contains("alibaba, huawei")),
        "{v:#?}"
    );
}

#[test]
fn non_load_balancer_services_are_not_checked() {
    let s = lb()
        .type_("ClusterIP")
        .pa(Alibaba, "address-type", "public");
    assert!(run(&create(s), &cfg("")).violations.is_empty());
}

#[test]
fn delete_only_runs_delete_rules() {
    let s = lb().pa(Alibaba, "address-type", "public");
    assert!(run(&delete(s), &cfg("")).violations.is_empty());
}

fn mutate_cfg(yaml: &str, input: &Input) -> Mutation {
    let config = cfg(yaml);
    mutate(
        input,
        &config,
        &Versions::from_config(&config),
        &EmptyInventory,
    )
    .unwrap()
}

const DEFAULTS: &str = "cluster:\n  version: v1.31.0\ndefaults:\n  volcengineWeight: 100\n  huaweiElbClass: performance\n  ctyunIpModeProxy: true\n  annotations:\n    example.com/owner: platform\n";

#[test]
fn defaults_are_injected_and_listed() {
    let s = lb()
        .pa(Volcengine, "id", "clb-1")
        .pa(Volcengine, "server-group-id", "rsp-1:80");
    let m = mutate_cfg(DEFAULTS, &create(s));
    let anns = m.desired.metadata.annotations.as_ref().unwrap();
    assert_eq!(anns[&k(Volcengine, "weight")], "100");
    assert_eq!(anns["example.com/owner"], "platform");
    assert_eq!(m.applied.len(), 2);
    assert!(m.warnings()[0].starts_with("lbguard set metadata.annotations[service.beta.kubernetes.io/volcengine-loadbalancer-weight]"));
}

#[test]
fn defaults_never_override_and_are_idempotent() {
    let s = lb()
        .pa(Huawei, "id", "e")
        .pa(Huawei, "class", "union")
        .etp("Local");
    let first = mutate_cfg(DEFAULTS, &create(s));
    let anns = first.desired.metadata.annotations.as_ref().unwrap();
    assert_eq!(anns[&k(Huawei, "class")], "union");
    let again = Input::new(
        Operation::Create,
        Some(first.desired.clone()),
        None,
        UserInfo::default(),
    )
    .unwrap();
    let second = mutate_cfg(DEFAULTS, &again);
    assert!(!second.changed(), "{:?}", second.applied);
    assert_eq!(second.desired, first.desired);
}

#[test]
fn ctyun_ip_mode_needs_local_and_1_30() {
    let s = lb().pa(Ctyun, "id", "lb-1").etp("Local");
    let m = mutate_cfg(DEFAULTS, &create(s.clone()));
    assert_eq!(
        m.desired.metadata.annotations.unwrap()[&k(Ctyun, "ip-mode")],
        "proxy"
    );
    let old = mutate_cfg(&DEFAULTS.replace("v1.31.0", "v1.29.3"), &create(s));
    assert!(
        old.applied.iter().all(|d| !d.field.contains("ip-mode")),
        "{:?}",
        old.applied
    );
}

#[test]
fn huawei_class_is_injected_on_create() {
    let s = lb().pa(Huawei, "autocreate", r#"{"type":"inner"}"#);
    let m = mutate_cfg(DEFAULTS, &create(s));
    assert_eq!(
        m.desired.metadata.annotations.unwrap()[&k(Huawei, "class")],
        "performance"
    );
}

#[test]
fn fixed_defaults_are_not_added_late_but_are_kept() {
    let config = DEFAULTS;
    // Injecting a weight into an existing Service would itself break weight-immutable.
    let old = lb()
        .pa(Volcengine, "id", "clb-1")
        .pa(Volcengine, "server-group-id", "rsp-1:80");
    let m = mutate_cfg(config, &update(old.clone(), old.clone()));
    assert!(m.applied.iter().all(|d| !d.field.contains("weight")));
    // A weight the live object has is kept when a replace drops it.
    let live = old.clone().pa(Volcengine, "weight", "30");
    let m = mutate_cfg(config, &update(live, old));
    assert_eq!(
        m.desired.metadata.annotations.unwrap()[&k(Volcengine, "weight")],
        "30"
    );
}

#[test]
fn turbo_clusters_get_cluster_policy_when_unset() {
    let s = lb().pa(Huawei, "id", "e");
    let m = mutate_cfg("cluster:\n  flavor: turbo\n", &create(s));
    assert_eq!(
        m.desired.spec.unwrap().external_traffic_policy.as_deref(),
        Some("Cluster")
    );
}

#[test]
fn disabled_defaults_change_nothing() {
    let s = lb().pa(Volcengine, "id", "clb-1");
    let m = mutate_cfg(&format!("{DEFAULTS}  enabled: false\n"), &create(s));
    assert!(!m.changed());
}

#[test]
fn validation_sees_the_mutated_object() {
    // Without the default, reuse-requires-fields denies a missing weight; with it, it passes.
    let s = lb()
        .pa(Volcengine, "id", "clb-1")
        .pa(Volcengine, "server-group-id", "rsp-1:80");
    let config = cfg(DEFAULTS);
    let versions = Versions::from_config(&config);
    let input = create(s);
    expect(&input, &config, "reuse-requires-fields", Deny);
    let m = mutate(&input, &config, &versions, &EmptyInventory).unwrap();
    let mutated = Input {
        object: Some(m.desired),
        ..input
    };
    expect(&mutated, &config, "reuse-requires-fields", Pass);
}

#[test]
fn updates_ratchet_on_problems_the_live_object_already_had() {
    let bad = lb()
        .pa(Alibaba, "address-type", "public")
        .finalizer("service.k8s.alibaba/resources");
    // An unrelated change to a Service that already had the bad value: allowed, with a warning.
    let v = expect(
        &update(bad.clone(), bad.clone().label("tier", "web")),
        &cfg(""),
        "address-type-value",
        Warn,
    );
    assert!(v.allowed());
    assert!(
        v.warnings()
            .iter()
            .any(|w| w.contains("already so before this update"))
    );
    // The cloud controller removing its finalizer from such a Service is not blocked.
    let ccm = "ccm:\n  users: [ccm]\n";
    let gone = lb().pa(Alibaba, "address-type", "public");
    let input = crate::testkit::update_by(bad.clone(), gone, "ccm");
    assert!(
        run(&input, &cfg(ccm)).allowed(),
        "{:?}",
        run(&input, &cfg(ccm))
    );
    // Introducing the problem, or changing it to another bad value, still denies.
    let good = lb().pa(Alibaba, "address-type", "intranet");
    expect(
        &update(good, bad.clone()),
        &cfg(""),
        "address-type-value",
        Deny,
    );
    expect(
        &update(bad, lb().pa(Alibaba, "address-type", "privat")),
        &cfg(""),
        "address-type-value",
        Deny,
    );
}

#[test]
fn the_webhooks_ratchet_lends_the_live_object_and_gives_it_back() {
    let bad = lb()
        .pa(Alibaba, "address-type", "public")
        .finalizer("service.k8s.alibaba/resources");
    let config = cfg("");
    let versions = Versions::from_config(&config);
    for input in [
        update(bad.clone(), bad.clone().label("tier", "web")),
        update(lb().pa(Alibaba, "address-type", "intranet"), bad.clone()),
    ] {
        let lent = input.clone();
        let mut owned = input.clone();
        let by_ref = evaluate(&input, &config, &versions, &EmptyCluster, &EmptyInventory);
        let by_value = evaluate_owned(
            &mut owned,
            &config,
            &versions,
            &EmptyCluster,
            &EmptyInventory,
        );
        assert_eq!(format!("{by_ref:?}"), format!("{by_value:?}"));
        assert_eq!(format!("{owned:?}"), format!("{lent:?}"));
    }
}

#[test]
fn unknown_rule_and_bad_version_are_both_listed() {
    let e = crate::engine::parse_config(
        "rules:\n  no-such-rule: deny\ncluster:\n  version: banana\n",
        "t.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no-such-rule"), "{e}");
    assert!(e.contains("cluster.version"), "{e}");
}

/// A Service another implementation serves is not lbguard's: no rule runs, whatever its
/// annotations say, and the reason is given; the same Service without a class is denied.
#[rstest::rstest]
#[case::metallb_under_alibaba("provider: alibaba\n", Some("metallb.io/metallb"), true)]
#[case::metallb_under_auto("", Some("metallb.io/metallb"), true)]
#[case::ack_nlb_is_alibabas("provider: alibaba\n", Some("alibabacloud.com/nlb"), false)]
#[case::ack_nlb_is_not_ctyuns("provider: ctyun\n", Some("alibabacloud.com/nlb"), true)]
#[case::no_class("provider: ctyun\n", None, false)]
#[case::a_class_the_operator_added(
    "provider: ctyun\nloadBalancerClasses:\n  corp.example/lb: default\n",
    Some("corp.example/lb"),
    false
)]
fn services_of_other_implementations_are_not_checked(
    #[case] config: &str,
    #[case] class: Option<&str>,
    #[case] skipped: bool,
) {
    let build = || {
        let s = lb()
            .pa(Ctyun, "id", "a")
            .pa(Ctyun, "address-type", "Internet")
            .pa(Alibaba, "address-type", "Internet");
        match class {
            Some(c) => s.class(c),
            None => s,
        }
    };
    let v = run(&create(build()), &cfg(config));
    assert_eq!(v.foreign, skipped, "{v:#?}");
    assert_eq!(v.allowed(), skipped, "{v:#?}");
    if skipped {
        assert!(v.violations.is_empty(), "{v:#?}");
        assert!(v.warnings()[0].contains("loadBalancerClass"), "{v:#?}");
    }
    // Updates too: the id may not change on a Service lbguard checks.
    let v = run(&update(build(), build().pa(Ctyun, "id", "b")), &cfg(config));
    assert_eq!(v.foreign, skipped, "{v:#?}");
}

#[test]
fn acks_class_and_tunnel_annotations_hand_the_service_to_no_load_balancer_controller() {
    for key in [
        crate::vocab::route::ALIBABA_CLASS_ANNOTATION,
        crate::vocab::route::ALIBABA_TUNNEL_ANNOTATION,
    ] {
        let s = lb().ann(key, "x").pa(Alibaba, "address-type", "Internet");
        let v = run(&create(s), &cfg("provider: alibaba\n"));
        assert!(v.foreign && v.allowed(), "{key}: {v:#?}");
    }
    let s = lb().pa(Alibaba, "address-type", "Internet");
    assert!(!run(&create(s), &cfg("provider: alibaba\n")).allowed());
}

#[test]
fn no_default_is_injected_into_another_implementations_service() {
    let config = cfg("provider: volcengine\ndefaults:\n  volcengineWeight: 50\n");
    let reuse = || {
        lb().pa(Volcengine, "id", "clb-1")
            .pa(Volcengine, "server-group-id", "rsp-1:80")
    };
    let changed = |s| {
        let m = mutate(
            &create(s),
            &config,
            &Versions::from_config(&config),
            &EmptyInventory,
        )
        .unwrap();
        m.changed()
    };
    assert!(!changed(reuse().class("metallb.io/metallb")));
    assert!(changed(reuse()));
}
