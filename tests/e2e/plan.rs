//! The plan's warnings reach the user at `kubectl apply` time: an update of a Service whose CLB
//! the controller made, which removes sticky-session annotations (the controller compares them
//! only when set, so the cloud keeps them: `plan-no-reset`) and a port (its listener is
//! deleted: `plan-delete-listener`), is admitted with both warnings from the real API server;
//! an update that asks nothing new of the cloud gets none.

use serde_json::{Value, json};

use crate::Env;
use crate::plane::{self, call, collection, object_path};

const NS: &str = "plan-warnings";
const P: &str = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-";

fn service() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": NS, "annotations": {
            format!("{P}protocol-port"): "http:80,http:8080",
            format!("{P}sticky-session"): "on",
            format!("{P}sticky-session-type"): "insert",
            format!("{P}cookie-timeout"): "1800",
        }},
        "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                           {"name": "alt", "port": 8080, "targetPort": 8080, "protocol": "TCP"}]},
    })
}

fn rules(warnings: &[String]) -> Vec<&str> {
    let mut ids: Vec<&str> = warnings
        .iter()
        .filter_map(|w| w.strip_prefix('[')?.split(']').next())
        .filter(|id| id.starts_with("plan-"))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

pub async fn run(env: &mut Env) {
    let admin = env.admin[0].clone();
    plane::namespace(&admin, NS).await;
    let svc = service();
    let created = call(&admin, "POST", &collection(&svc), Some(&svc))
        .await
        .expect_ok("the Service");
    assert!(
        rules(&created.warnings).is_empty(),
        "{:?}",
        created.warnings
    );

    // A label only: nothing new for the cloud, no plan warning.
    let mut labelled = created.body.clone();
    labelled["metadata"]["labels"] = json!({"tier": "web"});
    let r = call(&admin, "PUT", &object_path(&labelled), Some(&labelled))
        .await
        .expect_ok("a label");
    assert!(rules(&r.warnings).is_empty(), "{:?}", r.warnings);

    // Sticky sessions removed and port 8080 dropped: both surprises are warned, not denied.
    let mut update = r.body.clone();
    let annotations = update["metadata"]["annotations"].as_object_mut().unwrap();
    for key in ["sticky-session", "sticky-session-type", "cookie-timeout"] {
        annotations.remove(&format!("{P}{key}"));
    }
    annotations.insert(format!("{P}protocol-port"), json!("http:80"));
    update["spec"]["ports"] =
        json!([{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]);
    let r = call(&admin, "PUT", &object_path(&update), Some(&update))
        .await
        .expect_ok("the update");
    assert_eq!(
        rules(&r.warnings),
        ["plan-delete-listener", "plan-no-reset"],
        "{:#?}",
        r.warnings
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("[plan-delete-listener]") && w.contains("8080")),
        "{:#?}",
        r.warnings
    );
    plane::delete(&admin, &update).await;
}
