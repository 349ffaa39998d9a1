//! The cloud source as the chart installs it: `inventory.cloud.enabled` with a Secret in the
//! API server, the replicas reading the Secret's files and asking the mock cloud (which checks
//! every signature with the cloud's SDK), in the region the nodes are labelled with. Through both API servers: a typo in the load balancer
//! id is denied by `lb-exists`, a reused load balancer gets its address type from the cloud
//! (the mutating webhook), and a listener the cloud already has is not taken twice.

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::Env;
use crate::common::mock_cloud::{AK, Mock, REGION, SK};
use crate::install::{EXAMPLES, NS, of_kind, render, values};
use crate::plane::{apply, apply_ok, call, delete, eventually, namespace};

const APP_NS: &str = "cloud-e2e";

fn service(name: &str, id: &str, port: i64) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": APP_NS, "annotations": {
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": id}},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"port": port, "protocol": "TCP", "targetPort": 8080}]},
    })
}

pub async fn run(env: &mut Env) {
    let inventory =
        std::fs::read_to_string(format!("{EXAMPLES}/inventory/inventory.yaml")).unwrap();
    let Some(mock) = Mock::start(&inventory).await else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the clouds' SDKs are needed under CI"
        );
        return;
    };
    let admin = env.admin[0].clone();
    // The Secret, as a user creates it (kubectl create secret generic --from-file=...).
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    apply_ok(
        &admin,
        &json!({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "lbguard-cloud", "namespace": NS},
            "data": {"accessKeyId": b64(AK), "accessKeySecret": b64(SK)},
        }),
    )
    .await;

    // The region comes from the nodes' label (no inventory.cloud.region).
    apply_ok(&admin, &json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "cloud-e2e-node", "labels": {"topology.kubernetes.io/region": REGION}},
    }))
    .await;
    // The chart with the cloud source on.
    let mut v = values(&env.lbguard.ca_pem);
    v["provider"] = json!("alibaba");
    v["inventory"] = json!({"enabled": false, "cloud": {
        "enabled": true, "existingSecret": "lbguard-cloud", "endpoint": mock.url}});
    let objects = render(&v);
    let deployment = of_kind(&objects, "Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "cloud-credentials")
        .expect("the chart mounts the Secret");
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "cloud-credentials")
        .unwrap();
    let secret_name = volume["secret"]["secretName"].as_str().unwrap();
    // What the kubelet does: the Secret's keys as files where the pod mounts it.
    let secret = call(
        &admin,
        "GET",
        &format!("/api/v1/namespaces/{NS}/secrets/{secret_name}"),
        None,
    )
    .await;
    assert_eq!(secret.status, 200, "{}", secret.body);
    let dir = env.plane.dir.join("cloud-credentials");
    std::fs::create_dir_all(&dir).unwrap();
    for (key, value) in secret.body["data"].as_object().unwrap() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap())
            .unwrap();
        std::fs::write(dir.join(key), bytes).unwrap();
    }
    let rendered = of_kind(&objects, "ConfigMap")
        .into_iter()
        .find(|m| m["metadata"]["name"].as_str().unwrap().ends_with("-config"))
        .unwrap()["data"]["config.yaml"]
        .as_str()
        .unwrap()
        .to_string();
    let mut config: Value = lbguard::yaml::from_str(&rendered).unwrap();
    assert_eq!(
        config["inventory"]["cloud"]["credentialsDir"], mount["mountPath"],
        "the config reads the Secret where it is mounted"
    );
    config["inventory"]["cloud"]["credentialsDir"] = json!(dir.display().to_string());
    let ca = env.plane.dir.join("mock-cloud-ca.pem");
    std::fs::write(&ca, &mock.ca_pem).unwrap();
    let saved_env = env.lbguard.env.clone();
    env.lbguard.env = pod["containers"][0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_string(),
                e["value"].as_str()?.to_string(),
            ))
        })
        .chain([("SSL_CERT_FILE".to_string(), ca.display().to_string())])
        .collect();
    let saved_config = std::fs::read_to_string(&env.lbguard.config).unwrap();
    // A short refresh, so a few rounds fit in the test.
    config["inventory"]["cloud"]["refresh"] = json!("2s");
    config["inventory"]["cloud"]["qps"] = json!(1000);
    env.lbguard.reconfigure(|c| *c = config.clone()).await;

    namespace(&admin, APP_NS).await;
    // A typo: denied through either API server, naming the id and the region.
    for (i, api) in env.admin.iter().enumerate() {
        let r = apply(api, &service(&format!("typo-{i}"), "lb-2ze-pubilc", 80)).await;
        assert_eq!(r.status, 403, "API server {i}: {}", r.body);
        let m = r.body["message"].as_str().unwrap();
        assert!(
            m.contains("[lb-exists]") && m.contains("lb-2ze-pubilc") && m.contains(REGION),
            "{m}"
        );
    }
    // A reused load balancer: stored with the cloud's address type, set by the mutating side.
    let r = apply(&admin, &service("web", "lb-2ze-public", 80)).await;
    assert!(r.ok(), "{} {}", r.status, r.body);
    assert_eq!(
        r.body["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type"],
        "internet",
        "{}",
        r.body
    );
    // Port 443 already has the user's HTTPS listener at the cloud. With force-override the
    // controller would create a TCP listener beside it, which the cloud's API refuses.
    let mut web2 = service("web-2", "lb-2ze-public", 443);
    web2["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners"] =
        json!("true");
    let r = apply(&env.admin[1], &web2).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let m = r.body["message"].as_str().unwrap();
    assert!(
        m.contains("[listener-port-unique]")
            && m.contains("port 443/TCP is already a HTTPS listener"),
        "{m}"
    );
    mock.assert_clean().await;
    assert!(mock.calls("alibaba/DescribeLoadBalancerAttribute").await >= 1);
    fleet_refreshes_once(env, &mock).await;
    a_stopping_replica_deletes_its_lease(env).await;

    // Put the suite's install back.
    let _ = delete(&admin, &service("web", "lb-2ze-public", 80)).await;
    let _ = delete(
        &admin,
        &json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "cloud-e2e-node"}}),
    )
    .await;
    env.lbguard.env = saved_env;
    let saved: Value = lbguard::yaml::from_str(&saved_config).unwrap();
    env.lbguard.reconfigure(|c| *c = saved.clone()).await;
}

