use rstest::rstest;

use crate::cluster::ClusterState;
use crate::providers::Provider::{self, Alibaba, Ctyun, Huawei};
use crate::testkit::{
    Expect, Expect::*, SvcBuilder, cfg, cluster_with, create, expect_cluster, expect_with,
    inventory, lb, update,
};

fn other(p: Provider, port: i32, proto: &str) -> SvcBuilder {
    lb().named("shop", "other")
        .only_port(port, proto)
        .pa(p, "id", "lb-1")
}

#[rstest]
#[case::ctyun_free(Ctyun, 8080, "TCP", Pass)]
#[case::ctyun_taken(Ctyun, 80, "TCP", Deny)]
#[case::ctyun_udp_next_to_tcp(Ctyun, 80, "UDP", Pass)]
#[case::alibaba_taken(Alibaba, 80, "TCP", Deny)]
#[case::alibaba_free(Alibaba, 81, "TCP", Pass)]
#[case::huawei_taken(Huawei, 80, "TCP", Deny)]
#[case::huawei_free(Huawei, 443, "TCP", Pass)]
fn listener_port_unique_across_services(
    #[case] p: Provider,
    #[case] port: i32,
    #[case] proto: &str,
    #[case] want: Expect,
) {
    let config = cfg("");
    let state = cluster_with(&config, &[other(p, 80, "TCP").build()]);
    let me = lb()
        .named("web", "me")
        .only_port(port, proto)
        .pa(p, "id", "lb-1");
    let v = expect_cluster(&create(me), &config, &state, "listener-port-unique", want);
    if want == Deny {
        assert!(
            v.denial_message()
                .unwrap()
                .contains("already taken by Service shop/other"),
            "{v:?}"
        );
    }
}

#[test]
fn https_service_clashes_with_a_tcp_service_on_the_same_port() {
    let config = cfg("");
    let state = cluster_with(&config, &[other(Huawei, 443, "TCP").build()]);
    let me = lb()
        .named("web", "me")
        .only_port(443, "TCP")
        .pa(Huawei, "id", "lb-1")
        .pa(Huawei, "protocol-port", "https:443")
        .pa(Huawei, "cert-id", "c");
    expect_cluster(&create(me), &config, &state, "listener-port-unique", Deny);
}

#[test]
fn an_update_never_conflicts_with_its_own_old_version() {
    let config = cfg("");
    let mine = lb().named("shop", "web").uid("u-1").pa(Ctyun, "id", "lb-1");
    let state = cluster_with(&config, &[mine.clone().build()]);
    let changed = mine.clone().port(443, "TCP");
    let mut input = update(mine, changed);
    input.uid = "req-1".into();
    expect_cluster(&input, &config, &state, "listener-port-unique", Pass);
}

#[test]
fn inventory_and_cluster_parts_together() {
    let config = cfg("");
    let inv = inventory(
        "loadBalancers:\n  - {id: lb-1, provider: ctyun, listeners: [{port: 443, protocol: TCP, owner: external}]}\n",
    );
    let me = lb()
        .named("web", "me")
        .only_port(443, "TCP")
        .pa(Ctyun, "id", "lb-1");
    expect_with(&create(me), &config, &inv, "listener-port-unique", Deny);
}

#[rstest]
#[case::ctyun_within(Ctyun, "quotas:\n  listenersPerLoadBalancer: 2\n", Pass)]
#[case::ctyun_over(Ctyun, "quotas:\n  listenersPerLoadBalancer: 1\n", Deny)]
#[case::alibaba_within(Alibaba, "quotas:\n  listenersPerLoadBalancer: 2\n", Pass)]
#[case::alibaba_over(Alibaba, "quotas:\n  listenersPerLoadBalancer: 1\n", Deny)]
fn listener_quota_counts_other_services(
    #[case] p: Provider,
    #[case] quota: &str,
    #[case] want: Expect,
) {
    let config = cfg(quota);
    let mut them = other(p, 80, "TCP");
    if p == Alibaba {
        them = them.pa(p, "force-override-listeners", "true");
    }
    let state = cluster_with(&config, &[them.build()]);
    let mut me = lb()
        .named("web", "me")
        .only_port(443, "TCP")
        .pa(p, "id", "lb-1");
    if p == Alibaba {
        // Without it ACK adds no listener to a reused load balancer.
        me = me.pa(p, "force-override-listeners", "true");
    }
    expect_cluster(&create(me), &config, &state, "listener-quota", want);
}

