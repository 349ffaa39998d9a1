//! The watch wiring against a mocked API server: list, watch events, a watch error, a
//! relist, and the cache's health along the way.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use lbguard::cluster::ClusterState;
use lbguard::cluster::watch::{Kinds, Retry, spawn};
use lbguard::config::ProviderChoice;
use lbguard::engine::ClusterView;
use lbguard::providers::Provider;
use serde_json::{Value, json};

fn svc(name: &str, lb: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"), "resourceVersion": "1",
                     "annotations": {"service.beta.kubernetes.io/ctyun-loadbalancer-id": lb},
                     "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "protocol": "TCP"}]}
    })
}

fn list(rv: &str, items: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ServiceList", "metadata": {"resourceVersion": rv}, "items": items})).unwrap()
}

fn users(state: &ClusterState, lb: &str) -> Vec<String> {
    let mut out = Vec::new();
    state.lb_users(Provider::Ctyun, lb, &mut out);
    let mut names: Vec<String> = out.into_iter().map(|u| u.name.to_string()).collect();
    names.sort();
    names
}

async fn eventually(what: &str, f: impl Fn() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting for: {what}");
}

#[tokio::test]
async fn list_watch_error_and_relist() {
    let (mock, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(mock, "default");
    let state = Arc::new(ClusterState::new(ProviderChoice::Auto));
    let errors = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&errors);
    spawn(
        client,
        Arc::clone(&state),
        Kinds {
            nodes: false,
            ingresses: false,
        },
        Retry::new(Duration::from_millis(1), Duration::from_millis(10)),
        Arc::new(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        }),
    );
    assert!(!state.synced(), "not ready before the first list");

    // 1. The initial list.
    let (req, send) = handle.next_request().await.unwrap();
    assert_eq!(req.uri().path(), "/api/v1/services");
    assert!(!req.uri().query().unwrap_or("").contains("watch=true"));
    send.send_response(Response::new(Body::from(list(
        "10",
        vec![svc("a", "lb-1")],
    ))));
    eventually("synced", || state.synced()).await;
    assert_eq!(users(&state, "lb-1"), ["a"]);

    // 2. The watch: b added, a deleted, then the API server says the version is gone.
    let (req, send) = handle.next_request().await.unwrap();
    let q = req.uri().query().unwrap_or("").to_string();
    assert!(
        q.contains("watch=true") && q.contains("resourceVersion=10"),
        "{q}"
    );
    let mut lines = Vec::new();
    for ev in [
        json!({"type": "ADDED", "object": svc("b", "lb-1")}),
        json!({"type": "DELETED", "object": svc("a", "lb-1")}),
        json!({"type": "ERROR", "object": {"apiVersion": "v1", "kind": "Status", "status": "Failure", "message": "too old resource version", "reason": "Expired", "code": 410}}),
    ] {
        lines.extend(serde_json::to_vec(&ev).unwrap());
        lines.push(b'\n');
    }
    send.send_response(Response::new(Body::from(lines)));
    eventually("the watch error", || errors.load(Ordering::SeqCst) > 0).await;
    assert_eq!(
        users(&state, "lb-1"),
        ["b"],
        "events before the error were applied"
    );
    assert!(
        state.stale_for().is_some(),
        "a broken watch marks the cache stale"
    );

    // 3. The relist after the error replaces the cache.
    let (req, send) = handle.next_request().await.unwrap();
    assert!(
        !req.uri().query().unwrap_or("").contains("watch=true"),
        "expected a relist"
    );
    send.send_response(Response::new(Body::from(list(
        "20",
        vec![svc("c", "lb-2")],
    ))));
    eventually("relisted", || users(&state, "lb-2") == ["c"]).await;
    assert!(
        users(&state, "lb-1").is_empty(),
        "objects the relist did not mention are gone"
    );
    assert!(
        state.stale_for().is_none(),
        "healthy again after the relist"
    );

    // 4. The watch resumes from the new version.
    let (req, _send) = handle.next_request().await.unwrap();
    let q = req.uri().query().unwrap_or("").to_string();
    assert!(
        q.contains("watch=true") && q.contains("resourceVersion=20"),
        "{q}"
    );
}

#[tokio::test]
async fn failing_list_keeps_retrying_and_stays_unready() {
    let (mock, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(mock, "default");
    let state = Arc::new(ClusterState::new(ProviderChoice::Auto));
    spawn(
        client,
        Arc::clone(&state),
        Kinds {
            nodes: false,
            ingresses: false,
        },
        Retry::new(Duration::from_millis(1), Duration::from_millis(5)),
        Arc::new(|_| {}),
    );
    for _ in 0..3 {
        let (_req, send) = handle.next_request().await.unwrap();
        let status = json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "message": "boom", "reason": "InternalError", "code": 500});
        send.send_response(
            Response::builder()
                .status(500)
                .body(Body::from(serde_json::to_vec(&status).unwrap()))
                .unwrap(),
        );
    }
    assert!(!state.synced());
    let (_req, send) = handle.next_request().await.unwrap();
    send.send_response(Response::new(Body::from(list("1", vec![]))));
    eventually("synced after retries", || state.synced()).await;
}
