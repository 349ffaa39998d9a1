use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::*;
use crate::engine::evaluate;
use crate::providers::Provider::Ctyun;
use crate::testkit::{cfg, cluster_with, create, lb, run};
use crate::vocab::ctx::{EmptyInventory, Versions};

const DAY: Duration = Duration::from_secs(24 * 3600);

fn now() -> SystemTime {
    parse_time("2026-12-02T12:00:00Z").unwrap()
}

fn set<const N: usize>(exceptions: [Exception; N]) -> ExceptionSet {
    ExceptionSet::from(Vec::from(exceptions))
}

fn exception(ns: &str, name: &str, spec: serde_json::Value) -> Exception {
    let v = json!({"apiVersion": "lbguard.io/v1alpha1", "kind": "LBGuardException",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-12-01T12:00:00Z"},
        "spec": spec});
    Exception::from_value(&v).unwrap().unwrap()
}

fn for_rule(ns: &str, services: serde_json::Value, rule: &str, expires: &str) -> Exception {
    exception(
        ns,
        "x",
        json!({"services": services, "rules": [rule], "reason": "migration to the new LB",
               "expires": expires}),
    )
}

fn subject<'a>(ns: &'a str, name: &'a str, labels: &'a BTreeMap<String, String>) -> Subject<'a> {
    Subject {
        namespace: ns,
        name,
        labels,
    }
}

/// `bad()`'s verdict once `exceptions` are applied, with the Service's labels as given.
fn bad_with(
    exceptions: &[Exception],
    labels: &BTreeMap<String, String>,
    config: &crate::vocab::config::Config,
) -> crate::engine::Verdict {
    let mut v = run(&bad(), config);
    apply(
        &mut v,
        &subject("shop", "web", labels),
        &ExceptionSet::from(exceptions.to_vec()),
        config,
        now(),
    );
    v
}

/// A Service `shop/web` that `address-type-value` denies.
fn bad() -> crate::engine::Input {
    create(
        lb().named("shop", "web")
            .label("app", "web")
            .pa(Ctyun, "address-type", "public"),
    )
}

#[test]
fn a_covering_exception_turns_the_denial_into_a_warning_that_names_it() {
    let config = cfg("");
    let mut v = run(&bad(), &config);
    assert!(!v.allowed());
    let e = for_rule(
        "shop",
        json!({"names": ["web"]}),
        "address-type-value",
        "2026-12-09T00:00:00Z",
    );
    let labels = BTreeMap::new();
    apply(
        &mut v,
        &subject("shop", "web", &labels),
        &set([e]),
        &config,
        now(),
    );
    assert!(v.allowed(), "{v:#?}");
    let w = v.warnings();
    assert!(
        w.iter().any(|w| w.starts_with("[address-type-value]")
            && w.ends_with("(allowed by LBGuardException shop/x until 2026-12-09T00:00:00Z, reason: migration to the new LB)")),
        "{w:#?}"
    );
    assert_eq!(v.denial_message(), None);
}

#[test]
fn an_exception_covers_only_its_rules_its_namespace_and_its_services() {
    let config = cfg("");
    let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    let cases = [
        // Another rule.
        for_rule(
            "shop",
            json!({"names": ["web"]}),
            "lb-id-immutable",
            "2026-12-09T00:00:00Z",
        ),
        // Another namespace.
        for_rule(
            "other",
            json!({"names": ["web"]}),
            "address-type-value",
            "2026-12-09T00:00:00Z",
        ),
        // Another Service.
        for_rule(
            "shop",
            json!({"names": ["api"]}),
            "address-type-value",
            "2026-12-09T00:00:00Z",
        ),
        // A selector that does not match.
        for_rule(
            "shop",
            json!({"selector": {"matchLabels": {"app": "db"}}}),
            "address-type-value",
            "2026-12-09T00:00:00Z",
        ),
        // Expired.
        for_rule(
            "shop",
            json!({"names": ["web"]}),
            "address-type-value",
            "2026-12-02T11:59:59Z",
        ),
        // Beyond the cap of its creation (created 2026-12-01, 30 days).
        for_rule(
            "shop",
            json!({"names": ["web"]}),
            "address-type-value",
            "2027-01-01T00:00:00Z",
        ),
    ];
    for e in cases {
        let v = bad_with(std::slice::from_ref(&e), &labels, &config);
        assert!(!v.allowed(), "{e:?} covered the finding");
    }
    // The selector that matches does.
    let e = for_rule(
        "shop",
        json!({"selector": {"matchLabels": {"app": "web"}}}),
        "address-type-value",
        "2026-12-09T00:00:00Z",
    );
    let v = bad_with(&[e], &labels, &config);
    assert!(v.allowed());
}

