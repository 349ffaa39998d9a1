use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};

use super::*;
use crate::cluster::audit::audit;
use crate::engine::{EmptyInventory, Versions};
use crate::providers::Provider::{Alibaba, Ctyun};
use crate::testkit::{cfg, cluster_with, lb};

/// An API server with report CRDs: discovery, server-side apply, list by label, delete.
#[derive(Default)]
pub(super) struct Fake {
    pub(super) groups: Vec<(&'static str, &'static str)>,
    /// (path without query) -> object
    pub(super) objects: BTreeMap<String, Value>,
    pub(super) requests: Vec<String>,
    /// Namespaces whose writes are refused with this status (code, Status object).
    pub(super) refuse: BTreeMap<String, (StatusCode, Value)>,
}

pub(super) fn fake(groups: &[(&'static str, &'static str)]) -> (Client, Arc<Mutex<Fake>>) {
    let state = Arc::new(Mutex::new(Fake {
        groups: groups.to_vec(),
        ..Default::default()
    }));
    let s = Arc::clone(&state);
    let svc = tower::service_fn(move |req: Request<Body>| {
        let s = Arc::clone(&s);
        async move {
            let method = req.method().clone();
            let path = req.uri().path().to_string();
            let query = req.uri().query().unwrap_or_default().to_string();
            let body = http_body_util::BodyExt::collect(req.into_body())
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let mut f = s.lock().unwrap();
            f.requests.push(format!("{method} {path}"));
            let (status, out) = if path == "/apis" {
                let groups: Vec<Value> = f
                    .groups
                    .iter()
                    .map(|(g, v)| json!({"name": g, "versions": [{"groupVersion": format!("{g}/{v}"), "version": v}], "preferredVersion": {"groupVersion": format!("{g}/{v}"), "version": v}}))
                    .collect();
                (
                    StatusCode::OK,
                    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
                )
            } else if let Some((code, status)) = f
                .refuse
                .iter()
                .find(|(ns, _)| path.contains(&format!("/namespaces/{ns}/")))
                .map(|(_, r)| r.clone())
            {
                (code, status)
            } else if method == Method::PATCH {
                assert!(
                    query.contains("fieldManager=lbguard") && query.contains("force=true"),
                    "{query}"
                );
                let obj: Value = serde_json::from_slice(&body).unwrap();
                f.objects.insert(path, obj.clone());
                (StatusCode::OK, obj)
            } else if method == Method::DELETE {
                match f.objects.remove(&path) {
                    Some(_) => (
                        StatusCode::OK,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
                    ),
                    None => (
                        StatusCode::NOT_FOUND,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
                    ),
                }
            } else if method == Method::GET {
                // A cluster-wide list: /apis/{group}/{version}/{plural}
                assert!(
                    query.contains("labelSelector=app.kubernetes.io%2Fmanaged-by%3Dlbguard"),
                    "{query}"
                );
                let prefix = path.trim_end_matches('/').to_string();
                let plural = prefix.rsplit('/').next().unwrap().to_string();
                let base = prefix.trim_end_matches(&format!("/{plural}")).to_string();
                let items: Vec<Value> = f
                    .objects
                    .iter()
                    .filter(|(p, _)| {
                        p.starts_with(&format!("{base}/namespaces/"))
                            && p.contains(&format!("/{plural}/"))
                    })
                    .map(|(_, o)| o.clone())
                    .collect();
                (
                    StatusCode::OK,
                    json!({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}),
                )
            } else {
                (StatusCode::METHOD_NOT_ALLOWED, json!({}))
            };
            Ok::<_, std::convert::Infallible>(
                Response::builder()
                    .status(status)
                    .body(Body::from(serde_json::to_vec(&out).unwrap()))
                    .unwrap(),
            )
        }
    });
    (Client::new(svc, "default"), state)
}

