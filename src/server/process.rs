//! The `lbguard serve` process: flags, logging, the cluster connection, and the wiring of
//! TLS, watches, claims, audit and both listeners, until SIGTERM.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::TcpListener;

use super::listen::{Listen, serve_tls};
use super::metrics::{self, Metrics};
use super::tls::{self, ReloadingResolver};
use super::{App, AppState, MAX_CONNECTIONS, MAX_INFLIGHT, REQUEST_TIMEOUT, devcert, events};
use super::{metrics_auth, metrics_router, router};
use crate::cluster::audit::audit;
use crate::cluster::watch::{Kinds, Retry};
use crate::config::Config;
use crate::inventory::InventoryStore;
use crate::vocab::duration::parse_duration;

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

impl App {
    /// The inventory snapshot for one request (or none).
    pub fn inventory_snapshot(&self) -> Option<Arc<crate::inventory::Snapshot>> {
        self.inventory.as_ref().map(|s| s.snapshot())
    }

    /// Runs one audit round and publishes it (report and metric); returns the offenders.
    pub fn audit_once(&self) -> Vec<k8s_openapi::api::core::v1::Service> {
        let snapshot = self.inventory_snapshot();
        // The audit reads what the cloud said last (the refresh keeps it current); it never
        // waits for the cloud.
        let view = self.cloud.as_ref().map(|c| c.cached_view(snapshot.clone()));
        let inventory = crate::inventory::choose(
            view.as_ref()
                .map(|v| v as &dyn crate::vocab::ctx::Inventory),
            snapshot.as_deref(),
        );
        let exceptions = self.exceptions.snapshot();
        let granted = crate::cluster::audit::Granted {
            exceptions: &exceptions,
            now: std::time::SystemTime::now(),
        };
        let (report, offending) = audit(
            &self.cluster,
            &self.config,
            &self.versions.load(),
            &inventory,
            &granted,
        );
        exceptions_metric(&self.metrics, &exceptions, &self.config, granted.now);
        for e in &report.expiring_exceptions {
            tracing::info!(
                namespace = %e.namespace,
                name = %e.name,
                expires = %e.expires,
                rules = %e.rules.join(","),
                "LBGuardException expires within 7 days"
            );
        }
        self.metrics.audit_violations.clear();
        for ((rule, action, namespace), n) in report.counts() {
            self.metrics
                .audit_violations
                .get_or_create(&metrics::AuditLabels {
                    rule,
                    action: action.as_str(),
                    namespace,
                })
                .set(n as i64);
        }
        tracing::info!(
            checked = report.summary.checked,
            denied = report.summary.denied,
            warned = report.summary.warned,
            exempted = report.summary.exempted,
            "audit finished"
        );
        self.report.store(Arc::new(report));
        offending
    }
}

/// `lbguard_exceptions{state}`: how many exceptions are active, about to expire, expired.
fn exceptions_metric(
    metrics: &metrics::Metrics,
    all: &[crate::engine::exceptions::Exception],
    config: &crate::config::Config,
    now: std::time::SystemTime,
) {
    use crate::engine::exceptions::{EXPIRING_WITHIN, active, expired, expiring};
    let counts = [
        (
            "active",
            all.iter().filter(|e| active(e, config, now)).count(),
        ),
        (
            "expiring",
            expiring(all, config, now, EXPIRING_WITHIN).len(),
        ),
        ("expired", expired(all, now).len()),
    ];
    for (state, n) in counts {
        metrics
            .exceptions
            .get_or_create(&metrics::StateLabels { state })
            .set(n as i64);
    }
}

