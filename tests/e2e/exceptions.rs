//! LBGuardExceptions on the real API server: RBAC decides who may create one, lbguard checks
//! it against the config, it lets one Service through for one rule with a warning, the
//! listener claim is still taken, another namespace's exception covers nothing, and at its
//! expiry the denial, the report's `fail` and an Event come back. A shared port is shared
//! pairwise only (a third Service, or one of another namespace, naming itself is denied); a
//! selector is exactly as wide as written; a stored exception the config does not honour
//! covers nothing and says so (`/report`, the metric, an Event).

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::Env;
use crate::plane::{self, Reply, User, call, collection, eventually};

const NS: &str = "exc";
const OTHER: &str = "exc-other";
const LB: &str = "lb-e2e-exc";
const ADDRESS: &str = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type";

fn service(name: &str, bad: bool) -> Value {
    let mut annotations = json!({
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": LB,
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners": "false",
    });
    if bad {
        // Not internet or intranet: address-type-value denies it.
        annotations[ADDRESS] = json!("public");
    }
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": NS, "annotations": annotations},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    })
}

fn at(t: SystemTime) -> String {
    lbguard::engine::exceptions::format_time(t)
}

fn exception(ns: &str, name: &str, services: &[&str], rules: &[&str], expires: &str) -> Value {
    json!({
        "apiVersion": "lbguard.io/v1alpha1", "kind": "LBGuardException",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"services": {"names": services}, "rules": rules,
                 "reason": "the old load balancer is replaced this week", "expires": expires},
    })
}

async fn post(client: &kube::Client, obj: &Value) -> Reply {
    call(client, "POST", &collection(obj), Some(obj)).await
}

fn denied_by(r: &Reply, rule: &str) -> bool {
    !r.ok() && r.message().contains(&format!("[{rule}]"))
}

/// A client for `user` in group `devs`, with no roles unless a case binds some.
async fn user(env: &Env, name: &str) -> kube::Client {
    let plane = &env.plane;
    let pair = plane.pki.client(&plane.dir, name, "devs");
    let path = plane.dir.join(format!("{name}.kubeconfig"));
    plane::write_kubeconfig(
        &path,
        plane.apis[0].port,
        &plane.dir.join("ca.crt"),
        User::Cert(&pair),
    );
    plane::client_from(&path).await
}

/// The lbguard result for a Service in the namespace's report, once the audit shows `want`.
async fn report_result(admin: &kube::Client, name: &str, want: &str) -> Value {
    eventually(
        Duration::from_secs(30),
        &format!("the report shows {name} as {want}"),
        || async {
            let r = call(
                admin,
                "GET",
                &format!("/apis/openreports.io/v1alpha1/namespaces/{NS}/reports/lbguard"),
                None,
            )
            .await;
            r.body["results"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|x| {
                    x["resources"][0]["name"] == name
                        && x["rule"] == "address-type-value"
                        && x["result"] == want
                })
                .cloned()
        },
    )
    .await
}

