//! Workload identity as the chart installs it on ACK without the pod-identity webhook: a
//! projected ServiceAccount token with RRSA's audience, the role's variables, and no access key
//! anywhere in the cluster. The token comes from the real API server's TokenRequest (what the
//! kubelet asks for the projected volume), is exchanged at the STS stand-in (which the
//! Alibaba SDK's own RRSA provider accepts, tests/identity_alibaba_volc/), and the temporary
//! credentials sign the load balancer calls the mock cloud checks with the SDK's signer,
//! security token included. Through both API servers: `lb-exists` denies a typo, and the
//! address-type default comes from the cloud.

use serde_json::{Value, json};

use crate::Env;
use crate::common::mock_cloud::{Mock, REGION};
use crate::identity_stand_in::StandIn;
use crate::install::{EXAMPLES, NS, of_kind, render, values};
use crate::plane::{apply, call, delete, namespace};

const APP_NS: &str = "identity-e2e";
pub const ROLE: &str = "acs:ram::1234567890:role/lbguard-lb-readonly";
pub const PROVIDER: &str = "acs:ram::1234567890:oidc-provider/ack-rrsa-c1234567890abcdef";
pub const AUDIENCE: &str = "sts.aliyuncs.com";
const STS_AK: &str = "STS.e2eTemporaryKey";
const STS_SK: &str = "e2e-temporary-secret";
const STS_TOKEN: &str = "e2e-security-token";

/// The mock cloud with the examples' inventory and the STS stand-in, both on `host` (loopback
/// when `None`): the STS hands out temporary credentials for [`ROLE`], to a JWT only, and the
/// cloud accepts those credentials with their security token, and nothing else. `None`
/// without the clouds' SDKs (a failure under `CI=true`).
pub async fn stand_ins(host: Option<std::net::IpAddr>) -> Option<(Mock, StandIn)> {
    let inventory =
        std::fs::read_to_string(format!("{EXAMPLES}/inventory/inventory.yaml")).unwrap();
    let (Some(mock), Some(sts)) = (
        Mock::start_on(&inventory, host).await,
        StandIn::start_on(host).await,
    ) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the clouds' SDKs are needed under CI"
        );
        return None;
    };
    sts.control(
        "config",
        json!({"token": "jwt", "roleArn": ROLE, "ak": STS_AK, "sk": STS_SK,
               "sessionToken": STS_TOKEN, "lifetime": 3600}),
    )
    .await;
    mock.control(
        "creds",
        json!({"ak": STS_AK, "sk": STS_SK, "token": STS_TOKEN}),
    )
    .await;
    Some((mock, sts))
}

fn service(name: &str, id: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": APP_NS, "annotations": {
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": id}},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]},
    })
}

