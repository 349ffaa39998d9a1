//! Sources: OTC-0385 = opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/
//! networking/services/loadbalancer/configuring_advanced_load_balancing_functions_using_annotations.rst;
//! OTC-0684 = the same directory's configuring_health_check_on_multiple_loadbalancer_service_ports.rst;
//! HWDOC-zh = huaweicloudDocs/cce@99b4f7e:cn.zh-cn/用户指南/Service-Annotations说明.md;
//! ELB-API = huaweicloudDocs/elb@1d83a96:cn.zh-cn/API参考/创建健康检查.md.

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
// A JSON object (OTC-0385 Table 16): not an array.
#[case::array(&format!("[{OPTION}]"), Deny)]
#[case::broken(r#"{"delay":5"#, Deny)]
fn health_check_option(#[case] json: &str, #[case] want: Expect) {
    let s = lb().pa(Huawei, "health-check-option", json);
    expect(&create(s), &cfg(V), RULE, want);
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
