//! Listener claims end to end: lbguard servers over real TLS, AdmissionReviews as a
//! kube-apiserver sends them, and one in-memory Lease API (create-if-absent, preconditions)
//! shared by every "replica". Each replica's cluster view is fed the way its watch would be.

mod common;

use std::time::Duration;

use common::{Start, TestServer, fixture, set_annotations};
use k8s_openapi::api::core::v1::Service;
use lbguard::claims::memory::MemoryLeases;
use serde_json::Value;

const LB_ID: &str = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id";

async fn replica(store: &MemoryLeases, config: &'static str) -> TestServer {
    TestServer::start_with(Start {
        config,
        claims_client: Some(store.client()),
        ..Default::default()
    })
    .await
}

/// A CREATE review for `namespace/name` on load balancer `lb`, port 80.
fn create(name: &str, lb: &str) -> Value {
    let mut r = fixture("review-create.json");
    set_annotations(&mut r, "object", &[(LB_ID, lb)]);
    r["request"]["name"] = name.into();
    r["request"]["namespace"] = "shop".into();
    r["request"]["uid"] = format!("uid-{name}").into();
    r["request"]["object"]["metadata"]["name"] = name.into();
    r["request"]["object"]["metadata"]["namespace"] = "shop".into();
    r
}

/// The Service a review creates, as the watch would deliver it once stored.
fn stored(review: &Value) -> Service {
    serde_json::from_value(review["request"]["object"].clone()).unwrap()
}

async fn eventually(what: &str, f: impl Fn() -> bool) {
    for _ in 0..400 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting for: {what}");
}

#[tokio::test]
async fn one_of_two_concurrent_admissions_on_two_replicas_wins_every_time() {
    let store = MemoryLeases::new();
    // A little API latency, so the two requests really overlap.
    store.set_delay(Duration::from_micros(300));
    let (a, b) = (replica(&store, "").await, replica(&store, "").await);
    let (ca, cb) = (a.client(), b.client());
    let mut winners = Vec::new();
    for i in 0..100 {
        let lb = format!("lb-{i}");
        let (ra, rb) = (
            create(&format!("a-{i}"), &lb),
            create(&format!("b-{i}"), &lb),
        );
        let (x, y) = tokio::join!(ca.post("/validate", &ra), cb.post("/validate", &rb));
        let (x, y) = (x.review(), y.review());
        let allowed = [x["allowed"] == true, y["allowed"] == true];
        assert_eq!(
            allowed.iter().filter(|a| **a).count(),
            1,
            "pair {i}: exactly one admitted: {x} {y}"
        );
        let (winner, loser, lost) = if allowed[0] { (ra, rb, y) } else { (rb, ra, x) };
        let message = lost["status"]["message"].as_str().unwrap();
        let winner_name = winner["request"]["name"].as_str().unwrap().to_string();
        assert!(
            message.starts_with("[listener-port-unique] port 80/TCP on load balancer \"lb-")
                && message.contains(&format!("held by shop/{winner_name}")),
            "{message}"
        );
        assert_eq!(lost["status"]["code"], 403);
        winners.push((winner, loser));
    }
    assert_eq!(
        store.leases().len(),
        100,
        "one claim per load balancer port"
    );

    // The API server stores each winner; both watches show it.
    for (w, _) in &winners {
        a.running.app.cluster.apply_service(&stored(w));
        b.running.app.cluster.apply_service(&stored(w));
    }
    // The first pair's winner is deleted: the watches release its claim, and the loser's
    // retry, on either replica, is admitted.
    let (winner, loser) = &winners[0];
    a.running.app.cluster.delete_service(&stored(winner));
    b.running.app.cluster.delete_service(&stored(winner));
    eventually("the claim released", || store.leases().len() == 99).await;
    let retried = cb.post("/validate", loser).await.review();
    assert_eq!(retried["allowed"], true, "{retried}");
    // Held by the retried Service now; the other pairs are untouched.
    let holders: Vec<String> = store
        .leases()
        .values()
        .filter_map(|l| l.spec.as_ref()?.holder_identity.clone())
        .collect();
    assert!(holders.contains(&format!(
        "shop/{}",
        loser["request"]["name"].as_str().unwrap()
    )));
    assert_eq!(holders.len(), 100);
}

#[tokio::test]
async fn a_retried_apply_does_not_deny_itself() {
    let store = MemoryLeases::new();
    let (a, b) = (replica(&store, "").await, replica(&store, "").await);
    let r = create("web", "lb-1");
    assert_eq!(
        a.client().post("/validate", &r).await.review()["allowed"],
        true
    );
    // The API server timed out and kubectl retried; this time through the other replica.
    assert_eq!(
        b.client().post("/validate", &r).await.review()["allowed"],
        true
    );
    assert_eq!(store.leases().len(), 1);
}

#[tokio::test]
async fn dry_runs_and_load_balancers_the_ccm_creates_send_nothing_to_the_api() {
    let store = MemoryLeases::new();
    let s = replica(&store, "").await;
    let c = s.client();
    let mut dry = fixture("review-dryrun-create.json");
    set_annotations(&mut dry, "object", &[(LB_ID, "lb-1")]);
    assert_eq!(c.post("/validate", &dry).await.review()["allowed"], true);
    // No id annotation: the CCM creates a load balancer just for this Service.
    let own = fixture("review-create.json");
    assert_eq!(c.post("/validate", &own).await.review()["allowed"], true);
    // The mutating webhook never claims.
    let mut m = fixture("review-create-mutate.json");
    set_annotations(&mut m, "object", &[(LB_ID, "lb-1")]);
    assert_eq!(c.post("/mutate", &m).await.review()["allowed"], true);
    assert_eq!(store.requests(), 0);
    assert!(store.leases().is_empty());
}