pub async fn run(env: &mut Env) {
    let Some((mock, sts)) = stand_ins(None).await else {
        return;
    };

    let admin = env.admin[0].clone();
    let mut v = values(&env.lbguard.ca_pem);
    v["provider"] = json!("alibaba");
    v["inventory"] = json!({"enabled": false, "cloud": {
    "enabled": true, "endpoint": mock.url, "region": REGION,
    "credentials": {
        "stsEndpoint": sts.sts,
        "projectedToken": {"audience": AUDIENCE, "expirationSeconds": 3600},
        "env": {"ALIBABA_CLOUD_ROLE_ARN": ROLE, "ALIBABA_CLOUD_OIDC_PROVIDER_ARN": PROVIDER},
    }}});
    let objects = render(&v);
    assert!(
        of_kind(&objects, "Secret")
            .iter()
            .all(|s| s["data"].get("accessKeyId").is_none()),
        "no access key in the cluster"
    );
    let deployment = of_kind(&objects, "Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "cloud-token")
        .expect("the chart mounts a projected token");
    assert!(
        pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["name"] != "cloud-credentials"),
        "no Secret volume"
    );
    let projected = &volume["projected"]["sources"][0]["serviceAccountToken"];
    let service_account = pod["serviceAccountName"].as_str().unwrap();

    // What the kubelet does for the projected volume: a TokenRequest with the volume's
    // audience and lifetime, written where the container mounts it.
    let r = call(
        &admin,
        "POST",
        &format!("/api/v1/namespaces/{NS}/serviceaccounts/{service_account}/token"),
        Some(
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": [projected["audience"]],
                     "expirationSeconds": projected["expirationSeconds"]}}),
        ),
    )
    .await
    .expect_ok("token request");
    let token = r.body["status"]["token"].as_str().unwrap().to_string();
    let mount = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "cloud-token")
        .unwrap()["mountPath"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = env.plane.dir.join("cloud-token");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(projected["path"].as_str().unwrap()), &token).unwrap();

    // The container's environment, with the mounted path made local; both test CAs trusted.
    let ca = env.plane.dir.join("identity-e2e-ca.pem");
    std::fs::write(&ca, format!("{}\n{}", mock.ca_pem, sts.ca_pem)).unwrap();
    let saved_env = env.lbguard.env.clone();
    let pod_env: Vec<(String, String)> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let value = e["value"].as_str()?;
            let value = match value.strip_prefix(&format!("{mount}/")) {
                Some(file) => dir.join(file).display().to_string(),
                None => value.to_string(),
            };
            Some((e["name"].as_str()?.to_string(), value))
        })
        .collect();
    let token_file = pod_env
        .iter()
        .find(|(k, _)| k == "ALIBABA_CLOUD_OIDC_TOKEN_FILE")
        .expect("the chart names the token file");
    assert!(std::path::Path::new(&token_file.1).is_file());
    assert!(
        pod_env.iter().all(|(k, _)| !k.contains("ACCESS_KEY")),
        "{pod_env:?}"
    );
    env.lbguard.env = pod_env
        .into_iter()
        .chain([("SSL_CERT_FILE".to_string(), ca.display().to_string())])
        .collect();
    let rendered = of_kind(&objects, "ConfigMap")
        .into_iter()
        .find(|m| m["metadata"]["name"].as_str().unwrap().ends_with("-config"))
        .unwrap()["data"]["config.yaml"]
        .as_str()
        .unwrap()
        .to_string();
    let config: Value = lbguard::yaml::from_str(&rendered).unwrap();
    assert!(config["inventory"]["cloud"].get("credentialsDir").is_none());
    let saved_config = std::fs::read_to_string(&env.lbguard.config).unwrap();
    env.lbguard.reconfigure(|c| *c = config.clone()).await;

    namespace(&admin, APP_NS).await;
    for (i, api) in env.admin.iter().enumerate() {
        let r = apply(api, &service(&format!("typo-{i}"), "lb-2ze-pubilc")).await;
        assert_eq!(r.status, 403, "API server {i}: {}", r.body);
        let m = r.body["message"].as_str().unwrap();
        assert!(
            m.contains("[lb-exists]") && m.contains("lb-2ze-pubilc"),
            "API server {i}: {m}"
        );
        let name = format!("web-{i}");
        let r = apply(api, &service(&name, "lb-2ze-public")).await;
        assert!(r.ok(), "API server {i}: {} {}", r.status, r.body);
        assert_eq!(
            r.body["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type"],
            "internet",
            "API server {i}: {}",
            r.body
        );
        let _ = delete(api, &service(&name, "lb-2ze-public")).await;
    }
    // The cloud saw only calls signed with the temporary credentials and their token.
    mock.assert_clean().await;
    assert!(mock.calls("alibaba/DescribeLoadBalancerAttribute").await >= 1);
    // The STS got the API server's token for the role, from both replicas' exchanges.
    let last = sts.last().await;
    let exchange = &last["alibaba"];
    assert_eq!(exchange["token"], token.as_str(), "{last}");
    assert_eq!(exchange["roleArn"], ROLE, "{last}");
    assert_eq!(exchange["providerArn"], PROVIDER, "{last}");
    let exchanges = last["calls"]["alibaba/sts"].as_u64().unwrap_or(0);
    assert!(
        (1..=4).contains(&exchanges),
        "{exchanges} exchanges: the credentials are reused until renewal"
    );
    // And that token is what RRSA's trust policy checks: the API server vouches for it, for
    // the STS's audience, as the chart's ServiceAccount.
    let review = call(
        &admin,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Some(
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token, "audiences": [AUDIENCE]}}),
        ),
    )
    .await
    .expect_ok("token review");
    let status = &review.body["status"];
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        format!("system:serviceaccount:{NS}:{service_account}"),
        "{status}"
    );

    env.lbguard.env = saved_env;
    let saved: Value = lbguard::yaml::from_str(&saved_config).unwrap();
    env.lbguard.reconfigure(|c| *c = saved.clone()).await;
}
