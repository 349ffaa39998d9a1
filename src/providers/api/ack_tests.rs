//! ACK's API rows on whole Services, through the engine and the exported policies
//! (`testkit::expect` compares both): each issue class on both sides of its boundary.

use rstest::rstest;

use crate::providers::Provider::Alibaba;
use crate::testkit::{Expect, Expect::*, cfg, create, expect, lb, policy_says, update};

const NLB: &str = "alibabacloud.com/nlb";
const ZONES: &str = "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2";
const F: &str = "annotation-format";
const D: &str = "dependent-annotations";

/// CLB, one port 80: `proto` as protocol-port names it.
#[rstest]
#[case::uri_ok("tcp", "health-check-uri", "/healthz", F, Pass)]
#[case::uri_no_slash("http", "health-check-uri", "healthz", F, Deny)]
#[case::uri_slash_alone("http", "health-check-uri", "/", F, Deny)]
#[case::uri_81("http", "health-check-uri", &format!("/{}", "a".repeat(80)), F, Deny)]
#[case::uri_80("http", "health-check-uri", &format!("/{}", "a".repeat(79)), F, Pass)]
#[case::uri_udp_unused("udp", "health-check-uri", "healthz", F, Pass)]
#[case::domain_underscore("http", "health-check-domain", "a_b.example.com", F, Deny)]
#[case::domain_ip("http", "health-check-domain", "$_ip", F, Pass)]
#[case::cookie_space("http", "cookie", "a b", F, Deny)]
#[case::cookie_200("http", "cookie", &"c".repeat(200), F, Pass)]
#[case::cookie_201("http", "cookie", &"c".repeat(201), F, Deny)]
#[case::cookie_dollar("http", "cookie", "$c", F, Deny)]
#[case::httpcode_number("http", "health-check-httpcode", "200", F, Deny)]
#[case::httpcode_upper("http", "health-check-httpcode", "HTTP_2XX", F, Deny)]
#[case::httpcode_list("tcp", "health-check-httpcode", "http_2xx,http_3xx", F, Pass)]
#[case::httpcode_space("http", "health-check-httpcode", "http_2xx, http_3xx", F, Pass)]
#[case::cipher_13("https", "tls-cipher-policy", "tls_cipher_policy_1_3", F, Deny)]
#[case::cipher_12("https", "tls-cipher-policy", "tls_cipher_policy_1_2", F, Pass)]
#[case::sch_http("http", "scheduler", "sch", F, Deny)]
#[case::sch_tcp("tcp", "scheduler", "sch", F, Pass)]
#[case::qch_tcp("tcp", "scheduler", "qch", F, Deny)]
#[case::qch_udp("udp", "scheduler", "qch", F, Pass)]
#[case::connect_port_0("tcp", "health-check-connect-port", "0", F, Deny)]
#[case::connect_port_backend("tcp", "health-check-connect-port", "-520", F, Pass)]
#[case::connect_port_1("udp", "health-check-connect-port", "1", F, Pass)]
#[case::name_80("tcp", "name", &"n".repeat(80), F, Pass)]
#[case::name_81("tcp", "name", &"n".repeat(81), F, Deny)]
#[case::acl_without_type("tcp", "acl-status", "on", D, Deny)]
#[case::drain_without_timeout("tcp", "connection-drain", "on", D, Deny)]
#[case::drain_off("tcp", "connection-drain", "off", D, Pass)]
#[case::https_without_cert("https", "protocol-port", "https:80", D, Deny)]
fn clb_rows(
    #[case] proto: &str,
    #[case] key: &str,
    #[case] value: &str,
    #[case] rule: &str,
    #[case] want: Expect,
) {
    let mut s = lb().pa(Alibaba, key, value);
    if key != "protocol-port" {
        s = s.pa(Alibaba, "protocol-port", &format!("{proto}:80"));
    }
    if proto == "https" && key != "protocol-port" {
        s = s.pa(Alibaba, "cert-id", "cert-1");
    }
    expect(&create(s), &cfg(""), rule, want);
}

