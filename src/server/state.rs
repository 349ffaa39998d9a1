//! What every request shares: the app state, its limits and how decisions are logged.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::metrics::Metrics;
use crate::cluster::ClusterState;
use crate::cluster::audit::Report;
use crate::config::Config;
use crate::engine::Versions;
use crate::inventory::InventoryStore;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogDecisions {
    /// Decisions with something to say at info; clean allows at debug.
    #[default]
    Findings,
    /// Every decision at info.
    All,
}

/// The API server caps admission bodies near 3 MiB.
pub const BODY_LIMIT: usize = 3 * 1024 * 1024;
/// Longest time to receive headers or a body; the API server's own timeout is at most 30 s.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Shared by every request.
pub struct App {
    pub config: Config,
    /// Cluster and controller versions; the controller's is re-read with `ccm.version: auto`.
    pub versions: arc_swap::ArcSwap<Versions>,
    pub metrics: Arc<Metrics>,
    /// The load balancer inventory, when configured.
    pub inventory: Option<Arc<InventoryStore>>,
    /// The cluster view (empty when standalone).
    pub cluster: Arc<ClusterState>,
    /// The last audit round.
    pub report: arc_swap::ArcSwap<Report>,
    /// Longest time to receive a request body.
    pub request_timeout: Duration,
    /// Config and TLS loaded, not shutting down.
    pub ready: AtomicBool,
    /// Shutting down: answers carry `Connection: close`.
    pub draining: AtomicBool,
    /// Listener claims in the API server (with a cluster and `claims.enabled`).
    pub claims: Option<Arc<crate::claims::Claims>>,
    /// Which decisions are logged at info.
    pub log_decisions: LogDecisions,
    /// Slots for admission requests being evaluated at once (`--max-inflight`).
    pub inflight: Arc<tokio::sync::Semaphore>,
    /// Load balancer facts from the provider's API (`inventory.cloud.enabled`).
    pub cloud: Option<Arc<crate::cloud::Cloud>>,
    /// The cluster's `LBGuardException`s (empty when standalone or `exceptions.enabled` is off).
    pub exceptions: Arc<crate::cluster::exceptions::ExceptionStore>,
}

/// Default `--max-connections`.
pub const MAX_CONNECTIONS: usize = 4096;
/// Default `--max-inflight`.
pub const MAX_INFLIGHT: usize = 256;

pub type AppState = Arc<App>;

impl App {
    pub fn new(config: Config, metrics: Arc<Metrics>) -> AppState {
        Arc::new(App {
            versions: arc_swap::ArcSwap::from_pointee(Versions::from_config(&config)),
            cluster: Arc::new(ClusterState::new(crate::vocab::route::Scope::of(&config))),
            report: arc_swap::ArcSwap::from_pointee(Report::default()),
            config,
            metrics,
            inventory: None,
            request_timeout: REQUEST_TIMEOUT,
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            claims: None,
            log_decisions: LogDecisions::Findings,
            inflight: Arc::new(tokio::sync::Semaphore::new(MAX_INFLIGHT)),
            cloud: None,
            exceptions: Arc::default(),
        })
    }

    /// Takes listener claims through `client` in `namespace`; releases them as this app's
    /// cluster view sees ports go, and collects stale ones. Call before sharing the app.
    pub fn enable_claims(self: &mut Arc<Self>, client: kube::Client, namespace: &str) {
        let claims = Arc::new(crate::claims::Claims::new(
            client,
            namespace,
            Arc::clone(&self.cluster),
            self.config.claims.clone(),
            self.metrics.claims.clone(),
        ));
        let released = crate::claims::watch_releases(
            &self.cluster,
            crate::vocab::route::Scope::of(&self.config),
        );
        Arc::clone(&claims).spawn(released);
        if let Some(app) = Arc::get_mut(self) {
            app.claims = Some(claims);
        }
    }
}

/// While shutting down, every answer closes its connection (HTTP/1.1), so a caller never
/// sends its next request into a connection about to close.
pub fn close_if_draining(app: &App, r: &mut axum::response::Response) {
    if app.draining.load(Ordering::Relaxed) {
        r.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
}
