use rstest::rstest;

use crate::providers::Provider::Alibaba;
use crate::testkit::{
    Expect, Expect::*, cfg, create, expect_with, inventory, lb, policy_says, update,
};
use crate::vocab::ctx::EmptyInventory;

const INV: &str = r#"
loadBalancers:
  - {id: lb-spec, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user, chargeType: PayBySpec}
  - {id: lb-lcu, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user, chargeType: PayByCLCU}
  - {id: lb-old, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user}
  - {id: lb-super, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user, chargeType: PayBySpec, spec: slb.s3.xlarge}
  - {id: lb-small, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user, chargeType: PayBySpec, spec: slb.s2.small}
  - {id: lb-lcu-spec, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user, chargeType: PayByCLCU, spec: slb.s3.xlarge}
  - {id: lb-spec-only, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user, spec: slb.s3.xlarge}
"#;

const LABEL: &str = "service.k8s.alibaba/loadbalancer-id";

/// The verdict of `annotation-format` on a Service reusing `id` with these annotations.
fn reused(id: &str, anns: &[(&str, &str)], want: Expect) -> crate::engine::Verdict {
    let s = anns
        .iter()
        .fold(lb().pa(Alibaba, "id", id), |s, (k, v)| s.pa(Alibaba, k, v));
    expect_with(
        &create(s),
        &cfg(""),
        &inventory(INV),
        "annotation-format",
        want,
    )
}

/// Case A: a set instance-charge-type that differs from the live one is sent through
/// ModifyLoadBalancerInstanceChargeType (clbv1/loadbalancer.go:455-471), whose API reference
/// refuses pay-by-LCU to pay-by-specification ("Valid value: PayByCLCU").
#[rstest]
#[case::lcu_asked_spec("lb-lcu", "PayBySpec", Deny)]
#[case::lcu_asked_spec_any_case("lb-lcu", "paybyspec", Deny)] // model/load_balancer.go:37-39 EqualFold
#[case::lcu_kept("lb-lcu", "PayByCLCU", Pass)] // the same: no call
#[case::spec_kept("lb-spec", "PayBySpec", Pass)]
#[case::spec_to_lcu("lb-spec", "PayByCLCU", Pass)] // the switch the API takes
#[case::unknown_keeps_todays_verdict("lb-old", "PayBySpec", Pass)]
#[case::not_in_the_inventory("lb-9", "PayBySpec", Pass)] // the inventory rules say it
fn asked_charge_type_against_the_live_one(
    #[case] id: &str,
    #[case] charge: &str,
    #[case] want: Expect,
) {
    let v = reused(id, &[("instance-charge-type", charge)], want);
    if want == Deny {
        let m = v.denial_message().unwrap();
        assert!(
            m.contains("ModifyLoadBalancerInstanceChargeType")
                && m.contains(&format!("instance-charge-type is \"{charge}\""))
                && m.contains("cannot go back to pay-by-specification")
                && m.contains("instance-charge-type: \"PayByCLCU\""),
            "{m}"
        );
    }
}

/// Case B: without instance-charge-type the controller keeps the live type and, on a
/// pay-by-spec CLB, sends a changed spec (clbv1/loadbalancer.go:475-488), held to the
/// LoadBalancerSpec row; on a pay-by-LCU one no spec is sent.
#[rstest]
#[case::spec_bad("lb-spec", None, "slb.s9.small", Deny)]
#[case::spec_good("lb-spec", None, "slb.s2.medium", Pass)]
#[case::spec_case("lb-spec", None, "SLB.S1.SMALL", Deny)] // the row's enum is exact
#[case::lcu_sends_no_spec("lb-lcu", None, "slb.s9.small", Pass)]
#[case::unknown_keeps_todays_verdict("lb-old", None, "slb.s9.small", Pass)]
#[case::empty_reads_as_absent("lb-spec", Some(""), "slb.s9.small", Deny)]
#[case::switched_to_lcu("lb-spec", Some("PayByCLCU"), "slb.s9.small", Pass)] // no spec sent
#[case::said_spec_is_the_rows("lb-old", Some("PayBySpec"), "slb.s9.small", Deny)] // today's row
fn spec_of_a_pay_by_spec_clb(
    #[case] id: &str,
    #[case] charge: Option<&str>,
    #[case] spec: &str,
    #[case] want: Expect,
) {
    let mut anns = vec![("spec", spec)];
    if let Some(c) = charge {
        anns.push(("instance-charge-type", c));
    }
    let v = reused(id, &anns, want);
    if want == Deny && charge.is_none() {
        let m = v.denial_message().unwrap();
        assert!(
            m.contains("ModifyLoadBalancerInstanceSpec")
                && m.contains("chargeType: PayBySpec")
                && m.contains("slb.s3.large"),
            "{m}"
        );
    }
}

/// A CLB the controller made is found by the label it wrote (clbv1/service_controller.go:
/// 542-556), on the Service or its live version; a new CLB (no id, no label) is left to the
/// rows (absent instance-charge-type: a pay-by-LCU instance).
#[rstest]
#[case::made_lcu_asked_spec(Some("lb-lcu"), &[("instance-charge-type", "PayBySpec")], Deny)]
#[case::made_spec_bad_spec(Some("lb-spec"), &[("spec", "slb.s9.small")], Deny)]
#[case::made_spec_good_spec(Some("lb-spec"), &[("spec", "slb.s3.small")], Pass)]
#[case::new_clb(None, &[("spec", "slb.s9.small")], Pass)]
fn a_clb_the_controller_made(
    #[case] label: Option<&str>,
    #[case] anns: &[(&str, &str)],
    #[case] want: Expect,
) {
    let base = || match label {
        Some(l) => lb().label(LABEL, l),
        None => lb(),
    };
    let new = anns.iter().fold(base(), |s, (k, v)| s.pa(Alibaba, k, v));
    let inv = inventory(INV);
    expect_with(
        &update(base(), new),
        &cfg(""),
        &inv,
        "annotation-format",
        want,
    );
}