/// HealthCheckConnectPort: 0 (as Go's Atoi reads it) is never sent (slb/listener.go:233-236),
/// so it is refused as a typo without saying the API refuses it; -1 is sent and refused.
#[rstest]
#[case::zero("0", true)]
#[case::plus_zero("+0", true)]
#[case::minus_one("-1", false)] // in the table's -520..65535, sent, refused by the API
fn clb_connect_port_zero_is_not_sent(#[case] value: &str, #[case] unsent: bool) {
    let s =
        lb().pa(Alibaba, "protocol-port", "tcp:80")
            .pa(Alibaba, "health-check-connect-port", value);
    let v = expect(&create(s), &cfg(""), F, Deny);
    let m = v.denial_message().unwrap();
    assert_eq!(
        m.contains("controller sends no HealthCheckConnectPort for 0"),
        unsent,
        "{m}"
    );
    assert_eq!(m.contains("which the cloud's API refuses"), !unsent, "{m}");
}

/// LoadBalancerSpec (CLB API CreateLoadBalancer: "If InstanceChargeType is set to
/// PayByCLCU, this parameter is invalid"): held to the specs only beside PayBySpec. Without
/// instance-charge-type the controller creates a pay-by-LCU instance (model/load_balancer.go:
/// 41-43, clbv1/loadbalancer.go:417-419), so the spec is not checked then.
#[rstest]
#[case::spec_other_cloud(Some("PayBySpec"), "slb.s9.small", Deny)]
#[case::spec_any_case(Some("paybyspec"), "slb.s9.small", Deny)] // IsPayBySpec: EqualFold
#[case::spec_large(Some("PayBySpec"), "slb.s3.large", Pass)]
#[case::spec_small(Some("PayBySpec"), "slb.s1.small", Pass)]
#[case::lcu(Some("PayByCLCU"), "slb.lcu.elastic", Pass)]
#[case::absent_is_lcu(None, "slb.s9.small", Pass)] // the controller sends PayByCLCU
fn clb_spec(#[case] charge: Option<&str>, #[case] spec: &str, #[case] want: Expect) {
    let mut s = lb().pa(Alibaba, "spec", spec);
    if let Some(c) = charge {
        s = s.pa(Alibaba, "instance-charge-type", c);
    }
    expect(&create(s), &cfg(""), F, want);
}

/// additional-resource-tags on a CLB and an NLB: each `key=value` entry becomes
/// Tag.N.Key/Tag.N.Value of CreateLoadBalancer and TagResources (annotations.go:238-268;
/// CLB: clbv1/loadbalancer.go:271, slb/loadbalancer.go:394-403, clbv1/loadbalancer.go:232-237;
/// NLB: nlbv2/loadbalancer.go:77, nlb/loadbalancer.go:156-164, :583-593); the limits are the
/// same in both APIs' CreateLoadBalancer and TagResources Tag parameters (SDK
/// alibabacloud-slb20140515 3.3.31, alibabacloud-nlb20220430 4.1.3 CreateLoadBalancerRequestTag,
/// TagResourcesRequestTag).
#[rstest]
#[case::plain("team=web,env=prod", Pass)]
#[case::key_only("team", Pass)] // a key alone sends an empty value, which the API takes
#[case::empty_key_skipped("=v,team=web", Pass)] // annotations.go:251-257 sends no empty key
#[case::empty_key_reserved_value_skipped("=acs:x,team=web", Pass)] // nor its value
#[case::empty_key_long_value_skipped(&format!("={}", "v".repeat(129)), Pass)]
#[case::trailing_comma("team=web,", Pass)] // an empty entry has an empty key: skipped
#[case::spaces_trimmed(" team=web , env=prod ", Pass)] // annotations.go:242, :248 trim
#[case::key_64(&format!("{}=v", "k".repeat(64)), Pass)] // Key: at most 64 characters
#[case::key_65(&format!("{}=v", "k".repeat(65)), Deny)]
#[case::key_aliyun("aliyun-team=web", Deny)] // Key: must not start with aliyun
#[case::key_acs("acs:team=web", Deny)] // Key: must not start with acs:
#[case::key_aliyun_inside("my-aliyun=web", Pass)] // only the start is reserved
#[case::key_http("http://x=web", Deny)] // Key: must not contain http://
#[case::value_128(&format!("k={}", "v".repeat(128)), Pass)] // Value: at most 128 characters
#[case::value_129(&format!("k={}", "v".repeat(129)), Deny)]
#[case::value_acs("k=acs:web", Deny)] // Value: must not start with acs:
#[case::value_aliyun("env=prod,k=aliyun", Deny)] // Value: must not start with aliyun
#[case::value_https("k=https://example.com", Deny)] // Value: must not contain https://
fn tags(#[case] value: &str, #[case] want: Expect, #[values(false, true)] nlb: bool) {
    let mut s = lb().pa(Alibaba, "additional-resource-tags", value);
    if nlb {
        s = s.class(NLB).pa(Alibaba, "zone-maps", ZONES);
    }
    expect(&create(s), &cfg(""), F, want);
}

