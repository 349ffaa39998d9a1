use rstest::rstest;

use crate::providers::Provider::Alibaba;
use crate::testkit::{Expect, Expect::*, cfg, create, expect, lb, update};

const LEGACY: &str = "service.beta.kubernetes.io/alicloud-loadbalancer-";

#[rstest]
#[case::legacy_only(None, Pass)]
#[case::same_value(Some("internet"), Pass)]
#[case::different_value(Some("intranet"), Deny)]
fn legacy_prefix_conflict(#[case] current: Option<&str>, #[case] want: Expect) {
    let mut s = lb().ann(format!("{LEGACY}address-type"), "internet");
    if let Some(v) = current {
        s = s.pa(Alibaba, "address-type", v);
    }
    expect(&create(s), &cfg(""), "legacy-prefix-conflict", want);
}

/// Findings ratchet one by one: an update that keeps one old conflict and drops another is
/// allowed; one that adds a conflict is not (the exported policy is checked the same way).
#[rstest]
#[case::keeps_one_of_two(&[("address-type", "intranet")], Warn)]
#[case::adds_one(&[("address-type", "intranet"), ("spec", "slb.s2.small"), ("bandwidth", "5")], Deny)]
fn legacy_prefix_conflict_ratchets_per_key(#[case] new: &[(&str, &str)], #[case] want: Expect) {
    let base = |pairs: &[(&str, &str)]| {
        let mut s = lb()
            .ann(format!("{LEGACY}address-type"), "internet")
            .ann(format!("{LEGACY}spec"), "slb.s1.small");
        for (k, v) in pairs {
            s = s.pa(Alibaba, k, v);
        }
        s
    };
    let old = base(&[("address-type", "intranet"), ("spec", "slb.s2.small")]);
    let mut new = base(new);
    if want == Deny {
        new = new.ann(format!("{LEGACY}bandwidth"), "10");
    }
    expect(&update(old, new), &cfg(""), "legacy-prefix-conflict", want);
}

#[rstest]
#[case::protocol_port_ok("protocol-port", "http:80,https:443", Pass)]
#[case::protocol_port_bad_proto("protocol-port", "ftp:80", Deny)]
#[case::protocol_port_not_a_service_port("protocol-port", "http:8080", Deny)]
#[case::protocol_port_no_colon("protocol-port", "http80", Deny)]
#[case::protocol_port_twice("protocol-port", "http:80,https:80", Deny)]
#[case::vgroup_ok("vgroup-port", "vsp-bp1abc:80", Pass)]
#[case::vgroup_bad_id("vgroup-port", "rsp-bp1abc:80", Deny)]
#[case::weight_ok("weight", "100", Pass)]
#[case::weight_too_big("weight", "101", Deny)]
#[case::default_weight_word("default-weight", "high", Deny)]
#[case::timeout_ok("idle-timeout", "30", Pass)]
#[case::timeout_word("idle-timeout", "30s", Deny)]
#[case::bandwidth_word("bandwidth", "ten", Deny)]
#[case::forward_ok("forward-port", "80:443", Pass)]
#[case::forward_bad("forward-port", "80-443", Deny)]
#[case::range_ok("listener-port-range", "10000-10010:80", Pass)]
#[case::range_backwards("listener-port-range", "10010-10000:80", Deny)]
#[case::range_too_big("listener-port-range", "1-70000:80", Deny)]
#[case::zones_ok("zone-maps", "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2", Pass)]
#[case::zones_bad("zone-maps", "cn-hangzhou-h=vsw-1", Deny)]
#[case::zones_empty_zone("zone-maps", " :vsw-1", Deny)]
#[case::zones_spaces("zone-maps", " cn-hangzhou-h : vsw-1 ", Pass)]
#[case::protocol_port_last_colon("protocol-port", "http:x:80", Deny)]
#[case::protocol_port_spaces("protocol-port", " http:80 , https:443", Pass)]
#[case::protocol_port_empty_entry("protocol-port", "http:80,", Deny)]
#[case::vgroup_too_short("vgroup-port", "vsp-:80", Deny)]
#[case::weight_negative_zero("weight", "-0", Pass)]
#[case::weight_space("weight", " 5", Deny)]
#[case::timeout_spaces("idle-timeout", " 30 ", Pass)]
#[case::timeout_negative("idle-timeout", "-5", Pass)]
#[case::timeout_long("idle-timeout", "12345678901", Deny)]
#[case::forward_spaces("forward-port", " 80 : 443 ", Pass)]
#[case::forward_three("forward-port", "80:443:1", Deny)]
#[case::forward_second_bad("forward-port", "80:443,81", Deny)]
#[case::range_spaces("listener-port-range", " 10000 - 10010 : 80", Pass)]
#[case::range_equal("listener-port-range", "10000-10000:80", Deny)]
#[case::range_no_dash("listener-port-range", "10000:80", Deny)]
fn annotation_format(#[case] key: &str, #[case] value: &str, #[case] want: Expect) {
    let s = lb().port(443, "TCP").pa(Alibaba, key, value);
    let v = expect(&create(s), &cfg(""), "annotation-format", want);
    if want == Deny {
        assert!(v.denial_message().unwrap().contains(key));
    }
}

