//! Sources: VCCM = volcengine/volcengine-cloud-controller-manager@903e85e:docs/usage.md (and
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
