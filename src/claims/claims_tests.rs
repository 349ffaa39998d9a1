//! The claim protocol against a mocked API server (tower-test): every request lbguard sends
//! is checked, and every answer is one a kube-apiserver gives.

use std::time::Duration;

use axum::http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock::Handle;

use super::*;
use crate::config::ProviderChoice;
use crate::testkit::{lb, update};

const NS: &str = "lbguard-system";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/lbguard-system/leases";

fn key(port: i32) -> ClaimKey {
    ClaimKey {
        lb: "lb-1".into(),
        provider: Provider::Alibaba,
        family: Family::Tcp,
        port,
    }
}

fn config(timeout_ms: u64) -> ClaimsConfig {
    ClaimsConfig {
        timeout: crate::config::Seconds(Duration::from_millis(timeout_ms)),
        ..Default::default()
    }
}

type Mock = Handle<Request<Body>, Response<Body>>;

fn claims_with(view: Arc<ClusterState>, timeout_ms: u64) -> (Claims, Mock) {
    let (mock, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(mock, NS);
    (
        Claims::new(
            client,
            NS,
            view,
            config(timeout_ms),
            ClaimMetrics::default(),
        ),
        handle,
    )
}

fn claims() -> (Claims, Mock) {
    claims_with(Arc::new(ClusterState::new(ProviderChoice::Auto)), 2000)
}

fn reply(code: u16, body: Value) -> Response<Body> {
    let mut r = Response::new(Body::from(serde_json::to_vec(&body).unwrap()));
    *r.status_mut() = StatusCode::from_u16(code).unwrap();
    r
}

fn status(code: u16, reason: &str) -> Response<Body> {
    reply(
        code,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code, "message": reason}),
    )
}

fn lease(key: &ClaimKey, holder: &str, age: Duration, uid: &str, rv: &str) -> Value {
    let renewed = Timestamp::now() - age;
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": key.lease_name(), "namespace": NS, "uid": uid, "resourceVersion": rv,
                     "annotations": {"lbguard.io/load-balancer": key.lb, "lbguard.io/provider": key.provider.as_str(),
                                     "lbguard.io/listener": format!("{}/{}", key.port, key.family.as_str())}},
        "spec": {"holderIdentity": holder, "renewTime": renewed.to_string(), "acquireTime": renewed.to_string()}
    })
}

/// The next request: method, path (with query) and JSON body.
async fn next(
    handle: &mut Mock,
) -> (
    String,
    String,
    Value,
    tower_test::mock::SendResponse<Response<Body>>,
) {
    let (req, send) = handle.next_request().await.expect("a request");
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string().trim_end_matches('?').to_string())
        .unwrap_or_default();
    let bytes = req.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (method, path, body, send)
}

/// Runs `claim` while `server` answers the mock; returns the claim's result and the mock.
async fn run_keep<F, S>(
    claims: &Claims,
    holder: &str,
    keys: &[ClaimKey],
    handle: Mock,
    server: F,
) -> (Result<(), ClaimError>, Mock)
where
    F: FnOnce(Mock) -> S,
    S: std::future::Future<Output = Mock> + Send + 'static,
{
    let served = tokio::spawn(server(handle));
    let result = claims.claim(holder, keys).await;
    (result, served.await.unwrap())
}

async fn run<F, S>(
    claims: &Claims,
    holder: &str,
    keys: &[ClaimKey],
    handle: Mock,
    server: F,
) -> Result<(), ClaimError>
where
    F: FnOnce(Mock) -> S,
    S: std::future::Future<Output = Mock> + Send + 'static,
{
    run_keep(claims, holder, keys, handle, server).await.0
}

#[tokio::test]
async fn free_port_is_created_and_allowed() {
    let (claims, handle) = claims();
    let k = key(80);
    let name = k.lease_name();
    let result = run(&claims, "shop/web", &[k], handle, |mut h| async move {
        let (method, path, body, send) = next(&mut h).await;
        assert_eq!(
            (method.as_str(), path.split('?').next().unwrap()),
            ("POST", LEASES)
        );
        assert_eq!(body["metadata"]["name"], name);
        assert_eq!(body["spec"]["holderIdentity"], "shop/web");
        assert_eq!(body["metadata"]["labels"]["lbguard.io/claim"], "listener");
        assert_eq!(
            body["metadata"]["labels"]["lbguard.io/load-balancer"],
            "lb-1"
        );
        assert_eq!(
            body["metadata"]["annotations"]["lbguard.io/listener"],
            "80/TCP"
        );
        let mut created = body.clone();
        created["metadata"]["uid"] = json!("u-1");
        send.send_response(reply(201, created));
        h
    })
    .await;
    assert_eq!(result, Ok(()));
    assert_eq!(claims.metrics.conflicts.get(), 0);
}

