//! The server over time: shutdown, the inventory's reload, ports held until the watch catches up, the report, and malformed reviews under load.

use super::*;

#[tokio::test]
async fn shutdown_finishes_in_flight_requests_and_refuses_new_ones() {
    let mut s = TestServer::start("").await;
    let body = serde_json::to_vec(&fixture("review-create.json")).unwrap();
    let mut stream = s.client().connect().await.unwrap();
    let head = format!(
        "POST /validate HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body[..10]).await.unwrap();
    stream.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;

    s.stop();
    // Readiness drops and the listener closes.
    let mut refused = false;
    for _ in 0..50 {
        if tokio::net::TcpStream::connect(s.running.addr)
            .await
            .is_err()
        {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused, "new connections still accepted after shutdown");
    assert!(
        !s.running
            .app
            .ready
            .load(std::sync::atomic::Ordering::Acquire)
    );

    // The request in flight still gets its answer.
    stream.write_all(&body[10..]).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"allowed\":true"), "{text}");
    tokio::time::timeout(Duration::from_secs(5), &mut s.running.done)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn the_server_uses_and_reloads_the_inventory() {
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("inventory.yaml");
    std::fs::write(&inv, "loadBalancers:\n  - {id: lb-a, provider: alibaba, addressType: intranet, createdBy: user}\n").unwrap();
    let config: &'static str =
        Box::leak(format!("inventory:\n  path: {}\n", inv.display()).into_boxed_str());
    let s = TestServer::start_with(Start {
        config,
        reload: Duration::from_millis(50),
        ..Default::default()
    })
    .await;

    let mut review = fixture("review-create.json");
    set_annotations(&mut review, "object", &[(&key(ALI, "id"), "lb-a")]);
    // Mutation fills in the LB's address type; without it validation denies the mismatch.
    let m = s.client().post("/mutate", &review).await.review();
    assert!(
        m["warnings"][0].as_str().unwrap().contains("address-type"),
        "{m}"
    );
    let r = s.client().post("/validate", &review).await.review();
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap()
            .contains("[address-type-match]"),
        "{r}"
    );

    // A changed inventory is picked up; a broken one keeps the last good.
    std::fs::write(&inv, "loadBalancers:\n  - {id: lb-a, provider: alibaba, addressType: internet, createdBy: user}\n").unwrap();
    let mut allowed = false;
    for _ in 0..100 {
        if s.client().post("/validate", &review).await.review()["allowed"] == true {
            allowed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(allowed, "the new inventory was never used");
    std::fs::write(&inv, "not: [valid").unwrap();
    let metrics = &s.running.app.metrics;
    for _ in 0..100 {
        if metrics.inventory_reload_errors.get() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(metrics.inventory_reload_errors.get() > 0);
    assert_eq!(
        s.client().post("/validate", &review).await.review()["allowed"],
        true
    );
}

fn create_on_lb(name: &str, uid: &str, dry_run: bool) -> Value {
    let mut review = fixture("review-create.json");
    review["request"]["uid"] = json!(uid);
    review["request"]["name"] = json!(name);
    review["request"]["dryRun"] = json!(dry_run);
    review["request"]["object"]["metadata"]["name"] = json!(name);
    set_annotations(
        &mut review,
        "object",
        &[(
            "service.beta.kubernetes.io/ctyun-loadbalancer-id",
            "lb-shared",
        )],
    );
    review
}

#[tokio::test]
async fn admitted_ports_are_held_until_the_watch_catches_up() {
    let s = TestServer::start("").await;
    // A dry run holds nothing.
    let r = s
        .client()
        .post("/validate", &create_on_lb("first", "u-0", true))
        .await
        .review();
    assert_eq!(r["allowed"], true);
    let r = s
        .client()
        .post("/validate", &create_on_lb("first", "u-1", false))
        .await
        .review();
    assert_eq!(r["allowed"], true, "{r}");
    // Re-sending the same Service is not a conflict with itself.
    let r = s
        .client()
        .post("/validate", &create_on_lb("first", "u-2", false))
        .await
        .review();
    assert_eq!(r["allowed"], true, "{r}");
    let r = s
        .client()
        .post("/validate", &create_on_lb("second", "u-3", false))
        .await
        .review();
    assert_eq!(r["allowed"], false, "{r}");
    let msg = r["status"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("[listener-port-unique] port 80/TCP on load balancer \"lb-shared\""),
        "{msg}"
    );
    assert!(msg.contains("webhook-e2e/first"), "{msg}");
}

#[tokio::test]
async fn concurrent_admissions_for_one_port_admit_exactly_one() {
    let s = TestServer::start("").await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let client = s.client();
        let review = create_on_lb(&format!("svc-{i}"), &format!("u-{i}"), false);
        tasks.push(tokio::spawn(async move {
            client.post("/validate", &review).await.review()["allowed"] == true
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        admitted += usize::from(t.await.unwrap());
    }
    assert_eq!(admitted, 1);
}

#[tokio::test]
async fn report_is_served_on_the_metrics_port() {
    let s = TestServer::start("").await;
    s.running.app.audit_once();
    let addr = s.running.metrics_addr.unwrap();
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /report HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).await.unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap();
    let v: Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["summary"]["checked"], 0);
    assert!(v["generatedAt"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn malformed_reviews_never_get_a_5xx() {
    let s = TestServer::start("").await;
    let base = fixture("review-create.json");
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    };
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes();
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("empty body", vec![], 400, "not JSON"),
        ("not utf-8", vec![0xff, 0xfe, 0x00], 400, "not JSON"),
        ("deep nesting", deep, 400, "not JSON"),
        (
            "request is an array",
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[]}"#
                .to_vec(),
            400,
            "no request",
        ),
        (
            "uid is a number",
            with(&|v| v["request"]["uid"] = json!(5)),
            400,
            "no uid",
        ),
        (
            "no kind in request",
            with(&|v| {
                v["request"].as_object_mut().unwrap().remove("kind");
            }),
            200,
            "cannot read the request",
        ),
        (
            "unknown operation",
            with(&|v| v["request"]["operation"] = json!("FOO")),
            200,
            "unknown operation",
        ),
        (
            "object is a string",
            with(&|v| v["request"]["object"] = json!("svc")),
            200,
            "request.object",
        ),
        (
            "port is a word",
            with(&|v| v["request"]["object"]["spec"]["ports"][0]["port"] = json!("eighty")),
            200,
            "request.object.spec.ports[0].port",
        ),
        (
            "annotations is a list",
            with(&|v| v["request"]["object"]["metadata"]["annotations"] = json!(["a"])),
            200,
            "request.object.metadata.annotations",
        ),
        (
            "CREATE without object",
            with(&|v| v["request"]["object"] = Value::Null),
            200,
            "CREATE request carries no object",
        ),
    ];
    for (what, body, status, needle) in cases {
        let r = s.client().request("POST", "/validate", body).await.unwrap();
        assert_eq!(
            r.status,
            status,
            "{what}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let text = String::from_utf8_lossy(&r.body);
        assert!(text.contains(needle), "{what}: {text}");
        if status == 200 {
            let resp = r.review();
            assert_eq!(resp["allowed"], false, "{what}");
            assert_eq!(resp["uid"], base["request"]["uid"], "{what}");
        }
    }
    // Still serving.
    assert_eq!(s.client().get("/healthz").await.status, 200);
}

#[tokio::test]
async fn an_update_holds_ports_in_memory_only_when_it_adds_some() {
    use lbguard::engine::ClusterView;
    let s = TestServer::start("").await;
    let lb = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id";
    let held = |s: &TestServer| {
        let mut users = Vec::new();
        s.running
            .app
            .cluster
            .lb_users(lbguard::providers::Provider::Alibaba, "lb-1", &mut users);
        users
            .iter()
            .flat_map(|u| u.ports.iter().map(|p| p.0))
            .collect::<Vec<i32>>()
    };
    let mut r = fixture("review-update.json");
    set_annotations(&mut r, "object", &[(lb, "lb-1")]);
    set_annotations(&mut r, "oldObject", &[(lb, "lb-1")]);
    // Same ports as before: nothing to hold.
    let mut same = r.clone();
    same["request"]["oldObject"]["spec"] = same["request"]["object"]["spec"].clone();
    assert_eq!(
        s.client().post("/validate", &same).await.review()["allowed"],
        true
    );
    assert!(held(&s).is_empty());
    // The fixture's update adds 443 to 80: both are held until the watch shows it.
    assert_eq!(
        s.client().post("/validate", &r).await.review()["allowed"],
        true
    );
    assert_eq!(held(&s), [80, 443]);
}
