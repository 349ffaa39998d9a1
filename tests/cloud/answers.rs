//! What the webhook makes of the cloud's answers: a private endpoint's CA, a v2-only ELB, pages that are not the API, a path prefix, incomplete listener lists, the rate limit, `check`'s timeout, a flood of ids, the metrics and the stale-facts gauge.

use super::*;

/// `inventory.cloud.caFile`: a private endpoint's CA, trusted besides the system's roots, by
/// the CLI and by `serve`; a file that cannot serve is refused with its path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_endpoints_ca_file_is_trusted_besides_the_system_roots() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &mock.ca_pem).unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let dump = |ca_file: Option<&std::path::Path>| {
        let config = dir.path().join("config.yaml");
        let line = ca_file
            .map(|f| format!("    caFile: {}\n", f.display()))
            .unwrap_or_default();
        std::fs::write(
            &config,
            format!(
                "provider: alibaba\ninventory:\n  cloud:\n    region: {REGION}\n    endpoint: {}\n{line}",
                mock.url
            ),
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
            .args(["inventory", "dump", "--config"])
            .arg(&config)
            .args(["--id", "lb-user-internet"])
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env("ALIBABA_CLOUD_ACCESS_KEY_ID", AK)
            .env("ALIBABA_CLOUD_ACCESS_KEY_SECRET", SK)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, out, err) = dump(Some(&ca));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("lb-user-internet"), "{out}");
    // The system's roots alone do not know the endpoint's CA.
    let (code, _, err) = dump(None);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("certificate"), "{err}");
    let (code, _, err) = dump(Some(&empty));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("inventory.cloud.caFile") && err.contains("holds no PEM certificate"),
        "{err}"
    );
    let (code, _, err) = dump(Some(&dir.path().join("missing.pem")));
    assert_eq!(code, Some(2));
    assert!(err.contains("inventory.cloud.caFile: cannot read"), "{err}");

    // serve: no roots from the test, the CA from the config.
    let creds = creds_dir(Provider::Alibaba, AK, SK);
    let config = cloud_config(
        Provider::Alibaba,
        &mock,
        creds.path(),
        &format!("    caFile: {}\n", ca.display()),
    );
    let s = TestServer::start_with(Start {
        config: Box::leak(config.into_boxed_str()),
        reload: Duration::from_millis(100),
        ..Default::default()
    })
    .await;
    let (allowed, text) = said(&s, Provider::Alibaba, "lb-typo").await;
    assert!(
        !allowed && text.contains("names no load balancer"),
        "{text}"
    );
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_elb_only_the_v2_api_knows_is_read_there() {
    let Some(mock) = Mock::start("loadBalancers: []").await else {
        return;
    };
    mock.control(
        "state",
        json!({"region": REGION, "projectId": "p-1", "loadBalancers": [
            {"id": "elb-v2", "provider": "huawei", "kind": "elb-shared", "addressType": "internet",
             "v2": true, "listeners": [{"port": 80, "protocol": "TCP"}]}]}),
    )
    .await;
    let creds = creds_dir(Provider::Huawei, AK, SK);
    let cfg = lbguard::engine::parse_config(
        &cloud_config(Provider::Huawei, &mock, creds.path(), ""),
        "t",
    )
    .unwrap();
    let cloud = lbguard::cloud::Cloud::new(
        Provider::Huawei,
        &cfg.inventory.cloud,
        None,
        lbguard::cloud::creds::CredStore::load(Provider::Huawei, Some(creds.path())).unwrap(),
        mock.ca_pem.as_bytes(),
        Default::default(),
        1,
    )
    .unwrap();
    let view = cloud
        .view(&["elb-v2".to_string(), "elb-none".to_string()], &[], None)
        .await;
    let lb = view
        .get(Provider::Huawei, "elb-v2")
        .expect("found through v2");
    assert_eq!(lb.kind, Some(lbguard::inventory::LbKind::ElbShared));
    assert_eq!(
        lb.address_type,
        Some(lbguard::inventory::AddressType::Internet)
    );
    assert_eq!(lb.vpc_id, None, "v2 does not say the VPC");
    assert_eq!(lb.listeners.len(), 1);
    assert!(matches!(
        view.lookup(Provider::Huawei, "elb-none"),
        lbguard::vocab::ctx::Lookup::NotFound { .. }
    ));
    // v3 first, then v2, for each id.
    assert_eq!(mock.calls("huawei/ShowLoadBalancer").await, 4);
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_404_is_an_error_and_never_a_missing_load_balancer() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    mock.fault(Some("html404"), 0.0).await;
    for provider in ALL {
        let extra = "    timeout: 1s\n    onError: deny\n";
        let (s, _creds) = serving(provider, &mock, extra).await;
        let (allowed, text) = said(&s, provider, "lb-behind-a-proxy").await;
        assert!(!allowed, "{provider}: {text}");
        assert!(
            text.contains("HTTP 404 with a text/html body")
                && text.contains("check inventory.cloud.endpoint")
                && text.contains("inventory.cloud.onError: deny")
                && !text.contains("names no load balancer"),
            "{provider}: {text}"
        );
        let metrics = s.metrics_text().await;
        assert!(
            metrics.contains(&format!(
                "lbguard_cloud_api_requests_total{{provider=\"{provider}\",operation="
            )) && metrics.contains("result=\"bad_endpoint\"} 1"),
            "{provider}: {metrics}"
        );
        // An id that cannot be one: denied by lb-exists without a call.
        let (allowed, text) = said(&s, provider, "lb-1/../x").await;
        assert!(
            !allowed
                && text.contains("[lb-exists]")
                && text.contains("not a valid load balancer id"),
            "{provider}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_with_a_path_prefix_is_called_under_it() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    mock.control("prefix", json!({"prefix": "/cloud-api"}))
        .await;
    let ids = [
        (Provider::Ctyun, "lb-user-intranet"),
        (Provider::Alibaba, "nlb-other-vpc"),
        (Provider::Huawei, "elb-1"),
        (Provider::Volcengine, "nlb-user"),
    ];
    for (provider, id) in ids {
        let creds = creds_dir(provider, AK, SK);
        let mut cfg =
            lbguard::engine::parse_config(&cloud_config(provider, &mock, creds.path(), ""), "t")
                .unwrap();
        cfg.inventory.cloud.endpoint = Some(format!("{}/cloud-api/", mock.url));
        let cloud = lbguard::cloud::Cloud::new(
            provider,
            &cfg.inventory.cloud,
            Some("c-own".into()),
            lbguard::cloud::creds::CredStore::load(provider, Some(creds.path())).unwrap(),
            mock.ca_pem.as_bytes(),
            Default::default(),
            1,
        )
        .unwrap();
        let view = cloud
            .view_all(&[id.to_string()], None, Duration::from_secs(30))
            .await;
        assert!(
            view.get(provider, id).is_some(),
            "{provider}: {:?}",
            view.lookup(provider, id)
        );
    }
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_that_cannot_all_be_read_answer_under_on_error() {
    let many: Vec<String> = (0..60)
        .map(|i| format!("{{port: {}, protocol: TCP, owner: external}}", 10000 + i))
        .collect();
    let inv = format!(
        "{INV}  - {{id: nlb-many, provider: alibaba, kind: nlb, addressType: intranet, vpcId: vpc-1, createdBy: user,\n     listeners: [{}]}}\n",
        many.join(", ")
    );
    let Some(mock) = Mock::start(&inv).await else {
        return;
    };
    let (s, _creds) = serving(
        Provider::Alibaba,
        &mock,
        "    timeout: 3s\n    onError: deny\n    qps: 1000\n",
    )
    .await;
    // Past the bound (the mock serves one listener a page): incomplete, never a silent cut.
    let (allowed, text) = said(&s, Provider::Alibaba, "nlb-many").await;
    assert!(
        !allowed && text.contains("could not read all listeners of nlb-many: more than 50 pages"),
        "{text}"
    );
    // A page token that never changes.
    mock.fault(Some("loop"), 0.0).await;
    let (allowed, text) = said(&s, Provider::Alibaba, "nlb-other-vpc").await;
    assert!(
        !allowed
            && text.contains("could not read all listeners of nlb-other-vpc")
            && text.contains("twice"),
        "{text}"
    );
    let metrics = s.metrics_text().await;
    assert!(metrics.contains("result=\"incomplete\""), "{metrics}");
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_without_a_rate_limit_token_is_answered_at_once() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let (s, _creds) = serving(
        Provider::Alibaba,
        &mock,
        "    qps: 1\n    timeout: 1500ms\n",
    )
    .await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (c, review) = (
            s.client(),
            create(Provider::Alibaba, "web", &format!("lb-new-{i}"), &[], 8080),
        );
        tasks.push(tokio::spawn(async move {
            c.post("/validate", &review).await.review()
        }));
    }
    let mut limited = 0;
    for t in tasks {
        let r = t.await.unwrap();
        let text = r.to_string();
        assert!(!text.contains("no answer within"), "{text}");
        limited += usize::from(text.contains("rate limit: lbguard's own request budget"));
    }
    assert!(limited >= 18, "{limited} of 20 were told \"rate limit\"");
    let metrics = s.metrics_text().await;
    let budget: u64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with("lbguard_cloud_api_requests_total") && l.contains("result=\"budget\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert!(budget >= 18, "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_honours_the_cloud_timeout_and_on_error() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &mock.ca_pem).unwrap();
    let manifest = dir.path().join("svc.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: shop\n  annotations:\n    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id: lb-intranet\nspec:\n  type: LoadBalancer\n  ports: [{port: 80}]\n",
    )
    .unwrap();
    mock.fault(Some("slow"), 6.0).await;
    for (on, code) in [("deny", 1), ("allow", 0)] {
        let config = dir.path().join(format!("{on}.yaml"));
        std::fs::write(
            &config,
            format!(
                "provider: alibaba\ncluster:\n  id: c-own\n  vpcId: vpc-1\ninventory:\n  cloud:\n    region: {REGION}\n    endpoint: {}\n    timeout: 1000ms\n    onError: {on}\n",
                mock.url
            ),
        )
        .unwrap();
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
            .args([
                "check",
                "--config",
                config.to_str().unwrap(),
                "--inventory-cloud",
            ])
            .arg(&manifest)
            .env("SSL_CERT_FILE", &ca)
            .env("ALIBABA_CLOUD_ACCESS_KEY_ID", AK)
            .env("ALIBABA_CLOUD_ACCESS_KEY_SECRET", SK)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{on}: {text}");
        if on == "deny" {
            assert!(text.contains("no answer within 1000 ms"), "{text}");
        }
        // The 6 s answer is not waited for.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{on}: {:?}",
            started.elapsed()
        );
    }
    mock.fault(None, 0.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_random_ids_leaves_a_bounded_cache_and_no_background_calls() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let (s, _creds) = serving(
        Provider::Alibaba,
        &mock,
        "    qps: 10000\n    refresh: 1s\n    cacheSize: 300\n",
    )
    .await;
    // 1,000 admissions, each naming an id nobody has, 8 at a time.
    let mut next = 0;
    while next < 1000 {
        let mut tasks = Vec::new();
        for i in next..next + 8 {
            let (c, review) = (
                s.client(),
                create(Provider::Alibaba, "web", &format!("lb-rand-{i}"), &[], 8080),
            );
            tasks.push(tokio::spawn(async move {
                c.post("/validate", &review).await.review()
            }));
        }
        for t in tasks {
            let r = t.await.unwrap();
            assert_eq!(r["allowed"], false, "{r}");
        }
        next += 8;
    }
    let gauge = |m: &str| {
        m.lines()
            .find(|l| l.starts_with("lbguard_cloud_cache_load_balancers "))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap()
    };
    let cached = gauge(&s.metrics_text().await);
    assert!(cached <= 300.0, "{cached} cached past the cap of 300");
    // "Not found" is never read in the background: three refresh rounds, no calls.
    mock.control("reset", json!({})).await;
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(
        mock.calls("alibaba/DescribeLoadBalancerAttribute").await,
        0,
        "the refresh re-read ids nobody has"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_the_outcome_and_a_vanished_listener_list_is_no_empty_one() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    // CTyun says "not found" inside an HTTP 200: counted as not_found, not ok.
    let (s, _creds) = serving(Provider::Ctyun, &mock, "").await;
    let (allowed, text) = said(&s, Provider::Ctyun, "lb-typo").await;
    assert!(!allowed && text.contains("[lb-exists]"), "{text}");
    let m = s.metrics_text().await;
    assert!(
        m.contains(r#"lbguard_cloud_api_requests_total{provider="ctyun",operation="ShowLoadBalancer",result="not_found"} 1"#),
        "{m}"
    );
    // Alibaba throttles with an HTTP 400: counted as throttled, not error.
    let (s, _creds) = serving(Provider::Alibaba, &mock, "    timeout: 1s\n").await;
    mock.fault(Some("throttle"), 0.0).await;
    let (allowed, text) = said(&s, Provider::Alibaba, "lb-intranet").await;
    assert!(allowed && text.contains("throttled"), "{text}");
    let m = s.metrics_text().await;
    assert!(
        m.contains(r#"lbguard_cloud_api_requests_total{provider="alibaba",operation="DescribeLoadBalancerAttribute",result="throttled"} 1"#),
        "{m}"
    );
    // Huawei's listener list answers "not found" for an ELB just read: no answer, not an
    // ELB without listeners.
    mock.fault(Some("listeners404"), 0.0).await;
    let (s, _creds) = serving(Provider::Huawei, &mock, "    onError: deny\n").await;
    let (allowed, text) = said(&s, Provider::Huawei, "elb-1").await;
    assert!(
        !allowed && text.contains("could not read all listeners of elb-1"),
        "{text}"
    );
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stale_facts_gauge_moves_while_a_refresh_round_hangs() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let (s, _creds) = serving(Provider::Alibaba, &mock, "    refresh: 1s\n").await;
    let (allowed, text) = said(&s, Provider::Alibaba, "lb-intranet").await;
    assert!(!allowed && text.contains("[address-type-match]"), "{text}");
    // The cloud stops answering: the next round hangs on its first call.
    mock.fault(Some("slow"), 30.0).await;
    // The gauge is set every 5 s: within 15 s it says 4 s or more, while the round (30 s a
    // try) still hangs.
    let started = Instant::now();
    let mut age = 0.0;
    while started.elapsed() < Duration::from_secs(15) && age < 4.0 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let m = s.metrics_text().await;
        age = m
            .lines()
            .find(|l| l.starts_with("lbguard_cloud_oldest_fact_age_seconds "))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap();
    }
    assert!(age >= 4.0, "the gauge stood still during the round: {age}");
}
