use rstest::rstest;

use super::skip_listener_supported;
use crate::providers::Provider::Huawei;
use crate::testkit::{Expect, Expect::*, SvcBuilder, cfg, create, expect, lb, update, update_by};

const V: &str = "cluster:\n  version: v1.31.14-r50\n";

fn skip() -> SvcBuilder {
    lb().pa(Huawei, "class", "performance")
        .pa(Huawei, "id", "elb-1")
        .pa(Huawei, "skip-managed-listener", "true")
}

#[rstest]
#[case::stays_true(Some("true"), Pass)]
#[case::set_false(Some("false"), Deny)]
#[case::removed(None, Deny)]
fn skip_listener_irreversible(#[case] new: Option<&str>, #[case] want: Expect) {
    let mut n = lb()
        .pa(Huawei, "class", "performance")
        .pa(Huawei, "id", "elb-1");
    if let Some(v) = new {
        n = n.pa(Huawei, "skip-managed-listener", v);
    }
    expect(
        &update(skip(), n),
        &cfg(V),
        "skip-listener-irreversible",
        want,
    );
}

#[test]
fn skip_listener_can_be_turned_on_later() {
    let old = lb()
        .pa(Huawei, "class", "performance")
        .pa(Huawei, "id", "elb-1");
    expect(
        &update(old, skip()),
        &cfg(V),
        "skip-listener-irreversible",
        Pass,
    );
}

#[rstest]
#[case::existing(skip(), Pass)]
#[case::no_id(lb().pa(Huawei, "skip-managed-listener", "true"), Deny)]
#[case::autocreate(skip().pa(Huawei, "autocreate", r#"{"type":"inner"}"#), Deny)]
#[case::not_skipping(lb().pa(Huawei, "autocreate", r#"{"type":"inner"}"#), Pass)]
fn skip_listener_needs_existing_elb(#[case] s: SvcBuilder, #[case] want: Expect) {
    expect(
        &create(s),
        &cfg(V),
        "skip-listener-needs-existing-elb",
        want,
    );
}

#[rstest]
#[case::alone(skip(), Pass)]
#[case::with_multicluster(skip().pa(Huawei, "multicluster", "true"), Deny)]
fn skip_listener_not_multicluster(#[case] s: SvcBuilder, #[case] want: Expect) {
    expect(&create(s), &cfg(V), "skip-listener-not-multicluster", want);
}

#[rstest]
#[case("v1.29.15-r90", true)]
#[case("v1.29.15-r89", false)]
#[case("v1.29.15", false)]
#[case("v1.29.16", true)]
#[case("v1.30.14-r90", true)]
#[case("v1.30.14-r9", false)]
#[case("v1.31.14-r50", true)]
#[case("v1.32.13-r20-32.0.5", true)]
#[case("v1.32.13-r19", false)]
#[case("v1.33.12", true)]
#[case("v1.34.7-r99", false)]
#[case("v1.35.5-r0", true)]
#[case("v1.36.1-r9", false)]
#[case("v1.36.1-r10", true)]
#[case("v1.37.0", true)]
#[case("v1.28.99-r999", false)]
#[case("v2.0.0", true)]
fn skip_listener_version_table(#[case] v: &str, #[case] ok: bool) {
    assert_eq!(skip_listener_supported(&v.parse().unwrap()), ok, "{v}");
}

#[rstest]
#[case::supported("v1.33.12-r0", Pass)]
#[case::too_old("v1.29.15-r80", Deny)]
fn skip_listener_version(#[case] version: &str, #[case] want: Expect) {
    let config = cfg(&format!("cluster:\n  version: {version}\n"));
    expect(&create(skip()), &config, "skip-listener-version", want);
}

const CCM: &str = "ccm:\n  users: [ccm]\n";

