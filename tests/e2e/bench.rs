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

pub const SERVICES: usize = 500;
pub const CLIENTS: usize = 8;

pub fn service(ns: &str, i: usize) -> Value {
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
    /// CPU seconds spent during the run: API servers, etcd, lbguard replicas, this process
    /// (the clients and the TCP proxy).
    pub cpu: [f64; 4],
}

/// user + system CPU seconds of a process so far (/proc/PID/stat, clock ticks of 10 ms).
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (tick(11) + tick(12)) / 100.0
}

fn cpu(env: &Env) -> [f64; 4] {
    let sum = |procs: Vec<&crate::plane::Proc>| -> f64 {
        procs
            .iter()
            .filter_map(|p| p.pid())
            .map(|pid| cpu_seconds(&pid.to_string()))
            .sum()
    };
    let apis = sum(env
        .plane
        .apis
        .iter()
        .filter_map(|a| a.proc.as_ref())
        .collect());
    let etcd = sum(vec![&env.plane.etcd]);
    let lbguard = sum(env.lbguard.procs());
    [apis, etcd, lbguard, cpu_seconds("self")]
}

/// `n` creates in `ns` from CLIENTS tasks, half on each API server.
async fn creates(env: &Env, ns: &str, n: usize) -> Run {
    creates_by(env, ns, n, CLIENTS).await
}

async fn creates_by(env: &Env, ns: &str, n: usize, clients: usize) -> Run {
    creates_with(env, ns, n, clients, service).await
}

/// `n` creates of `make(ns, i)` from `clients` tasks over both API servers.
pub async fn creates_with(
    env: &Env,
    ns: &str,
    n: usize,
    clients: usize,
    make: fn(&str, usize) -> Value,
) -> Run {
    plane::namespace(&env.admin[0], ns).await;
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = cpu(env);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
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
                let svc = make(&ns, i);
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
    let cpu_after = cpu(env);
    all.sort();
    let q = |p: f64| all[((all.len() as f64 * p).ceil() as usize).clamp(1, all.len()) - 1];
    Run {
        per_second: n as f64 / elapsed.as_secs_f64(),
        p50: q(0.50),
        p99: q(0.99),
        cpu: std::array::from_fn(|i| cpu_after[i] - cpu_before[i]),
    }
}

/// Adds the `{metric}_bucket` lines of a Prometheus text page whose labels contain
/// `label` into `out`: upper bound (µs) -> cumulative count.
pub fn add_buckets(text: &str, metric: &str, label: &str, out: &mut BTreeMap<u64, f64>) {
    let prefix = format!("{metric}_bucket{{");
    for line in text.lines() {
        if !line.starts_with(&prefix) || !line.contains(label) {
            continue;
        }
        let Some(le) = line.split("le=\"").nth(1).and_then(|s| s.split('"').next()) else {
            continue;
        };
        let bound = if le == "+Inf" {
            u64::MAX
        } else {
            (le.parse::<f64>().unwrap() * 1e6).round() as u64
        };
        let count: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        *out.entry(bound).or_insert(0.0) += count;
    }
}

/// Cumulative bucket counts (upper bound -> count) of the admission webhook histogram for
/// one webhook, summed over label sets and API servers.
pub async fn buckets(env: &Env, webhook: &str) -> BTreeMap<u64, f64> {
    let mut out = BTreeMap::new();
    for client in &env.admin {
        let r = plane::raw(client, "GET", "/metrics", None)
            .await
            .expect("metrics");
        let text = r.body.as_str().unwrap_or_default().to_string();
        if std::env::var_os("LBGUARD_BENCH_DEBUG").is_some() {
            for line in text.lines().filter(|l| {
                l.starts_with("apiserver_admission_webhook_admission_duration_seconds_bucket")
                    && l.contains("validate")
            }) {
                eprintln!("{line}");
            }
        }
        add_buckets(
            &text,
            "apiserver_admission_webhook_admission_duration_seconds",
            &format!("name=\"{webhook}\""),
            &mut out,
        );
    }
    out
}

