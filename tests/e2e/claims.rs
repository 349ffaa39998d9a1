//! Listener claims through the real API servers: simultaneous conflicting creates, one
//! through each API server (each with its own connection to the webhook), store exactly one
//! Service; with one replica killed mid-run the other keeps the guarantee; deleting the
//! Services releases their claims.

use std::time::Duration;

use serde_json::{Value, json};

use crate::Env;
use crate::install::NS;
use crate::plane::{self, Reply, call, collection, eventually};

fn service(ns: &str, name: &str, lb: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "annotations": {
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": lb,
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners": "false"}},
        "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    })
}

/// Both creates of pair `k` at once, one per API server.
async fn pair(env: &Env, round: &str, k: usize) -> (Service, Service) {
    let lb = format!("lb-e2e-{round}-{k}");
    let name = format!("web-{k}");
    let a = service(&format!("{round}-a"), &name, &lb);
    let b = service(&format!("{round}-b"), &name, &lb);
    let (pa, pb) = (collection(&a), collection(&b));
    let (ra, rb) = tokio::join!(
        call(&env.admin[0], "POST", &pa, Some(&a)),
        call(&env.admin[1], "POST", &pb, Some(&b)),
    );
    (Service(a, ra), Service(b, rb))
}

struct Service(Value, Reply);

/// The Services of a round, both sides.
async fn services_of(env: &Env, round: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for side in ["a", "b"] {
        let path = format!("/api/v1/namespaces/{round}-{side}/services");
        let r = call(&env.admin[0], "GET", &path, None).await;
        out.extend(r.body["items"].as_array().cloned().unwrap_or_default());
    }
    out
}

async fn stored(env: &Env, round: &str, k: usize) -> usize {
    let lb = format!("lb-e2e-{round}-{k}");
    services_of(env, round)
        .await
        .iter()
        .filter(|s| {
            s["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id"]
                == lb.as_str()
        })
        .count()
}

async fn claims(env: &Env) -> Vec<Value> {
    let r = call(
        &env.admin[1],
        "GET",
        &format!(
            "/apis/coordination.k8s.io/v1/namespaces/{NS}/leases?labelSelector=lbguard.io/claim"
        ),
        None,
    )
    .await;
    r.body["items"].as_array().cloned().unwrap_or_default()
}

async fn clear(env: &Env, round: &str) {
    for mut s in services_of(env, round).await {
        s["apiVersion"] = "v1".into();
        s["kind"] = "Service".into();
        plane::delete(&env.admin[0], &s).await.expect_ok("delete");
    }
}

pub async fn run(env: &mut Env) {
    for ns in ["c1-a", "c1-b", "c2-a", "c2-b"] {
        plane::namespace(&env.admin[0], ns).await;
    }
    // 40 simultaneous conflicting pairs: exactly one of each is stored, the other is denied
    // by listener-port-unique naming the holder.
    for k in 0..40 {
        let (a, b) = pair(env, "c1", k).await;
        let winners = [&a, &b].iter().filter(|s| s.1.ok()).count();
        assert_eq!(
            winners, 1,
            "pair {k}: {} {} / {} {}",
            a.1.status, a.1.body, b.1.status, b.1.body
        );
        let loser = if a.1.ok() { &b } else { &a };
        let winner = if a.1.ok() { &a } else { &b };
        let message = loser.1.message();
        assert!(
            message.contains("[listener-port-unique]"),
            "pair {k}: {message}"
        );
        let holder = format!(
            "{}/web-{k}",
            winner.0["metadata"]["namespace"].as_str().unwrap()
        );
        assert!(
            message.contains(&holder),
            "pair {k}: {message} does not name {holder}"
        );
        assert_eq!(stored(env, "c1", k).await, 1, "pair {k}");
    }
    assert_eq!(
        claims(env).await.len(),
        40,
        "one claim per stored Service's port"
    );

    // One replica dies mid-run: its in-flight calls fail (failurePolicy Fail rejects them),
    // and never is a pair stored twice; once the API servers reconnect, the other replica
    // alone keeps exactly one of each pair.
    let mut exactly_one_after_kill = 0;
    for k in 0..30 {
        if k == 5 {
            env.lbguard.kill_replica(0);
        }
        let _ = pair(env, "c2", k).await;
        let n = stored(env, "c2", k).await;
        assert!(n <= 1, "pair {k} after the kill: both stored");
        if k >= 15 {
            assert_eq!(
                n, 1,
                "pair {k}: the surviving replica admits one of the two"
            );
            exactly_one_after_kill += 1;
        }
    }
    assert_eq!(exactly_one_after_kill, 15);

    // Deleting the Services releases their claims at once (the watch's change hook).
    clear(env, "c1").await;
    clear(env, "c2").await;
    eventually(
        Duration::from_secs(20),
        "every claim is released",
        || async { claims(env).await.is_empty().then_some(()) },
    )
    .await;
}
