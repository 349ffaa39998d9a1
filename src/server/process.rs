//! Start-up of the `lbguard serve` process: TLS, the inventory, the cloud source, claims,
//! the watches and both listeners, wired once; `tasks` holds what then runs in the
//! background, `command` the flags and the process around it.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::TcpListener;

use super::listen::{Listen, serve_tls};
use super::metrics::{self, Metrics};
use super::metrics_auth;
use super::routes::{admission_service, metrics_router};
use super::state::{App, AppState, LogDecisions, MAX_CONNECTIONS, MAX_INFLIGHT, REQUEST_TIMEOUT};
use super::tasks::{
    WATCH_RETRY_MAX, WATCH_RETRY_MIN, refresh_ccm_version, refresh_fleet, spawn_audit,
    spawn_ccm_refresh,
};
use super::tls::{self, ReloadingResolver};
use crate::cluster::watch::{Kinds, Retry};
use crate::config::Config;
use crate::inventory::InventoryStore;

/// Where claims live: config, then the pod's namespace (downward API), then the client's.
pub fn claims_namespace(config: &Config, client: &kube::Client) -> String {
    config
        .claims
        .namespace
        .clone()
        .or_else(|| {
            std::env::var("POD_NAMESPACE")
                .ok()
                .filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| client.default_namespace().to_string())
}

/// Everything `start` needs, so tests can run a real server in-process.
pub struct ServerOptions {
    pub config: Config,
    pub addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// How often the certificate and inventory files are checked for changes.
    pub reload_interval: Duration,
    pub shutdown_grace: Duration,
    pub request_timeout: Duration,
    /// A Kubernetes client: watches, `/version`, Events. `None` runs standalone.
    pub client: Option<kube::Client>,
    /// Where listener claims are written when not through `client` (an in-memory API in
    /// tests and the benchmark).
    pub claims_client: Option<kube::Client>,
    pub log_decisions: LogDecisions,
    /// Serve the metrics port over TLS, for callers the API server authenticates and
    /// authorizes (TokenReview, SubjectAccessReview).
    pub metrics_secure: bool,
    /// Where those reviews go when not through `client` (tests).
    pub metrics_auth_client: Option<kube::Client>,
    /// After the shutdown signal: how long to keep serving (not ready) before closing the
    /// listener.
    pub shutdown_delay: Duration,
    /// Open connections at most, per port.
    pub max_connections: usize,
    /// Admission requests evaluated at once; more wait.
    pub max_inflight: usize,
    /// PEM CA certificates trusted for the cloud API besides the system's (tests, a private
    /// endpoint); processes can also set `SSL_CERT_FILE`.
    pub cloud_roots: Vec<u8>,
}

impl ServerOptions {
    /// Loopback on free ports, no metrics listener, no cluster, default limits: what tests
    /// and benchmarks start from (`ServerOptions { .., ..ServerOptions::local(..) }`).
    pub fn local(config: Config, cert: PathBuf, key: PathBuf) -> Self {
        Self {
            config,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics_addr: None,
            cert,
            key,
            reload_interval: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
            request_timeout: REQUEST_TIMEOUT,
            client: None,
            claims_client: None,
            log_decisions: LogDecisions::Findings,
            metrics_secure: false,
            metrics_auth_client: None,
            shutdown_delay: Duration::ZERO,
            max_connections: MAX_CONNECTIONS,
            max_inflight: MAX_INFLIGHT,
            cloud_roots: Vec::new(),
        }
    }
}

/// A running server: its addresses and the task that ends when it has shut down.
pub struct Running {
    pub addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    pub app: AppState,
    pub done: tokio::task::JoinHandle<()>,
}

/// The cloud source: credentials loaded (a bad first set is an error), re-read like the
/// certificates. Reaching the cloud is not needed to start or to be ready.
fn start_cloud(
    config: &Config,
    metrics: &Metrics,
    reload_interval: Duration,
    roots: &[u8],
) -> anyhow::Result<Arc<crate::cloud::Cloud>> {
    use anyhow::Context;
    let crate::vocab::config::ProviderChoice::Fixed(provider) = config.provider else {
        anyhow::bail!("inventory.cloud.enabled needs a fixed provider");
    };
    let cfg = &config.inventory.cloud;
    let dir = cfg.credentials_dir.as_deref().map(std::path::Path::new);
    let creds = crate::cloud::creds::CredStore::configured(provider, dir, &cfg.credentials, &|n| {
        std::env::var(n).ok()
    })
    .context("loading the cloud credentials")?;
    tracing::info!(source = %creds.describe(), "cloud credentials");
    if creds.has_files() {
        let me = Arc::clone(&creds);
        crate::reload::spawn_poll(
            "cloud credentials",
            reload_interval,
            metrics.cloud_credential_reloads.clone(),
            metrics.cloud_credential_reload_errors.clone(),
            move || me.reload(),
        );
    }
    // inventory.cloud.qps is all replicas' budget; the chart says how many there are.
    let replicas = std::env::var("LBGUARD_REPLICAS")
        .ok()
        .and_then(|r| r.trim().parse::<u32>().ok())
        .filter(|r| *r > 0)
        .unwrap_or(1);
    let proxy = crate::cloud::proxy::Proxy::from_env(&|n| std::env::var(n).ok())?;
    match &proxy {
        Some(p) => {
            tracing::info!(proxy = %p.host(), no_proxy = %p.no_proxy(), "cloud API calls go through an HTTPS proxy (CONNECT); metadata services and loopback never do")
        }
        None => tracing::info!("cloud API calls go direct (no HTTPS_PROXY)"),
    }
    let roots = crate::cloud::http::with_ca_file(roots, cfg.ca_file.as_deref())?;
    let http = crate::cloud::http::Http::with_proxy(&roots, proxy)
        .context("setting up the cloud API client")?;
    let cloud = crate::cloud::Cloud::with_http(
        provider,
        cfg,
        config.cluster.id.clone(),
        creds,
        http,
        metrics.cloud.clone(),
        replicas,
        Arc::new(std::time::Instant::now),
    )
    .context("setting up the cloud API client")?;
    cloud.warm_credentials();
    tracing::info!(
        provider = %provider,
        region = cfg.region.as_deref().unwrap_or("(from the nodes)"),
        endpoint = cfg.endpoint.as_deref().unwrap_or("(public)"),
        qps_per_replica = f64::from(cfg.qps) / f64::from(replicas),
        "load balancer facts from the cloud API"
    );
    Ok(cloud)
}

/// Loads TLS and the inventory (failing on bad first files), connects the cluster view,
/// binds, and serves until `shutdown`.
pub async fn start(
    opts: ServerOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Running> {
    use anyhow::Context;
    let metrics = Arc::new(Metrics::new());
    let resolver =
        ReloadingResolver::load(&opts.cert, &opts.key).context("loading the TLS certificate")?;
    resolver.spawn_poller(opts.reload_interval, &metrics);
    let inventory = match &opts.config.inventory.path {
        None => None,
        Some(p) => {
            let store = InventoryStore::load(std::path::Path::new(p))
                .context("loading the load balancer inventory")?;
            metrics
                .inventory_load_balancers
                .set(store.snapshot().len() as i64);
            let (me, gauge) = (Arc::clone(&store), metrics.inventory_load_balancers.clone());
            crate::reload::spawn_poll(
                "load balancer inventory",
                opts.reload_interval,
                metrics.inventory_reloads.clone(),
                metrics.inventory_reload_errors.clone(),
                move || {
                    let swapped = me.reload()?;
                    gauge.set(me.snapshot().len() as i64);
                    Ok::<bool, crate::inventory::InventoryError>(swapped)
                },
            );
            Some(store)
        }
    };
    let mut config = opts.config;
    if let (Some(client), None) = (&opts.client, &config.cluster.version) {
        match tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await {
            Ok(Ok(info)) => {
                tracing::info!(version = %info.git_version, "cluster version from the API server");
                config.cluster.version = Some(info.git_version);
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot read the cluster version; version rules will warn")
            }
            Err(_) => {
                tracing::warn!("the API server's /version did not answer; version rules will warn")
            }
        }
    }
    let cloud = if config.inventory.cloud.enabled {
        Some(start_cloud(
            &config,
            &metrics,
            opts.reload_interval,
            &opts.cloud_roots,
        )?)
    } else {
        None
    };
    let mut app = App::new(config, Arc::clone(&metrics));
    if let Some(a) = Arc::get_mut(&mut app) {
        a.request_timeout = opts.request_timeout;
        a.log_decisions = opts.log_decisions;
        a.inflight = Arc::new(tokio::sync::Semaphore::new(opts.max_inflight.max(1)));
        a.inventory = inventory;
        a.cloud = cloud.clone();
    }
    if let Some(cloud) = &cloud {
        let cluster = Arc::clone(&app.cluster);
        cloud.set_region_source(Arc::new(move || cluster.region()));
        let (cluster, provider) = (Arc::clone(&app.cluster), cloud.provider());
        cloud.spawn_refresh(move || cluster.lb_ids(provider));
    }
    let fleet = cloud
        .as_ref()
        .and_then(|c| refresh_fleet(c, opts.client.as_ref()));
    if let Some(client) = opts.claims_client.as_ref().or(opts.client.as_ref())
        && app.config.claims.enabled
    {
        let namespace = claims_namespace(&app.config, client);
        tracing::info!(namespace = %namespace, "listener claims enabled");
        app.enable_claims(client.clone(), &namespace);
    }
    // Sent when the server stops taking connections (the metrics listener stops with it);
    // the audit task is aborted at the same moment.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut audit = None;
    if let Some(client) = &opts.client {
        let m = Arc::clone(&metrics);
        crate::cluster::watch::spawn(
            client.clone(),
            Arc::clone(&app.cluster),
            Kinds::for_config(&app.config),
            Retry::new(WATCH_RETRY_MIN, WATCH_RETRY_MAX),
            Arc::new(move |kind| {
                m.watch_errors
                    .get_or_create(&metrics::KindLabels { kind })
                    .inc();
            }),
        );
        if app.config.exceptions.enabled {
            let m = Arc::clone(&metrics);
            crate::cluster::exceptions::spawn(
                client.clone(),
                Arc::clone(&app.exceptions),
                Retry::new(WATCH_RETRY_MIN, Duration::from_secs(30)),
                Arc::new(move |kind| {
                    m.watch_errors
                        .get_or_create(&metrics::KindLabels { kind })
                        .inc();
                }),
            );
        }
        audit = spawn_audit(Arc::clone(&app), Some(client.clone()));
    }
    if let Some(client) = &opts.client
        && app.config.ccm.auto()
    {
        refresh_ccm_version(client, &app).await;
        spawn_ccm_refresh(client.clone(), Arc::downgrade(&app));
    }
    let listener = TcpListener::bind(opts.addr)
        .await
        .with_context(|| format!("binding {}", opts.addr))?;
    let addr = listener.local_addr()?;
    let metrics_auth = match (
        opts.metrics_secure,
        opts.metrics_auth_client.as_ref().or(opts.client.as_ref()),
    ) {
        (false, _) => None,
        (true, Some(c)) => Some(metrics_auth::MetricsAuth::new(c.clone())),
        (true, None) => anyhow::bail!(
            "--metrics-secure needs a cluster to check callers' tokens (TokenReview, SubjectAccessReview); drop --standalone or use --metrics-secure=false"
        ),
    };
    let metrics_addr = match opts.metrics_addr {
        Some(a) => {
            let l = TcpListener::bind(a)
                .await
                .with_context(|| format!("binding metrics {a}"))?;
            let bound = l.local_addr()?;
            let mut rx = stop_rx.clone();
            let stop = async move {
                let _ = rx.wait_for(|s| *s).await;
            };
            let secure = metrics_auth.is_some();
            let router = metrics_router(Arc::clone(&app), metrics_auth);
            if secure {
                let tls = tls::server_config(Arc::clone(&resolver));
                let listen = Listen {
                    grace: Duration::from_secs(1),
                    request_timeout: opts.request_timeout,
                    max_connections: 64,
                };
                tokio::spawn(serve_tls(l, tls, router, stop, listen));
            } else {
                tokio::spawn(async move {
                    let _ = axum::serve(l, router).with_graceful_shutdown(stop).await;
                });
            }
            Some(bound)
        }
        None => None,
    };
    app.ready.store(true, Ordering::Release);
    let state = Arc::clone(&app);
    let tls = tls::server_config(resolver);
    let delay = opts.shutdown_delay;
    let listen = Listen {
        grace: opts.shutdown_grace,
        request_timeout: opts.request_timeout,
        max_connections: opts.max_connections,
    };
    let stop_audit = audit.as_ref().map(|a| a.abort_handle());
    let done = tokio::spawn(async move {
        let service = admission_service(Arc::clone(&state));
        let stop = async move {
            shutdown.await;
            // Not ready at once, so the endpoints drop this pod; meanwhile keep serving, each
            // answer closing its connection, so callers move on without losing a request.
            state.ready.store(false, Ordering::Release);
            state.draining.store(true, Ordering::Release);
            if let Some(f) = &fleet {
                // The other replicas take this one's load balancers at their next renewal.
                f.leave().await;
            }
            if !delay.is_zero() {
                tracing::info!(
                    delay_ms = delay.as_millis() as u64,
                    "shutting down: not ready; serving until the endpoints catch up"
                );
                tokio::time::sleep(delay).await;
            }
            tracing::info!("shutting down: no new connections, finishing in-flight requests");
            let _ = stop_tx.send(true);
            if let Some(a) = &stop_audit {
                a.abort();
            }
        };
        if serve_tls(listener, tls, service, stop, listen).await {
            tracing::info!("all connections closed");
        }
        // Gone before `done` resolves: the runtime, and the client's worker with it, stop
        // after that, and an audit round still polled then would log its requests failing.
        if let Some(a) = audit {
            a.abort();
            let _ = a.await;
        }
    });
    Ok(Running {
        addr,
        metrics_addr,
        app,
        done,
    })
}
