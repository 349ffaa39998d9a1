use rstest::rstest;

use crate::providers::Provider::{self, Alibaba, Ctyun, Huawei, Volcengine};
use crate::testkit::{Expect, Expect::*, cfg, create, delete, expect, k, lb, update, update_by};

const NONE: &str = "";
const CCM: &str = "ccm:\n  users: [system:serviceaccount:kube-system:cloud-controller-manager]\n";
const CCM_USER: &str = "system:serviceaccount:kube-system:cloud-controller-manager";

#[rstest]
#[case::ctyun_unchanged(Ctyun, Some("lb-a"), Some("lb-a"), Pass)]
#[case::ctyun_changed(Ctyun, Some("lb-a"), Some("lb-b"), Deny)]
#[case::ctyun_removed(Ctyun, Some("lb-a"), None, Deny)]
#[case::ctyun_added(Ctyun, None, Some("lb-b"), Deny)]
#[case::alibaba_unchanged(Alibaba, Some("lb-a"), Some("lb-a"), Pass)]
#[case::alibaba_changed(Alibaba, Some("lb-a"), Some("lb-b"), Deny)]
#[case::alibaba_removed(Alibaba, Some("lb-a"), None, Deny)]
#[case::huawei_unchanged(Huawei, Some("elb-1"), Some("elb-1"), Pass)]
#[case::huawei_changed(Huawei, Some("elb-1"), Some("elb-2"), Deny)]
#[case::huawei_added(Huawei, None, Some("elb-2"), Deny)]
#[case::volcengine_unchanged(Volcengine, Some("clb-1"), Some("clb-1"), Pass)]
#[case::volcengine_changed(Volcengine, Some("clb-1"), Some("nlb-2"), Deny)]
#[case::volcengine_removed(Volcengine, Some("clb-1"), None, Deny)]
fn lb_id_immutable(
    #[case] p: Provider,
    #[case] old: Option<&str>,
    #[case] new: Option<&str>,
    #[case] want: Expect,
) {
    let mut o = lb().pa(p, "spec", "x");
    let mut n = lb().pa(p, "spec", "x");
    if let Some(v) = old {
        o = o.pa(p, "id", v);
    }
    if let Some(v) = new {
        n = n.pa(p, "id", v);
    }
    let cfg = cfg(&format!("provider: {p}\n"));
    let v = expect(&update(o, n), &cfg, "lb-id-immutable", want);
    if want == Deny {
        let msg = &v.denials().next().unwrap().message;
        assert!(msg.contains(&k(p, "id")), "{msg}");
        assert!(msg.contains("delete and recreate"), "{msg}");
    }
}

#[test]
fn lb_id_change_message_is_the_catalogs() {
    let v = expect(
        &update(
            lb().pa(Alibaba, "id", "lb-a"),
            lb().pa(Alibaba, "id", "lb-b"),
        ),
        &cfg(NONE),
        "lb-id-immutable",
        Deny,
    );
    assert_eq!(
        v.denial_message().unwrap(),
        "[lb-id-immutable] service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id cannot change from \"lb-a\" to \"lb-b\" on an existing Service; delete and recreate the Service to move it to another load balancer"
    );
}

const ALI_LABEL: &str = "service.k8s.alibaba/loadbalancer-id";

#[rstest]
#[case::same_as_label("lb-a", Pass)]
#[case::other_than_label("lb-b", Deny)]
fn lb_id_alibaba_label(#[case] added: &str, #[case] want: Expect) {
    let old = lb()
        .label(ALI_LABEL, "lb-a")
        .finalizer("service.k8s.alibaba/resources");
    let new = old.clone().pa(Alibaba, "id", added);
    let v = expect(&update(old, new), &cfg(NONE), "lb-id-immutable", want);
    if want == Deny {
        assert!(
            v.denial_message()
                .unwrap()
                .contains("already bound this Service to \"lb-a\"")
        );
    }
}