#[tokio::test]
async fn held_by_another_live_service_is_denied_naming_it() {
    let (claims, handle) = claims();
    let k = key(80);
    let held = lease(&k, "shop/other", Duration::from_secs(1), "u-9", "9");
    let result = run(
        &claims,
        "shop/web",
        std::slice::from_ref(&k),
        handle,
        |mut h| async move {
            let (method, _, _, send) = next(&mut h).await;
            assert_eq!(method, "POST");
            send.send_response(status(409, "AlreadyExists"));
            let (method, path, _, send) = next(&mut h).await;
            assert_eq!(method, "GET");
            assert!(path.ends_with(&format!(
                "/leases/{}",
                held["metadata"]["name"].as_str().unwrap()
            )));
            send.send_response(reply(200, held));
            h
        },
    )
    .await;
    assert_eq!(
        result,
        Err(ClaimError::Held(vec![(k, "shop/other".into())]))
    );
    assert_eq!(claims.metrics.conflicts.get(), 1);
}

#[tokio::test]
async fn old_claim_of_a_service_the_cluster_shows_is_still_held() {
    let view = Arc::new(ClusterState::new(ProviderChoice::Auto));
    view.apply_service(
        &lb()
            .named("shop", "other")
            .pa(Provider::Alibaba, "id", "lb-1")
            .build(),
    );
    let (claims, handle) = claims_with(view, 2000);
    let k = key(80);
    let held = lease(&k, "shop/other", Duration::from_secs(3600), "u-9", "9");
    let result = run(
        &claims,
        "shop/web",
        std::slice::from_ref(&k),
        handle,
        |mut h| async move {
            next(&mut h)
                .await
                .3
                .send_response(status(409, "AlreadyExists"));
            next(&mut h).await.3.send_response(reply(200, held));
            h
        },
    )
    .await;
    assert_eq!(
        result,
        Err(ClaimError::Held(vec![(k, "shop/other".into())]))
    );
}

#[tokio::test]
async fn own_claim_is_renewed_with_a_resource_version_precondition() {
    let (claims, handle) = claims();
    let k = key(80);
    let mine = lease(&k, "shop/web", Duration::from_secs(30), "u-1", "5");
    let result = run(&claims, "shop/web", &[k], handle, |mut h| async move {
        next(&mut h)
            .await
            .3
            .send_response(status(409, "AlreadyExists"));
        next(&mut h).await.3.send_response(reply(200, mine.clone()));
        let (method, _, body, send) = next(&mut h).await;
        assert_eq!(method, "PUT");
        assert_eq!(body["metadata"]["resourceVersion"], "5");
        assert_ne!(
            body["spec"]["renewTime"], mine["spec"]["renewTime"],
            "renewed"
        );
        send.send_response(reply(200, body));
        h
    })
    .await;
    assert_eq!(result, Ok(()));
}

#[tokio::test]
async fn stale_claim_is_taken_over_with_preconditions() {
    let (claims, handle) = claims();
    let k = key(80);
    let stale = lease(&k, "shop/gone", Duration::from_secs(120), "u-7", "7");
    let result = run(&claims, "shop/web", &[k], handle, |mut h| async move {
        next(&mut h)
            .await
            .3
            .send_response(status(409, "AlreadyExists"));
        next(&mut h)
            .await
            .3
            .send_response(reply(200, stale.clone()));
        let (method, _, body, send) = next(&mut h).await;
        assert_eq!(method, "DELETE");
        assert_eq!(
            body["preconditions"],
            json!({"uid": "u-7", "resourceVersion": "7"})
        );
        send.send_response(reply(200, stale));
        let (method, _, body, send) = next(&mut h).await;
        assert_eq!(method, "POST");
        assert_eq!(body["spec"]["holderIdentity"], "shop/web");
        send.send_response(reply(201, body));
        h
    })
    .await;
    assert_eq!(result, Ok(()));
    assert_eq!(claims.metrics.takeovers.get(), 1);
}

#[tokio::test]
async fn takeover_lost_to_another_replica_is_denied() {
    let (claims, handle) = claims();
    let k = key(80);
    let stale = lease(&k, "shop/gone", Duration::from_secs(120), "u-7", "7");
    let winner = lease(&k, "shop/fast", Duration::ZERO, "u-8", "8");
    let result = run(
        &claims,
        "shop/web",
        std::slice::from_ref(&k),
        handle,
        |mut h| async move {
            next(&mut h)
                .await
                .3
                .send_response(status(409, "AlreadyExists"));
            next(&mut h).await.3.send_response(reply(200, stale));
            // Another replica deleted and retook it first: the precondition fails.
            next(&mut h).await.3.send_response(status(409, "Conflict"));
            next(&mut h)
                .await
                .3
                .send_response(status(409, "AlreadyExists"));
            next(&mut h).await.3.send_response(reply(200, winner));
            h
        },
    )
    .await;
    assert_eq!(result, Err(ClaimError::Held(vec![(k, "shop/fast".into())])));
    assert_eq!(claims.metrics.takeovers.get(), 0);
}

