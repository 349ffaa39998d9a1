//! The `cache` benchmark: engine time per request and memory with N Services cached.

use std::time::Instant;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lbguard::cluster::ClusterState;
use lbguard::config::Config;
use lbguard::engine::{EmptyInventory, Input, Operation, UserInfo, Versions, evaluate};
use serde::{Deserialize, Serialize};

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
pub struct Row {
    pub services: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub cache_rss_mib: f64,
    pub peak_rss_mib: f64,
}

pub fn status_kib(field: &str) -> f64 {
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

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn measure(n: usize, requests: usize) -> Row {
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

pub fn print(rows: &[Row]) {
    println!("| cached Services | engine p50 | engine p99 | max | cache RSS | peak RSS |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} MiB | {:.1} MiB |",
            r.services, r.p50_us, r.p99_us, r.max_us, r.cache_rss_mib, r.peak_rss_mib
        );
    }
}