#[test]
fn lb_id_legacy_prefix_rename_is_no_change() {
    let old = lb().ann(
        "service.beta.kubernetes.io/alicloud-loadbalancer-id",
        "lb-a",
    );
    let new = lb().pa(Alibaba, "id", "lb-a");
    expect(&update(old, new), &cfg(NONE), "lb-id-immutable", Pass);
}

#[rstest]
#[case::unknown_ccm_warns(NONE, "alice", Warn)]
#[case::ccm_may(CCM, CCM_USER, Pass)]
#[case::user_may_not(CCM, "alice", Deny)]
fn lb_id_huawei_autocreated(#[case] config: &str, #[case] who: &str, #[case] want: Expect) {
    let old = lb().pa(Huawei, "autocreate", r#"{"type":"inner"}"#);
    let new = old.clone().pa(Huawei, "id", "elb-9");
    expect(
        &update_by(old, new, who),
        &cfg(config),
        "lb-id-immutable",
        want,
    );
}

#[test]
fn becoming_a_load_balancer_counts_as_create() {
    let old = lb().type_("ClusterIP");
    let new = lb().pa(Ctyun, "id", "lb-a");
    expect(&update(old, new), &cfg(NONE), "lb-id-immutable", Pass);
}

#[rstest]
fn type_change_drops_lb(
    #[values(Ctyun, Alibaba, Huawei, Volcengine)] p: Provider,
    #[values(("LoadBalancer", Pass), ("ClusterIP", Warn), ("NodePort", Warn))] to: (&str, Expect),
) {
    let old = lb().pa(p, "spec", "x");
    let new = old.clone().type_(to.0);
    expect(&update(old, new), &cfg(NONE), "type-change-drops-lb", to.1);
}

#[rstest]
#[case::alibaba_user_removes(NONE, CCM, "service.k8s.alibaba/resources", "alice", Deny)]
#[case::alibaba_nlb_user_removes(NONE, CCM, "service.k8s.alibaba/nlb", "alice", Deny)]
#[case::alibaba_ccm_removes(NONE, CCM, "service.k8s.alibaba/resources", CCM_USER, Pass)]
#[case::alibaba_no_ccm_configured(NONE, NONE, "service.k8s.alibaba/resources", "alice", Warn)]
#[case::unprotected_finalizer(NONE, CCM, "example.com/other", "alice", Pass)]
#[case::ctyun_configured(
    "ccm:\n  users: [ccm]\n  finalizers: [service.kubernetes.io/load-balancer-cleanup]\n",
    NONE,
    "service.kubernetes.io/load-balancer-cleanup",
    "alice",
    Deny
)]
fn finalizer_protected(
    #[case] extra: &str,
    #[case] ccm: &str,
    #[case] finalizer: &str,
    #[case] who: &str,
    #[case] want: Expect,
) {
    let old = lb()
        .pa(Alibaba, "spec", "slb.s1.small")
        .finalizer(finalizer);
    let new = lb().pa(Alibaba, "spec", "slb.s1.small");
    let config = cfg(&format!("{extra}{ccm}"));
    expect(
        &update_by(old, new, who),
        &config,
        "finalizer-protected",
        want,
    );
}

#[rstest]
fn finalizer_protected_configured_for_any_provider(
    #[values(Ctyun, Huawei, Volcengine)] p: Provider,
    #[values(("alice", Deny), (CCM_USER, Pass))] who: (&str, Expect),
) {
    let f = "example.com/lb-cleanup";
    let config = cfg(&format!(
        "ccm:\n  users: [{CCM_USER}]\n  finalizers: [{f}]\n"
    ));
    let old = lb().pa(p, "id", "lb-1").finalizer(f);
    let new = lb().pa(p, "id", "lb-1");
    if p == Volcengine {
        let add = |s: crate::testkit::SvcBuilder| {
            s.pa(p, "server-group-id", "rsp-1:80").pa(p, "weight", "5")
        };
        expect(
            &update_by(add(old), add(new), who.0),
            &config,
            "finalizer-protected",
            who.1,
        );
    } else {
        expect(
            &update_by(old, new, who.0),
            &config,
            "finalizer-protected",
            who.1,
        );
    }
}

