use rstest::rstest;

use crate::engine::version::KubeVersion;
use crate::providers::data::{Entry, table};
use crate::providers::{Provider, Provider::*};
use crate::testkit::{Expect, Expect::*, assert_outcome, cfg, create, expect, lb, run, update};
use crate::vocab::version::VersionOf;

const FORMAT: &str = "annotation-value-format";
const VERSION: &str = "annotation-ccm-version";

#[rstest]
#[case::ctyun_id(Ctyun, "id", "lb-abc123", Pass)]
#[case::ctyun_id_empty(Ctyun, "id", "", Deny)]
#[case::ctyun_spec_space(Ctyun, "spec", "standard I", Deny)]
#[case::ctyun_id_nbsp(Ctyun, "id", "lb\u{a0}1", Deny)]
#[case::ctyun_id_vertical_tab(Ctyun, "id", "lb\u{b}1", Deny)]
#[case::volc_int_negative(Volcengine, "health-check-interval", "-3", Deny)]
#[case::volc_int_big(Volcengine, "bandwidth", "1234567890123456789", Deny)]
#[case::huawei_algorithm(Huawei, "lb-algorithm", "LEAST_CONNECTIONS", Pass)]
#[case::huawei_algorithm_case(Huawei, "lb-algorithm", "round_robin", Deny)]
#[case::huawei_flag(Huawei, "health-check-flag", "off", Pass)]
#[case::huawei_flag_bool(Huawei, "health-check-flag", "false", Deny)]
// OTC-0385 = opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/networking/
// services/loadbalancer/configuring_advanced_load_balancing_functions_using_annotations.rst
// :265 "Leave this parameter blank or set it to on"
#[case::huawei_flag_empty(Huawei, "health-check-flag", "", Pass)]
#[case::huawei_flag_on(Huawei, "health-check-flag", "on", Pass)]
// :489-492 on or true, off or false
#[case::huawei_acl_status_true(Huawei, "acl-status", "true", Pass)]
#[case::huawei_acl_status_off(Huawei, "acl-status", "off", Pass)]
#[case::huawei_acl_status_yes(Huawei, "acl-status", "yes", Deny)]
// :477 empty: all IPs allowed; :483 up to five ids
#[case::huawei_acl_id_empty(Huawei, "acl-id", "", Pass)]
#[case::huawei_acl_id_five(Huawei, "acl-id", "a,b,c,d,e", Pass)]
#[case::huawei_acl_id_six(Huawei, "acl-id", "a,b,c,d,e,f", Deny)]
#[case::huawei_acl_id_blank_entry(Huawei, "acl-id", "a,,b", Deny)]
// :221 SOURCE_IP only for Services (HTTP_COOKIE is an Ingress value)
#[case::huawei_affinity(Huawei, "session-affinity-mode", "SOURCE_IP", Pass)]
#[case::huawei_affinity_cookie(Huawei, "session-affinity-mode", "HTTP_COOKIE", Deny)]
// :435-436 true | false
#[case::huawei_adaptive_weight(Huawei, "adaptive-weight", "true", Pass)]
#[case::huawei_adaptive_weight_on(Huawei, "adaptive-weight", "on", Deny)]
// :576-582 keepalive 0-4000
#[case::huawei_keepalive(Huawei, "keepalive_timeout", "4000", Pass)]
#[case::huawei_keepalive_over(Huawei, "keepalive_timeout", "4001", Deny)]
#[case::huawei_option_json(Huawei, "health-check-option", r#"{"delay":"5"}"#, Pass)]
#[case::huawei_option_broken(Huawei, "health-check-option", r#"{"delay":5"#, Deny)]
#[case::huawei_timeout(Huawei, "member_timeout", "300", Pass)]
#[case::huawei_timeout_high(Huawei, "member_timeout", "301", Deny)]
#[case::huawei_tags(Huawei, "tags", "team=web,env=prod", Pass)]
#[case::huawei_tags_bad(Huawei, "tags", "team", Deny)]
#[case::volc_scheduler(Volcengine, "scheduler", "wlc", Pass)]
#[case::volc_scheduler_bad(Volcengine, "scheduler", "rr", Deny)]
#[case::volc_address_type(Volcengine, "address-type", "PRIVATE", Pass)]
#[case::volc_address_type_case(Volcengine, "address-type", "private", Deny)]
#[case::volc_interval(Volcengine, "health-check-interval", "10", Pass)]
#[case::volc_interval_zero(Volcengine, "health-check-interval", "0", Deny)]
#[case::volc_acl_ids(Volcengine, "acl-id", "acl-1,acl-2", Pass)]
#[case::volc_acl_ids_empty(Volcengine, "acl-id", "acl-1,", Deny)]
// The controller's table: volcengine/volcengine-cloud-controller-manager@903e85e:docs/usage.md
// :25 interval 1-300 (the CLB API's HealthCheck.Interval row, volcengine-api.yaml)
#[case::volc_interval_max(Volcengine, "health-check-interval", "300", Pass)]
#[case::volc_interval_over(Volcengine, "health-check-interval", "301", Deny)]
// :26 connect timeout 1-60
#[case::volc_connect_timeout_max(Volcengine, "health-check-connect-timeout", "60", Pass)]
#[case::volc_connect_timeout_over(Volcengine, "health-check-connect-timeout", "61", Deny)]
// :27-28 say 3-10; the CLB API takes 2-10 (https://docs.byteplus.com/api/docs/clb/Editing-health-check;
// terraform-provider-volcengine@8cff181:volcengine/clb/listener/resource_volcengine_listener.go:352,358)
#[case::volc_healthy_1(Volcengine, "healthy-threshold", "1", Deny)]
#[case::volc_healthy_2(Volcengine, "healthy-threshold", "2", Pass)]
#[case::volc_healthy_10(Volcengine, "healthy-threshold", "10", Pass)]
#[case::volc_healthy_11(Volcengine, "healthy-threshold", "11", Deny)]
#[case::volc_unhealthy_1(Volcengine, "unhealthy-threshold", "1", Deny)]
#[case::volc_unhealthy_2(Volcengine, "unhealthy-threshold", "2", Pass)]
#[case::volc_unhealthy_10(Volcengine, "unhealthy-threshold", "10", Pass)]
#[case::volc_unhealthy_11(Volcengine, "unhealthy-threshold", "11", Deny)]
// :18 sync-fields: spec, the one value the table documents (docs/zh/usage_zh.md:18)
#[case::volc_sync_fields(Volcengine, "sync-fields", "spec", Pass)]
#[case::volc_sync_fields_case(Volcengine, "sync-fields", "Spec", Deny)]
#[case::volc_sync_fields_other(Volcengine, "sync-fields", "bandwidth", Deny)]
#[case::volc_sync_fields_empty(Volcengine, "sync-fields", "", Pass)]
// :32 proxy-protocol standard | off
#[case::volc_proxy_standard(Volcengine, "proxy-protocol", "standard", Pass)]
#[case::volc_proxy_on(Volcengine, "proxy-protocol", "on", Deny)]
// :31 "A maximum of 5 IDs"; the ids as in the example at :140
#[case::volc_acl_five(Volcengine, "acl-id", "acl-1,acl-2,acl-3,acl-4,acl-5", Pass)]
#[case::volc_acl_six(Volcengine, "acl-id", "acl-1,acl-2,acl-3,acl-4,acl-5,acl-6", Deny)]
#[case::volc_acl_example(
    Volcengine,
    "acl-id",
    "acl-3cj44nv0jhhxc6c6rrtet****,acl-2febxt4pu0zy85oxruw0t****",
    Pass
)]
// :14-15 billing types 2 | 3
#[case::volc_billing_2(Volcengine, "billing-type", "2", Pass)]
#[case::volc_billing_1(Volcengine, "billing-type", "1", Deny)]
#[case::volc_eip_billing_3(Volcengine, "eip-billing-type", "3", Pass)]
#[case::volc_eip_billing_word(Volcengine, "eip-billing-type", "traffic", Deny)]
// :17 spec small_1 ... large_2
#[case::volc_spec(Volcengine, "spec", "medium_2", Pass)]
#[case::volc_spec_bad(Volcengine, "spec", "xlarge_1", Deny)]
#[case::volc_spec_chinese(Volcengine, "spec", "小型I", Deny)]
// the table's description of small_1
// :13 isp-type: the EIP lines depend on the region (no enumeration); :16 bandwidth: no maximum
#[case::volc_isp_line(Volcengine, "isp-type", "ChinaMobile", Pass)]
#[case::volc_isp_space(Volcengine, "isp-type", "BGP PRO", Deny)]
#[case::volc_bandwidth_large(Volcengine, "bandwidth", "10000", Pass)]
#[case::volc_bandwidth_0(Volcengine, "bandwidth", "0", Deny)]
// :21 modification-protection-status, :29 acl-status, :30 acl-type, :24 health-check-flag
#[case::volc_protection(Volcengine, "modification-protection-status", "NonProtection", Pass)]
#[case::volc_protection_bad(Volcengine, "modification-protection-status", "on", Deny)]
#[case::volc_acl_status(Volcengine, "acl-status", "on", Pass)]
#[case::volc_acl_status_bad(Volcengine, "acl-status", "true", Deny)]
#[case::volc_acl_type(Volcengine, "acl-type", "black", Pass)]
#[case::volc_acl_type_bad(Volcengine, "acl-type", "deny", Deny)]
#[case::volc_flag(Volcengine, "health-check-flag", "off", Pass)]
#[case::volc_flag_bad(Volcengine, "health-check-flag", "false", Deny)]
fn value_format(
    #[case] p: Provider,
    #[case] suffix: &str,
    #[case] value: &str,
    #[case] want: Expect,
) {
    // With the provider fixed the exported policy checks the same (auto includes Huawei's
    // JSON annotations, which CEL cannot parse, so the rule is not exported then).
    let fixed = cfg(&format!("provider: {p}\n"));
    expect(&create(lb().pa(p, suffix, value)), &fixed, FORMAT, want);
    let v = expect(&create(lb().pa(p, suffix, value)), &cfg(""), FORMAT, want);
    if want == Deny {
        let msg = v.denial_message().unwrap();
        // The table's format says what it expects; an API row (volcengine-api.yaml) which
        // parameter refuses the value.
        assert!(
            msg.contains(suffix)
                && (msg.contains("expected") || msg.contains("the cloud's API refuses"))
                && msg.contains("e.g."),
            "{msg}"
        );
    }
}

