//! lbguard's benchmarks. `cache`: engine time per request and memory with N Services
//! cached (each size in its own process, so peak RSS is that size's).

use std::process::{Command, ExitCode};
use std::time::Instant;

use clap::{Parser, Subcommand};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lbguard::cluster::ClusterState;
use lbguard::config::Config;
use lbguard::engine::{EmptyInventory, Input, Operation, UserInfo, Versions, evaluate};
use serde::{Deserialize, Serialize};

#[derive(Parser)]
#[command(name = "lbguard-bench")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Engine time per request and cache memory at several cluster sizes.
    Cache {
        /// Cluster sizes (cached LoadBalancer Services).
        #[arg(long, value_delimiter = ',', default_value = "100,10000,100000")]
        sizes: Vec<usize>,
        /// Requests timed at each size.
        #[arg(long, default_value_t = 20000)]
        requests: usize,
        #[arg(long)]
        json: bool,
        /// Internal: measure one size in this process.
        #[arg(long, hide = true)]
        one: Option<usize>,
    },
}

const ALI: &str = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-";

/// Service `i`: 5 Services per load balancer, 2 ports each, 100 namespaces.
pub fn service(i: usize) -> Service {
    let lb = i / 5;
    let slot = (i % 5) as i32;
    Service {
        metadata: ObjectMeta {
            name: Some(format!("svc-{i}")),
            namespace: Some(format!("ns-{}", i % 100)),
            uid: Some(format!("00000000-0000-0000-0000-{i:012}")),
            annotations: Some(
                [
                    (format!("{ALI}id"), format!("lb-{lb:08}")),
                    (format!("{ALI}address-type"), "intranet".to_string()),
                    (
                        "kubectl.kubernetes.io/last-applied-configuration".to_string(),
                        "x".repeat(600),
                    ),
                ]
                .into(),
            ),
            labels: Some([("app".to_string(), format!("app-{i}"))].into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            ports: Some(vec![
                ServicePort {
                    name: Some("http".into()),
                    port: 8000 + slot * 2,
                    protocol: Some("TCP".into()),
                    ..Default::default()
                },
                ServicePort {
                    name: Some("https".into()),
                    port: 8001 + slot * 2,
                    protocol: Some("TCP".into()),
                    ..Default::default()
                },
            ]),
            external_traffic_policy: Some("Cluster".into()),
            ..Default::default()
        }),
        status: None,
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Row {
    services: usize,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    cache_rss_mib: f64,
    peak_rss_mib: f64,
}

fn status_kib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0.0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn measure(n: usize, requests: usize) -> Row {
    let config = Config::default();
    let versions = Versions::from_config(&config);
    let before = status_kib("VmRSS:");
    let state = ClusterState::new(config.provider);
    for i in 0..n {
        // One Service at a time, as watch events arrive: the full object is dropped.
        state.apply_service(&service(i));
    }
    let cache = status_kib("VmRSS:") - before;
    // A new Service on an existing load balancer, on free ports: every rule runs fully.
    let mut probe = service(n / 2);
    probe.metadata.name = Some("probe".into());
    let ports = probe
        .spec
        .as_mut()
        .and_then(|s| s.ports.as_mut())
        .expect("ports");
    ports[0].port = 9000;
    ports[1].port = 9001;
    let input =
        Input::new(Operation::Create, Some(probe), None, UserInfo::default()).expect("input");
    let mut times = Vec::with_capacity(requests);
    for _ in 0..requests {
        let t = Instant::now();
        let v = evaluate(&input, &config, &versions, &state, &EmptyInventory);
        times.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(v.allowed(), "{:?}", v.violations);
    }
    times.sort_by(f64::total_cmp);
    Row {
        services: n,
        p50_us: percentile(&times, 0.50),
        p99_us: percentile(&times, 0.99),
        max_us: *times.last().unwrap_or(&0.0),
        cache_rss_mib: cache / 1024.0,
        peak_rss_mib: status_kib("VmHWM:") / 1024.0,
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Cache {
            sizes,
            requests,
            json,
            one,
        } => {
            if let Some(n) = one {
                println!(
                    "{}",
                    serde_json::to_string(&measure(n, requests)).unwrap_or_default()
                );
                return ExitCode::SUCCESS;
            }
            let exe = std::env::current_exe().expect("own path");
            let mut rows = Vec::new();
            for n in sizes {
                let out = Command::new(&exe)
                    .args([
                        "cache",
                        "--one",
                        &n.to_string(),
                        "--requests",
                        &requests.to_string(),
                    ])
                    .output()
                    .expect("run child");
                match serde_json::from_slice::<Row>(&out.stdout) {
                    Ok(r) => rows.push(r),
                    Err(e) => {
                        eprintln!(
                            "size {n} failed: {e}: {}",
                            String::from_utf8_lossy(&out.stderr)
                        );
                        return ExitCode::FAILURE;
                    }
                }
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&rows).unwrap_or_default()
                );
            } else {
                println!(
                    "| cached Services | engine p50 | engine p99 | max | cache RSS | peak RSS |"
                );
                println!("|---:|---:|---:|---:|---:|---:|");
                for r in &rows {
                    println!(
                        "| {} | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} MiB | {:.1} MiB |",
                        r.services, r.p50_us, r.p99_us, r.max_us, r.cache_rss_mib, r.peak_rss_mib
                    );
                }
            }
            ExitCode::SUCCESS
        }
    }
}
