//! Huawei Cloud's credential providers against a stand-in of STS, IAM, the ECS metadata
//! service and CCE pod identity (tests/cloud/identity_huawei.py) that huaweicloudsdkcore's own
//! providers are first shown to get credentials from.

mod common;
#[path = "common/identity_huawei.rs"]
mod identity_huawei;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::mock_cloud::{Mock, REGION};
use identity_huawei::IdentityHuawei;
use lbguard::cloud::creds::CredStore;
use lbguard::cloud::http::Http;
use lbguard::vocab::config::{CredentialSource, CredentialsConfig};
use lbguard::vocab::ctx::Inventory;
use lbguard::vocab::provider::Provider;
use serde_json::json;

const AK: &str = "HWSTSAK";
const SK: &str = "hw-sts-secret";
const TOKEN: &str = "hw-security-token";
const WAIT: Duration = Duration::from_secs(5);

type Vars = Vec<(&'static str, String)>;

fn oidc(id: &IdentityHuawei) -> Vars {
    vec![
        (
            "HUAWEICLOUD_OIDC_PROVIDER_URN",
            "iam::acct:identity-provider:cce".into(),
        ),
        (
            "HUAWEICLOUD_OIDC_AGENCY_URN",
            "iam::acct:agency:lbguard".into(),
        ),
        (
            "HUAWEICLOUD_OIDC_TOKEN_FILE",
            id.dir().join("oidc-token").display().to_string(),
        ),
        ("HUAWEICLOUD_SDK_STS_ENDPOINT", id.https.clone()),
        ("HUAWEICLOUD_SDK_PROJECT_ID", "p-1".into()),
    ]
}

fn federated(id: &IdentityHuawei) -> Vars {
    vec![
        ("HUAWEICLOUD_SDK_IDP_ID", "cce-idp".into()),
        (
            "HUAWEICLOUD_SDK_ID_TOKEN_FILE",
            id.dir().join("oidc-token").display().to_string(),
        ),
        ("HUAWEICLOUD_SDK_IAM_ENDPOINT", id.https.clone()),
        ("HUAWEICLOUD_SDK_PROJECT_ID", "p-1".into()),
    ]
}

fn pod(id: &IdentityHuawei) -> Vars {
    vec![
        (
            "HC_CONTAINER_CREDENTIALS_FULL_URI",
            format!("{}/podidentity/credential", id.http),
        ),
        (
            "HC_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            id.dir().join("pod-token").display().to_string(),
        ),
        ("HUAWEICLOUD_SDK_PROJECT_ID", "p-1".into()),
    ]
}

fn key() -> Vars {
    vec![
        ("HUAWEICLOUD_SDK_AK", "HWAKID".into()),
        ("HUAWEICLOUD_SDK_SK", "hw-sk".into()),
        ("HUAWEICLOUD_SDK_PROJECT_ID", "p-1".into()),
    ]
}

fn store(metadata: &str, source: CredentialSource, vars: &Vars) -> Arc<CredStore> {
    let cfg = CredentialsConfig {
        source,
        metadata_endpoint: Some(metadata.to_string()),
        ..Default::default()
    };
    let env = |n: &str| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone());
    CredStore::configured(Provider::Huawei, None, &cfg, &env).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lbguard_gets_what_the_sdk_gets_in_the_sdk_order() {
    let Some(id) = IdentityHuawei::start().await else {
        return;
    };
    // First: huaweicloudsdkcore's own providers get credentials from the stand-in.
    let sdk = id.sdk_check();
    let http = Http::new(id.ca_pem.as_bytes()).unwrap();
    let cases = [
        ("oidc", CredentialSource::Auto, oidc(&id)),
        ("federated", CredentialSource::Auto, federated(&id)),
        (
            "metadata",
            CredentialSource::Metadata,
            vec![("HUAWEICLOUD_SDK_PROJECT_ID", "p-1".into())],
        ),
        ("pod", CredentialSource::PodIdentity, pod(&id)),
    ];
    for (name, source, vars) in &cases {
        let want = &sdk[*name];
        assert_eq!(
            (
                want["ak"].as_str(),
                want["sk"].as_str(),
                want["token"].as_str()
            ),
            (Some(AK), Some(SK), Some(TOKEN)),
            "{name}: {sdk}"
        );
        let c = store(&id.http, *source, vars)
            .current(&http, WAIT)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (
                c.access_key_id.as_str(),
                c.access_key_secret.as_str(),
                c.security_token.as_deref(),
                c.project_id.as_deref()
            ),
            (AK, SK, Some(TOKEN), Some("p-1")),
            "{name}"
        );
    }
    // The SDK's chain and lbguard's `auto` pick the same provider for the same environment.
    let all: Vars = [pod(&id), key(), federated(&id), oidc(&id)].concat();
    let chain = [
        ("all", all, "assume-with-oidc"),
        (
            "federated_key_pod",
            [pod(&id), key(), federated(&id)].concat(),
            "federated OIDC",
        ),
        ("key_pod", [pod(&id), key()].concat(), "an access key"),
        ("pod", pod(&id), "ECS metadata"),
    ];
    for (name, vars, picked) in chain {
        let s = store(&id.http, CredentialSource::Auto, &vars);
        s.current(&http, WAIT).await.unwrap();
        let said = s.describe();
        assert!(
            said.contains(picked),
            "{name}: lbguard picked {said}; the SDK {}",
            sdk["chain"]
        );
    }
    let want = json!({"all": "OidcStsAccessor", "federated_key_pod": "FederalAccessor",
        "key_pod": "AccessKey", "pod": "MetadataAccessor", "pod_no_agency": "PodIdentityAccessor"});
    assert_eq!(sdk["chain"], want);
    // An ECS without an agency: the metadata service refuses and pod identity serves, as in
    // the SDK's chain; lbguard keeps to it from then on.
    id.control("state", json!({"agency": false})).await;
    let s = store(&id.http, CredentialSource::Auto, &pod(&id));
    assert_eq!(s.current(&http, WAIT).await.unwrap().access_key_id, AK);
    assert!(
        s.describe().starts_with("Huawei Cloud CCE pod identity"),
        "{}",
        s.describe()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_balancer_call_signed_with_them_passes_the_sdk_signer() {
    let Some(id) = IdentityHuawei::start().await else {
        return;
    };
    let inv = "loadBalancers:\n  - {id: elb-1, provider: huawei, kind: elb-dedicated, addressType: internet, vpcId: vpc-1, createdBy: user, flavors: [l4, l7]}\n";
    let Some(mock) = Mock::start(inv).await else {
        return;
    };
    // The mock cloud takes only the STS's key pair, with its security token.
    mock.control("creds", json!({"ak": AK, "sk": SK, "token": TOKEN}))
        .await;
    let config = format!(
        "provider: huawei\ncluster:\n  id: c-own\n  vpcId: vpc-1\n  version: v1.31.0\ninventory:\n  cloud:\n    enabled: true\n    region: {REGION}\n    endpoint: {}\n    credentials:\n      source: oidc\n",
        mock.url
    );
    let cfg = lbguard::engine::parse_config(&config, "t").unwrap();
    let roots = format!("{}{}", mock.ca_pem, id.ca_pem);
    let cloud = lbguard::cloud::Cloud::new(
        Provider::Huawei,
        &cfg.inventory.cloud,
        None,
        store(&id.http, cfg.inventory.cloud.credentials.source, &oidc(&id)),
        roots.as_bytes(),
        Default::default(),
        1,
    )
    .unwrap();
    let view = cloud.view(&["elb-1".to_string()], &[], None).await;
    let lb = view
        .get(Provider::Huawei, "elb-1")
        .unwrap_or_else(|| panic!("{:?}", view.lookup(Provider::Huawei, "elb-1")));
    assert_eq!(lb.vpc_id.as_deref(), Some("vpc-1"));
    assert_eq!(id.calls("assume-with-oidc").await, 1);
    mock.assert_clean().await;
    id.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewed_before_expiry_while_calls_run_and_a_rotated_token_is_read_again() {
    let Some(id) = IdentityHuawei::start().await else {
        return;
    };
    // Renewal is due half-way through a life shorter than the SDK's 40-minute margin: at 2 s.
    id.control("state", json!({"life": 4})).await;
    let http = Http::new(id.ca_pem.as_bytes()).unwrap();
    let s = store(&id.http, CredentialSource::Oidc, &oidc(&id));
    s.current(&http, WAIT).await.unwrap();
    assert_eq!(id.calls("assume-with-oidc").await, 1);
    // The kubelet rotates the projected token; the stand-in now takes only the new one.
    id.write("oidc-token", "id-token-2\n");
    id.control("state", json!({"idToken": "id-token-2"})).await;
    let start = Instant::now();
    while id.calls("assume-with-oidc").await < 2 {
        assert!(start.elapsed() < Duration::from_secs(10), "never renewed");
        // Every call meanwhile is served at once with the credentials held.
        let t = Instant::now();
        assert_eq!(s.current(&http, WAIT).await.unwrap().access_key_id, AK);
        assert!(t.elapsed() < Duration::from_millis(100));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let calls = id.control("calls", json!({})).await;
    assert_eq!(
        calls["idTokens"],
        json!(["id-token-1", "id-token-2"]),
        "{calls}"
    );
    assert_eq!(calls["refused"], json!([]), "{calls}");
    id.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sts_error_shows_once_the_last_good_credentials_expire() {
    let Some(id) = IdentityHuawei::start().await else {
        return;
    };
    id.control("state", json!({"life": 3})).await;
    let http = Http::new(id.ca_pem.as_bytes()).unwrap();
    let s = store(&id.http, CredentialSource::Oidc, &oidc(&id));
    let issued = Instant::now();
    s.current(&http, WAIT).await.unwrap();
    id.control("fault", json!({"mode": "throttle"})).await;
    // Throttled renewals behind the calls; the held credentials serve until they expire.
    while issued.elapsed() < Duration::from_millis(2500) {
        assert_eq!(s.current(&http, WAIT).await.unwrap().access_key_id, AK);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        id.calls("assume-with-oidc").await >= 2,
        "renewals were tried"
    );
    tokio::time::sleep(
        Duration::from_secs(3).saturating_sub(issued.elapsed()) + Duration::from_millis(200),
    )
    .await;
    let t = Instant::now();
    let e = s.current(&http, WAIT).await.unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(e.label(), "credentials_error");
    let m = e.to_string();
    assert!(
        m.contains("assume-with-oidc") && m.contains("throttled") && m.contains("APIGW.0308"),
        "{m}"
    );
    assert!(!m.contains("id-token-1") && !m.contains(SK), "{m}");
    // A refused token is an auth error with the STS's cause.
    id.control("fault", json!({"mode": null})).await;
    id.write("oidc-token", "a-token-sts-refuses");
    // Within the retry time the last failure is answered without asking again.
    let again = s.current(&http, WAIT).await.unwrap_err();
    assert_eq!(again, e);
    s.forget_failure();
    let m = s.current(&http, WAIT).await.unwrap_err().to_string();
    assert!(m.contains("refused") && m.contains("STS.0102"), "{m}");
    assert!(
        !m.contains("a-token-sts-refuses") && m.contains("the id_token *** is invalid"),
        "{m}"
    );
    // Pod identity refusing the token: its code, never the token.
    id.write("pod-token", "a-pod-token-it-refuses");
    let m = store(&id.http, CredentialSource::PodIdentity, &pod(&id))
        .current(&http, WAIT)
        .await
        .unwrap_err()
        .to_string();
    assert!(m.contains("HTTP 401 CCE.01401"), "{m}");
    assert!(
        !m.contains("a-pod-token-it-refuses") && m.contains("the token *** is"),
        "{m}"
    );
    // Federated: an IdP IAM does not know is named in IAM's words.
    let mut vars = federated(&id);
    vars[0].1 = "no-such-idp".into();
    let m = store(&id.http, CredentialSource::Oidc, &vars)
        .current(&http, WAIT)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("federated OIDC")
            && m.contains("HTTP 404 Not Found: Could not find identity provider"),
        "{m}"
    );
    id.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_or_silent_metadata_service_fails_quickly() {
    let Some(id) = IdentityHuawei::start().await else {
        return;
    };
    let http = Http::new(id.ca_pem.as_bytes()).unwrap();
    let project: Vars = vec![("HUAWEICLOUD_SDK_PROJECT_ID", "p-1".into())];
    // Nothing listens.
    let closed = format!("http://127.0.0.1:{}", common::free_port());
    let s = store(&closed, CredentialSource::Metadata, &project);
    let t = Instant::now();
    let m = s.current(&http, WAIT).await.unwrap_err().to_string();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(
        m.contains("ECS metadata") && m.contains("cannot reach"),
        "{m}"
    );
    // In `auto`, pod identity serves when the metadata service cannot be reached.
    let s = store(&closed, CredentialSource::Auto, &pod(&id));
    assert_eq!(s.current(&http, WAIT).await.unwrap().access_key_id, AK);
    assert!(s.describe().contains("pod identity"), "{}", s.describe());
    // It accepts, and never answers: the caller's budget ends the wait.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let s = store(&url, CredentialSource::Metadata, &project);
    let t = Instant::now();
    let e = s.current(&http, Duration::from_secs(1)).await.unwrap_err();
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(e.label(), "credentials_error", "{e}");
    // An ECS without an agency: the metadata service's own words.
    id.control("state", json!({"agency": false})).await;
    let s = store(&id.http, CredentialSource::Metadata, &project);
    let m = s.current(&http, WAIT).await.unwrap_err().to_string();
    assert!(
        m.contains("Please configure Cloud Service Agency first"),
        "{m}"
    );
    // A metadata service without tokens is asked without one.
    id.control("state", json!({"agency": true, "metadataTokens": false}))
        .await;
    s.forget_failure();
    assert_eq!(s.current(&http, WAIT).await.unwrap().access_key_id, AK);
}
