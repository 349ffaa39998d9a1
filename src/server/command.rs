//! `lbguard serve` as a command: its flags, logging, the cluster connection, signals, and
//! the development certificate's help text, around `process::start`.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::devcert;
use super::process::{ServerOptions, start};
use super::state::{LogDecisions, MAX_CONNECTIONS, MAX_INFLIGHT, REQUEST_TIMEOUT};
use crate::config::Config;
use crate::vocab::duration::parse_duration;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Plain text, coloured only at a terminal.
    Text,
    /// One JSON object a line.
    Json,
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

/// Logs go to stderr through a writer thread that writes them in batches
/// (`log_writer`): a request never waits on the pipe or file behind stderr. Keep the guard
/// until the runtime has stopped (so no task logs after it); dropping it writes what waits.
/// Without a thread (none can be started) lines go straight to stderr.
pub fn init_logging(format: LogFormat) -> Option<super::log_writer::LogGuard> {
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let (writer, guard) = match super::log_writer::spawn(std::io::stderr()) {
        Ok((writer, guard)) => (BoxMakeWriter::new(writer), Some(guard)),
        Err(_) => (BoxMakeWriter::new(std::io::stderr), None),
    };
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
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .event_format(super::log_json::JsonLine::new(super::log_time::UtcMicros))
            .try_init(),
        LogFormat::Text => builder.with_timer(super::log_time::UtcMicros).try_init(),
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

/// `lbguard serve`, with logging set up (`init_logging`).
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    use anyhow::Context;
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