/// `n` distinct tags, then `more`.
fn tag_list(n: usize, more: &str) -> String {
    (0..n)
        .map(|i| format!("k{i}=v"))
        .chain((!more.is_empty()).then(|| more.to_string()))
        .collect::<Vec<_>>()
        .join(",")
}

/// How many tags: a load balancer the controller creates carries its two tags besides the
/// Service's, and the API takes at most 20 a call and 20 on a resource (CreateLoadBalancer,
/// TagResources); keys named twice are one tag to the controller (annotations.go:238-268) and
/// not counted; a reused load balancer (id) is not checked.
#[rstest]
#[case::keys_18(tag_list(18, ""), false, Pass)]
#[case::keys_19(tag_list(19, ""), false, Deny)]
#[case::keys_19_one_repeated(tag_list(18, "k0=w"), false, Pass)]
#[case::keys_19_controller_key(tag_list(18, "ack.aliyun.com=c"), false, Pass)]
#[case::keys_18_and_keyless(tag_list(18, "=x, ,"), false, Pass)]
#[case::keys_25_reused(tag_list(25, ""), true, Pass)]
fn tag_count(
    #[case] value: String,
    #[case] reused: bool,
    #[case] want: Expect,
    #[values(false, true)] nlb: bool,
) {
    let mut s = lb().pa(Alibaba, "additional-resource-tags", &value);
    if nlb {
        s = s.class(NLB).pa(Alibaba, "zone-maps", ZONES);
    }
    if reused {
        s = s.pa(Alibaba, "id", if nlb { "nlb-1" } else { "lb-1" });
    }
    expect(&create(s), &cfg(""), F, want);
}

/// CreateLoadBalancer Address: the CLB's private IP address; a value that is no IP address is
/// refused, any IPv4 or IPv6 form passes; a reused CLB (id) gets no CreateLoadBalancer.
#[rstest]
#[case::ipv4("192.168.0.10", false, Pass)]
#[case::ipv4_leading_zeros("192.168.000.010", false, Pass)]
#[case::ipv6("2001:db8::1", false, Pass)]
#[case::word("vip-1", false, Deny)]
#[case::octet_256("10.0.0.256", false, Deny)]
#[case::three_octets("10.0.0", false, Deny)]
#[case::leading_space(" 10.0.0.1", false, Deny)]
#[case::word_reused("vip-1", true, Pass)]
fn clb_address(#[case] value: &str, #[case] reused: bool, #[case] want: Expect) {
    let mut s = lb()
        .pa(Alibaba, "address-type", "intranet")
        .pa(Alibaba, "ip", value);
    if reused {
        s = s.pa(Alibaba, "id", "lb-1");
    }
    expect(&create(s), &cfg(""), F, want);
}

/// charge-type with instance-charge-type on a CLB: a pay-by-LCU instance takes only
/// paybytraffic as InternetChargeType (CLB API CreateLoadBalancer, and
/// ModifyLoadBalancerInstanceChargeType for the update; SDK alibabacloud-slb20140515 3.3.31);
/// the controller sends both (slb/loadbalancer.go:350-352, :371-373).
#[rstest]
#[case::lcu_bandwidth(&[("instance-charge-type", "PayByCLCU"), ("charge-type", "paybybandwidth")], Deny)]
#[case::lcu_traffic(&[("instance-charge-type", "PayByCLCU"), ("charge-type", "paybytraffic")], Pass)]
#[case::lcu_lower_case(&[("instance-charge-type", "paybyclcu"), ("charge-type", "paybybandwidth")], Deny)] // clbv1/loadbalancer.go:417-419 EqualFold
#[case::spec_bandwidth(&[("instance-charge-type", "PayBySpec"), ("charge-type", "paybybandwidth")], Pass)]
#[case::absent_bandwidth(&[("charge-type", "paybybandwidth")], Pass)] // reading: InstanceChargeType is China-site only
fn clb_lcu_charge_type(#[case] anns: &[(&str, &str)], #[case] want: Expect) {
    let s = anns.iter().fold(lb(), |s, (k, v)| s.pa(Alibaba, k, v));
    expect(&create(s), &cfg(""), F, want);
}

