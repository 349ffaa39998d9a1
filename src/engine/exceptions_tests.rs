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

#[test]
fn a_shared_port_is_let_through_only_when_both_services_are_named() {
    let config = cfg("");
    let a = lb().named("shop", "a").pa(Ctyun, "id", "lb-1").build();
    let state = cluster_with(&config, &[a]);
    let input = create(lb().named("shop", "b").pa(Ctyun, "id", "lb-1"));
    let run = || {
        evaluate(
            &input,
            &config,
            &Versions::from_config(&config),
            &state,
            &EmptyInventory,
        )
    };
    let labels = BTreeMap::new();
    let mine = for_rule(
        "shop",
        json!({"names": ["b"]}),
        "listener-port-unique",
        "2026-12-09T00:00:00Z",
    );
    let mut v = run();
    assert!(!v.allowed());
    apply(
        &mut v,
        &subject("shop", "b", &labels),
        &set([mine.clone()]),
        &config,
        now(),
    );
    assert!(
        !v.allowed(),
        "one side's exception let two Services share a port"
    );
    let mut theirs = for_rule(
        "shop",
        json!({"names": ["a"]}),
        "listener-port-unique",
        "2026-12-09T00:00:00Z",
    );
    theirs.name = "y".into();
    let mut v = run();
    apply(
        &mut v,
        &subject("shop", "b", &labels),
        &set([mine.clone(), theirs.clone()]),
        &config,
        now(),
    );
    assert!(v.allowed(), "{v:#?}");
    assert!(
        shared_port_allowed(
            &subject("shop", "b", &labels),
            "shop/a",
            &set([mine.clone(), theirs]),
            &config,
            now()
        )
        .is_some()
    );
    assert!(
        shared_port_allowed(
            &subject("shop", "b", &labels),
            "shop/a",
            &set([mine]),
            &config,
            now()
        )
        .is_none()
    );
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
    let mut past = good.clone();
    past.spec.expires = "2026-12-01T00:00:00Z".into();
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
    assert!(check(80, &[mine, theirs]));
}