#[test]
fn the_config_decides_what_no_exception_covers() {
    let e = for_rule(
        "shop",
        json!({"names": ["web"]}),
        "address-type-value",
        "2026-12-09T00:00:00Z",
    );
    let labels = BTreeMap::new();
    let config = cfg("exceptions:\n  notExemptable: [address-type-value]\n");
    let v = bad_with(std::slice::from_ref(&e), &labels, &config);
    assert!(!v.allowed());
    // A wildcard covers only when the config allows it.
    let mut wild = e;
    wild.spec.rules = vec!["*".into()];
    let v = bad_with(&[wild.clone()], &labels, &cfg(""));
    assert!(!v.allowed());
    let config = cfg("exceptions:\n  allowWildcard: true\n");
    let v = bad_with(&[wild], &labels, &config);
    assert!(v.allowed());
}

/// `holder` (shop) takes port 80 of lb-1; `request` asks for it too.
fn sharing(holder: (&str, &str), request: (&str, &str), exceptions: &[Exception]) -> bool {
    let config = cfg("");
    let a = lb()
        .named(holder.0, holder.1)
        .pa(Ctyun, "id", "lb-1")
        .build();
    let state = cluster_with(&config, &[a]);
    let input = create(lb().named(request.0, request.1).pa(Ctyun, "id", "lb-1"));
    let mut v = evaluate(
        &input,
        &config,
        &Versions::from_config(&config),
        &state,
        &EmptyInventory,
    );
    assert!(!v.allowed());
    let labels = BTreeMap::new();
    let set = ExceptionSet::from(exceptions.to_vec());
    let subject = subject(request.0, request.1, &labels);
    apply(&mut v, &subject, &set, &config, now());
    // The claims' path (a holder another replica recorded) decides the same.
    let claimed = shared_port_allowed(
        &subject,
        &format!("{}/{}", holder.0, holder.1),
        &set,
        &config,
        now(),
    );
    assert_eq!(claimed.is_some(), v.allowed(), "{v:#?}");
    v.allowed()
}

fn port_exception(ns: &str, name: &str, services: serde_json::Value, shares: &[&str]) -> Exception {
    let mut e = for_rule(ns, services, "listener-port-unique", "2026-12-09T00:00:00Z");
    e.name = name.into();
    e.spec.shares_with = shares.iter().map(|s| s.to_string()).collect();
    e
}

/// Pairwise: an exception covers a shared port only when the exception of each Service on it
/// names the other (its namespace included); naming oneself is not enough.
#[test]
fn a_shared_port_is_let_through_only_when_each_names_the_other() {
    let (a, b) = (("shop", "a"), ("shop", "b"));
    let only_b = port_exception("shop", "x", json!({"names": ["b"]}), &[]);
    let only_a = port_exception("shop", "y", json!({"names": ["a"]}), &[]);
    assert!(!sharing(a, b, std::slice::from_ref(&only_b)), "one side");
    assert!(
        !sharing(a, b, &[only_b.clone(), only_a.clone()]),
        "each names itself only"
    );
    let both = port_exception("shop", "x", json!({"names": ["a", "b"]}), &[]);
    assert!(
        sharing(a, b, std::slice::from_ref(&both)),
        "one exception names both"
    );
    // Two exceptions, each naming the other by namespace/name.
    let b_with_a = port_exception("shop", "x", json!({"names": ["b"]}), &["shop/a"]);
    let a_with_b = port_exception("shop", "y", json!({"names": ["a"]}), &["shop/b"]);
    assert!(sharing(a, b, &[b_with_a.clone(), a_with_b]));
    assert!(
        !sharing(a, b, &[b_with_a, only_a]),
        "the holder's does not name b"
    );
    // A selector covers the Service for other rules, but names no peer.
    let by_label = port_exception(
        "shop",
        "x",
        json!({"selector": {"matchLabels": {"app": "web"}}}),
        &["shop/a"],
    );
    assert!(!sharing(a, b, &[by_label]));
}