/// NLB, one TCP port 80 unless protocol-port says otherwise.
#[rstest]
#[case::name_1(&[("name", "n")], F, Deny)]
#[case::name_2(&[("name", "nn")], F, Pass)]
#[case::name_129(&[("name", &*"n".repeat(129))], F, Deny)]
#[case::name_128(&[("name", &*"n".repeat(128))], F, Pass)]
// CreateLoadBalancer/UpdateLoadBalancerAttribute: starts with an ASCII letter or a Chinese
// character, then those, digits, '.', '_' and '-' (the Chinese pages add Chinese characters).
#[case::name_chars(&[("name", "Web.nlb_1-a")], F, Pass)]
#[case::name_chinese(&[("name", "负载均衡-1")], F, Pass)]
#[case::name_digit_first(&[("name", "1nlb")], F, Deny)]
#[case::name_hyphen_first(&[("name", "-nlb")], F, Deny)]
#[case::name_space(&[("name", "my nlb")], F, Deny)]
#[case::name_at(&[("name", "nlb@1")], F, Deny)]
#[case::name_accent(&[("name", "nlbé")], F, Deny)] // 英文字母: ASCII letters
#[case::one_zone(&[("zone-maps", "cn-hangzhou-h:vsw-1")], F, Deny)]
#[case::same_zone_twice(&[("zone-maps", "cn-hangzhou-h:vsw-1,cn-hangzhou-h:vsw-2")], F, Deny)]
#[case::empty_security_group(&[("security-group-ids", "sg-1,,sg-2")], F, Deny)]
#[case::security_groups(&[("security-group-ids", "sg-1,sg-2")], F, Pass)]
// CreateServerGroup: the API reference page's 10-900 (issue #39 saw the API refuse below 10).
#[case::drain_0(&[("connection-drain", "on"), ("connection-drain-timeout", "0")], F, Deny)] // API page 10-900
#[case::drain_9(&[("connection-drain", "on"), ("connection-drain-timeout", "9")], F, Deny)]
#[case::drain_10(&[("connection-drain", "on"), ("connection-drain-timeout", "10")], F, Pass)]
#[case::drain_900(&[("connection-drain", "On"), ("connection-drain-timeout", "900")], F, Pass)]
#[case::drain_901(&[("connection-drain", "on"), ("connection-drain-timeout", "901")], F, Deny)]
#[case::drain_off_0(&[("connection-drain", "off"), ("connection-drain-timeout", "0")], F, Pass)]
// servergroup.go:290-293 sends 0 for an absent timeout, which 10-900 refuses.
#[case::drain_no_timeout(&[("connection-drain", "on")], D, Deny)] // the controller sends 0
#[case::httpcode_no_space(&[("health-check-flag", "on"), ("health-check-httpcode", "http_2xx,http_3xx")], F, Pass)]
#[case::httpcode_space(&[("health-check-flag", "on"), ("health-check-httpcode", "http_2xx, http_3xx")], F, Deny)]
#[case::httpcode_flag_off(&[("health-check-flag", "off"), ("health-check-httpcode", "200")], F, Pass)]
#[case::cipher_13(&[("tls-cipher-policy", "tls_cipher_policy_1_3")], F, Deny)]
#[case::cipher_custom(&[("tls-cipher-policy", "spy-abc123")], F, Pass)]
#[case::tcpssl_without_cert(&[("protocol-port", "tcpssl:80")], D, Deny)]
#[case::tcpssl_with_cert(&[("protocol-port", "TCPSSL:80"), ("cert-id", "c-1")], D, Pass)]
// CreateServerGroup/UpdateServerGroupAttribute: qch only for UDP backends (the server group
// takes its listener's protocol, nlbv2/server_groups.go:87).
#[case::qch_tcp(&[("scheduler", "qch")], F, Deny)]
#[case::qch_tcpssl(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1"), ("scheduler", "QCH")], F, Deny)]
#[case::qch_udp(&[("protocol-port", "udp:80"), ("scheduler", "qch")], F, Pass)]
#[case::tch_tcp(&[("scheduler", "tch")], F, Pass)]
#[case::wrr_tcp(&[("scheduler", "wrr")], F, Pass)]
// The controller compares scheduler, check type and method with the cloud's in any case
// (nlbv2/server_groups.go:325-326, :380-381, :436-437): the API takes them in any case. Codes
// (IsStringSliceEqual, :443-444) and SecurityPolicyId (listeners.go:450-451) exactly.
#[case::wrr_api_case(&[("scheduler", "Wrr")], F, Pass)]
#[case::wlc_upper(&[("scheduler", "WLC")], F, Pass)]
#[case::cipher_upper(&[("tls-cipher-policy", "TLS_CIPHER_POLICY_1_2")], F, Deny)]
#[case::httpcode_upper(&[("health-check-flag", "on"), ("health-check-httpcode", "HTTP_2XX")], F, Deny)]
// CreateListener/UpdateListenerAttribute pages: only one server certificate, only one CA
// certificate; nlbv2/listeners.go:208-213 splits both on ','.
#[case::two_certs(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1,c-2")], F, Deny)]
#[case::one_cert(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1")], F, Pass)]
#[case::two_certs_tcp(&[("cert-id", "c-1,c-2")], F, Pass)]
// CreateListener/UpdateListenerAttribute: AlpnPolicy is required with AlpnEnabled true; the
// controller sends alpn on (any case) with an empty policy, TCPSSL listeners only
// (nlbv2/listeners.go:235-242, nlb/listener.go:183-186).
#[case::alpn_without_policy(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1"), ("alpn", "on")], D, Deny)]
#[case::alpn_upper_without_policy(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1"), ("alpn", "On")], D, Deny)]
#[case::alpn_empty_policy(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1"), ("alpn", "on"), ("alpn-policy", "")], D, Deny)]
#[case::alpn_with_policy(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1"), ("alpn", "on"), ("alpn-policy", "HTTP2Optional")], D, Pass)]
#[case::alpn_off(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1"), ("alpn", "off")], D, Pass)]
#[case::alpn_tcp_unused(&[("alpn", "on")], D, Pass)]
#[case::two_ca_certs(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1"), ("cacert-id", "ca-1,ca-2")], F, Deny)]
#[case::one_ca_cert(&[("protocol-port", "tcpssl:80"), ("cert-id", "c-1"), ("cacert-id", "ca-1")], F, Pass)]
// CreateServerGroup (SDK 4.1.3): interval 1-50 for TCP and HTTP checks, 1-300 for UDP.
#[case::interval_tcp_50(&[("health-check-flag", "on"), ("health-check-type", "tcp"), ("health-check-interval", "50")], F, Pass)]
#[case::interval_tcp_51(&[("health-check-flag", "on"), ("health-check-type", "TCP"), ("health-check-interval", "51")], F, Deny)]
#[case::interval_http_51(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-interval", "51")], F, Deny)]
#[case::interval_udp_300(&[("health-check-flag", "on"), ("health-check-type", "udp"), ("health-check-interval", "300")], F, Pass)]
#[case::interval_no_type(&[("health-check-flag", "on"), ("health-check-interval", "51")], F, Pass)]
#[case::interval_flag_off(&[("health-check-flag", "off"), ("health-check-type", "tcp"), ("health-check-interval", "51")], F, Pass)]
// Create/UpdateServerGroupAttribute (SDK 4.1.3): URL 1-80, starts with '/', letters, digits,
// - / . % ? # & (Update adds = _ ; ~ ! ( ) * [ ] @ $ ^ : " , +); domain $SERVER_IP or 1-80
// of letters, digits, '-', '.'; HTTP checks only.
#[case::url_ok(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-uri", "/healthz?a#b")], F, Pass)]
#[case::url_update_chars(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-uri", "/a=b_c;d~(e)[f]@g:h,i+j")], F, Pass)]
#[case::url_space(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-uri", "/a b")], F, Deny)]
#[case::url_no_slash(&[("health-check-flag", "on"), ("health-check-type", "HTTP"), ("health-check-uri", "healthz")], F, Deny)]
#[case::url_80(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-uri", &*format!("/{}", "a".repeat(79)))], F, Pass)]
#[case::url_81(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-uri", &*format!("/{}", "a".repeat(80)))], F, Deny)]
#[case::url_tcp_check(&[("health-check-flag", "on"), ("health-check-type", "tcp"), ("health-check-uri", "healthz")], F, Pass)]
#[case::domain_server_ip(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-domain", "$SERVER_IP")], F, Pass)]
#[case::domain_underscore(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-domain", "a_b.example.com")], F, Deny)]
#[case::domain_clb_ip(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-domain", "$_ip")], F, Deny)]
#[case::domain_81(&[("health-check-flag", "on"), ("health-check-type", "http"), ("health-check-domain", &*"d".repeat(81))], F, Deny)]
#[case::domain_flag_off(&[("health-check-flag", "off"), ("health-check-type", "http"), ("health-check-domain", "a_b")], F, Pass)]
// CreateListener/UpdateListenerAttribute IdleTimeout: 10-900 s for TCP and TCPSSL, 10-20 s for
// UDP; nlbv2/listeners.go:194-200 sets it on every listener.
#[case::idle_udp_10(&[("protocol-port", "udp:80"), ("idle-timeout", "10")], F, Pass)]
#[case::idle_udp_20(&[("protocol-port", "udp:80"), ("idle-timeout", "20")], F, Pass)]
#[case::idle_udp_21(&[("protocol-port", "udp:80"), ("idle-timeout", "21")], F, Deny)]
#[case::idle_tcp_21(&[("idle-timeout", "21")], F, Pass)]
// Kept as Go int32(...) (nlbv2/listeners.go:199, server_groups.go:1223, :1284): the range
// holds the 32-bit number sent; 2^32 + 10 is sent as 10.
#[case::idle_wraps_to_10(&[("idle-timeout", "4294967306")], F, Pass)]
#[case::idle_wraps_to_9(&[("idle-timeout", "4294967305")], F, Deny)]
#[case::idle_udp_wraps_to_21(&[("protocol-port", "udp:80"), ("idle-timeout", "4294967317")], F, Deny)]
#[case::cps_wraps_to_0(&[("cps", "4294967296")], F, Pass)]
#[case::drain_wraps_to_10(&[("connection-drain", "on"), ("connection-drain-timeout", "4294967306")], F, Pass)]
#[case::drain_wraps_to_9(&[("connection-drain", "on"), ("connection-drain-timeout", "4294967305")], F, Deny)]
#[case::interval_wraps_to_5(&[("health-check-flag", "on"), ("health-check-type", "tcp"), ("health-check-interval", "4294967301")], F, Pass)]
#[case::interval_wraps_to_51(&[("health-check-flag", "on"), ("health-check-type", "tcp"), ("health-check-interval", "4294967347")], F, Deny)]
// 19 digits (CEL's 18-digit number pattern had refused them): Go's Atoi reads up to 2^63 - 1,
// (2^31 - 1) * 2^32 + 10 is sent as 10; past int64 Atoi fails.
#[case::idle_19_digits_wraps_to_10(&[("idle-timeout", "9223372032559808522")], F, Pass)]
#[case::idle_19_digits_wraps_to_9(&[("idle-timeout", "9223372032559808521")], F, Deny)]
#[case::idle_19_digits_signed(&[("idle-timeout", "+009223372032559808522")], F, Pass)]
#[case::idle_int64_max(&[("idle-timeout", "9223372036854775807")], F, Deny)] // sent as -1
#[case::idle_past_int64(&[("idle-timeout", "9223372036854775808")], F, Deny)]
#[case::idle_past_int64_min(&[("idle-timeout", "-9223372036854775809")], F, Deny)]
#[case::cps_19_digits_wraps_to_0(&[("cps", "9223372032559808512")], F, Pass)]
#[case::cps_int64_min(&[("cps", "-9223372036854775808")], F, Pass)] // sent as 0
#[case::cps_past_int64(&[("cps", "9223372036854775808")], F, Deny)]
fn nlb_rows(#[case] anns: &[(&str, &str)], #[case] rule: &str, #[case] want: Expect) {
    let mut s = lb().class(NLB);
    if !anns.iter().any(|(k, _)| *k == "zone-maps") {
        s = s.pa(Alibaba, "zone-maps", ZONES);
    }
    let s = anns.iter().fold(s, |s, (k, v)| s.pa(Alibaba, k, v));
    expect(&create(s), &cfg(""), rule, want);
}

