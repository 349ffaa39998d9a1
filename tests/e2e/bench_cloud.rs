//! What the cloud source costs an admission (`scripts/bench-e2e cloud`, not a test): Service
//! creates through both API servers, each naming its own reused Alibaba load balancer, with
//! the facts from the file inventory, then from the cloud (the mock cloud, cached), then the
//! look-up of load balancers not seen yet. lbguard's own
//! `lbguard_admission_duration_seconds` (both replicas, read with a metrics-reader token) gives
//! the webhook's time per call; the API servers' histogram and the clients' latency the rest.
//! Claims are off in every phase, so the figures are the inventory's (a claim is a Lease write
//! that would dominate them, BENCHMARKS.md).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::Env;
use crate::bench::{Run, clear, creates_with, quantile};
use crate::common::mock_cloud::{AK, Mock, REGION, SK};
use crate::install::{NS, of_kind, token};
use crate::plane::apply_ok;

const N: usize = 500;
const MISSES: usize = 200;
const CLIENTS: usize = 8;

fn reused(ns: &str, i: usize) -> Value {
    let prefix = if ns.starts_with("miss") {
        "lb-miss"
    } else {
        "lb-bc"
    };
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc-{i}"), "namespace": ns, "annotations": {
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": format!("{prefix}-{i}")}},
        "spec": {"type": "LoadBalancer", "selector": {"app": "bench"}, "allocateLoadBalancerNodePorts": false,
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    })
}

fn lb(id: String) -> Value {
    json!({"id": id, "provider": "alibaba", "kind": "clb", "addressType": "internet",
           "vpcId": "vpc-123", "createdBy": "user",
           "listeners": [{"port": 443, "protocol": "HTTPS", "owner": "external"}]})
}

