//! The audit's policy reports on the real API server, with the published CRDs installed one
//! API at a time: accepted by the CRDs' schema validation (server-side apply), updated when
//! the Services change, moved to openreports.io once it appears, and pruned.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Env;
use crate::plane::{self, call, collection, eventually, kind_path};

const NS: &str = "reports";

fn crds_dir() -> PathBuf {
    let dir = std::env::var_os("LBGUARD_E2E_CRDS")
        .expect("LBGUARD_E2E_CRDS names the directory of the policy report CRDs (.ci/run sets it)");
    PathBuf::from(dir)
}

/// Installs the CRDs of one group and waits until they are established.
pub async fn install_crds(admin: &kube::Client, group: &str) -> Vec<Value> {
    let mut crds = Vec::new();
    for e in std::fs::read_dir(crds_dir()).unwrap() {
        let p = e.unwrap().path();
        if !p.file_name().unwrap().to_string_lossy().starts_with(group) {
            continue;
        }
        for doc in lbguard::yaml::documents(&std::fs::read_to_string(&p).unwrap()) {
            let crd = doc.unwrap();
            // A case before may have deleted it: applying to a terminating CRD changes
            // nothing, and it would never become established.
            eventually(
                Duration::from_secs(60),
                "an earlier copy of the CRD is gone",
                || async {
                    let r = call(admin, "GET", &plane::object_path(&crd), None).await;
                    (r.status == 404 || r.body["metadata"]["deletionTimestamp"].is_null())
                        .then_some(())
                },
            )
            .await;
            plane::apply_ok(admin, &crd).await;
            crds.push(crd);
        }
    }
    assert!(
        !crds.is_empty(),
        "no {group} CRDs in {}",
        crds_dir().display()
    );
    for crd in &crds {
        crate::install::established(admin, crd).await;
        cached(admin, crd).await;
    }
    crds
}

/// Waits until the API server lists `crd`'s objects from its watch cache. A case's cleanup
/// that deleted a CRD whose storage was still initializing left it terminating past a
/// minute (the CRD finalizer failed with "storage is (re)initializing"), and the next case
/// could not install it again.
async fn cached(admin: &kube::Client, crd: &Value) {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap();
    let plural = spec["names"]["plural"].as_str().unwrap();
    let version = spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["served"] == true)
        .and_then(|v| v["name"].as_str())
        .unwrap();
    let path = format!("/apis/{group}/{version}/{plural}?resourceVersion=0&limit=1");
    eventually(
        Duration::from_secs(30),
        &format!("{path} is listed from the cache"),
        || async { (call(admin, "GET", &path, None).await.status == 200).then_some(()) },
    )
    .await;
}

fn service(name: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": NS, "annotations": annotations},
        "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]},
    })
}

/// A Service lbguard admits with a warning (its load balancer is in no inventory).
fn warned(name: &str) -> Value {
    service(
        name,
        json!({"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": format!("lb-e2e-{name}"),
               "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners": "false"}),
    )
}

fn clean(name: &str) -> Value {
    service(
        name,
        json!({"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet"}),
    )
}