/// Prometheus' histogram_quantile over the difference of two snapshots, in ms.
pub fn quantile(before: &BTreeMap<u64, f64>, after: &BTreeMap<u64, f64>, q: f64) -> (f64, f64) {
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

pub fn share_within(before: &BTreeMap<u64, f64>, after: &BTreeMap<u64, f64>, bound_us: u64) -> f64 {
    let d = |m: &BTreeMap<u64, f64>, b: u64| m.get(&b).copied().unwrap_or(0.0);
    let total = d(after, u64::MAX) - d(before, u64::MAX);
    (d(after, bound_us) - d(before, bound_us)) / total
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Without,
    With,
    ClaimsOff,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Without => "without lbguard's webhooks",
            Mode::With => "with lbguard's webhooks (each create takes a claim)",
            Mode::ClaimsOff => "with lbguard's webhooks, claims off",
        }
    }
}

/// Deletes every Service of `ns` (8 at a time) and waits until no claim is left, so each
/// phase starts from the same cluster.
pub async fn clear(env: &Env, ns: &str, n: usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let client = env.admin[c % env.admin.len()].clone();
        let (next, ns) = (Arc::clone(&next), ns.to_string());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return;
                }
                let path = format!("/api/v1/namespaces/{ns}/services/svc-{i}");
                call(&client, "DELETE", &path, None).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    plane::eventually(
        Duration::from_secs(60),
        "the claims are released",
        || async { (claims_held(env).await == 0).then_some(()) },
    )
    .await;
}

async fn claims_held(env: &Env) -> usize {
    let path = format!(
        "/apis/coordination.k8s.io/v1/namespaces/{}/leases?labelSelector=lbguard.io/claim",
        crate::install::NS
    );
    let r = call(&env.admin[0], "GET", &path, None).await;
    r.body["items"].as_array().map_or(0, |v| v.len())
}

struct Phase {
    round: usize,
    mode: Mode,
    run: Run,
    /// Per webhook: (calls, p50 ms, p99 ms, share within 5 ms).
    hooks: Vec<(f64, f64, f64, f64)>,
    claims: usize,
}

