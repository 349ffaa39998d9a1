//! Requests refused or cut off: bad JSON, a missing request, a wrong API version, unreadable objects, huge bodies, slow clients; health and metrics.

use super::*;

#[tokio::test]
async fn malformed_json_gets_400_with_a_json_error() {
    let s = TestServer::start("").await;
    let r = s
        .client()
        .request("POST", "/validate", b"{not json".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("not JSON"));
    // Counted as an error: the API server treats it as a failed call.
    let m = s.metrics_text().await;
    assert!(
        m.contains(r#"lbguard_admission_requests_total{endpoint="validate",operation="UNKNOWN",verdict="error"} 1"#),
        "{m}"
    );
}

#[tokio::test]
async fn missing_request_gets_400() {
    let s = TestServer::start("").await;
    let r = s
        .client()
        .post(
            "/validate",
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("no request"));
}

#[tokio::test]
async fn wrong_api_version_with_a_uid_gets_a_structured_refusal() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-create.json");
    review["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["uid"], review["request"]["uid"]);
    assert_eq!(r["allowed"], false);
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap()
            .contains("admission.k8s.io/v1beta1")
    );
}

#[tokio::test]
async fn unreadable_service_is_refused_naming_the_field() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-create.json");
    review["request"]["object"]["metadata"]["annotations"]["kubernetes.io/elb.class"] = json!(5);
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["allowed"], false);
    let msg = r["status"]["message"].as_str().unwrap();
    assert!(
        msg.contains("request.object.metadata.annotations.kubernetes.io/elb.class"),
        "{msg}"
    );
}

#[tokio::test]
async fn update_without_old_object_is_refused() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-update.json");
    review["request"]["oldObject"] = Value::Null;
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["allowed"], false);
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap()
            .contains("UPDATE request carries no oldObject")
    );
}

#[tokio::test]
async fn huge_body_gets_413() {
    let s = TestServer::start("").await;
    let body = vec![b' '; 4 * 1024 * 1024];
    let r = s.client().request("POST", "/validate", body).await.unwrap();
    assert_eq!(r.status, 413);
    assert!(r.json()["error"].as_str().unwrap().contains("exceeds"));
}

#[tokio::test]
async fn health_and_readiness() {
    let s = TestServer::start("").await;
    assert_eq!(s.client().get("/healthz").await.status, 200);
    assert_eq!(s.client().get("/readyz").await.status, 200);
}

#[tokio::test]
async fn metrics_count_requests_and_violations() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-create.json");
    set_annotations(
        &mut review,
        "object",
        &[(&key(ALI, "address-type"), "public")],
    );
    s.client().post("/validate", &review).await.review();
    let text = s.metrics_text().await;
    assert!(text.contains("lbguard_admission_requests_total{endpoint=\"validate\",operation=\"CREATE\",verdict=\"denied\"} 1"), "{text}");
    assert!(
        text.contains("lbguard_violations_total{rule=\"address-type-value\",action=\"deny\"} 1"),
        "{text}"
    );
    assert!(text.contains("lbguard_admission_duration_seconds_count{endpoint=\"validate\"} 1"));
    assert!(text.contains("lbguard_tls_reloads_total 0"));
}

#[tokio::test]
async fn slow_client_is_cut_off() {
    let s = TestServer::start_with(Start {
        request_timeout: Duration::from_millis(300),
        ..Default::default()
    })
    .await;
    // Headers never finish.
    let mut stream = s.client().connect().await.unwrap();
    stream
        .write_all(b"POST /validate HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "connection was held open");
    // A body that never finishes.
    let mut stream = s.client().connect().await.unwrap();
    stream
        .write_all(b"POST /validate HTTP/1.1\r\nhost: localhost\r\ncontent-length: 100\r\n\r\n{")
        .await
        .unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buf))
        .await
        .unwrap()
        .ok();
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
}