pub async fn run(env: &mut Env) {
    let admin = env.admin[0].clone();
    crate::reports::install_crds(&admin, "openreports").await;
    plane::namespace(&admin, NS).await;
    plane::namespace(&admin, OTHER).await;
    let alice = user(env, "alice").await;
    let soon = SystemTime::now() + Duration::from_secs(3 * 24 * 3600);

    // Without the role, a namespace user cannot create one.
    let first = exception(NS, "first", &["first"], &["address-type-value"], &at(soon));
    let r = post(&alice, &first).await;
    assert_eq!(r.status, 403, "{}", r.body);
    // With the chart's editor role bound in one namespace, she can there, and only there.
    plane::apply_ok(
        &admin,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "alice-exceptions", "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "lbguard-exception-editor"},
            "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
    )
    .await;
    let other_ns = exception(
        OTHER,
        "first",
        &["first"],
        &["address-type-value"],
        &at(soon),
    );
    assert_eq!(post(&alice, &other_ns).await.status, 403);

    // lbguard refuses what the config would not honour, naming each problem.
    let typo = exception(NS, "typo", &["first"], &["adress-type-value"], &at(soon));
    let r = eventually(
        Duration::from_secs(20),
        "RBAC lets alice create",
        || async {
            let r = post(&alice, &typo).await;
            (r.status != 403).then_some(r)
        },
    )
    .await;
    assert!(!r.ok(), "{}", r.body);
    assert!(
        r.message()
            .contains("spec.rules[0]: unknown rule id \"adress-type-value\""),
        "{}",
        r.message()
    );
    let far = SystemTime::now() + Duration::from_secs(40 * 24 * 3600);
    let r = post(
        &alice,
        &exception(NS, "far", &["first"], &["address-type-value"], &at(far)),
    )
    .await;
    assert!(
        !r.ok()
            && r.message()
                .contains("more than 30 days after the exception"),
        "{}",
        r.body
    );

    // An exception for another rule changes nothing; one in another namespace neither.
    post(
        &alice,
        &exception(NS, "unrelated", &["first"], &["lb-id-immutable"], &at(soon)),
    )
    .await
    .expect_ok("an exception for another rule");
    post(&admin, &other_ns)
        .await
        .expect_ok("an exception in another namespace");
    let bad = service("first", true);
    let r = eventually(
        Duration::from_secs(10),
        "lbguard sees the exceptions",
        || async {
            // Give the watch a moment: the answer must not change once it has them.
            tokio::time::sleep(Duration::from_secs(2)).await;
            Some(post(&admin, &bad).await)
        },
    )
    .await;
    assert!(denied_by(&r, "address-type-value"), "{}", r.body);

    // The exception that covers it: admitted with a warning naming it.
    post(&alice, &first)
        .await
        .expect_ok("the covering exception");
    let r = eventually(
        Duration::from_secs(20),
        "the exception lets first through",
        || async {
            let r = post(&admin, &bad).await;
            r.ok().then_some(r)
        },
    )
    .await;
    let expires = at(lbguard::engine::exceptions::parse_time(&at(soon)).unwrap());
    assert!(
        r.warnings.iter().any(|w| w.starts_with("[address-type-value]")
            && w.ends_with(&format!("(allowed by LBGuardException {NS}/first until {expires}, reason: the old load balancer is replaced this week)"))),
        "{:#?}",
        r.warnings
    );
    // Its listener claim was taken all the same: a second Service on the port is denied.
    let second = service("second", false);
    let r = post(&admin, &second).await;
    assert!(denied_by(&r, "listener-port-unique"), "{}", r.body);
    // The report shows the finding as skipped, with the exception and its reason.
    let skip = report_result(&admin, "first", "skip").await;
    assert_eq!(skip["properties"]["exception"], format!("{NS}/first"));
    assert_eq!(
        skip["properties"]["reason"],
        "the old load balancer is replaced this week"
    );

    // Expiry: a short-lived exception lets `late` in; once it is over, the same Service is
    // denied again, the report says fail, and an Event on the exception says it expired.
    let end = SystemTime::now() + Duration::from_secs(12);
    let mut late = service("late", true);
    late["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id"] =
        json!("lb-e2e-exc-late");
    post(
        &alice,
        &exception(
            NS,
            "short",
            &["late", "late-again"],
            &["address-type-value"],
            &at(end),
        ),
    )
    .await
    .expect_ok("a short exception");
    eventually(
        Duration::from_secs(10),
        "the short exception lets late through",
        || async { post(&admin, &late).await.ok().then_some(()) },
    )
    .await;
    report_result(&admin, "late", "skip").await;
    let wait = end.duration_since(SystemTime::now()).unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_secs(1)).await;
    let mut again = late.clone();
    again["metadata"]["name"] = json!("late-again");
    let r = post(&admin, &again).await;
    assert!(denied_by(&r, "address-type-value"), "{}", r.body);
    report_result(&admin, "late", "fail").await;
    let expired_events = || async {
        let r = call(
            &admin,
            "GET",
            &format!("/apis/events.k8s.io/v1/namespaces/{NS}/events"),
            None,
        )
        .await;
        r.body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| {
                e["reason"] == "ExceptionExpired"
                    && e["regarding"]["kind"] == "LBGuardException"
                    && e["regarding"]["name"] == "short"
            })
            .count()
    };
    eventually(
        Duration::from_secs(30),
        "an Event says the exception expired",
        || async { (expired_events().await > 0).then_some(()) },
    )
    .await;
    // Both replicas audit every second: a few rounds later there is still one Event.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        expired_events().await,
        1,
        "one Event for one expiry, whichever replica wrote it"
    );

    // Both named for listener-port-unique: the port may be shared, with a warning.
    post(
        &alice,
        &exception(
            NS,
            "share",
            &["first", "second"],
            &["listener-port-unique"],
            &at(soon),
        ),
    )
    .await
    .expect_ok("an exception naming both Services");
    let r = eventually(
        Duration::from_secs(20),
        "both named lets second share the port",
        || async {
            let r = post(&admin, &second).await;
            r.ok().then_some(r)
        },
    )
    .await;
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("[listener-port-unique]")
                && w.contains(&format!("allowed by LBGuardException {NS}/share"))),
        "{:#?}",
        r.warnings
    );
    pairwise(env, &alice, soon).await;
    ignored(env, &alice, soon).await;
    for ns in [NS, OTHER] {
        let _ = call(&admin, "DELETE", &format!("/api/v1/namespaces/{ns}"), None).await;
    }
}