#[rstest]
#[case::create_plain(None, lb().pa(Huawei, "id", "e"), "alice", Pass)]
#[case::create_with_port(None, lb().pa(Huawei, "listener-port", "80"), "alice", Deny)]
#[case::create_with_ranges(None, lb().pa(Huawei, "listener-port-ranges-auto-generated", "x"), "alice", Deny)]
#[case::update_kept(Some(skip().pa(Huawei, "listener-port", "80")), skip().pa(Huawei, "listener-port", "80"), "alice", Pass)]
#[case::update_removed(Some(skip().pa(Huawei, "listener-port", "80")), skip(), "alice", Deny)]
#[case::update_changed(Some(skip().pa(Huawei, "listener-port", "80")), skip().pa(Huawei, "listener-port", "81"), "alice", Deny)]
#[case::ccm_adds(Some(skip()), skip().pa(Huawei, "listener-port", "80"), "ccm", Pass)]
fn system_annotations_reserved(
    #[case] old: Option<SvcBuilder>,
    #[case] new: SvcBuilder,
    #[case] who: &str,
    #[case] want: Expect,
) {
    let input = match old {
        None => create(new),
        Some(o) => update_by(o, new, who),
    };
    expect(
        &input,
        &cfg(&format!("{V}{CCM}")),
        "system-annotations-reserved",
        want,
    );
}

#[test]
fn system_annotations_without_ccm_identity_warn_on_update() {
    let input = update(skip(), skip().pa(Huawei, "listener-port", "80"));
    expect(&input, &cfg(V), "system-annotations-reserved", Warn);
}

/// Updates keep what the live Service already had, finding by finding (the exported policy
/// is held to the same).
#[rstest]
#[case::same_bad("http:8080", "http:8080", "TCP", "TCP", Warn)]
#[case::adds_bad("http:8080", "http:8080,ftp:443", "TCP", "TCP", Deny)]
#[case::protocol_of_another_port_changed("udp:80", "udp:80", "TCP", "UDP", Warn)]
#[case::same_twice("http:80,https:80", "https:80,http:80", "TCP", "TCP", Warn)]
#[case::fixed("http:8080", "http:80", "TCP", "TCP", Pass)]
fn protocol_port_format_ratchets_per_finding(
    #[case] old: &str,
    #[case] new: &str,
    #[case] old_proto_53: &str,
    #[case] new_proto_53: &str,
    #[case] want: Expect,
) {
    let svc = |value: &str, proto: &str| {
        lb().port(443, "TCP")
            .port(53, proto)
            .pa(Huawei, "protocol-port", value)
            .pa(Huawei, "cert-id", "c1")
    };
    expect(
        &update(svc(old, old_proto_53), svc(new, new_proto_53)),
        &cfg(V),
        "protocol-port-format",
        want,
    );
}

#[rstest]
#[case::ok("https:443,http:80", Pass)]
#[case::tls("tls:443", Pass)]
#[case::udp_on_udp_port("udp:53", Pass)]
#[case::udp_on_tcp_port("udp:80", Deny)]
#[case::tcp_on_udp_port("tcp:53", Deny)]
#[case::not_a_service_port("http:8080", Deny)]
#[case::bad_proto("HTTP:80", Deny)]
#[case::no_colon("http", Deny)]
#[case::not_a_number("http:eighty", Deny)]
#[case::twice("http:80,https:80", Deny)]
#[case::spaces(" https : 443 , http:80 ", Pass)]
#[case::plus_sign("http:+80", Pass)]
#[case::two_colons("http:80:1", Deny)]
#[case::empty_entry("http:80,", Deny)]
#[case::zero("http:0", Deny)]
#[case::negative("http:-80", Deny)]
#[case::huge("http:80000000000", Deny)]
#[case::bad_proto_and_port("ftp:x", Deny)]
fn protocol_port_format(#[case] value: &str, #[case] want: Expect) {
    let s = lb()
        .port(443, "TCP")
        .port(53, "UDP")
        .pa(Huawei, "protocol-port", value)
        .pa(Huawei, "cert-id", "c1");
    expect(&create(s), &cfg(V), "protocol-port-format", want);
}