pub async fn run(env: &mut Env) {
    let hooks = ["validate.lbguard.io", "mutate.lbguard.io"];
    let conns_at_start = crate::install::PROXIED.load(Ordering::Relaxed);
    let mut claims_on = true;
    let mut phases = Vec::new();
    // Two interleaved rounds, each phase from the same cluster state (its Services deleted
    // after it), so neither order nor a growing cluster favours one mode.
    for round in 1..=2 {
        for mode in [Mode::Without, Mode::With, Mode::ClaimsOff] {
            match mode {
                Mode::Without => env.lbguard.unregister(&env.admin).await,
                _ => {
                    let want = mode == Mode::With;
                    if claims_on != want {
                        env.lbguard
                            .reconfigure(|c| c["claims"]["enabled"] = want.into())
                            .await;
                        claims_on = want;
                    }
                    env.lbguard.register(&env.admin).await;
                }
            }
            let warm = format!("warm-{round}-{}", mode as u8);
            creates(env, &warm, 50).await;
            clear(env, &warm, 50).await;
            let ns = format!("bench-{round}-{}", mode as u8);
            let before = snapshot(env, &hooks).await;
            let run = creates(env, &ns, SERVICES).await;
            let after = snapshot(env, &hooks).await;
            let claims = claims_held(env).await;
            let stats = before
                .iter()
                .zip(&after)
                .map(|(b, a)| {
                    let (p50, n) = quantile(b, a, 0.50);
                    let (p99, _) = quantile(b, a, 0.99);
                    (n, p50, p99, share_within(b, a, 5000))
                })
                .collect();
            clear(env, &ns, SERVICES).await;
            phases.push(Phase {
                round,
                mode,
                run,
                hooks: stats,
                claims,
            });
        }
    }
    let conns = crate::install::PROXIED.load(Ordering::Relaxed) - conns_at_start;
    // Light load: one client, claims on, so the call is not queued behind the load it is in.
    if !claims_on {
        env.lbguard
            .reconfigure(|c| c["claims"]["enabled"] = true.into())
            .await;
    }
    env.lbguard.register(&env.admin).await;
    const LIGHT: usize = 200;
    let before = snapshot(env, &hooks).await;
    let light = creates_by(env, "bench-light", LIGHT, 1).await;
    let after = snapshot(env, &hooks).await;
    let (light_p50, light_n) = quantile(&before[0], &after[0], 0.50);
    let (light_p99, _) = quantile(&before[0], &after[0], 0.99);
    let light_within = share_within(&before[0], &after[0], 5000);
    clear(env, "bench-light", LIGHT).await;

    println!();
    println!(
        "{SERVICES} Service creates a phase, {CLIENTS} clients over 2 kube-apiservers v1.36.2 on one etcd, 2 lbguard replicas (release build, chart defaults), all on one 2-core host:"
    );
    println!();
    println!("| round | | creates/s | client p50 | client p99 | claims after |");
    println!("|---|---|---:|---:|---:|---:|");
    for p in &phases {
        println!(
            "| {} | {} | {:.0} | {:.1} ms | {:.1} ms | {} |",
            p.round,
            p.mode.name(),
            p.run.per_second,
            p.run.p50.as_secs_f64() * 1e3,
            p.run.p99.as_secs_f64() * 1e3,
            p.claims
        );
    }
    let mean = |mode: Mode| -> f64 {
        let v: Vec<f64> = phases
            .iter()
            .filter(|p| p.mode == mode)
            .map(|p| p.run.per_second)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    println!();
    println!(
        "throughput with the webhooks: {:.0}% of without ({:.0}% with claims off), the rounds' mean; webhook connections opened by the API servers during the phases: {conns}",
        100.0 * mean(Mode::With) / mean(Mode::Without),
        100.0 * mean(Mode::ClaimsOff) / mean(Mode::Without)
    );
    println!();
    println!("CPU seconds a phase (user + system):");
    println!();
    println!("| round | | kube-apiservers | etcd | lbguard replicas | clients + TCP proxy |");
    println!("|---|---|---:|---:|---:|---:|");
    for p in &phases {
        let c = &p.run.cpu;
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
            p.round,
            p.mode.name(),
            c[0],
            c[1],
            c[2],
            c[3]
        );
    }
    println!();
    println!(
        "| round | webhook call (the API servers' histogram) | calls | p50 | p99 | within 5 ms |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    for p in phases.iter().filter(|p| p.mode != Mode::Without) {
        for (h, (n, p50, p99, within)) in hooks.iter().zip(&p.hooks) {
            if *n == 0.0 {
                continue;
            }
            let label = if p.mode == Mode::ClaimsOff {
                ", claims off"
            } else {
                ""
            };
            println!(
                "| {} | {h}{label} | {n:.0} | {p50:.2} ms | {p99:.2} ms | {:.1}% |",
                p.round,
                100.0 * within
            );
        }
    }
    println!();
    println!(
        "Light load, {LIGHT} creates from 1 client, claims on: {:.0} creates/s, client p50 {:.1} ms, p99 {:.1} ms; validate.lbguard.io ({light_n:.0} calls) p50 {light_p50:.2} ms, p99 {light_p99:.2} ms, {:.1}% within 5 ms",
        light.per_second,
        light.p50.as_secs_f64() * 1e3,
        light.p99.as_secs_f64() * 1e3,
        100.0 * light_within
    );
    let registered_mutate = phases
        .iter()
        .any(|p| p.hooks.get(1).is_some_and(|h| h.0 > 0.0));
    if !registered_mutate {
        println!();
        println!(
            "(mutate.lbguard.io is not registered: the chart's defaults set nothing, so webhook.mutate auto leaves it out)"
        );
    }
    println!();
    println!(
        "(the API server's buckets are 5, 25, 100 ms, ...: quantiles are interpolated within a bucket, as Prometheus' histogram_quantile does)"
    );
}

async fn snapshot(env: &Env, hooks: &[&str]) -> Vec<BTreeMap<u64, f64>> {
    let mut out = Vec::new();
    for h in hooks {
        out.push(buckets(env, h).await);
    }
    out
}