/// A Service of another namespace cannot join a port by naming itself, nor by naming the
/// holder: the holder's namespace must name it too.
#[test]
fn another_namespace_joins_only_when_the_holder_s_names_it() {
    let holder = ("shop", "holder");
    let joiner = ("other", "joiner");
    let shop = port_exception("shop", "x", json!({"names": ["holder", "peer"]}), &[]);
    let self_only = port_exception("other", "y", json!({"names": ["joiner"]}), &[]);
    assert!(!sharing(holder, joiner, &[shop.clone(), self_only]));
    let names_holder = port_exception("other", "y", json!({"names": ["joiner"]}), &["shop/holder"]);
    assert!(!sharing(holder, joiner, &[shop, names_holder.clone()]));
    let shop_names_joiner =
        port_exception("shop", "x", json!({"names": ["holder"]}), &["other/joiner"]);
    assert!(sharing(
        holder,
        joiner,
        &[shop_names_joiner.clone(), names_holder]
    ));
    // Naming the joiner in sharesWith of its own namespace's exception does not make that
    // exception the holder's.
    let joiner_names_both = port_exception(
        "other",
        "y",
        json!({"names": ["joiner"]}),
        &["shop/holder", "other/joiner"],
    );
    let shop_plain = port_exception("shop", "x", json!({"names": ["holder"]}), &[]);
    assert!(!sharing(holder, joiner, &[shop_plain, joiner_names_both]));
    let _ = shop_names_joiner;
}

/// `sharesWith` names peers; it covers nothing itself.
#[test]
fn shares_with_covers_no_finding() {
    let e = port_exception("shop", "x", json!({"names": ["other"]}), &["shop/web"]);
    let mut e = e;
    e.spec.rules.push("address-type-value".into());
    let v = bad_with(&[e], &BTreeMap::new(), &cfg(""));
    assert!(!v.allowed(), "{v:#?}");
}

#[test]
fn admission_lists_every_problem_with_its_field() {
    let config = cfg("exceptions:\n  maxDays: 7\n  notExemptable: [lb-id-immutable]\n");
    let e = exception(
        "shop",
        "x",
        json!({"services": {"names": [""], "selector": {}},
               "rules": ["no-such-rule", "*", "lb-id-immutable"],
               "reason": "  ", "expires": "2026-12-20T00:00:00Z"}),
    );
    let p = problems(&e, &config, now());
    let expect = [
        "spec.reason: required",
        "spec.expires: 2026-12-20T00:00:00Z is more than 7 days after the exception's creation",
        "spec.rules[0]: unknown rule id \"no-such-rule\"",
        "spec.rules[1]: \"*\" (every rule) is not allowed",
        "spec.rules[2]: \"lb-id-immutable\" cannot be exempted",
        "spec.services.names[0]: empty name",
        "spec.services.selector: it can match every Service",
    ];
    for want in expect {
        assert!(
            p.iter().any(|p| p.starts_with(want)),
            "{want} not in {p:#?}"
        );
    }
    assert_eq!(p.len(), expect.len(), "{p:#?}");
    let good = for_rule(
        "shop",
        json!({"names": ["web"]}),
        "address-type-value",
        "2026-12-08T00:00:00Z",
    );
    assert_eq!(problems(&good, &config, now()), Vec::<String>::new());
    let past = for_rule(
        "shop",
        json!({"names": ["web"]}),
        "address-type-value",
        "2026-12-01T00:00:00Z",
    );
    assert!(problems(&past, &config, now())[0].contains("is not in the future"));
    let mut missing = good;
    missing.spec.expires = String::new();
    missing.spec.services = Default::default();
    missing.spec.rules.clear();
    let p = problems(&missing, &config, now());
    assert_eq!(p.len(), 3, "{p:#?}");
}

