//! Huawei's API rows (providers/data/huawei-api.yaml) through the webhook: what the schema
//! reads for CCE that ACK's and Volcengine's rows do not (a JSON field of an annotation, one
//! per entry of an array, a field the object must hold, CCE's listener reading, `any`), with
//! the rule id each finding keeps. The limits themselves are held by the huawei module's
//! tests (autocreate_tests, timeouts_tests, options_tests).
//! `whenAny` and `exists` (a shared ELB's UDP keepalive_timeout) are held by timeouts_tests;
//! every `dependent-annotations` row is held here: `need` (health-check-flag, acl-id),
//! `excludes` (health-check-option with -options, session-affinity-mode with lb-algorithm
//! SOURCE_IP, transparent-client-ip "false" with a dedicated ELB or an http/https entry, an
//! http/https entry on port 21 with a shared ELB), `entry` conditions, `fix`, and a `need`
//! that is a condition (a tls entry needs a `trim`med cert-id; client/member_timeout an
//! http or https entry; client-ca-cert-id and tls-certificate-ids an https or tls entry), the
//! cases that were huawei/dependent_tests' before the rows.
//! Sources: OTC-0385 = opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/
//! networking/services/loadbalancer/configuring_advanced_load_balancing_functions_using_annotations.rst;
//! OTC-0729 = the same at .../configuring_timeout_for_a_loadbalancer_service.rst; OTC-0683 =
//! the same at .../configuring_http_https_for_a_loadbalancer_service.rst.

use rstest::rstest;

use crate::providers::Provider::Huawei;
use crate::testkit::{
    Expect, Expect::*, SvcBuilder, cfg, create, expect, lb, policy_says, run, update,
};

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
    // health-check-flag (any: one check), the two exclusions, acl-id's two needs,
    // transparent-client-ip's two exclusions, port 21's two (a call each), the tls entry's
    // cert-id, the two timeouts and the two certificates of HTTPS/TLS listeners.
    assert_eq!(checks.len(), 14);
}

const OPTION: &str = r#"{"protocol":"TCP","delay":"5","timeout":"10","max_retries":"3"}"#;
const OPTIONS: &str = r#"[{"target_service_port":"TCP:80","protocol":"TCP"}]"#;

fn with(pairs: &[(&str, &str)]) -> SvcBuilder {
    pairs
        .iter()
        .fold(lb().pa(Huawei, "id", "elb-1"), |s, (k, v)| {
            s.pa(Huawei, k, v)
        })
}

#[rstest]
// HW-0684 约束与限制: "不允许同时配置 health-check-option 和 health-check-options".
#[case::both(&[("health-check-option", OPTION), ("health-check-options", OPTIONS)], Deny)]
#[case::both_flag_on(&[("health-check-flag", "on"), ("health-check-option", OPTION), ("health-check-options", OPTIONS)], Deny)]
#[case::option_alone(&[("health-check-option", OPTION)], Pass)]
#[case::options_alone(&[("health-check-options", OPTIONS)], Pass)]
#[case::option_empty(&[("health-check-option", ""), ("health-check-options", OPTIONS)], Pass)]
#[case::options_empty(&[("health-check-option", OPTION), ("health-check-options", "")], Pass)]
// OTC-0385 Tables 1-2: with lb-algorithm SOURCE_IP "sticky session cannot be enabled".
#[case::affinity_source_ip_hash(&[("session-affinity-mode", "SOURCE_IP"), ("lb-algorithm", "SOURCE_IP")], Deny)]
#[case::affinity_skip_managed(&[("session-affinity-mode", "SOURCE_IP"), ("lb-algorithm", "SOURCE_IP"), ("skip-managed-listener", "true")], Deny)]
#[case::affinity_round_robin(&[("session-affinity-mode", "SOURCE_IP"), ("lb-algorithm", "ROUND_ROBIN")], Pass)]
#[case::affinity_least_conn(&[("session-affinity-mode", "SOURCE_IP"), ("lb-algorithm", "LEAST_CONNECTIONS")], Pass)]
#[case::affinity_default_algorithm(&[("session-affinity-mode", "SOURCE_IP")], Pass)]
#[case::affinity_empty(&[("session-affinity-mode", ""), ("lb-algorithm", "SOURCE_IP")], Pass)]
// Exact case, as CCE's table writes SOURCE_IP (annotation-value-format refuses the others).
#[case::algorithm_lower(&[("session-affinity-mode", "SOURCE_IP"), ("lb-algorithm", "source_ip")], Pass)]
#[case::source_ip_hash_alone(&[("lb-algorithm", "SOURCE_IP")], Pass)]
fn excludes_rows(#[case] pairs: &[(&str, &str)], #[case] want: Expect) {
    expect(&create(with(pairs)), &cfg(V), "dependent-annotations", want);
}

