//! Volcengine's API rows (providers/data/volcengine-api.yaml) through the webhook: the exact
//! rule id, a passing and a failing case at each boundary. Sources: CLB-NAME =
//! https://docs.byteplus.com/api/docs/clb/ModifyLoadBalancerAttributes (LoadBalancerName: 1-128
//! characters, letters, digits, Chinese characters, '.', '_', '-', starting with a letter,
//! digit or Chinese character); CLB-HEALTH = https://docs.byteplus.com/api/docs/clb/
//! Editing-health-check (interval 1-300 s, timeout 1-60 s, thresholds 2-10); EIP-ISP =
//! https://www.volcengine.com/docs/6402/71034 (AllocateEipAddress ISP, the page the controller's
//! table links for isp-type) and volcengine-python-sdk 5.0.54 volcenginesdkvpc/models/
//! allocate_eip_address_request.py:273 (allowed_values); VCCM-ZH =
//! volcengine/volcengine-cloud-controller-manager@903e85e:docs/zh/usage_zh.md (which values
//! may be empty).

use rstest::rstest;

use crate::providers::Provider::Volcengine;
use crate::testkit::{Expect, Expect::*, cfg, create, expect, lb, update};

const RULE: &str = "annotation-value-format";
const VOLC: &str = "provider: volcengine\n";

fn new_clb(name: &str, value: &str) -> crate::testkit::SvcBuilder {
    lb().pa(Volcengine, "subnet-id", "subnet-1")
        .pa(Volcengine, name, value)
}

#[rstest]
// CLB-NAME: the characters and the first one.
#[case::plain("web-clb", Pass)]
#[case::dot_underscore("web.clb_1", Pass)]
#[case::digit_first("1web", Pass)]
#[case::chinese("网关-1", Pass)]
#[case::chinese_first("负载均衡", Pass)]
#[case::upper("WEB", Pass)]
#[case::space("web clb", Deny)]
#[case::slash("web/clb", Deny)]
#[case::colon("ns:web", Deny)]
#[case::hyphen_first("-web", Deny)]
#[case::dot_first(".web", Deny)]
#[case::underscore_first("_web", Deny)]
#[case::non_ascii_letter("wéb", Deny)]
#[case::emoji("web🙂", Deny)]
// CLB-NAME: 1 to 128 characters (characters, not bytes).
#[case::len_128(&"a".repeat(128), Pass)]
#[case::len_129(&"a".repeat(129), Deny)]
#[case::len_128_chinese(&"网".repeat(128), Pass)]
#[case::len_129_chinese(&"网".repeat(129), Deny)]
// VCCM-ZH:8: no name, the controller makes one up; empty is no name.
#[case::empty("", Pass)]
fn clb_name(#[case] value: &str, #[case] want: Expect) {
    expect(&create(new_clb("name", value)), &cfg(VOLC), RULE, want);
}

/// With `-id` the controller reuses a load balancer and creates no CLB: the name reaches no
/// API, so it is not held to LoadBalancerName's limits.
#[rstest]
#[case::reused_clb("clb-1", Pass)]
#[case::reused_nlb("nlb-1", Pass)]
#[case::blank_id(" ", Deny)]
fn clb_name_only_for_a_new_clb(#[case] id: &str, #[case] want: Expect) {
    let s = new_clb("name", "web/clb").pa(Volcengine, "id", id);
    expect(&create(s), &cfg(VOLC), RULE, want);
}

/// The message names the annotation, the value, the parameter, what the API takes, the
/// source and a value that passes.
#[test]
fn clb_name_message() {
    let v = expect(&create(new_clb("name", "web clb")), &cfg(VOLC), RULE, Deny);
    let msg = v.denial_message().unwrap();
    for part in [
        "service.beta.kubernetes.io/volcengine-loadbalancer-name is \"web clb\"",
        "starting with a letter, digit or Chinese character",
        "LoadBalancerName of CreateLoadBalancer",
        "ModifyLoadBalancerAttributes",
        "write e.g. \"web-clb\"",
    ] {
        assert!(msg.contains(part), "{msg}");
    }
    let long = expect(
        &create(new_clb("name", &"a".repeat(200))),
        &cfg(VOLC),
        RULE,
        Deny,
    );
    assert!(
        long.denial_message()
            .unwrap()
            .contains("200 characters, the API takes 1 to 128"),
        "{long:?}"
    );
}

