//! Huawei's API rows (providers/data/huawei-api.yaml) through the webhook: what the schema
//! reads for CCE that ACK's and Volcengine's rows do not (a JSON field of an annotation, one
//! per entry of an array, a field the object must hold, CCE's listener reading, `any`), with
//! the rule id each finding keeps. The limits themselves are held by the huawei module's
//! tests (autocreate_tests, timeouts_tests, options_tests, dependent_tests).
//! `whenAny` and `exists` (a shared ELB's UDP keepalive_timeout) are held by timeouts_tests.

use rstest::rstest;

use crate::providers::Provider::Huawei;
use crate::testkit::{Expect, Expect::*, SvcBuilder, cfg, create, expect, lb, run};

const V: &str = "cluster:\n  version: v1.31.14-r50\n";

fn messages(s: SvcBuilder, rule: &str) -> Vec<String> {
    run(&create(s), &cfg(V))
        .violations
        .into_iter()
        .filter(|x| x.rule == rule)
        .map(|x| x.message)
        .collect()
}

#[rstest]
// A JSON number or a string of digits for a number row; neither a sign nor a fraction.
#[case::string(r#"{"delay":"5"}"#, Pass)]
#[case::number(r#"{"delay":5}"#, Pass)]
#[case::leading_zero(r#"{"delay":"05"}"#, Pass)]
#[case::plus(r#"{"delay":"+5"}"#, Deny)]
#[case::fraction(r#"{"delay":1.5}"#, Deny)]
#[case::bool(r#"{"delay":true}"#, Deny)]
// JSON null is absent.
#[case::null(r#"{"delay":null}"#, Pass)]
// A string row takes no number.
#[case::codes_number(r#"{"expected_codes":200}"#, Deny)]
fn a_field_row_reads_the_json_type(#[case] json: &str, #[case] want: Expect) {
    let s = lb()
        .pa(Huawei, "id", "elb-1")
        .pa(Huawei, "health-check-option", json);
    expect(&create(s), &cfg(V), "annotation-value-format", want);
}

#[test]
fn entries_are_named_in_the_message() {
    let s = lb().port(81, "TCP").pa(Huawei, "id", "elb-1").pa(
        Huawei,
        "health-check-options",
        r#"[{"target_service_port":"TCP:80"},{"target_service_port":"TCP:81","delay":"51"}]"#,
    );
    let m = messages(s, "annotation-value-format");
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(m[0].contains("entry 2: \"delay\" is \"51\""), "{}", m[0]);
    assert!(m[0].contains("healthmonitor.delay"), "{}", m[0]);
}

#[rstest]
#[case::missing(r#"{}"#, Deny)]
#[case::there(r#"{"persistence_timeout":"30"}"#, Pass)]
// Not an object: the table's format refuses it, and no row reads a field (one finding).
#[case::array(r#"[]"#, Deny)]
fn a_required_field(#[case] json: &str, #[case] want: Expect) {
    let s = lb()
        .pa(Huawei, "id", "elb-1")
        .pa(Huawei, "session-affinity-option", json);
    expect(&create(s.clone()), &cfg(V), "annotation-value-format", want);
    assert!(messages(s, "annotation-value-format").len() <= 1);
}

#[test]
fn autocreate_rows_are_huawei_autocreate_valid_findings() {
    let s = lb().pa(Huawei, "autocreate", r#"{"type":"inner","name":"web elb"}"#);
    let m = messages(s.clone(), "huawei-autocreate-valid");
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(m[0].contains("loadbalancer.name"), "{}", m[0]);
    assert!(messages(s, "annotation-value-format").is_empty());
}

#[rstest]
// CCE's reading: the protocol-port entry for the port, else the port's protocol.
#[case::tcp(lb(), "5", Deny)]
#[case::http(lb().pa(Huawei, "protocol-port", "http:80"), "5", Pass)]
// skip-managed-listener is "true" exactly: another spelling keeps CCE's listeners.
#[case::skip(lb().pa(Huawei, "id", "elb-1").pa(Huawei, "skip-managed-listener", "true"), "5", Pass)]
#[case::skip_upper(lb().pa(Huawei, "id", "elb-1").pa(Huawei, "skip-managed-listener", "TRUE"), "5", Deny)]
fn keepalive_reads_cce_listeners(#[case] s: SvcBuilder, #[case] v: &str, #[case] want: Expect) {
    let s = s.pa(Huawei, "keepalive_timeout", v);
    expect(&create(s), &cfg(V), "annotation-value-format", want);
}

#[test]
fn a_per_listener_message_names_the_ports() {
    let s = lb().port(53, "UDP").pa(Huawei, "keepalive_timeout", "5");
    let m = messages(s, "annotation-value-format");
    assert!(
        m.iter().any(|x| x.contains("ports 80 (tcp), 53 (udp)")),
        "{m:#?}"
    );
}

#[test]
fn any_is_one_finding_when_none_is_set() {
    let s = lb()
        .pa(Huawei, "id", "elb-1")
        .pa(Huawei, "health-check-flag", "on");
    let m = messages(s, "dependent-annotations");
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(m[0].contains("health-check-option or"), "{}", m[0]);
}

#[test]
fn the_dependent_rows_are_exported() {
    let cat = &crate::providers::huawei::CATALOG;
    let checks = super::cel::checks(cat, "false", "dependent-annotations");
    // health-check-flag (any: one check), acl-id's two needs.
    assert_eq!(checks.len(), 3);
}

#[rstest]
// jsonNumber: bandwidth_size is a JSON number; a string of digits is refused.
#[case::number("5", Pass)]
#[case::string("\"5\"", Deny)]
#[case::fraction("5.0", Deny)]
fn a_json_number_row_takes_no_string(#[case] size: &str, #[case] want: Expect) {
    let json = format!(
        r#"{{"type":"public","bandwidth_name":"bw","bandwidth_size":{size},"bandwidth_sharetype":"PER","eip_type":"5_bgp"}}"#
    );
    let s = lb().pa(Huawei, "autocreate", &json);
    expect(&create(s), &cfg(V), "huawei-autocreate-valid", want);
}

#[test]
fn a_required_field_message_names_its_condition() {
    let s = lb().pa(
        Huawei,
        "autocreate",
        r#"{"type":"public","bandwidth_name":"bw","bandwidth_sharetype":"PER","eip_type":"5_bgp"}"#,
    );
    let m = messages(s, "huawei-autocreate-valid");
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(
        m[0].contains(r#""bandwidth_size" is required with "type": "public""#),
        "{}",
        m[0]
    );
    assert!(
        m[0].contains("loadbalancer.publicip.bandwidth.size"),
        "{}",
        m[0]
    );
    assert!(m[0].contains(r#"e.g. "bandwidth_size": 5"#), "{}", m[0]);
    // Inner: no EIP, so nothing is required.
    let s = lb().pa(Huawei, "autocreate", r#"{"type":"inner"}"#);
    assert!(messages(s, "huawei-autocreate-valid").is_empty());
}
