//! LBGuardExceptions on the real API server: RBAC decides who may create one, lbguard checks
//! it against the config, it lets one Service through for one rule with a warning, the
//! listener claim is still taken, another namespace's exception covers nothing, and at its
//! expiry the denial, the report's `fail` and an Event come back.

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
    for ns in [NS, OTHER] {
        let _ = call(&admin, "DELETE", &format!("/api/v1/namespaces/{ns}"), None).await;
    }
}