/// CLB-HEALTH: each HealthCheck.* row at both ends and one past, on a new CLB, a reused CLB
/// and a reused NLB (the controller's documented ranges hold there too, as before). The
/// thresholds take 2 (the API), not only 3-10 (the controller's table).
#[rstest]
#[case::interval_0("health-check-interval", "0", Deny)]
#[case::interval_1("health-check-interval", "1", Pass)]
#[case::interval_300("health-check-interval", "300", Pass)]
#[case::interval_301("health-check-interval", "301", Deny)]
#[case::timeout_0("health-check-connect-timeout", "0", Deny)]
#[case::timeout_1("health-check-connect-timeout", "1", Pass)]
#[case::timeout_60("health-check-connect-timeout", "60", Pass)]
#[case::timeout_61("health-check-connect-timeout", "61", Deny)]
#[case::healthy_1("healthy-threshold", "1", Deny)]
#[case::healthy_2("healthy-threshold", "2", Pass)]
#[case::healthy_10("healthy-threshold", "10", Pass)]
#[case::healthy_11("healthy-threshold", "11", Deny)]
#[case::unhealthy_1("unhealthy-threshold", "1", Deny)]
#[case::unhealthy_2("unhealthy-threshold", "2", Pass)]
#[case::unhealthy_10("unhealthy-threshold", "10", Pass)]
#[case::unhealthy_11("unhealthy-threshold", "11", Deny)]
#[case::negative("health-check-interval", "-1", Deny)]
#[case::leading_zero("health-check-interval", "0300", Pass)]
fn health_check_ranges(
    #[case] name: &str,
    #[case] value: &str,
    #[case] want: Expect,
    #[values(None, Some("clb-1"), Some("nlb-1"))] id: Option<&str>,
) {
    let s = match id {
        Some(id) => lb().pa(Volcengine, "id", id).pa(Volcengine, name, value),
        None => new_clb(name, value),
    };
    expect(&create(s), &cfg(VOLC), RULE, want);
}

/// The range's message names the API parameter and says what it takes.
#[test]
fn health_check_message() {
    let v = expect(
        &create(new_clb("healthy-threshold", "11")),
        &cfg(VOLC),
        RULE,
        Deny,
    );
    let msg = v.denial_message().unwrap();
    for part in [
        "volcengine-loadbalancer-healthy-threshold is \"11\": 11 is outside 2 to 10",
        "HealthCheck.HealthyThreshold of CreateListener/ModifyListenerAttributes",
        "(CLB API 2020-04-01 CreateListener, ModifyListenerAttributes HealthCheck.*)",
    ] {
        assert!(msg.contains(part), "{msg}");
    }
}

/// A live Service whose name the API already refused keeps it on update (warned, not denied),
/// as the other value formats do; a new bad name is denied.
#[rstest]
#[case::same("web clb", "web clb", Warn)]
#[case::changed("web clb", "web/clb", Deny)]
#[case::fixed("web clb", "web-clb", Pass)]
fn clb_name_ratchets(#[case] old: &str, #[case] new: &str, #[case] want: Expect) {
    expect(
        &update(new_clb("name", old), new_clb("name", new)),
        &cfg(VOLC),
        RULE,
        want,
    );
}

#[rstest]
// VCCM-ZH:19-21 "不配置该参数或该参数为空时": empty is unset, not an error.
#[case::master_empty("master-zone-id", "", Pass)]
#[case::slave_empty("slave-zone-id", "", Pass)]
#[case::protection_empty("modification-protection-status", "", Pass)]
#[case::master("master-zone-id", "cn-beijing-a", Pass)]
#[case::master_space("master-zone-id", "cn-beijing a", Deny)]
#[case::master_two("master-zone-id", "cn-beijing-a,cn-beijing-b", Deny)]
#[case::protection("modification-protection-status", "NonProtection", Pass)]
#[case::protection_case("modification-protection-status", "nonprotection", Deny)]
fn empty_means_unset(#[case] name: &str, #[case] value: &str, #[case] want: Expect) {
    expect(&create(new_clb(name, value)), &cfg(VOLC), RULE, want);
}