/// NLB numbers the controller keeps as Go int32 and sends only when not 0: a wrapped value is
/// refused for the number it becomes, 0 as a typo (nlb/listener.go:188-190,
/// nlb/servergroup.go:314-328), and neither message says the API refuses what it never gets.
#[rstest]
#[case::idle_zero(&[("idle-timeout", "0")], "sends nothing for 0")]
#[case::interval_zero(&[("health-check-flag", "on"), ("health-check-interval", "0")], "sends nothing for 0")]
#[case::idle_wraps_to_zero(&[("idle-timeout", "4294967296")], "sends nothing for 0")]
#[case::idle_int64_min(&[("idle-timeout", "-9223372036854775808")], "sends nothing for 0")]
#[case::idle_wrapped(&[("idle-timeout", "4294967305")], "sends 9")]
#[case::drain_wrapped(&[("connection-drain", "on"), ("connection-drain-timeout", "4294967305")], "sends 9, which is outside 10 to 900")]
fn nlb_number_messages(#[case] anns: &[(&str, &str)], #[case] says: &str) {
    let s = lb().class(NLB).pa(Alibaba, "zone-maps", ZONES);
    let s = anns.iter().fold(s, |s, (k, v)| s.pa(Alibaba, k, v));
    let v = expect(&create(s), &cfg(""), F, Deny);
    let m = v.denial_message().unwrap();
    assert!(m.contains(says), "{m}");
    if says.starts_with("sends nothing") {
        assert!(!m.contains("API refuses"), "{m}");
    }
}

