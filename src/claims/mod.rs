//! Listener claims: the cross-replica lock behind `listener-port-unique`.
//!
//! Each replica's cluster view only sees admissions once the watch shows them, so two
//! replicas (or one restarted replica) can each admit one of two Services that want the same
//! port. Before the validating webhook allows a CREATE/UPDATE that newly puts a listener port
//! on a load balancer named by its id annotation, it takes one claim per (load balancer,
//! protocol family, port): a `coordination.k8s.io/v1` Lease in lbguard's namespace whose name
//! is a hash of the key. Taking a claim is a create, which the API server makes atomic
//! (create-if-absent, as Kubernetes allocates ClusterIPs with `IPAddress` objects): the loser
//! gets AlreadyExists and is denied, naming the holder. One object per claim, not one per load
//! balancer, keeps claims on different ports from contending and needs no CRD.
//!
//! A claim held by the same namespace/name is renewed (a retried apply does not deny itself).
//! A claim whose holder the cluster view does not show using the port, older than the grace
//! period, is stale (the Service was refused later or deleted): it is taken over by a delete
//! with uid and resourceVersion preconditions, so of two replicas only one removes it.
//! Released ports (the watch shows the Service gone or without the port) are deleted at once,
//! and a periodic collection, safe on every replica, sweeps what is left.

pub mod memory;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, PostParams, Preconditions};
use kube::{Api, Client};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use tokio::sync::mpsc;

use crate::cluster::{ClusterState, lb_uses};
use crate::config::ClaimsConfig;
use crate::engine::{ClusterView, Svc};
use crate::inventory::Family;
use crate::providers::{Provider, catalog};
use crate::rules::listeners::{PORT_PROVIDERS, skips_listeners};
use crate::vocab::route::Scope;

/// Label on every claim, for listing and garbage collection.
pub const CLAIM_LABEL: &str = "lbguard.io/claim";
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The load balancer id, when it is a valid label value (the annotation always has it).
const LB_LABEL: &str = "lbguard.io/load-balancer";
const LB_ANNOTATION: &str = "lbguard.io/load-balancer";
const PROVIDER_ANNOTATION: &str = "lbguard.io/provider";
const PORT_ANNOTATION: &str = "lbguard.io/listener";

/// One claimed listener: a port of a protocol family on a provider's load balancer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClaimKey {
    pub lb: String,
    pub provider: Provider,
    pub family: Family,
    pub port: i32,
}

impl ClaimKey {
    /// The Lease name: stable across replicas and lbguard versions (SHA-256, not std's
    /// hasher), always a valid name whatever the load balancer id contains.
    pub fn lease_name(&self) -> String {
        let text = format!(
            "{}/{}/{}/{}",
            self.provider.as_str(),
            self.lb,
            self.family.as_str(),
            self.port
        );
        let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
        let hex: String = digest.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!(
            "lbguard-{}-{}-{}-{hex}",
            self.provider.as_str(),
            self.family.as_str().to_ascii_lowercase(),
            self.port
        )
    }

    /// "port 80/TCP on load balancer \"lb-1\"", as the rule messages say it.
    pub fn describe(&self) -> String {
        format!(
            "port {}/{} on load balancer \"{}\"",
            self.port,
            self.family.as_str(),
            self.lb
        )
    }
}

/// The listener ports a Service takes, as claim keys: load balancers named by id on the
/// providers whose listeners can clash, without skip-managed-listener Services (they add no
/// listener of their own).
pub fn keys_of(scope: &Scope, svc: Svc) -> BTreeSet<ClaimKey> {
    if !svc.is_lb() {
        return BTreeSet::new();
    }
    lb_uses(scope, svc)
        .into_iter()
        .filter(|(p, _, _)| PORT_PROVIDERS.contains(p) && !skips_listeners(catalog(*p), svc))
        .flat_map(|(provider, lb, user)| {
            user.ports
                .into_iter()
                .map(move |(port, family, _)| ClaimKey {
                    lb: lb.clone(),
                    provider,
                    family,
                    port,
                })
        })
        .collect()
}

/// The claims an admission needs: the ports the new object takes that the old one (an
/// UPDATE's live object) did not already hold. Sorted, so concurrent admissions take
/// overlapping claims in one order and one of them wins them all.
pub fn wanted(scope: &Scope, new: Svc, old: Option<Svc>) -> Vec<ClaimKey> {
    let had = old.map(|o| keys_of(scope, o)).unwrap_or_default();
    keys_of(scope, new)
        .into_iter()
        .filter(|k| !had.contains(k))
        .collect()
}

