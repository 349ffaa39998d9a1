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

/// `-id` alone is plain reuse: volcengine/volcengine-cloud-controller-manager@903e85e:
/// docs/usage.md:9 ("ID of reused CLB") and its example at :35-55, which carries only the id.
/// With `-server-group-id` or `-weight`, seed 004's table (是否必须 = 是 for all three) applies.
#[rstest]
#[case::id_alone(true, false, false, Pass)]
#[case::complete(true, true, true, Pass)]
#[case::group_without_weight(true, true, false, Deny)]
#[case::weight_without_group(true, false, true, Deny)]
#[case::group_and_weight_without_id(false, true, true, Deny)]
#[case::group_alone(false, true, false, Deny)]
#[case::weight_alone(false, false, true, Deny)]
#[case::nothing(false, false, false, Pass)]
fn reuse_requires_fields(
    #[case] id: bool,
    #[case] group: bool,
    #[case] weight: bool,
    #[case] want: Expect,
) {
    let mut s = lb();
    if id {
        s = s.pa(Volcengine, "id", "clb-1");
    }
    if group {
        s = s.pa(Volcengine, "server-group-id", "rsp-1:80");
    }
    if weight {
        s = s.pa(Volcengine, "weight", "10");
    }
    expect(&create(s), &cfg(""), "reuse-requires-fields", want);
}

/// An empty value is no value: seed 004's table requires each one.
#[rstest]
#[case::empty_weight("weight", " ")]
#[case::empty_id("id", "")]
fn reuse_requires_fields_counts_empty_as_missing(#[case] suffix: &str, #[case] value: &str) {
    let s = reused().pa(Volcengine, suffix, value);
    let v = expect(&create(s), &cfg(""), "reuse-requires-fields", Deny);
    let msg = v.denial_message().unwrap();
    assert!(msg.contains("server-group-id: \"rsp-1:80\""), "{msg}");
}

/// The update ratchet keeps a finding the live Service already had (same message), and the
/// exported policy does the same (testkit).
#[rstest]
#[case::same_group("rsp-1:80", "rsp-1:80", Warn)]
#[case::other_group("rsp-1:80", "rsp-2:80", Deny)]
fn reuse_requires_fields_ratchets(#[case] old: &str, #[case] new: &str, #[case] want: Expect) {
    let svc = |g: &str| {
        lb().pa(Volcengine, "id", "clb-1")
            .pa(Volcengine, "server-group-id", g)
    };
    expect(
        &update(svc(old), svc(new)),
        &cfg(""),
        "reuse-requires-fields",
        want,
    );
}

/// The weight default follows the rule: only a Service with `-server-group-id` gets one, so
/// plain reuse (`-id` alone) stays as the user wrote it and passes.
#[rstest]
#[case::plain_reuse(lb().pa(Volcengine, "id", "clb-1"), None)]
#[case::server_groups(
    lb().pa(Volcengine, "id", "clb-1").pa(Volcengine, "server-group-id", "rsp-1:80"),
    Some("70")
)]
fn weight_default_only_for_server_groups(#[case] s: SvcBuilder, #[case] want: Option<&str>) {
    use crate::engine::{EmptyInventory, Input, Versions, mutate};
    let config = cfg("provider: volcengine\ndefaults:\n  volcengineWeight: 70\n");
    let input = create(s);
    let m = mutate(
        &input,
        &config,
        &Versions::from_config(&config),
        &EmptyInventory,
    )
    .unwrap();
    let key = crate::testkit::k(Volcengine, "weight");
    let got = m
        .desired
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(&key));
    assert_eq!(got.map(String::as_str), want);
    let mutated = Input {
        object: Some(m.desired),
        ..input
    };
    expect(&mutated, &config, "reuse-requires-fields", Pass);
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