/// The exported policies say what the webhook says of a number a controller sends as 0 (an
/// NLB Go int32, or CLB HealthCheckConnectPort: slb/listener.go:233-236): it sends nothing, so
/// the value is refused as a typo, never as the API's; a number it does send is not a typo.
#[rstest]
#[case::idle_zero(true, &[("idle-timeout", "0")], true)]
#[case::idle_plus_zero(true, &[("idle-timeout", "+00")], true)]
#[case::idle_wraps_to_zero(true, &[("idle-timeout", "4294967296")], true)]
#[case::idle_19_digits_to_zero(true, &[("idle-timeout", "9223372032559808512")], true)]
#[case::interval_zero(true, &[("health-check-flag", "on"), ("health-check-interval", "0")], true)]
#[case::idle_9(true, &[("idle-timeout", "9")], false)]
#[case::idle_word(true, &[("idle-timeout", "ten")], false)]
#[case::clb_connect_port_zero(false, &[("protocol-port", "tcp:80"), ("health-check-connect-port", "0")], true)]
#[case::clb_connect_port_minus_one(false, &[("protocol-port", "tcp:80"), ("health-check-connect-port", "-1")], false)]
fn zero_policy_message(#[case] nlb: bool, #[case] anns: &[(&str, &str)], #[case] typo: bool) {
    let s = if nlb {
        lb().class(NLB).pa(Alibaba, "zone-maps", ZONES)
    } else {
        lb()
    };
    let input = create(anns.iter().fold(s, |s, (k, v)| s.pa(Alibaba, k, v)));
    let v = expect(&input, &cfg(""), F, Deny);
    let mut said = policy_says(&input, &cfg(""), F);
    assert!(!said.is_empty());
    said.push(v.denial_message().unwrap());
    for m in &said {
        assert_eq!(m.contains("refused as a typo"), typo, "{m}");
        if typo {
            assert!(!m.contains("API refuses"), "{m}");
        }
    }
}