#[tokio::test]
async fn an_update_claims_only_the_ports_it_adds() {
    let store = MemoryLeases::new();
    let s = replica(&store, "").await;
    // The fixture's update adds port 443 next to the 80 the Service already had.
    let mut r = fixture("review-update.json");
    set_annotations(&mut r, "object", &[(LB_ID, "lb-1")]);
    set_annotations(&mut r, "oldObject", &[(LB_ID, "lb-1")]);
    assert_eq!(
        s.client().post("/validate", &r).await.review()["allowed"],
        true
    );
    let leases = store.leases();
    assert_eq!(leases.len(), 1);
    let lease = leases.values().next().unwrap();
    assert_eq!(
        lease.metadata.annotations.as_ref().unwrap()["lbguard.io/listener"],
        "443/TCP"
    );
    // A later update that adds no port sends nothing.
    let sent = store.requests();
    r["request"]["oldObject"]["spec"] = r["request"]["object"]["spec"].clone();
    assert_eq!(
        s.client().post("/validate", &r).await.review()["allowed"],
        true
    );
    assert_eq!(store.requests(), sent);
}

#[tokio::test]
async fn an_unreachable_api_server_denies_by_default_and_warns_with_on_error_allow() {
    let store = MemoryLeases::new();
    store.set_down(true);
    let deny = replica(&store, "").await;
    let r = create("web", "lb-1");
    let resp = deny.client().post("/validate", &r).await.review();
    assert_eq!(resp["allowed"], false);
    let message = resp["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("[listener-port-unique] the listener claim for port 80/TCP on load balancer \"lb-1\" could not be recorded")
            && message.contains("retry the request"),
        "{message}"
    );
    let allow = replica(&store, "claims:\n  onError: allow\n").await;
    let resp = allow.client().post("/validate", &r).await.review();
    assert_eq!(resp["allowed"], true);
    let warnings = resp["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("admitted without the cross-replica port check")),
        "{warnings:?}"
    );
    assert!(
        deny.metrics_text()
            .await
            .contains("lbguard_claim_errors_total 1")
    );
}

#[tokio::test]
async fn a_slow_api_server_is_cut_off_at_the_time_budget() {
    let store = MemoryLeases::new();
    store.set_delay(Duration::from_secs(3));
    let s = replica(&store, "claims:\n  timeout: 200ms\n").await;
    let started = std::time::Instant::now();
    let resp = s
        .client()
        .post("/validate", &create("web", "lb-1"))
        .await
        .review();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(resp["allowed"], false);
    assert!(
        resp["status"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer within 200 ms")
    );
}

#[tokio::test]
async fn a_claim_whose_service_never_appeared_is_taken_over_after_the_grace_period() {
    let store = MemoryLeases::new();
    let s = replica(&store, "claims:\n  grace: 1s\n").await;
    let c = s.client();
    // Admitted, then refused by a later webhook: the Service never appears.
    assert_eq!(
        c.post("/validate", &create("ghost", "lb-1")).await.review()["allowed"],
        true
    );
    s.running.app.cluster.unreserve("shop", "ghost");
    let early = c.post("/validate", &create("web", "lb-1")).await.review();
    assert_eq!(
        early["allowed"], false,
        "inside the grace period the claim holds"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let late = c.post("/validate", &create("web", "lb-1")).await.review();
    assert_eq!(late["allowed"], true, "{late}");
    let leases = store.leases();
    assert_eq!(
        leases
            .values()
            .next()
            .unwrap()
            .spec
            .as_ref()
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("shop/web")
    );
    let metrics = s.metrics_text().await;
    assert!(
        metrics.contains("lbguard_claim_takeovers_total 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("lbguard_claim_conflicts_total 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn collection_sweeps_stale_claims_and_keeps_live_ones() {
    let store = MemoryLeases::new();
    let s = replica(&store, "claims:\n  grace: 1s\n").await;
    let c = s.client();
    for name in ["kept", "ghost"] {
        let r = create(name, &format!("lb-{name}"));
        assert_eq!(c.post("/validate", &r).await.review()["allowed"], true);
    }
    // "kept" was stored and the watch shows it; "ghost" never appeared.
    s.running
        .app
        .cluster
        .apply_service(&stored(&create("kept", "lb-kept")));
    s.running.app.cluster.unreserve("shop", "ghost");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let claims = s.running.app.claims.as_ref().unwrap();
    assert_eq!(claims.collect().await.unwrap(), 1);
    let holders: Vec<String> = store
        .leases()
        .values()
        .filter_map(|l| l.spec.as_ref()?.holder_identity.clone())
        .collect();
    assert_eq!(holders, ["shop/kept"]);
}

#[tokio::test]
async fn two_generated_names_do_not_pass_for_one_holder() {
    let store = MemoryLeases::new();
    let (a, b) = (replica(&store, "").await, replica(&store, "").await);
    let generated = |uid: &str| {
        let mut r = create("", "lb-1");
        r["request"]["uid"] = uid.into();
        r["request"]["object"]["metadata"]["generateName"] = "web-".into();
        r
    };
    let first = a
        .client()
        .post("/validate", &generated("uid-1"))
        .await
        .review();
    assert_eq!(first["allowed"], true, "{first}");
    let second = b
        .client()
        .post("/validate", &generated("uid-2"))
        .await
        .review();
    assert_eq!(second["allowed"], false, "{second}");
    assert!(
        second["status"]["message"]
            .as_str()
            .unwrap()
            .contains("held by shop/(generated in uid-1)")
    );
}
