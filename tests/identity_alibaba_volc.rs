//! Alibaba Cloud's and Volcengine's workload credentials against stand-ins of their STS and
//! metadata services (tests/cloud/identity_alibaba_volc.py). Each stand-in is first shown to
//! speak the real protocol: the cloud's own credential provider (alibabacloud-credentials,
//! volcengine-python-sdk) gets credentials from it. lbguard then gets the same ones, and a
//! load balancer call signed with them passes the mock cloud's SDK signer check
//! (tests/cloud/mock.py, which also wants the security token).

mod common;
#[path = "common/identity_stand_in.rs"]
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_and_lbguard_get_the_same_credentials_and_the_cloud_accepts_calls_signed_with_them()
 {
    let Some((stand_in, mock, http, dir)) = both().await else {
        return;
    };
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let file = token_file.display().to_string();
    let sts_host = stand_in.sts_host.clone();
    let meta = stand_in.metadata.clone();
    // (name, provider, the SDK's provider, its environment, lbguard's credentials config,
    // lbguard's extra environment, the load balancer)
    let cases = [
        (
            "alibaba rrsa",
            Provider::Alibaba,
            "alibaba-chain",
            vars(&[
                ("ALIBABA_CLOUD_ROLE_ARN", ROLE_ARN),
                ("ALIBABA_CLOUD_OIDC_PROVIDER_ARN", PROVIDER_ARN),
                ("ALIBABA_CLOUD_OIDC_TOKEN_FILE", &file),
                ("ALIBABA_CLOUD_ROLE_SESSION_NAME", "lbguard-test"),
                ("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true"),
            ]),
            "{}".to_string(),
            vars(&[("ALIBABA_CLOUD_STS_ENDPOINT", &sts_host)]),
            "lb-intranet",
        ),
        (
            "alibaba ecs ram role",
            Provider::Alibaba,
            "alibaba-ecs",
            vec![],
            format!("{{source: metadata, metadataEndpoint: \"{meta}\"}}"),
            vec![],
            "lb-intranet",
        ),
        (
            "volcengine oidc",
            Provider::Volcengine,
            "volcengine-chain",
            vars(&[
                ("VOLCENGINE_OIDC_ROLE_TRN", ROLE_TRN),
                ("VOLCENGINE_OIDC_TOKEN_FILE", &file),
                ("VOLCENGINE_OIDC_ROLE_SESSION_NAME", "lbguard-test"),
                ("VOLCENGINE_ECS_METADATA_DISABLED", "true"),
            ]),
            format!("{{source: oidc, stsEndpoint: \"{}\"}}", stand_in.sts),
            vec![],
            "clb-user",
        ),
        (
            "volcengine ecs role",
            Provider::Volcengine,
            "volcengine-ecs",
            vec![],
            format!("{{metadataEndpoint: \"{meta}\"}}"),
            vars(&[("VOLCENGINE_ECS_METADATA", "EcsRole")]),
            "clb-user",
        ),
    ];
    for (name, provider, sdk_case, sdk_env, credentials, extra_env, lb) in cases {
        stand_in.control("reset", json!({})).await;
        stand_in
            .control(
                "config",
                json!({"token": TOKEN, "imdsv2": true, "ak": format!("STS.{name}"),
                       "sk": format!("secret of {name}"), "sessionToken": format!("token of {name}")}),
            )
            .await;
        let from_sdk = stand_in.sdk(sdk_case, &sdk_env).await;
        let sdk_exchange = stand_in.last().await;

        let env: Vec<_> = sdk_env.iter().chain(extra_env.iter()).cloned().collect();
        let (creds, cloud_cfg) = store(provider, &config(provider, &mock.url, &credentials), &env);
        let got = creds.current(&http, Duration::from_secs(5)).await.unwrap();
        let ours = triple(&got);
        assert_eq!(
            ours,
            json!({"ak": from_sdk["ak"], "sk": from_sdk["sk"], "token": from_sdk["token"]}),
            "{name}"
        );
        // The same exchange as the SDK's: token, role, session name and duration.
        let exchange = stand_in.last().await;
        let key = if provider == Provider::Alibaba {
            "alibaba"
        } else {
            "volcengine"
        };
        if sdk_case.ends_with("chain") {
            for field in [
                "token",
                "roleArn",
                "providerArn",
                "roleTrn",
                "sessionName",
                "durationSeconds",
                "method",
            ] {
                assert_eq!(
                    exchange[key][field], sdk_exchange[key][field],
                    "{name}: {field}"
                );
            }
            assert_eq!(exchange[key]["token"], TOKEN, "{name}");
        } else {
            // One IMDSv2 token for lbguard's exchange (the stand-in refuses calls without it).
            let tokens = |v: &Value| {
                v["calls"][format!("{key}/imds-token")]
                    .as_u64()
                    .unwrap_or(0)
            };
            assert_eq!(
                tokens(&exchange) - tokens(&sdk_exchange),
                1,
                "{name}: {exchange}"
            );
        }
        // A load balancer call signed with them passes the cloud's signer and token check.
        mock.control(
            "creds",
            json!({"ak": got.access_key_id, "sk": got.access_key_secret, "token": got.security_token}),
        )
        .await;
        let cloud = cloud(provider, &cloud_cfg, Arc::clone(&creds), &stand_in, &mock);
        let fact = cloud
            .get(lb, Instant::now() + Duration::from_secs(10), true)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            matches!(*fact, lbguard::cloud::Fact::Found(_)),
            "{name}: {fact:?}"
        );
        mock.assert_clean().await;
        // Nothing secret in what is shown of the store.
        let shown = format!("{creds:?} {}", creds.describe());
        for secret in [TOKEN, got.access_key_secret.as_str(), "token of"] {
            assert!(!shown.contains(secret), "{name}: {shown}");
        }
    }
    // A call with the right key but no security token is refused: the check above is real.
    mock.control(
        "creds",
        json!({"ak": "STS.volcengine ecs role", "sk": "secret of volcengine ecs role", "token": "another"}),
    )
    .await;
    let (creds, cloud_cfg) = store(
        Provider::Volcengine,
        &config(
            Provider::Volcengine,
            &mock.url,
            &format!("{{source: metadata, metadataEndpoint: \"{meta}\"}}"),
        ),
        &vars(&[("VOLCENGINE_ECS_METADATA", "EcsRole")]),
    );
    let cloud = cloud(Provider::Volcengine, &cloud_cfg, creds, &stand_in, &mock);
    let e = cloud
        .get("clb-user", Instant::now() + Duration::from_secs(10), true)
        .await
        .unwrap_err();
    assert_eq!(e.label(), "auth_error", "{e}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_renewed_before_expiry_with_the_rotated_token_and_the_last_good_serve_until_they_expire()
 {
    let Some(stand_in) = StandIn::start().await else {
        return;
    };
    let http = Http::new(stand_in.ca_pem.as_bytes()).unwrap();
    let logs = capture_logs();
    for provider in [Provider::Alibaba, Provider::Volcengine] {
        let key = provider.as_str();
        stand_in.control("reset", json!({})).await;
        stand_in
            .control("config", json!({"rotate": true, "lifetime": 4}))
            .await;
        let file = stand_in.dir().join(format!("{key}-token"));
        std::fs::write(&file, "token-A").unwrap();
        let env = sts_env(provider, &stand_in, &file.display().to_string());
        let (creds, _) = store(provider, &config(provider, "https://x", "{}"), &env);
        let wait = Duration::from_secs(3);
        let first = creds.current(&http, wait).await.unwrap();
        assert_eq!(first.access_key_id, "STS.ak-1", "{key}");
        // The kubelet rotates the token file; the renewal reads it again.
        std::fs::write(&file, "token-B").unwrap();
        // Calls run on; each is served at once, and the renewal happens behind them
        // before the first credentials expire.
        let started = Instant::now();
        let renewed = loop {
            let t = Instant::now();
            let c = creds.current(&http, wait).await.unwrap();
            assert!(
                t.elapsed() < Duration::from_millis(500),
                "{key}: a call waited"
            );
            if c.access_key_id != "STS.ak-1" {
                break c;
            }
            assert!(
                started.elapsed() < Duration::from_secs(4),
                "{key}: not renewed before expiry"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(renewed.access_key_id, "STS.ak-2", "{key}");
        let last = stand_in.last().await;
        assert_eq!(last[key]["token"], "token-B", "{key}: {last}");
        // STS fails from now on: the last good credentials serve until they expire, then
        // the cause shows, at once.
        stand_in.control("config", json!({"fault": "server"})).await;
        let renewed_at = Instant::now();
        let failed = loop {
            let t = Instant::now();
            match creds.current(&http, wait).await {
                Ok(c) => assert_eq!(c.access_key_id, "STS.ak-2", "{key}"),
                Err(e) => break (e, t.elapsed()),
            }
            assert!(
                renewed_at.elapsed() < Duration::from_secs(8),
                "{key}: expired credentials still served"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let (e, took) = failed;
        assert!(
            renewed_at.elapsed() >= Duration::from_secs(2),
            "{key}: failed before expiry"
        );
        assert!(took < Duration::from_secs(2), "{key}: {took:?}");
        assert_eq!(e.label(), "credentials_error", "{key}: {e}");
        let m = e.to_string();
        assert!(
            m.contains("AssumeRoleWithOIDC") && m.contains("InternalError"),
            "{key}: {m}"
        );
    }
    // The log says what was renewed and what failed, and nothing secret.
    let logged = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("cloud credentials renewed")
            && logged.contains("cannot renew the cloud credentials"),
        "{logged}"
    );
    for secret in [
        "sts-secret",
        "sts-session-token",
        "token-A",
        "token-B",
        "STS.ak",
    ] {
        assert!(!logged.contains(secret), "{secret} logged: {logged}");
    }
}

/// Everything logged from now on, in this test binary.
fn capture_logs() -> Arc<std::sync::Mutex<Vec<u8>>> {
    #[derive(Clone)]
    struct Sink(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Sink(Arc::clone(&buf));
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .init();
    buf
}

/// A failure: its name, the provider, the stand-in's config, lbguard's credentials config, the
/// environment, and what the error says.
type Case = (
    String,
    Provider,
    Value,
    String,
    Vec<(&'static str, String)>,
    &'static str,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_sts_or_metadata_service_is_a_credentials_error_with_its_cause_never_a_hang() {
    let Some(stand_in) = StandIn::start().await else {
        return;
    };
    let http = Http::new(stand_in.ca_pem.as_bytes()).unwrap();
    let file = stand_in.dir().join("token");
    std::fs::write(&file, TOKEN).unwrap();
    let path = file.display().to_string();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let meta = stand_in.metadata.clone();
    let mut cases: Vec<Case> = vec![];
    for provider in [Provider::Alibaba, Provider::Volcengine] {
        let env = sts_env(provider, &stand_in, &path);
        let p = provider.as_str();
        for (fault, says) in [
            ("throttle", "throttled"),
            ("auth", "refused"),
            ("html", "text/html"),
        ] {
            cases.push((
                format!("{p} sts {fault}"),
                provider,
                json!({"fault": fault}),
                "{}".into(),
                env.clone(),
                says,
            ));
        }
        cases.push((
            format!("{p} sts slow"),
            provider,
            json!({"fault": "slow", "delay": 5}),
            "{}".into(),
            env.clone(),
            "no answer within",
        ));
        let mut gone = env.clone();
        for v in gone.iter_mut().filter(|(k, _)| k.ends_with("TOKEN_FILE")) {
            v.1 = "/nonexistent/token".into();
        }
        cases.push((
            format!("{p} token file missing"),
            provider,
            json!({}),
            "{}".into(),
            gone,
            "cannot read the token file /nonexistent/token",
        ));
        cases.push((
            format!("{p} metadata unreachable"),
            provider,
            json!({}),
            format!("{{source: metadata, metadataEndpoint: \"http://127.0.0.1:{closed}\"}}"),
            vec![],
            "onnect",
        ));
        cases.push((
            format!("{p} metadata slow"),
            provider,
            json!({"metadataFault": "slow", "delay": 5}),
            format!("{{source: metadata, metadataEndpoint: \"{meta}\"}}"),
            vec![],
            "no answer within",
        ));
        cases.push((
            format!("{p} metadata error"),
            provider,
            json!({"metadataFault": "server"}),
            format!("{{source: metadata, metadataEndpoint: \"{meta}\"}}"),
            vec![],
            "HTTP 500",
        ));
    }
    for (name, provider, fault, credentials, env, says) in cases {
        stand_in.control("reset", json!({})).await;
        stand_in.control("config", fault).await;
        let (creds, _) = store(provider, &config(provider, "https://x", &credentials), &env);
        let t = Instant::now();
        let e = creds
            .current(&http, Duration::from_millis(1500))
            .await
            .unwrap_err();
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "{name}: {:?}",
            t.elapsed()
        );
        assert!(matches!(e, CloudError::Credentials(_)), "{name}: {e:?}");
        let m = e.to_string();
        assert!(m.contains(says), "{name}: {m}");
        assert!(!m.contains(TOKEN), "{name}: the token shows: {m}");
    }
}

/// The stand-in as the e2e suite uses it: any ServiceAccount token (a JWT) passes, anything
/// else is STS's "invalid token"; the token and role it got are there to check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sts_stand_in_takes_any_service_account_token_and_says_what_it_got() {
    let Some(stand_in) = StandIn::start().await else {
        return;
    };
    let http = Http::new(stand_in.ca_pem.as_bytes()).unwrap();
    stand_in
        .control("config", json!({"token": "jwt", "roleArn": ROLE_ARN}))
        .await;
    let file = stand_in.dir().join("token");
    for (token, ok) in [(TOKEN, true), ("opaque-token", false), ("a.b", false)] {
        std::fs::write(&file, token).unwrap();
        let env = sts_env(Provider::Alibaba, &stand_in, &file.display().to_string());
        let (creds, _) = store(
            Provider::Alibaba,
            &config(Provider::Alibaba, "https://x", "{source: oidc}"),
            &env,
        );
        let got = creds.current(&http, Duration::from_secs(3)).await;
        assert_eq!(got.is_ok(), ok, "{token}: {got:?}");
        if let Err(e) = got {
            assert!(
                e.to_string()
                    .contains("AuthenticationFail.OIDCToken.Invalid"),
                "{e}"
            );
        }
        let last = stand_in.last().await;
        assert_eq!(last["alibaba"]["token"], token);
        assert_eq!(last["alibaba"]["roleArn"], ROLE_ARN);
        assert_eq!(last["alibaba"]["providerArn"], PROVIDER_ARN);
    }
}

/// Admissions keep going while the credentials are renewed under them: every look-up is
/// signed with credentials the cloud accepts, none waits for an exchange after the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_run_on_while_the_credentials_are_renewed() {
    let Some((stand_in, mock, http, dir)) = both().await else {
        return;
    };
    drop(http);
    let file = dir.path().join("token");
    std::fs::write(&file, TOKEN).unwrap();
    stand_in
        .control(
            "config",
            json!({"lifetime": 3, "sessionToken": "session-1"}),
        )
        .await;
    mock.control(
        "creds",
        json!({"ak": "STS.ak", "sk": "sts-secret", "token": "session-1"}),
    )
    .await;
    let env = sts_env(Provider::Volcengine, &stand_in, &file.display().to_string());
    let (creds, cloud_cfg) = store(
        Provider::Volcengine,
        &config(Provider::Volcengine, &mock.url, "{}"),
        &env,
    );
    let cloud = cloud(Provider::Volcengine, &cloud_cfg, creds, &stand_in, &mock);
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < Duration::from_secs(5) {
        n += 1;
        let t = Instant::now();
        let fact = cloud
            .get(
                &format!("clb-missing-{n}"),
                Instant::now() + Duration::from_secs(3),
                true,
            )
            .await
            .unwrap_or_else(|e| panic!("look-up {n}: {e}"));
        assert!(matches!(*fact, lbguard::cloud::Fact::NotFound), "{fact:?}");
        if n > 1 {
            assert!(
                t.elapsed() < Duration::from_millis(800),
                "look-up {n} waited"
            );
        }
        // Under inventory.cloud.qps (5): no look-up waits for a rate-limit token.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let exchanges = stand_in.last().await["calls"]["volcengine/sts"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        exchanges >= 3,
        "renewed {exchanges} times in 5 s of 3 s credentials"
    );
    mock.assert_clean().await;
}
