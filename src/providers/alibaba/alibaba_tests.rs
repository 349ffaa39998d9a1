use rstest::rstest;

use crate::providers::Provider::Alibaba;
use crate::testkit::{Expect, Expect::*, cfg, create, expect, lb, run, update};

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

const NLB: &str = "alibabacloud.com/nlb";

/// CLB (no class): each case as kubernetes/cloud-provider-alibaba-cloud@eeb0ddc decides it;
/// the line is in the case's comment. Service ports 80 and 443.
#[rstest]
#[case::protocol_port_ok("protocol-port", "http:80,https:443", Pass)] // clbv1/listeners.go:723-733
#[case::protocol_port_bad_proto("protocol-port", "ftp:80", Deny)] // :723-729 "not supported wit"
#[case::protocol_port_upper_case("protocol-port", "HTTPS:443", Deny)] // :723 exact lower case
#[case::protocol_port_tcpssl_is_nlbs("protocol-port", "tcpssl:443", Deny)] // :723
#[case::protocol_port_not_a_service_port("protocol-port", "http:8080", Warn)] // :731 never matches: ignored, a note
#[case::protocol_port_no_colon("protocol-port", "http80", Deny)] // :718-721
#[case::protocol_port_twice("protocol-port", "http:80,https:80", Warn)] // :731 first match wins, a note
#[case::protocol_port_extra_colon("protocol-port", "https:443:x", Pass)] // :717 parts[1] only
#[case::protocol_port_space_after_comma("protocol-port", "http:80, https:443", Deny)] // no TrimSpace: " https"
#[case::protocol_port_empty_entry("protocol-port", "http:80,", Deny)] // "" has no colon
#[case::protocol_port_leading_zero("protocol-port", "https:0443", Warn)] // :731 string compare: never read
#[case::vgroup_real_clb_id("vgroup-port", "rsp-bp1abc:80", Pass)] // listeners.go:740-753: no id check
#[case::vgroup_vsp_example("vgroup-port", "vsp-bp1abc:80", Pass)] // the message's example is accepted too
#[case::vgroup_no_colon("vgroup-port", "rsp-bp1abc", Deny)] // vgroups.go:1065-1066
#[case::vgroup_empty_id("vgroup-port", ":80", Deny)] // an empty VServerGroupId reaches the API
#[case::weight_ok("weight", "100", Pass)] // vgroups.go:522-529
#[case::weight_too_big("weight", "101", Deny)]
#[case::weight_plus("weight", "+50", Pass)] // strconv.Atoi takes a sign
#[case::weight_space("weight", " 5", Deny)]
#[case::default_weight_word("default-weight", "high", Deny)] // vgroups.go:536-543
#[case::idle_timeout_plus("idle-timeout", "+30", Pass)] // listeners.go:235-242: Atoi("+30") = 30
#[case::idle_timeout_space("idle-timeout", " 30", Deny)] // Atoi(" 30") fails
#[case::idle_timeout_word("idle-timeout", "30s", Deny)]
#[case::idle_timeout_range("idle-timeout", "61", Deny)] // CLB API 1-60
#[case::health_check_interval_range("health-check-interval", "51", Deny)] // docs table 1-50
#[case::health_check_interval_ok("health-check-interval", "50", Pass)]
#[case::healthy_threshold_low("healthy-threshold", "1", Deny)] // docs table 2-10
#[case::request_timeout_high("request-timeout", "181", Deny)] // CLB API 1-180
#[case::established_timeout_low("established-timeout", "5", Deny)] // CLB API 10-900
#[case::bandwidth_zero("bandwidth", "0", Deny)] // CLB API 1-5120
#[case::bandwidth_word("bandwidth", "ten", Deny)] // loadbalancer.go:248-255
#[case::connect_port_magic("health-check-connect-port", "-520", Pass)] // docs table: -520 = backend port
#[case::connect_port_too_big("health-check-connect-port", "70000", Deny)]
#[case::negative_timeout("persistence-timeout", "-1", Deny)] // CLB API 0-3600
#[case::scheduler_ok("scheduler", "wrr", Pass)]
#[case::scheduler_typo("scheduler", "roundrobin", Deny)]
#[case::health_check_type_ping("health-check-type", "ping", Deny)]
#[case::ip_version_ipv5("ip-version", "ipv5", Deny)]
#[case::acl_status_yes("acl-status", "yes", Deny)]
#[case::proxy_protocol_typo("proxy-protocol", "enabled", Deny)] // listeners.go:220-222 reads it as off
#[case::empty_is_absent("idle-timeout", "", Pass)] // Get(...) != "": empty = unset
#[case::forward_ok("forward-port", "80:443", Pass)]
#[case::forward_bad("forward-port", "80-443", Deny)] // listeners.go:618-643
#[case::forward_spaces("forward-port", " 80:443", Deny)]
#[case::forward_three("forward-port", "80:443:1", Deny)]
// domain-extensions: clbv1/listeners.go:379-385 parses it for every listener; :1184-1190
// trims each entry and fails unless it has exactly one ':'.
#[case::domain_ext_ok("domain-extensions", "a.example.com:cert-1,b.example.com:cert-2", Pass)]
#[case::domain_ext_spaces(
    "domain-extensions",
    " a.example.com:cert-1 , b.example.com:cert-2",
    Pass
)] // :1186 TrimSpace
#[case::domain_ext_no_cert("domain-extensions", "a.example.com", Deny)] // :1188-1190
#[case::domain_ext_two_colons("domain-extensions", "a.example.com:cert:1", Deny)]
#[case::domain_ext_trailing_comma("domain-extensions", "a.example.com:cert-1,", Deny)] // "" has no ':'
#[case::nlb_only_ignored_by_clb("cps", "x", Pass)]
// CLB never reads cps
// hostname: clbv1/service_controller.go:419-424 writes it as the status hostname, which the
// API server validates (ValidateLoadBalancerStatus: IsDNS1123Subdomain, not an IP).
#[case::hostname_ok("hostname", "web.example.com", Pass)]
#[case::hostname_one_label("hostname", "web", Pass)]
#[case::hostname_digits_and_dashes("hostname", "1-web.2x.example.com", Pass)]
#[case::hostname_upper_case("hostname", "Web.example.com", Deny)]
#[case::hostname_underscore("hostname", "my_web.example.com", Deny)]
#[case::hostname_trailing_dot("hostname", "web.example.com.", Deny)]
#[case::hostname_leading_dash("hostname", "-web.example.com", Deny)]
#[case::hostname_space("hostname", "web .example.com", Deny)]
#[case::hostname_ipv4("hostname", "47.96.1.10", Deny)] // "must be a DNS name, not an IP address"
#[case::hostname_ipv4_zeros("hostname", "0.0.0.0", Deny)]
#[case::hostname_ipv6("hostname", "2001:db8::1", Deny)] // not a subdomain either
#[case::hostname_not_an_ip("hostname", "47.96.1.256", Pass)] // a name to every parser
#[case::hostname_leading_zero_quad("hostname", "047.96.1.10", Pass)] // reading: only the sloppy parser calls it an IP
#[case::hostname_url("hostname", "https://web.example.com", Deny)]
#[case::zone_maps_ignored_by_clb("zone-maps", "bad", Pass)]
fn annotation_format_clb(#[case] key: &str, #[case] value: &str, #[case] want: Expect) {
    let s = lb().port(443, "TCP").pa(Alibaba, key, value);
    let v = expect(&create(s), &cfg(""), "annotation-format", want);
    if want == Deny {
        assert!(v.denial_message().unwrap().contains(key));
    }
}

