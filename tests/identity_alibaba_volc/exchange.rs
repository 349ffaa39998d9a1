//! The clouds' SDKs and lbguard get the same credentials from the stand-ins, and a call signed with them passes.

use super::*;

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
            .get(lb, Duration::from_secs(10), true)
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
        .get("clb-user", Duration::from_secs(10), true)
        .await
        .unwrap_err();
    assert_eq!(e.label(), "auth_error", "{e}");
}
