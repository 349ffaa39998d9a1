//! Properties of the admission edge over generated AdmissionReviews (proptest, a few
//! seconds): never a panic or a 5xx, the request's uid echoed whenever it can be read, and
//! a mutation that is a valid JSON Patch whose result the mutating webhook leaves alone.

mod common;

use std::sync::Arc;

use axum::body::Body;
use base64::Engine;
use lbguard::server::metrics::Metrics;
use lbguard::server::{AdmissionService, App, admission_service};
use proptest::prelude::*;
use serde_json::{Value, json};
use tower::ServiceExt;

const KEYS: &[&str] = &[
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id",
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type",
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-protocol-port",
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners",
    "service.beta.kubernetes.io/alicloud-loadbalancer-address-type",
    "service.beta.kubernetes.io/ctyun-loadbalancer-id",
    "service.beta.kubernetes.io/ctyun-loadbalancer-ip-mode",
    "service.beta.kubernetes.io/ctyun-loadbalancer-address-type",
    "kubernetes.io/elb.id",
    "kubernetes.io/elb.class",
    "kubernetes.io/elb.autocreate",
    "kubernetes.io/elb.protocol-port",
    "kubernetes.io/elb.skip-managed-listener",
    "kubernetes.io/elb.pass-through",
    "service.beta.kubernetes.io/volcengine-loadbalancer-id",
    "service.beta.kubernetes.io/volcengine-loadbalancer-server-group-id",
    "service.beta.kubernetes.io/volcengine-loadbalancer-weight",
    "service.beta.kubernetes.io/volcengine-loadbalancer-wieght",
    "lbguard.io/deletion-protection",
];

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("lb-1".to_string()),
        Just("intranet".to_string()),
        Just("Internet".to_string()),
        Just("true".to_string()),
        Just("performance".to_string()),
        Just("union".to_string()),
        Just("proxy".to_string()),
        Just("http:80,https:443".to_string()),
        Just("rsp-1:80".to_string()),
        Just("50".to_string()),
        Just("101".to_string()),
        Just(r#"{"type":"public","bandwidth_size":5}"#.to_string()),
        ".{0,12}",
    ]
}

fn service() -> impl Strategy<Value = Value> {
    (
        proptest::collection::btree_map(proptest::sample::select(KEYS), value(), 0..6),
        proptest::collection::vec((1i32..70000, prop_oneof![Just("TCP"), Just("UDP")]), 0..3),
        prop_oneof![6 => Just("LoadBalancer"), 1 => Just("ClusterIP"), 1 => Just("NodePort")],
        prop_oneof![Just(Value::Null), Just(json!("Local")), Just(json!("Cluster"))],
        any::<bool>(),
    )
        .prop_map(|(anns, ports, type_, etp, finalizer)| {
            let ports: Vec<Value> = ports
                .into_iter()
                .map(|(p, proto)| json!({"port": p, "protocol": proto}))
                .collect();
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "namespace": "shop", "annotations": anns,
                             "finalizers": if finalizer { json!(["service.k8s.alibaba/resources"]) } else { json!([]) }},
                "spec": {"type": type_, "ports": ports, "externalTrafficPolicy": etp}
            })
        })
}

/// A review, sometimes bent out of shape the way a broken client or proxy would.
fn review() -> impl Strategy<Value = Value> {
    (
        prop_oneof![4 => Just("CREATE"), 4 => Just("UPDATE"), 1 => Just("DELETE"), 1 => Just("CONNECT"), 1 => Just("PATCH")],
        service(),
        service(),
        prop_oneof![8 => Just(json!("uid-1")), 1 => Just(json!("")), 1 => Just(Value::Null), 1 => Just(json!(7))],
        any::<bool>(),
        0u8..16,
    )
        .prop_map(|(op, object, old, uid, dry, bend)| {
            let mut r = json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Service"},
                            "operation": op, "name": "web", "namespace": "shop", "dryRun": dry,
                            "userInfo": {"username": "alice", "groups": ["dev"]},
                            "object": if op == "DELETE" { Value::Null } else { object },
                            "oldObject": if op == "CREATE" { Value::Null } else { old }}
            });
            match bend {
                1 => r["request"]["object"]["spec"]["ports"] = json!("eighty"),
                2 => r["request"]["object"]["metadata"]["annotations"] = json!(["a"]),
                3 => r["apiVersion"] = json!("admission.k8s.io/v1beta1"),
                4 => r["request"]["kind"]["kind"] = json!("Pod"),
                5 => r["request"] = json!(null),
                _ => {}
            }
            r
        })
}