/// A Service that stopped being a LoadBalancer keeps the CCM's finalizer until the CCM has
/// cleaned up: removing it by hand is still denied (the exported policy, which has no
/// LoadBalancer match condition for this rule, agrees).
#[test]
fn finalizer_protected_after_the_type_changed() {
    let old = lb()
        .type_("ClusterIP")
        .finalizer("service.k8s.alibaba/resources");
    let new = lb().type_("ClusterIP");
    expect(&update(old, new), &cfg(CCM), "finalizer-protected", Deny);
}

#[test]
fn finalizer_kept_passes() {
    let old = lb().finalizer("service.k8s.alibaba/resources");
    let new = old.clone().label("tier", "web");
    expect(&update(old, new), &cfg(CCM), "finalizer-protected", Pass);
}

#[rstest]
#[case::ctyun_internet(Ctyun, "internet", Pass)]
#[case::ctyun_intranet(Ctyun, "intranet", Pass)]
#[case::ctyun_upper(Ctyun, "Internet", Deny)]
#[case::alibaba_intranet(Alibaba, "intranet", Pass)]
#[case::alibaba_public(Alibaba, "public", Deny)]
fn address_type_value(#[case] p: Provider, #[case] value: &str, #[case] want: Expect) {
    let s = lb().pa(p, "address-type", value);
    expect(&create(s), &cfg(NONE), "address-type-value", want);
}

#[rstest]
#[case::ctyun_cluster(Ctyun, "Cluster", None, Pass)]
#[case::ctyun_local(Ctyun, "Local", None, Warn)]
#[case::ctyun_local_proxy(Ctyun, "Local", Some(("ip-mode", "proxy")), Pass)]
#[case::alibaba_local(Alibaba, "Local", None, Warn)]
#[case::alibaba_local_hostname(Alibaba, "Local", Some(("hostname", "web.example.com")), Pass)]
#[case::huawei_local(Huawei, "Local", None, Warn)]
#[case::huawei_local_pass_through(Huawei, "Local", Some(("pass-through", "true")), Pass)]
fn in_cluster_access_advice(
    #[case] p: Provider,
    #[case] etp: &str,
    #[case] fix: Option<(&str, &str)>,
    #[case] want: Expect,
) {
    let mut s = lb().pa(p, "id", "lb-1").etp(etp);
    if let Some((key, value)) = fix {
        s = s.pa(p, key, value);
    }
    let config = cfg("cluster:\n  version: v1.31.0\n");
    expect(&create(s), &config, "in-cluster-access-advice", want);
}

#[test]
fn in_cluster_access_advice_can_be_turned_off() {
    let s = lb().pa(Alibaba, "id", "lb-1").etp("Local");
    expect(
        &create(s),
        &cfg("rules:\n  in-cluster-access-advice: off\n"),
        "in-cluster-access-advice",
        Pass,
    );
}

#[rstest]
#[case::alibaba_override_true(Alibaba, "force-override-listeners", "true", Pass)]
#[case::alibaba_override_yes(Alibaba, "force-override-listeners", "yes", Deny)]
#[case::alibaba_unscheduled_on(Alibaba, "remove-unscheduled-backend", "on", Pass)]
#[case::alibaba_unscheduled_true(Alibaba, "remove-unscheduled-backend", "true", Deny)]
#[case::huawei_class_union(Huawei, "class", "union", Pass)]
#[case::huawei_class_shared(Huawei, "class", "shared", Deny)]
#[case::huawei_pass_through_false(Huawei, "pass-through", "false", Pass)]
#[case::huawei_pass_through_on(Huawei, "pass-through", "on", Deny)]
fn enum_values(#[case] p: Provider, #[case] key: &str, #[case] value: &str, #[case] want: Expect) {
    let s = lb().pa(p, key, value);
    expect(
        &create(s),
        &cfg("cluster:\n  version: v1.31.0\n"),
        "enum-values",
        want,
    );
}

