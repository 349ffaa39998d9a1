use rstest::rstest;

use crate::engine::{Input, Operation, UserInfo, Versions, mutate};
use crate::providers::Provider::{self, Alibaba, Ctyun, Huawei, Volcengine};
use crate::testkit::{
    Expect, Expect::*, cfg, create, expect_with, inventory, k, lb, run_with, update,
};

const INV: &str = r#"
loadBalancers:
  - {id: lb-user-internet, provider: ctyun, addressType: internet, vpcId: vpc-1, createdBy: user,
     listeners: [{port: 443, protocol: HTTPS, owner: external}, {port: 53, protocol: UDP, owner: shop/dns}]}
  - {id: lb-user-intranet, provider: ctyun, addressType: intranet, vpcId: vpc-1, createdBy: user}
  - {id: lb-other-vpc, provider: ctyun, addressType: intranet, vpcId: vpc-9, createdBy: user}
  - {id: lb-ccm, provider: ctyun, addressType: intranet, vpcId: vpc-1, createdBy: ccm}
  - {id: lb-user-internet, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user,
     listeners: [{port: 443, protocol: HTTPS, owner: external}, {port: 8443, protocol: TCP, owner: "shop/api (cluster prod-b)"},
                 {port: 9000, protocol: TCP, owner: shop/dns}],
     attachedFrom: [{cluster: prod-b, namespace: shop, name: web}]}
  - {id: lb-intranet, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: user}
  - {id: lb-other-vpc, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-9, createdBy: user}
  - {id: nlb-other-vpc, provider: alibaba, kind: nlb, addressType: intranet, vpcId: vpc-9, createdBy: user}
  - {id: lb-apiserver, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: apiserver}
  - {id: elb-1, provider: huawei, kind: elb-dedicated, vpcId: vpc-1, createdBy: user, flavors: [l4, l7],
     listeners: [{port: 8443, protocol: TCP, owner: external}]}
  - {id: elb-l4, provider: huawei, kind: elb-dedicated, vpcId: vpc-1, createdBy: user, flavors: [l4]}
  - {id: elb-other-vpc, provider: huawei, kind: elb-shared, vpcId: vpc-9, createdBy: user}
  - {id: elb-ingress, provider: huawei, kind: elb-shared, vpcId: vpc-1, createdBy: ingress}
  - {id: clb-user, provider: volcengine, createdBy: user}
  - {id: clb-ccm, provider: volcengine, createdBy: ccm}
"#;

const CFG: &str = "cluster:\n  vpcId: vpc-1\n  version: v1.31.0\n";

fn check(
    p: Provider,
    id: &str,
    extra: &[(&str, &str)],
    rule: &str,
    want: Expect,
) -> crate::engine::Verdict {
    let mut s = lb().pa(p, "id", id);
    for (key, v) in extra {
        s = s.pa(p, key, v);
    }
    if p == Volcengine {
        s = s.pa(p, "server-group-id", "rsp-1:80").pa(p, "weight", "10");
    }
    expect_with(&create(s), &cfg(CFG), &inventory(INV), rule, want)
}

#[rstest]
#[case::ctyun_default_intranet_on_internet(Ctyun, "lb-user-internet", None, Deny)]
#[case::ctyun_internet_on_internet(Ctyun, "lb-user-internet", Some("internet"), Pass)]
#[case::ctyun_default_on_intranet(Ctyun, "lb-user-intranet", None, Pass)]
#[case::alibaba_default_internet(Alibaba, "lb-user-internet", None, Pass)]
#[case::alibaba_intranet_on_internet(Alibaba, "lb-user-internet", Some("intranet"), Deny)]
#[case::alibaba_default_on_intranet(Alibaba, "lb-intranet", None, Deny)]
fn address_type_match(
    #[case] p: Provider,
    #[case] id: &str,
    #[case] at: Option<&str>,
    #[case] want: Expect,
) {
    let extra: Vec<(&str, &str)> = at.map(|v| ("address-type", v)).into_iter().collect();
    check(p, id, &extra, "address-type-match", want);
}

#[rstest]
#[case::ctyun_user(Ctyun, "lb-user-intranet", Pass)]
#[case::ctyun_ccm(Ctyun, "lb-ccm", Deny)]
#[case::alibaba_user(Alibaba, "lb-intranet", Pass)]
#[case::alibaba_apiserver(Alibaba, "lb-apiserver", Deny)]
#[case::huawei_user(Huawei, "elb-1", Pass)]
#[case::huawei_ingress(Huawei, "elb-ingress", Deny)]
#[case::volcengine_user(Volcengine, "clb-user", Pass)]
#[case::volcengine_ccm(Volcengine, "clb-ccm", Deny)]
fn reuse_user_created_only(#[case] p: Provider, #[case] id: &str, #[case] want: Expect) {
    check(
        p,
        id,
        &[("address-type", "intranet")],
        "reuse-user-created-only",
        want,
    );
}

