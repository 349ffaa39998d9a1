//! One admission at a time through the router (no sockets), so the figure is lbguard's
//! own: claim protocol, kube client, JSON, the in-memory API's lock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use lbguard::claims::memory::MemoryLeases;
use lbguard::config::Config;
use lbguard::server::metrics::Metrics;
use lbguard::server::{App, router};
use serde_json::Value;
use tower::ServiceExt;

const CREATE: &str = include_str!("../../../tests/fixtures/review-create.json");
const LB_ID: &str = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id";

fn review(i: usize, lb: Option<&str>) -> Vec<u8> {
    let mut r: Value = serde_json::from_str(CREATE).unwrap_or_default();
    let name = format!("svc-{i}");
    r["request"]["uid"] = format!("uid-{i}").into();
    r["request"]["name"] = name.clone().into();
    r["request"]["object"]["metadata"]["name"] = name.into();
    let anns = &mut r["request"]["object"]["metadata"]["annotations"];
    *anns = serde_json::json!({});
    if let Some(lb) = lb {
        anns[LB_ID] = lb.into();
    }
    serde_json::to_vec(&r).unwrap_or_default()
}

/// Times `bodies` one by one; returns (p50 µs, p99 µs, API requests per admission).
async fn time(
    claims: bool,
    store: &MemoryLeases,
    bodies: Vec<Vec<u8>>,
) -> anyhow::Result<(f64, f64, f64)> {
    let mut config = Config::default();
    config.audit.interval = lbguard::config::Seconds(Duration::ZERO);
    config.claims.enabled = claims;
    let mut app = App::new(config, Arc::new(Metrics::new()));
    if claims {
        app.enable_claims(store.client(), "lbguard-system");
    }
    let router = router(app);
    let before = store.requests();
    let n = bodies.len();
    let mut lat = Vec::with_capacity(n);
    for body in bodies {
        let req = axum::http::Request::post("/validate")
            .header("content-type", "application/json")
            .body(Body::from(body))?;
        let t = Instant::now();
        let resp = router.clone().oneshot(req).await?;
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        let v: Value = serde_json::from_slice(&bytes)?;
        anyhow::ensure!(v["response"]["allowed"] == true, "denied: {v}");
    }
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| lat[((lat.len() as f64 - 1.0) * p).round() as usize];
    let api = (store.requests() - before) as f64 / n as f64;
    Ok((pct(0.5), pct(0.99), api))
}

pub async fn run(requests: usize, api_latency: Duration) -> anyhow::Result<()> {
    let store = MemoryLeases::new();
    store.set_delay(api_latency);
    // Each admission takes a fresh load balancer, so each one creates a claim.
    let reused = |tag: &str| -> Vec<Vec<u8>> {
        (0..requests)
            .map(|i| review(i, Some(&format!("lb-{tag}-{i}"))))
            .collect()
    };
    let own: Vec<Vec<u8>> = (0..requests).map(|i| review(i, None)).collect();
    let cases = [
        ("reused LB, claims off", false, reused("off")),
        ("reused LB, claims on", true, reused("on")),
        ("LB the CCM creates, claims on", true, own),
    ];
    println!(
        "api latency {} µs, {requests} admissions per case",
        api_latency.as_micros()
    );
    println!("| case | p50 | p99 | API requests per admission |");
    println!("|---|---:|---:|---:|");
    for (name, on, bodies) in cases {
        let (p50, p99, api) = time(on, &store, bodies).await?;
        println!("| {name} | {p50:.0} µs | {p99:.0} µs | {api:.2} |");
    }
    Ok(())
}