#[test]
fn expiring_and_expired_are_told_apart() {
    let config = cfg("");
    let soon = for_rule(
        "shop",
        json!({"names": ["web"]}),
        "address-type-value",
        "2026-12-05T00:00:00Z",
    );
    let later = for_rule(
        "shop",
        json!({"names": ["web"]}),
        "address-type-value",
        "2026-12-25T00:00:00Z",
    );
    let over = for_rule(
        "shop",
        json!({"names": ["web"]}),
        "address-type-value",
        "2026-12-02T00:00:00Z",
    );
    let all = [soon.clone(), later, over.clone()];
    assert_eq!(expiring(&all, &config, now(), EXPIRING_WITHIN), [&soon]);
    assert_eq!(expired(&all, now()), [&over]);
    assert!(!active(&over, &config, now()));
    assert!(active(&soon, &config, now()));
    assert!(!active(&soon, &config, now() + 3 * DAY));
}

#[test]
fn the_cap_counts_from_creation_and_selectors_must_select() {
    let config = cfg("");
    // Created 2026-12-01T12:00Z: an edit on 12-02 cannot push it past 12-31T12:00Z.
    let e = for_rule(
        "shop",
        json!({"names": ["web"]}),
        "address-type-value",
        "2027-01-15T00:00:00Z",
    );
    let p = problems(&e, &config, now());
    assert!(
        p[0].contains("more than 30 days after the exception's creation"),
        "{p:#?}"
    );
    // A selector of only NotIn or DoesNotExist matches unlabelled Services: every one.
    for selector in [
        json!({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}),
    ] {
        let e = for_rule(
            "shop",
            json!({"selector": selector}),
            "address-type-value",
            "2026-12-09T00:00:00Z",
        );
        let p = problems(&e, &config, now());
        assert!(
            p.iter()
                .any(|p| p.starts_with("spec.services.selector: it can match every Service")),
            "{p:#?}"
        );
        let mut v = run(&bad(), &config);
        let labels = BTreeMap::new();
        apply(
            &mut v,
            &subject("shop", "web", &labels),
            &set([e]),
            &config,
            now(),
        );
        assert!(!v.allowed(), "a catch-all selector covered a Service");
    }
    let exists = for_rule(
        "shop",
        json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}),
        "address-type-value",
        "2026-12-09T00:00:00Z",
    );
    assert_eq!(problems(&exists, &config, now()), Vec::<String>::new());
}

#[test]
fn unknown_rules_in_not_exemptable_are_config_errors() {
    let err = crate::engine::parse_config(
        "exceptions:\n  notExemptable: [listener-port-uniqe]\n",
        "test",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("exceptions.notExemptable[0]: unknown rule id \"listener-port-uniqe\""),
        "{err}"
    );
}