#[rstest]
#[case::alibaba_same(Alibaba, "address-type", Some("intranet"), "intranet", Pass)]
#[case::alibaba_address_type(Alibaba, "address-type", Some("intranet"), "internet", Deny)]
#[case::alibaba_default_made_explicit(Alibaba, "address-type", None, "internet", Pass)]
#[case::alibaba_default_changed(Alibaba, "address-type", None, "intranet", Deny)]
#[case::alibaba_zone(Alibaba, "master-zoneid", Some("cn-hangzhou-a"), "cn-hangzhou-b", Deny)]
#[case::huawei_class_same(Huawei, "class", Some("performance"), "performance", Pass)]
#[case::huawei_class(Huawei, "class", Some("union"), "performance", Deny)]
#[case::huawei_autocreate(
    Huawei,
    "autocreate",
    Some(r#"{"type":"inner"}"#),
    r#"{"type":"public"}"#,
    Deny
)]
fn lb_attributes_immutable(
    #[case] p: Provider,
    #[case] key: &str,
    #[case] old: Option<&str>,
    #[case] new: &str,
    #[case] want: Expect,
) {
    let mut o = lb().pa(p, "spec", "x");
    if let Some(v) = old {
        o = o.pa(p, key, v);
    }
    let n = lb().pa(p, "spec", "x").pa(p, key, new);
    expect(&update(o, n), &cfg(NONE), "lb-attributes-immutable", want);
}

#[rstest]
#[case::ctyun_known(Ctyun, "address-type", None)]
#[case::ctyun_typo(
    Ctyun,
    "adress-type",
    Some("service.beta.kubernetes.io/ctyun-loadbalancer-address-type")
)]
#[case::alibaba_known(Alibaba, "health-check-flag", None)]
#[case::alibaba_case(
    Alibaba,
    "Address-Type",
    Some("service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type")
)]
#[case::huawei_known(Huawei, "lb-algorithm", None)]
#[case::huawei_typo(Huawei, "protocol-ports", Some("kubernetes.io/elb.protocol-port"))]
#[case::volcengine_known(Volcengine, "server-group-id", None)]
#[case::volcengine_typo(
    Volcengine,
    "wieght",
    Some("service.beta.kubernetes.io/volcengine-loadbalancer-weight")
)]
fn unknown_annotation(#[case] p: Provider, #[case] suffix: &str, #[case] hint: Option<&str>) {
    let s = lb().pa(p, suffix, "x");
    let want = if hint.is_some() { Warn } else { Pass };
    let v = expect(&create(s), &cfg(NONE), "unknown-annotation", want);
    if let Some(h) = hint {
        let w = v.warnings().join("\n");
        assert!(w.contains(&format!("did you mean \"{h}\"")), "{w}");
    }
}

#[test]
fn unknown_annotation_wrong_case_prefix_is_caught() {
    let s = lb().ann(
        "Service.Beta.Kubernetes.io/alibaba-cloud-loadbalancer-id",
        "lb-1",
    );
    expect(&create(s), &cfg(NONE), "unknown-annotation", Warn);
}

#[rstest]
fn deletion_protection(
    #[values(Ctyun, Alibaba, Huawei, Volcengine)] p: Provider,
    #[values(("true", Deny), ("false", Pass))] mark: (&str, Expect),
) {
    let s = lb()
        .pa(p, "id", "lb-1")
        .ann("lbguard.io/deletion-protection", mark.0);
    let v = expect(&delete(s), &cfg(NONE), "deletion-protection", mark.1);
    if mark.1 == Deny {
        assert!(
            v.denial_message()
                .unwrap()
                .contains("lbguard.io/deletion-protection-")
        );
    }
}

