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
    }
    crds
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
