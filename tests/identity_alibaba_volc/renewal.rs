//! Renewal before expiry, failing identity services, the STS stand-in's own checks, and look-ups while credentials are renewed.

use super::*;

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
            .get(&format!("clb-missing-{n}"), Duration::from_secs(3), true)
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