/// Formats that have their own rule stay there: one finding, under the known id.
#[rstest]
#[case(Ctyun, "ip-mode", "VIP", "ip-mode-value")]
#[case(Ctyun, "address-type", "public", "address-type-value")]
#[case(Huawei, "class", "dedicated", "enum-values")]
#[case(Volcengine, "weight", "200", "weight-range")]
fn owned_formats_are_left_to_their_rule(
    #[case] p: Provider,
    #[case] suffix: &str,
    #[case] value: &str,
    #[case] owner: &str,
) {
    let v = expect(&create(lb().pa(p, suffix, value)), &cfg(""), FORMAT, Pass);
    assert_outcome(&v, owner, Deny);
}

#[rstest]
#[case::ctyun_new(Ctyun, "spec", "ccm", "v1.0.0", Pass)]
#[case::ctyun_old(Ctyun, "spec", "ccm", "v0.9.8", Warn)]
#[case::alibaba_new(Alibaba, "delete-protection", "ccm", "v2.10.0", Pass)]
#[case::alibaba_build(
    Alibaba,
    "delete-protection",
    "ccm",
    "v1.9.3.304-g1f42462-aliyun",
    Pass
)]
#[case::alibaba_old(
    Alibaba,
    "delete-protection",
    "ccm",
    "v1.9.3.220-g24b1885-aliyun",
    Warn
)]
#[case::alibaba_charge_old(Alibaba, "instance-charge-type", "ccm", "v2.3.9", Warn)]
#[case::huawei_new(Huawei, "enterpriseID", "cluster", "v1.15.0", Pass)]
#[case::huawei_old(Huawei, "enterpriseID", "cluster", "v1.13.10-r0", Warn)]
fn ccm_version(
    #[case] p: Provider,
    #[case] suffix: &str,
    #[case] of: &str,
    #[case] version: &str,
    #[case] want: Expect,
) {
    let config = cfg(&format!("{of}:\n  version: \"{version}\"\n"));
    let v = expect(&create(lb().pa(p, suffix, "x")), &config, VERSION, want);
    if want == Warn {
        let w = v.warnings().join("\n");
        assert!(w.contains("or newer") && w.contains(suffix), "{w}");
    }
}

