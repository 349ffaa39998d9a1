//! volcengine_health.rs under `annotation-value-format`: a health-check timeout above the
//! interval. CLB-LISTENER = https://www.volcengine.com/docs/6406/71777 (CreateListener
//! HealthCheck.Timeout: "响应超时时间需小于等于检查时间间隔").

use rstest::rstest;

use crate::providers::Provider::Volcengine;
use crate::testkit::{Expect, Expect::*, SvcBuilder, cfg, create, expect, lb, update};

const RULE: &str = "annotation-value-format";
const VOLC: &str = "provider: volcengine\n";

fn svc(pairs: &[(&str, &str)]) -> SvcBuilder {
    pairs
        .iter()
        .fold(lb().pa(Volcengine, "subnet-id", "subnet-1"), |s, (k, v)| {
            s.pa(Volcengine, k, v)
        })
}

#[rstest]
// CLB-LISTENER: the timeout at most the interval; equal passes.
#[case::equal(&[("health-check-interval", "5"), ("health-check-connect-timeout", "5")], Pass)]
#[case::below(&[("health-check-interval", "10"), ("health-check-connect-timeout", "5")], Pass)]
#[case::above_by_one(&[("health-check-interval", "5"), ("health-check-connect-timeout", "6")], Deny)]
#[case::ends_of_the_ranges(&[("health-check-interval", "1"), ("health-check-connect-timeout", "60")], Deny)]
#[case::longest_timeout(&[("health-check-interval", "300"), ("health-check-connect-timeout", "60")], Pass)]
// Compared as the numbers the controller parses, not as strings.
#[case::leading_zero(&[("health-check-interval", "010"), ("health-check-connect-timeout", "9")], Pass)]
#[case::plus_sign(&[("health-check-interval", "+3"), ("health-check-connect-timeout", "4")], Deny)]
#[case::string_order(&[("health-check-interval", "10"), ("health-check-connect-timeout", "9")], Pass)]
// One of the two left out: what the controller sends for it cannot be read, not compared.
#[case::timeout_alone(&[("health-check-connect-timeout", "60")], Pass)]
#[case::interval_alone(&[("health-check-interval", "1")], Pass)]
// A reused CLB: its listeners are made by the same CreateListener.
#[case::reused_clb(&[("id", "clb-1"), ("health-check-interval", "2"), ("health-check-connect-timeout", "3")], Deny)]
// An nlb- id: the NLB API, whose page read states no such order.
#[case::reused_nlb(&[("id", "nlb-1"), ("health-check-interval", "2"), ("health-check-connect-timeout", "3")], Pass)]
fn timeout_at_most_interval(#[case] pairs: &[(&str, &str)], #[case] want: Expect) {
    expect(&create(svc(pairs)), &cfg(VOLC), RULE, want);
}

/// The message names both annotations, both numbers, the parameters, the API page and the fix.
#[test]
fn timeout_message() {
    let v = expect(
        &create(svc(&[
            ("health-check-interval", "2"),
            ("health-check-connect-timeout", "5"),
        ])),
        &cfg(VOLC),
        RULE,
        Deny,
    );
    let msg = v.denial_message().unwrap();
    for part in [
        "volcengine-loadbalancer-health-check-connect-timeout: 5 is above service.beta.kubernetes.io/volcengine-loadbalancer-health-check-interval (2)",
        "HealthCheck.Timeout above HealthCheck.Interval",
        "docs/6406/71777",
        "lower the timeout to at most 2, or raise the interval to at least 5",
    ] {
        assert!(msg.contains(part), "{msg}");
    }
}

/// A live Service whose pair the API already refused keeps it on update (warned); a new
/// pair, or a changed one, is denied.
#[rstest]
#[case::same(("2", "5"), ("2", "5"), Warn)]
#[case::changed(("2", "5"), ("2", "6"), Deny)]
#[case::fixed(("2", "5"), ("5", "5"), Pass)]
fn timeout_ratchets(#[case] old: (&str, &str), #[case] new: (&str, &str), #[case] want: Expect) {
    let s = |(i, t): (&str, &str)| {
        svc(&[
            ("health-check-interval", i),
            ("health-check-connect-timeout", t),
        ])
    };
    expect(&update(s(old), s(new)), &cfg(VOLC), RULE, want);
}
