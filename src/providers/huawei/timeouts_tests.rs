//! `elb.keepalive_timeout` per listener: the CreateListener listener.keepalive_timeout rows of
//! providers/data/huawei-api.yaml (a shared ELB's UDP listener: `whenAny` and `none`).
//!
//! Sources: SDK = PyPI huaweicloudsdkelb 3.1.219 v3/model/create_listener_option.py
//! keepalive_timeout ("TCP、UDP和IP监听器：10-4000s ... HTTP、HTTPS和TERMINATED_HTTPS监听器：0-4000s");
//! FAQ = https://support.huaweicloud.com/intl/en-us/elb_faq/elb_faq_0309.html; OTC-0385 Table 13;
//! OTC-0729 = opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/networking/services/
//! loadbalancer/configuring_timeout_for_a_loadbalancer_service.rst:20-37.

use rstest::rstest;

use crate::providers::Provider::Huawei;
use crate::testkit::{Expect, Expect::*, SvcBuilder, cfg, create, expect, lb};

const V: &str = "cluster:\n  version: v1.31.14-r50\n";
const RULE: &str = "annotation-value-format";

fn shared() -> SvcBuilder {
    lb().pa(Huawei, "class", "union")
}

fn http() -> SvcBuilder {
    lb().pa(Huawei, "protocol-port", "http:80")
}

#[rstest]
// TCP listeners: 10-4000.
#[case::tcp_9(lb(), "9", Deny)]
#[case::tcp_10(lb(), "10", Pass)]
#[case::tcp_0(lb(), "0", Deny)]
#[case::tcp_4000(lb(), "4000", Pass)]
#[case::tcp_4001(lb(), "4001", Deny)]
// UDP listeners: 10-4000.
#[case::udp_9(lb().only_port(53, "UDP"), "9", Deny)]
#[case::udp_10(lb().only_port(53, "UDP"), "10", Pass)]
// HTTP/HTTPS listeners: 0-4000.
#[case::http_0(http(), "0", Pass)]
#[case::http_9(http(), "9", Pass)]
#[case::http_4000(http(), "4000", Pass)]
#[case::http_4001(http(), "4001", Deny)]
#[case::https_0(lb().pa(Huawei, "protocol-port", "https:80").pa(Huawei, "cert-id", "c-1"), "0", Pass)]
// One value for every listener: a TCP port next to an HTTP one takes 10 or more.
#[case::http_and_tcp_9(http().port(443, "TCP"), "9", Deny)]
#[case::http_and_tcp_10(http().port(443, "TCP"), "10", Pass)]
#[case::tls_9(lb().pa(Huawei, "protocol-port", "tls:80"), "9", Deny)]
// Without managed listeners CCE sends no keepalive_timeout (seed 003).
#[case::skip_managed(lb().pa(Huawei, "id", "elb-1").pa(Huawei, "skip-managed-listener", "true"), "0", Pass)]
#[case::not_a_number(lb(), "ten", Deny)]
// A shared ELB's UDP listener takes no keepalive_timeout (SDK 约束限制 "共享型实例的UDP监听器不支持此
// 字段"; OTC-0729 "Idle timeout | Shared | UDP is not supported"); a dedicated one takes 10-4000.
#[case::shared_udp(shared().only_port(53, "UDP"), "300", Deny)]
#[case::shared_udp_and_tcp(shared().port(53, "UDP"), "300", Deny)]
#[case::shared_tcp(shared(), "300", Pass)]
#[case::dedicated_udp(lb().pa(Huawei, "class", "performance").only_port(53, "UDP"), "300", Pass)]
// An ELB CCE creates without a class is shared (OTC-0385:51, the default union).
#[case::autocreate_no_class_udp(lb().pa(Huawei, "autocreate", r#"{"type":"inner"}"#).only_port(53, "UDP"), "300", Deny)]
#[case::autocreate_dedicated_udp(lb().pa(Huawei, "autocreate", r#"{"type":"inner","available_zone":["z1"],"l4_flavor_name":"L4"}"#).pa(Huawei, "class", "performance").only_port(53, "UDP"), "300", Pass)]
// The class of an ELB given by id alone is not known: not read as shared.
#[case::no_class_udp(lb().pa(Huawei, "id", "elb-1").only_port(53, "UDP"), "300", Pass)]
// An empty elb.class is a class, and not union: not shared, even with elb.autocreate.
#[case::empty_class_udp(lb().pa(Huawei, "class", "").pa(Huawei, "id", "elb-1").only_port(53, "UDP"), "300", Pass)]
#[case::empty_class_autocreate_udp(lb().pa(Huawei, "class", "").pa(Huawei, "autocreate", r#"{"type":"inner"}"#).only_port(53, "UDP"), "300", Pass)]
// An empty elb.autocreate is there: with no class, shared.
#[case::empty_autocreate_udp(lb().pa(Huawei, "autocreate", "").only_port(53, "UDP"), "300", Deny)]
#[case::union_any_case_udp(lb().pa(Huawei, "class", "Union").pa(Huawei, "id", "elb-1").only_port(53, "UDP"), "300", Pass)]
#[case::shared_udp_skip_managed(shared().only_port(53, "UDP").pa(Huawei, "id", "elb-1").pa(Huawei, "skip-managed-listener", "true"), "300", Pass)]
fn keepalive_per_listener(#[case] s: SvcBuilder, #[case] value: &str, #[case] want: Expect) {
    expect(
        &create(s.pa(Huawei, "keepalive_timeout", value)),
        &cfg(V),
        RULE,
        want,
    );
}

/// On a shared ELB's UDP listener any whole number is refused; one the annotation table's
/// 0-4000 refuses (5000) or that is no number is reported once, by the table.
#[rstest]
#[case::inside("300", 1)]
#[case::outside("5000", 1)]
#[case::not_a_number("ten", 1)]
fn shared_udp_findings(#[case] value: &str, #[case] n: usize) {
    let s = shared()
        .only_port(53, "UDP")
        .pa(Huawei, "keepalive_timeout", value);
    let v: Vec<String> = crate::testkit::run(&create(s), &cfg(V))
        .violations
        .into_iter()
        .filter(|x| x.rule == RULE)
        .map(|x| x.message)
        .collect();
    assert_eq!(v.len(), n, "{v:#?}");
    if value == "300" {
        assert!(
            v.iter()
                .any(|m| m.contains("53 (udp)") && m.contains("dedicated ELB")),
            "{v:#?}"
        );
    }
}