/// Updates keep what the live Service already had, finding by finding (and so does the
/// exported policy, checked on every case).
#[rstest]
#[case::same_bad_entry("protocol-port", "ftp:80", "ftp:80", Warn)]
#[case::adds_bad_entry("protocol-port", "ftp:80", "ftp:80,tcp:x", Deny)]
#[case::reordered_twice("protocol-port", "http:80,https:80", "https:80,http:80", Warn)]
#[case::same_bad_forward("forward-port", "80-443", "80-443", Warn)]
#[case::adds_bad_forward("forward-port", "80-443", "80-443,81", Deny)]
#[case::same_bad_int("idle-timeout", "30s", "30s", Warn)]
#[case::other_bad_int("idle-timeout", "30s", "40s", Deny)]
fn annotation_format_ratchets_per_finding(
    #[case] key: &str,
    #[case] old: &str,
    #[case] new: &str,
    #[case] want: Expect,
) {
    let svc = |v: &str| lb().port(443, "TCP").pa(Alibaba, key, v);
    expect(
        &update(svc(old), svc(new)),
        &cfg(""),
        "annotation-format",
        want,
    );
}

/// The live Service used the legacy key: its findings name another key, so they are new.
#[test]
fn annotation_format_ratchet_needs_the_same_key() {
    let old = lb().ann(format!("{LEGACY}forward-port"), "80-443");
    let new = lb().pa(Alibaba, "forward-port", "80-443");
    expect(&update(old, new), &cfg(""), "annotation-format", Deny);
}

#[test]
fn annotation_format_reads_the_legacy_prefix_too() {
    let s = lb().ann(format!("{LEGACY}weight"), "200");
    expect(&create(s), &cfg(""), "annotation-format", Deny);
}

#[test]
fn annotation_format_collects_every_problem() {
    let s = lb()
        .pa(Alibaba, "weight", "-1")
        .pa(Alibaba, "idle-timeout", "x")
        .pa(Alibaba, "protocol-port", "ftp:1");
    let v = expect(&create(s), &cfg(""), "annotation-format", Deny);
    assert_eq!(
        v.denials()
            .filter(|d| d.rule == "annotation-format")
            .count(),
        4
    );
}

#[rstest]
#[case::acl_on_with_id(&[("acl-status", "on"), ("acl-id", "acl-1")], Pass)]
#[case::acl_on_without_id(&[("acl-status", "on")], Deny)]
#[case::acl_off(&[("acl-status", "off")], Pass)]
#[case::sticky_without_type(&[("sticky-session", "on")], Deny)]
#[case::insert_without_timeout(&[("sticky-session", "on"), ("sticky-session-type", "insert")], Deny)]
#[case::insert_with_timeout(&[("sticky-session", "on"), ("sticky-session-type", "insert"), ("cookie-timeout", "1800")], Pass)]
#[case::server_without_cookie(&[("sticky-session", "on"), ("sticky-session-type", "server")], Deny)]
#[case::vswitch_internet(&[("vswitch-id", "vsw-1"), ("address-type", "internet")], Deny)]
#[case::vswitch_intranet(&[("vswitch-id", "vsw-1"), ("address-type", "intranet")], Pass)]
fn dependent_annotations(#[case] anns: &[(&str, &str)], #[case] want: Expect) {
    let s = anns.iter().fold(lb(), |s, (k, v)| s.pa(Alibaba, k, v));
    expect(&create(s), &cfg(""), "dependent-annotations", want);
}
