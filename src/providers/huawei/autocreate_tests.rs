//! Sources: OTC = opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/networking/
//! services/loadbalancer/configuring_advanced_load_balancing_functions_using_annotations.rst;
//! HWDOC-zh = huaweicloudDocs/cce@99b4f7e:cn.zh-cn/用户指南/Service-Annotations说明.md;
//! HW-ZH = Huawei's CCE table 表14 (elb.autocreate 字段数据结构说明, 2024-04),
//! https://huaweicloud.com/guide/productsdesc-bms_52e6fd85b173bb53c9539e1aa812e4c3support3;
//! SDK = PyPI huaweicloudsdkelb 3.1.219 v3/model/create_load_balancer_option.py and
//! create_load_balancer_bandwidth_option.py (the ELB v3 CreateLoadBalancer reference).

use rstest::rstest;

use crate::providers::Provider::Huawei;
use crate::testkit::{Expect, Expect::*, cfg, create, expect, lb};

const V: &str = "cluster:\n  version: v1.31.14-r50\n";
const RULE: &str = "huawei-autocreate-valid";

/// HWDOC-zh:107, the public example (bandwidth_chargemode "bandwidth").
const PUBLIC: &str = r#"{"type":"public","bandwidth_name":"cce-bandwidth-1551163379627","bandwidth_chargemode":"bandwidth","bandwidth_size":5,"bandwidth_sharetype":"PER","eip_type":"5_bgp","name":"james"}"#;
/// OTC:149-156, the shared public example (bandwidth_chargemode "traffic").
const PUBLIC_OTC: &str = r#"{"type":"public","bandwidth_name":"cce-bandwidth-1551163379627","bandwidth_chargemode":"traffic","bandwidth_size":5,"bandwidth_sharetype":"PER","eip_type":"5_bgp"}"#;
/// OTC:184-195, the dedicated example, with a zone name where the docs leave it blank.
const DEDICATED: &str = r#"{"type":"public","bandwidth_name":"cce-bandwidth-1626694478577","bandwidth_chargemode":"traffic","bandwidth_size":5,"bandwidth_sharetype":"PER","eip_type":"5_bgp","available_zone":["cn-north-4b"],"l4_flavor_name":"L4_flavor.elb.s1.small","l7_flavor_name":"L7_flavor.elb.s1.small"}"#;

fn with_size(size: &str) -> String {
    PUBLIC.replace(
        "\"bandwidth_size\":5",
        &format!("\"bandwidth_size\":{size}"),
    )
}