/// `first` and `second` share port 80 through `share`, which names both. A third Service
/// whose exception names itself and both of them is denied (theirs does not name it), and
/// so is a Service of another namespace; once `share` names it (namespace included), it
/// joins.
async fn pairwise(env: &Env, alice: &kube::Client, soon: SystemTime) {
    let admin = &env.admin[0];
    let mut third_exc = exception(
        NS,
        "third",
        &["third"],
        &["listener-port-unique"],
        &at(soon),
    );
    third_exc["spec"]["sharesWith"] = json!([format!("{NS}/first"), format!("{NS}/second")]);
    post(alice, &third_exc)
        .await
        .expect_ok("the third Service's exception");
    let mut joiner_exc = exception(
        OTHER,
        "joiner",
        &["joiner"],
        &["listener-port-unique"],
        &at(soon),
    );
    joiner_exc["spec"]["sharesWith"] = json!([format!("{NS}/first"), format!("{NS}/second")]);
    post(admin, &joiner_exc)
        .await
        .expect_ok("the other namespace's exception");
    let third = service("third", false);
    let mut joiner = service("joiner", false);
    joiner["metadata"]["namespace"] = json!(OTHER);
    // Give the watch time to see both exceptions: the answer must not change once it has.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for s in [&third, &joiner] {
        let r = post(admin, s).await;
        assert!(
            denied_by(&r, "listener-port-unique"),
            "{}: {}",
            s["metadata"]["name"],
            r.body
        );
        assert!(
            r.message().contains(&format!("{NS}/first"))
                || r.message().contains(&format!("{NS}/second")),
            "{}",
            r.body
        );
    }
    // `share` (first and second's) names the joiner too: now each names the other.
    let live = call(
        admin,
        "GET",
        &format!("{}/share", collection(&third_exc)),
        None,
    )
    .await
    .expect_ok("get share")
    .body;
    let mut share = live.clone();
    share["spec"]["sharesWith"] = json!([format!("{OTHER}/joiner")]);
    call(
        alice,
        "PUT",
        &format!("{}/share", collection(&third_exc)),
        Some(&share),
    )
    .await
    .expect_ok("share names the joiner");
    let r = eventually(
        Duration::from_secs(20),
        "the joiner shares once both sides name each other",
        || async {
            let r = post(admin, &joiner).await;
            r.ok().then_some(r)
        },
    )
    .await;
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("[listener-port-unique]")
                && w.contains(&format!("allowed by LBGuardException {OTHER}/joiner"))),
        "{:#?}",
        r.warnings
    );
    let r = post(admin, &third).await;
    assert!(
        denied_by(&r, "listener-port-unique"),
        "still denied: {}",
        r.body
    );
}