/// Tells the claims of every port the watch shows a Service no longer using.
pub fn watch_releases(view: &ClusterState, scope: Scope) -> mpsc::UnboundedReceiver<Released> {
    let (tx, rx) = mpsc::unbounded_channel();
    view.on_change(Box::new(move |old, new| {
        let keep = new
            .map(|n| keys_of(&scope, Svc::new(n)))
            .unwrap_or_default();
        let holder = holder_of(Svc::new(old));
        for key in keys_of(&scope, Svc::new(old)) {
            if !keep.contains(&key) {
                let _ = tx.send((holder.clone(), key));
            }
        }
    }));
    rx
}

/// The holder identity a Service's claims carry: namespace/name.
pub fn holder_of(svc: Svc) -> String {
    let m = &svc.0.metadata;
    format!(
        "{}/{}",
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or_default()
    )
}

/// Why claims were not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimError {
    /// Another Service holds the claim: (key, holder namespace/name).
    Held(Vec<(ClaimKey, String)>),
    /// The API server did not answer in time or failed.
    Unavailable(String),
}

/// The claim metrics, registered by the server's metrics.
#[derive(Debug, Clone)]
pub struct ClaimMetrics {
    pub held: Gauge,
    pub conflicts: Counter,
    pub errors: Counter,
    pub takeovers: Counter,
    pub gc_deletions: Counter,
    pub latency: Histogram,
}

impl Default for ClaimMetrics {
    fn default() -> Self {
        Self {
            held: Gauge::default(),
            conflicts: Counter::default(),
            errors: Counter::default(),
            takeovers: Counter::default(),
            gc_deletions: Counter::default(),
            // 100 µs to ~3 s.
            latency: Histogram::new(exponential_buckets(0.0001, 2.0, 15)),
        }
    }
}

/// A port a Service no longer uses, as the watch showed it: (holder, key).
pub type Released = (String, ClaimKey);

/// Takes, renews, takes over, releases and collects claims.
pub struct Claims {
    api: Api<Lease>,
    view: Arc<ClusterState>,
    config: ClaimsConfig,
    pub metrics: ClaimMetrics,
}

/// What one claim attempt ended with.
enum Took {
    /// Created now: (name, uid), for the rollback if a later claim fails.
    Created(String, String),
    /// Already ours.
    Renewed,
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

fn api_error(e: kube::Error) -> ClaimError {
    ClaimError::Unavailable(e.to_string())
}

fn status_of(e: &kube::Error) -> Option<&kube::core::Status> {
    match e {
        kube::Error::Api(s) => Some(s),
        _ => None,
    }
}

/// A valid label value (63 characters, alphanumerics with `-_.` inside).
fn label_value(v: &str) -> Option<&str> {
    let ok = !v.is_empty()
        && v.len() <= 63
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && v.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && v.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric());
    ok.then_some(v)
}