#[rstest]
#[case::https_with_cert("https:443", Some("cert-1"), Pass)]
#[case::https_without_cert("https:443", None, Deny)]
#[case::http_without_cert("http:443", None, Pass)]
fn https_needs_cert(#[case] value: &str, #[case] cert: Option<&str>, #[case] want: Expect) {
    let mut s = lb()
        .only_port(443, "TCP")
        .pa(Huawei, "protocol-port", value);
    if let Some(c) = cert {
        s = s.pa(Huawei, "cert-id", c);
    }
    expect(&create(s), &cfg(V), "https-needs-cert", want);
}

#[rstest]
#[case::new_enough("v1.19.16", "http:80", Pass)]
#[case::too_old("v1.19.10", "http:80", Deny)]
#[case::tcp_on_old("v1.15.0", "tcp:80", Pass)]
fn http_version(#[case] version: &str, #[case] value: &str, #[case] want: Expect) {
    let s = lb().pa(Huawei, "protocol-port", value);
    let config = cfg(&format!("cluster:\n  version: {version}\n"));
    expect(&create(s), &config, "http-version", want);
}

#[rstest]
#[case::v1_17("v1.17.0", "performance", Pass)]
#[case::v1_16("v1.16.9", "performance", Deny)]
#[case::shared_on_old("v1.16.9", "union", Pass)]
fn dedicated_elb_version(#[case] version: &str, #[case] class: &str, #[case] want: Expect) {
    let s = lb().pa(Huawei, "id", "e").pa(Huawei, "class", class);
    let config = cfg(&format!("cluster:\n  version: {version}\n"));
    expect(&create(s), &config, "dedicated-elb-version", want);
}

#[rstest]
#[case::v1_16("v1.16.0", Pass)]
#[case::v1_15("v1.15.11", Deny)]
fn pass_through_version(#[case] version: &str, #[case] want: Expect) {
    let s = lb()
        .pa(Huawei, "id", "e")
        .pa(Huawei, "pass-through", "true");
    let config = cfg(&format!("cluster:\n  version: {version}\n"));
    expect(&create(s), &config, "pass-through-version", want);
}

#[rstest]
#[case::stays_cluster("Cluster", "Cluster", Pass)]
#[case::to_local("Cluster", "Local", Warn)]
#[case::to_cluster("Local", "Cluster", Pass)]
fn traffic_policy_change(#[case] old: &str, #[case] new: &str, #[case] want: Expect) {
    let base = lb()
        .pa(Huawei, "id", "e")
        .pa(Huawei, "pass-through", "true");
    expect(
        &update(base.clone().etp(old), base.etp(new)),
        &cfg(V),
        "traffic-policy-change",
        want,
    );
}

#[rstest]
#[case::turbo_cluster("turbo", "Cluster", Pass)]
#[case::turbo_local("turbo", "Local", Deny)]
#[case::standard_local("standard", "Local", Pass)]
fn turbo_cluster_policy(#[case] flavor: &str, #[case] etp: &str, #[case] want: Expect) {
    let s = lb().pa(Huawei, "id", "e").etp(etp);
    let config = cfg(&format!("{V}  flavor: {flavor}\n"));
    expect(&create(s), &config, "turbo-cluster-policy", want);
}

fn cert_ids(n: usize) -> String {
    (1..=n)
        .map(|i| format!("cert-{i}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// elb.tls-certificate-ids becomes the HTTPS listener's sni_container_refs, "取值范围：0-50个"
/// (huaweicloudsdkelb 3.1.219 v3/model/create_listener_option.py).
#[rstest]
#[case::one(cert_ids(1), Pass)]
#[case::fifty(cert_ids(50), Pass)]
#[case::fifty_one(cert_ids(51), Deny)]
#[case::blank_entry("cert-1,,cert-2".to_string(), Deny)]
fn sni_certificate_count(#[case] value: String, #[case] want: Expect) {
    let s = lb()
        .only_port(443, "TCP")
        .pa(Huawei, "protocol-port", "https:443")
        .pa(Huawei, "cert-id", "cert-0")
        .pa(Huawei, "tls-certificate-ids", &value);
    expect(&create(s), &cfg(V), "annotation-value-format", want);
}