#[tokio::test]
async fn api_error_is_unavailable() {
    let (claims, handle) = claims();
    let result = run(
        &claims,
        "shop/web",
        &[key(80)],
        handle,
        |mut h| async move {
            next(&mut h)
                .await
                .3
                .send_response(status(500, "InternalError"));
            h
        },
    )
    .await;
    assert!(
        matches!(result, Err(ClaimError::Unavailable(_))),
        "{result:?}"
    );
    assert_eq!(claims.metrics.errors.get(), 1);
}

#[tokio::test]
async fn silent_api_server_runs_out_the_time_budget() {
    let (claims, mut handle) = claims_with(Arc::new(ClusterState::new(ProviderChoice::Auto)), 50);
    let hold = tokio::spawn(async move {
        // Takes the request and never answers.
        let (_req, send) = handle.next_request().await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(send);
    });
    let started = std::time::Instant::now();
    let result = claims.claim("shop/web", &[key(80)]).await;
    // Far below the 5 s the API server holds the request, with room for a loaded CI host.
    assert!(started.elapsed() < Duration::from_secs(2));
    match result {
        Err(ClaimError::Unavailable(e)) => assert!(e.contains("within 50 ms"), "{e}"),
        other => panic!("{other:?}"),
    }
    hold.abort();
}

#[tokio::test]
async fn claims_taken_before_a_conflict_are_rolled_back() {
    let (claims, handle) = claims();
    let (k80, k443) = (key(80), key(443));
    let held = lease(&k443, "shop/other", Duration::ZERO, "u-9", "9");
    let name80 = k80.lease_name();
    let (result, mut h) = run_keep(
        &claims,
        "shop/web",
        &[k80, k443],
        handle,
        |mut h| async move {
            let (_, _, body, send) = next(&mut h).await;
            let mut created = body.clone();
            created["metadata"]["uid"] = json!("u-80");
            send.send_response(reply(201, created));
            next(&mut h)
                .await
                .3
                .send_response(status(409, "AlreadyExists"));
            next(&mut h).await.3.send_response(reply(200, held));
            h
        },
    )
    .await;
    assert!(matches!(result, Err(ClaimError::Held(_))));
    // The rollback runs off the request path: it deletes exactly the claim it created.
    let (method, path, body, send) = next(&mut h).await;
    assert_eq!(method, "DELETE");
    assert!(path.ends_with(&name80), "{path}");
    assert_eq!(body["preconditions"], json!({"uid": "u-80"}));
    send.send_response(reply(200, json!({})));
}

#[tokio::test]
async fn collection_deletes_only_stale_claims() {
    let (claims, handle) = claims();
    let (fresh, stale) = (key(80), key(443));
    let fresh = lease(&fresh, "shop/new", Duration::from_secs(1), "u-1", "1");
    let stale = lease(&stale, "shop/gone", Duration::from_secs(600), "u-2", "2");
    let served = tokio::spawn(async move {
        let mut h = handle;
        let (method, path, _, send) = next(&mut h).await;
        assert_eq!(method, "GET");
        assert!(
            path.contains("labelSelector=lbguard.io%2Fclaim%3Dlistener"),
            "{path}"
        );
        send.send_response(reply(
            200,
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseList", "metadata": {"resourceVersion": "3"},
                   "items": [fresh, stale.clone()]}),
        ));
        let (method, path, body, send) = next(&mut h).await;
        assert_eq!(method, "DELETE");
        assert!(path.ends_with(stale["metadata"]["name"].as_str().unwrap()));
        assert_eq!(
            body["preconditions"],
            json!({"uid": "u-2", "resourceVersion": "2"})
        );
        send.send_response(reply(200, stale));
    });
    assert_eq!(claims.collect().await.unwrap(), 1);
    served.await.unwrap();
    assert_eq!(claims.metrics.gc_deletions.get(), 1);
    assert_eq!(claims.metrics.held.get(), 1);
}