/// A CLB value the controller puts only in other protocols' listener calls
/// (pkg/provider/alibaba/slb/listener.go:254-470 at eeb0ddc) is still refused as a typo, and
/// the message says it is not used for this Service's protocols (`pp`: protocol-port).
#[rstest]
#[case::sticky_on_tcp("sticky-session", "maybe", "TCP", None, true)] // :330-470 HTTP/HTTPS only
#[case::sticky_on_http("sticky-session", "maybe", "TCP", Some("http:80"), false)]
#[case::cookie_timeout_on_udp("cookie-timeout", "0", "UDP", None, true)]
#[case::cookie_timeout_on_https("cookie-timeout", "0", "TCP", Some("https:80"), false)]
#[case::cookie_timeout_word_on_tcp("cookie-timeout", "ten", "TCP", None, false)] // clbv1/listeners.go:281-288 parses it for every listener
#[case::persistence_on_http("persistence-timeout", "5000", "TCP", Some("http:80"), true)] // :254-302 TCP only
#[case::persistence_on_tcp("persistence-timeout", "5000", "TCP", None, false)]
#[case::drain_on_http("connection-drain", "yes", "TCP", Some("http:80"), true)] // :254-328 TCP/UDP
#[case::drain_on_udp("connection-drain", "yes", "UDP", None, false)]
#[case::scheduler_every_listener("scheduler", "roundrobin", "TCP", None, false)] // :198-253 every listener
fn annotation_format_clb_not_used_for_protocol(
    #[case] key: &str,
    #[case] value: &str,
    #[case] proto: &str,
    #[case] pp: Option<&str>,
    #[case] unused: bool,
) {
    let mut s = lb().port(80, proto).pa(Alibaba, key, value);
    if let Some(pp) = pp {
        s = s.pa(Alibaba, "protocol-port", pp);
    }
    let v = expect(&create(s), &cfg(""), "annotation-format", Deny);
    let m = v.denial_message().unwrap();
    assert!(m.contains(key), "{m}");
    assert_eq!(
        m.contains("is not used for this Service's protocols"),
        unused,
        "{m}"
    );
}