struct Edge {
    rt: tokio::runtime::Runtime,
    service: AdmissionService,
}

impl Edge {
    fn new() -> Self {
        let config = lbguard::engine::parse_config(
            "cluster:\n  version: v1.31.0\ndefaults:\n  volcengineWeight: 50\n  huaweiElbClass: performance\n  ctyunIpModeProxy: true\n  annotations:\n    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-remove-unscheduled-backend: \"on\"\n",
            "props",
        )
        .unwrap();
        Self {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            service: admission_service(App::new(config, Arc::new(Metrics::new()))),
        }
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let req = axum::http::Request::post(path)
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(body).unwrap()))
            .unwrap();
        self.rt.block_on(async {
            let resp = self.service.clone().oneshot(req).await.unwrap();
            let status = resp.status().as_u16();
            let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
                .await
                .unwrap();
            (
                status,
                serde_json::from_slice(&bytes).expect("every answer is JSON"),
            )
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn admission_edge_properties(r in review()) {
        let edge = Edge::new();
        let uid = r["request"]["uid"].as_str().filter(|u| !u.is_empty()).map(str::to_string);
        for path in ["/validate", "/mutate"] {
            let (status, answer) = edge.post(path, &r);
            prop_assert!(status < 500, "{path}: {status} {answer}");
            if status != 200 {
                prop_assert!(answer["error"].is_string());
                continue;
            }
            prop_assert_eq!(answer["response"]["uid"].as_str(), uid.as_deref());
            let Some(patch) = answer["response"]["patch"].as_str() else { continue };
            prop_assert_eq!(answer["response"]["patchType"].as_str(), Some("JSONPatch"));
            let bytes = base64::engine::general_purpose::STANDARD.decode(patch).unwrap();
            let patch: json_patch::Patch = serde_json::from_slice(&bytes).expect("a JSON Patch");
            let mut object = r["request"]["object"].clone();
            json_patch::patch(&mut object, &patch).expect("the patch applies");
            // The API server calls the webhook again with the patched object: nothing more.
            let mut again = r.clone();
            again["request"]["object"] = object;
            let (status, second) = edge.post("/mutate", &again);
            prop_assert_eq!(status, 200);
            prop_assert!(second["response"]["patch"].is_null(), "second pass patched again: {second}");
        }
    }
}

/// YAML-ish text: structure characters, quotes, colons, dashes, indentation, unicode.
fn yamlish() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("\n".to_string()),
            Just("  ".to_string()),
            Just("- ".to_string()),
            Just(": ".to_string()),
            Just("---\n".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just(",".to_string()),
            Just("\"".to_string()),
            Just("'".to_string()),
            Just("&a ".to_string()),
            Just("*a".to_string()),
            Just("? ".to_string()),
            Just("kind: Service\n".to_string()),
            Just("metadata:\n  name: x\n".to_string()),
            "[a-z0-9./]{1,8}".prop_map(String::from),
            "\\PC{0,3}".prop_map(String::from),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    /// `check`'s reader on any text: documents and their field positions never panic, and
    /// every document that parsed has a position map (they line up).
    #[test]
    fn yaml_documents_and_positions_never_panic(text in yamlish()) {
        let docs = lbguard::yaml::documents(&text);
        let places = lbguard::cli::positions::index(&text);
        let parsed = docs.iter().filter(|d| d.is_ok()).count();
        if parsed == docs.len() {
            prop_assert_eq!(places.len(), docs.len(), "{:?}", text);
        }
        for p in &places {
            let (line, col) = p.locate(&[], "metadata.annotations[x]");
            prop_assert!(line >= 1 && col >= 1);
        }
    }
}