/// lbguard's validate histogram, both replicas summed: upper bound (µs) -> cumulative count.
async fn lbguard_buckets(env: &Env, token: &str) -> BTreeMap<u64, f64> {
    let mut out = BTreeMap::new();
    for r in &env.lbguard.replicas {
        let client = crate::common::Client::new(&env.lbguard.ca_pem, r.metrics);
        let auth = format!("Bearer {token}");
        let reply = client
            .request_with(
                "GET",
                "/metrics",
                &[("authorization", auth.as_str())],
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            reply.status,
            200,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        crate::bench::add_buckets(
            &String::from_utf8_lossy(&reply.body),
            "lbguard_admission_duration_seconds",
            "endpoint=\"validate\"",
            &mut out,
        );
    }
    out
}

/// Every load balancer once through each replica (each has its own cache), as AdmissionReviews
/// straight to its /validate.
async fn warm(env: &Env, n: usize) {
    for i in 0..env.lbguard.replicas.len() {
        let client = env.lbguard.client(i);
        let mut tasks = Vec::new();
        for t in 0..4 {
            let client = client.clone();
            tasks.push(tokio::spawn(async move {
                for k in (t..n).step_by(4) {
                    let mut review = crate::common::fixture("review-create.json");
                    review["request"]["uid"] = json!(format!("warm-{k}"));
                    // A dry run holds no ports: the measured creates find them free.
                    review["request"]["dryRun"] = json!(true);
                    review["request"]["object"] = reused("warm", k);
                    let r = client.post("/validate", &review).await;
                    assert_eq!(r.status, 200);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    }
}

struct Row {
    name: &'static str,
    run: Run,
    /// lbguard's own p50 and p99 (ms).
    own: (f64, f64),
    /// The API servers' p50, p99 (ms) for the webhook call.
    api: (f64, f64),
    cloud_calls: u64,
}

pub async fn run(env: &mut Env) {
    let mut all: Vec<Value> = (0..N).map(|i| lb(format!("lb-bc-{i}"))).collect();
    let file_lbs = all.clone();
    all.extend((0..MISSES).map(|i| lb(format!("lb-miss-{i}"))));
    let Some(mock) = Mock::start(&json!({"loadBalancers": all}).to_string()).await else {
        panic!("the cloud benchmark needs the clouds' Python SDKs (scripts/test installs them)");
    };
    let dir = env.plane.dir.join("bench-cloud");
    std::fs::create_dir_all(&dir).unwrap();
    let inventory = dir.join("inventory.yaml");
    std::fs::write(&inventory, json!({"loadBalancers": file_lbs}).to_string()).unwrap();
    std::fs::write(dir.join("accessKeyId"), AK).unwrap();
    std::fs::write(dir.join("accessKeySecret"), SK).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &mock.ca_pem).unwrap();

    // A metrics reader, as the metrics case binds one.
    let admin = env.admin[0].clone();
    let reader = of_kind(&env.lbguard.objects, "ClusterRole")
        .into_iter()
        .find(|r| r["metadata"]["name"] == "lbguard-metrics-reader")
        .expect("the chart renders lbguard-metrics-reader")
        .clone();
    apply_ok(&admin, &reader).await;
    apply_ok(
        &admin,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "bench-reader", "namespace": NS}}),
    )
    .await;
    apply_ok(&admin, &json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "bench-reader-lbguard"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "lbguard-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "bench-reader", "namespace": NS}],
    }))
    .await;
    let token = token(&admin, "bench-reader").await;

    let base: Value =
        lbguard::yaml::from_str(&std::fs::read_to_string(&env.lbguard.config).unwrap()).unwrap();
    let with_file = {
        let mut c = base.clone();
        c["provider"] = json!("alibaba");
        c["claims"]["enabled"] = json!(false);
        c["inventory"]["path"] = json!(inventory.display().to_string());
        c
    };
    let with_cloud = |qps: u32| {
        let mut c = base.clone();
        c["provider"] = json!("alibaba");
        c["claims"]["enabled"] = json!(false);
        c["inventory"]["cloud"] = json!({"enabled": true, "region": REGION, "endpoint": mock.url,
            "credentialsDir": dir.display().to_string(), "qps": qps});
        c
    };
    env.lbguard.env = vec![("SSL_CERT_FILE".into(), ca.display().to_string())];
    env.lbguard.register(&env.admin).await;

    let mut rows = Vec::new();
    for round in 1..=2 {
        for cloud in [false, true] {
            // qps does not limit a cache hit; it is raised so the warm-up is not throttled.
            let config = if cloud {
                with_cloud(1000)
            } else {
                with_file.clone()
            };
            env.lbguard.reconfigure(|c| *c = config.clone()).await;
            // Warm-up: every load balancer once per replica, so the cloud phase is all hits.
            let calls_before = mock.calls("alibaba/DescribeLoadBalancerAttribute").await;
            warm(env, N).await;
            let ns = format!("bc-{round}-{}", cloud as u8);
            let (own0, api0) = (
                lbguard_buckets(env, &token).await,
                crate::bench::buckets(env, "validate.lbguard.io").await,
            );
            let calls_mid = mock.calls("alibaba/DescribeLoadBalancerAttribute").await;
            let run = creates_with(env, &ns, N, CLIENTS, reused).await;
            let (own1, api1) = (
                lbguard_buckets(env, &token).await,
                crate::bench::buckets(env, "validate.lbguard.io").await,
            );
            let calls_after = mock.calls("alibaba/DescribeLoadBalancerAttribute").await;
            let (p50, _) = quantile(&own0, &own1, 0.50);
            let (p99, _) = quantile(&own0, &own1, 0.99);
            rows.push(Row {
                name: if cloud {
                    "cloud source, cached"
                } else {
                    "file inventory"
                },
                run,
                own: (p50, p99),
                api: (
                    quantile(&api0, &api1, 0.50).0,
                    quantile(&api0, &api1, 0.99).0,
                ),
                cloud_calls: calls_after - calls_mid,
            });
            assert!(
                !cloud || calls_mid - calls_before > 0,
                "the warm-up asked the cloud"
            );
            clear(env, &ns, N).await;
        }
    }
    // Misses: each create names a load balancer lbguard has not seen; one client, and a qps
    // budget that does not throttle, so the figure is the look-up itself.
    env.lbguard.reconfigure(|c| *c = with_cloud(1000)).await;
    let (own0, api0) = (
        lbguard_buckets(env, &token).await,
        crate::bench::buckets(env, "validate.lbguard.io").await,
    );
    let calls_before = mock.calls("alibaba/DescribeLoadBalancerAttribute").await;
    let miss = creates_with(env, "miss", MISSES, 1, reused).await;
    let (own1, api1) = (
        lbguard_buckets(env, &token).await,
        crate::bench::buckets(env, "validate.lbguard.io").await,
    );
    let calls = mock.calls("alibaba/DescribeLoadBalancerAttribute").await - calls_before;
    let (p50, _) = quantile(&own0, &own1, 0.50);
    let (p99, _) = quantile(&own0, &own1, 0.99);
    let miss_row = Row {
        name: "cloud source, not cached (1 client)",
        run: miss,
        own: (p50, p99),
        api: (
            quantile(&api0, &api1, 0.50).0,
            quantile(&api0, &api1, 0.99).0,
        ),
        cloud_calls: calls,
    };
    clear(env, "miss", MISSES).await;
    mock.assert_clean().await;

    println!();
    println!(
        "{N} Service creates a phase ({CLIENTS} clients over 2 kube-apiservers, 2 lbguard replicas, release build, chart defaults but provider alibaba and claims off), each on its own reused load balancer; two interleaved rounds:"
    );
    println!();
    println!(
        "| round | facts from | creates/s | client p50 | client p99 | lbguard validate p50 | p99 | API servers' p50 | p99 | cloud calls |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (i, r) in rows.iter().chain(std::iter::once(&miss_row)).enumerate() {
        let round = if i < rows.len() {
            (i / 2 + 1).to_string()
        } else {
            "-".into()
        };
        println!(
            "| {round} | {} | {:.0} | {:.1} ms | {:.1} ms | {:.3} ms | {:.3} ms | {:.1} ms | {:.1} ms | {} |",
            r.name,
            r.run.per_second,
            r.run.p50.as_secs_f64() * 1e3,
            r.run.p99.as_secs_f64() * 1e3,
            r.own.0,
            r.own.1,
            r.api.0,
            r.api.1,
            r.cloud_calls
        );
    }
    println!();
    println!(
        "(lbguard's histogram buckets are 50 µs doubling; the API servers' 5, 25, 100 ms, ...; quantiles interpolated within a bucket)"
    );
    env.lbguard.env.clear();
    env.lbguard.reconfigure(|c| *c = base.clone()).await;
}
