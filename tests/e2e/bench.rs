//! Latency as the API server sees it (`scripts/bench-e2e`, not a test): Service creates,
//! each taking a listener claim, with 8 concurrent clients spread over both API servers,
//! first with no lbguard webhook registered, then with the chart's two. Reports creates/s,
//! the clients' p50/p99, and the API servers' own
//! `apiserver_admission_webhook_admission_duration_seconds` p50/p99 per lbguard webhook.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Env;
use crate::plane::{self, call};

const SERVICES: usize = 500;
const CLIENTS: usize = 8;

fn service(ns: &str, i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc-{i}"), "namespace": ns, "annotations": {
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": format!("lb-bench-{ns}-{i}"),
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners": "false"}},
        "spec": {"type": "LoadBalancer", "selector": {"app": "bench"}, "allocateLoadBalancerNodePorts": false,
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    })
}

pub struct Run {
    pub per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
}

/// `n` creates in `ns` from CLIENTS tasks, half on each API server.
async fn creates(env: &Env, ns: &str, n: usize) -> Run {
    plane::namespace(&env.admin[0], ns).await;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let client = env.admin[c % env.admin.len()].clone();
        let next = Arc::clone(&next);
        let ns = ns.to_string();
        tasks.push(tokio::spawn(async move {
            let mut took = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return took;
                }
                let svc = service(&ns, i);
                let t = Instant::now();
                let r = call(
                    &client,
                    "POST",
                    &format!("/api/v1/namespaces/{ns}/services"),
                    Some(&svc),
                )
                .await;
                took.push(t.elapsed());
                assert!(r.ok(), "create {ns}/svc-{i}: {} {}", r.status, r.body);
            }
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed();
    all.sort();
    let q = |p: f64| all[((all.len() as f64 * p).ceil() as usize).clamp(1, all.len()) - 1];
    Run {
        per_second: n as f64 / elapsed.as_secs_f64(),
        p50: q(0.50),
        p99: q(0.99),
    }
}

/// Cumulative bucket counts (upper bound -> count) of the admission webhook histogram for
/// one webhook, summed over label sets and API servers.
async fn buckets(env: &Env, webhook: &str) -> BTreeMap<u64, f64> {
    let mut out = BTreeMap::new();
    for client in &env.admin {
        let r = plane::raw(client, "GET", "/metrics", None)
            .await
            .expect("metrics");
        let text = r.body.as_str().unwrap_or_default().to_string();
        for line in text.lines() {
            if !line.starts_with("apiserver_admission_webhook_admission_duration_seconds_bucket{")
                || !line.contains(&format!("name=\"{webhook}\""))
            {
                continue;
            }
            let Some(le) = line.split("le=\"").nth(1).and_then(|s| s.split('"').next()) else {
                continue;
            };
            let bound = if le == "+Inf" {
                u64::MAX
            } else {
                (le.parse::<f64>().unwrap() * 1e6) as u64
            };
            let count: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            *out.entry(bound).or_insert(0.0) += count;
        }
    }
    out
}

/// Prometheus' histogram_quantile over the difference of two snapshots, in ms.
fn quantile(before: &BTreeMap<u64, f64>, after: &BTreeMap<u64, f64>, q: f64) -> (f64, f64) {
    let delta: Vec<(u64, f64)> = after
        .iter()
        .map(|(b, c)| (*b, c - before.get(b).copied().unwrap_or(0.0)))
        .collect();
    let total = delta.last().map_or(0.0, |d| d.1);
    let rank = q * total;
    let (mut lower, mut below) = (0u64, 0.0);
    for (bound, count) in &delta {
        if *count >= rank {
            if *bound == u64::MAX {
                return (lower as f64 / 1000.0, total);
            }
            let within = if count - below > 0.0 {
                (rank - below) / (count - below)
            } else {
                0.0
            };
            return (
                (lower as f64 + (*bound - lower) as f64 * within) / 1000.0,
                total,
            );
        }
        lower = *bound;
        below = *count;
    }
    (f64::NAN, total)
}

fn share_within(before: &BTreeMap<u64, f64>, after: &BTreeMap<u64, f64>, bound_us: u64) -> f64 {
    let d = |m: &BTreeMap<u64, f64>, b: u64| m.get(&b).copied().unwrap_or(0.0);
    let total = d(after, u64::MAX) - d(before, u64::MAX);
    (d(after, bound_us) - d(before, bound_us)) / total
}

pub async fn run(env: &mut Env) {
    let admin = env.admin[0].clone();
    env.lbguard.unregister(&admin).await;
    creates(env, "bench-warmup", 100).await;
    let without = creates(env, "bench-without", SERVICES).await;
    env.lbguard.register(&admin).await;
    creates(env, "bench-warmup-2", 50).await;
    let hooks = ["validate.lbguard.io", "mutate.lbguard.io"];
    let mut before = Vec::new();
    for h in hooks {
        before.push(buckets(env, h).await);
    }
    let with = creates(env, "bench-with", SERVICES).await;
    let claims = call(
        &admin,
        "GET",
        &format!(
            "/apis/coordination.k8s.io/v1/namespaces/{}/leases?labelSelector=lbguard.io/claim",
            crate::install::NS
        ),
        None,
    )
    .await;
    let held = claims.body["items"].as_array().map_or(0, |v| v.len());

    println!();
    println!(
        "{SERVICES} Service creates (each taking a listener claim), {CLIENTS} clients over 2 kube-apiservers v1.36.2, 2 lbguard replicas (release build, chart defaults):"
    );
    println!();
    println!("| | creates/s | client p50 | client p99 |");
    println!("|---|---|---|---|");
    for (name, r) in [
        ("without lbguard's webhooks", &without),
        ("with lbguard's webhooks", &with),
    ] {
        println!(
            "| {name} | {:.0} | {:.1} ms | {:.1} ms |",
            r.per_second,
            r.p50.as_secs_f64() * 1e3,
            r.p99.as_secs_f64() * 1e3
        );
    }
    println!();
    println!(
        "throughput with the webhooks: {:.0}% of without",
        100.0 * with.per_second / without.per_second
    );
    println!("claims held after the run: {held}");
    println!();
    println!("| webhook (API server's histogram) | calls | p50 | p99 | calls within 5 ms |");
    println!("|---|---|---|---|---|");
    for (h, b) in hooks.iter().zip(&before) {
        let after = buckets(env, h).await;
        let (p50, n) = quantile(b, &after, 0.50);
        let (p99, _) = quantile(b, &after, 0.99);
        println!(
            "| {h} | {n:.0} | {p50:.2} ms | {p99:.2} ms | {:.1}% |",
            100.0 * share_within(b, &after, 5000)
        );
    }
    println!();
    println!(
        "(the API server's buckets are 5, 25, 100 ms ...: quantiles are interpolated within a bucket, as Prometheus' histogram_quantile does)"
    );
}