#[tokio::test]
async fn release_deletes_only_the_holders_own_claim() {
    let (claims, handle) = claims();
    let k = key(80);
    let mine = lease(&k, "shop/web", Duration::ZERO, "u-1", "4");
    let theirs = lease(&k, "shop/other", Duration::ZERO, "u-2", "5");
    let served = tokio::spawn(async move {
        let mut h = handle;
        next(&mut h).await.3.send_response(reply(200, mine));
        let (method, _, body, send) = next(&mut h).await;
        assert_eq!(method, "DELETE");
        assert_eq!(
            body["preconditions"],
            json!({"uid": "u-1", "resourceVersion": "4"})
        );
        send.send_response(reply(200, json!({})));
        // The second release finds another holder: a GET and nothing else.
        let (method, _, _, send) = next(&mut h).await;
        assert_eq!(method, "GET");
        send.send_response(reply(200, theirs));
        h
    });
    claims.release("shop/web", &k).await;
    claims.release("shop/web", &k).await;
    let mut h = served.await.unwrap();
    // Nothing more was sent.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), h.next_request())
            .await
            .is_err()
    );
}

#[test]
fn lease_names_are_stable_valid_and_distinct() {
    let name = key(80).lease_name();
    assert_eq!(name, "lbguard-alibaba-tcp-80-".to_string() + &name[23..]);
    assert_eq!(name.len(), 23 + 32);
    assert!(
        name.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    );
    // Pinned: every replica and every lbguard version must derive the same name.
    assert_eq!(name, "lbguard-alibaba-tcp-80-".to_string() + &golden());
    let udp = ClaimKey {
        family: Family::Udp,
        ..key(80)
    };
    assert_ne!(udp.lease_name(), name);
    let odd = ClaimKey {
        lb: "LB/With Spaces_and_a_very_long_id_that_is_no_valid_label_value_at_all_xxxxxxxxxxxxxxxxxxxx".into(),
        ..key(80)
    };
    assert!(odd.lease_name().len() <= 63);
    assert_eq!(label_value(&odd.lb), None);
    assert_eq!(label_value("lb-2ze123"), Some("lb-2ze123"));
}

fn golden() -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, b"alibaba/lb-1/TCP/80");
    d.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn wanted_is_new_ports_on_named_load_balancers_only() {
    let a = |id: &str| lb().pa(Provider::Alibaba, "id", id);
    let auto = &Scope::from(ProviderChoice::Auto);
    // CREATE on an existing LB: every port.
    let web = a("lb-1").port(443, "TCP").build();
    assert_eq!(wanted(auto, Svc::new(&web), None), vec![key(80), key(443)]);
    // UPDATE adding 443: only 443.
    let input = update(a("lb-1"), a("lb-1").port(443, "TCP"));
    let (new, old) = (
        input.object.as_ref().unwrap(),
        input.old_object.as_ref().unwrap(),
    );
    assert_eq!(
        wanted(auto, Svc::new(new), Some(Svc::new(old))),
        vec![key(443)]
    );
    // An LB the CCM creates (no id), Volcengine, skip-managed-listener: nothing.
    assert!(wanted(auto, Svc::new(&lb().build()), None).is_empty());
    let volc = lb().pa(Provider::Volcengine, "id", "clb-1").build();
    assert!(wanted(auto, Svc::new(&volc), None).is_empty());
    let skip = lb()
        .pa(Provider::Huawei, "id", "elb-1")
        .pa(Provider::Huawei, "skip-managed-listener", "true")
        .build();
    assert!(wanted(auto, Svc::new(&skip), None).is_empty());
    let managed = lb()
        .pa(Provider::Huawei, "id", "elb-1")
        .port(53, "UDP")
        .build();
    let keys = wanted(auto, Svc::new(&managed), None);
    assert_eq!(keys.len(), 2);
    assert!(keys.iter().any(|k| k.family == Family::Udp && k.port == 53));
    // Not a LoadBalancer: nothing.
    let cluster_ip = a("lb-1").type_("ClusterIP").build();
    assert!(wanted(auto, Svc::new(&cluster_ip), None).is_empty());
}

#[tokio::test]
async fn the_watch_reports_released_ports() {
    let view = ClusterState::new(ProviderChoice::Auto);
    let mut rx = watch_releases(&view, ProviderChoice::Auto.into());
    let two = lb()
        .named("shop", "web")
        .pa(Provider::Alibaba, "id", "lb-1")
        .port(443, "TCP");
    view.apply_service(&two.clone().build());
    assert!(rx.try_recv().is_err(), "nothing released by a new Service");
    let one = lb()
        .named("shop", "web")
        .pa(Provider::Alibaba, "id", "lb-1");
    view.apply_service(&one.clone().build());
    assert_eq!(rx.try_recv().unwrap(), ("shop/web".into(), key(443)));
    assert!(rx.try_recv().is_err());
    view.delete_service(&one.build());
    assert_eq!(rx.try_recv().unwrap(), ("shop/web".into(), key(80)));
}
