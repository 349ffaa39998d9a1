//! The cloud inventory against a local stand-in of each cloud's API (tests/cloud/mock.py):
//! it checks every request's signature with that cloud's official SDK signer and parses
//! every answer it serves with the SDK's response models.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::mock_cloud::{AK, Mock, REGION, SK};
use common::{Start, TestServer, fixture};
use lbguard::inventory::{LoadBalancer, Snapshot};
use lbguard::vocab::ctx::Inventory;
use lbguard::vocab::provider::Provider;
use serde_json::{Value, json};

/// The rule tests' inventory (src/rules/inventory_tests.rs), one file for both sources.
const INV: &str = r#"
loadBalancers:
  - {id: lb-user-internet, provider: ctyun, addressType: internet, vpcId: vpc-1, createdBy: user,
     listeners: [{port: 443, protocol: HTTPS, owner: external}, {port: 53, protocol: UDP, owner: shop/dns}]}
  - {id: lb-user-intranet, provider: ctyun, addressType: intranet, vpcId: vpc-1, createdBy: user}
  - {id: lb-other-vpc, provider: ctyun, addressType: intranet, vpcId: vpc-9, createdBy: user}
  - {id: lb-ccm, provider: ctyun, addressType: intranet, vpcId: vpc-1, createdBy: ccm}
  - {id: lb-user-internet, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user,
     listeners: [{port: 443, protocol: HTTPS, owner: external}, {port: 80, protocol: TCP, owner: shop/web}],
     attachedFrom: [{cluster: prod-b, namespace: shop, name: web}],
     resourceGroupId: rg-acfm2, masterZoneId: cn-hangzhou-h, slaveZoneId: cn-hangzhou-i, ipVersion: ipv4,
     networkType: vpc, address: 47.96.1.10}
  - {id: lb-intranet, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: user}
  - {id: lb-other-vpc, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-9, createdBy: user}
  - {id: nlb-other-vpc, provider: alibaba, kind: nlb, addressType: intranet, vpcId: vpc-9, createdBy: user,
     listeners: [{port: 8443, protocol: TCP, owner: shop/api}, {port: 9443, protocol: TCP, owner: external}],
     resourceGroupId: rg-acfm2, ipVersion: ipv4, address: nlb-other-vpc.cn-hangzhou.nlb.aliyuncs.com}
  - {id: lb-apiserver, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: apiserver}
  - {id: lb-ccm, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: ccm}
  - {id: elb-1, provider: huawei, kind: elb-dedicated, addressType: internet, vpcId: vpc-1, createdBy: user, flavors: [l4, l7],
     listeners: [{port: 8443, protocol: TCP, owner: external}]}
  - {id: elb-l4, provider: huawei, kind: elb-dedicated, addressType: intranet, vpcId: vpc-1, createdBy: user, flavors: [l4]}
  - {id: elb-other-vpc, provider: huawei, kind: elb-shared, addressType: intranet, vpcId: vpc-9, createdBy: user}
  - {id: elb-ccm, provider: huawei, kind: elb-dedicated, addressType: intranet, vpcId: vpc-1, createdBy: ccm, flavors: [l4, l7]}
  - {id: clb-user, provider: volcengine, kind: clb, addressType: intranet, vpcId: vpc-1,
     listeners: [{port: 80, protocol: TCP, owner: external}]}
  - {id: nlb-user, provider: volcengine, kind: nlb, addressType: internet, vpcId: vpc-1}
"#;

fn creds_dir(provider: Provider, ak: &str, sk: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("accessKeyId"), ak).unwrap();
    std::fs::write(dir.path().join("accessKeySecret"), sk).unwrap();
    if provider == Provider::Huawei {
        std::fs::write(dir.path().join("projectId"), "p-1").unwrap();
    }
    dir
}

fn cloud_config(provider: Provider, mock: &Mock, creds: &std::path::Path, extra: &str) -> String {
    format!(
        "provider: {provider}\ncluster:\n  id: c-own\n  vpcId: vpc-1\n  version: v1.31.0\ninventory:\n  cloud:\n    enabled: true\n    region: {REGION}\n    endpoint: {}\n    credentialsDir: {}\n{extra}",
        mock.url,
        creds.display()
    )
}

async fn server(config: String, mock: &Mock) -> TestServer {
    TestServer::start_with(Start {
        config: Box::leak(config.into_boxed_str()),
        cloud_roots: mock.ca_pem.clone().into_bytes(),
        reload: Duration::from_millis(100),
        ..Default::default()
    })
    .await
}

/// `serve` with `provider`'s cloud source on the mock, an access key in a directory of its
/// own (kept while the server runs) and `extra` config lines under `inventory.cloud`.
async fn serving(provider: Provider, mock: &Mock, extra: &str) -> (TestServer, tempfile::TempDir) {
    let creds = creds_dir(provider, AK, SK);
    let s = server(cloud_config(provider, mock, creds.path(), extra), mock).await;
    (s, creds)
}

/// A CREATE of `name` naming load balancer `id`, with more annotations and one port.
fn create(provider: Provider, name: &str, id: &str, extra: &[(&str, &str)], port: i64) -> Value {
    let cat = lbguard::providers::catalog(provider);
    let mut review = fixture("review-create.json");
    let mut anns = serde_json::Map::new();
    anns.insert(cat.key("id"), json!(id));
    if provider == Provider::Volcengine {
        anns.insert(cat.key("server-group-id"), json!(format!("rsp-1:{port}")));
        anns.insert(cat.key("weight"), json!("10"));
    }
    for (k, v) in extra {
        anns.insert(cat.key(k), json!(v));
    }
    let r = &mut review["request"];
    r["uid"] = json!(format!("uid-{name}-{id}"));
    r["name"] = json!(name);
    r["namespace"] = json!("shop");
    r["object"]["metadata"] = json!({"name": name, "namespace": "shop", "annotations": anns});
    r["object"]["spec"]["ports"] = json!([{"port": port, "protocol": "TCP", "targetPort": 8080}]);
    review
}

