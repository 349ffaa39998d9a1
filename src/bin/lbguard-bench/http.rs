//! The HTTP benchmark: same process, same TLS stack, same client for every target.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::routing::post;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use lbguard::server::devcert::generate;
use lbguard::server::{ServerOptions, start};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

const CREATE: &str = include_str!("../../../tests/fixtures/review-create.json");
const UPDATE: &str = include_str!("../../../tests/fixtures/review-update.json");

/// CREATE and UPDATE reviews for each provider, as a kube-apiserver sends them.
fn bodies() -> Vec<Bytes> {
    let providers: [&[(&str, &str)]; 4] = [
        &[
            (
                "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id",
                "lb-bench",
            ),
            (
                "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type",
                "intranet",
            ),
        ],
        &[
            (
                "service.beta.kubernetes.io/ctyun-loadbalancer-id",
                "lb-bench",
            ),
            (
                "service.beta.kubernetes.io/ctyun-loadbalancer-address-type",
                "intranet",
            ),
        ],
        &[
            ("kubernetes.io/elb.id", "elb-bench"),
            ("kubernetes.io/elb.class", "performance"),
            ("kubernetes.io/elb.protocol-port", "http:80"),
        ],
        &[
            (
                "service.beta.kubernetes.io/volcengine-loadbalancer-id",
                "clb-bench",
            ),
            (
                "service.beta.kubernetes.io/volcengine-loadbalancer-server-group-id",
                "rsp-1:80",
            ),
            (
                "service.beta.kubernetes.io/volcengine-loadbalancer-weight",
                "50",
            ),
        ],
    ];
    let mut out = Vec::new();
    for anns in providers {
        for (i, text) in [CREATE, UPDATE].into_iter().enumerate() {
            let mut v: Value = serde_json::from_str(text).expect("fixture");
            for which in ["object", "oldObject"] {
                if let Some(meta) = v["request"][which]["metadata"].as_object_mut() {
                    let a = meta.entry("annotations").or_insert_with(|| json!({}));
                    for (k, val) in anns.iter() {
                        a[*k] = json!(val);
                    }
                }
            }
            // Each body its own Service, so reservations never collide.
            v["request"]["object"]["metadata"]["name"] = json!(format!("bench-{}-{i}", out.len()));
            v["request"]["name"] = json!(format!("bench-{}-{i}", out.len()));
            v["request"]["dryRun"] = json!(true);
            out.push(Bytes::from(serde_json::to_vec(&v).expect("json")));
        }
    }
    out
}

/// The floor: parse the AdmissionReview, answer allowed. Same TLS and HTTP stack.
async fn baseline(body: Bytes) -> axum::Json<Value> {
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let uid = review["request"]["uid"].clone();
    axum::Json(
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": uid, "allowed": true}}),
    )
}

#[derive(Debug, Serialize)]
pub struct Run {
    pub target: String,
    pub requests: usize,
    pub errors: usize,
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub connections: usize,
    pub seconds: f64,
    pub preloaded_services: usize,
    pub runs: Vec<Run>,
    pub validate_throughput_ratio: f64,
    pub validate_p99_ratio: f64,
    pub mutate_throughput_ratio: f64,
    pub mutate_p99_ratio: f64,
    pub peak_rss_mib: f64,
}

async fn connect(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let tls = connector
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    Ok(send)
}

/// `connections` keep-alive connections, each sending back to back until `until`.
async fn drive(
    connector: Arc<tokio_rustls::TlsConnector>,
    addr: SocketAddr,
    path: &'static str,
    bodies: Arc<Vec<Bytes>>,
    connections: usize,
    until: Instant,
) -> anyhow::Result<(Vec<u32>, usize)> {
    let mut tasks = Vec::new();
    for c in 0..connections {
        let (connector, bodies) = (Arc::clone(&connector), Arc::clone(&bodies));
        tasks.push(tokio::spawn(async move {
            let mut send = connect(&connector, addr).await?;
            let (mut lat, mut errors, mut i) = (Vec::with_capacity(1 << 14), 0usize, c);
            while Instant::now() < until {
                let body = bodies[i % bodies.len()].clone();
                i += 1;
                let req = hyper::Request::post(path)
                    .header("host", "localhost")
                    .header("content-type", "application/json")
                    .body(Full::new(body))?;
                let t = Instant::now();
                send.ready().await?;
                match send.send_request(req).await {
                    Ok(resp) => {
                        let ok = resp.status().is_success();
                        let _ = resp.into_body().collect().await?;
                        lat.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                        if !ok {
                            errors += 1;
                        }
                    }
                    Err(_) => {
                        errors += 1;
                        send = connect(&connector, addr).await?;
                    }
                }
            }
            anyhow::Ok((lat, errors))
        }));
    }
    let (mut all, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (lat, e) = t.await??;
        all.extend(lat);
        errors += e;
    }
    Ok((all, errors))
}

async fn measure(
    target: &str,
    connector: &Arc<tokio_rustls::TlsConnector>,
    addr: SocketAddr,
    path: &'static str,
    bodies: &Arc<Vec<Bytes>>,
    connections: usize,
    duration: Duration,
) -> anyhow::Result<Run> {
    drive(
        Arc::clone(connector),
        addr,
        path,
        Arc::clone(bodies),
        connections,
        Instant::now() + Duration::from_secs(1),
    )
    .await?;
    let started = Instant::now();
    let (mut lat, errors) = drive(
        Arc::clone(connector),
        addr,
        path,
        Arc::clone(bodies),
        connections,
        started + duration,
    )
    .await?;
    let secs = started.elapsed().as_secs_f64();
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0) as f64
    };
    Ok(Run {
        target: target.into(),
        requests: lat.len(),
        errors,
        rps: lat.len() as f64 / secs,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        p999_us: pct(0.999),
    })
}

