//! Benchmarks (`scripts/bench-e2e`), ignored as tests: the refresh at scale and a flood of random ids.

use super::*;

/// Benchmark (`scripts/bench-e2e refresh`, not a test): calls per background round against
/// the number of load balancers Services name and the number of replicas, on the mock's bulk
/// account, with the refresh's own code and the cloud's list calls. `alibaba-nlb` is ACK's
/// NLBs spread over `LBGUARD_BENCH_VPCS` VPCs (one server group each), with the calls of each
/// list operation. `LBGUARD_BENCH_SIZES` picks the numbers of load balancers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: scripts/bench-e2e refresh"]
async fn bench_refresh_at_scale() {
    use lbguard::cloud::shard::Membership;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let mock = Mock::start("loadBalancers: []")
        .await
        .expect("the clouds' Python SDKs (scripts/test installs them)");
    let list = |var: &str, default: &str| -> Vec<String> {
        std::env::var(var)
            .unwrap_or_else(|_| default.to_string())
            .split(',')
            .map(str::to_string)
            .collect()
    };
    let sizes = |default: &str| -> Vec<usize> {
        list("LBGUARD_BENCH_SIZES", default)
            .iter()
            .map(|n| n.parse().unwrap())
            .collect()
    };
    let vpc_counts: Vec<usize> = list("LBGUARD_BENCH_VPCS", "1,4")
        .iter()
        .map(|n| n.parse().unwrap())
        .collect();
    // (provider, VPCs of the NLBs; none for the provider's bulk CLBs)
    let mut scenarios: Vec<(Provider, Option<usize>)> = Vec::new();
    for p in list(
        "LBGUARD_BENCH_PROVIDERS",
        "alibaba,huawei,volcengine,ctyun,alibaba-nlb",
    ) {
        if p == "alibaba-nlb" {
            scenarios.extend(vpc_counts.iter().map(|v| (Provider::Alibaba, Some(*v))));
        } else {
            scenarios.push((p.parse().unwrap(), None));
        }
    }
    const NLB_OPS: [&str; 3] = ["ListLoadBalancers", "ListListeners", "ListServerGroups"];
    let mut nlb_rows = Vec::new();
    println!();
    println!(
        "| provider | load balancers | replicas | round 1 (each replica reads all) | rounds 2-7: calls a round, all replicas (max) | busiest replica, rounds 2-7 (max) | at qps 5 shared, that replica needs |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (provider, vpcs) in scenarios {
        // A round lists each VPC's server groups once; 5,000 NLBs in one VPC hold more groups
        // than a region's quota (3,000), a worst case that the client's page bound still reads.
        let default = if vpcs.is_some() {
            "500,1000,2000,5000"
        } else {
            "500,1000,5000"
        };
        for n in sizes(default) {
            mock.control(
                "state",
                json!({"loadBalancers": [], "region": REGION, "projectId": "p-1"}),
            )
            .await;
            let prefix = match vpcs {
                Some(v) => {
                    mock.control(
                        "bulk",
                        json!({"provider": provider.as_str(), "count": n, "kind": "nlb",
                               "vpcs": v, "serverGroups": 1}),
                    )
                    .await;
                    "nlb"
                }
                None => {
                    mock.control("bulk", json!({"provider": provider.as_str(), "count": n}))
                        .await;
                    "lb"
                }
            };
            let creds = creds_dir(provider, AK, SK);
            let cfg = lbguard::engine::parse_config(
                &cloud_config(provider, &mock, creds.path(), "    qps: 100000\n"),
                "t",
            )
            .unwrap();
            let named: std::collections::HashSet<String> =
                (0..n).map(|i| format!("{prefix}-bulk-{i}")).collect();
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
                // Per NLB list operation: round 1, and the later rounds' max (all replicas).
                let (mut first_ops, mut worst_ops) = ([0u64; 3], [0u64; 3]);
                let started = Instant::now();
                let rounds = if replicas == 1 { 2 } else { 7 };
                for round in 0..rounds as u64 {
                    offset.store(round * 300, Ordering::SeqCst);
                    let mut per_replica = Vec::new();
                    let mut ops = [0u64; 3];
                    for (c, _) in &fleet {
                        mock.control("reset", json!({})).await;
                        c.refresh_round(&named).await;
                        let calls = mock.control("calls", json!({})).await;
                        for (k, op) in NLB_OPS.iter().enumerate() {
                            ops[k] += library::calls_to(&calls, provider, op);
                        }
                        per_replica.push(all_calls(&mock).await);
                    }
                    let all: u64 = per_replica.iter().sum();
                    if round == 0 {
                        first = all;
                        first_ops = ops;
                    } else {
                        worst_all = worst_all.max(all);
                        worst_one = worst_one.max(*per_replica.iter().max().unwrap());
                        for (w, o) in worst_ops.iter_mut().zip(ops) {
                            *w = (*w).max(o);
                        }
                    }
                }
                for (c, _) in &fleet {
                    let facts = c.snapshot();
                    assert_eq!(facts.len(), n, "{provider} {n}: every fact read");
                    if vpcs.is_some_and(|v| n.div_ceil(v) <= 3000) {
                        // Within the region's quota every NLB's VPC's groups are read to the end.
                        assert!(facts.iter().all(|(_, f)| matches!(f.as_ref(),
                            lbguard::cloud::Fact::Found(lb) if lb.server_groups.as_ref().is_some_and(|g| !g.is_empty()))));
                    }
                }
                eprintln!("{provider} {n} x{replicas}: {:?}", started.elapsed());
                // The bucket refills at qps / replicas; the refresh waits for its tokens.
                let secs = worst_one as f64 / (5.0 / replicas as f64);
                let label = match vpcs {
                    Some(v) => format!("{provider} (NLB, {v} VPCs)"),
                    None => provider.to_string(),
                };
                println!(
                    "| {label} | {n} | {replicas} | {first} | {worst_all} | {worst_one} | {:.0} s{} |",
                    secs,
                    if secs <= 300.0 { "" } else { " (over 5 min)" }
                );
                if let Some(v) = vpcs {
                    let f = first_ops.map(|c| c.to_string()).join(" / ");
                    let w = worst_ops.map(|c| c.to_string()).join(" / ");
                    nlb_rows.push(format!(
                        "| {n} | {v} | {} | {replicas} | {f} / {first} | {w} / {worst_all} |",
                        n.div_ceil(v)
                    ));
                }
            }
        }
    }
    if !nlb_rows.is_empty() {
        println!();
        println!(
            "| NLBs | VPCs | server groups a VPC | replicas | round 1: ListLoadBalancers / ListListeners / ListServerGroups / all | rounds 2-7, all replicas (max): the same |"
        );
        println!("|---:|---:|---:|---:|---:|---:|");
        for row in nlb_rows {
            println!("{row}");
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