/// CLB LoadBalancerSpec on a reused CLB: the controller updates a reused CLB's spec as its
/// own (clbv1/model_applier.go:69-79, clbv1/loadbalancer.go:157, :451-491:
/// ModifyLoadBalancerInstanceSpec), so the row holds with an id too.
#[rstest]
#[case::reused_bad_spec(Some("PayBySpec"), "slb.s9.small", Deny)]
#[case::reused_spec(Some("PayBySpec"), "slb.s2.medium", Pass)]
#[case::reused_lcu(None, "slb.s9.small", Pass)]
fn clb_spec_reused(#[case] charge: Option<&str>, #[case] spec: &str, #[case] want: Expect) {
    let mut s = lb().pa(Alibaba, "id", "lb-1").pa(Alibaba, "spec", spec);
    if let Some(c) = charge {
        s = s.pa(Alibaba, "instance-charge-type", c);
    }
    expect(&create(s), &cfg(""), F, want);
}

/// A reused NLB gets no ZoneMappings from the controller.
#[test]
fn reused_nlb_zones_are_not_checked() {
    let s =
        lb().class(NLB)
            .pa(Alibaba, "id", "nlb-1")
            .pa(Alibaba, "zone-maps", "cn-hangzhou-h:vsw-1");
    expect(&create(s), &cfg(""), F, Pass);
}