/// NLB (`spec.loadBalancerClass: alibabacloud.com/nlb`) with zone-maps set, ports 80 and 443,
/// as nlbv2 at eeb0ddc decides.
#[rstest]
#[case::tcpssl("protocol-port", "tcpssl:443", Pass)] // nlbv2/listeners.go:631-636, any case
#[case::upper_tcp("protocol-port", "TCP:80", Pass)]
#[case::mixed_case("protocol-port", "TcpSsl:443", Pass)]
#[case::http_is_clbs("protocol-port", "http:80", Deny)] // :631-636 "not supported with [http]"
#[case::no_colon("protocol-port", "TCP80", Deny)] // :626-629
#[case::server_group("vgroup-port", "sgp-atstuj3rtoptyui:80", Pass)] // server_groups.go:1389-1399
#[case::server_group_no_colon("vgroup-port", "sgp-atstuj3rtoptyui", Deny)]
#[case::ip_version_dualstack("ip-version", "DualStack", Pass)] // NLB API
#[case::ip_version_ipv6_is_clbs("ip-version", "ipv6", Deny)]
#[case::cps_ok("cps", "10000", Pass)]
#[case::cps_word("cps", "fast", Deny)] // listeners.go:217-221 "parse Mss error"
#[case::cps_range("cps", "1000001", Deny)] // NLB API 0-1000000
#[case::server_group_type("server-group-type", "ip", Pass)] // server_groups.go:1204-1212 EqualFold
#[case::server_group_type_bad("server-group-type", "eni", Deny)]
#[case::cross_zone("cross-zone-enabled", "On", Pass)] // loadbalancer.go:87-91, ParseFlagType
#[case::cross_zone_bad("cross-zone-enabled", "true", Deny)]
#[case::idle_timeout_nlb_range("idle-timeout", "900", Pass)] // NLB API 10-900 (SDK, CreateListener)
#[case::idle_timeout_nlb_ten("idle-timeout", "10", Pass)]
#[case::idle_timeout_nlb_low("idle-timeout", "9", Deny)]
#[case::idle_timeout_nlb_high("idle-timeout", "901", Deny)]
#[case::range_needs_eni("listener-port-range", "10000-10010:80", Pass)] // backend type unknown: not denied
#[case::range_backwards("listener-port-range", "10010-10000:80", Deny)] // listeners.go:99-101
#[case::range_too_big("listener-port-range", "1-70000:80", Deny)] // :102-104
#[case::range_equal("listener-port-range", "10000-10000:80", Deny)]
#[case::range_no_dash("listener-port-range", "10000:80", Deny)] // :85-89
#[case::range_spaces("listener-port-range", " 10000-10010:80", Deny)] // no TrimSpace
#[case::forward_port_ignored("forward-port", "bad", Pass)] // NLB never reads forward-port
#[case::domain_ext_ignored("domain-extensions", "bad", Pass)] // nlbv2 never reads it
#[case::hostname_ignored("hostname", "47.96.1.10", Pass)] // only clbv1 writes it (service_controller.go:419-424)
#[case::clb_only_sticky_ignored("sticky-session-type", "bogus", Pass)]
fn annotation_format_nlb(#[case] key: &str, #[case] value: &str, #[case] want: Expect) {
    let s = lb()
        .class(NLB)
        .port(443, "TCP")
        .pa(
            Alibaba,
            "zone-maps",
            "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2",
        )
        .pa(Alibaba, key, value);
    let v = expect(&create(s), &cfg(""), "annotation-format", want);
    if want == Deny {
        assert!(v.denial_message().unwrap().contains(key));
    }
}