/// Both replicas hold a Lease in their namespace and split the load balancers: the cloud is
/// asked about each about as often as one replica would (and a sixth more for the audit),
/// not twice, and in batches.
async fn fleet_refreshes_once(env: &Env, mock: &Mock) {
    const N: usize = 30;
    let admin = env.admin[0].clone();
    // The replicas' POD_NAME (tests/e2e/install.rs).
    let names: Vec<String> = (0..env.lbguard.replicas.len())
        .map(|i| format!("lbguard-{i}"))
        .collect();
    let leases = format!(
        "/apis/coordination.k8s.io/v1/namespaces/{NS}/leases?labelSelector=lbguard.io%2Frefresh-fleet"
    );
    let held = eventually(
        Duration::from_secs(30),
        "a refresh Lease per replica",
        || {
            let (admin, leases, names) = (admin.clone(), leases.clone(), names.clone());
            async move {
                let r = call(&admin, "GET", &leases, None).await;
                let mut held: Vec<String> = r.body["items"]
                    .as_array()?
                    .iter()
                    .filter_map(|l| l["metadata"]["name"].as_str().map(String::from))
                    .collect();
                held.sort();
                (held.len() == names.len()).then_some(held)
            }
        },
    )
    .await;
    let mut want = names.clone();
    want.sort();
    assert_eq!(held, want, "the Leases are named after the pods");
    mock.control("bulk", json!({"provider": "alibaba", "count": N}))
        .await;
    // In lbguard's own namespace, which the webhook never sees (these load balancers are in
    // another VPC): only the refresh reads them, as Services the cluster names.
    let bulk = |i: usize| {
        let mut s = service(&format!("bulk-{i}"), &format!("lb-bulk-{i}"), 5000);
        s["metadata"]["namespace"] = json!(NS);
        s
    };
    for i in 0..N {
        let r = apply(&admin, &bulk(i)).await;
        assert!(r.ok(), "{} {}", r.status, r.body);
    }
    // Each replica sees the other once both renewed (every 10 s).
    tokio::time::sleep(Duration::from_secs(12)).await;
    mock.control("reset", json!({})).await;
    // Six rounds of 2 s: one replica alone asks about 6 N load balancers; two that shared
    // nothing, 12 N. Shared, about 7 N: each reads its own part every round and, for its
    // audit, a sixth of the other's.
    let window = Duration::from_secs(12);
    tokio::time::sleep(window).await;
    let c = mock.control("calls", json!({})).await;
    let asked = c["loadBalancersAsked"].as_u64().unwrap() as usize;
    assert!(
        (4 * N..=9 * N).contains(&asked),
        "{asked} load balancers asked about in {window:?} for {N} and 2 replicas: {c}"
    );
    // Many a call (DescribeLoadBalancers takes ten).
    let lists = mock.calls("alibaba/DescribeLoadBalancers").await as usize;
    assert!(
        lists >= 1 && lists * 4 <= asked,
        "{lists} list calls for {asked} load balancers: {c}"
    );
    for i in 0..N {
        let _ = delete(&admin, &bulk(i)).await;
    }
}

/// SIGTERM: the replica deletes its refresh Lease, so the other takes its load balancers at
/// its next renewal instead of after the Lease expires.
async fn a_stopping_replica_deletes_its_lease(env: &mut Env) {
    let admin = env.admin[0].clone();
    let lease = format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/lbguard-1");
    assert_eq!(call(&admin, "GET", &lease, None).await.status, 200);
    let log = {
        let p = env.lbguard.replicas[1].proc.as_mut().unwrap();
        p.terminate(Duration::from_secs(30));
        p.tail(200)
    };
    let since_stop: Vec<&str> = log
        .lines()
        .skip_while(|l| !l.contains("shutting down"))
        .collect();
    assert!(
        since_stop
            .iter()
            .any(|l| l.contains("\"message\":\"stopped\"")),
        "replica 1 did not stop cleanly:\n{log}"
    );
    // The audit stops with the server: no report round against a client going away.
    assert!(
        !since_stop.iter().any(|l| l.contains("policy report")),
        "replica 1 wrote reports while stopping:\n{log}"
    );
    env.lbguard.replicas[1].proc = None;
    assert_eq!(
        call(&admin, "GET", &lease, None).await.status,
        404,
        "the stopped replica's Lease is still there"
    );
    env.lbguard.start_replica(1).await;
}
