//! Sources: OTC-0385 = opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/
//! networking/services/loadbalancer/configuring_advanced_load_balancing_functions_using_annotations.rst;
//! OTC-0684 = the same directory's configuring_health_check_on_multiple_loadbalancer_service_ports.rst;
//! HWDOC-zh = huaweicloudDocs/cce@99b4f7e:cn.zh-cn/用户指南/Service-Annotations说明.md;
//! ELB-API = huaweicloudDocs/elb@1d83a96:cn.zh-cn/API参考/创建健康检查.md;
//! SDK-HM = PyPI huaweicloudsdkelb 3.1.219 v3/model/create_health_monitor_option.py (the ELB v3
//! CreateHealthMonitor reference); HW-0684 = https://support.huaweicloud.com/usermanual-cce/cce_10_0684.html.

use rstest::rstest;

use crate::providers::Provider::Huawei;
use crate::testkit::{Expect, Expect::*, SvcBuilder, cfg, create, expect, lb, update};

const V: &str = "cluster:\n  version: v1.31.14-r50\n";
const RULE: &str = "annotation-value-format";

/// OTC-0385:293-298: CCE's example, numbers as strings.
const OPTION: &str = r#"{"protocol":"TCP","delay":"5","timeout":"10","max_retries":"3"}"#;