/// ACK makes no listener for a Service that reuses a load balancer without force-override,
/// so its ports do not count for the others: 49 listeners, such a Service on 80 and this one
/// with force-override on 81 make 50, not 51.
#[rstest]
#[case::other_without_override_adds_none(false, Pass)]
#[case::other_with_override_adds_its_port(true, Deny)]
fn listener_quota_counts_only_listeners_the_controller_makes(
    #[case] other_overrides: bool,
    #[case] want: Expect,
) {
    let config = cfg("quotas:\n  listenersPerLoadBalancer: 50\n");
    let listeners: Vec<String> = (1000..1049)
        .map(|p| format!("{{port: {p}, protocol: TCP, owner: external}}"))
        .collect();
    let inv = inventory(&format!(
        "loadBalancers:\n  - {{id: lb-1, provider: alibaba, kind: clb, addressType: intranet, createdBy: user,\n     listeners: [{}]}}\n",
        listeners.join(", ")
    ));
    let mut them = other(Alibaba, 80, "TCP");
    if other_overrides {
        them = them.pa(Alibaba, "force-override-listeners", "true");
    }
    let state = cluster_with(&config, &[them.build()]);
    let me = lb()
        .named("web", "me")
        .only_port(81, "TCP")
        .pa(Alibaba, "id", "lb-1")
        .pa(Alibaba, "force-override-listeners", "true");
    let v = crate::testkit::run_full(&create(me), &config, &state, &inv);
    crate::testkit::assert_outcome(&v, "listener-quota", want);
    if want == Deny {
        let m = &v
            .denials()
            .find(|d| d.rule == "listener-quota")
            .unwrap()
            .message;
        assert!(m.contains("would have 51 listeners"), "{m}");
    }
}

fn huawei(name: &str, skip: bool, pp: Option<&str>) -> SvcBuilder {
    let mut s =
        lb().named("shop", name)
            .pa(Huawei, "id", "elb-1")
            .pa(Huawei, "class", "performance");
    if skip {
        s = s.pa(Huawei, "skip-managed-listener", "true");
    }
    if let Some(pp) = pp {
        s = s.pa(Huawei, "protocol-port", pp);
    }
    s
}

const V: &str = "cluster:\n  version: v1.33.12\n";

#[rstest]
#[case::both_managed_other_port(false, false, 81, Pass)]
#[case::managed_meets_skip(false, true, 80, Deny)]
#[case::skip_meets_managed(true, false, 80, Deny)]
#[case::both_skip(true, true, 80, Pass)]
fn shared_listener_mixed_management(
    #[case] me_skip: bool,
    #[case] other_skip: bool,
    #[case] port: i32,
    #[case] want: Expect,
) {
    let config = cfg(V);
    let state = cluster_with(&config, &[huawei("other", other_skip, None).build()]);
    let me = huawei("me", me_skip, None).only_port(port, "TCP");
    expect_cluster(
        &create(me),
        &config,
        &state,
        "shared-listener-mixed-management",
        want,
    );
}

#[rstest]
#[case::http_shared(Some("http:80"), Some("http:80"), Pass)]
#[case::tcp_shared(None, None, Warn)]
#[case::mixed(Some("http:80"), None, Warn)]
fn shared_listener_needs_l7(
    #[case] mine: Option<&str>,
    #[case] theirs: Option<&str>,
    #[case] want: Expect,
) {
    let config = cfg(V);
    let state = cluster_with(&config, &[huawei("other", true, theirs).build()]);
    expect_cluster(
        &create(huawei("me", true, mine)),
        &config,
        &state,
        "shared-listener-needs-l7",
        want,
    );
}

#[rstest]
#[case::ipvs_same("ipvs", "true", "true", Pass)]
#[case::ipvs_differs("ipvs", "true", "false", Deny)]
#[case::iptables_differs("iptables", "true", "false", Pass)]
fn pass_through_consistent(
    #[case] mode: &str,
    #[case] mine: &str,
    #[case] theirs: &str,
    #[case] want: Expect,
) {
    let config = cfg(&format!("{V}  proxyMode: {mode}\n"));
    let other =
        huawei("other", false, None)
            .only_port(81, "TCP")
            .pa(Huawei, "pass-through", theirs);
    let state = cluster_with(&config, &[other.build()]);
    let me = huawei("me", false, None).pa(Huawei, "pass-through", mine);
    expect_cluster(
        &create(me),
        &config,
        &state,
        "pass-through-consistent",
        want,
    );
}

fn with_node(config: &crate::config::Config) -> ClusterState {
    use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeStatus};
    let state = cluster_with(config, &[]);
    state.apply_node(&Node {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("node-a".into()),
            ..Default::default()
        },
        status: Some(NodeStatus {
            addresses: Some(vec![NodeAddress {
                address: "192.0.2.10".into(),
                type_: "InternalIP".into(),
            }]),
            ..Default::default()
        }),
        ..Default::default()
    });
    state
}

#[rstest]
#[case::ipvs_node_ip("ipvs", "192.0.2.10", Deny)]
#[case::ipvs_other_ip("ipvs", "192.0.2.99", Pass)]
#[case::iptables_node_ip("iptables", "192.0.2.10", Pass)]
fn ipvs_node_external_ip(#[case] mode: &str, #[case] ip: &str, #[case] want: Expect) {
    let config = cfg(&format!("{V}  proxyMode: {mode}\n"));
    let state = with_node(&config);
    let me = huawei("me", false, None).external_ip(ip);
    let v = expect_cluster(&create(me), &config, &state, "ipvs-node-external-ip", want);
    if want == Deny {
        assert!(v.denial_message().unwrap().contains("node node-a"));
    }
}