#[rstest]
// HWDOC-zh:107 and OTC:149-156: CCE's own examples.
#[case::public_hwdoc(PUBLIC, Pass)]
#[case::public_otc(PUBLIC_OTC, Pass)]
// HWDOC-zh:108 and OTC:92.
#[case::inner(r#"{"type":"inner","name":"A-location-d-test"}"#, Pass)]
// OTC:632-637, HWDOC-zh:281-289: type is optional, default inner.
#[case::no_type(r#"{"name":"lb-1"}"#, Pass)]
#[case::empty_object("{}", Pass)]
#[case::bad_type(r#"{"type":"external"}"#, Deny)]
#[case::type_case(r#"{"type":"Public"}"#, Deny)]
#[case::type_not_a_string(r#"{"type":1}"#, Deny)]
#[case::type_null(r#"{"type":null}"#, Pass)]
// HWDOC-zh:302-310: bandwidth_chargemode is optional (default bandwidth).
#[case::public_without_chargemode(&PUBLIC.replace(r#""bandwidth_chargemode":"bandwidth","#, ""), Pass)]
#[case::bad_chargemode(&PUBLIC.replace(r#":"bandwidth","#, r#":"monthly","#), Deny)]
// OTC:639-663, HWDOC-zh:292-339: the rest is required for public.
#[case::public_missing_bandwidth(r#"{"type":"public","eip_type":"5_bgp"}"#, Deny)]
#[case::public_without_eip_type(&PUBLIC.replace(r#","eip_type":"5_bgp""#, ""), Deny)]
// OTC:655-657, HWDOC-zh:322-329: PER is the only sharing mode.
#[case::shared_bandwidth(&PUBLIC.replace("\"PER\"", "\"WHOLE\""), Deny)]
// OTC:647, HWDOC-zh:313-319: an Integer, 1-2000 Mbit/s; the examples write a JSON number.
#[case::bandwidth_min(&with_size("1"), Pass)]
#[case::bandwidth_max(&with_size("2000"), Pass)]
#[case::bandwidth_zero(&with_size("0"), Deny)]
#[case::bandwidth_half(&with_size("0.5"), Deny)]
#[case::bandwidth_over(&with_size("2001"), Deny)]
#[case::bandwidth_string(&with_size("\"5\""), Deny)]
#[case::bandwidth_float(&with_size("5.0"), Deny)]
// HW-ZH name: 1-64 characters of Chinese, letters, digits, '_', '-', '.'.
#[case::name_64(&format!(r#"{{"name":"{}"}}"#, "a".repeat(64)), Pass)]
#[case::name_65(&format!(r#"{{"name":"{}"}}"#, "a".repeat(65)), Deny)]
#[case::name_chinese(r#"{"name":"负载均衡-1"}"#, Pass)]
#[case::name_64_chinese(&format!(r#"{{"name":"{}"}}"#, "均".repeat(64)), Pass)]
#[case::name_every_char(r#"{"name":"Az09_-."}"#, Pass)]
#[case::name_space(r#"{"name":"web lb"}"#, Deny)]
#[case::name_slash(r#"{"name":"web/lb"}"#, Deny)]
#[case::name_empty(r#"{"name":""}"#, Deny)]
#[case::name_number(r#"{"name":5}"#, Deny)]
// HW-ZH bandwidth_name, SDK bandwidth name: the same rule, for a public ELB's bandwidth.
#[case::bandwidth_name_slash(&PUBLIC.replace("cce-bandwidth-1551163379627", "cce/bandwidth"), Deny)]
#[case::bandwidth_name_space(&PUBLIC.replace("cce-bandwidth-1551163379627", "cce bandwidth"), Deny)]
#[case::bandwidth_name_64(&PUBLIC.replace("cce-bandwidth-1551163379627", &"b".repeat(64)), Pass)]
#[case::bandwidth_name_65(&PUBLIC.replace("cce-bandwidth-1551163379627", &"b".repeat(65)), Deny)]
#[case::bandwidth_name_chinese(&PUBLIC.replace("cce-bandwidth-1551163379627", "带宽_1"), Pass)]
#[case::inner_ignores_bandwidth_name(r#"{"type":"inner","bandwidth_name":"a/b"}"#, Pass)]
// HW-ZH vip_address: IPv4 only; SDK: [0-255].[0-255].[0-255].[0-255].
#[case::vip_v4(r#"{"vip_address":"192.168.0.10"}"#, Pass)]
#[case::vip_v6(r#"{"vip_address":"2001:db8::10"}"#, Deny)]
#[case::vip_octet_256(r#"{"vip_address":"192.168.0.256"}"#, Deny)]
#[case::vip_three_octets(r#"{"vip_address":"192.168.0"}"#, Deny)]
// SDK vip_subnet_cidr_id, ipv6_vip_virsubnet_id: a UUID of 36 characters.
#[case::subnet_uuid(
    r#"{"vip_subnet_cidr_id":"14567f27-8ae4-42b8-ae47-9f847a4690dd"}"#,
    Pass
)]
#[case::subnet_short(
    r#"{"vip_subnet_cidr_id":"14567f27-8ae4-42b8-ae47-9f847a4690d"}"#,
    Deny
)]
#[case::subnet_name(r#"{"vip_subnet_cidr_id":"subnet-web"}"#, Deny)]
#[case::ipv6_subnet_uuid(
    r#"{"ipv6_vip_virsubnet_id":"24567f27-8ae4-42b8-ae47-9f847a4690dd"}"#,
    Pass
)]
#[case::ipv6_subnet_bad(
    r#"{"ipv6_vip_virsubnet_id":"24567f27x8ae4-42b8-ae47-9f847a4690dd"}"#,
    Deny
)]
// OTC Table 15 elb_virsubnet_ids: an array of strings.
#[case::backend_subnets(
    r#"{"elb_virsubnet_ids":["14567f27-8ae4-42b8-ae47-9f847a4690dd"]}"#,
    Pass
)]
#[case::backend_subnets_string(
    r#"{"elb_virsubnet_ids":"14567f27-8ae4-42b8-ae47-9f847a4690dd"}"#,
    Deny
)]
#[case::backend_subnets_blank(r#"{"elb_virsubnet_ids":[""]}"#, Deny)]
#[case::not_json("{type: public}", Deny)]
#[case::not_object("[1]", Deny)]
fn autocreate_fields(#[case] json: &str, #[case] want: Expect) {
    let s = lb().pa(Huawei, "autocreate", json);
    expect(&create(s), &cfg(V), RULE, want);
}