#[test]
fn reuse_user_created_only_does_not_nag_on_later_updates() {
    let s = lb()
        .pa(Ctyun, "id", "lb-ccm")
        .pa(Ctyun, "address-type", "intranet");
    let input = update(s.clone(), s.label("x", "y"));
    expect_with(
        &input,
        &cfg(CFG),
        &inventory(INV),
        "reuse-user-created-only",
        Pass,
    );
}

#[rstest]
#[case::ctyun_same(Ctyun, "lb-user-intranet", Pass)]
#[case::ctyun_other(Ctyun, "lb-other-vpc", Deny)]
#[case::alibaba_same(Alibaba, "lb-intranet", Pass)]
#[case::alibaba_other_clb(Alibaba, "lb-other-vpc", Deny)]
#[case::alibaba_other_nlb(Alibaba, "nlb-other-vpc", Pass)]
#[case::huawei_same(Huawei, "elb-1", Pass)]
#[case::huawei_other(Huawei, "elb-other-vpc", Deny)]
fn reuse_same_vpc(#[case] p: Provider, #[case] id: &str, #[case] want: Expect) {
    check(
        p,
        id,
        &[("address-type", "intranet")],
        "reuse-same-vpc",
        want,
    );
}

#[test]
fn reuse_same_vpc_without_cluster_vpc_cannot_tell() {
    let s = lb().pa(Ctyun, "id", "lb-other-vpc");
    let v = expect_with(
        &create(s),
        &cfg(""),
        &inventory(INV),
        "reuse-same-vpc",
        Warn,
    );
    assert!(v.warnings().join("").contains("set cluster.vpcId"));
}

#[rstest]
#[case::ctyun_free(Ctyun, "lb-user-internet", 8080, "TCP", &[], Pass)]
#[case::ctyun_taken_tcp(Ctyun, "lb-user-internet", 443, "TCP", &[], Deny)]
#[case::ctyun_udp_next_to_tcp(Ctyun, "lb-user-internet", 443, "UDP", &[], Pass)]
#[case::ctyun_udp_taken(Ctyun, "lb-user-internet", 53, "UDP", &[], Deny)]
// ACK without force-override touches no listener (clbv1/model_applier.go:99-112): the user's
// listener is expected; a note when no vgroup-port binds the port.
#[case::alibaba_users_listener_is_expected(Alibaba, "lb-user-internet", 443, "TCP", &[], Warn)]
#[case::alibaba_users_listener_bound(Alibaba, "lb-user-internet", 443, "TCP", &[("vgroup-port", "rsp-bp1abc:443")], Pass)]
#[case::alibaba_override_is_not_true(Alibaba, "lb-user-internet", 443, "TCP", &[("force-override-listeners", "True")], Warn)]
// With it (clbv1/listeners.go:645-708): same protocol is taken over (`plan-takeover` says
// so), another one refused.
#[case::alibaba_override_same_protocol(Alibaba, "lb-user-internet", 443, "TCP", &[("force-override-listeners", "true"), ("protocol-port", "https:443")], Pass)]
#[case::alibaba_override_other_protocol(Alibaba, "lb-user-internet", 443, "TCP", &[("force-override-listeners", "true")], Deny)]
#[case::alibaba_other_clusters_listener(Alibaba, "lb-user-internet", 8443, "TCP", &[], Deny)]
#[case::alibaba_other_clusters_listener_override(Alibaba, "lb-user-internet", 8443, "TCP", &[("force-override-listeners", "true")], Deny)]
#[case::alibaba_other_service_of_this_cluster(Alibaba, "lb-user-internet", 9000, "TCP", &[], Deny)]
#[case::huawei_taken(Huawei, "elb-1", 8443, "TCP", &[], Deny)]
#[case::huawei_skip_managed_is_exempt(Huawei, "elb-1", 8443, "TCP", &[("skip-managed-listener", "true")], Pass)]
fn listener_port_unique(
    #[case] p: Provider,
    #[case] id: &str,
    #[case] port: i32,
    #[case] proto: &str,
    #[case] extra: &[(&str, &str)],
    #[case] want: Expect,
) {
    let mut s = lb()
        .only_port(port, proto)
        .pa(p, "id", id)
        .pa(p, "address-type", "internet");
    for (key, v) in extra {
        s = s.pa(p, key, v);
    }
    let v = expect_with(
        &create(s),
        &cfg(CFG),
        &inventory(INV),
        "listener-port-unique",
        want,
    );
    if want == Deny {
        assert!(v.denial_message().unwrap().contains("owned by"), "{v:?}");
    }
}