/// What the cloud can say of an inventory entry, in the mock's conventions: CTyun and
/// Volcengine publish no creator marks, and only Alibaba's listener names carry an owner.
fn expressible(lb: &LoadBalancer) -> LoadBalancer {
    let mut lb = lb.clone();
    match lb.provider {
        Provider::Ctyun | Provider::Volcengine => lb.created_by = None,
        _ => {}
    }
    if lb.provider != Provider::Alibaba {
        for l in &mut lb.listeners {
            l.owner = "external".into();
        }
    } else {
        for (i, a) in lb.attached_from.iter().enumerate() {
            lb.listeners.push(lbguard::inventory::Listener {
                port: 30000 + i as u16,
                protocol: "TCP".into(),
                owner: format!("{}/{} (cluster {})", a.namespace, a.name, a.cluster),
            });
        }
    }
    if lb.provider == Provider::Ctyun {
        lb.kind = Some(lbguard::inventory::LbKind::Elb);
    }
    if lb.kind == Some(lbguard::inventory::LbKind::ElbShared) {
        lb.flavors.clear();
    }
    lb
}

fn sorted(mut lb: LoadBalancer) -> LoadBalancer {
    lb.listeners.sort_by_key(|l| l.port);
    lb
}

/// What an answer says, for comparing two servers.
fn outcome(r: &Value) -> (bool, String, Vec<String>) {
    let mut warnings: Vec<String> = r["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| w.as_str().unwrap_or_default().to_string())
        .collect();
    warnings.sort();
    (
        r["allowed"].as_bool().unwrap(),
        r["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        warnings,
    )
}

const ALL: [Provider; 4] = [
    Provider::Ctyun,
    Provider::Alibaba,
    Provider::Huawei,
    Provider::Volcengine,
];

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
        }
        let mut denied = 0;
        for case in &cases {
            let a = outcome(&with_file.client().post("/validate", case).await.review());
            let b = outcome(&with_cloud.client().post("/validate", case).await.review());
            assert_eq!(a, b, "{provider}: {}", case["request"]["object"]);
            denied += usize::from(!a.0);
        }
        assert!(denied > 0, "{provider}: some of the cases must be denied");
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

async fn warned(s: &TestServer, review: &Value) -> (bool, Vec<String>, String) {
    let r = s.client().post("/validate", review).await.review();
    let w = r["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    (
        r["allowed"].as_bool().unwrap(),
        w,
        r["status"]["message"].as_str().unwrap_or_default().into(),
    )
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
        .view(&["elb-v2".to_string(), "elb-none".to_string()], None)
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

/// An answer of one Service naming `id` through `s`: (allowed, warnings and message joined).
async fn said(s: &TestServer, provider: Provider, id: &str) -> (bool, String) {
    let (allowed, warnings, message) = warned(s, &create(provider, "web", id, &[], 8080)).await;
    (allowed, format!("{message} | {}", warnings.join(" | ")))
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

/// Every call the mock cloud answered since its last reset.
async fn all_calls(mock: &Mock) -> u64 {
    let calls = mock.control("calls", json!({})).await;
    calls["byOperation"]
        .as_object()
        .map(|m| m.values().filter_map(Value::as_u64).sum())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_sharing_leases_make_the_calls_of_one() {
    use lbguard::cloud::shard::Membership;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    mock.control("bulk", json!({"provider": "alibaba", "count": 60}))
        .await;
    let creds = creds_dir(Provider::Alibaba, AK, SK);
    let cfg = lbguard::engine::parse_config(
        &cloud_config(
            Provider::Alibaba,
            &mock,
            creds.path(),
            "    qps: 10000\n    refresh: 60s\n",
        ),
        "t",
    )
    .unwrap();
    let (base, offset) = (Instant::now(), Arc::new(AtomicU64::new(0)));
    let o = Arc::clone(&offset);
    let clock: lbguard::cloud::Clock =
        Arc::new(move || base + Duration::from_secs(o.load(Ordering::SeqCst)));
    let replica = || {
        lbguard::cloud::Cloud::with_clock(
            Provider::Alibaba,
            &cfg.inventory.cloud,
            None,
            lbguard::cloud::creds::CredStore::load(Provider::Alibaba, Some(creds.path())).unwrap(),
            mock.ca_pem.as_bytes(),
            Default::default(),
            2,
            Arc::clone(&clock),
        )
        .unwrap()
    };
    let named: std::collections::HashSet<String> =
        (0..60).map(|i| format!("lb-bulk-{i}")).collect();

    // One replica alone refreshes every load balancer, ten a call (DescribeLoadBalancers
    // takes ten ids, its listener list ten load balancers).
    mock.control("reset", json!({})).await;
    replica().refresh_round(&named).await;
    let one = all_calls(&mock).await;
    assert_eq!(
        one, 12,
        "one replica made {one} calls for 60 load balancers"
    );
    assert_eq!(mock.calls("alibaba/DescribeLoadBalancers").await, 6);
    assert_eq!(mock.calls("alibaba/DescribeLoadBalancerListeners").await, 6);
    // Two calls for every batch of ten (or fewer).
    let batched = |n: usize| 2 * n.div_ceil(10) as u64;

    // Two replicas that see each other's Leases split them.
    mock.control("reset", json!({})).await;
    let leases = lbguard::claims::memory::MemoryLeases::new();
    let ma = Membership::new(leases.client(), "lbguard-system", "lbguard-a", "lbguard");
    let mb = Membership::new(leases.client(), "lbguard-system", "lbguard-b", "lbguard");
    ma.renew().await.unwrap();
    let live = mb.renew().await.unwrap();
    assert_eq!(live, vec!["lbguard-a", "lbguard-b"]);
    let (a, b) = (replica(), replica());
    a.shard().set(Some(("lbguard-a".into(), live.clone())));
    b.shard().set(Some(("lbguard-b".into(), live)));
    // The first round: each reads every load balancer once (the audit needs them all), its
    // own first.
    tokio::join!(a.refresh_round(&named), b.refresh_round(&named));
    assert_eq!(all_calls(&mock).await, 2 * one);
    assert_eq!((a.snapshot().len(), b.snapshot().len()), (60, 60));
    // The next rounds: each its own part, together one replica's calls.
    let at = |secs: u64| offset.store(secs, Ordering::SeqCst);
    at(30);
    let mine_b = named.iter().filter(|id| b.shard().owns(id)).count();
    assert!(
        (15..=45).contains(&mine_b),
        "an uneven split: b owns {mine_b} of 60"
    );
    let mut two = 0;
    let mut foreign = 0;
    for (replica, mine) in [(&a, 60 - mine_b), (&b, mine_b)] {
        mock.control("reset", json!({})).await;
        replica.refresh_round(&named).await;
        let c = mock.control("calls", json!({})).await;
        let asked = c["loadBalancersAsked"].as_u64().unwrap() as usize;
        assert!(asked >= mine, "{asked} asked, {mine} its own");
        assert_eq!(all_calls(&mock).await, batched(asked), "{c}");
        two += batched(asked);
        foreign += asked - mine;
    }
    // Besides its own, each reads a sixth of the others' (for the audit).
    assert!(foreign <= 20, "{foreign} of the others' read in one round");
    assert!(
        two <= one + 6,
        "two replicas, about one replica's calls: {two}"
    );
    // An admission's look-up is one call (DescribeLoadBalancerAttribute).
    let per_id = 1;

    // An admission on b for a load balancer a refreshes: cached while younger than a
    // refresh interval, then asked again (b's copy never grows older than that).
    let theirs = named.iter().find(|id| !b.shard().owns(id)).unwrap();
    let mine = named.iter().find(|id| b.shard().owns(id)).unwrap();
    let soon = || Instant::now() + Duration::from_secs(5);
    mock.control("reset", json!({})).await;
    for _ in 0..3 {
        assert!(matches!(
            *b.get(theirs, soon(), false).await.unwrap(),
            lbguard::cloud::Fact::Found(_)
        ));
    }
    assert_eq!(all_calls(&mock).await, 0, "30 s old: still good");
    at(100);
    b.get(theirs, soon(), false).await.unwrap();
    b.get(theirs, soon(), false).await.unwrap();
    assert_eq!(
        all_calls(&mock).await,
        per_id,
        "a copy 70 s old or more is asked again, once"
    );
    // Its own ones the refresh keeps: no call from an admission.
    b.get(mine, soon(), false).await.unwrap();
    assert_eq!(all_calls(&mock).await, per_id);

    // Over six rounds b also reads each of the others' load balancers once for its audit, a
    // sixth of them a round: no round carries them all.
    let theirs_n = 60 - mine_b as u64;
    let mut asked = Vec::new();
    for round in 0..6 {
        at(340 + 60 * round);
        mock.control("reset", json!({})).await;
        b.refresh_round(&named).await;
        let c = mock.control("calls", json!({})).await;
        asked.push(c["loadBalancersAsked"].as_u64().unwrap() - mine_b as u64);
    }
    assert_eq!(
        asked.iter().sum::<u64>(),
        theirs_n,
        "each of theirs once: {asked:?}"
    );
    assert!(
        asked.iter().all(|n| *n < theirs_n / 2),
        "spread over the rounds: {asked:?}"
    );
    mock.assert_clean().await;
}

/// A cloud source for `provider` driven by hand (no server, no refresh task).
fn library_cloud(
    provider: Provider,
    mock: &Mock,
    creds: &std::path::Path,
    extra: &str,
) -> std::sync::Arc<lbguard::cloud::Cloud> {
    metered_cloud(provider, mock, creds, extra).0
}

/// A cloud source in the library, and the metrics it counts into.
fn metered_cloud(
    provider: Provider,
    mock: &Mock,
    creds: &std::path::Path,
    extra: &str,
) -> (
    std::sync::Arc<lbguard::cloud::Cloud>,
    lbguard::cloud::CloudMetrics,
) {
    let cfg =
        lbguard::engine::parse_config(&cloud_config(provider, mock, creds, extra), "t").unwrap();
    let metrics = lbguard::cloud::CloudMetrics::default();
    let cloud = lbguard::cloud::Cloud::new(
        provider,
        &cfg.inventory.cloud,
        cfg.cluster.id.clone(),
        lbguard::cloud::creds::CredStore::load(provider, Some(creds)).unwrap(),
        mock.ca_pem.as_bytes(),
        metrics.clone(),
        1,
    )
    .unwrap();
    (cloud, metrics)
}

/// How many calls to `provider`'s `op` the mock's `calls` answer counts.
fn calls_to(calls: &Value, provider: impl std::fmt::Display, op: &str) -> u64 {
    calls["byOperation"][format!("{provider}/{op}")]
        .as_u64()
        .unwrap_or(0)
}

/// How many requests `metrics` counted for `operation` with `result`.
fn counted(
    metrics: &lbguard::cloud::CloudMetrics,
    provider: &'static str,
    operation: &'static str,
    result: &'static str,
) -> u64 {
    metrics
        .requests
        .get_or_create(&lbguard::cloud::ApiLabels {
            provider,
            operation,
            result,
        })
        .get()
}

/// The ids of `provider` in [`INV`].
fn inv_ids(provider: Provider) -> Vec<String> {
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    INV.lines()
        .filter_map(|l| l.split("id: ").nth(1)?.split(',').next())
        .filter(|id| file.get(provider, id).is_some())
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refresh_reads_many_load_balancers_a_call_and_asks_for_the_unlisted_alone() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    // Listener lists one item a page: the batched lists follow their page tokens and markers.
    mock.control("paging", json!({"size": 1})).await;
    // Two listeners on one ELB: its listener list takes two pages.
    mock.control(
        "listener",
        json!({"id": "elb-1", "port": 9443, "protocol": "TCP"}),
    )
    .await;
    for (provider, batch_ops, single_ops) in [
        (
            Provider::Alibaba,
            &[
                "DescribeLoadBalancers",
                "DescribeLoadBalancerListeners",
                "ListLoadBalancers",
                "ListListeners",
            ][..],
            &["DescribeLoadBalancerAttribute", "GetLoadBalancerAttribute"][..],
        ),
        (
            Provider::Huawei,
            &["ListLoadBalancers", "ListListeners"][..],
            &["ShowLoadBalancer"][..],
        ),
        (
            Provider::Volcengine,
            &["DescribeLoadBalancers", "DescribeNetworkLoadBalancers"][..],
            &[
                "DescribeLoadBalancerAttributes",
                "DescribeNetworkLoadBalancerAttributes",
            ][..],
        ),
        (
            Provider::Ctyun,
            &["list-loadbalancer", "list-listener"][..],
            &["show-loadbalancer"][..],
        ),
    ] {
        let creds = creds_dir(provider, AK, SK);
        let cloud = library_cloud(provider, &mock, creds.path(), "    qps: 1000\n");
        let mut named: std::collections::HashSet<String> = inv_ids(provider).into_iter().collect();
        // Not listed by the cloud: asked alone, and only that answer says "not found".
        named.insert("lb-gone".into());
        named.insert("nlb-gone".into());
        mock.control("reset", json!({})).await;
        cloud.refresh_round(&named).await;
        let calls = mock.control("calls", json!({})).await;
        let count = |op: &str| calls_to(&calls, provider, op);
        for op in batch_ops {
            assert!(count(op) >= 1, "{provider}: no {op}: {calls}");
        }
        if provider == Provider::Huawei {
            assert!(
                count("ListListeners") >= 2,
                "the marker is followed: {calls}"
            );
        }
        // Alone: only the ids no list named (the CLB and the NLB that are gone).
        let alone: u64 = single_ops.iter().map(|op| count(op)).sum();
        // Huawei: v3, then v2 (a shared ELB only v2 knows), for each.
        let want_alone = if provider == Provider::Huawei { 4 } else { 2 };
        assert_eq!(alone, want_alone, "{provider}: {calls}");
        for id in inv_ids(provider) {
            let fact = cloud
                .snapshot()
                .into_iter()
                .find(|(i, _)| *i == id)
                .unwrap_or_else(|| panic!("{provider} {id}: not refreshed"))
                .1;
            let lbguard::cloud::Fact::Found(got) = fact.as_ref() else {
                panic!("{provider} {id}: {fact:?}");
            };
            let mut want = expressible(file.get(provider, &id).unwrap());
            if id == "elb-1" {
                want.listeners.push(lbguard::inventory::Listener {
                    port: 9443,
                    protocol: "TCP".into(),
                    owner: "external".into(),
                });
            }
            assert_eq!(
                sorted(got.clone()),
                sorted(want),
                "{provider} {id}: a batch reads what one call reads"
            );
        }
        for gone in ["lb-gone", "nlb-gone"] {
            let fact = cloud.snapshot().into_iter().find(|(i, _)| i == gone);
            assert!(
                matches!(
                    fact.as_ref().map(|f| f.1.as_ref()),
                    Some(lbguard::cloud::Fact::NotFound)
                ),
                "{provider} {gone}: {fact:?}"
            );
        }
    }
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_listeners_cannot_all_be_read_leaves_no_partial_facts() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    mock.control("paging", json!({"size": 1})).await;
    mock.fault(Some("loop"), 0.0).await;
    let creds = creds_dir(Provider::Huawei, AK, SK);
    let cloud = library_cloud(Provider::Huawei, &mock, creds.path(), "    qps: 1000\n");
    let named: std::collections::HashSet<String> = inv_ids(Provider::Huawei).into_iter().collect();
    cloud.refresh_round(&named).await;
    // The batch's listener list repeats its marker: each ELB is then read alone, where the
    // list repeats it again. No ELB is stored with the listeners of the first page only.
    let with_listeners: Vec<String> = cloud
        .snapshot()
        .into_iter()
        .filter(|(_, f)| matches!(f.as_ref(), lbguard::cloud::Fact::Found(lb) if !lb.listeners.is_empty()))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(with_listeners, Vec::<String>::new());
    assert!(
        mock.calls("huawei/ShowLoadBalancer").await >= 1,
        "each ELB asked alone"
    );
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctyun_a_list_that_leaves_ids_out_or_ignores_them_costs_calls_not_facts() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    let creds = creds_dir(Provider::Ctyun, AK, SK);
    let mut named: Vec<String> = inv_ids(Provider::Ctyun);
    named.sort();
    named.dedup();
    assert_eq!(named.len(), 4);
    // list-loadbalancer has no paging and no total: a server that cut its answer short
    // could not be told apart. Ids it leaves out are asked alone; an answer that names ids
    // nobody asked about (the filter ignored: the region's list) is not used at all.
    // One load balancer's listeners throttled once: that one is asked alone, the batch and
    // the others' listeners are not read again.
    for (fault, asked, lists, alone) in [
        ("listShort", 4, 1, 3),
        ("ignoreIds", 3, 1, 3),
        ("listenersFailOnce", 4, 1, 1),
    ] {
        mock.fault(Some(fault), 0.0).await;
        let cloud = library_cloud(Provider::Ctyun, &mock, creds.path(), "    qps: 1000\n");
        let named: std::collections::HashSet<String> = named[..asked].iter().cloned().collect();
        mock.control("reset", json!({})).await;
        cloud.refresh_round(&named).await;
        let calls = mock.control("calls", json!({})).await;
        let count = |op: &str| calls_to(&calls, "ctyun", op);
        assert_eq!(count("list-loadbalancer"), lists, "{fault}: {calls}");
        assert_eq!(count("show-loadbalancer"), alone, "{fault}: {calls}");
        let listener_calls = asked as u64 + u64::from(fault == "listenersFailOnce");
        assert_eq!(count("list-listener"), listener_calls, "{fault}: {calls}");
        assert_eq!(cloud.snapshot().len(), asked, "{fault}");
        for id in &named {
            let fact = cloud
                .snapshot()
                .into_iter()
                .find(|(i, _)| i == id)
                .unwrap()
                .1;
            let lbguard::cloud::Fact::Found(got) = fact.as_ref() else {
                panic!("{fault} {id}: {fact:?}");
            };
            let want = expressible(file.get(Provider::Ctyun, id).unwrap());
            assert_eq!(sorted(got.clone()), sorted(want), "{fault} {id}");
        }
        // A list that ignored its filter once is not asked again: one id at a time.
        mock.control("reset", json!({})).await;
        cloud.refresh_round(&named).await;
        let calls = mock.control("calls", json!({})).await;
        let batches = if fault == "ignoreIds" { 0 } else { 1 };
        assert_eq!(
            calls_to(&calls, "ctyun", "list-loadbalancer"),
            batches,
            "{fault}, the next round: {calls}"
        );
    }
    // The region's list past the size lbguard reads (4 MiB): incomplete, each id alone.
    mock.fault(Some("ignoreIds"), 0.0).await;
    mock.control(
        "state",
        json!({"loadBalancers": [], "region": REGION, "projectId": "p-1"}),
    )
    .await;
    mock.control("bulk", json!({"provider": "ctyun", "count": 40000}))
        .await;
    let (cloud, metrics) = metered_cloud(Provider::Ctyun, &mock, creds.path(), "    qps: 1000\n");
    let named: std::collections::HashSet<String> =
        ["lb-bulk-7", "lb-bulk-39999"].map(String::from).into();
    mock.control("reset", json!({})).await;
    cloud.refresh_round(&named).await;
    assert_eq!(mock.calls("ctyun/list-loadbalancer").await, 1);
    assert_eq!(mock.calls("ctyun/show-loadbalancer").await, 2);
    assert!(
        cloud
            .snapshot()
            .iter()
            .all(|(_, f)| matches!(f.as_ref(), lbguard::cloud::Fact::Found(_)))
            && cloud.snapshot().len() == 2
    );
    let incomplete = counted(&metrics, "ctyun", "ListLoadBalancer", "incomplete");
    assert_eq!(incomplete, 1, "the answer too large to read is counted");
    assert_eq!(
        counted(&metrics, "ctyun", "ListListeners", "incomplete"),
        0,
        "and only once"
    );
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

/// Volcengine publishes no code for a missing load balancer and CTyun no table of codes: a
/// look-up's error they cannot place is checked with the list filtered by the id, and only
/// an empty list says "gone".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unplaced_error_says_gone_only_when_the_list_by_its_id_is_empty() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    for (provider, fault, gone, lists) in [
        // Volcengine: every "not found" is checked.
        (Provider::Volcengine, None, &["clb-gone", "nlb-gone"][..], 1),
        (
            Provider::Volcengine,
            Some("otherNotFound"),
            &["clb-gone", "nlb-gone"][..],
            1,
        ),
        // CTyun: its provider's code is taken as said; another is checked.
        (Provider::Ctyun, None, &["lb-gone"][..], 0),
        (Provider::Ctyun, Some("otherNotFound"), &["lb-gone"][..], 1),
    ] {
        mock.fault(fault, 0.0).await;
        let creds = creds_dir(provider, AK, SK);
        let ids = inv_ids(provider)
            .into_iter()
            .chain(gone.iter().map(|g| g.to_string()));
        // One at a time, each in a cloud of its own: the single look-up is what decides.
        for id in ids {
            let cloud = library_cloud(provider, &mock, creds.path(), "    qps: 1000\n");
            mock.control("reset", json!({})).await;
            cloud
                .refresh_round(&std::collections::HashSet::from([id.clone()]))
                .await;
            let calls = mock.control("calls", json!({})).await;
            let listed: u64 = [
                "DescribeLoadBalancers",
                "DescribeNetworkLoadBalancers",
                "list-loadbalancer",
            ]
            .iter()
            .map(|op| calls_to(&calls, provider, op))
            .sum();
            let fact = cloud
                .snapshot()
                .into_iter()
                .find(|(i, _)| *i == id)
                .unwrap()
                .1;
            if gone.contains(&id.as_str()) {
                assert_eq!(
                    *fact,
                    lbguard::cloud::Fact::NotFound,
                    "{provider} {fault:?} {id}"
                );
                assert_eq!(listed, lists, "{provider} {fault:?} {id}: {calls}");
            } else {
                assert!(
                    matches!(fact.as_ref(), lbguard::cloud::Fact::Found(_)),
                    "{provider} {fault:?} {id}: {fact:?}"
                );
                assert_eq!(listed, 0, "{provider} {fault:?} {id}: {calls}");
            }
        }
    }
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

/// A look-up whose error lbguard cannot place is decided by the list filtered by the id: an
/// id the list names gets its facts, one it does not name is gone, and a list that ignored
/// its filter (CTyun's is unpaged: perhaps cut short) decides nothing. Huawei: the shared
/// ELB's v2 list, after v2 answers a missing ELB without ELB's code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_look_up_with_an_unplaced_error_is_decided_by_the_list_by_its_id() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    let soon = || Instant::now() + Duration::from_secs(5);
    for (provider, fault, decides) in [
        (Provider::Volcengine, "showFails", true),
        (Provider::Ctyun, "showFails", true),
        (Provider::Ctyun, "showFails+ignoreIds", false),
        // A list that fails decides nothing either.
        (Provider::Ctyun, "showFails+listFails", false),
        (Provider::Volcengine, "showFails+listFails", false),
        // Huawei's shared-ELB API answering a missing one as Neutron does (no ELB code).
        (Provider::Huawei, "neutron404", true),
    ] {
        mock.fault(Some(fault), 0.0).await;
        let creds = creds_dir(provider, AK, SK);
        let mut ids = inv_ids(provider);
        ids.sort();
        ids.dedup();
        for id in ids
            .iter()
            .map(String::as_str)
            .chain(["lb-gone", "nlb-gone"])
        {
            if provider != Provider::Volcengine && id.starts_with("nlb-") {
                continue;
            }
            let cloud = library_cloud(provider, &mock, creds.path(), "    qps: 1000\n");
            let got = cloud.get(id, soon(), false).await;
            let known = file.get(provider, id);
            match (decides, known, got.as_deref()) {
                (true, Some(lb), Ok(lbguard::cloud::Fact::Found(got))) => {
                    assert_eq!(sorted(got.clone()), sorted(expressible(lb)), "{fault} {id}")
                }
                (true, None, Ok(lbguard::cloud::Fact::NotFound)) => {}
                (false, _, Err(e)) => assert!(
                    ["Openapi.Gateway.Unavailable", "OperationDenied.Unknown"]
                        .iter()
                        .any(|code| e.to_string().contains(code)),
                    "{fault} {id}: the look-up's own error stands: {e}"
                ),
                other => panic!("{provider} {fault} {id}: {other:?}"),
            }
        }
    }
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

/// Volcengine: 40 CLBs (one listener each) and 4 NLBs (two each), all named.
fn volc_region() -> String {
    let mut inv = String::from("loadBalancers:\n");
    for i in 0..40 {
        inv += &format!(
            "  - {{id: clb-r{i}, provider: volcengine, kind: clb, addressType: intranet, vpcId: vpc-1, listeners: [{{port: {}, protocol: TCP, owner: external}}]}}\n",
            1000 + i
        );
    }
    for i in 0..4 {
        inv += &format!(
            "  - {{id: nlb-r{i}, provider: volcengine, kind: nlb, addressType: intranet, vpcId: vpc-1, listeners: [{{port: {}, protocol: TCP, owner: external}}, {{port: {}, protocol: UDP, owner: external}}]}}\n",
            2000 + i,
            3000 + i
        );
    }
    inv
}

/// Every fact of [`volc_region`] as the file says (and as one call per id reads it).
fn assert_volc_region(cloud: &lbguard::cloud::Cloud, inv: &str) {
    let file = Snapshot::parse(inv, "inv.yaml").unwrap();
    let snap = cloud.snapshot();
    assert_eq!(snap.len(), 44, "{snap:?}");
    for (id, fact) in snap {
        let lbguard::cloud::Fact::Found(got) = fact.as_ref() else {
            panic!("{id}: {fact:?}");
        };
        let want = expressible(file.get(Provider::Volcengine, &id).unwrap());
        assert_eq!(sorted(got.clone()), sorted(want), "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volcengine_reads_the_regions_listeners_in_a_few_calls_not_one_per_load_balancer() {
    let inv = volc_region();
    let Some(mock) = Mock::start(&inv).await else {
        return;
    };
    let creds = creds_dir(Provider::Volcengine, AK, SK);
    let cloud = library_cloud(Provider::Volcengine, &mock, creds.path(), "    qps: 1000\n");
    let named: std::collections::HashSet<String> = (0..40)
        .map(|i| format!("clb-r{i}"))
        .chain((0..4).map(|i| format!("nlb-r{i}")))
        .collect();
    // Pages of 10: the CLBs' 40 listeners take four pages, the NLBs' 8 one.
    mock.control("paging", json!({"size": 10})).await;
    mock.control("reset", json!({})).await;
    cloud.refresh_round(&named).await;
    let calls = mock.control("calls", json!({})).await;
    let count = |op: &str| calls_to(&calls, "volcengine", op);
    // One list per load balancer made 44 listener calls; the region's lists make 5.
    assert_eq!(count("DescribeListeners"), 4, "{calls}");
    assert_eq!(count("DescribeNLBListeners"), 1, "{calls}");
    // 40 CLBs twenty a call in pages of 10; 4 NLBs in one call.
    assert_eq!(count("DescribeLoadBalancers"), 4, "{calls}");
    assert_eq!(count("DescribeNetworkLoadBalancers"), 1, "{calls}");
    assert_eq!(all_calls(&mock).await, 10, "{calls}");
    assert_volc_region(&cloud, &inv);

    // 21 CLBs: a batch of 20 and one alone, whose listeners the region's list has too.
    let cloud = library_cloud(Provider::Volcengine, &mock, creds.path(), "    qps: 1000\n");
    let named: std::collections::HashSet<String> = (0..21).map(|i| format!("clb-r{i}")).collect();
    mock.control("reset", json!({})).await;
    cloud.refresh_round(&named).await;
    let calls = mock.control("calls", json!({})).await;
    assert_eq!(
        calls["byOperation"]["volcengine/DescribeListeners"], 4,
        "{calls}"
    );
    assert_eq!(
        calls["byOperation"]["volcengine/DescribeLoadBalancers"],
        2 + 1,
        "{calls}"
    );
    assert_eq!(all_calls(&mock).await, 7, "{calls}");
    assert_eq!(cloud.snapshot().len(), 21);
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volcengine_region_listener_lists_that_cannot_be_used_fall_back_per_load_balancer() {
    let inv = volc_region();
    let Some(mock) = Mock::start(&inv).await else {
        return;
    };
    let creds = creds_dir(Provider::Volcengine, AK, SK);
    let named: std::collections::HashSet<String> = (0..40)
        .map(|i| format!("clb-r{i}"))
        .chain((0..4).map(|i| format!("nlb-r{i}")))
        .collect();
    type Counted = &'static [(&'static str, &'static str, u64)];
    let cases: [(&str, u64, u64, u64, Counted); 2] = [
        // The NLBs' list repeats its token (two pages); the CLBs' list takes more pages
        // (40, one a page) than the calls it would save (20): one page. No load balancer
        // is stored with the listeners of the pages read before.
        ("loop", 1, 1, 2, &[("ListListeners", "incomplete", 2)]),
        // A policy that grants the listener lists only with a LoadBalancerId: the
        // region-wide lists are refused (AccessDenied, not retried).
        (
            "regionListenersDenied",
            100,
            1,
            1,
            &[
                ("DescribeListeners", "auth_error", 1),
                ("DescribeNLBListeners", "auth_error", 1),
            ],
        ),
    ];
    for (fault, page, clb_region, nlb_region, want) in cases {
        mock.control("paging", json!({"size": page})).await;
        mock.fault(Some(fault), 0.0).await;
        let (cloud, metrics) =
            metered_cloud(Provider::Volcengine, &mock, creds.path(), "    qps: 1000\n");
        mock.control("reset", json!({})).await;
        cloud.refresh_round(&named).await;
        let calls = mock.control("calls", json!({})).await;
        let count = |op: &str| calls_to(&calls, "volcengine", op);
        // The region-wide calls, then one list per load balancer.
        assert_eq!(
            count("DescribeListeners"),
            clb_region + 40,
            "{fault}: {calls}"
        );
        assert_eq!(
            count("DescribeNLBListeners"),
            nlb_region + 4,
            "{fault}: {calls}"
        );
        assert_volc_region(&cloud, &inv);
        for (operation, result, n) in want {
            assert_eq!(
                counted(&metrics, "volcengine", operation, result),
                *n,
                "{fault}: {operation} {result}"
            );
        }
    }
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

/// Benchmark (`scripts/bench-e2e refresh`, not a test): calls per background round against
/// the number of load balancers Services name and the number of replicas, on the mock's bulk
/// account, with the refresh's own code and the cloud's list calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: scripts/bench-e2e refresh"]
async fn bench_refresh_at_scale() {
    use lbguard::cloud::shard::Membership;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let mock = Mock::start("loadBalancers: []")
        .await
        .expect("the clouds' Python SDKs (scripts/test installs them)");
    let providers: Vec<Provider> = match std::env::var("LBGUARD_BENCH_PROVIDERS") {
        Ok(p) => p.split(',').map(|p| p.parse().unwrap()).collect(),
        Err(_) => vec![
            Provider::Alibaba,
            Provider::Huawei,
            Provider::Volcengine,
            Provider::Ctyun,
        ],
    };
    println!();
    println!(
        "| provider | load balancers | replicas | round 1 (each replica reads all) | rounds 2-7: calls a round, all replicas (max) | busiest replica, rounds 2-7 (max) | at qps 5 shared, that replica needs |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for provider in providers {
        for n in [500, 1000, 5000] {
            mock.control(
                "state",
                json!({"loadBalancers": [], "region": REGION, "projectId": "p-1"}),
            )
            .await;
            mock.control("bulk", json!({"provider": provider.as_str(), "count": n}))
                .await;
            let creds = creds_dir(provider, AK, SK);
            let cfg = lbguard::engine::parse_config(
                &cloud_config(provider, &mock, creds.path(), "    qps: 100000\n"),
                "t",
            )
            .unwrap();
            let named: std::collections::HashSet<String> =
                (0..n).map(|i| format!("lb-bulk-{i}")).collect();
            for replicas in [1usize, 2] {
                let (base, offset) = (Instant::now(), Arc::new(AtomicU64::new(0)));
                let o = Arc::clone(&offset);
                let clock: lbguard::cloud::Clock =
                    Arc::new(move || base + Duration::from_secs(o.load(Ordering::SeqCst)));
                let leases = lbguard::claims::memory::MemoryLeases::new();
                let mut fleet = Vec::new();
                for r in 0..replicas {
                    let cloud = lbguard::cloud::Cloud::with_clock(
                        provider,
                        &cfg.inventory.cloud,
                        None,
                        lbguard::cloud::creds::CredStore::load(provider, Some(creds.path()))
                            .unwrap(),
                        mock.ca_pem.as_bytes(),
                        Default::default(),
                        replicas as u32,
                        Arc::clone(&clock),
                    )
                    .unwrap();
                    let m = Membership::new(
                        leases.client(),
                        "lbguard-system",
                        &format!("lbguard-{r}"),
                        "lbguard",
                    );
                    fleet.push((cloud, m));
                }
                let mut live = Vec::new();
                for (_, m) in &fleet {
                    live = m.renew().await.unwrap();
                }
                if replicas > 1 {
                    for (r, (c, _)) in fleet.iter().enumerate() {
                        c.shard().set(Some((format!("lbguard-{r}"), live.clone())));
                    }
                }
                // Round 1, then rounds 5 min apart: six for two replicas (one full cycle of
                // the audit's reads), one for one replica (every round reads the same).
                let mut first = 0;
                let mut worst_all = 0;
                let mut worst_one = 0;
                let started = Instant::now();
                let rounds = if replicas == 1 { 2 } else { 7 };
                for round in 0..rounds as u64 {
                    offset.store(round * 300, Ordering::SeqCst);
                    let mut per_replica = Vec::new();
                    for (c, _) in &fleet {
                        mock.control("reset", json!({})).await;
                        c.refresh_round(&named).await;
                        per_replica.push(all_calls(&mock).await);
                    }
                    let all: u64 = per_replica.iter().sum();
                    if round == 0 {
                        first = all;
                    } else {
                        worst_all = worst_all.max(all);
                        worst_one = worst_one.max(*per_replica.iter().max().unwrap());
                    }
                }
                for (c, _) in &fleet {
                    assert_eq!(c.snapshot().len(), n, "{provider} {n}: every fact read");
                }
                eprintln!("{provider} {n} x{replicas}: {:?}", started.elapsed());
                // The bucket refills at qps / replicas; the refresh waits for its tokens.
                let secs = worst_one as f64 / (5.0 / replicas as f64);
                println!(
                    "| {provider} | {n} | {replicas} | {first} | {worst_all} | {worst_one} | {:.0} s{} |",
                    secs,
                    if secs <= 300.0 { "" } else { " (over 5 min)" }
                );
            }
        }
    }
    mock.assert_clean().await;
}

/// The resident and peak memory of a process, in MiB (from /proc).
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (kib("VmRSS:") / 1024.0, kib("VmHWM:") / 1024.0)
}

/// Benchmark (`scripts/bench-e2e flood`, not a test): `lbguard serve` as a user runs it (its own
/// process, the config's defaults but the endpoint and a 10 s refresh so rounds can be seen),
/// flooded with admissions that each name a random load balancer id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: scripts/bench-e2e flood"]
async fn bench_random_id_flood() {
    use std::process::Stdio;
    const FLOOD: usize = 20_000;
    const CLIENTS: usize = 16;
    let mock = Mock::start(INV)
        .await
        .expect("the clouds' Python SDKs (scripts/test installs them)");
    println!();
    println!(
        "| inventory.cloud.qps | admissions | calls during the flood | facts cached after | RSS before | RSS after the flood (peak) | calls a round after (3 rounds) | facts cached 35 s later | RSS then |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for qps in [5, 100_000] {
        let dir = tempfile::tempdir().unwrap();
        let creds = creds_dir(Provider::Alibaba, AK, SK);
        let config = dir.path().join("config.yaml");
        std::fs::write(
            &config,
            cloud_config(
                Provider::Alibaba,
                &mock,
                creds.path(),
                &format!("    refresh: 10s\n    qps: {qps}\n"),
            ),
        )
        .unwrap();
        let ca = dir.path().join("cloud-ca.pem");
        std::fs::write(&ca, &mock.ca_pem).unwrap();
        let (port, metrics) = (common::free_port(), common::free_port());
        let mut child = Command::new(env!("CARGO_BIN_EXE_lbguard"))
            .args(["serve", "--dev", "--dev-dir"])
            .arg(dir.path().join("dev"))
            .args(["--addr", &format!("127.0.0.1:{port}")])
            .args(["--metrics-addr", &format!("127.0.0.1:{metrics}")])
            .arg("--config")
            .arg(&config)
            .env("KUBECONFIG", dir.path().join("none"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("SSL_CERT_FILE", &ca)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut client = None;
        for _ in 0..200 {
            if let Ok(ca) = std::fs::read_to_string(dir.path().join("dev/ca.crt")) {
                let c = common::Client::new(&ca, format!("127.0.0.1:{port}").parse().unwrap());
                if matches!(c.request("GET", "/readyz", vec![]).await, Ok(r) if r.status == 200) {
                    client = Some(c);
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let client = client.expect("lbguard serve became ready");
        let gauge = |text: &str, name: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("{name} ")))
                .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let metrics_text =
            || common::metrics_at(std::net::SocketAddr::from(([127, 0, 0, 1], metrics)));
        let r = client
            .post(
                "/validate",
                &create(Provider::Alibaba, "web", "lb-intranet", &[], 8080),
            )
            .await;
        assert_eq!(r.status, 200);
        let before = memory(pid).0;
        mock.control("reset", json!({})).await;
        let mut tasks = Vec::new();
        for t in 0..CLIENTS {
            let c = client.clone();
            tasks.push(tokio::spawn(async move {
                for i in (t..FLOOD).step_by(CLIENTS) {
                    let id = format!(
                        "lb-rand-{qps}-{i:06}-{:08x}",
                        (i as u64).wrapping_mul(0x9e37_79b9) as u32
                    );
                    let r = c
                        .post(
                            "/validate",
                            &create(Provider::Alibaba, "web", &id, &[], 8080),
                        )
                        .await;
                    assert_eq!(r.status, 200);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let flood_calls = all_calls(&mock).await;
        let (after, peak) = memory(pid);
        let cached = gauge(&metrics_text().await, "lbguard_cloud_cache_load_balancers");
        mock.control("reset", json!({})).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let per_round = all_calls(&mock).await as f64 / 3.0;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let cached_later = gauge(&metrics_text().await, "lbguard_cloud_cache_load_balancers");
        let later = memory(pid).0;
        println!(
            "| {qps} | {FLOOD} | {flood_calls} | {cached:.0} | {before:.1} MiB | {after:.1} MiB ({peak:.1} MiB) | {per_round:.1} | {cached_later:.0} | {later:.1} MiB |"
        );
        let _ = child.kill();
        let _ = child.wait();
    }
    mock.assert_clean().await;
}
