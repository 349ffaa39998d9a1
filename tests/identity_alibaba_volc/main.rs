//! Alibaba Cloud's and Volcengine's workload credentials against stand-ins of their STS and
//! metadata services (tests/cloud/identity_alibaba_volc.py). Each stand-in is first shown to
//! speak the real protocol: the cloud's own credential provider (alibabacloud-credentials,
//! volcengine-python-sdk) gets credentials from it. lbguard then gets the same ones, and a
//! load balancer call signed with them passes the mock cloud's SDK signer check
//! (tests/cloud/mock.py, which also wants the security token).

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/identity_stand_in.rs"]
mod identity_stand_in;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::mock_cloud::{Mock, REGION};
use identity_stand_in::StandIn;
use lbguard::cloud::creds::{CredStore, Creds};
use lbguard::cloud::http::Http;
use lbguard::cloud::outcome::CloudError;
use lbguard::vocab::provider::Provider;
use serde_json::{Value, json};

const INV: &str = r#"
loadBalancers:
  - {id: lb-intranet, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: user}
  - {id: clb-user, provider: volcengine, kind: clb, addressType: intranet, vpcId: vpc-1,
     listeners: [{port: 80, protocol: TCP, owner: external}]}
"#;

const ROLE_ARN: &str = "acs:ram::1234:role/lbguard-reader";
const PROVIDER_ARN: &str = "acs:ram::1234:oidc-provider/ack-rrsa-c1";
const ROLE_TRN: &str = "trn:iam::2100:role/lbguard-reader";
/// A ServiceAccount token's shape (header.payload.signature).
const TOKEN: &str =
    "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6bGJndWFyZDpsYmd1YXJkIn0.c2ln";

fn vars(pairs: &[(&str, &str)]) -> Vec<(&'static str, String)> {
    pairs
        .iter()
        .map(|(k, v)| (&*String::leak(k.to_string()), v.to_string()))
        .collect()
}

fn store(
    provider: Provider,
    yaml: &str,
    env: &[(&str, String)],
) -> (Arc<CredStore>, lbguard::vocab::config::CloudConfig) {
    let cfg = lbguard::engine::parse_config(yaml, "t").unwrap();
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let creds = CredStore::configured(
        provider,
        None,
        &cfg.inventory.cloud.credentials,
        &|n: &str| env.get(n).cloned(),
    )
    .unwrap();
    (creds, cfg.inventory.cloud)
}

fn config(provider: Provider, endpoint: &str, credentials: &str) -> String {
    format!(
        "provider: {provider}\ncluster:\n  id: c-own\n  vpcId: vpc-1\n  version: v1.31.0\ninventory:\n  cloud:\n    enabled: true\n    region: {REGION}\n    endpoint: {endpoint}\n    credentials: {credentials}\n"
    )
}

fn triple(c: &Creds) -> Value {
    json!({"ak": c.access_key_id, "sk": c.access_key_secret, "token": c.security_token})
}

/// The cloud source reading the mock cloud with `creds`.
fn cloud(
    provider: Provider,
    cfg: &lbguard::vocab::config::CloudConfig,
    creds: Arc<CredStore>,
    stand_in: &StandIn,
    mock: &Mock,
) -> Arc<lbguard::cloud::Cloud> {
    let roots = format!("{}{}", stand_in.ca_pem, mock.ca_pem);
    lbguard::cloud::Cloud::new(
        provider,
        cfg,
        Some("c-own".into()),
        creds,
        roots.as_bytes(),
        Default::default(),
        1,
    )
    .unwrap()
}

/// The stand-ins and the mock cloud, or `None` when the SDKs are not installed.
async fn both() -> Option<(StandIn, Mock, Http, tempfile::TempDir)> {
    let stand_in = StandIn::start().await?;
    let mock = Mock::start(INV).await?;
    let roots = format!("{}{}", stand_in.ca_pem, mock.ca_pem);
    let http = Http::new(roots.as_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    Some((stand_in, mock, http, dir))
}

fn sts_env(provider: Provider, stand_in: &StandIn, file: &str) -> Vec<(&'static str, String)> {
    match provider {
        Provider::Alibaba => vars(&[
            ("ALIBABA_CLOUD_ROLE_ARN", ROLE_ARN),
            ("ALIBABA_CLOUD_OIDC_PROVIDER_ARN", PROVIDER_ARN),
            ("ALIBABA_CLOUD_OIDC_TOKEN_FILE", file),
            ("ALIBABA_CLOUD_STS_ENDPOINT", &stand_in.sts_host),
        ]),
        _ => vars(&[
            ("VOLCENGINE_OIDC_ROLE_TRN", ROLE_TRN),
            ("VOLCENGINE_OIDC_TOKEN_FILE", file),
            ("VOLCENGINE_OIDC_STS_ENDPOINT", &stand_in.sts_host),
        ]),
    }
}

mod exchange;
mod renewal;