#[test]
fn own_listener_is_no_conflict() {
    let s = lb()
        .only_port(53, "UDP")
        .pa(Ctyun, "id", "lb-user-internet")
        .pa(Ctyun, "address-type", "internet");
    let mut svc = s.build();
    svc.metadata.namespace = Some("shop".into());
    svc.metadata.name = Some("dns".into());
    let input = Input::new(Operation::Create, Some(svc), None, UserInfo::default()).unwrap();
    expect_with(
        &input,
        &cfg(CFG),
        &inventory(INV),
        "listener-port-unique",
        Pass,
    );
}

#[rstest]
#[case::ctyun_within(Ctyun, "quotas:\n  listenersPerLoadBalancer: 3\n", Pass)]
#[case::ctyun_over(Ctyun, "quotas:\n  listenersPerLoadBalancer: 2\n", Deny)]
#[case::alibaba_within(Alibaba, "quotas:\n  listenersPerLoadBalancer: 4\n", Pass)]
#[case::alibaba_over(Alibaba, "quotas:\n  listenersPerLoadBalancer: 3\n", Deny)]
fn listener_quota(#[case] p: Provider, #[case] quota: &str, #[case] want: Expect) {
    let mut s = lb()
        .pa(p, "id", "lb-user-internet")
        .pa(p, "address-type", "internet");
    if p == Alibaba {
        // Without it ACK adds no listener to a reused load balancer.
        s = s.pa(p, "force-override-listeners", "true");
    }
    expect_with(
        &create(s),
        &cfg(quota),
        &inventory(INV),
        "listener-quota",
        want,
    );
}

#[rstest]
#[case::clash("shop", "web", Deny)]
#[case::other_namespace("default", "web", Pass)]
fn cross_cluster_name_clash(#[case] ns: &str, #[case] name: &str, #[case] want: Expect) {
    let mut svc = lb().pa(Alibaba, "id", "lb-user-internet").build();
    svc.metadata.namespace = Some(ns.into());
    svc.metadata.name = Some(name.into());
    let input = Input::new(Operation::Create, Some(svc), None, UserInfo::default()).unwrap();
    expect_with(
        &input,
        &cfg(CFG),
        &inventory(INV),
        "cross-cluster-name-clash",
        want,
    );
}

#[rstest]
#[case::l4_l7_http("elb-1", "http:80", Pass)]
#[case::l4_only_http("elb-l4", "http:80", Deny)]
#[case::l4_only_tcp("elb-l4", "tcp:80", Pass)]
fn elb_flavor_supports_protocol(#[case] id: &str, #[case] pp: &str, #[case] want: Expect) {
    check(
        Huawei,
        id,
        &[("class", "performance"), ("protocol-port", pp)],
        "elb-flavor-supports-protocol",
        want,
    );
}

#[rstest]
#[case::warn_by_default("", Some(Expect::Warn))]
#[case::deny_when_configured("inventory:\n  unknownLoadBalancer: deny\n", Some(Expect::Deny))]
#[case::off("inventory:\n  unknownLoadBalancer: off\n", None)]
fn unknown_load_balancer_is_reported_once(#[case] config: &str, #[case] want: Option<Expect>) {
    let s = lb().pa(Alibaba, "id", "lb-nobody-knows");
    let v = run_with(&create(s), &cfg(config), &inventory(INV));
    let unknown: Vec<_> = v
        .violations
        .iter()
        .filter(|x| x.message.contains("not in the load balancer inventory"))
        .collect();
    match want {
        None => assert!(unknown.is_empty()),
        Some(w) => {
            assert_eq!(unknown.len(), 1, "{unknown:#?}");
            let action = if w == Expect::Deny {
                crate::rules::Action::Deny
            } else {
                crate::rules::Action::Warn
            };
            assert_eq!(unknown[0].action, action);
            assert!(
                unknown[0].message.contains(
                    "rules that could not decide: address-type-match, reuse-user-created-only"
                ),
                "{}",
                unknown[0].message
            );
        }
    }
}