/// A dedicated ELB (class performance): OTC:705-722, HWDOC-zh:352-382.
#[rstest]
#[case::http_with_both(DEDICATED, Some("http:80"), Pass)]
// OTC:80, :84: l7_flavor_name "" is fine for TCP ports.
#[case::tcp_with_empty_l7(&DEDICATED.replace("L7_flavor.elb.s1.small", ""), None, Pass)]
// OTC:711 "mandatory when TCP or UDP is used" (HWDOC-zh:365 says always: the less strict wins).
#[case::http_only_without_l4(&DEDICATED.replace(r#""l4_flavor_name":"L4_flavor.elb.s1.small","#, ""), Some("http:80"), Pass)]
#[case::tcp_without_l4(&DEDICATED.replace(r#""l4_flavor_name":"L4_flavor.elb.s1.small","#, ""), None, Deny)]
#[case::tcp_port_left_out_of_protocol_port(&DEDICATED.replace(r#""l4_flavor_name":"L4_flavor.elb.s1.small","#, ""), Some("https:443"), Deny)]
// OTC:717 "mandatory when HTTP is used".
#[case::http_without_l7(&DEDICATED.replace(r#","l7_flavor_name":"L7_flavor.elb.s1.small""#, ""), Some("http:80"), Deny)]
// OTC:705, HWDOC-zh:352-360: available_zone is required.
#[case::no_zone(PUBLIC, None, Deny)]
#[case::empty_zones(&DEDICATED.replace(r#"["cn-north-4b"]"#, "[]"), None, Deny)]
#[case::blank_zone(&DEDICATED.replace("cn-north-4b", ""), None, Deny)]
// OTC:84: a dedicated ELB with no EIP.
#[case::inner(r#"{"type":"inner","available_zone":["cn-north-4b"],"l7_flavor_name":"","l4_flavor_name":"L4_flavor.elb.pro.max"}"#, None, Pass)]
fn autocreate_dedicated(
    #[case] json: &str,
    #[case] protocol_port: Option<&str>,
    #[case] want: Expect,
) {
    let mut s = lb()
        .port(443, "TCP")
        .pa(Huawei, "class", "performance")
        .pa(Huawei, "autocreate", json)
        .pa(Huawei, "cert-id", "3d8a7a02f87a40ed931b719edfe75451");
    if let Some(pp) = protocol_port {
        s = s.pa(Huawei, "protocol-port", pp);
        if pp == "http:80" {
            s = s.only_port(80, "TCP");
        }
    }
    expect(&create(s), &cfg(V), RULE, want);
}

/// A UDP port needs the L4 flavor too (OTC:711).
#[test]
fn udp_port_needs_l4() {
    let json = DEDICATED.replace(r#""l4_flavor_name":"L4_flavor.elb.s1.small","#, "");
    let s = lb()
        .only_port(53, "UDP")
        .pa(Huawei, "class", "performance")
        .pa(Huawei, "autocreate", &json);
    expect(&create(s), &cfg(V), RULE, Deny);
}

/// OTC:72-74: both set, CCE uses the existing ELB and deletes it with the Service.
#[test]
fn autocreate_and_id_exclude_each_other() {
    let s = lb().pa(Huawei, "autocreate", r#"{"type":"inner"}"#).pa(
        Huawei,
        "id",
        "abe3ee34-1882-408f-a2ba-1ce7e428d6e3",
    );
    let v = expect(&create(s), &cfg(V), RULE, Deny);
    let msg = v.denial_message().unwrap();
    assert!(msg.contains("deletes it with the Service"), "{msg}");
}

/// Every finding is reported in one round trip, each under the rule id.
#[test]
fn all_problems_at_once() {
    let json = r#"{"type":"public","bandwidth_size":0,"bandwidth_chargemode":"x"}"#;
    let s = lb()
        .pa(Huawei, "class", "performance")
        .pa(Huawei, "autocreate", json);
    let v = expect(&create(s), &cfg(V), RULE, Deny);
    let n = v.violations.iter().filter(|x| x.rule == RULE).count();
    // bandwidth_name, bandwidth_sharetype, eip_type, chargemode, size, zones, l4 flavor.
    assert_eq!(n, 7, "{:#?}", v.violations);
}