/// forward-port (clbv1/listeners.go:224-233): an HTTP listener's target must be HTTPS.
#[rstest]
#[case::to_https(&[(80, "http"), (443, "https")], "80:443", None, Pass)]
#[case::to_tcp(&[(80, "http"), (443, "tcp")], "80:443", None, Deny)]
#[case::to_nothing(&[(80, "http")], "80:443", None, Deny)]
#[case::to_nothing_reused(&[(80, "http")], "80:443", Some("lb-1"), Pass)]
#[case::not_http(&[(80, "tcp")], "80:443", None, Pass)]
#[case::other_http_port(&[(80, "http"), (443, "https")], "81:8443", None, Pass)]
fn clb_forward_target(
    #[case] ports: &[(i32, &str)],
    #[case] value: &str,
    #[case] id: Option<&str>,
    #[case] want: Expect,
) {
    let pp: Vec<String> = ports.iter().map(|(p, x)| format!("{x}:{p}")).collect();
    let mut s = lb().only_port(ports[0].0, "TCP");
    for (p, _) in &ports[1..] {
        s = s.port(*p, "TCP");
    }
    s = s
        .pa(Alibaba, "protocol-port", &pp.join(","))
        .pa(Alibaba, "forward-port", value)
        .pa(Alibaba, "cert-id", "cert-1");
    if let Some(id) = id {
        s = s.pa(Alibaba, "id", id);
    }
    expect(&create(s), &cfg(""), F, want);
}

/// The transitions an update shows: removing cert-id while an HTTPS port stays (the
/// controller sends an empty certificate id on every retry), removing ip-version: ipv6
/// from a CLB Service (absent is ipv4: clbv1/loadbalancer.go:140-141, :369-378).
#[rstest]
#[case::cert_removed(&[("protocol-port", "https:80"), ("cert-id", "c-1")], &[("protocol-port", "https:80")], D, Deny)]
#[case::cert_removed_with_the_https_port(&[("protocol-port", "https:80"), ("cert-id", "c-1")], &[("protocol-port", "http:80")], D, Pass)]
#[case::ipv6_removed(&[("ip-version", "ipv6")], &[], "lb-attributes-immutable", Deny)]
#[case::ipv6_emptied(&[("ip-version", "ipv6")], &[("ip-version", "")], "lb-attributes-immutable", Deny)]
#[case::ipv4_removed(&[("ip-version", "ipv4")], &[], "lb-attributes-immutable", Pass)]
#[case::ipv6_kept(&[("ip-version", "ipv6")], &[("ip-version", "ipv6")], "lb-attributes-immutable", Pass)]
fn clb_transitions(
    #[case] old: &[(&str, &str)],
    #[case] new: &[(&str, &str)],
    #[case] rule: &str,
    #[case] want: Expect,
) {
    let build = |anns: &[(&str, &str)]| anns.iter().fold(lb(), |s, (k, v)| s.pa(Alibaba, k, v));
    expect(&update(build(old), build(new)), &cfg(""), rule, want);
}

#[test]
fn nlb_ipv6_removal_is_not_the_clb_rule() {
    let build = |v: Option<&str>| {
        let s = lb().class(NLB).pa(Alibaba, "zone-maps", ZONES);
        match v {
            Some(v) => s.pa(Alibaba, "ip-version", v),
            None => s,
        }
    };
    let input = update(build(Some("ipv6")), build(None));
    expect(&input, &cfg(""), "lb-attributes-immutable", Pass);
}