fn schema(file: &str) -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(file);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn assert_schema_valid(api: ReportApi, objects: &BTreeMap<String, Value>) {
    let v = match api {
        ReportApi::OpenReports => schema("report-openreports-v1alpha1.json"),
        ReportApi::WgPolicy => schema("policyreport-wgpolicyk8s-v1alpha2.json"),
    };
    assert!(!objects.is_empty());
    for o in objects.values() {
        let errors: Vec<String> = v.iter_errors(o).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}\n{o:#}");
    }
    // The schema does catch a report the API would not take.
    let mut broken = objects.values().next().unwrap().clone();
    broken["results"][0]["result"] = json!("failed");
    assert!(!v.is_valid(&broken));
}

/// Two namespaces: `shop` with a denied pair and a clean Service, `web` with a bad value.
pub(super) fn services() -> Vec<k8s_openapi::api::core::v1::Service> {
    vec![
        lb().named("shop", "a")
            .uid("u-a")
            .pa(Ctyun, "id", "lb-1")
            .build(),
        lb().named("shop", "b")
            .uid("u-b")
            .pa(Ctyun, "id", "lb-1")
            .build(),
        lb().named("shop", "c")
            .uid("u-c")
            .pa(Ctyun, "id", "lb-2")
            .build(),
        lb().named("web", "bad")
            .uid("u-bad")
            .pa(Alibaba, "address-type", "public")
            .build(),
    ]
}

pub(super) fn report_of(svcs: &[k8s_openapi::api::core::v1::Service]) -> Report {
    report_granted(svcs, &crate::cluster::audit::Granted::none())
}

fn report_granted(
    svcs: &[k8s_openapi::api::core::v1::Service],
    granted: &crate::cluster::audit::Granted,
) -> Report {
    let config = cfg("");
    let state = cluster_with(&config, svcs);
    audit(
        &state,
        &config,
        &Versions::from_config(&config),
        &EmptyInventory,
        granted,
    )
    .0
}

/// `web/bad`'s address type let through until a week from now.
fn exempted_report() -> Report {
    let now = std::time::SystemTime::now();
    let expires =
        crate::engine::exceptions::format_time(now + std::time::Duration::from_secs(3 * 24 * 3600));
    let e = crate::engine::exceptions::Exception::from_value(&json!({
        "apiVersion": "lbguard.io/v1alpha1", "kind": "LBGuardException",
        "metadata": {"name": "legacy-lb", "namespace": "web"},
        "spec": {"services": {"names": ["bad"]}, "rules": ["address-type-value"],
                 "reason": "the old load balancer goes on Friday", "expires": expires}}))
    .unwrap()
    .unwrap();
    report_granted(
        &services(),
        &crate::cluster::audit::Granted {
            exceptions: &crate::engine::exceptions::ExceptionSet::from(vec![e]),
            now,
        },
    )
}

#[test]
fn an_exempted_finding_is_a_skip_naming_the_exception_and_its_reason() {
    let report = exempted_report();
    assert_eq!(report.summary.exempted, 1);
    assert_eq!(report.summary.denied, 2, "shop's two conflicting Services");
    assert_eq!(report.expiring_exceptions.len(), 1);
    assert_eq!(report.expiring_exceptions[0].name, "legacy-lb");
    assert!(
        !report
            .counts()
            .keys()
            .any(|(rule, _, _)| *rule == "address-type-value")
    );
    for api in [ReportApi::WgPolicy, ReportApi::OpenReports] {
        let built = build(&report, api);
        let web = &built["web"];
        assert_eq!(web["summary"]["skip"], 1);
        assert_eq!(web["summary"]["fail"], 0);
        let r = &web["results"][0];
        assert_eq!(r["result"], "skip");
        assert_eq!(r["rule"], "address-type-value");
        assert_eq!(r["properties"]["exception"], "web/legacy-lb");
        assert_eq!(
            r["properties"]["reason"],
            "the old load balancer goes on Friday"
        );
        assert_schema_valid(api, &built);
    }
}

const WG: (&str, &str) = ("wgpolicyk8s.io", "v1alpha2");
pub(super) const OPEN: (&str, &str) = ("openreports.io", "v1alpha1");

