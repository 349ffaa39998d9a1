//! `listener-quota` through the real API server counts only the listeners that exist or that
//! the controller will create: a load balancer with 49 listeners, a Service reusing it
//! without `force-override-listeners` (ACK makes no listener for it) on port 80, one with
//! force-override on 81 is admitted (50), a third on 82 is denied (51).

use std::time::Duration;

use serde_json::{Value, json};

use crate::Env;
use crate::plane::{self, call, collection, eventually};

const NS: &str = "quota";
const LB: &str = "lb-e2e-quota";

fn service(name: &str, port: u16, override_listeners: bool) -> Value {
    let prefix = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-";
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": NS, "annotations": {
            format!("{prefix}id"): LB,
            format!("{prefix}address-type"): "intranet",
            format!("{prefix}force-override-listeners"): override_listeners.to_string()}},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"name": "p", "port": port, "targetPort": 8080, "protocol": "TCP"}]},
    })
}

pub async fn run(env: &mut Env) {
    let admin = env.admin[0].clone();
    let saved = std::fs::read_to_string(&env.lbguard.inventory).unwrap();
    let mut inventory: Value = lbguard::yaml::from_str(&saved).unwrap();
    let listeners: Vec<Value> = (1000..1049)
        .map(|p| json!({"port": p, "protocol": "TCP", "owner": "external"}))
        .collect();
    inventory["loadBalancers"].as_array_mut().unwrap().push(
        json!({"id": LB, "provider": "alibaba", "kind": "clb", "addressType": "intranet",
            "vpcId": "vpc-123", "createdBy": "user", "listeners": listeners}),
    );
    std::fs::write(
        &env.lbguard.inventory,
        serde_json::to_string_pretty(&inventory).unwrap(),
    )
    .unwrap();
    plane::namespace(&admin, NS).await;
    let post = |s: Value| {
        let admin = admin.clone();
        async move { call(&admin, "POST", &collection(&s), Some(&s)).await }
    };
    // Once lbguard has the new inventory, it knows the load balancer is intranet.
    let mut probe = service("probe", 9, false);
    probe["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type"] =
        json!("internet");
    let dry_run = format!("{}?dryRun=All", collection(&probe));
    eventually(
        Duration::from_secs(30),
        "the inventory is reloaded",
        || async {
            // Several in a row: both replicas reload on their own.
            for _ in 0..4 {
                let r = call(&admin, "POST", &dry_run, Some(&probe)).await;
                if !r.message().contains("[address-type-match]") {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
    // Port 80 without force-override: ACK leaves the load balancer's listeners alone.
    let r = post(service("reuser", 80, false)).await;
    assert!(r.ok(), "{}", r.body);
    // 49 listeners and 81: 50, within the default quota.
    let r = post(service("override-81", 81, true)).await;
    assert!(r.ok(), "{}", r.body);
    // And 82: 51, over it.
    let r = post(service("override-82", 82, true)).await;
    assert!(!r.ok(), "{}", r.body);
    assert!(
        r.message().contains("[listener-quota]") && r.message().contains("would have 51 listeners"),
        "{}",
        r.message()
    );
    for name in ["reuser", "override-81"] {
        plane::delete(&admin, &service(name, 80, false))
            .await
            .expect_ok("delete");
    }
    std::fs::write(&env.lbguard.inventory, saved).unwrap();
}