#[test]
fn ccm_version_is_silent_when_unknown() {
    let s = lb().pa(Alibaba, "delete-protection", "on");
    let v = run(&create(s), &cfg(""));
    assert!(!v.rule_ids().contains(&VERSION), "{v:?}");
}

#[test]
fn ccm_version_can_deny() {
    let s = lb().pa(Alibaba, "delete-protection", "on");
    let config = cfg("ccm:\n  version: v1.9.3\nrules:\n  annotation-ccm-version: deny\n");
    expect(&create(s), &config, VERSION, Deny);
}

/// Updates ratchet: an annotation the live object already had does not block.
#[test]
fn value_format_ratchets_on_update() {
    let old = lb().pa(Huawei, "lb-algorithm", "round_robin");
    let new = old.clone().pa(Huawei, "lb-algorithm", "round_robin");
    expect(&update(old, new), &cfg(""), FORMAT, Warn);
}

/// The version just below `v` (the last release before it).
fn below(v: KubeVersion) -> KubeVersion {
    let mut b = v;
    if v.revision > 0 {
        b.revision -= 1;
    } else if v.build > 0 {
        b.build -= 1;
    } else if v.patch > 0 {
        b.patch -= 1;
    } else if v.minor > 0 {
        b.minor -= 1;
        b.patch = 99;
    } else {
        b.major -= 1;
        b.minor = 99;
    }
    b
}

