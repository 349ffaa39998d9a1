use rstest::rstest;

use crate::providers::Provider::Alibaba;
use crate::testkit::{Expect, Expect::*, cfg, create, expect_with, inventory, lb};
use crate::vocab::ctx::EmptyInventory;

const NLB: &str = "alibabacloud.com/nlb";

const INV: &str = r#"
loadBalancers:
  - {id: nlb-1, provider: alibaba, kind: nlb, addressType: internet, vpcId: vpc-1, createdBy: user,
     serverGroups: [{id: sgp-inst, type: Instance}, {id: sgp-ip, type: Ip}]}
  - {id: nlb-none, provider: alibaba, kind: nlb, addressType: internet, vpcId: vpc-1, createdBy: user,
     serverGroups: []}
  - {id: nlb-old, provider: alibaba, kind: nlb, addressType: internet, vpcId: vpc-1, createdBy: user}
  - {id: lb-clb, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user}
"#;

/// The verdict of `annotation-format` on an NLB Service (ports 80 and 443) that reuses `id`
/// with `vgroup-port: vgroup` (and `server-group-type: kind`), against [`INV`].
fn reused(id: &str, vgroup: &str, kind: Option<&str>, want: Expect) -> crate::engine::Verdict {
    let mut s =
        lb().class(NLB)
            .port(443, "TCP")
            .pa(Alibaba, "id", id)
            .pa(Alibaba, "vgroup-port", vgroup);
    if let Some(k) = kind {
        s = s.pa(Alibaba, "server-group-type", k);
    }
    expect_with(
        &create(s),
        &cfg(""),
        &inventory(INV),
        "annotation-format",
        want,
    )
}

/// A reused NLB's `vgroup-port` against its server groups (Service ports 80 and 443), as
/// kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/nlbv2 decides; the
/// line is in the case's comment.
#[rstest]
#[case::its_group("nlb-1", "sgp-inst:80", None, Pass)] // server_groups.go:219-228 found
#[case::its_two_groups("nlb-1", "sgp-inst:80,sgp-ip:443", None, Pass)]
#[case::not_its_group("nlb-1", "sgp-other:80", None, Deny)] // :225-226 "reused server group id %s not found"
#[case::a_clb_group("nlb-1", "rsp-bp1abc:80", None, Deny)] // an NLB lists no CLB vServer group
#[case::none_in_its_vpc("nlb-none", "sgp-inst:80", None, Deny)]
#[case::unbound_entry_is_looked_up_too("nlb-1", "sgp-inst:80,sgp-other:8080", None, Deny)] // :215-228 every id
#[case::type_matches_any_case("nlb-1", "sgp-ip:80", Some("ip"), Pass)] // :1203-1212 EqualFold
#[case::type_matches_instance("nlb-1", "sgp-inst:80", Some("Instance"), Pass)]
#[case::type_differs("nlb-1", "sgp-inst:80", Some("Ip"), Deny)] // model_applier.go:313-318
#[case::type_differs_second_port("nlb-1", "sgp-ip:80,sgp-inst:443", Some("ip"), Deny)]
#[case::type_of_an_unbound_entry("nlb-1", "sgp-inst:8080", Some("ip"), Warn)] // no port: never compared, a note
#[case::first_entry_of_a_port_wins("nlb-1", "sgp-ip:80,sgp-inst:80", Some("ip"), Warn)] // listeners.go:62-75, a note
#[case::bad_type_is_the_format_checks("nlb-1", "sgp-inst:80", Some("eni"), Deny)] // :1210 (the table's check)
#[case::groups_not_known("nlb-old", "sgp-other:80", None, Warn)] // an old file: unknown, not a denial
#[case::nlb_not_in_the_inventory("nlb-9", "sgp-other:80", None, Pass)] // the inventory rules say it
fn reused_nlb_server_groups(
    #[case] id: &str,
    #[case] vgroup: &str,
    #[case] kind: Option<&str>,
    #[case] want: Expect,
) {
    let v = reused(id, vgroup, kind, want);
    if want == Deny {
        let m = v.denial_message().unwrap();
        assert!(
            m.contains("vgroup-port") || m.contains("server-group-type"),
            "{m}"
        );
    }
}

#[test]
fn messages_quote_the_controller_and_name_the_fix() {
    let deny = |vgroup: &str, kind: Option<&str>| {
        reused("nlb-1", vgroup, kind, Deny)
            .denial_message()
            .unwrap()
    };
    let m = deny("sgp-inst:80", Some("ip"));
    assert!(
        m.contains("\"ServerGroupType of user managed server group sgp-inst should be [Ip], but [Instance]\"")
            && m.contains("server-group-type: \"Instance\""),
        "{m}"
    );
    let m = deny("rsp-bp1abc:80", None);
    assert!(
        m.contains("is a CLB vServer group id")
            && m.contains("\"reused server group id rsp-bp1abc not found\"")
            && m.contains("vpc-1"),
        "{m}"
    );
}

/// Where the check does not apply: a CLB, an NLB the Service does not reuse, no inventory.
#[rstest]
#[case::clb("lb-clb", None, "rsp-other:80")]
#[case::new_nlb_without_id("", Some(NLB), "sgp-other:80")]
#[case::no_inventory("nlb-1", Some(NLB), "sgp-other:80")]
fn only_a_reused_nlb_with_an_inventory_is_compared(
    #[case] id: &str,
    #[case] class: Option<&str>,
    #[case] vgroup: &str,
) {
    let mut s = lb().pa(Alibaba, "vgroup-port", vgroup);
    if let Some(c) = class {
        s = s.class(c).pa(
            Alibaba,
            "zone-maps",
            "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2",
        );
    }
    if !id.is_empty() {
        s = s.pa(Alibaba, "id", id);
    }
    let inv = inventory(INV);
    let none = EmptyInventory;
    let inv: &dyn crate::vocab::ctx::Inventory = if vgroup.starts_with("sgp") && !id.is_empty() {
        &none
    } else {
        &inv
    };
    expect_with(&create(s), &cfg(""), inv, "annotation-format", Pass);
}