/// The mark is on the Service: it protects any Service that carries it, LoadBalancer or not,
/// and one another load balancer implementation serves (so does the exported policy, which
/// has no LoadBalancer or provider match condition for this rule, and the chart's webhook).
#[rstest]
#[case::cluster_ip(lb().type_("ClusterIP"))]
#[case::other_implementation(lb().class("metallb.io/metallb"))]
#[case::other_implementation_with_provider_annotations(
    lb().class("metallb.io/metallb").pa(Alibaba, "id", "lb-1")
)]
fn deletion_protection_protects_every_marked_service(
    #[case] s: crate::testkit::SvcBuilder,
    #[values("ctyun", "alibaba", "auto")] provider: &str,
) {
    let config = cfg(&format!("provider: {provider}\n"));
    let marked = s.clone().ann("lbguard.io/deletion-protection", "true");
    expect(&delete(marked), &config, "deletion-protection", Deny);
    let v = expect(&delete(s), &config, "deletion-protection", Pass);
    assert!(v.allowed(), "{v:#?}");
}

#[test]
fn deletion_protection_by_label() {
    let config = cfg("deletionProtection:\n  label: protect\n");
    expect(
        &delete(lb().label("protect", "true")),
        &config,
        "deletion-protection",
        Deny,
    );
    expect(&delete(lb()), &config, "deletion-protection", Pass);
}

#[test]
fn config_can_add_known_annotations() {
    let s = lb().pa(Ctyun, "listener-idle-timeout", "60");
    expect(&create(s.clone()), &cfg(NONE), "unknown-annotation", Warn);
    let config = cfg("knownAnnotations:\n  ctyun: [listener-idle-timeout]\n");
    expect(&create(s), &config, "unknown-annotation", Pass);
}

/// The suggestion's distance is Levenshtein's, only computed on what differs.
#[test]
fn edits_up_to_is_levenshtein_within_the_bound() {
    let keys = [
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type",
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-adress-type",
        "service.beta.kubernetes.io/alicloud-loadbalancer-address-type",
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id",
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-ids",
        "kubernetes.io/elb.class",
        "kubernetes.io/elb.clas",
        "kubernetes.io/élb.class",
        "aaa",
        "",
    ];
    for a in keys {
        for b in keys {
            let d = strsim::levenshtein(a, b);
            for max in [0, 1, 4, 100] {
                assert_eq!(
                    crate::rules::unknown::edits_up_to(a, b, max),
                    (d <= max).then_some(d),
                    "{a} / {b} / {max}"
                );
            }
        }
    }
}

/// Every pair of short strings over a small alphabet (a multibyte letter among them), and
/// differing parts past the on-stack row: the same distances as `strsim::levenshtein`.
#[test]
fn edits_up_to_matches_levenshtein_on_every_short_pair() {
    let mut words = vec![String::new()];
    let mut last = vec![String::new()];
    for _ in 0..4 {
        last = last
            .iter()
            .flat_map(|w| ["a", "b", "é"].map(|c| format!("{w}{c}")))
            .collect();
        words.extend(last.iter().cloned());
    }
    words.push("x".repeat(70));
    words.push(format!("{}y", "x".repeat(69)));
    words.push(format!("a{}b", "xy".repeat(40)));
    for a in &words {
        for b in &words {
            let d = strsim::levenshtein(a, b);
            for max in [0, 1, 2, 4] {
                assert_eq!(
                    crate::rules::unknown::edits_up_to(a, b, max),
                    (d <= max).then_some(d),
                    "{a} / {b} / {max}"
                );
            }
        }
    }
}