/// A new CLB without `-subnet-id`: the message offers both fixes, the subnet or an existing
/// load balancer (with `-id` no CreateLoadBalancer is made, so no SubnetId is needed).
#[test]
fn subnet_message_offers_reuse() {
    let s = lb().pa(Volcengine, "address-type", "PUBLIC");
    let v = expect(&create(s), &cfg(VOLC), "dependent-annotations", Deny);
    let msg = v.denial_message().unwrap();
    for part in [
        "volcengine-loadbalancer-subnet-id is not set",
        "SubnetId in CreateLoadBalancer",
        "e.g. service.beta.kubernetes.io/volcengine-loadbalancer-subnet-id: \"subnet-2fe6example\"",
        "or set service.beta.kubernetes.io/volcengine-loadbalancer-id instead",
    ] {
        assert!(msg.contains(part), "{msg}");
    }
    let reused = lb().pa(Volcengine, "id", "clb-1");
    expect(&create(reused), &cfg(VOLC), "dependent-annotations", Pass);
}

/// Limits no source read states are not invented: `-acl-status: on` with `-acl-id` but no
/// `-acl-type` (the Terraform provider's acl_type is optional and only read with AclStatus on,
/// its Cloud Control provider says AclType "仅AclStatus参数为on时,本参数有效", and no API page
/// read says CreateListener needs it).
#[rstest]
#[case::acl_without_type(&[("acl-status", "on"), ("acl-id", "acl-1")], "dependent-annotations", Pass)]
#[case::acl_without_id(&[("acl-status", "on"), ("acl-type", "white")], "dependent-annotations", Deny)]
fn no_invented_limits(#[case] anns: &[(&str, &str)], #[case] rule: &str, #[case] want: Expect) {
    let s = anns
        .iter()
        .fold(new_clb("name", "web"), |s, (k, v)| s.pa(Volcengine, k, v));
    expect(&create(s), &cfg(VOLC), rule, want);
}

/// EIP-ISP: the ten lines, exact case, on a new public CLB (the default address type is
/// PUBLIC); a PRIVATE CLB gets no EIP and a reused load balancer no CreateLoadBalancer, so
/// the value reaches no API there.
#[rstest]
#[case::bgp("BGP", None, None, Pass)]
#[case::single_line_bgp("SingleLine_BGP", None, None, Pass)]
#[case::static_bgp("Static_BGP", None, None, Pass)]
#[case::fusion_bgp("Fusion_BGP", None, None, Pass)]
#[case::china_mobile("ChinaMobile", None, None, Pass)]
#[case::china_unicom("ChinaUnicom", None, None, Pass)]
#[case::china_telecom("ChinaTelecom", None, None, Pass)]
#[case::china_mobile_value("ChinaMobile_Value", None, None, Pass)]
#[case::china_unicom_value("ChinaUnicom_Value", None, None, Pass)]
#[case::china_telecom_value("ChinaTelecom_Value", None, None, Pass)]
#[case::public_bgp("BGP", Some("PUBLIC"), None, Pass)]
#[case::lower_case("bgp", None, None, Deny)]
#[case::other_line("CMCC", None, None, Deny)]
#[case::bgp_pro("BGP_PRO", None, None, Deny)]
#[case::public_other("CMCC", Some("PUBLIC"), None, Deny)]
#[case::private_other("CMCC", Some("PRIVATE"), None, Pass)]
#[case::reused_clb_other("CMCC", None, Some("clb-1"), Pass)]
#[case::reused_nlb_other("CMCC", None, Some("nlb-1"), Pass)]
fn eip_isp(
    #[case] isp: &str,
    #[case] address: Option<&str>,
    #[case] id: Option<&str>,
    #[case] want: Expect,
) {
    let mut s = new_clb("isp-type", isp);
    if let Some(a) = address {
        s = s.pa(Volcengine, "address-type", a);
    }
    if let Some(id) = id {
        s = s.pa(Volcengine, "id", id);
    }
    expect(&create(s), &cfg(VOLC), RULE, want);
}

/// The message names the parameter, the lines the API takes and the EIP API call.
#[test]
fn eip_isp_message() {
    let v = expect(&create(new_clb("isp-type", "bgp")), &cfg(VOLC), RULE, Deny);
    let msg = v.denial_message().unwrap();
    for part in [
        "volcengine-loadbalancer-isp-type is \"bgp\"",
        "EipBillingConfig.ISP of CreateLoadBalancer",
        "one of BGP, SingleLine_BGP",
        "(VPC API 2020-04-01 AllocateEipAddress ISP; CLB CreateLoadBalancer EipBillingConfig.ISP)",
        "write e.g. \"BGP\"",
    ] {
        assert!(msg.contains(part), "{msg}");
    }
}
