use rstest::rstest;

use crate::providers::Provider::Volcengine;
use crate::testkit::{Expect, Expect::*, SvcBuilder, cfg, create, expect, lb, update};

fn reused() -> SvcBuilder {
    lb().pa(Volcengine, "id", "clb-1")
        .pa(Volcengine, "server-group-id", "rsp-1:80")
        .pa(Volcengine, "weight", "50")
}

#[rstest]
#[case::unchanged("rsp-1:80", Pass)]
#[case::changed("rsp-2:80", Deny)]
fn server_group_immutable(#[case] new: &str, #[case] want: Expect) {
    let n = reused().pa(Volcengine, "server-group-id", new);
    expect(
        &update(reused(), n),
        &cfg(""),
        "server-group-immutable",
        want,
    );
}

#[test]
fn server_group_added_later_is_denied() {
    let old = lb()
        .pa(Volcengine, "id", "clb-1")
        .pa(Volcengine, "weight", "50");
    expect(
        &update(old, reused()),
        &cfg(""),
        "server-group-immutable",
        Deny,
    );
}

#[rstest]
#[case::unchanged("50", Pass)]
#[case::changed("60", Deny)]
fn weight_immutable(#[case] new: &str, #[case] want: Expect) {
    let n = reused().pa(Volcengine, "weight", new);
    expect(&update(reused(), n), &cfg(""), "weight-immutable", want);
}

#[rstest]
#[case::complete(true, true, Pass)]
#[case::no_group(false, true, Deny)]
#[case::no_weight(true, false, Deny)]
fn reuse_requires_fields(#[case] group: bool, #[case] weight: bool, #[case] want: Expect) {
    let mut s = lb().pa(Volcengine, "id", "clb-1");
    if group {
        s = s.pa(Volcengine, "server-group-id", "rsp-1:80");
    }
    if weight {
        s = s.pa(Volcengine, "weight", "10");
    }
    expect(&create(s), &cfg(""), "reuse-requires-fields", want);
}

#[test]
fn reuse_requires_fields_without_id_passes() {
    expect(
        &create(lb().pa(Volcengine, "weight", "10")),
        &cfg(""),
        "reuse-requires-fields",
        Pass,
    );
}

#[rstest]
#[case::one("rsp-1:80", Pass)]
#[case::two("rsp-1:80, rsp-2:443", Pass)]
#[case::target_port("rsp-1:8080", Deny)]
#[case::no_rsp("sg-1:80", Deny)]
#[case::no_port("rsp-1", Deny)]
#[case::twice("rsp-1:80,rsp-2:80", Deny)]
#[case::plus_sign("rsp-1:+80", Pass)]
#[case::leading_zero("rsp-1:0080", Pass)]
#[case::star_id("rsp-*x-9:443", Pass)]
#[case::colon_in_id("rsp-a:b:80", Deny)]
#[case::port_zero("rsp-1:0", Deny)]
#[case::huge_port("rsp-1:99999999999", Deny)]
#[case::empty_entry("rsp-1:80,,rsp-2:443", Deny)]
#[case::space_inside("rsp-1 :80", Deny)]
#[case::twice_but_one_bad("rsp-1:80,rsp-2:80x", Deny)]
fn server_group_format(#[case] value: &str, #[case] want: Expect) {
    let s = reused()
        .port(443, "TCP")
        .pa(Volcengine, "server-group-id", value);
    expect(&create(s), &cfg(""), "server-group-format", want);
}

/// Updates keep the findings the live Service already had, one by one: the exported policy
/// is checked against each case too (testkit).
#[rstest]
#[case::same_bad_value("rsp-1:8080", "rsp-1:8080", 80, 80, Warn)]
#[case::adds_a_bad_entry("rsp-1:8080", "rsp-1:8080,sg-2:443", 80, 80, Deny)]
#[case::drops_the_good_entry("rsp-1:8080,rsp-2:443", "rsp-1:8080", 80, 80, Warn)]
#[case::ports_changed("rsp-1:8080", "rsp-1:8080", 80, 81, Deny)]
#[case::same_duplicate("rsp-1:80,rsp-2:80", "rsp-2:80,rsp-1:80", 80, 80, Warn)]
#[case::fixed("rsp-1:8080", "rsp-1:80", 80, 80, Pass)]
fn server_group_format_ratchets_per_finding(
    #[case] old: &str,
    #[case] new: &str,
    #[case] old_port: i32,
    #[case] new_port: i32,
    #[case] want: Expect,
) {
    let svc = |value: &str, port: i32| {
        reused()
            .only_port(port, "TCP")
            .port(443, "TCP")
            .pa(Volcengine, "server-group-id", value)
    };
    expect(
        &crate::testkit::update(svc(old, old_port), svc(new, new_port)),
        &cfg(""),
        "server-group-format",
        want,
    );
}

#[rstest]
#[case::max("100", Pass)]
#[case::min_warns("0", Warn)]
#[case::over("101", Deny)]
#[case::negative("-1", Deny)]
#[case::word("ten", Deny)]
fn weight_range(#[case] value: &str, #[case] want: Expect) {
    let s = reused().pa(Volcengine, "weight", value);
    expect(&create(s), &cfg(""), "weight-range", want);
}

#[rstest]
#[case::clb_any("clb-1", None, Pass)]
#[case::nlb_new_ccm("nlb-1", Some("v1.45.1"), Pass)]
#[case::nlb_old_ccm("nlb-1", Some("v1.44.9"), Deny)]
#[case::nlb_unknown_ccm("nlb-1", None, Warn)]
fn nlb_requires_ccm_version(#[case] id: &str, #[case] ccm: Option<&str>, #[case] want: Expect) {
    let s = reused().pa(Volcengine, "id", id);
    let mut config = cfg("");
    config.ccm.version = ccm.map(String::from);
    expect(&create(s), &config, "nlb-requires-ccm-version", want);
}
