//! Sources: SDK = huaweicloudsdkelb 3.1.219 v3/model/resource_tag.py (keys 1-36, values up to 255
//! characters, none of `=*<>\,|/`); OTC-ingress = opentelekomcloud-docs/cloud-container-engine@
//! 4863737:umn/source/networking/ingresses/loadbalancer_ingresses/
//! creating_a_loadbalancer_ingress_using_kubectl.rst:277-279 (20 tags, one of them CCE's).

use rstest::rstest;

use crate::providers::Provider::Huawei;
use crate::testkit::{Expect, Expect::*, cfg, create, expect, lb};

const V: &str = "cluster:\n  version: v1.31.14-r50\n";
const RULE: &str = "annotation-value-format";

fn n_tags(n: usize) -> String {
    (1..=n)
        .map(|i| format!("k{i}=v{i}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[rstest]
// CCE's example (OTC-0385 :336-338, creating_a_loadbalancer_service.rst:549).
#[case::example("key1=value1,key2=value2".to_string(), Pass)]
#[case::empty_value("env=".to_string(), Pass)]
#[case::chinese("环境=生产".to_string(), Pass)]
#[case::value_with_space("team=web ops".to_string(), Pass)]
// SDK: keys of up to 36 characters.
#[case::key_36(format!("{}=v", "k".repeat(36)), Pass)]
#[case::key_37(format!("{}=v", "k".repeat(37)), Deny)]
#[case::key_36_chinese(format!("{}=v", "键".repeat(36)), Pass)]
// SDK: values of up to 255 (the 2023 API page's 43 is the stricter source).
#[case::value_44(format!("k={}", "v".repeat(44)), Pass)]
#[case::value_255(format!("k={}", "v".repeat(255)), Pass)]
#[case::value_256(format!("k={}", "v".repeat(256)), Deny)]
// SDK: none of = * < > \ | / in a key or value.
#[case::value_slash("k=a/b".to_string(), Deny)]
#[case::value_equals("k=a=b".to_string(), Deny)]
#[case::key_star("k*=v".to_string(), Deny)]
#[case::value_pipe("k=a|b".to_string(), Deny)]
#[case::value_angle("k=<b>".to_string(), Deny)]
#[case::value_backslash("k=a\\b".to_string(), Deny)]
#[case::value_dot_dash_underscore("k=a.b-c_d".to_string(), Pass)]
// OTC-ingress: 20 tags per ELB, one of them CCE's.
#[case::tags_19(n_tags(19), Pass)]
#[case::tags_20(n_tags(20), Deny)]
fn huawei_tags(#[case] value: String, #[case] want: Expect) {
    expect(
        &create(
            lb().pa(Huawei, "autocreate", r#"{"type":"inner"}"#)
                .pa(Huawei, "tags", &value),
        ),
        &cfg(V),
        RULE,
        want,
    );
}

/// OTC-0385 :336-338: tags are set only on an ELB CCE creates; with an existing one CCE sends none.
#[test]
fn tags_of_an_existing_elb_are_not_sent() {
    expect(
        &create(lb().pa(Huawei, "id", "elb-1").pa(Huawei, "tags", "k=a/b")),
        &cfg(V),
        RULE,
        Pass,
    );
}