/// The suggestion passes over names whose letters alone put them too far away: that count
/// is never more than the distance, so no name within reach is passed over.
#[test]
fn fewest_edits_by_letters_is_at_most_the_distance() {
    use crate::vocab::annotations::{fewest_edits, letters};
    let mut words: Vec<String> = [
        "adress-type",
        "Address-Type",
        "ADDRESS_TYPE",
        "kubernetes.io/élb.class",
        "kubernetes.io/xlb.class",
        "éé",
        "ip-version",
        "x/y.z_9",
        "",
    ]
    .map(String::from)
    .to_vec();
    for p in crate::vocab::provider::Provider::ALL {
        words.extend(crate::providers::data::table(p).names().map(String::from));
    }
    for a in &words {
        for b in &words {
            let (la, lb) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
            let d = strsim::levenshtein(&la, &lb);
            assert!(
                fewest_edits(letters(a), letters(b)) as usize <= d,
                "{a} / {b}: {d} edits"
            );
            let counts = |s: &str| crate::vocab::annotations::letter_counts(s);
            assert!(
                crate::rules::unknown::fewest_edits_by_count(
                    &counts(a),
                    &counts(b),
                    letters(a) | letters(b)
                ) <= d,
                "{a} / {b}: {d} edits, by count"
            );
        }
    }
}

/// The suggestion's length test counts a name's bytes as its characters.
#[test]
fn every_catalog_name_is_ascii() {
    for p in crate::vocab::provider::Provider::ALL {
        for name in crate::providers::data::table(p).names() {
            assert!(name.is_ascii(), "{p:?}: {name}");
        }
    }
}

/// The suggestion's shortcuts pass over no name a full search would pick: for misspellings
/// of every catalog name (a character dropped, doubled, changed, two swapped, at the start,
/// middle and end; the case changed; under the prefix or another), the same name as the
/// nearest within `TYPO` edits by plain Levenshtein, first in the table's order on a tie.
#[test]
fn the_suggestion_is_the_nearest_name_by_a_full_search() {
    use crate::rules::unknown::{TYPO, closest};
    let mut checked = 0;
    for p in crate::vocab::provider::Provider::ALL {
        let cat = crate::providers::catalog(p);
        let full = |key: &str| {
            // Under the catalog's prefix only the names differ (a shared prefix changes no
            // distance); under another, the whole keys are compared.
            let lower = key.to_ascii_lowercase();
            let (lower, theirs): (&str, fn(&str) -> String) = match lower.strip_prefix(cat.prefix) {
                Some(rest) if key.starts_with(cat.prefix) => (rest, |n| n.to_ascii_lowercase()),
                _ => (lower.as_str(), |_| String::new()),
            };
            cat.table()
                .with_letters()
                .filter(|(e, _, _)| e.instead.is_none())
                .map(|(e, _, _)| {
                    let other = match theirs(&e.name) {
                        n if n.is_empty() => cat.key(&e.name).to_ascii_lowercase(),
                        n => n,
                    };
                    (strsim::levenshtein(lower, &other), e.name.as_str())
                })
                .filter(|(d, _)| *d <= TYPO)
                .min_by_key(|(d, _)| *d)
                .map(|(_, name)| cat.key(name))
        };
        for name in cat.table().names() {
            let b = name.as_bytes();
            let at = |s: &[u8]| String::from_utf8(s.to_vec()).unwrap();
            let mut typos = vec![name.to_ascii_uppercase(), format!("{name}xyz")];
            for i in [0, b.len() / 2, b.len().saturating_sub(2)] {
                if i + 1 >= b.len() {
                    continue;
                }
                typos.push(at(&[&b[..i], &b[i + 1..]].concat()));
                typos.push(at(&[&b[..=i], &b[i..]].concat()));
                typos.push(at(&[&b[..i], b"q", &b[i + 1..]].concat()));
                typos.push(at(&[&b[..i], &[b[i + 1], b[i]], &b[i + 2..]].concat()));
            }
            let other = format!("x.example.com/{}", typos[typos.len() - 1]);
            for key in typos.iter().map(|t| cat.key(t)).chain([other]) {
                assert_eq!(closest(&key, cat), full(&key), "{p:?}: {key}");
                checked += 1;
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}
