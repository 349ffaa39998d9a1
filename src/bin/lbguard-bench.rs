//! lbguard's benchmarks.
//! - `http`: lbguard's /validate and /mutate against a bare rustls + axum baseline that only
//!   parses the AdmissionReview and answers "allowed", over N keep-alive HTTPS connections.
//! - `cache`: engine time per request and memory with N Services cached (each size in its
//!   own process, so peak RSS is that size's).
//! - `claims`: what listener claims add to one /validate admission, against the in-memory
//!   Lease API (the API server's own write time comes on top), and that Services without a
//!   reused load balancer send nothing.

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
    /// Throughput and latency of lbguard against a bare TLS baseline.
    Http {
        /// Concurrent keep-alive connections.
        #[arg(long, default_value_t = 32)]
        connections: usize,
        /// Measured time per target (after a 1 s warm-up).
        #[arg(long, default_value = "8s", value_parser = lbguard::server::parse_duration)]
        duration: std::time::Duration,
        /// LoadBalancer Services preloaded into lbguard's cluster view.
        #[arg(long, default_value_t = 0)]
        preload: usize,
        #[arg(long)]
        json: bool,
    },
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
    /// A bare hyper + rustls server (no axum, metrics or logs) that parses each review into
    /// a `serde_json::Value` and answers "allowed": the floor `scripts/bench-http` compares
    /// lbguard with.
    Baseline {
        #[arg(long, default_value = "127.0.0.1:8444")]
        addr: std::net::SocketAddr,
        #[arg(long)]
        tls_cert: std::path::PathBuf,
        #[arg(long)]
        tls_key: std::path::PathBuf,
    },
    /// The cost of listener claims per admission.
    Claims {
        /// Admissions timed per case.
        #[arg(long, default_value_t = 5000)]
        requests: usize,
        /// Latency the in-memory API adds to each of its answers.
        #[arg(long, default_value = "0ms", value_parser = lbguard::server::parse_duration)]
        api_latency: std::time::Duration,
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
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match cli.command {
        Cmd::Baseline {
            addr,
            tls_cert,
            tls_key,
        } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("runtime");
            match runtime.block_on(bare::run(addr, &tls_cert, &tls_key)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("lbguard-bench baseline: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Claims {
            requests,
            api_latency,
        } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("runtime");
            match runtime.block_on(claims::run(requests, api_latency)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("lbguard-bench claims: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Http {
            connections,
            duration,
            preload,
            json,
        } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("runtime");
            match runtime.block_on(http::run(connections, duration, preload)) {
                Ok(report) => {
                    if json {
                        println!(
                            "{}",
                            serde_json::to_string_pretty(&report).unwrap_or_default()
                        );
                    } else {
                        http::print(&report);
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("lbguard-bench http: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
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

mod bare {
    //! The floor: TLS, HTTP/1.1 keep-alive, one JSON parse and a tiny answer.

    use std::convert::Infallible;
    use std::path::Path;
    use std::sync::Arc;

    use axum::body::Bytes;
    use http_body_util::{BodyExt, Full};
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use serde_json::{Value, json};
    use tokio::net::TcpListener;

    pub async fn run(addr: std::net::SocketAddr, cert: &Path, key: &Path) -> anyhow::Result<()> {
        let certs: Vec<CertificateDer> =
            CertificateDer::pem_file_iter(cert)?.collect::<Result<_, _>>()?;
        let key = PrivateKeyDer::from_pem_file(key)?;
        let mut tls = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = TcpListener::bind(addr).await?;
        eprintln!("baseline serving on {}", listener.local_addr()?);
        loop {
            let (tcp, _) = listener.accept().await?;
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                    let body = req.into_body().collect().await.map(|b| b.to_bytes());
                    let review: Value = body
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok())
                        .unwrap_or(Value::Null);
                    let answer = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                        "response": {"uid": review["request"]["uid"], "allowed": true}});
                    let mut resp = hyper::Response::new(Full::new(Bytes::from(answer.to_string())));
                    resp.headers_mut().insert(
                        "content-type",
                        hyper::header::HeaderValue::from_static("application/json"),
                    );
                    Ok::<_, Infallible>(resp)
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }
}

mod claims {
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

    const CREATE: &str = include_str!("../../tests/fixtures/review-create.json");
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
}

mod http {
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

    const CREATE: &str = include_str!("../../tests/fixtures/review-create.json");
    const UPDATE: &str = include_str!("../../tests/fixtures/review-update.json");

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
                v["request"]["object"]["metadata"]["name"] =
                    json!(format!("bench-{}-{i}", out.len()));
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

    pub async fn run(
        connections: usize,
        duration: Duration,
        preload: usize,
    ) -> anyhow::Result<Report> {
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
            lbguard.app.cluster.apply_service(&super::service(i));
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
            peak_rss_mib: super::status_kib("VmHWM:") / 1024.0,
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
}
