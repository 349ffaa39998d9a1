//! A rolling restart under load, as `kubectl rollout restart` does it: the endpoints drop a
//! replica (the proxy stops sending it new connections) and the replica gets SIGTERM, then
//! comes back; then the other one. Service creates keep flowing through both API servers the
//! whole time, and none of them fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::Env;
use crate::plane::{self, call};

const NS: &str = "rolling";

/// Stops the load when the case ends, a failed assertion included.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

pub async fn run(env: &mut Env) {
    plane::namespace(&env.admin[0], NS).await;
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(Arc::clone(&stop));
    let mut load = Vec::new();
    for (c, client) in env.admin.iter().enumerate() {
        let (client, stop) = (client.clone(), Arc::clone(&stop));
        load.push(tokio::spawn(async move {
            let (mut ok, mut failed) = (0usize, Vec::new());
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let svc = json!({
                    "apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": format!("svc-{c}-{i}"), "namespace": NS, "annotations": {
                        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet"}},
                    "spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                             "ports": [{"port": 80, "targetPort": 8080}]},
                });
                let r = call(&client, "POST", &format!("/api/v1/namespaces/{NS}/services"), Some(&svc)).await;
                if r.ok() {
                    ok += 1;
                } else {
                    failed.push(format!("{} {}", r.status, r.message()));
                }
                i += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (ok, failed)
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    for (down, up) in [(0, 1), (1, 0)] {
        env.lbguard.route_to(&[up]);
        // SIGTERM: not ready at once, serving for the chart's --shutdown-delay, then a drain.
        let log = {
            let p = env.lbguard.replicas[down].proc.as_mut().unwrap();
            p.terminate(Duration::from_secs(30));
            p.tail(5)
        };
        assert!(
            log.contains("stopped"),
            "replica {down} did not stop cleanly:\n{log}"
        );
        env.lbguard.replicas[down].proc = None;
        env.lbguard.start_replica(down).await;
        env.lbguard.route_to_all();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (mut ok, mut failed) = (0, Vec::new());
    for t in load {
        let (o, f) = t.await.unwrap();
        ok += o;
        failed.extend(f);
    }
    println!("  rolling restart: {ok} creates, {} failed", failed.len());
    assert!(ok > 100, "only {ok} creates went through");
    assert!(
        failed.is_empty(),
        "{} of {} creates failed during the rolling restart: {:?}",
        failed.len(),
        ok + failed.len(),
        &failed[..failed.len().min(5)]
    );
}