fn option(field: &str, value: &str) -> String {
    format!(r#"{{"protocol":"TCP","{field}":{value}}}"#)
}

#[rstest]
#[case::cce_example(OPTION, Pass)]
#[case::numbers(r#"{"delay":5,"timeout":10,"max_retries":3}"#, Pass)]
#[case::null_is_absent(r#"{"delay":null}"#, Pass)]
// OTC-0385:731-733, HWDOC-zh:422, ELB-API:127: delay 1-50.
#[case::delay_max(&option("delay", r#""50""#), Pass)]
#[case::delay_60(&option("delay", r#""60""#), Deny)]
#[case::delay_0(&option("delay", "0"), Deny)]
#[case::delay_unit(&option("delay", r#""5s""#), Deny)]
#[case::delay_fraction(&option("delay", "5.5"), Deny)]
#[case::delay_empty(&option("delay", r#""""#), Deny)]
// OTC-0385:735-737, ELB-API:249-250: timeout 1-50.
#[case::timeout_51(&option("timeout", "51"), Deny)]
// OTC-0385:739-741, ELB-API:182-184: max_retries 1-10.
#[case::retries_10(&option("max_retries", r#""10""#), Pass)]
#[case::retries_11(&option("max_retries", r#""11""#), Deny)]
// OTC-0385:743-745: TCP, UDP or HTTP.
#[case::protocol_http(r#"{"protocol":"HTTP","path":"/healthz"}"#, Pass)]
#[case::protocol_https(r#"{"protocol":"HTTPS"}"#, Deny)]
#[case::protocol_lower(r#"{"protocol":"tcp"}"#, Deny)]
// OTC-0385:747-751 and ELB-API:276-280: 1-80 characters, starting with "/".
#[case::path_relative(r#"{"protocol":"HTTP","path":"healthz"}"#, Deny)]
#[case::path_long(&format!(r#"{{"protocol":"HTTP","path":"/{}"}}"#, "a".repeat(80)), Deny)]
#[case::path_80(&format!(r#"{{"protocol":"HTTP","path":"/{}"}}"#, "a".repeat(79)), Pass)]
// SDK-HM url_path: letters, digits and -/.%?#& _;~!()*[]@$^:',+ (nothing else).
#[case::path_every_char(r#"{"protocol":"HTTP","path":"/a-Z9/.%?#&_;~!()*[]@$^:',+"}"#, Pass)]
#[case::path_query(r#"{"protocol":"HTTP","path":"/healthz?full"}"#, Pass)]
#[case::path_space(r#"{"protocol":"HTTP","path":"/health z"}"#, Deny)]
#[case::path_equals(r#"{"protocol":"HTTP","path":"/h?a=b"}"#, Deny)]
#[case::path_quote(r#"{"protocol":"HTTP","path":"/h"x"}"#, Deny)]
#[case::path_unicode(r#"{"protocol":"HTTP","path":"/健康"}"#, Deny)]
// SDK-HM max_retries_down 1-10 (not in CCE's table; checked when given).
#[case::retries_down_1(&option("max_retries_down", r#""1""#), Pass)]
#[case::retries_down_10(&option("max_retries_down", "10"), Pass)]
#[case::retries_down_0(&option("max_retries_down", "0"), Deny)]
#[case::retries_down_11(&option("max_retries_down", r#""11""#), Deny)]
// SDK-HM expected_codes: a code, a list or a range; ELB-API: at most 64 characters.
#[case::codes_one(&option("expected_codes", r#""200""#), Pass)]
#[case::codes_list(&option("expected_codes", r#""200,202""#), Pass)]
#[case::codes_range(&option("expected_codes", r#""200-299""#), Pass)]
#[case::codes_mixed(&option("expected_codes", r#""200-204,301""#), Pass)]
#[case::codes_64(&option("expected_codes", &format!(r#""{}2000""#, "200,".repeat(15))), Pass)]
#[case::codes_65(&option("expected_codes", &format!(r#""{}20000""#, "200,".repeat(15))), Deny)]
#[case::codes_class(&option("expected_codes", r#""2xx""#), Deny)]
#[case::codes_alibaba(&option("expected_codes", r#""http_2xx""#), Deny)]
#[case::codes_space(&option("expected_codes", r#""200, 202""#), Deny)]
#[case::codes_empty(&option("expected_codes", r#""""#), Deny)]
#[case::codes_number(&option("expected_codes", "200"), Deny)]
// A JSON object (OTC-0385 Table 16): not an array.
#[case::array(&format!("[{OPTION}]"), Deny)]
#[case::broken(r#"{"delay":5"#, Deny)]
fn health_check_option(#[case] json: &str, #[case] want: Expect) {
    let s = lb().pa(Huawei, "health-check-option", json);
    expect(&create(s), &cfg(V), RULE, want);
}

/// One health-check-option is every port's health monitor: HW-0684 "TCP端口只能配置健康检查协议为
/// TCP、HTTP,UDP端口必须配置健康检查协议为UDP"; SDK-HM type: a UDP pool takes UDP_CONNECT only.
#[rstest]
#[case::tcp_over_tcp(lb(), "TCP", Pass)]
#[case::tcp_over_http(lb(), "HTTP", Pass)]
#[case::tcp_over_udp(lb(), "UDP", Deny)]
#[case::udp_over_udp(lb().only_port(53, "UDP"), "UDP", Pass)]
#[case::udp_over_tcp(lb().only_port(53, "UDP"), "TCP", Deny)]
#[case::udp_over_http(lb().only_port(53, "UDP"), "HTTP", Deny)]
#[case::mixed_over_tcp(lb().port(53, "UDP"), "TCP", Deny)]
#[case::mixed_over_udp(lb().port(53, "UDP"), "UDP", Deny)]
#[case::http_listener_over_http(lb().pa(Huawei, "protocol-port", "http:80"), "HTTP", Pass)]
#[case::https_listener_over_udp(lb().pa(Huawei, "protocol-port", "https:80"), "UDP", Deny)]
fn health_check_option_suits_every_listener(
    #[case] s: SvcBuilder,
    #[case] protocol: &str,
    #[case] want: Expect,
) {
    let json = format!(r#"{{"protocol":"{protocol}","delay":"5"}}"#);
    expect(
        &create(s.pa(Huawei, "health-check-option", &json)),
        &cfg(V),
        RULE,
        want,
    );
}

/// OTC-0684:45-64: CCE's example, two TCP ports 1 and 2.
const OPTIONS: &str = r#"[
  {"protocol":"TCP","delay":"5","timeout":"10","max_retries":"3","target_service_port":"TCP:1","monitor_port":"22"},
  {"protocol":"HTTP","delay":"5","timeout":"10","max_retries":"3","path":"/","target_service_port":"TCP:2","monitor_port":"22","expected_codes":"200"}
]"#;

fn ports_1_2() -> SvcBuilder {
    lb().only_port(1, "TCP").port(2, "TCP").port(53, "UDP")
}

#[rstest]
#[case::cce_example(OPTIONS, Pass)]
// An older OTC revision showed one object (configuring_health_check_for_multiple_ports.rst:42).
#[case::one_object(r#"{"target_service_port":"TCP:1","delay":"5"}"#, Pass)]
#[case::empty_array("[]", Pass)]
// OTC-0684:22, :89: target_service_port is mandatory and unique.
#[case::no_target(r#"[{"delay":"5"}]"#, Deny)]
#[case::target_twice(
    r#"[{"target_service_port":"TCP:1"},{"target_service_port":"TCP:1"}]"#,
    Deny
)]
#[case::target_not_a_service_port(r#"[{"target_service_port":"TCP:80"}]"#, Deny)]
#[case::target_wrong_protocol(r#"[{"target_service_port":"UDP:1"}]"#, Deny)]
#[case::target_without_protocol(r#"[{"target_service_port":"1"}]"#, Deny)]
#[case::target_number(r#"[{"target_service_port":1}]"#, Deny)]
#[case::udp_port(r#"[{"target_service_port":"UDP:53","protocol":"UDP"}]"#, Pass)]
// OTC-0684:23: a TCP port over TCP or HTTP, a UDP port over UDP.
#[case::tcp_port_over_udp(r#"[{"target_service_port":"TCP:1","protocol":"UDP"}]"#, Deny)]
#[case::udp_port_over_http(r#"[{"target_service_port":"UDP:53","protocol":"HTTP"}]"#, Deny)]
// OTC-0684:97-108: the health-check-option ranges, per entry.
#[case::delay_60(r#"[{"target_service_port":"TCP:1","delay":"60"}]"#, Deny)]
#[case::retries_11(r#"[{"target_service_port":"TCP:1","max_retries":11}]"#, Deny)]
// ELB-API:199-207: monitor_port 1-65535.
#[case::monitor_port_high(r#"[{"target_service_port":"TCP:1","monitor_port":"70000"}]"#, Deny)]
#[case::entry_not_an_object(r#"[{"target_service_port":"TCP:1"},"TCP:2"]"#, Deny)]
fn health_check_options(#[case] json: &str, #[case] want: Expect) {
    let s = ports_1_2().pa(Huawei, "health-check-options", json);
    expect(&create(s), &cfg(V), RULE, want);
}