fn owner(e: &Entry) -> &str {
    e.rule.as_deref().unwrap_or(FORMAT)
}

fn version_config(p: Provider, v: KubeVersion) -> crate::config::Config {
    let of = match table(p).version_of {
        VersionOf::Ccm => "ccm",
        VersionOf::Cluster => "cluster",
    };
    cfg(&format!("provider: {p}\n{of}:\n  version: \"{v}\"\n"))
}

/// A Service on which every value of the annotation's table format is one the API takes:
/// Huawei's keepalive_timeout goes to every listener, and 0-9 suit HTTP/HTTPS listeners only
/// (the CreateListener rows of providers/data/huawei-api.yaml).
fn context(p: Provider, name: &str) -> crate::testkit::SvcBuilder {
    match (p, name) {
        (Huawei, "keepalive_timeout") => lb().pa(Huawei, "protocol-port", "http:80"),
        _ => lb(),
    }
}

/// Walks a provider's table: every name known, every enumeration value accepted, a wrong
/// value denied by the rule that owns the format, and every annotation warned about below
/// its first version and not at it.
fn walk(p: Provider) {
    let t = table(p);
    let fixed = cfg(&format!("provider: {p}\n"));
    let mut all = lb();
    for e in t.annotations.iter().filter(|e| e.instead.is_none()) {
        let example = e.format.example().trim_matches(['"', '\'']).to_string();
        all = all.pa(p, &e.name, &example);
    }
    let v = run(&create(all), &cfg(""));
    let unknown: Vec<_> = v
        .violations
        .iter()
        .filter(|x| x.rule == "unknown-annotation")
        .collect();
    assert!(unknown.is_empty(), "{p}: {unknown:#?}");

    for e in t.annotations.iter().filter(|e| e.instead.is_none()) {
        let mut good: Vec<String> = e.format.allowed();
        if let crate::providers::data::Format::Int(r) | crate::providers::data::Format::Atoi(r) =
            &e.format
        {
            good.extend(r.iter().map(i64::to_string));
        }
        for value in good {
            // Accepted on some listener: ACK's API takes some values for one listener
            // protocol only (providers/data/alibaba-api.yaml, e.g. scheduler qch: UDP).
            let shapes = listener_shapes(p, &e.name);
            let runs: Vec<_> = shapes
                .iter()
                .map(|s| run(&create(s.clone().pa(p, &e.name, &value)), &fixed))
                .collect();
            // Accepted: the owner may still advise (weight 0 warns), but denies nothing.
            let accepted = runs
                .iter()
                .find(|v| v.denials().all(|d| d.rule != owner(e)))
                .unwrap_or_else(|| {
                    let denied: Vec<_> = runs[0].denials().collect();
                    panic!("{p} {} = {value}: {denied:#?}", e.name)
                });
            assert_outcome(accepted, FORMAT, Pass);
        }
        if let Some(bad) = e.format.counterexample() {
            let v = run(&create(lb().pa(p, &e.name, &bad)), &fixed);
            assert_outcome(&v, owner(e), Deny);
        }
        if let (Some(first), None) = (e.since.first(), &e.version_rule) {
            let value = e.format.example().trim_matches(['"', '\'']).to_string();
            let s = || create(lb().pa(p, &e.name, &value));
            let v = run(&s(), &version_config(p, below(*first)));
            assert_outcome(&v, VERSION, Warn);
            let v = run(&s(), &version_config(p, *first));
            assert_outcome(&v, VERSION, Pass);
        }
    }
}

/// The Services a walked value is tried on: one per listener protocol for ACK.
fn listener_shapes(p: Provider, name: &str) -> Vec<crate::testkit::SvcBuilder> {
    if p != Alibaba {
        return vec![context(p, name)];
    }
    ["tcp", "udp", "http", "https"]
        .iter()
        .map(|proto| {
            lb().pa(p, "protocol-port", &format!("{proto}:80"))
                .pa(p, "cert-id", "cert-1")
        })
        .collect()
}

#[test]
fn walk_ctyun() {
    walk(Ctyun);
}

#[test]
fn walk_alibaba() {
    walk(Alibaba);
}

#[test]
fn walk_huawei() {
    walk(Huawei);
}

#[test]
fn walk_volcengine() {
    walk(Volcengine);
    // No versions recorded, so the rule is not registered for it (and a test would be idle).
    let t = table(Volcengine);
    assert!(t.annotations.iter().all(|e| e.since.is_empty()));
    let rule = crate::rules::find(VERSION).unwrap();
    assert!(!rule.providers.contains(&Volcengine));
}