#[test]
fn no_inventory_configured_is_silent() {
    let s = lb().pa(Alibaba, "id", "lb-nobody-knows");
    let v = crate::testkit::run(&create(s), &cfg(""));
    assert!(v.violations.is_empty(), "{v:#?}");
}

#[rstest]
#[case::ctyun(Ctyun, "lb-user-internet", Some("internet"))]
#[case::alibaba(Alibaba, "lb-intranet", Some("intranet"))]
#[case::unknown_lb(Alibaba, "lb-nobody-knows", None)]
fn mutation_takes_the_address_type_from_the_inventory(
    #[case] p: Provider,
    #[case] id: &str,
    #[case] want: Option<&str>,
) {
    let config = cfg(CFG);
    let inv = inventory(INV);
    let input = create(lb().pa(p, "id", id));
    let m = mutate(&input, &config, &Versions::from_config(&config), &inv).unwrap();
    let got = m
        .desired
        .metadata
        .annotations
        .as_ref()
        .unwrap()
        .get(&k(p, "address-type"))
        .map(String::as_str);
    assert_eq!(got, want);
    // Idempotent, and the mutated Service matches its load balancer.
    let again = Input::new(
        Operation::Create,
        Some(m.desired.clone()),
        None,
        UserInfo::default(),
    )
    .unwrap();
    assert!(
        !mutate(&again, &config, &Versions::from_config(&config), &inv)
            .unwrap()
            .changed()
    );
    if want.is_some() {
        expect_with(&again, &config, &inv, "address-type-match", Pass);
    }
}

#[test]
fn mutation_keeps_a_user_address_type() {
    let config = cfg(CFG);
    let input = create(lb().pa(Alibaba, "id", "lb-intranet").pa(
        Alibaba,
        "address-type",
        "internet",
    ));
    let m = mutate(
        &input,
        &config,
        &Versions::from_config(&config),
        &inventory(INV),
    )
    .unwrap();
    assert!(!m.changed());
}

/// What the cloud source says, per provider: one real load balancer (two listeners on it, of
/// unknown owner), one the cloud does not know, one it could not be asked about.
fn cloud(p: Provider) -> crate::cloud::View {
    use crate::cloud::Fact;
    use std::sync::Arc;
    let real = crate::inventory::LoadBalancer {
        id: "lb-real".into(),
        provider: p,
        kind: None,
        address_type: Some(if p == Ctyun {
            crate::inventory::AddressType::Intranet
        } else {
            crate::inventory::AddressType::Internet
        }),
        vpc_id: Some("vpc-1".into()),
        created_by: None,
        listeners: vec![crate::inventory::Listener {
            port: 80,
            protocol: "TCP".into(),
            owner: "external".into(),
        }],
        attached_from: Vec::new(),
        flavors: vec!["l4".into(), "l7".into()],
        ..crate::inventory::LoadBalancer::new("lb-real", p)
    };
    let facts = std::collections::HashMap::from([
        ("lb-real".to_string(), Ok(Arc::new(Fact::Found(real)))),
        ("lb-gone".to_string(), Ok(Arc::new(Fact::NotFound))),
        (
            "lb-down".to_string(),
            Err("the API failed (HTTP 503 ServiceUnavailable)".to_string()),
        ),
        ("lb/../x".to_string(), Ok(Arc::new(Fact::Invalid))),
    ]);
    crate::cloud::View::fixed(p, "region-1", None, facts)
}

fn cloud_svc(p: Provider, id: &str, port: i32) -> crate::testkit::SvcBuilder {
    let mut s = lb().pa(p, "id", id).only_port(port, "TCP");
    if p == Volcengine {
        s = s.pa(p, "server-group-id", "rsp-1:80").pa(p, "weight", "10");
    }
    s
}

#[rstest]
#[case::ctyun_exists(Ctyun, "lb-real", Pass)]
#[case::ctyun_not_found(Ctyun, "lb-gone", Deny)]
#[case::alibaba_exists(Alibaba, "lb-real", Pass)]
#[case::alibaba_not_found(Alibaba, "lb-gone", Deny)]
#[case::huawei_exists(Huawei, "lb-real", Pass)]
#[case::huawei_not_found(Huawei, "lb-gone", Deny)]
#[case::volcengine_exists(Volcengine, "lb-real", Pass)]
#[case::volcengine_not_found(Volcengine, "lb-gone", Deny)]
#[case::unknown_is_not_missing(Alibaba, "lb-nobody-knows", Pass)]
// The onError answer is labelled lb-exists (a cloud failure), under onError's action.
#[case::unavailable_is_the_on_error_answer(Alibaba, "lb-down", Warn)]
#[case::invalid_shape_is_denied_without_a_call(Huawei, "lb/../x", Deny)]
fn lb_exists(#[case] p: Provider, #[case] id: &str, #[case] want: Expect) {
    let v = expect_with(
        &create(cloud_svc(p, id, 8080)),
        &cfg(CFG),
        &cloud(p),
        "lb-exists",
        want,
    );
    if want == Deny {
        let m = &v
            .violations
            .iter()
            .find(|x| x.rule == "lb-exists")
            .unwrap()
            .message;
        assert!(
            (m.contains("names no load balancer in region region-1")
                || m.contains("is not a valid load balancer id"))
                && m.contains(id),
            "{m}"
        );
    }
}