#[test]
fn discovery_prefers_openreports_then_wgpolicyk8s() {
    let set = |g: &[(&str, &str)]| -> BTreeSet<(String, String)> {
        g.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        choose(ReportsApi::Auto, &set(&[WG, OPEN])),
        Some(ReportApi::OpenReports)
    );
    assert_eq!(
        choose(ReportsApi::Auto, &set(&[WG])),
        Some(ReportApi::WgPolicy)
    );
    assert_eq!(choose(ReportsApi::Auto, &set(&[])), None);
    assert_eq!(
        choose(ReportsApi::Wgpolicyk8s, &set(&[WG, OPEN])),
        Some(ReportApi::WgPolicy)
    );
    assert_eq!(choose(ReportsApi::Openreports, &set(&[WG])), None);
    assert_eq!(choose(ReportsApi::Off, &set(&[WG, OPEN])), None);
    // Another version of the group is not the API lbguard writes.
    assert_eq!(
        choose(ReportsApi::Auto, &set(&[("wgpolicyk8s.io", "v1beta1")])),
        None
    );
}

#[test]
fn reports_hold_fails_warns_and_passes_per_namespace() {
    let report = report_of(&services());
    let built = build(&report, ReportApi::WgPolicy);
    assert_eq!(built.keys().collect::<Vec<_>>(), ["shop", "web"]);
    let shop = &built["shop"];
    assert_eq!(shop["apiVersion"], "wgpolicyk8s.io/v1alpha2");
    assert_eq!(shop["kind"], "PolicyReport");
    assert_eq!(shop["metadata"]["name"], "lbguard");
    assert_eq!(shop["summary"]["fail"], 2);
    assert_eq!(shop["summary"]["pass"], 1);
    let results = shop["results"].as_array().unwrap();
    let fail = results.iter().find(|r| r["result"] == "fail").unwrap();
    assert_eq!(fail["rule"], "listener-port-unique");
    assert_eq!(fail["policy"], "ctyun");
    assert_eq!(fail["source"], "lbguard");
    assert_eq!(fail["severity"], "high");
    assert_eq!(fail["resources"][0]["kind"], "Service");
    assert!(
        fail["resources"][0]["uid"]
            .as_str()
            .unwrap()
            .starts_with("u-")
    );
    assert!(
        fail["message"]
            .as_str()
            .unwrap()
            .starts_with("[listener-port-unique] ")
    );
    let pass = results.iter().find(|r| r["result"] == "pass").unwrap();
    assert_eq!(pass["resources"][0]["name"], "c");
    let web = &built["web"]["results"][0];
    assert_eq!(web["rule"], "address-type-value");
    assert_eq!(web["policy"], "alibaba");
    assert!(
        web["properties"]["field"]
            .as_str()
            .unwrap()
            .starts_with("metadata.annotations[")
    );
    assert_schema_valid(ReportApi::WgPolicy, &built);
    let open = build(&report, ReportApi::OpenReports);
    assert_eq!(open["shop"]["apiVersion"], "openreports.io/v1alpha1");
    assert_eq!(open["shop"]["kind"], "Report");
    assert_eq!(open["shop"]["source"], "lbguard");
    assert_schema_valid(ReportApi::OpenReports, &open);
}

const SHOP: &str = "/apis/openreports.io/v1alpha1/namespaces/shop/reports/lbguard";
pub(super) const WEB: &str = "/apis/openreports.io/v1alpha1/namespaces/web/reports/lbguard";