/// A selector is exactly as wide as written: `Exists` with values is refused at admission.
/// An exception stored under the config that the config no longer honours (`maxDays`
/// lowered below its span) covers nothing, and `/report`, the metric and one Event on it
/// say why.
async fn ignored(env: &mut Env, alice: &kube::Client, soon: SystemTime) {
    let admin = env.admin[0].clone();
    let mut wide = exception(NS, "wide", &[], &["address-type-value"], &at(soon));
    wide["spec"]["services"] = json!({"selector": {"matchExpressions": [
        {"key": "tier", "operator": "Exists", "values": ["only-this"]}]}});
    let r = post(alice, &wide).await;
    assert!(
        r.status == 422 && r.message().contains("not allowed with operator Exists"),
        "{}",
        r.body
    );

    let twenty_days = SystemTime::now() + Duration::from_secs(20 * 24 * 3600);
    post(
        alice,
        &exception(
            NS,
            "long",
            &["long", "long-2"],
            &["address-type-value"],
            &at(twenty_days),
        ),
    )
    .await
    .expect_ok("a 20-day exception under maxDays 30");
    let mut long = service("long", true);
    long["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id"] =
        json!("lb-e2e-exc-long");
    eventually(
        Duration::from_secs(20),
        "the exception covers long",
        || async { post(&admin, &long).await.ok().then_some(()) },
    )
    .await;
    let mut again = long.clone();
    again["metadata"]["name"] = json!("long-2");
    again["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id"] =
        json!("lb-e2e-exc-long-2");
    call(
        &admin,
        "POST",
        &format!("{}?dryRun=All", collection(&again)),
        Some(&again),
    )
    .await
    .expect_ok("long-2 is covered under maxDays 30");
    // A 3-day exception the lowered cap still honours: once it covers again after the
    // restart, the replicas have their exceptions, and a denial is the cap's.
    post(
        alice,
        &exception(
            NS,
            "sentinel",
            &["sentinel"],
            &["address-type-value"],
            &at(soon),
        ),
    )
    .await
    .expect_ok("a 3-day exception");
    let mut sentinel = long.clone();
    sentinel["metadata"]["name"] = json!("sentinel");
    sentinel["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id"] =
        json!("lb-e2e-exc-sentinel");
    let dry_run = format!("{}?dryRun=All", collection(&sentinel));
    let saved: Value =
        lbguard::yaml::from_str(&std::fs::read_to_string(&env.lbguard.config).unwrap()).unwrap();
    env.lbguard
        .reconfigure(|c| c["exceptions"]["maxDays"] = json!(10))
        .await;
    eventually(
        Duration::from_secs(30),
        "the restarted replicas apply exceptions",
        || async {
            // Several in a row: the proxy spreads them over both replicas.
            for _ in 0..4 {
                if !call(&admin, "POST", &dry_run, Some(&sentinel)).await.ok() {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
    let r = eventually(
        Duration::from_secs(20),
        "the exception is ignored",
        || async {
            let r = post(&admin, &again).await;
            denied_by(&r, "address-type-value").then_some(r)
        },
    )
    .await;
    assert!(
        r.warnings.iter().all(|w| !w.contains("LBGuardException")),
        "{:#?}",
        r.warnings
    );
    let why = "more than 10 days after the exception's creation (exceptions.maxDays: 10)";
    let events = || async {
        let r = call(
            &admin,
            "GET",
            &format!("/apis/events.k8s.io/v1/namespaces/{NS}/events"),
            None,
        )
        .await;
        r.body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| {
                e["reason"] == "ExceptionIgnored"
                    && e["type"] == "Warning"
                    && e["regarding"]["kind"] == "LBGuardException"
                    && e["regarding"]["name"] == "long"
                    && e["note"].as_str().is_some_and(|n| n.contains(why))
            })
            .count()
    };
    eventually(
        Duration::from_secs(30),
        "an Event says why it is ignored",
        || async { (events().await > 0).then_some(()) },
    )
    .await;
    for i in 0..env.lbguard.replicas.len() {
        let report: Value =
            serde_json::from_str(&crate::metrics::scrape(env, i, "/report").await).unwrap();
        let listed = report["ignoredExceptions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["namespace"] == NS && e["name"] == "long")
            .cloned()
            .unwrap_or_else(|| panic!("replica {i}: {report}"));
        assert!(listed["reasons"].to_string().contains(why), "{listed}");
        let metrics = crate::metrics::scrape(env, i, "/metrics").await;
        let n = crate::metrics::sample(&metrics, "lbguard_exceptions{state=\"ignored\"}");
        assert!(n.is_some_and(|n| n >= 1.0), "replica {i}: {n:?}");
    }
    // Both replicas audit every second: still one Event.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(events().await, 1, "one Event for one set of reasons");
    env.lbguard.reconfigure(|c| *c = saved.clone()).await;
}