/// The `lbguard` report in NS, once its results are exactly `want` (service, result) pairs
/// (fail and warn results per rule are collapsed to one per Service).
async fn report_with(admin: &kube::Client, api: &str, kind: &str, want: &[(&str, &str)]) -> Value {
    let path = format!("{}/lbguard", kind_path(api, kind, Some(NS)));
    let mut want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    want.sort();
    let mut last = Value::Null;
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let r = call(admin, "GET", &path, None).await;
            if r.ok() {
                let mut got: Vec<(String, String)> = r.body["results"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|x| {
                        (
                            x["resources"][0]["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                            x["result"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect();
                got.sort();
                got.dedup();
                if got == want {
                    return r.body;
                }
            }
            last = r.body;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("{kind} {NS}/lbguard never had {want:?}; last: {last}"))
}

async fn gone(admin: &kube::Client, api: &str, kind: &str) {
    let path = format!("{}/lbguard", kind_path(api, kind, Some(NS)));
    eventually(
        Duration::from_secs(30),
        &format!("{kind} {NS}/lbguard is deleted"),
        || async { (call(admin, "GET", &path, None).await.status == 404).then_some(()) },
    )
    .await;
}

pub async fn run(env: &mut Env) {
    let admin = env.admin[0].clone();
    plane::namespace(&admin, NS).await;
    for s in [clean("clean"), warned("warned")] {
        let r = call(&admin, "POST", &collection(&s), Some(&s))
            .await
            .expect_ok("create");
        if s["metadata"]["name"] == "warned" {
            assert!(!r.warnings.is_empty(), "the warned Service gets warnings");
        }
    }

    // wgpolicyk8s.io alone: PolicyReports, written and accepted by the CRD's schema.
    let wg = install_crds(&admin, "wgpolicyk8s.io").await;
    let (wg_api, wg_kind) = ("wgpolicyk8s.io/v1alpha2", "PolicyReport");
    let report = report_with(
        &admin,
        wg_api,
        wg_kind,
        &[("clean", "pass"), ("warned", "warn")],
    )
    .await;
    assert_eq!(report["summary"]["pass"], 1, "{report}");
    assert!(report["summary"]["warn"].as_u64().unwrap() >= 1, "{report}");
    assert_eq!(
        report["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "lbguard"
    );

    // Updated when the Services change.
    let s = warned("warned-2");
    call(&admin, "POST", &collection(&s), Some(&s))
        .await
        .expect_ok("create");
    plane::delete(&admin, &warned("warned"))
        .await
        .expect_ok("delete");
    report_with(
        &admin,
        wg_api,
        wg_kind,
        &[("clean", "pass"), ("warned-2", "warn")],
    )
    .await;

    // openreports.io installed as well: lbguard moves there and deletes its PolicyReports.
    let or = install_crds(&admin, "openreports.io").await;
    let (or_api, or_kind) = ("openreports.io/v1alpha1", "Report");
    report_with(
        &admin,
        or_api,
        or_kind,
        &[("clean", "pass"), ("warned-2", "warn")],
    )
    .await;
    gone(&admin, wg_api, wg_kind).await;

    // A namespace without LoadBalancer Services loses its report.
    for name in ["clean", "warned-2"] {
        let mut s = clean(name);
        s["metadata"]["annotations"] = json!({});
        plane::delete(&admin, &s).await.expect_ok("delete");
    }
    gone(&admin, or_api, or_kind).await;

    for crd in wg.iter().chain(&or) {
        plane::delete(&admin, crd).await;
    }
}

/// A namespace stuck terminating (a Service whose finalizer nothing removes, as when a cloud
/// controller cannot delete its load balancer) refuses every new object, the report too.
/// lbguard counts it with its reason and keeps writing every other namespace's report. Its
/// name sorts first, so a round that stopped at the first refusal would write nothing.
pub async fn stuck_namespace(env: &mut Env) {
    const STUCK: &str = "aa-reports-stuck";
    const FLOWING: &str = "reports-flowing";
    let admin = env.admin[0].clone();
    let or = install_crds(&admin, "openreports.io").await;
    let (api, kind) = ("openreports.io/v1alpha1", "Report");
    let in_ns = |ns: &str, s: Value| {
        let mut s = s;
        s["metadata"]["namespace"] = json!(ns);
        s
    };
    let mut held = in_ns(STUCK, clean("held"));
    held["metadata"]["finalizers"] = json!(["example.com/never-removed"]);
    for (ns, s) in [
        (STUCK, held.clone()),
        (FLOWING, in_ns(FLOWING, clean("clean"))),
    ] {
        plane::namespace(&admin, ns).await;
        call(&admin, "POST", &collection(&s), Some(&s))
            .await
            .expect_ok("create");
    }
    let report = |ns: &str| format!("{}/lbguard", kind_path(api, kind, Some(ns)));
    for ns in [STUCK, FLOWING] {
        eventually(
            Duration::from_secs(30),
            &format!("{ns} has its report"),
            || async {
                call(&admin, "GET", &report(ns), None)
                    .await
                    .ok()
                    .then_some(())
            },
        )
        .await;
    }
    // The namespace is deleted; its content goes, but the Service stays for its finalizer.
    // (No namespace controller runs here: the report is deleted as it would delete it.)
    call(
        &admin,
        "DELETE",
        &format!("/api/v1/namespaces/{STUCK}"),
        None,
    )
    .await
    .expect_ok("delete the namespace");
    call(&admin, "DELETE", &report(STUCK), None)
        .await
        .expect_ok("the namespace controller's delete of the report");
    let refused = call(
        &admin,
        "POST",
        &kind_path(api, kind, Some(STUCK)),
        Some(&json!({"apiVersion": api, "kind": kind, "metadata": {"name": "probe"}})),
    )
    .await;
    assert!(
        refused.status == 403 && refused.message().contains("being terminated"),
        "the namespace refuses new objects: {}",
        refused.body
    );

    // Reports keep flowing for the others: a new Service shows up in its namespace's report.
    let s = in_ns(FLOWING, warned("warned"));
    call(&admin, "POST", &collection(&s), Some(&s))
        .await
        .expect_ok("create");
    eventually(
        Duration::from_secs(30),
        "the other namespace's report follows its Services",
        || async {
            let r = call(&admin, "GET", &report(FLOWING), None).await;
            r.body["results"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|x| x["resources"][0]["name"] == "warned" && x["result"] == "warn")
                .then_some(())
        },
    )
    .await;
    // Each replica counts the refusal with its reason.
    for i in 0..env.lbguard.replicas.len() {
        let series = "lbguard_policy_report_failures_total{reason=\"terminating\"}";
        let n = eventually(
            Duration::from_secs(30),
            "the refusal is counted",
            || async {
                crate::metrics::sample(&crate::metrics::scrape(env, i, "/metrics").await, series)
                    .filter(|n| *n >= 1.0)
            },
        )
        .await;
        assert!(n >= 1.0, "replica {i}: {series} {n}");
    }
    assert_eq!(
        call(&admin, "GET", &report(STUCK), None).await.status,
        404,
        "nothing was written in the terminating namespace"
    );

    // Let the namespace go: the finalizer removed, the Service deleted, the namespace
    // finalized (the namespace controller's part).
    let mut live = call(&admin, "GET", &plane::object_path(&held), None)
        .await
        .expect_ok("get")
        .body;
    live["metadata"]["finalizers"] = json!([]);
    call(&admin, "PUT", &plane::object_path(&held), Some(&live))
        .await
        .expect_ok("remove the finalizer");
    let _ = plane::delete(&admin, &held).await;
    eventually(Duration::from_secs(30), "the Service is gone", || async {
        (call(&admin, "GET", &plane::object_path(&held), None)
            .await
            .status
            == 404)
            .then_some(())
    })
    .await;
    let ns = call(&admin, "GET", &format!("/api/v1/namespaces/{STUCK}"), None)
        .await
        .expect_ok("get the namespace")
        .body;
    let mut done = ns.clone();
    done["spec"]["finalizers"] = json!([]);
    call(
        &admin,
        "PUT",
        &format!("/api/v1/namespaces/{STUCK}/finalize"),
        Some(&done),
    )
    .await
    .expect_ok("finalize the namespace");
    for s in [in_ns(FLOWING, clean("clean")), s] {
        plane::delete(&admin, &s).await.expect_ok("delete");
    }
    for crd in &or {
        plane::delete(&admin, crd).await;
    }
}
