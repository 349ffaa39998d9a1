//! The exclusions (health-check-option with -options, session-affinity-mode with lb-algorithm
//! SOURCE_IP, transparent-client-ip "false" on a dedicated ELB or an HTTP/HTTPS listener, an
//! http or https entry on port 21 of a shared ELB) are huawei-api.yaml rows, held by
//! providers/api/huawei_tests.rs.
//! Sources: OTC-0385 = opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/
//! networking/services/loadbalancer/configuring_advanced_load_balancing_functions_using_annotations.rst;
//! OTC-0729 = opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/networking/services/
//! loadbalancer/configuring_timeout_for_a_loadbalancer_service.rst; OTC-0683 = the same at
//! .../configuring_http_https_for_a_loadbalancer_service.rst.

use rstest::rstest;

use crate::providers::Provider::Huawei;
use crate::testkit::{Expect, Expect::*, SvcBuilder, cfg, create, expect, lb, update};

const V: &str = "cluster:\n  version: v1.31.14-r50\n";
const RULE: &str = "dependent-annotations";
const OPTION: &str = r#"{"protocol":"TCP","delay":"5","timeout":"10","max_retries":"3"}"#;
const OPTIONS: &str = r#"[{"target_service_port":"TCP:80","protocol":"TCP"}]"#;

fn svc(pairs: &[(&str, &str)]) -> SvcBuilder {
    pairs
        .iter()
        .fold(lb().pa(Huawei, "id", "elb-1"), |s, (k, v)| {
            s.pa(Huawei, k, v)
        })
}