/// NLB's zone-maps: required unless the Service reuses an NLB (nlbv2/loadbalancer.go:56-58),
/// `zone:vSwitch[:ip[:eip]]` (:639-666).
#[rstest]
#[case::missing(None, None, Deny)]
#[case::missing_but_reused(None, Some("nlb-83ckzc8d4xlp8o"), Pass)]
#[case::two_zones(Some("cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2"), None, Pass)]
#[case::with_ip_and_eip(
    Some("cn-hangzhou-h:vsw-1:10.0.0.5:eip-1,cn-hangzhou-i:vsw-2"),
    None,
    Pass
)]
#[case::no_colon(Some("cn-hangzhou-h=vsw-1"), None, Deny)]
#[case::empty_zone(Some(":vsw-1"), None, Deny)]
#[case::spaces(Some(" cn-hangzhou-h:vsw-1"), None, Deny)]
fn nlb_zone_maps(#[case] zones: Option<&str>, #[case] id: Option<&str>, #[case] want: Expect) {
    let mut s = lb().class(NLB);
    if let Some(z) = zones {
        s = s.pa(Alibaba, "zone-maps", z);
    }
    if let Some(i) = id {
        s = s.pa(Alibaba, "id", i);
    }
    let v = expect(&create(s), &cfg(""), "annotation-format", want);
    if zones.is_none() && want == Deny {
        assert!(
            v.denial_message()
                .unwrap()
                .contains("ParameterMissing, zone mappings are required"),
            "{v:#?}"
        );
    }
}

/// A port range needs the ENI backend (nlbv2/listeners.go:151-154): a Service that names
/// another backend fails; one that names none is left to the cluster's default.
#[rstest]
#[case::eni(Some("eni"), Pass)]
#[case::ecs(Some("ecs"), Deny)]
#[case::unset(None, Pass)]
fn nlb_port_range_backend(#[case] backend: Option<&str>, #[case] want: Expect) {
    let mut s = lb()
        .class(NLB)
        .pa(
            Alibaba,
            "zone-maps",
            "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2",
        )
        .pa(Alibaba, "listener-port-range", "10000-10010:80");
    if let Some(b) = backend {
        s = s.ann(super::nlb::BACKEND_TYPE, b);
    }
    expect(&create(s), &cfg(""), "annotation-format", want);
}