fn with_ingress(config: &crate::config::Config, port: &str) -> ClusterState {
    use k8s_openapi::api::networking::v1::Ingress;
    let state = cluster_with(config, &[]);
    state.apply_ingress(&Ingress {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            annotations: Some(
                [
                    ("kubernetes.io/elb.id".to_string(), "elb-1".to_string()),
                    ("kubernetes.io/elb.port".to_string(), port.to_string()),
                ]
                .into(),
            ),
            ..Default::default()
        },
        ..Default::default()
    });
    state
}

#[rstest]
#[case::iptables_other_port("iptables", "8080", None, Pass)]
#[case::ipvs_shared_elb("ipvs", "8080", None, Warn)]
#[case::http_same_port("iptables", "80", Some("http:80"), Deny)]
#[case::tcp_same_port("iptables", "80", None, Pass)]
fn ingress_shares_elb(
    #[case] mode: &str,
    #[case] port: &str,
    #[case] pp: Option<&str>,
    #[case] want: Expect,
) {
    let config = cfg(&format!("{V}  proxyMode: {mode}\n"));
    let state = with_ingress(&config, port);
    let v = expect_cluster(
        &create(huawei("me", false, pp)),
        &config,
        &state,
        "ingress-shares-elb",
        want,
    );
    if want != Pass {
        assert!(
            v.violations
                .iter()
                .any(|x| x.message.contains("Ingress shop/web"))
        );
    }
}

#[rstest]
#[case::allow("cluster:\n  staleAfter: 0s\n  onStale: allow\n", Pass)]
#[case::deny("cluster:\n  staleAfter: 0s\n  onStale: deny\n", Deny)]
fn stale_cache_follows_on_stale(#[case] config: &str, #[case] want: Expect) {
    let config = cfg(config);
    let state = cluster_with(&config, &[other(Ctyun, 80, "TCP").build()]);
    state.mark_broken();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let me = lb()
        .named("web", "me")
        .only_port(80, "TCP")
        .pa(Ctyun, "id", "lb-1");
    let v = expect_cluster(&create(me), &config, &state, "listener-port-unique", want);
    match want {
        Pass => assert!(
            v.notes
                .iter()
                .any(|n| n.contains("cluster rules were skipped"))
        ),
        _ => assert!(v.denial_message().unwrap().contains("cannot check")),
    }
}

/// ACK NLB: one Service's listeners may not overlap within a protocol
/// (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/nlbv2/listeners.go:650-682).
#[rstest]
#[case::two_ports(&[(80, "TCP"), (443, "TCP")], None, None, Pass)]
#[case::tcp_and_udp_on_one_port(&[(53, "TCP"), (53, "UDP")], None, None, Pass)]
#[case::mapped_onto_one_protocol(&[(53, "TCP"), (53, "UDP")], Some("tcp:53"), None, Deny)]
#[case::range_covers_a_port(&[(80, "TCP"), (10005, "TCP")], None, Some("10000-10010:80"), Deny)]
#[case::ranges_apart(&[(80, "TCP"), (81, "TCP")], None, Some("10000-10010:80,10011-10020:81"), Pass)]
#[case::ranges_touch(&[(80, "TCP"), (81, "TCP")], None, Some("10000-10010:80,10010-10020:81"), Deny)]
#[case::range_other_protocol(&[(80, "TCP"), (10005, "UDP")], None, Some("10000-10010:80"), Pass)]
fn nlb_listeners_do_not_overlap(
    #[case] ports: &[(i32, &str)],
    #[case] mapping: Option<&str>,
    #[case] ranges: Option<&str>,
    #[case] want: Expect,
) {
    let mut s = lb()
        .class("alibabacloud.com/nlb")
        .pa(
            Alibaba,
            "zone-maps",
            "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2",
        )
        .ann(crate::providers::alibaba::nlb::BACKEND_TYPE, "eni");
    s.0.spec.as_mut().unwrap().ports = None;
    for (p, proto) in ports {
        s = s.port(*p, proto);
    }
    if let Some(m) = mapping {
        s = s.pa(Alibaba, "protocol-port", m);
    }
    if let Some(r) = ranges {
        s = s.pa(Alibaba, "listener-port-range", r);
    }
    let config = cfg("");
    let state = cluster_with(&config, &[]);
    let v = expect_cluster(&create(s), &config, &state, "listener-port-unique", want);
    if want == Deny {
        assert!(
            v.denial_message()
                .unwrap()
                .contains("overlaps with listener"),
            "{v:#?}"
        );
    }
}

/// CLB Services never get the NLB overlap check (CLB has no port ranges).
#[test]
fn clb_has_no_overlap_check() {
    let s = lb()
        .only_port(53, "TCP")
        .port(53, "UDP")
        .pa(Alibaba, "protocol-port", "tcp:53");
    let config = cfg("");
    let state = cluster_with(&config, &[]);
    expect_cluster(&create(s), &config, &state, "listener-port-unique", Pass);
}
