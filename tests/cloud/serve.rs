//! The cloud source under `serve`: the same verdicts as the file, failures under `onError`, one call for many admissions, the refresh, rotated credentials, an unreachable cloud, and `check` and `inventory dump`.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clouds_facts_are_the_files_and_give_the_same_verdicts() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    for provider in ALL {
        let creds = creds_dir(provider, AK, SK);
        // The facts, as the library reads them.
        let cfg =
            lbguard::engine::parse_config(&cloud_config(provider, &mock, creds.path(), ""), "t")
                .unwrap();
        let cloud = lbguard::cloud::Cloud::new(
            provider,
            &cfg.inventory.cloud,
            cfg.cluster.id.clone(),
            lbguard::cloud::creds::CredStore::load(provider, Some(creds.path())).unwrap(),
            mock.ca_pem.as_bytes(),
            Default::default(),
            1,
        )
        .unwrap();
        let ids: Vec<String> = INV
            .lines()
            .filter(|l| l.contains(&format!("provider: {provider}")))
            .map(|l| {
                l.split("id: ")
                    .nth(1)
                    .unwrap()
                    .split(',')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert!(ids.len() >= 2, "{provider}: {ids:?}");
        // In bulk, as the CLI reads: waiting for tokens within the budget.
        let view = cloud.view_all(&ids, None, Duration::from_secs(30)).await;
        let mut normalized = Vec::new();
        for id in &ids {
            let want = sorted(expressible(file.get(provider, id).unwrap()));
            let got = view
                .get(provider, id)
                .unwrap_or_else(|| panic!("{provider} {id}: {:?}", view.lookup(provider, id)));
            assert_eq!(sorted(got.clone()), want, "{provider} {id}");
            normalized.push(want);
        }
        // The same verdicts through two servers: one with the file, one with the cloud.
        let path = dir.path().join(format!("{provider}.yaml"));
        std::fs::write(
            &path,
            serde_json::to_string(&json!({"loadBalancers": normalized})).unwrap(),
        )
        .unwrap();
        let with_file = TestServer::start(Box::leak(
            format!(
                "provider: {provider}\ncluster:\n  id: c-own\n  vpcId: vpc-1\n  version: v1.31.0\ninventory:\n  path: {}\n",
                path.display()
            )
            .into_boxed_str(),
        ))
        .await;
        let with_cloud = server(
            cloud_config(provider, &mock, creds.path(), "    qps: 100\n"),
            &mock,
        )
        .await;
        let mut cases = Vec::new();
        for id in &ids {
            for port in [80, 443, 8443, 30000, 8080] {
                cases.push(create(provider, "web", id, &[], port));
            }
            let at = if provider == Provider::Ctyun {
                "internet"
            } else {
                "intranet"
            };
            cases.push(create(provider, "api", id, &[("address-type", at)], 8080));
            if provider == Provider::Huawei {
                cases.push(create(
                    provider,
                    "api",
                    id,
                    &[("protocol-port", "http:8080")],
                    8080,
                ));
            }
            if provider == Provider::Alibaba {
                // A CLB's live charge type (InstanceChargeType) and spec (LoadBalancerSpec)
                // decide these.
                for charge in [
                    ("instance-charge-type", "PayBySpec"),
                    ("spec", "slb.s9.small"),
                    ("spec", "slb.s3.xlarge"),
                ] {
                    cases.push(create(provider, "bill", id, &[charge], 8080));
                }
                let row = [
                    ("instance-charge-type", "PayBySpec"),
                    ("spec", "slb.s3.xlarge"),
                ];
                cases.push(create(provider, "bill", id, &row, 8080));
            }
        }
        let mut denied = 0;
        for case in &cases {
            let a = outcome(&with_file.client().post("/validate", case).await.review());
            let b = outcome(&with_cloud.client().post("/validate", case).await.review());
            assert_eq!(a, b, "{provider}: {}", case["request"]["object"]);
            denied += usize::from(!a.0);
        }
        assert!(denied > 0, "{provider}: some of the cases must be denied");
        if provider == Provider::Alibaba {
            // lb-intranet is pay-by-LCU, lb-user-internet pay-by-spec (the file's chargeType).
            for (id, charge, call) in [
                (
                    "lb-intranet",
                    ("instance-charge-type", "PayBySpec"),
                    "ModifyLoadBalancerInstanceChargeType",
                ),
                (
                    "lb-user-internet",
                    ("spec", "slb.s9.small"),
                    "ModifyLoadBalancerInstanceSpec",
                ),
            ] {
                let case = create(provider, "bill", id, &[charge], 8080);
                let r = with_cloud.client().post("/validate", &case).await.review();
                let (allowed, message, _) = outcome(&r);
                assert!(
                    !allowed && message.contains("[annotation-format]") && message.contains(call),
                    "{id}: {message}"
                );
            }
            // Its live spec (slb.s3.xlarge, beyond the API's list) restated is not sent.
            for row in [
                &[("spec", "slb.s3.xlarge")][..],
                &[
                    ("instance-charge-type", "PayBySpec"),
                    ("spec", "slb.s3.xlarge"),
                ],
            ] {
                let case = create(provider, "bill", "lb-user-internet", row, 8080);
                let r = with_cloud.client().post("/validate", &case).await.review();
                let (_, message, warnings) = outcome(&r);
                assert!(
                    !message.contains("[annotation-format]")
                        && !warnings.iter().any(|w| w.contains("[annotation-format]")),
                    "{row:?}: {message} {warnings:?}"
                );
            }
        }
        // A typo: the file cannot tell, the cloud says it is not there.
        let typo = create(provider, "web", "lb-typo", &[], 8080);
        let r = with_cloud.client().post("/validate", &typo).await.review();
        assert_eq!(r["allowed"], false, "{provider}: {r}");
        let m = r["status"]["message"].as_str().unwrap();
        assert!(
            m.contains("[lb-exists]") && m.contains("lb-typo") && m.contains(REGION),
            "{m}"
        );
    }
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_follow_on_error_and_name_the_load_balancer_and_the_cause() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let faults = [
        ("throttle", "throttled"),
        ("server", "the API failed"),
        ("auth", "refused lbguard's credentials"),
        ("slow", "no answer within"),
    ];
    for provider in ALL {
        let creds = creds_dir(provider, AK, SK);
        // Long enough that a loaded CI host (the mock checks each signature with the SDK)
        // answers the quick faults within it; the slow fault answers after twice as long.
        let extra = "    timeout: 2s\n";
        let mut servers = Vec::new();
        for on in ["warn", "deny", "allow"] {
            let cfg = cloud_config(
                provider,
                &mock,
                creds.path(),
                &format!("{extra}    onError: {on}\n"),
            );
            servers.push((on, server(cfg, &mock).await));
        }
        for (n, (fault, cause)) in faults.iter().enumerate() {
            mock.fault(Some(fault), 4.0).await;
            for (on, s) in &servers {
                // A fresh id each time: nothing cached.
                let id = format!("lb-{fault}-{on}-{n}");
                let (allowed, warnings, message) =
                    warned(s, &create(provider, "web", &id, &[], 8080)).await;
                let said: Vec<&String> = warnings
                    .iter()
                    .chain(std::iter::once(&message))
                    .filter(|w| w.contains(&id) && w.contains("could not read load balancer"))
                    .collect();
                match *on {
                    "warn" => {
                        assert!(allowed, "{provider} {fault} {on}: {message}");
                        assert_eq!(said.len(), 1, "{provider} {fault}: {warnings:?}");
                        assert!(said[0].contains(cause), "{provider} {fault}: {}", said[0]);
                        assert!(
                            said[0].contains("inventory.cloud.onError: warn"),
                            "{}",
                            said[0]
                        );
                    }
                    "deny" => {
                        assert!(!allowed, "{provider} {fault} {on}");
                        assert!(message.contains(cause), "{provider} {fault}: {message}");
                    }
                    _ => {
                        assert!(allowed, "{provider} {fault} {on}: {message}");
                        assert!(said.is_empty(), "{provider} {fault}: {warnings:?}");
                    }
                }
                for w in warnings.iter().chain(std::iter::once(&message)) {
                    assert!(!w.contains(SK), "a secret in a message: {w}");
                }
            }
        }
        mock.fault(None, 0.0).await;
    }
    // The slow call went on after the admission gave up: its answer is cached.
    let (s, _creds) = serving(Provider::Alibaba, &mock, "    timeout: 1s\n").await;
    mock.fault(Some("slow"), 2.0).await;
    let review = create(Provider::Alibaba, "web", "lb-intranet", &[], 8080);
    let (allowed, warnings, _) = warned(&s, &review).await;
    assert!(
        allowed && warnings.iter().any(|w| w.contains("no answer within")),
        "{warnings:?}"
    );
    mock.fault(None, 0.0).await;
    // The answer lands about 2 s after the call began (later on a loaded host; the call may
    // take four timeouts): wait for it to be cached.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        let m = s.metrics_text().await;
        if m.lines()
            .any(|l| l.starts_with("lbguard_cloud_cache_load_balancers ") && !l.ends_with(" 0"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let before = mock.calls("alibaba/DescribeLoadBalancerAttribute").await;
    let (allowed, _, message) = warned(&s, &review).await;
    assert!(
        !allowed && message.contains("[address-type-match]"),
        "{message}"
    );
    assert_eq!(
        mock.calls("alibaba/DescribeLoadBalancerAttribute").await,
        before,
        "answered from the cache"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_admissions_for_one_new_load_balancer_make_one_call() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let (s, _creds) = serving(Provider::Alibaba, &mock, "").await;
    let client = s.client();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let (c, review) = (
            client.clone(),
            create(
                Provider::Alibaba,
                &format!("web-{i}"),
                "lb-intranet",
                &[],
                8080,
            ),
        );
        tasks.push(tokio::spawn(async move {
            c.post("/validate", &review).await.review()
        }));
    }
    for t in tasks {
        let r = t.await.unwrap();
        assert_eq!(r["allowed"], false, "{r}");
        assert!(
            r["status"]["message"]
                .as_str()
                .unwrap()
                .contains("[address-type-match]")
        );
    }
    assert_eq!(mock.calls("alibaba/DescribeLoadBalancerAttribute").await, 1);
    let metrics = s.metrics_text().await;
    assert!(
        metrics.contains(r#"lbguard_cloud_api_requests_total{provider="alibaba",operation="DescribeLoadBalancerAttribute",result="ok"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains("lbguard_cloud_cache_load_balancers 1"),
        "{metrics}"
    );
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refresh_sees_a_listener_added_at_the_cloud() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let (s, _creds) = serving(Provider::Ctyun, &mock, "    refresh: 1s\n").await;
    let first = create(Provider::Ctyun, "web", "lb-user-intranet", &[], 9090);
    let (allowed, _, m) = warned(&s, &first).await;
    assert!(allowed, "{m}");
    mock.control(
        "listener",
        json!({"id": "lb-user-intranet", "port": 9090, "protocol": "TCP"}),
    )
    .await;
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (allowed, _, m) = warned(&s, &first).await;
        if !allowed {
            assert!(
                m.contains("[listener-port-unique]") && m.contains("port 9090/TCP"),
                "{m}"
            );
            break;
        }
        assert!(
            Instant::now() < until,
            "the refresh did not pick up the listener"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(mock.calls("ctyun/list-listener").await >= 2);
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_credentials_are_picked_up_while_serving() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let (s, creds) = serving(Provider::Huawei, &mock, "").await;
    let review = |id: &str| create(Provider::Huawei, "web", id, &[], 8080);
    let (allowed, _, m) = warned(&s, &review("elb-ccm")).await;
    assert!(!allowed && m.contains("[reuse-user-created-only]"), "{m}");
    // The cloud now takes only the new key; lbguard still has the old one.
    mock.control("creds", json!({"ak": "AKIDnew", "sk": "new-secret"}))
        .await;
    let (allowed, warnings, _) = warned(&s, &review("elb-other-vpc")).await;
    assert!(allowed, "onError warn admits");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("refused lbguard's credentials")),
        "{warnings:?}"
    );
    // The Secret is updated: the files change, lbguard re-reads them.
    std::fs::write(creds.path().join("accessKeySecret"), "new-secret").unwrap();
    std::fs::write(creds.path().join("accessKeyId"), "AKIDnew").unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    for i in 0.. {
        // A fresh id each time (nothing cached): the cloud answers once the key is right.
        let (allowed, warnings, m) = warned(&s, &review(&format!("elb-nowhere-{i}"))).await;
        if !allowed {
            assert!(m.contains("[lb-exists]"), "{m}");
            break;
        }
        assert!(
            warnings.iter().any(|w| w.contains("refused")),
            "{warnings:?}"
        );
        assert!(
            Instant::now() < until,
            "the new credentials were not picked up"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let metrics = s.metrics_text().await;
    assert!(
        metrics.contains("lbguard_cloud_credential_reloads_total 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn an_unreachable_cloud_does_not_stop_the_webhook() {
    let creds = creds_dir(Provider::Volcengine, AK, SK);
    let port = common::free_port();
    let config = format!(
        "provider: volcengine\ninventory:\n  cloud:\n    enabled: true\n    region: {REGION}\n    endpoint: https://127.0.0.1:{port}\n    credentialsDir: {}\n    timeout: 500ms\n",
        creds.path().display()
    );
    let s = TestServer::start(Box::leak(config.into_boxed_str())).await;
    assert_eq!(s.client().get("/readyz").await.status, 200);
    let (allowed, warnings, _) =
        warned(&s, &create(Provider::Volcengine, "web", "clb-1", &[], 80)).await;
    assert!(allowed);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("clb-1") && w.contains("cannot reach the API")),
        "{warnings:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_and_inventory_dump_ask_the_cloud() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &mock.ca_pem).unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "provider: alibaba\ncluster:\n  id: c-own\n  vpcId: vpc-1\ninventory:\n  cloud:\n    region: {REGION}\n    endpoint: {}\n",
            mock.url
        ),
    )
    .unwrap();
    let manifest = dir.path().join("svc.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: shop\n  annotations:\n    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id: lb-typo\nspec:\n  type: LoadBalancer\n  ports: [{port: 80}]\n",
    )
    .unwrap();
    let lbguard = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_lbguard"))
            .args(args)
            .env("SSL_CERT_FILE", &ca)
            .env("ALIBABA_CLOUD_ACCESS_KEY_ID", AK)
            .env("ALIBABA_CLOUD_ACCESS_KEY_SECRET", SK)
            .output()
            .unwrap()
    };
    let config = config.to_str().unwrap();
    let out = lbguard(&[
        "check",
        "--config",
        config,
        "--inventory-cloud",
        "--output",
        "json",
        manifest.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = report.to_string();
    assert!(
        text.contains("lb-exists") && text.contains("lb-typo"),
        "{text}"
    );
    // Without --inventory-cloud the same manifest only gets the unknown-inventory warning.
    let out = lbguard(&["check", "--config", config, manifest.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let out = lbguard(&[
        "inventory",
        "dump",
        "--config",
        config,
        "--id",
        "lb-user-internet",
        "--id",
        "nlb-other-vpc",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dumped = Snapshot::parse(&String::from_utf8_lossy(&out.stdout), "dump").unwrap();
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    for id in ["lb-user-internet", "nlb-other-vpc"] {
        assert_eq!(
            sorted(dumped.get(Provider::Alibaba, id).unwrap().clone()),
            sorted(expressible(file.get(Provider::Alibaba, id).unwrap())),
        );
    }
    let out = lbguard(&["inventory", "dump", "--config", config, "--id", "lb-gone"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("lb-gone: no such load balancer in region region-1"),
        "{err}"
    );
    // No credentials: a clear error, no secret printed.
    let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["inventory", "dump", "--config", config, "--id", "x"])
        .env_remove("ALIBABA_CLOUD_ACCESS_KEY_ID")
        .env_remove("LBGUARD_CLOUD_ACCESS_KEY_ID")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("LBGUARD_CLOUD_ACCESS_KEY_ID"), "{err}");
    mock.assert_clean().await;
}