/// Runs the audit every `audit.interval`, and records Events when `audit.events` is on.
fn spawn_audit(app: AppState, client: Option<kube::Client>) {
    let every = app.config.audit.interval.0;
    if every.is_zero() {
        return;
    }
    tokio::spawn(async move {
        let mut announced = std::collections::HashSet::new();
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if !app.cluster.synced() {
                continue;
            }
            let me = Arc::clone(&app);
            let Ok(offending) = tokio::task::spawn_blocking(move || me.audit_once()).await else {
                continue;
            };
            if let (true, Some(client)) = (app.config.audit.events, &client) {
                events::publish(client, &app, &offending).await;
            }
            if let (true, Some(client)) = (app.config.exceptions.events, &client) {
                let all = app.exceptions.snapshot();
                events::exceptions_expired(client, &all, &mut announced).await;
            }
            if let Some(client) = &client {
                let report = app.report.load_full();
                crate::cluster::reports::round(client, app.config.reports.api, &report).await;
            }
        }
    });
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// lbguard config file (YAML).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Address of the admission webhook's HTTPS listener (/validate, /mutate, /healthz,
    /// /readyz).
    #[arg(long, default_value = "0.0.0.0:8443")]
    pub addr: SocketAddr,
    /// PEM certificate chain; reloaded when it changes.
    #[arg(long, requires = "tls_key", conflicts_with = "dev")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key; reloaded when it changes.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Development mode: use or generate a CA and a localhost certificate in --dev-dir, and
    /// run without a cluster (the kubeconfig is ignored unless --use-kubeconfig).
    #[arg(long)]
    pub dev: bool,
    /// With --dev: watch the cluster the kubeconfig names (standalone if it does not
    /// answer). lbguard then only reads: no listener claims, audit Events or policy reports.
    #[arg(long, requires = "dev")]
    pub use_kubeconfig: bool,
    /// Where --dev keeps its CA and localhost certificate (made when missing, reused after).
    #[arg(long, default_value = "certs/dev")]
    pub dev_dir: PathBuf,
    /// Address of the /metrics and /report listener (plain HTTP unless --metrics-secure).
    #[arg(long, default_value = "0.0.0.0:9090")]
    pub metrics_addr: SocketAddr,
    /// Run without a cluster: cluster rules see an empty cluster.
    #[arg(long)]
    pub standalone: bool,
    /// How often the certificate and inventory files are checked for changes.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub reload_interval: Duration,
    /// How long in-flight requests may take to finish once the listener is closed.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,
    /// After SIGTERM, how long to keep serving (readiness false, every answer closing its
    /// connection) before the listener closes: time for the endpoints to drop this pod.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub shutdown_delay: Duration,
    /// Log lines on stderr: `text` for people, `json` (one object a line) for collectors.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Which admission decisions are logged at info: `findings` (denials, warnings,
    /// mutations, refusals, exemptions; clean allows go to debug) or `all`.
    #[arg(long, value_enum, default_value_t = LogDecisions::Findings)]
    pub log_decisions: LogDecisions,
    /// Serve `/metrics` and `/report` over HTTPS (the webhook's certificate) to callers whose
    /// bearer token the API server accepts and who may `get` the path (RBAC on the
    /// non-resource URL). The chart turns this on.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub metrics_secure: bool,
    /// Open connections at most on the webhook port; more wait to be accepted.
    #[arg(long, default_value_t = MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Admission requests evaluated at once; more wait for a slot.
    #[arg(long, default_value_t = MAX_INFLIGHT)]
    pub max_inflight: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogDecisions {
    /// Decisions with something to say at info; clean allows at debug.
    #[default]
    Findings,
    /// Every decision at info.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Plain text, coloured only at a terminal.
    Text,
    /// One JSON object a line.
    Json,
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

/// Watch retry delays. The cap is short so that a restarted API server is seen again within
/// seconds (a Service created right after the restart must not wait 30 s for the cache); a
/// watch is one cheap request per kind and replica, so retrying every 2 s costs little.
pub const WATCH_RETRY_MIN: Duration = Duration::from_millis(250);
pub const WATCH_RETRY_MAX: Duration = Duration::from_secs(2);

/// How often `ccm.version: auto` re-reads the controller's image (upgrades are rare).
pub const CCM_REFRESH: Duration = Duration::from_secs(600);

/// Reads the cloud controller's version from its workload. Keeps the last known version
/// when the API server cannot answer; forgets it when the workload is gone.
pub async fn refresh_ccm_version(client: &kube::Client, app: &App) {
    use crate::cluster::ccm::discover;
    use crate::engine::version::Known;
    let found = tokio::time::timeout(
        Duration::from_secs(10),
        discover(client, &app.config.ccm, app.config.provider),
    )
    .await;
    let ccm = match found {
        Ok(Ok(Some(f))) => {
            let known = Known::from_option(Some(&f.version));
            match &known {
                Known::Yes(v) => {
                    tracing::debug!(provider = %f.provider, workload = %f.workload, version = %v, "cloud controller version from the cluster")
                }
                _ => {
                    tracing::warn!(workload = %f.workload, image = %f.image, "the cloud controller's image tag is not a version; set ccm.version")
                }
            }
            known
        }
        Ok(Ok(None)) => {
            tracing::warn!(
                "ccm.version is auto but no cloud controller workload was found (managed outside the cluster?); set ccm.version or ccm.workloads"
            );
            Known::Missing
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cannot read the cloud controller's workload; keeping the last version");
            return;
        }
        Err(_) => {
            tracing::warn!(
                "reading the cloud controller's workload timed out; keeping the last version"
            );
            return;
        }
    };
    let current = app.versions.load();
    if current.ccm != ccm {
        if let Known::Yes(v) = &ccm {
            tracing::info!(version = %v, "cloud controller version");
        }
        app.versions.store(Arc::new(crate::engine::Versions {
            cluster: current.cluster.clone(),
            ccm,
        }));
    }
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

/// Shares the cloud refresh with the other replicas through a Lease per pod (`POD_NAME` in
/// `POD_NAMESPACE`); without a cluster or a pod name, this replica refreshes everything.
fn refresh_fleet(
    cloud: &crate::cloud::Cloud,
    client: Option<&kube::Client>,
) -> Option<Arc<crate::cloud::shard::Membership>> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let (Some(client), Some(pod)) = (client, env("POD_NAME")) else {
        tracing::info!(
            "no cluster or no POD_NAME: this replica refreshes every load balancer itself"
        );
        return None;
    };
    let namespace = env("POD_NAMESPACE").unwrap_or_else(|| client.default_namespace().into());
    let fleet = env("LBGUARD_FLEET").unwrap_or_else(|| "lbguard".into());
    tracing::info!(%namespace, %pod, %fleet, "sharing the cloud refresh with the other replicas (a Lease per replica)");
    let m = Arc::new(crate::cloud::shard::Membership::new(
        client.clone(),
        &namespace,
        &pod,
        &fleet,
    ));
    Arc::clone(&m).spawn(Arc::clone(cloud.shard()));
    Some(m)
}

fn spawn_ccm_refresh(client: kube::Client, app: std::sync::Weak<App>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(CCM_REFRESH).await;
            let Some(app) = app.upgrade() else { return };
            refresh_ccm_version(&client, &app).await;
        }
    });
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
        spawn_audit(Arc::clone(&app), Some(client.clone()));
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
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
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
    let done = tokio::spawn(async move {
        let router = router(Arc::clone(&state));
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
        };
        if serve_tls(listener, tls, router, stop, listen).await {
            tracing::info!("all connections closed");
        }
    });
    Ok(Running {
        addr,
        metrics_addr,
        app,
        done,
    })
}

