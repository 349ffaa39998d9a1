use rstest::rstest;

use crate::providers::Provider::{Alibaba, Huawei};
use crate::testkit::{
    Expect, Expect::*, SvcBuilder, cfg, create, expect, expect_with, inventory, lb, update,
};

const NLB: &str = "alibabacloud.com/nlb";
const ZONES: &str = "cn-hangzhou-h:vsw-bp1a,cn-hangzhou-i:vsw-bp1b";

/// A CLB Service the controller created a load balancer for.
fn clb() -> SvcBuilder {
    lb().named("shop", "web")
        .label("service.k8s.alibaba/loadbalancer-id", "lb-2ze0001")
}

fn nlb() -> SvcBuilder {
    clb().class(NLB).pa(Alibaba, "zone-maps", ZONES)
}

const SHARED: &str = "loadBalancers:
  - {id: lb-shared, provider: alibaba, kind: clb, addressType: internet, createdBy: user,
     listeners: [{port: 80, protocol: TCP, owner: shop/other}, {port: 81, protocol: TCP, owner: shop/web}]}
";

#[rstest]
#[case::override_takes_over_another_services_listener("true", 80, Warn)]
#[case::without_override_no_listener_is_touched("false", 80, Pass)]
#[case::its_own_listener_is_no_take_over("true", 81, Pass)]
#[case::a_free_port_is_created("true", 82, Pass)]
fn plan_takeover(#[case] force: &str, #[case] port: i32, #[case] want: Expect) {
    let svc = lb()
        .named("shop", "web")
        .only_port(port, "TCP")
        .pa(Alibaba, "id", "lb-shared")
        .pa(Alibaba, "force-override-listeners", force);
    let v = expect_with(
        &create(svc),
        &cfg(""),
        &inventory(SHARED),
        "plan-takeover",
        want,
    );
    if want == Warn {
        let w = v.warnings().join("\n");
        assert!(w.contains("[plan-takeover] the cloud controller takes over listener 80/TCP (Service shop/other's)"), "{w}");
        // listener-port-unique no longer says the same thing.
        assert!(!w.contains("[listener-port-unique]"), "{w}");
    }
}

#[rstest]
#[case::alibaba_port_removed(Alibaba, &[80], Warn)]
#[case::alibaba_port_kept(Alibaba, &[80, 443], Pass)]
#[case::huawei_port_removed(Huawei, &[80], Warn)]
#[case::huawei_port_kept(Huawei, &[80, 443], Pass)]
fn plan_delete_listener(
    #[case] p: crate::providers::Provider,
    #[case] ports: &[i32],
    #[case] want: Expect,
) {
    let base = |ports: &[i32]| {
        let mut s = clb().only_port(ports[0], "TCP");
        for port in &ports[1..] {
            s = s.port(*port, "TCP");
        }
        if p == Huawei {
            s = s.pa(Huawei, "id", "35cb350b-23e6-4551-ac77-10d5298f5204");
        }
        s
    };
    let v = expect(
        &update(base(&[80, 443]), base(ports)),
        &cfg(""),
        "plan-delete-listener",
        want,
    );
    if want == Warn {
        assert!(
            v.warnings().join("\n").contains("deletes listener 443/TCP"),
            "{:?}",
            v.warnings()
        );
    }
}

#[test]
fn plan_delete_listener_skips_unmanaged_huawei_listeners() {
    let s = |ports: &[i32]| {
        let mut s = clb()
            .pa(Huawei, "id", "35cb350b-23e6-4551-ac77-10d5298f5204")
            .pa(Huawei, "skip-managed-listener", "true")
            .only_port(ports[0], "TCP");
        for port in &ports[1..] {
            s = s.port(*port, "TCP");
        }
        s
    };
    // CCE's cluster: ACK's controller would delete the listener.
    expect(
        &update(s(&[80, 443]), s(&[80])),
        &cfg("provider: huawei\n"),
        "plan-delete-listener",
        Pass,
    );
}

#[rstest]
#[case::class_annotation("service.beta.kubernetes.io/class", "other", Warn)]
#[case::tunnel_annotation(
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-tunnel-type",
    "",
    Warn
)]
#[case::empty_class_annotation_is_still_the_clb_controllers(
    "service.beta.kubernetes.io/class",
    "",
    Pass
)]
#[case::another_annotation("example.com/owner", "team-a", Pass)]
fn plan_orphan(#[case] key: &str, #[case] value: &str, #[case] want: Expect) {
    expect(
        &update(clb(), clb().ann(key, value)),
        &cfg(""),
        "plan-orphan",
        want,
    );
}

#[rstest]
#[case::removed(None, Warn)]
#[case::set_off(Some("off"), Pass)]
#[case::kept(Some("on"), Pass)]
fn plan_no_reset(#[case] now: Option<&str>, #[case] want: Expect) {
    let old = nlb().pa(Alibaba, "proxy-protocol", "on");
    let new = match now {
        Some(v) => nlb().pa(Alibaba, "proxy-protocol", v),
        None => nlb(),
    };
    let v = expect(&update(old, new), &cfg(""), "plan-no-reset", want);
    if want == Warn {
        assert!(
            v.warnings()
                .join("\n")
                .contains("[plan-no-reset] proxy protocol stays as it is"),
            "{:?}",
            v.warnings()
        );
    }
}

#[rstest]
#[case::nlb_address_type_changed(true, "internet", Warn)]
#[case::nlb_address_type_kept(true, "intranet", Pass)]
#[case::clb_address_type_is_denied_not_converted(false, "internet", Pass)]
fn plan_convert(#[case] is_nlb: bool, #[case] now: &str, #[case] want: Expect) {
    let s = |v: &str| if is_nlb { nlb() } else { clb() }.pa(Alibaba, "address-type", v);
    expect(
        &update(s("intranet"), s(now)),
        &cfg(""),
        "plan-convert",
        want,
    );
    if !is_nlb && now != "intranet" {
        expect(
            &update(s("intranet"), s(now)),
            &cfg(""),
            "lb-attributes-immutable",
            Deny,
        );
    }
}

#[rstest]
#[case::preserve_false("preserve-lb-on-delete", "false", Warn)]
#[case::preserve_true("preserve-lb-on-delete", "true", Pass)]
#[case::charge_type_lower_case("instance-charge-type", "paybyclcu", Warn)]
#[case::charge_type_as_the_cloud_spells_it("instance-charge-type", "PayByCLCU", Pass)]
fn plan_misread(#[case] suffix: &str, #[case] value: &str, #[case] want: Expect) {
    expect(
        &create(clb().pa(Alibaba, suffix, value)),
        &cfg(""),
        "plan-misread",
        want,
    );
}

#[test]
fn plan_misread_is_silent_where_annotation_format_denies() {
    let svc = nlb().pa(Alibaba, "health-check-flag", "true");
    expect(&create(svc.clone()), &cfg(""), "plan-misread", Pass);
    expect(&create(svc.clone()), &cfg(""), "annotation-format", Deny);
    expect(
        &create(svc),
        &cfg("rules: {annotation-format: warn}"),
        "plan-misread",
        Warn,
    );
}

#[test]
fn plan_rules_can_deny() {
    let old = clb().only_port(80, "TCP").port(443, "TCP");
    let new = clb().only_port(80, "TCP");
    expect(
        &update(old, new),
        &cfg("rules: {plan-delete-listener: deny}"),
        "plan-delete-listener",
        Deny,
    );
}