/// The messages quote the controller's error only where it gives that error.
#[test]
fn messages_quote_what_the_controller_says() {
    let msg = |s| {
        run(&create(s), &cfg(""))
            .denial_message()
            .unwrap_or_default()
    };
    let m = msg(lb().pa(Alibaba, "idle-timeout", " 30"));
    assert!(
        m.contains(r#"Annotation IdleTimeout must be integer, but got [ 30]. message=[strconv.Atoi: parsing " 30": invalid syntax]""#),
        "{m}"
    );
    let m = msg(lb().pa(Alibaba, "idle-timeout", "61"));
    assert!(
        !m.contains("strconv"),
        "an in-range parse error is not quoted: {m}"
    );
    let m = msg(lb()
        .class(NLB)
        .pa(
            Alibaba,
            "zone-maps",
            "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2",
        )
        .pa(Alibaba, "protocol-port", "http:80"));
    assert!(
        m.contains("port protocol format must be either [TCP|UDP|TCPSSL], protocol not supported with [http]"),
        "{m}"
    );
    let v = run(
        &create(lb().pa(Alibaba, "protocol-port", "http:8080")),
        &cfg(""),
    );
    assert!(v.allowed(), "{v:#?}");
    assert!(
        v.warnings().iter().any(|w| w.contains("ignores an entry")),
        "{v:#?}"
    );
}

/// Updates keep what the live Service already had, finding by finding (and so does the
/// exported policy, checked on every case).
#[rstest]
#[case::same_bad_entry("protocol-port", "ftp:80", "ftp:80", Warn)]
#[case::adds_bad_entry("protocol-port", "ftp:80", "ftp:80,tcp", Deny)]
#[case::adds_an_ignored_entry("protocol-port", "ftp:80", "ftp:80,tcp:x", Warn)]
#[case::reordered_twice("protocol-port", "http:80,https:80", "https:80,http:80", Warn)]
#[case::same_bad_forward("forward-port", "80-443", "80-443", Warn)]
#[case::adds_bad_forward("forward-port", "80-443", "80-443,81", Deny)]
#[case::same_bad_int("idle-timeout", "30s", "30s", Warn)]
#[case::other_bad_int("idle-timeout", "30s", "40s", Deny)]
#[case::same_missing_port("protocol-port", "http:8080", "http:8080,https:443", Warn)]
#[case::vgroup_same_bad("vgroup-port", "rsp-1", "rsp-1,rsp-2:443", Warn)]
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
        3
    );
}

#[rstest]
#[case::acl_on_with_id(&[("acl-status", "on"), ("acl-id", "acl-1"), ("acl-type", "white")], Pass)]
#[case::acl_on_without_type(&[("acl-status", "on"), ("acl-id", "acl-1")], Deny)]
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

/// The NLB controller reads none of CLB's listener settings (sticky sessions, ACLs).
#[test]
fn dependent_annotations_are_clbs_only() {
    let s = lb()
        .class(NLB)
        .pa(
            Alibaba,
            "zone-maps",
            "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2",
        )
        .pa(Alibaba, "sticky-session", "on");
    expect(&create(s), &cfg(""), "dependent-annotations", Pass);
}

/// NLB compares address-type in any case (pkg/model/nlb/nlb.go:21-29); CLB exactly.
#[rstest]
#[case::nlb_any_case(true, "Internet", Pass)]
#[case::nlb_word(true, "public", Deny)]
#[case::clb_exact(false, "Internet", Deny)]
#[case::clb_ok(false, "intranet", Pass)]
#[case::empty_is_unset(false, "", Pass)]
fn address_type_value_by_controller(#[case] nlb: bool, #[case] v: &str, #[case] want: Expect) {
    let mut s = lb().pa(Alibaba, "address-type", v);
    if nlb {
        s = s.class(NLB).pa(
            Alibaba,
            "zone-maps",
            "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2",
        );
    }
    expect(&create(s), &cfg(""), "address-type-value", want);
}

/// The status hostname's length: 253 characters pass, 254 do not (IsDNS1123Subdomain).
#[rstest]
#[case::at_most(253, Pass)]
#[case::one_past(254, Deny)]
fn hostname_length(#[case] len: usize, #[case] want: Expect) {
    let label = "a".repeat(61);
    let mut name = [label.as_str(); 4].join(".");
    while name.len() < len {
        name.push('b');
    }
    name.truncate(len);
    let s = lb().pa(Alibaba, "hostname", &name);
    expect(&create(s), &cfg(""), "annotation-format", want);
}
