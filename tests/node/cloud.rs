//! The cloud source as the chart runs it on a node, with workload identity: the kubelet
//! projects a ServiceAccount token with RRSA's audience into the pod, lbguard exchanges it at
//! the STS stand-in for temporary credentials, and signs the load balancer calls with them.
//! Both stand-ins listen on the node's host-only bridge, with a CA the chart mounts from a
//! ConfigMap (`inventory.cloud.caBundle`). No access key anywhere in the cluster.

use std::net::IpAddr;

use serde_json::{Value, json};

use super::{NS, Node};
use crate::common::mock_cloud::REGION;
use crate::identity::{AUDIENCE, PROVIDER, ROLE, stand_ins};

/// The host's address on the node's pod bridge (`../shared/node/README.md`, "Layout").
const BRIDGE: [u8; 4] = [10, 200, 0, 1];

fn service(name: &str, id: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: shop\n  annotations:\n    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id: {id}\nspec:\n  type: LoadBalancer\n  selector: {{app: {name}}}\n  ports: [{{port: 80, targetPort: 8080}}]\n"
    )
}

pub async fn workload_identity(node: &mut Node) {
    let (mock, sts) = stand_ins(Some(IpAddr::from(BRIDGE)))
        .await
        .expect("the clouds' Python SDKs (scripts/test installs them)");

    let ca = node.dir.join("cloud-ca.crt");
    std::fs::write(&ca, format!("{}\n{}", mock.ca_pem, sts.ca_pem)).unwrap();
    let values = node.dir.join("cloud-values.yaml");
    let v = json!({
        "provider": "alibaba",
        "inventory": {"cloud": {
            "enabled": true, "endpoint": mock.url, "region": REGION, "onError": "deny",
            "caBundle": {"configMap": "cloud-ca"},
            "credentials": {
                "stsEndpoint": sts.sts,
                "projectedToken": {"audience": AUDIENCE},
                "env": {"ALIBABA_CLOUD_ROLE_ARN": ROLE, "ALIBABA_CLOUD_OIDC_PROVIDER_ARN": PROVIDER},
            }}},
    });
    std::fs::write(&values, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    node.ok(&format!(
        "kubectl create namespace {NS} && kubectl create namespace shop && \
         kubectl -n {NS} create configmap cloud-ca --from-file=ca.crt={ca} && \
         helm install lbguard charts/lbguard -n {NS} {image} -f {values}",
        ca = ca.display(),
        image = node.image_values(),
        values = values.display(),
    ));
    super::chart::ready(node).await;
    let secrets = node.ok(&format!("kubectl -n {NS} get secrets -o json"));
    assert!(
        !secrets.contains("accessKeyId"),
        "no access key in the cluster"
    );

    // A typo'd id: denied by lb-exists, from the cloud's answer (the pod had to exchange the
    // kubelet's token and sign with the temporary credentials to get it).
    let typo = node.dir.join("typo.yaml");
    std::fs::write(&typo, service("typo", "lb-2ze-pubilc")).unwrap();
    let started = std::time::Instant::now();
    loop {
        let out = node.sh(&format!("kubectl apply -f {}", typo.display()));
        // onError is deny: a cloud that cannot be asked yet (a cold first exchange) is
        // denied too, but says so; that is retried.
        if !out.ok && out.text.contains("names no load balancer") {
            assert!(
                out.text.contains("[lb-exists]") && out.text.contains("\"lb-2ze-pubilc\""),
                "{}",
                out.text
            );
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the typo should be denied by lb-exists:\n{}",
            out.text
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    // The right id: admitted, with the address type the cloud gives as its default.
    let web = node.dir.join("web.yaml");
    std::fs::write(&web, service("web", "lb-2ze-public")).unwrap();
    node.ok(&format!("kubectl apply -f {}", web.display()));
    let got: Value =
        serde_json::from_str(&node.ok("kubectl -n shop get service web -o json")).unwrap();
    assert_eq!(
        got["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type"],
        "internet",
        "{got}"
    );

    // Every call the cloud saw was signed with the temporary credentials and their token.
    mock.assert_clean().await;
    assert!(mock.calls("alibaba/DescribeLoadBalancerAttribute").await >= 1);
    // The STS got a token the kubelet projected: the API server vouches for it, for the
    // STS's audience, as the chart's ServiceAccount.
    let last = sts.last().await;
    let exchange = &last["alibaba"];
    assert_eq!(exchange["roleArn"], ROLE, "{last}");
    assert_eq!(exchange["providerArn"], PROVIDER, "{last}");
    let token = exchange["token"].as_str().expect("a token").to_string();
    let review = node.dir.join("review.json");
    std::fs::write(
        &review,
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
               "spec": {"token": token, "audiences": [AUDIENCE]}})
        .to_string(),
    )
    .unwrap();
    let status: Value =
        serde_json::from_str(&node.ok(&format!("kubectl create -o json -f {}", review.display())))
            .unwrap();
    let status = &status["status"];
    assert_eq!(status["authenticated"], true, "{status}");
    let pod = status["user"]["extra"]["authentication.kubernetes.io/pod-name"][0]
        .as_str()
        .unwrap_or_default();
    assert!(
        pod.starts_with("lbguard-"),
        "a token bound to a lbguard pod: {status}"
    );
    let account = node.ok(&format!(
        "kubectl -n {NS} get deployment lbguard -o jsonpath='{{.spec.template.spec.serviceAccountName}}'"
    ));
    assert_eq!(
        status["user"]["username"],
        format!("system:serviceaccount:{NS}:{}", account.trim()),
        "{status}"
    );
    node.ok(&format!("kubectl delete -f {} --wait=false", web.display()));
}
