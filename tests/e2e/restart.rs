//! An API server restarts under lbguard: the replica connected to it stays ready, answers
//! from its cache while the API server is away, and sees a Service created after the
//! restart within 5 s.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Env;
use crate::plane::{self, call, collection};

fn service(name: &str, port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "restart", "annotations": {
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": "lb-e2e-restart",
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners": "false"}},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"name": "p", "port": port, "targetPort": 8080, "protocol": "TCP"}]},
    })
}

/// A dry-run CREATE review of a Service taking `port` on the shared LB, sent straight to
/// replica 0: denied only when its cluster view holds the Service that has the port.
async fn conflicts(env: &Env, port: u16) -> Option<String> {
    let mut review = crate::common::fixture("review-create.json");
    let svc = service("probe", port);
    review["request"]["object"] = svc;
    review["request"]["namespace"] = "restart".into();
    review["request"]["name"] = "probe".into();
    review["request"]["dryRun"] = true.into();
    let reply = env.lbguard.client(0).post("/validate", &review).await;
    let r = reply.review();
    (r["allowed"] == false).then(|| {
        r["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    })
}

pub async fn run(env: &mut Env) {
    let admin1 = env.admin[1].clone();
    plane::namespace(&admin1, "restart").await;
    let before = service("before", 81);
    call(&admin1, "POST", &collection(&before), Some(&before))
        .await
        .expect_ok("create");
    plane::eventually(
        Duration::from_secs(10),
        "replica 0 sees the Service",
        || async { conflicts(env, 81).await },
    )
    .await;

    // Readiness is polled all along, on its own connection each time.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ready = {
        let stop = stop.clone();
        let client = env.lbguard.client(0);
        tokio::spawn(async move {
            let (mut polls, mut failures) = (0, Vec::new());
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                polls += 1;
                match client.request("GET", "/readyz", vec![]).await {
                    Ok(r) if r.status == 200 => {}
                    other => failures.push(format!("{:?}", other.map(|r| r.status))),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (polls, failures)
        })
    };

    env.plane.stop_api(0);
    // Away: the cache still answers (the conflict is found, nothing is stored or claimed).
    let message = conflicts(env, 81)
        .await
        .expect("answered from the cache while the API server is down");
    assert!(
        message.contains("[listener-port-unique]") && message.contains("restart/before"),
        "{message}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;

    env.plane.start_api(0).await;
    let back = Instant::now();
    let after = service("after", 82);
    call(&admin1, "POST", &collection(&after), Some(&after))
        .await
        .expect_ok("create");
    let created = Instant::now();
    loop {
        if let Some(m) = conflicts(env, 82).await {
            assert!(m.contains("restart/after"), "{m}");
            break;
        }
        assert!(
            created.elapsed() < Duration::from_secs(5),
            "replica 0 does not see a Service created {:?} after the API server came back",
            created - back
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "  api_server_restart: a Service created after the restart seen in {:.2}s",
        created.elapsed().as_secs_f64()
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (polls, failures) = ready.await.unwrap();
    assert!(polls > 20, "{polls}");
    assert!(
        failures.is_empty(),
        "not ready {} of {polls} times: {failures:?}",
        failures.len()
    );
    for s in [&before, &after] {
        plane::delete(&admin1, s).await.expect_ok("delete");
    }
}