/// Resolves on SIGTERM or Ctrl-C. The handlers are installed when this is called, not when
/// the future is first polled: a signal that arrives as the server starts must shut it down
/// cleanly, not end the process the default way.
fn sigterm() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate()).ok();
        let interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(term) => {},
                _ = wait(interrupt) => {},
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Logs go to stderr through a writer thread: a request never waits on the pipe or file
/// behind stderr (a blocking write there cost up to a third of the throughput with every
/// decision logged). Nothing is dropped: when the 128k-line buffer is full, callers wait.
/// Keep the guard until exit; dropping it flushes what is buffered.
fn init_logging(format: LogFormat) -> tracing_appender::non_blocking::WorkerGuard {
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("lbguard-log")
        .finish(std::io::stderr());
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour only for a person at a terminal: log files and collectors get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(ansi)
        .with_writer(writer);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    guard
}

/// The Kubernetes client for `serve`: none with `--standalone`, or with `--dev` unless
/// `--use-kubeconfig` (then none, and a log line, when no cluster is configured or it does
/// not answer); otherwise an error.
async fn connect(args: &ServeArgs) -> anyhow::Result<Option<kube::Client>> {
    if args.standalone {
        tracing::info!(
            standalone = true,
            "running standalone (--standalone): cluster rules see an empty cluster"
        );
        return Ok(None);
    }
    if args.dev && !args.use_kubeconfig {
        tracing::info!(
            standalone = true,
            "running standalone (--dev; --use-kubeconfig watches the kubeconfig's cluster): cluster rules see an empty cluster"
        );
        return Ok(None);
    }
    match cluster_client().await {
        Ok(c) if args.dev => {
            // A laptop may have a kubeconfig for a cluster that is not reachable now.
            match tokio::time::timeout(Duration::from_secs(3), c.apiserver_version()).await {
                Ok(Ok(_)) => Ok(Some(c)),
                _ => {
                    tracing::info!(
                        standalone = true,
                        "running standalone: the cluster in the kubeconfig does not answer, cluster rules see an empty cluster"
                    );
                    Ok(None)
                }
            }
        }
        Ok(c) => Ok(Some(c)),
        Err(e) if args.dev => {
            tracing::info!(standalone = true, reason = %e, "running standalone: no cluster configured, cluster rules see an empty cluster");
            Ok(None)
        }
        Err(e) => Err(anyhow::anyhow!(
            "cannot connect to the cluster: {e}; run in a cluster, set KUBECONFIG, or pass --standalone"
        )),
    }
}