#[rstest]
// OTC-0385 Table 3: with the flag on, health-check-option or -options must be given.
#[case::flag_on_alone(&[("health-check-flag", "on")], Deny)]
#[case::flag_on_option(&[("health-check-flag", "on"), ("health-check-option", OPTION)], Pass)]
#[case::flag_on_options(&[("health-check-flag", "on"), ("health-check-options", OPTIONS)], Pass)]
#[case::flag_on_empty_option(&[("health-check-flag", "on"), ("health-check-option", "")], Deny)]
#[case::flag_off_alone(&[("health-check-flag", "off")], Pass)]
#[case::flag_blank_alone(&[("health-check-flag", "")], Pass)]
#[case::flag_upper_is_not_on(&[("health-check-flag", "ON")], Pass)]
// OTC-0385 Table 11: an IP address group id needs acl-status and acl-type; empty needs neither.
#[case::acl_complete(&[("acl-id", "ipg-1"), ("acl-status", "on"), ("acl-type", "white")], Pass)]
#[case::acl_off_black(&[("acl-id", "ipg-1,ipg-2"), ("acl-status", "off"), ("acl-type", "black")], Pass)]
#[case::acl_without_status(&[("acl-id", "ipg-1"), ("acl-type", "white")], Deny)]
#[case::acl_without_type(&[("acl-id", "ipg-1"), ("acl-status", "true")], Deny)]
#[case::acl_alone(&[("acl-id", "ipg-1")], Deny)]
#[case::acl_empty_type(&[("acl-id", "ipg-1"), ("acl-status", "on"), ("acl-type", "")], Deny)]
#[case::acl_id_empty(&[("acl-id", "")], Pass)]
#[case::status_and_type_alone(&[("acl-status", "on"), ("acl-type", "white")], Pass)]
// OTC-0729 :34-37 and the ELB API (创建监听器.md:343-376 "仅协议为HTTP/HTTPS的监听器支持该字段"):
// client_timeout and member_timeout need an HTTP or HTTPS listener.
#[case::client_timeout_tcp(&[("client_timeout", "60")], Deny)]
#[case::member_timeout_tcp(&[("member_timeout", "60")], Deny)]
#[case::client_timeout_http(&[("client_timeout", "60"), ("protocol-port", "http:80")], Pass)]
#[case::member_timeout_https(&[("member_timeout", "60"), ("protocol-port", "https:80"), ("cert-id", "c-1")], Pass)]
#[case::timeouts_tcp_entry(&[("client_timeout", "60"), ("protocol-port", "tcp:80")], Deny)]
#[case::client_timeout_empty(&[("client_timeout", "")], Pass)]
#[case::timeouts_skip_managed(&[("client_timeout", "60"), ("skip-managed-listener", "true")], Pass)]
#[case::keepalive_tcp(&[("keepalive_timeout", "60")], Pass)]
// OTC-0683 :77, :148-159 and the ELB API (default_tls_container_ref 必传 for TLS): a tls entry
// needs elb.cert-id.
#[case::tls_without_cert(&[("protocol-port", "tls:80")], Deny)]
#[case::tls_blank_cert(&[("protocol-port", "tls:80"), ("cert-id", " ")], Deny)]
#[case::tls_with_cert(&[("protocol-port", "tls:80"), ("cert-id", "c-1")], Pass)]
#[case::tcp_without_cert(&[("protocol-port", "tcp:80")], Pass)]
#[case::tls_skip_managed(&[("protocol-port", "tls:80"), ("skip-managed-listener", "true")], Pass)]
// ELB API client_ca_tls_container_ref "仅TLS和HTTPS协议监听器支持该字段" (create_listener_option.py;
// OTC-0683 :161): the CA certificate needs an HTTPS or TLS listener.
#[case::ca_tcp(&[("client-ca-cert-id", "ca-1"), ("cert-id", "c-1")], Deny)]
#[case::ca_tcp_entry(&[("client-ca-cert-id", "ca-1"), ("cert-id", "c-1"), ("protocol-port", "tcp:80")], Deny)]
#[case::ca_http(&[("client-ca-cert-id", "ca-1"), ("protocol-port", "http:80")], Deny)]
#[case::ca_https(&[("client-ca-cert-id", "ca-1"), ("cert-id", "c-1"), ("protocol-port", "https:80")], Pass)]
#[case::ca_tls(&[("client-ca-cert-id", "ca-1"), ("cert-id", "c-1"), ("protocol-port", "tls:80")], Pass)]
#[case::ca_empty(&[("client-ca-cert-id", "")], Pass)]
#[case::ca_skip_managed(&[("client-ca-cert-id", "ca-1"), ("skip-managed-listener", "true")], Pass)]
// OTC-0385 :399 "HTTPS must be enabled" (SNI, OTC-0683 :78 HTTPS or TLS).
#[case::sni_tcp(&[("tls-certificate-ids", "c-2,c-3")], Deny)]
#[case::sni_http(&[("tls-certificate-ids", "c-2"), ("protocol-port", "http:80")], Deny)]
#[case::sni_https(&[("tls-certificate-ids", "c-2"), ("cert-id", "c-1"), ("protocol-port", "https:80")], Pass)]
#[case::sni_tls(&[("tls-certificate-ids", "c-2"), ("cert-id", "c-1"), ("protocol-port", "tls:80")], Pass)]
#[case::sni_https_upper_is_not_https(&[("tls-certificate-ids", "c-2"), ("cert-id", "c-1"), ("protocol-port", "HTTPS:80")], Deny)]
fn huawei_dependent(#[case] pairs: &[(&str, &str)], #[case] want: Expect) {
    expect(&create(svc(pairs)), &cfg(V), RULE, want);
}

/// An ACL id without its partners names both missing keys.
#[test]
fn acl_id_names_each_missing_partner() {
    let v = expect(&create(svc(&[("acl-id", "ipg-1")])), &cfg(V), RULE, Deny);
    let msgs: Vec<&str> = v
        .violations
        .iter()
        .filter(|x| x.rule == RULE)
        .map(|x| x.message.as_str())
        .collect();
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    assert!(
        msgs.iter()
            .any(|m| m.contains("kubernetes.io/elb.acl-status"))
    );
    assert!(
        msgs.iter()
            .any(|m| m.contains("kubernetes.io/elb.acl-type"))
    );
}

/// The update ratchet keeps what the live Service already had.
#[test]
fn dependent_findings_ratchet_on_update() {
    let s = || svc(&[("health-check-flag", "on")]);
    expect(&update(s(), s()), &cfg(V), RULE, Warn);
}