impl Claims {
    pub fn new(
        client: Client,
        namespace: &str,
        view: Arc<ClusterState>,
        config: ClaimsConfig,
        metrics: ClaimMetrics,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            view,
            config,
            metrics,
        }
    }

    fn lease(&self, key: &ClaimKey, holder: &str) -> Lease {
        let mut labels = std::collections::BTreeMap::from([
            (MANAGED_BY.to_string(), "lbguard".to_string()),
            (CLAIM_LABEL.to_string(), "listener".to_string()),
        ]);
        if let Some(v) = label_value(&key.lb) {
            labels.insert(LB_LABEL.into(), v.into());
        }
        Lease {
            metadata: ObjectMeta {
                name: Some(key.lease_name()),
                labels: Some(labels),
                annotations: Some(std::collections::BTreeMap::from([
                    (LB_ANNOTATION.to_string(), key.lb.clone()),
                    (
                        PROVIDER_ANNOTATION.to_string(),
                        key.provider.as_str().into(),
                    ),
                    (
                        PORT_ANNOTATION.to_string(),
                        format!("{}/{}", key.port, key.family.as_str()),
                    ),
                ])),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.to_string()),
                acquire_time: Some(now()),
                renew_time: Some(now()),
                lease_duration_seconds: Some(
                    self.config.grace.0.as_secs().min(i32::MAX as u64) as i32
                ),
                ..Default::default()
            }),
        }
    }

    /// Does the cluster view show `holder` using `key` (watched or reserved here)?
    fn in_use(&self, holder: &str, key: &ClaimKey) -> bool {
        let mut users = Vec::new();
        self.view.lb_users(key.provider, &key.lb, &mut users);
        users.iter().any(|u| {
            u.key() == holder
                && !u.skip_listener
                && u.ports
                    .iter()
                    .any(|(p, f, _)| *p == key.port && *f == key.family)
        })
    }

    /// A claim is live while its holder uses the port or it is younger than the grace
    /// period. Until the cluster view has synced, every claim is live.
    fn is_live(&self, lease: &Lease, key: &ClaimKey) -> bool {
        let spec = lease.spec.as_ref();
        let holder = spec
            .and_then(|s| s.holder_identity.as_deref())
            .unwrap_or("");
        if !self.view.synced() || self.in_use(holder, key) {
            return true;
        }
        let since = spec
            .and_then(|s| s.renew_time.as_ref().or(s.acquire_time.as_ref()))
            .map(|t| t.0)
            .or_else(|| lease.metadata.creation_timestamp.as_ref().map(|t| t.0));
        let Some(since) = since else { return false };
        let age = Timestamp::now().duration_since(since);
        age.as_secs_f64() < self.config.grace.0.as_secs_f64()
    }

    fn preconditions(lease: &Lease) -> DeleteParams {
        DeleteParams {
            preconditions: Some(Preconditions {
                uid: lease.metadata.uid.clone(),
                resource_version: lease.metadata.resource_version.clone(),
            }),
            ..Default::default()
        }
    }

    async fn claim_one(&self, holder: &str, key: &ClaimKey) -> Result<Took, ClaimError> {
        let name = key.lease_name();
        let wanted = self.lease(key, holder);
        // Each turn ends in a decision unless another replica changed the claim meanwhile.
        for _ in 0..5 {
            match self.api.create(&PostParams::default(), &wanted).await {
                Ok(l) => {
                    return Ok(Took::Created(name, l.metadata.uid.unwrap_or_default()));
                }
                Err(e) if status_of(&e).is_some_and(|s| s.is_already_exists() || s.code == 409) => {
                }
                Err(e) => return Err(api_error(e)),
            }
            let Some(mut existing) = self.api.get_opt(&name).await.map_err(api_error)? else {
                continue;
            };
            let other = existing
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.clone())
                .unwrap_or_default();
            if other == holder {
                let spec = existing.spec.get_or_insert_with(Default::default);
                spec.renew_time = Some(now());
                match self
                    .api
                    .replace(&name, &PostParams::default(), &existing)
                    .await
                {
                    Ok(_) => return Ok(Took::Renewed),
                    Err(e)
                        if status_of(&e).is_some_and(|s| s.is_conflict() || s.is_not_found()) =>
                    {
                        continue;
                    }
                    Err(e) => return Err(api_error(e)),
                }
            }
            if self.is_live(&existing, key) {
                return Err(ClaimError::Held(vec![(key.clone(), other)]));
            }
            match self
                .api
                .delete(&name, &Self::preconditions(&existing))
                .await
            {
                Ok(_) => {
                    self.metrics.takeovers.inc();
                    tracing::info!(claim = %name, from = %other, to = %holder, "took over a stale listener claim");
                }
                Err(e) if status_of(&e).is_some_and(|s| s.is_conflict() || s.is_not_found()) => {}
                Err(e) => return Err(api_error(e)),
            }
        }
        Err(ClaimError::Unavailable(format!(
            "the claim {name} kept changing while it was being taken"
        )))
    }

    async fn claim_all(
        &self,
        holder: &str,
        keys: &[ClaimKey],
        created: &mut Vec<(String, String)>,
    ) -> Result<(), ClaimError> {
        // In order, so of two admissions that want overlapping ports one wins them all.
        for key in keys {
            match self.claim_one(holder, key).await? {
                Took::Created(name, uid) => created.push((name, uid)),
                Took::Renewed => {}
            }
        }
        Ok(())
    }

    /// Takes every claim in `keys` for `holder` (namespace/name) within the time budget.
    /// On any failure the claims this call created are released again.
    pub async fn claim(&self, holder: &str, keys: &[ClaimKey]) -> Result<(), ClaimError> {
        if keys.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        let mut created = Vec::new();
        let result = match tokio::time::timeout(
            self.config.timeout.0,
            self.claim_all(holder, keys, &mut created),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(ClaimError::Unavailable(format!(
                "the API server did not answer within {} ms",
                self.config.timeout.0.as_millis()
            ))),
        };
        self.metrics
            .latency
            .observe(started.elapsed().as_secs_f64());
        match &result {
            Ok(()) => {}
            Err(ClaimError::Held(_)) => {
                self.metrics.conflicts.inc();
            }
            Err(ClaimError::Unavailable(e)) => {
                self.metrics.errors.inc();
                tracing::warn!(holder, error = %e, "listener claims could not be recorded");
            }
        }
        if result.is_err() && !created.is_empty() {
            // Off the request path: the answer does not wait for the cleanup.
            let api = self.api.clone();
            tokio::spawn(async move {
                for (name, uid) in created {
                    let dp = DeleteParams {
                        preconditions: Some(Preconditions {
                            uid: Some(uid),
                            resource_version: None,
                        }),
                        ..Default::default()
                    };
                    let _ = api.delete(&name, &dp).await;
                }
            });
        }
        result
    }

    /// Deletes `holder`'s claim on `key` if the view no longer shows it using the port.
    pub async fn release(&self, holder: &str, key: &ClaimKey) {
        if self.in_use(holder, key) {
            return;
        }
        let name = key.lease_name();
        let Ok(Some(lease)) = self.api.get_opt(&name).await else {
            return;
        };
        let held_by = lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref());
        if held_by != Some(holder) {
            return;
        }
        if self
            .api
            .delete(&name, &Self::preconditions(&lease))
            .await
            .is_ok()
        {
            tracing::debug!(claim = %name, holder, "released a listener claim");
        }
    }

    /// One garbage collection round: deletes every stale claim (with preconditions, so
    /// replicas collecting at once never delete a claim retaken meanwhile). Returns how
    /// many it deleted.
    pub async fn collect(&self) -> Result<usize, kube::Error> {
        let list = self
            .api
            .list(&ListParams::default().labels(&format!("{CLAIM_LABEL}=listener")))
            .await?;
        let mut deleted = 0;
        let total = list.items.len();
        if !self.view.synced() {
            self.metrics.held.set(total as i64);
            return Ok(0);
        }
        for lease in &list.items {
            let Some(key) = key_of_lease(lease) else {
                continue;
            };
            if self.is_live(lease, &key) {
                continue;
            }
            let Some(name) = lease.metadata.name.as_deref() else {
                continue;
            };
            if self
                .api
                .delete(name, &Self::preconditions(lease))
                .await
                .is_ok()
            {
                deleted += 1;
                self.metrics.gc_deletions.inc();
            }
        }
        self.metrics.held.set((total - deleted) as i64);
        Ok(deleted)
    }

    /// Releases ports as the watch reports them, and collects every `gcInterval`.
    pub fn spawn(self: Arc<Self>, mut released: mpsc::UnboundedReceiver<Released>) {
        let me = Arc::clone(&self);
        tokio::spawn(async move {
            while let Some((holder, key)) = released.recv().await {
                me.release(&holder, &key).await;
            }
        });
        let every = self.config.gc_interval.0.max(Duration::from_secs(1));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first round one interval after start, once the watch has had time to sync.
            tick.tick().await;
            loop {
                tick.tick().await;
                match self.collect().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "collected stale listener claims"),
                    Err(e) => tracing::warn!(error = %e, "listener claim collection failed"),
                }
            }
        });
    }
}

/// The key a claim was taken for, from its annotations.
fn key_of_lease(lease: &Lease) -> Option<ClaimKey> {
    let a = lease.metadata.annotations.as_ref()?;
    let (port, family) = a.get(PORT_ANNOTATION)?.split_once('/')?;
    Some(ClaimKey {
        lb: a.get(LB_ANNOTATION)?.clone(),
        provider: a.get(PROVIDER_ANNOTATION)?.parse().ok()?,
        family: match family {
            "UDP" => Family::Udp,
            _ => Family::Tcp,
        },
        port: port.parse().ok()?,
    })
}

#[cfg(test)]
#[path = "claims_tests.rs"]
mod tests;
