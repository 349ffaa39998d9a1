//! The rows of providers/data/volcengine-api.yaml (SubnetId, MasterZoneId with SlaveZoneId,
//! AclIds with AclStatus on) and volcengine_create.rs (two different zones), under
//! `dependent-annotations`. Sources: VCCM = volcengine/volcengine-cloud-controller-manager@903e85e:docs/usage.md (and
//! docs/zh/usage_zh.md); CLB-API = https://www.volcengine.com/docs/6406/71769 (CreateLoadBalancer);
//! SDK = volcengine-python-sdk 5.0.54 volcenginesdkclb/models/create_load_balancer_request.py:612.

use rstest::rstest;

use crate::providers::Provider::Volcengine;
use crate::testkit::{Expect, Expect::*, SvcBuilder, cfg, create, expect, lb, update};

const RULE: &str = "dependent-annotations";
/// A Service with no Volcengine annotation is Volcengine's only when the provider is configured.
const VOLC: &str = "provider: volcengine\n";

fn svc(pairs: &[(&str, &str)]) -> SvcBuilder {
    pairs.iter().fold(lb(), |s, (k, v)| s.pa(Volcengine, k, v))
}

#[rstest]
// VCCM:11 "Required YES"; CLB-API SubnetId 必选; SDK refuses subnet_id None.
#[case::new_clb_with_subnet(&[("subnet-id", "subnet-1")], Pass)]
#[case::new_clb_without_subnet(&[], Deny)]
#[case::new_clb_empty_subnet(&[("subnet-id", "")], Deny)]
#[case::new_clb_blank_subnet(&[("subnet-id", " ")], Deny)]
#[case::new_clb_named_without_subnet(&[("name", "web"), ("spec", "small_1")], Deny)]
#[case::reuse_without_subnet(&[("id", "clb-1")], Pass)]
#[case::reuse_nlb_without_subnet(&[("id", "nlb-1")], Pass)]
// CLB-API SlaveZoneId: needs MasterZoneId, and a different one (VCCM:19-20).
#[case::zones(&[("subnet-id", "subnet-1"), ("master-zone-id", "cn-beijing-a"), ("slave-zone-id", "cn-beijing-b")], Pass)]
#[case::master_alone(&[("subnet-id", "subnet-1"), ("master-zone-id", "cn-beijing-a")], Pass)]
#[case::slave_alone(&[("subnet-id", "subnet-1"), ("slave-zone-id", "cn-beijing-b")], Deny)]
#[case::slave_empty_master(&[("subnet-id", "subnet-1"), ("master-zone-id", ""), ("slave-zone-id", "cn-beijing-b")], Deny)]
#[case::slave_empty(&[("subnet-id", "subnet-1"), ("slave-zone-id", "")], Pass)]
#[case::same_zone(&[("subnet-id", "subnet-1"), ("master-zone-id", "cn-beijing-a"), ("slave-zone-id", "cn-beijing-a")], Deny)]
#[case::near_same_zone(&[("subnet-id", "subnet-1"), ("master-zone-id", "cn-beijing-a"), ("slave-zone-id", "cn-beijing-A")], Pass)]
// A reused load balancer: CreateLoadBalancer is not called, its zones are not sent.
#[case::reuse_slave_alone(&[("id", "clb-1"), ("slave-zone-id", "cn-beijing-b")], Pass)]
fn volcengine_create_parameters(#[case] pairs: &[(&str, &str)], #[case] want: Expect) {
    expect(&create(svc(pairs)), &cfg(VOLC), RULE, want);
}

#[test]
fn live_clb_without_subnet_ratchets() {
    expect(&update(svc(&[]), svc(&[])), &cfg(VOLC), RULE, Warn);
}

/// CLB-ACL = https://docs.byteplus.com/en/docs/clb/Access-control-list-01: "Each ACL-enabled
/// listener must be associated with at least one ACL"; VCCM:29-31 documents acl-status, acl-type
/// and acl-id. The NLB API's listeners take no ACL (SDK create_nlb_listener_request.py).
#[rstest]
#[case::on_with_ids(&[("id", "clb-1"), ("acl-status", "on"), ("acl-type", "white"), ("acl-id", "acl-1")], Pass)]
#[case::on_without_ids(&[("id", "clb-1"), ("acl-status", "on"), ("acl-type", "white")], Deny)]
#[case::on_empty_ids(&[("id", "clb-1"), ("acl-status", "on"), ("acl-id", "")], Deny)]
#[case::on_new_clb(&[("subnet-id", "subnet-1"), ("acl-status", "on")], Deny)]
#[case::off_without_ids(&[("id", "clb-1"), ("acl-status", "off")], Pass)]
#[case::ids_without_status(&[("id", "clb-1"), ("acl-id", "acl-1")], Pass)]
#[case::nlb_sends_no_acl(&[("id", "nlb-1"), ("acl-status", "on")], Pass)]
fn volcengine_acl_needs_ids(#[case] pairs: &[(&str, &str)], #[case] want: Expect) {
    expect(&create(svc(pairs)), &cfg(VOLC), RULE, want);
}

#[test]
fn volcengine_acl_message() {
    let v = expect(
        &create(svc(&[("id", "clb-1"), ("acl-status", "on")])),
        &cfg(VOLC),
        RULE,
        Deny,
    );
    let msg = v.denial_message().unwrap();
    assert!(
        msg.contains("volcengine-loadbalancer-acl-status: \"on\" needs service.beta.kubernetes.io/volcengine-loadbalancer-acl-id")
            && msg.contains("without AclIds")
            && msg.contains("(CLB access control; CLB API CreateListener, ModifyListenerAttributes AclStatus, AclIds)")
            && msg.contains("or remove service.beta.kubernetes.io/volcengine-loadbalancer-acl-status"),
        "{msg}"
    );
}