/// Each problem is reported, and names its entry.
#[test]
fn health_check_options_names_the_entry() {
    let json = r#"[{"target_service_port":"TCP:1"},{"target_service_port":"TCP:2","delay":"60","max_retries":"11"}]"#;
    let s = ports_1_2().pa(Huawei, "health-check-options", json);
    let v = expect(&create(s), &cfg(V), RULE, Deny);
    let msgs: Vec<&str> = v
        .violations
        .iter()
        .filter(|x| x.rule == RULE)
        .map(|x| x.message.as_str())
        .collect();
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    assert!(msgs.iter().all(|m| m.contains("entry 2: ")), "{msgs:#?}");
}

#[rstest]
// OTC-0385:242 and :801-803, HWDOC-zh:483-490: persistence_timeout, mandatory, 1-60 minutes.
#[case::cce_example(r#"{"persistence_timeout": "30"}"#, Pass)]
#[case::number(r#"{"persistence_timeout": 60}"#, Pass)]
#[case::over(r#"{"persistence_timeout": "61"}"#, Deny)]
#[case::zero(r#"{"persistence_timeout": "0"}"#, Deny)]
#[case::missing("{}", Deny)]
fn session_affinity_option(#[case] json: &str, #[case] want: Expect) {
    let s = lb().pa(Huawei, "session-affinity-mode", "SOURCE_IP").pa(
        Huawei,
        "session-affinity-option",
        json,
    );
    expect(&create(s), &cfg(V), RULE, want);
}

/// The update ratchet keeps a finding the live Service already had.
#[test]
fn json_findings_ratchet_on_update() {
    let s = || lb().pa(Huawei, "health-check-option", &option("delay", "60"));
    expect(&update(s(), s()), &cfg(V), RULE, Warn);
    let worse = s().pa(Huawei, "health-check-option", &option("delay", "70"));
    expect(&update(s(), worse), &cfg(V), RULE, Deny);
}

/// JSON cannot be read in CEL: with Huawei in the export, the rule is not exported, and
/// says why.
#[test]
fn json_checks_are_webhook_only() {
    let config = cfg(&format!("provider: huawei\n{V}"));
    let versions = crate::vocab::ctx::Versions::from_config(&config);
    let export = crate::vap::export(&config, &versions, None);
    let why = export
        .skipped
        .iter()
        .find(|(id, _)| *id == RULE)
        .map(|(_, why)| why.as_str())
        .unwrap();
    assert!(
        why.contains("JSON parser") && why.contains("webhook"),
        "{why}"
    );
}