pub async fn run(connections: usize, duration: Duration, preload: usize) -> anyhow::Result<Report> {
    let dir = tempfile_dir()?;
    let certs = generate(&["localhost"])?;
    let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert, &certs.cert_pem)?;
    std::fs::write(&key, &certs.key_pem)?;

    let config = lbguard::engine::parse_config(
        "defaults:\n  volcengineWeight: 100\n  huaweiElbClass: performance\naudit:\n  interval: 0s\ncluster:\n  version: v1.31.0\n",
        "bench",
    )?;
    let (_stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let lbguard = start(
        ServerOptions {
            reload_interval: Duration::from_secs(3600),
            shutdown_grace: Duration::from_secs(1),
            ..ServerOptions::local(config, cert.clone(), key.clone())
        },
        async move {
            let _ = stop_rx.await;
        },
    )
    .await?;
    for i in 0..preload {
        lbguard.app.cluster.apply_service(&crate::cache::service(i));
    }

    let resolver = lbguard::server::tls::ReloadingResolver::load(&cert, &key)?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base_addr = listener.local_addr()?;
    let router = axum::Router::new().route("/validate", post(baseline));
    tokio::spawn(lbguard::server::serve_tls(
        listener,
        lbguard::server::tls::server_config(resolver),
        router,
        std::future::pending(),
        lbguard::server::Listen {
            grace: Duration::from_secs(1),
            request_timeout: Duration::from_secs(10),
            max_connections: lbguard::server::MAX_CONNECTIONS,
        },
    ));

    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(certs.ca_pem.as_bytes())?)?;
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = Arc::new(tokio_rustls::TlsConnector::from(Arc::new(client)));
    let bodies = Arc::new(bodies());

    // Interleaved, twice each, so drift on a noisy machine hits every target alike.
    let mut runs = Vec::new();
    for _ in 0..2 {
        runs.push(
            measure(
                "baseline /validate",
                &connector,
                base_addr,
                "/validate",
                &bodies,
                connections,
                duration / 2,
            )
            .await?,
        );
        runs.push(
            measure(
                "lbguard /validate",
                &connector,
                lbguard.addr,
                "/validate",
                &bodies,
                connections,
                duration / 2,
            )
            .await?,
        );
        runs.push(
            measure(
                "lbguard /mutate",
                &connector,
                lbguard.addr,
                "/mutate",
                &bodies,
                connections,
                duration / 2,
            )
            .await?,
        );
    }
    let runs = merge(runs);
    let _ = std::fs::remove_dir_all(&dir);
    let by = |t: &str| {
        runs.iter()
            .find(|r| r.target == t)
            .map(|r| (r.rps, r.p99_us))
            .unwrap_or((f64::NAN, f64::NAN))
    };
    let (b, v, m) = (
        by("baseline /validate"),
        by("lbguard /validate"),
        by("lbguard /mutate"),
    );
    Ok(Report {
        connections,
        seconds: duration.as_secs_f64(),
        preloaded_services: preload,
        validate_throughput_ratio: v.0 / b.0,
        validate_p99_ratio: v.1 / b.1,
        mutate_throughput_ratio: m.0 / b.0,
        mutate_p99_ratio: m.1 / b.1,
        runs,
        peak_rss_mib: crate::cache::status_kib("VmHWM:") / 1024.0,
    })
}

/// Averages the two rounds of each target (requests and rates add up; percentiles
/// are averaged, which is close enough for two rounds of equal length).
fn merge(runs: Vec<Run>) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for r in runs {
        match out.iter_mut().find(|o| o.target == r.target) {
            Some(o) => {
                o.requests += r.requests;
                o.errors += r.errors;
                o.rps = (o.rps + r.rps) / 2.0;
                o.p50_us = (o.p50_us + r.p50_us) / 2.0;
                o.p99_us = (o.p99_us + r.p99_us) / 2.0;
                o.p999_us = (o.p999_us + r.p999_us) / 2.0;
            }
            None => out.push(r),
        }
    }
    out
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("lbguard-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

pub fn print(r: &Report) {
    println!(
        "{} connections, {:.0} s per target, {} Services preloaded",
        r.connections, r.seconds, r.preloaded_services
    );
    println!("| target | requests/s | p50 | p99 | p99.9 | errors |");
    println!("|---|---:|---:|---:|---:|---:|");
    for run in &r.runs {
        println!(
            "| {} | {:.0} | {:.0} µs | {:.0} µs | {:.0} µs | {} |",
            run.target, run.rps, run.p50_us, run.p99_us, run.p999_us, run.errors
        );
    }
    println!();
    println!(
        "/validate vs baseline: throughput {:.0}% (target >= 80%), p99 {:.2}x (target <= 1.25x)",
        r.validate_throughput_ratio * 100.0,
        r.validate_p99_ratio
    );
    println!(
        "/mutate   vs baseline: throughput {:.0}%, p99 {:.2}x",
        r.mutate_throughput_ratio * 100.0,
        r.mutate_p99_ratio
    );
    println!("peak RSS {:.1} MiB", r.peak_rss_mib);
}