#[tokio::test]
async fn reports_are_created_updated_and_pruned() {
    let (client, state) = fake(&[OPEN]);
    let mut svcs = services();
    let p = round(
        &client,
        ReportsApi::Auto,
        &report_of(&svcs),
        &mut BTreeMap::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        p,
        Published {
            applied: 2,
            deleted: 0,
            failed: vec![],
        }
    );
    {
        let f = state.lock().unwrap();
        assert_eq!(f.objects.keys().collect::<Vec<_>>(), [SHOP, WEB]);
        assert_eq!(f.objects[SHOP]["summary"]["fail"], 2);
        assert_schema_valid(ReportApi::OpenReports, &f.objects);
    }
    // Service b is fixed: the shop report is updated in place, a's finding disappears.
    svcs[1] = lb()
        .named("shop", "b")
        .uid("u-b")
        .pa(Ctyun, "id", "lb-3")
        .build();
    let p = round(
        &client,
        ReportsApi::Auto,
        &report_of(&svcs),
        &mut BTreeMap::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        p,
        Published {
            applied: 2,
            deleted: 0,
            failed: vec![],
        }
    );
    {
        let f = state.lock().unwrap();
        assert_eq!(
            f.objects[SHOP]["summary"],
            json!({"pass": 3, "fail": 0, "warn": 0, "error": 0, "skip": 0})
        );
    }
    // web's only LoadBalancer Service is gone: so is its report.
    svcs.pop();
    let p = round(
        &client,
        ReportsApi::Auto,
        &report_of(&svcs),
        &mut BTreeMap::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        p,
        Published {
            applied: 1,
            deleted: 1,
            failed: vec![],
        }
    );
    assert_eq!(
        state.lock().unwrap().objects.keys().collect::<Vec<_>>(),
        [SHOP]
    );
}

#[tokio::test]
async fn nothing_is_written_without_a_report_api_or_when_off() {
    let (client, state) = fake(&[("apps", "v1")]);
    assert_eq!(
        round(
            &client,
            ReportsApi::Auto,
            &report_of(&services()),
            &mut BTreeMap::new()
        )
        .await,
        None
    );
    let (client2, state2) = fake(&[OPEN, WG]);
    assert_eq!(
        round(
            &client2,
            ReportsApi::Off,
            &report_of(&services()),
            &mut BTreeMap::new()
        )
        .await,
        None
    );
    assert_eq!(state.lock().unwrap().requests, ["GET /apis"]);
    assert!(state2.lock().unwrap().requests.is_empty());
}

/// Installing openreports after wgpolicyk8s moves lbguard's reports over: the old ones go.
#[tokio::test]
async fn a_later_openreports_install_takes_over_and_old_reports_are_removed() {
    let (client, state) = fake(&[WG]);
    round(
        &client,
        ReportsApi::Auto,
        &report_of(&services()),
        &mut BTreeMap::new(),
    )
    .await
    .unwrap();
    assert!(
        state
            .lock()
            .unwrap()
            .objects
            .keys()
            .all(|k| k.contains("/wgpolicyk8s.io/"))
    );
    state.lock().unwrap().groups.push(OPEN);
    let p = round(
        &client,
        ReportsApi::Auto,
        &report_of(&services()),
        &mut BTreeMap::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        p,
        Published {
            applied: 2,
            deleted: 2,
            failed: vec![],
        }
    );
    assert!(
        state
            .lock()
            .unwrap()
            .objects
            .keys()
            .all(|k| k.contains("/openreports.io/"))
    );
}

/// Every report, for both APIs, through the validators `@kubernetes-models/kyverno` (npm)
/// generates from the published CRDs. `scripts/test` installs the package.
#[test]
fn the_published_report_schemas_accept_every_report() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let modules = root.join("target/npm-schemas");
    assert!(
        modules
            .join("node_modules/@kubernetes-models/kyverno")
            .exists(),
        "the published report schemas are not installed: run scripts/test"
    );
    let mut all: Vec<Value> = Vec::new();
    for report in [report_of(&services()), exempted_report()] {
        for api in [ReportApi::WgPolicy, ReportApi::OpenReports] {
            all.extend(build(&report, api).into_values());
        }
    }
    let validate = |reports: &[Value]| {
        let mut child = std::process::Command::new("node")
            .arg(root.join("tests/reports/validate.mjs"))
            .arg(&modules)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("node runs");
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&serde_json::to_vec(reports).unwrap())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (ok, out) = validate(&all);
    assert!(ok, "{out}");
    assert!(out.contains(&format!("\"checked\":{}", all.len())), "{out}");
    // And they would catch a bad one.
    let mut bad = all.clone();
    bad[0]["results"][0]["severity"] = json!("urgent");
    assert!(!validate(&bad).0);
}