/// A listener the inventory says another Service owns is that Service's port: one side's
/// exception does not cover it; one by hand (`external`) is the operator's to waive.
#[test]
fn a_listener_another_service_owns_needs_that_service_named_too() {
    let config = cfg("");
    let inv = crate::testkit::inventory(
        "loadBalancers:\n  - {id: lb-1, provider: ctyun, addressType: intranet, vpcId: vpc-1, createdBy: user,\n     listeners: [{port: 80, protocol: TCP, owner: shop/a}, {port: 81, protocol: TCP, owner: external}]}\n",
    );
    let labels = BTreeMap::new();
    let check = |port: i32, exceptions: &[Exception]| {
        let input = create(
            lb().named("shop", "b")
                .pa(Ctyun, "id", "lb-1")
                .only_port(port, "TCP"),
        );
        let mut v = crate::testkit::run_with(&input, &config, &inv);
        assert!(v.rule_ids().contains(&"listener-port-unique"), "{v:#?}");
        apply(
            &mut v,
            &subject("shop", "b", &labels),
            &ExceptionSet::from(exceptions.to_vec()),
            &config,
            now(),
        );
        v.allowed()
    };
    let mine = for_rule(
        "shop",
        json!({"names": ["b"]}),
        "listener-port-unique",
        "2026-12-09T00:00:00Z",
    );
    assert!(!check(80, std::slice::from_ref(&mine)));
    assert!(
        check(81, std::slice::from_ref(&mine)),
        "a listener set up by hand"
    );
    let mut theirs = for_rule(
        "shop",
        json!({"names": ["a"]}),
        "listener-port-unique",
        "2026-12-09T00:00:00Z",
    );
    theirs.name = "y".into();
    assert!(!check(80, &[mine, theirs]), "neither names the other");
    let both = for_rule(
        "shop",
        json!({"names": ["a", "b"]}),
        "listener-port-unique",
        "2026-12-09T00:00:00Z",
    );
    assert!(check(80, &[both]));
}

/// Stored exceptions the config does not honour cover nothing, and say why: a rule no
/// exception may cover, a wildcard, a catch-all or invalid selector, an expiry past a lowered
/// `maxDays`.
#[rstest::rstest]
#[case::not_exemptable(
    "exceptions:\n  notExemptable: [address-type-value]\n",
    json!({"names": ["web"]}), "address-type-value", "cannot be exempted")]
#[case::wildcard("", json!({"names": ["web"]}), "*", "\"*\" (every rule) is not allowed")]
#[case::catch_all_selector(
    "", json!({"selector": {}}), "address-type-value", "it can match every Service")]
#[case::exists_with_values(
    "", json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["db"]}]}}),
    "address-type-value", "not allowed with operator Exists")]
#[case::does_not_exist_with_values(
    "", json!({"names": ["nobody"], "selector": {"matchExpressions": [{"key": "x", "operator": "DoesNotExist", "values": ["y"]}]}}),
    "address-type-value", "not allowed with operator DoesNotExist")]
#[case::invalid_label_key(
    "", json!({"selector": {"matchLabels": {"app web": "web"}}}), "address-type-value",
    "not a valid label key")]
#[case::max_days_lowered(
    "exceptions:\n  maxDays: 3\n", json!({"names": ["web"]}), "address-type-value",
    "more than 3 days after the exception's creation")]
fn an_exception_the_config_does_not_honour_is_ignored(
    #[case] config: &str,
    #[case] services: serde_json::Value,
    #[case] rule: &str,
    #[case] why: &str,
) {
    let config = cfg(config);
    // Created 2026-12-01T12:00Z, expires in a week: fine under the default config.
    let e = for_rule("shop", services, rule, "2026-12-08T00:00:00Z");
    let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    let v = bad_with(std::slice::from_ref(&e), &labels, &config);
    assert!(
        !v.allowed(),
        "an ignored exception covered a finding: {v:#?}"
    );
    match state(&e, &config, now()) {
        State::Ignored(reasons) => {
            assert!(
                reasons.iter().any(|r| r.contains(why)),
                "{why} not in {reasons:#?}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(!active(&e, &config, now()));
    assert!(
        expiring(std::slice::from_ref(&e), &config, now(), EXPIRING_WITHIN).is_empty(),
        "an ignored exception is not listed as about to expire"
    );
    // Once expired it is expired, whatever else.
    assert_eq!(state(&e, &config, now() + 7 * DAY), State::Expired);
    // The same exception, honoured by the default config.
    let fine = for_rule(
        "shop",
        json!({"names": ["web"]}),
        "address-type-value",
        "2026-12-08T00:00:00Z",
    );
    assert_eq!(state(&fine, &cfg(""), now()), State::Active);
}