/// `kube::Client::try_default` (the kubeconfig, then the pod's service account), with an
/// error that names the kubeconfig's path plainly (kube's quotes it twice).
async fn cluster_client() -> Result<kube::Client, String> {
    use kube::config::{Config as KubeConfig, KubeConfigOptions, KubeconfigError};
    let mut config = match KubeConfig::from_kubeconfig(&KubeConfigOptions::default()).await {
        Ok(c) => c,
        Err(kubeconfig) => match KubeConfig::incluster() {
            Ok(c) => c,
            Err(in_cluster) => {
                let kubeconfig = match kubeconfig {
                    KubeconfigError::ReadConfig(e, path) => {
                        format!("cannot read the kubeconfig {}: {e}", path.display())
                    }
                    other => format!("kubeconfig: {other}"),
                };
                return Err(format!("{kubeconfig}; not in a pod ({in_cluster})"));
            }
        },
    };
    config.apply_debug_overrides();
    kube::Client::try_from(config).map_err(|e| e.to_string())
}

/// `lbguard serve`.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    use anyhow::Context;
    let _log_guard = init_logging(args.log_format);
    let mut config = match &args.config {
        Some(p) => Config::read(p)
            .and_then(|text| crate::engine::parse_config(&text, &p.display().to_string()))?,
        None => Config::default(),
    };
    if args.dev {
        // A development server never writes to a cluster it may only be looking at.
        config.claims.enabled = false;
        config.audit.events = false;
        config.exceptions.events = false;
        config.reports.api = crate::vocab::config::ReportsApi::Off;
        if args.use_kubeconfig {
            tracing::info!(
                "--dev only reads the cluster: listener claims, audit Events and policy reports off"
            );
        }
    }
    let (cert, key) = match (&args.tls_cert, &args.tls_key, args.dev) {
        (Some(c), Some(k), _) => (c.clone(), k.clone()),
        (_, _, true) => {
            let (paths, made) = devcert::ensure(&args.dev_dir).with_context(|| {
                format!("preparing dev certificates in {}", args.dev_dir.display())
            })?;
            print_dev_help(&paths, made, args.addr)?;
            (paths.cert, paths.key)
        }
        _ => anyhow::bail!(
            "give --tls-cert and --tls-key, or --dev for a generated localhost certificate"
        ),
    };
    let client = connect(&args).await?;
    let running = start(
        ServerOptions {
            config,
            addr: args.addr,
            metrics_addr: Some(args.metrics_addr),
            cert,
            key,
            reload_interval: args.reload_interval,
            shutdown_grace: args.shutdown_grace,
            request_timeout: REQUEST_TIMEOUT,
            client,
            claims_client: None,
            log_decisions: args.log_decisions,
            metrics_secure: args.metrics_secure,
            metrics_auth_client: None,
            shutdown_delay: args.shutdown_delay,
            max_connections: args.max_connections,
            max_inflight: args.max_inflight,
            cloud_roots: Vec::new(),
        },
        sigterm(),
    )
    .await?;
    tracing::info!(addr = %running.addr, metrics = ?running.metrics_addr, "lbguard serving");
    running.done.await.context("server task")?;
    tracing::info!("stopped");
    Ok(())
}

fn print_dev_help(paths: &devcert::DevPaths, made: bool, addr: SocketAddr) -> anyhow::Result<()> {
    use base64::Engine;
    let ca = std::fs::read(&paths.ca)?;
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    let port = addr.port();
    println!(
        "{} development certificate: {} (CA {})",
        if made { "generated" } else { "using" },
        paths.cert.display(),
        paths.ca.display()
    );
    println!("caBundle: {bundle}");
    println!(
        "try: curl --cacert {} -H 'Content-Type: application/json' --data @tests/fixtures/review-create.json https://localhost:{port}/validate",
        paths.ca.display()
    );
    Ok(())
}