#[test]
fn lb_exists_checks_only_when_the_service_takes_the_load_balancer() {
    let old = cloud_svc(Alibaba, "lb-gone", 8080);
    let new = cloud_svc(Alibaba, "lb-gone", 8080).label("team", "web");
    expect_with(
        &update(old, new),
        &cfg(CFG),
        &cloud(Alibaba),
        "lb-exists",
        Pass,
    );
    let moved = update(
        cloud_svc(Alibaba, "lb-real", 8080),
        cloud_svc(Alibaba, "lb-gone", 8080),
    );
    expect_with(&moved, &cfg(CFG), &cloud(Alibaba), "lb-exists", Deny);
}

#[rstest]
#[case::default_warns("", Some(Expect::Warn))]
#[case::deny("inventory:\n  cloud:\n    onError: deny\n", Some(Expect::Deny))]
#[case::allow("inventory:\n  cloud:\n    onError: allow\n", None)]
fn cloud_errors_follow_on_error(#[case] config: &str, #[case] want: Option<Expect>) {
    let v = run_with(
        &create(cloud_svc(Alibaba, "lb-down", 8080)),
        &cfg(&format!("{CFG}{config}")),
        &cloud(Alibaba),
    );
    let reports: Vec<_> = v
        .violations
        .iter()
        .filter(|x| {
            x.message
                .contains("could not read load balancer \"lb-down\"")
        })
        .collect();
    match want {
        None => assert!(reports.is_empty(), "{reports:#?}"),
        Some(w) => {
            assert_eq!(reports.len(), 1, "{:#?}", v.violations);
            // Read as the cloud failure it is, not as the verdict of the rule that asked first.
            assert_eq!(reports[0].rule, "lb-exists");
            let m = &reports[0].message;
            assert!(m.starts_with("[lb-exists] "), "{m}");
            assert!(
                m.contains("HTTP 503 ServiceUnavailable") && m.contains("inventory.cloud.onError"),
                "{m}"
            );
            let action = if w == Expect::Deny {
                crate::rules::Action::Deny
            } else {
                crate::rules::Action::Warn
            };
            assert_eq!(reports[0].action, action);
        }
    }
    assert!(
        !v.violations
            .iter()
            .any(|x| x.message.contains("inventory.unknownLoadBalancer")),
        "a cloud error is not an unknown load balancer: {:#?}",
        v.violations
    );
}

#[rstest]
#[case::ctyun(Ctyun)]
#[case::alibaba(Alibaba)]
#[case::huawei(Huawei)]
fn a_services_own_listener_is_not_taken_by_someone_else(#[case] p: Provider) {
    // Port 80 has a listener of unknown owner: a new Service cannot take it (on ACK, without
    // force-override, the controller leaves it to its owner: a note)…
    expect_with(
        &create(cloud_svc(p, "lb-real", 80)),
        &cfg(CFG),
        &cloud(p),
        "listener-port-unique",
        if p == Alibaba { Warn } else { Deny },
    );
    // …but the Service that had port 80 on this load balancer keeps it on an update.
    let old = cloud_svc(p, "lb-real", 80);
    let new = cloud_svc(p, "lb-real", 80).label("team", "web");
    expect_with(
        &update(old, new),
        &cfg(CFG),
        &cloud(p),
        "listener-port-unique",
        Pass,
    );
}

/// ACK adds no listener to a reused load balancer without force-override
/// (clbv1/model_applier.go:99-112): the quota cannot be exceeded by the Service.
#[test]
fn listener_quota_without_force_override_adds_nothing() {
    let s = lb()
        .pa(Alibaba, "id", "lb-user-internet")
        .pa(Alibaba, "address-type", "internet");
    expect_with(
        &create(s),
        &cfg("quotas:\n  listenersPerLoadBalancer: 1\n"),
        &inventory(INV),
        "listener-quota",
        Pass,
    );
}
