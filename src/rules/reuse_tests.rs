use rstest::rstest;

use crate::engine::{Input, Operation, UserInfo};
use crate::providers::Provider::Alibaba;
use crate::testkit::{Expect, Expect::*, cfg, create, expect_with, inventory, lb};

const INV: &str = r#"
loadBalancers:
  - {id: lb-facts, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user,
     resourceGroupId: rg-1, masterZoneId: cn-hangzhou-h, slaveZoneId: cn-hangzhou-i, ipVersion: ipv4,
     networkType: vpc, address: 47.1.1.1}
  - {id: lb-ipv6, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user, ipVersion: ipv6}
  - {id: nlb-facts, provider: alibaba, kind: nlb, addressType: internet, vpcId: vpc-1, createdBy: user,
     resourceGroupId: rg-1, ipVersion: ipv4, address: nlb-facts.cn-hangzhou.nlb.aliyuncs.com}
"#;

const CFG: &str = "cluster:\n  vpcId: vpc-1\n  version: v1.31.0\n";

/// ACK compares a reused load balancer with the Service's annotations on every reconcile
/// (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/
/// loadbalancer.go:127-154, :369-378; nlbv2/loadbalancer.go:187-197).
#[rstest]
#[case::clb_same_group("lb-facts", false, &[("resource-group-id", "rg-1")], Pass)]
#[case::clb_other_group("lb-facts", false, &[("resource-group-id", "rg-2")], Deny)]
#[case::clb_group_case("lb-facts", false, &[("resource-group-id", "RG-1")], Deny)]
#[case::clb_other_master_zone("lb-facts", false, &[("master-zoneid", "cn-hangzhou-j")], Deny)]
#[case::clb_other_slave_zone("lb-facts", false, &[("slave-zoneid", "cn-hangzhou-j")], Deny)]
#[case::clb_ip_version_absent_is_ipv4("lb-facts", false, &[], Pass)]
#[case::clb_ip_version_differs("lb-facts", false, &[("ip-version", "ipv6")], Deny)]
#[case::clb_ipv6_lb_without_annotation("lb-ipv6", false, &[], Deny)]
#[case::clb_ipv6_lb_with_annotation("lb-ipv6", false, &[("ip-version", "ipv6")], Pass)]
#[case::clb_network_type("lb-facts", false, &[("network-type", "classic")], Deny)]
#[case::clb_address("lb-facts", false, &[("ip", "47.1.1.2")], Deny)]
#[case::clb_same_address("lb-facts", false, &[("ip", "47.1.1.1")], Pass)]
#[case::clb_empty_is_unset("lb-facts", false, &[("resource-group-id", "")], Pass)]
#[case::nlb_ip_version_any_case("nlb-facts", true, &[("ip-version", "IPv4")], Pass)]
#[case::nlb_ip_version_differs("nlb-facts", true, &[("ip-version", "DualStack")], Deny)]
#[case::nlb_group_any_case("nlb-facts", true, &[("resource-group-id", "RG-1")], Pass)]
#[case::nlb_other_group("nlb-facts", true, &[("resource-group-id", "rg-2")], Deny)]
fn reused_load_balancer_attributes(
    #[case] id: &str,
    #[case] nlb: bool,
    #[case] anns: &[(&str, &str)],
    #[case] want: Expect,
) {
    let mut s = lb().pa(Alibaba, "id", id);
    if nlb {
        s = s.class("alibabacloud.com/nlb");
    }
    for (k, v) in anns {
        s = s.pa(Alibaba, k, v);
    }
    let v = expect_with(
        &create(s),
        &cfg(CFG),
        &inventory(INV),
        "lb-attributes-immutable",
        want,
    );
    if want == Deny {
        let m = v.denial_message().unwrap();
        assert!(
            m.contains("cannot be changed") || m.contains("can not change"),
            "{m}"
        );
    }
}

/// The Service's status must name the reused load balancer's address
/// (clbv1/model_applier.go:511-523, nlbv2/model_applier.go:607-618).
#[rstest]
#[case::clb_same_ip("lb-facts", false, "47.1.1.1", Pass)]
#[case::clb_other_ip("lb-facts", false, "47.9.9.9", Deny)]
#[case::nlb_same_name("nlb-facts", true, "nlb-facts.cn-hangzhou.nlb.aliyuncs.com", Pass)]
#[case::nlb_other_name("nlb-facts", true, "nlb-other.cn-hangzhou.nlb.aliyuncs.com", Deny)]
fn the_status_names_the_reused_load_balancer(
    #[case] id: &str,
    #[case] nlb: bool,
    #[case] at: &str,
    #[case] want: Expect,
) {
    let mut s = lb().pa(Alibaba, "id", id);
    if nlb {
        s = s.class("alibabacloud.com/nlb");
    }
    let mut svc = s.build();
    let ingress = if nlb {
        serde_json::json!({"hostname": at})
    } else {
        serde_json::json!({"ip": at})
    };
    svc.status = Some(
        serde_json::from_value(serde_json::json!({"loadBalancer": {"ingress": [ingress]}}))
            .unwrap(),
    );
    let old = svc.clone();
    let mut new = svc;
    new.metadata.labels = Some([("team".to_string(), "web".to_string())].into());
    let input = Input::new(Operation::Update, Some(new), Some(old), UserInfo::default()).unwrap();
    let v = crate::testkit::run_with(&input, &cfg(CFG), &inventory(INV));
    let denied = v
        .violations
        .iter()
        .any(|x| x.rule == "lb-attributes-immutable" && x.message.contains("cannot be bound"));
    assert_eq!(denied, want == Deny, "{v:#?}");
}

/// Tags decide, as the controllers read them: kubernetes.do.not.delete or ack.aliyun.com
/// refuse reuse even beside kubernetes.reused.by.user (clbv1/model_applier.go:497-504).
#[test]
fn a_reused_tag_does_not_make_a_controller_made_load_balancer_reusable() {
    let inv = inventory(
        "loadBalancers:\n  - {id: lb-tagged, provider: alibaba, kind: clb, addressType: internet, createdBy: ccm}\n",
    );
    let s = lb().pa(Alibaba, "id", "lb-tagged");
    expect_with(&create(s), &cfg(CFG), &inv, "reuse-user-created-only", Deny);
}
