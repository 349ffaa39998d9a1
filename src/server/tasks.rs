//! What the `serve` process runs in the background once started: the audit rounds, the
//! cloud controller's version, and the share of the cloud refresh among replicas.

use std::sync::Arc;
use std::time::Duration;

use super::events;
use super::metrics;
use super::state::{App, AppState};
use crate::cluster::audit::audit;

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
        exceptions_metric(&self.metrics, exceptions.all(), &self.config, granted.now);
        for e in &report.expiring_exceptions {
            tracing::debug!(
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

/// `lbguard_exceptions{state}`: how many exceptions are active, about to expire (active
/// ones), expired, and ignored (stored but not honoured by the config: they cover nothing).
fn exceptions_metric(
    metrics: &metrics::Metrics,
    all: &[crate::engine::exceptions::Exception],
    config: &crate::config::Config,
    now: std::time::SystemTime,
) {
    use crate::engine::exceptions::{EXPIRING_WITHIN, State, expiring, state};
    let states: Vec<State> = all.iter().map(|e| state(e, config, now)).collect();
    let count = |f: fn(&State) -> bool| states.iter().filter(|s| f(s)).count();
    let counts = [
        ("active", count(|s| *s == State::Active)),
        (
            "expiring",
            expiring(all, config, now, EXPIRING_WITHIN).len(),
        ),
        ("expired", count(|s| *s == State::Expired)),
        ("ignored", count(|s| matches!(s, State::Ignored(_)))),
    ];
    for (state, n) in counts {
        metrics
            .exceptions
            .get_or_create(&metrics::StateLabels { state })
            .set(n as i64);
    }
}

/// How long the audit waits for the exceptions' first list before running without them.
const EXCEPTIONS_SYNC_WAIT: Duration = Duration::from_secs(60);

/// Runs the audit every `audit.interval`, and records Events when `audit.events` is on.
/// The caller aborts the task when the server stops taking connections and waits for it to
/// end before the runtime (and with it the cluster client) goes: a round in progress is
/// dropped, never left to log failures against a client that is shutting down.
pub(super) fn spawn_audit(
    app: AppState,
    client: Option<kube::Client>,
) -> Option<tokio::task::JoinHandle<()>> {
    let every = app.config.audit.interval.0;
    if every.is_zero() {
        return None;
    }
    let rounds = async move {
        let mut announced = std::collections::HashSet::new();
        let mut ignored_announced = std::collections::HashSet::new();
        let mut reports_failing = std::collections::BTreeMap::new();
        let started = std::time::Instant::now();
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // Until the exceptions have arrived, exempted findings would read as failures;
            // wait for them a minute at most (the CRD may be missing).
            let exceptions_pending = app.config.exceptions.enabled
                && client.is_some()
                && !app.exceptions.synced()
                && started.elapsed() < EXCEPTIONS_SYNC_WAIT;
            if !app.cluster.synced() || exceptions_pending {
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
                events::exceptions_expired(client, all.all(), &mut announced).await;
            }
            let events_on = app.config.exceptions.events;
            let report = app.report.load_full();
            events::exceptions_ignored(
                client.as_ref().filter(|_| events_on),
                &report.ignored_exceptions,
                &mut ignored_announced,
            )
            .await;
            if let Some(client) = &client {
                let written = crate::cluster::reports::round(
                    client,
                    app.config.reports.api,
                    &report,
                    &mut reports_failing,
                )
                .await;
                for f in written.iter().flat_map(|p| &p.failed) {
                    app.metrics
                        .report_failures
                        .get_or_create(&metrics::ReasonLabels {
                            reason: f.reason.as_str(),
                        })
                        .inc();
                }
            }
        }
    };
    Some(tokio::spawn(rounds))
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

/// Shares the cloud refresh with the other replicas through a Lease per pod (`POD_NAME` in
/// `POD_NAMESPACE`); without a cluster or a pod name, this replica refreshes everything.
pub(super) fn refresh_fleet(
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

pub(super) fn spawn_ccm_refresh(client: kube::Client, app: std::sync::Weak<App>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(CCM_REFRESH).await;
            let Some(app) = app.upgrade() else { return };
            refresh_ccm_version(&client, &app).await;
        }
    });
}