/// Without an inventory, or on an NLB, nothing changes.
#[rstest]
#[case::no_inventory(false)]
#[case::nlb(true)]
fn silent_without_facts_or_on_an_nlb(#[case] nlb: bool) {
    let mut s = lb()
        .pa(Alibaba, "id", "lb-lcu")
        .pa(Alibaba, "instance-charge-type", "PayBySpec");
    let inv = inventory(INV);
    let none = EmptyInventory;
    let inv: &dyn crate::vocab::ctx::Inventory = if nlb {
        s = s.class("alibabacloud.com/nlb");
        &inv
    } else {
        &none
    };
    expect_with(&create(s), &cfg(""), inv, "annotation-format", Pass);
}

/// The live spec (`spec`): the controller sends the Service's spec only when it differs,
/// exactly, from the live one and the charge type is kept (clbv1/loadbalancer.go:455-456,
/// :472-488), so a spec that is the live one is held to nothing, even beyond the API's list
/// (slb.s3.xlarge, an allow-listed spec). A live spec without the live charge type, or a
/// charge type without the live spec, keeps today's verdict.
#[rstest]
// No instance-charge-type on a pay-by-spec CLB (charge.rs's own finding).
#[case::restated_live_spec("lb-super", None, "slb.s3.xlarge", Pass)]
#[case::changed_to_a_refused_spec("lb-super", None, "slb.s9.small", Deny)]
#[case::live_spec_other_case("lb-super", None, "SLB.S3.XLARGE", Deny)] // compared exactly
#[case::changed_to_a_listed_spec("lb-small", None, "slb.s3.large", Pass)]
#[case::live_spec_listed("lb-small", None, "slb.s2.small", Pass)]
#[case::unknown_spec_keeps_todays_verdict("lb-spec", None, "slb.s3.xlarge", Deny)]
#[case::unknown_charge_type_keeps_todays_verdict("lb-spec-only", None, "slb.s3.xlarge", Pass)]
#[case::lcu_sends_no_spec("lb-lcu-spec", None, "slb.s9.small", Pass)]
// instance-charge-type PayBySpec (the row): cleared only when it is the live one, exactly.
#[case::row_restated_live_spec("lb-super", Some("PayBySpec"), "slb.s3.xlarge", Pass)]
#[case::row_charge_type_other_case("lb-super", Some("paybyspec"), "slb.s3.xlarge", Deny)] // ModifyLoadBalancerInstanceChargeType sends it
#[case::row_changed_spec("lb-super", Some("PayBySpec"), "slb.s9.small", Deny)]
#[case::row_changed_to_a_listed_spec("lb-super", Some("PayBySpec"), "slb.s1.small", Pass)]
#[case::row_unknown_spec_keeps_todays_verdict("lb-spec", Some("PayBySpec"), "slb.s3.xlarge", Deny)]
#[case::row_unknown_charge_type_keeps_todays_verdict(
    "lb-spec-only",
    Some("PayBySpec"),
    "slb.s3.xlarge",
    Deny
)]
#[case::row_not_in_the_inventory("lb-9", Some("PayBySpec"), "slb.s3.xlarge", Deny)]
#[case::row_lcu_asked_spec("lb-lcu-spec", Some("PayBySpec"), "slb.s3.xlarge", Deny)] // both findings
#[case::switched_to_lcu("lb-super", Some("PayByCLCU"), "slb.s9.small", Pass)] // no spec sent
fn spec_against_the_live_one(
    #[case] id: &str,
    #[case] charge: Option<&str>,
    #[case] spec: &str,
    #[case] want: Expect,
) {
    let mut anns = vec![("spec", spec)];
    if let Some(c) = charge {
        anns.push(("instance-charge-type", c));
    }
    let v = reused(id, &anns, want);
    let row_cleared = want == Pass && charge == Some("PayBySpec") && spec == "slb.s3.xlarge";
    assert_eq!(
        v.cleared,
        if row_cleared {
            vec!["annotation-format"]
        } else {
            vec![]
        },
        "{:?}",
        v.violations
    );
    if want == Deny {
        let m = v.denial_message().unwrap();
        assert!(m.contains(&format!("spec is \"{spec}\"")), "{m}");
        if id == "lb-super" && charge.is_none() {
            assert!(
                m.contains("ModifyLoadBalancerInstanceSpec")
                    && m.contains("or the CLB's live spec \"slb.s3.xlarge\" (not sent)"),
                "{m}"
            );
        }
    }
}

/// The row's finding cleared by the live facts stays in the exported policy, which cannot
/// read the inventory (today's verdict there); a CLB the controller made (its label) is
/// cleared the same.
#[rstest]
#[case::reused(false)]
#[case::made_by_the_controller(true)]
fn a_cleared_row_stays_in_the_policy(#[case] made: bool) {
    let base = || {
        if made {
            lb().label(LABEL, "lb-super")
        } else {
            lb().pa(Alibaba, "id", "lb-super")
        }
    };
    let new = base().pa(Alibaba, "instance-charge-type", "PayBySpec").pa(
        Alibaba,
        "spec",
        "slb.s3.xlarge",
    );
    let input = update(base(), new);
    let v = expect_with(&input, &cfg(""), &inventory(INV), "annotation-format", Pass);
    assert_eq!(v.cleared, vec!["annotation-format"]);
    let said = policy_says(&input, &cfg(""), "annotation-format");
    assert!(!said.is_empty(), "the policy cannot read the inventory");
}
