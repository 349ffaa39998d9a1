//! The server with a (mocked) cluster: readiness waits for the watch, and the audit turns
//! conflicts between existing Services into a report, a metric and Events.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Start, TestServer};
use http::{Request, Response};
use kube::client::Body;
use serde_json::{Value, json};

fn svc(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"), "resourceVersion": "3",
                     "annotations": {"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": "lb-1"}},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 443, "protocol": "TCP"}]}
    })
}

#[tokio::test]
async fn readiness_waits_for_the_watch_and_audit_records_events() {
    let (mock, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(mock, "default");
    let (list_tx, list_rx) = tokio::sync::oneshot::channel::<()>();
    let events: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = Arc::clone(&events);
    tokio::spawn(async move {
        let mut list_rx = Some(list_rx);
        let mut held = Vec::new();
        while let Some((req, send)) = handle.next_request().await {
            let path = req.uri().path().to_string();
            let query = req.uri().query().unwrap_or("").to_string();
            if path == "/api/v1/services" && !query.contains("watch=true") {
                if let Some(rx) = list_rx.take() {
                    let _ = rx.await;
                }
                let list = json!({"apiVersion": "v1", "kind": "ServiceList", "metadata": {"resourceVersion": "5"}, "items": [svc("a"), svc("b")]});
                send.send_response(Response::new(Body::from(
                    serde_json::to_vec(&list).unwrap(),
                )));
            } else if !query.contains("watch=true") && !path.ends_with("/events") {
                // Other kinds the rules watch (Ingresses in auto mode): empty.
                let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": []});
                send.send_response(Response::new(Body::from(
                    serde_json::to_vec(&list).unwrap(),
                )));
            } else if path.ends_with("/events") {
                use http_body_util::BodyExt;
                let body = req.into_body().collect().await.unwrap().to_bytes();
                let ev: Value = serde_json::from_slice(&body).unwrap();
                seen.lock().unwrap().push(ev.clone());
                send.send_response(
                    Response::builder()
                        .status(201)
                        .body(Body::from(body.to_vec()))
                        .unwrap(),
                );
            } else {
                // Watches stay open and quiet.
                held.push(send);
            }
        }
    });

    let config: &'static str =
        "cluster:\n  version: v1.31.0\naudit:\n  interval: 100ms\n  events: true\n";
    let s = TestServer::start_with(Start {
        config,
        client: Some(client),
        ..Default::default()
    })
    .await;
    assert_eq!(
        s.client().get("/readyz").await.status,
        503,
        "not ready before the initial list"
    );
    list_tx.send(()).unwrap();
    let mut ready = false;
    for _ in 0..200 {
        if s.client().get("/readyz").await.status == 200 {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(ready);

    // Both cached Services take 443 on lb-1: the audit reports both and records Events.
    for _ in 0..300 {
        if events.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let report = s.running.app.report.load();
    assert_eq!(report.summary.checked, 2);
    assert_eq!(report.summary.denied, 2);
    let evs = events.lock().unwrap().clone();
    assert!(evs.len() >= 2, "{evs:?}");
    assert_eq!(evs[0]["reason"], "LoadBalancerPolicy");
    assert_eq!(evs[0]["type"], "Warning");
    assert!(
        evs[0]["note"]
            .as_str()
            .unwrap()
            .contains("[listener-port-unique]"),
        "{}",
        evs[0]
    );
    assert_eq!(evs[0]["regarding"]["kind"], "Service");

    // A new Service on the same port is denied against the cache.
    let mut review = common::fixture("review-create.json");
    common::set_annotations(
        &mut review,
        "object",
        &[(
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id",
            "lb-1",
        )],
    );
    review["request"]["object"]["spec"]["ports"] =
        json!([{"port": 443, "protocol": "TCP", "targetPort": 8443}]);
    let r = s.client().post("/validate", &review).await.review();
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap()
            .contains("already taken by Service shop/"),
        "{r}"
    );
    let text = s.running.app.metrics.render();
    assert!(text.contains("lbguard_audit_violations{rule=\"listener-port-unique\",action=\"deny\",namespace=\"shop\"} 2"), "{text}");
}

/// Counts an events request's future while it lives.
struct Live(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_stopping_server_ends_the_audit_before_it_returns() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Events never get an answer: the audit waits on one when the server stops.
    let live = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&live);
    let api = tower::service_fn(move |req: Request<Body>| {
        let counter = Arc::clone(&counter);
        async move {
            let path = req.uri().path().to_string();
            let query = req.uri().query().unwrap_or("").to_string();
            if path.ends_with("/events") {
                counter.fetch_add(1, Ordering::SeqCst);
                let _live = Live(counter);
                std::future::pending::<()>().await;
            } else if query.contains("watch=true") {
                std::future::pending::<()>().await;
            }
            let list = if path == "/api/v1/services" {
                json!({"apiVersion": "v1", "kind": "ServiceList", "metadata": {"resourceVersion": "5"}, "items": [svc("a"), svc("b")]})
            } else {
                json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": []})
            };
            Ok::<_, std::convert::Infallible>(Response::new(Body::from(
                serde_json::to_vec(&list).unwrap(),
            )))
        }
    });
    let config: &'static str =
        "cluster:\n  version: v1.31.0\naudit:\n  interval: 100ms\n  events: true\n";
    let mut s = TestServer::start_with(Start {
        config,
        client: Some(kube::Client::new(api, "default")),
        ..Default::default()
    })
    .await;
    for _ in 0..500 {
        if live.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        live.load(Ordering::SeqCst) > 0,
        "the audit never sent an Event"
    );
    s.stop();
    tokio::time::timeout(Duration::from_secs(10), &mut s.running.done)
        .await
        .expect("the server stops")
        .unwrap();
    // Nothing of the audit is left to run on once the server has returned.
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "an audit request outlived the server"
    );
}