#[rstest]
// ELB API transparent_client_ip_enable (创建监听器.md:383-395): only true on a dedicated ELB and on
// HTTP/HTTPS listeners; a shared ELB's TCP/UDP listeners take both (OTC-0385 :608-611).
#[case::tci_dedicated_false(&[("class", "performance"), ("transparent-client-ip", "false")], Deny)]
#[case::tci_dedicated_true(&[("class", "performance"), ("transparent-client-ip", "true")], Pass)]
#[case::tci_dedicated_http_false(&[("class", "performance"), ("transparent-client-ip", "false"), ("protocol-port", "http:80")], Deny)]
#[case::tci_shared_tcp_false(&[("class", "union"), ("transparent-client-ip", "false")], Pass)]
#[case::tci_shared_tcp_true(&[("class", "union"), ("transparent-client-ip", "true")], Pass)]
#[case::tci_shared_http_false(&[("class", "union"), ("transparent-client-ip", "false"), ("protocol-port", "http:80")], Deny)]
#[case::tci_shared_http_true(&[("class", "union"), ("transparent-client-ip", "true"), ("protocol-port", "http:80")], Pass)]
#[case::tci_unknown_class_https_false(&[("transparent-client-ip", "false"), ("protocol-port", "https:80"), ("cert-id", "c-1")], Deny)]
#[case::tci_unknown_class_tcp_false(&[("transparent-client-ip", "false")], Pass)]
#[case::tci_udp_entry_false(&[("class", "union"), ("transparent-client-ip", "false"), ("protocol-port", "udp:80")], Pass)]
// Any http entry counts, a Service port or not (as the code did before the row).
#[case::tci_http_entry_other_port(&[("transparent-client-ip", "false"), ("protocol-port", "tcp:80,http:8080")], Deny)]
// Exact case: "HTTP" is not an http entry, "False" not "false".
#[case::tci_upper_entry(&[("transparent-client-ip", "false"), ("protocol-port", "HTTP:80")], Pass)]
#[case::tci_upper_false(&[("class", "performance"), ("transparent-client-ip", "False")], Pass)]
#[case::tci_empty(&[("class", "performance"), ("transparent-client-ip", "")], Pass)]
#[case::tci_dedicated_skip_managed(&[("class", "performance"), ("transparent-client-ip", "false"), ("skip-managed-listener", "true")], Pass)]
// SDK create_listener_option.py protocol_port: a shared ELB takes no HTTP/HTTPS listener on 21.
#[case::shared_http_21(&[("class", "union"), ("protocol-port", "http:21")], Deny)]
#[case::shared_https_21(&[("class", "union"), ("protocol-port", "https:21"), ("cert-id", "c-1")], Deny)]
#[case::shared_http_021(&[("class", "union"), ("protocol-port", "tcp:80, http : 021")], Deny)]
#[case::shared_http_22(&[("class", "union"), ("protocol-port", "http:22")], Pass)]
#[case::shared_tcp_21(&[("class", "union"), ("protocol-port", "tcp:21")], Pass)]
#[case::dedicated_http_21(&[("class", "performance"), ("protocol-port", "http:21")], Pass)]
#[case::unknown_class_http_21(&[("protocol-port", "http:21")], Pass)]
#[case::empty_class_http_21(&[("class", ""), ("protocol-port", "http:21")], Pass)]
#[case::shared_http_21_skip_managed(&[("class", "union"), ("protocol-port", "http:21"), ("skip-managed-listener", "true")], Pass)]
fn listener_exclusion_rows(#[case] pairs: &[(&str, &str)], #[case] want: Expect) {
    expect(&create(with(pairs)), &cfg(V), "dependent-annotations", want);
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
fn need_rows(#[case] pairs: &[(&str, &str)], #[case] want: Expect) {
    expect(&create(with(pairs)), &cfg(V), "dependent-annotations", want);
}

#[rstest]
// OTC-0683 :77, :148-159 and the ELB API (default_tls_container_ref 必传 for TLS): a tls entry
// needs elb.cert-id; one of only white space reads as unset.
#[case::tls_without_cert(&[("protocol-port", "tls:80")], Deny)]
#[case::tls_blank_cert(&[("protocol-port", "tls:80"), ("cert-id", " ")], Deny)]
#[case::tls_empty_cert(&[("protocol-port", "tls:80"), ("cert-id", "")], Deny)]
#[case::tls_with_cert(&[("protocol-port", "tls:80"), ("cert-id", "c-1")], Pass)]
#[case::tls_padded_cert(&[("protocol-port", "tls:80"), ("cert-id", " c-1 ")], Pass)]
#[case::tls_other_port(&[("protocol-port", "tcp:80,tls:8443")], Deny)]
#[case::tls_spaced(&[("protocol-port", " tls : 80")], Deny)]
#[case::tls_upper_is_not_tls(&[("protocol-port", "TLS:80")], Pass)]
#[case::tcp_without_cert(&[("protocol-port", "tcp:80")], Pass)]
#[case::tls_skip_managed(&[("protocol-port", "tls:80"), ("skip-managed-listener", "true")], Pass)]
#[case::tls_skip_upper(&[("protocol-port", "tls:80"), ("skip-managed-listener", "TRUE")], Deny)]
// OTC-0729 :34-37 and the ELB API (创建监听器.md:343-376 "仅协议为HTTP/HTTPS的监听器支持该字段"):
// client_timeout and member_timeout need an HTTP or HTTPS listener.
#[case::client_timeout_tcp(&[("client_timeout", "60")], Deny)]
#[case::member_timeout_tcp(&[("member_timeout", "60")], Deny)]
#[case::client_timeout_http(&[("client_timeout", "60"), ("protocol-port", "http:80")], Pass)]
#[case::member_timeout_https(&[("member_timeout", "60"), ("protocol-port", "https:80"), ("cert-id", "c-1")], Pass)]
#[case::timeouts_tcp_entry(&[("client_timeout", "60"), ("protocol-port", "tcp:80")], Deny)]
#[case::timeouts_udp_entry(&[("member_timeout", "60"), ("protocol-port", "udp:80")], Deny)]
#[case::timeouts_tls_entry(&[("client_timeout", "60"), ("protocol-port", "tls:80"), ("cert-id", "c-1")], Deny)]
#[case::timeouts_upper_http(&[("client_timeout", "60"), ("protocol-port", "HTTP:80")], Deny)]
#[case::timeouts_http_other_port(&[("client_timeout", "60"), ("protocol-port", "http:8080")], Pass)]
#[case::client_timeout_empty(&[("client_timeout", "")], Pass)]
#[case::timeouts_skip_managed(&[("client_timeout", "60"), ("skip-managed-listener", "true")], Pass)]
#[case::keepalive_tcp(&[("keepalive_timeout", "60")], Pass)]
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
#[case::sni_empty(&[("tls-certificate-ids", "")], Pass)]
#[case::sni_skip_managed(&[("tls-certificate-ids", "c-2"), ("skip-managed-listener", "true")], Pass)]
fn listener_need_rows(#[case] pairs: &[(&str, &str)], #[case] want: Expect) {
    expect(&create(with(pairs)), &cfg(V), "dependent-annotations", want);
    // The exported policy reads protocol-port, cert-id and skip-managed-listener the same way.
    let cel = policy_says(&create(with(pairs)), &cfg(V), "dependent-annotations");
    assert_eq!(cel.is_empty(), matches!(want, Pass), "{cel:#?}");
}

/// A need is one finding per missing annotation or condition, on `if`'s annotation, naming
/// what is missing, with the row's source (its title); the exported policy says the same.
#[rstest]
#[case::acl(&[("acl-id", "ipg-1"), ("acl-type", "white")], "kubernetes.io/elb.acl-id", "needs kubernetes.io/elb.acl-status:", "(CCE's access control table; ELB API v3 CreateListener, UpdateListener ipgroup)")]
#[case::tls(&[("protocol-port", "tls:80"), ("cert-id", " ")], "kubernetes.io/elb.protocol-port", "\"tls:80\" needs kubernetes.io/elb.cert-id:", "(CCE's HTTP/HTTPS page; ELB API v3 CreateListener default_tls_container_ref)")]
#[case::client_timeout(&[("client_timeout", "60"), ("protocol-port", "tcp:80")], "kubernetes.io/elb.client_timeout", "\"60\" needs kubernetes.io/elb.protocol-port with an http or https entry:", "(CCE's timeout page; ELB API v3 CreateListener, UpdateListener client_timeout and member_timeout)")]
#[case::member_timeout(&[("member_timeout", "60")], "kubernetes.io/elb.member_timeout", "needs kubernetes.io/elb.protocol-port with an http or https entry:", "CCE's timeout page")]
#[case::client_ca(&[("client-ca-cert-id", "ca-1"), ("protocol-port", "http:80")], "kubernetes.io/elb.client-ca-cert-id", "needs kubernetes.io/elb.protocol-port with an https or tls entry:", "(ELB API v3 CreateListener, UpdateListener client_ca_tls_container_ref; CCE's HTTP/HTTPS page)")]
#[case::sni(&[("tls-certificate-ids", "c-2")], "kubernetes.io/elb.tls-certificate-ids", "needs kubernetes.io/elb.protocol-port with an https or tls entry:", "(CCE's annotation table and HTTP/HTTPS page: elb.tls-certificate-ids as sni_container_refs)")]
fn a_need_names_its_field_and_source(
    #[case] pairs: &[(&str, &str)],
    #[case] key: &str,
    #[case] says: &str,
    #[case] source: &str,
) {
    let v = run(&create(with(pairs)), &cfg(V));
    let mine: Vec<_> = v
        .violations
        .iter()
        .filter(|x| x.rule == "dependent-annotations")
        .collect();
    assert_eq!(mine.len(), 1, "{mine:#?}");
    assert_eq!(mine[0].field, format!("metadata.annotations[{key}]"));
    assert!(mine[0].message.contains(says), "{}", mine[0].message);
    assert!(mine[0].message.contains(source), "{}", mine[0].message);
    let cel = policy_says(&create(with(pairs)), &cfg(V), "dependent-annotations");
    assert_eq!(cel.len(), 1, "{cel:#?}");
    assert!(cel[0].contains(says), "{}", cel[0]);
}

/// An ACL id without its partners names both missing keys.
#[test]
fn acl_id_names_each_missing_partner() {
    let m = messages(with(&[("acl-id", "ipg-1")]), "dependent-annotations");
    assert_eq!(m.len(), 2, "{m:#?}");
    assert!(m.iter().any(|x| x.contains("kubernetes.io/elb.acl-status")));
    assert!(m.iter().any(|x| x.contains("kubernetes.io/elb.acl-type")));
}

/// The update ratchet keeps a need the live Service already had, with the same value; a
/// new value of the annotation is a new finding (its message quotes the value), as before.
#[rstest]
#[case::flag(&[("health-check-flag", "on")], &[("health-check-flag", "on")], Warn)]
#[case::timeout_kept(&[("client_timeout", "60")], &[("client_timeout", "60")], Warn)]
#[case::timeout_changed(&[("client_timeout", "60")], &[("client_timeout", "30")], Deny)]
#[case::tls_kept(&[("protocol-port", "tls:80")], &[("protocol-port", "tls:80")], Warn)]
fn a_need_ratchets_on_update(
    #[case] old: &[(&str, &str)],
    #[case] new: &[(&str, &str)],
    #[case] want: Expect,
) {
    expect(
        &update(with(old), with(new)),
        &cfg(V),
        "dependent-annotations",
        want,
    );
}

/// No elb.class and an ELB CCE creates: a shared one (union is the default), so port 21 over
/// http is refused; an empty elb.class is a class, and not union.
#[rstest]
#[case::autocreate(None, Deny)]
#[case::autocreate_empty_class(Some(""), Pass)]
#[case::autocreate_union(Some("union"), Deny)]
#[case::autocreate_performance(Some("performance"), Pass)]
fn port_21_on_the_elb_cce_creates(#[case] class: Option<&str>, #[case] want: Expect) {
    let mut s =
        lb().pa(Huawei, "autocreate", r#"{"type":"inner"}"#)
            .pa(Huawei, "protocol-port", "http:21");
    if let Some(c) = class {
        s = s.pa(Huawei, "class", c);
    }
    expect(&create(s), &cfg(V), "dependent-annotations", want);
}

/// An exclusion is one finding on the `if` annotation, naming the other one, with the row's
/// source (its title), as the Rust checks it replaced did.
#[rstest]
#[case::health(&[("health-check-option", OPTION), ("health-check-options", OPTIONS)], "kubernetes.io/elb.health-check-options", "cannot go with kubernetes.io/elb.health-check-option:", "cce_10_0684")]
#[case::affinity(&[("session-affinity-mode", "SOURCE_IP"), ("lb-algorithm", "SOURCE_IP")], "kubernetes.io/elb.session-affinity-mode", "cannot go with kubernetes.io/elb.lb-algorithm: \"SOURCE_IP\":", "sticky session cannot be enabled")]
#[case::tci_dedicated(&[("class", "performance"), ("transparent-client-ip", "false")], "kubernetes.io/elb.transparent-client-ip", "cannot go with kubernetes.io/elb.class: \"performance\":", "; ELB API v3 CreateListener, UpdateListener transparent_client_ip_enable; CCE's client IP pages)")]
#[case::tci_dedicated_http(&[("class", "performance"), ("transparent-client-ip", "false"), ("protocol-port", "http:80")], "kubernetes.io/elb.transparent-client-ip", "cannot go with kubernetes.io/elb.class: \"performance\":", "transparent_client_ip_enable")]
#[case::tci_http(&[("transparent-client-ip", "false"), ("protocol-port", "http:80")], "kubernetes.io/elb.transparent-client-ip", "cannot go with kubernetes.io/elb.protocol-port with an http or https entry:", "HTTP and HTTPS listeners take only true")]
#[case::port_21(&[("class", "union"), ("protocol-port", "tcp:80,https:21"), ("cert-id", "c-1")], "kubernetes.io/elb.protocol-port", "kubernetes.io/elb.protocol-port with an http or https entry on port 21 cannot go with kubernetes.io/elb.class: \"union\":", "; ELB API v3 CreateListener, UpdateListener protocol_port)")]
fn an_exclusion_names_its_field_and_source(
    #[case] pairs: &[(&str, &str)],
    #[case] key: &str,
    #[case] says: &str,
    #[case] source: &str,
) {
    let v = run(&create(with(pairs)), &cfg(V));
    let mine: Vec<_> = v
        .violations
        .iter()
        .filter(|x| x.rule == "dependent-annotations")
        .collect();
    assert_eq!(mine.len(), 1, "{mine:#?}");
    assert_eq!(mine[0].field, format!("metadata.annotations[{key}]"));
    assert!(mine[0].message.contains(says), "{}", mine[0].message);
    assert!(mine[0].message.contains(source), "{}", mine[0].message);
    // The exported policy says it too (CEL), and only the exclusion.
    let cel = policy_says(&create(with(pairs)), &cfg(V), "dependent-annotations");
    assert_eq!(cel.len(), 1, "{cel:#?}");
    assert!(cel[0].contains(says), "{}", cel[0]);
}

/// The update ratchet keeps an exclusion the live Service had, whatever the other values.
#[test]
fn an_exclusion_ratchets_on_update() {
    let old = with(&[
        ("health-check-option", OPTION),
        ("health-check-options", OPTIONS),
    ]);
    let new = with(&[
        ("health-check-option", r#"{"delay":"6"}"#),
        ("health-check-options", OPTIONS),
    ]);
    expect(&update(old, new), &cfg(V), "dependent-annotations", Warn);
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
