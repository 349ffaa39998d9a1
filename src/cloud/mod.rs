//! Load balancer facts from the provider's own API (`inventory.cloud`), read-only.
//!
//! The layers, each importing only those below it (tests/layers.rs checks):
//! 1. `base`: what knows no cloud: outcomes, paging, the token bucket, the HTTPS client and
//!    proxy, the request, the facts' own types, the metrics' labels, the retry.
//! 2. `auth`: signing, each cloud's answers, the access key, the identity chain, the store.
//! 3. `transport`: one way to call every cloud (token, sign, send, classify, count) through
//!    a `Channel`, with no `Cloud`; `client`: what a cloud's module offers.
//! 4. `clients`: one module per cloud, its requests and mappings only; `clients::of` picks.
//! 5. `source` (a look-up, a batch, a round's listeners), `cache`, `refresh`, `shard` (which
//!    replica refreshes which id) and `view` (what one admission sees).
//! 6. This file: the `Cloud` facade.
//!
//! An admission that names a load balancer not yet cached looks it up within
//! `inventory.cloud.timeout`, or is answered at once when no token is left.

mod auth;
mod base;
mod cache;
mod client;
mod clients;
mod refresh;
pub mod shard;
mod source;
pub mod transport;
mod view;

pub use auth::{identity, sign};
pub use base::{http, outcome, proxy};

/// The credentials' public paths: the access key and the store that holds and renews it.
pub mod creds {
    pub use super::auth::creds::{Creds, CredsError, FILES};
    pub use super::auth::store::CredStore;
}

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::inventory::Snapshot;
use crate::vocab::config::CloudConfig;
use crate::vocab::ctx::Inventory;
use crate::vocab::provider::Provider;
use crate::vocab::service::Svc;
use auth::store::CredStore;
pub use base::Clock;
use base::bucket::Bucket;
pub use base::fact::{Fact, valid_id};
use base::http::Http;
pub use base::metrics::{ApiLabels, CloudMetrics, OperationLabels};
pub use base::outcome::CloudError;
use cache::{Cache, Flights};
use refresh::Refresh;
pub use source::RegionSource;
use source::Source;
use transport::{Channel, Endpoint, Tokens};
pub use view::{INVALID_ID, View};

/// How often the gauges are updated, whether or not a round runs.
const GAUGES_EVERY: Duration = Duration::from_secs(5);

/// The cloud source: one per server, shared by every admission.
pub struct Cloud {
    source: Source,
    timeout: Duration,
    refresh: Duration,
    cache: Cache,
    flights: Flights,
    /// Which ids this replica refreshes (all, without a fleet).
    shard: Arc<shard::Shard>,
    /// Background rounds run so far.
    rounds: std::sync::atomic::AtomicU32,
    pub metrics: CloudMetrics,
}

impl std::fmt::Debug for Cloud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cloud")
            .field("provider", &self.provider())
            .field("region", &self.source.region())
            .finish_non_exhaustive()
    }
}

impl Cloud {
    /// `replicas` share `inventory.cloud.qps`: each takes its part of the budget.
    pub fn new(
        provider: Provider,
        cfg: &CloudConfig,
        cluster_id: Option<String>,
        creds: Arc<CredStore>,
        extra_roots: &[u8],
        metrics: CloudMetrics,
        replicas: u32,
    ) -> anyhow::Result<Arc<Self>> {
        Self::with_clock(
            provider,
            cfg,
            cluster_id,
            creds,
            extra_roots,
            metrics,
            replicas,
            Arc::new(Instant::now),
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub fn with_clock(
        provider: Provider,
        cfg: &CloudConfig,
        cluster_id: Option<String>,
        creds: Arc<CredStore>,
        extra_roots: &[u8],
        metrics: CloudMetrics,
        replicas: u32,
        clock: Clock,
    ) -> anyhow::Result<Arc<Self>> {
        let http = Http::new(extra_roots)?;
        Self::with_http(
            provider, cfg, cluster_id, creds, http, metrics, replicas, clock,
        )
    }

    /// As [`Cloud::with_clock`], with the HTTPS client built by the caller (a proxy, its roots).
    #[allow(clippy::too_many_arguments)]
    pub fn with_http(
        provider: Provider,
        cfg: &CloudConfig,
        cluster_id: Option<String>,
        creds: Arc<CredStore>,
        http: Http,
        metrics: CloudMetrics,
        replicas: u32,
        clock: Clock,
    ) -> anyhow::Result<Arc<Self>> {
        let endpoint = match &cfg.endpoint {
            None => None,
            Some(url) => Some(
                Endpoint::parse(url)
                    .map_err(|e| anyhow::anyhow!("inventory.cloud.endpoint: {e}"))?,
            ),
        };
        let bucket = Bucket::new(f64::from(cfg.qps) / f64::from(replicas.max(1)), clock());
        let channel = Channel::new(
            provider,
            endpoint,
            cluster_id,
            http,
            bucket,
            clock,
            metrics.clone(),
        );
        Ok(Arc::new(Self {
            source: Source::new(channel, cfg.region.clone(), creds),
            timeout: cfg.timeout.0,
            refresh: cfg.refresh.0,
            cache: Cache::new(cfg.cache_size as usize),
            flights: Flights::default(),
            shard: Arc::default(),
            rounds: Default::default(),
            metrics,
        }))
    }

    /// Short-lived credentials are fetched at start, before the first admission needs them.
    pub fn warm_credentials(self: &Arc<Self>) {
        self.source.warm_credentials();
    }

    fn now(&self) -> Instant {
        self.source.channel.now()
    }

    pub fn provider(&self) -> Provider {
        self.source.provider()
    }

    /// Which ids this replica refreshes; the fleet's Leases keep it current.
    pub fn shard(&self) -> &Arc<shard::Shard> {
        &self.shard
    }

    /// How old a cached fact may be for an admission: another replica refreshes the ids
    /// this one does not own, so those are asked again once older than a refresh.
    fn max_age(&self, id: &str) -> Option<Duration> {
        (!self.shard.owns(id)).then_some(self.refresh)
    }

    /// Reads the region from elsewhere (the cluster's nodes) when the config names none.
    pub fn set_region_source(&self, f: RegionSource) {
        self.source.set_region_source(f);
    }

    pub fn region(&self) -> Option<String> {
        self.source.region()
    }

    /// The id a Service names, when it is a LoadBalancer of this provider.
    pub fn named_id(&self, svc: Option<&k8s_openapi::api::core::v1::Service>) -> Option<String> {
        let svc = Svc::new(svc?);
        if !svc.is_lb() {
            return None;
        }
        crate::providers::catalog(self.provider())
            .get(svc, "id")
            .map(|a| a.value.trim().to_string())
            .filter(|id| !id.is_empty())
    }

    /// The ACK NLB server groups a Service names (`vgroup-port`), for [`Cloud::get_needing`].
    pub fn named_server_groups(
        &self,
        svc: Option<&k8s_openapi::api::core::v1::Service>,
    ) -> Vec<String> {
        let Some(svc) = svc.map(Svc::new).filter(|s| s.is_lb()) else {
            return Vec::new();
        };
        if self.provider() != Provider::Alibaba {
            return Vec::new();
        }
        crate::providers::catalog(self.provider())
            .get(svc, "vgroup-port")
            .map(|a| {
                a.value
                    .split(',')
                    .filter_map(|e| e.split(':').next())
                    .filter(|g| !g.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The facts for an admission: cached, or looked up within `inventory.cloud.timeout`.
    /// Ids the file knows are not asked about. A cached NLB that lacks one of `groups` (the
    /// server groups the Service names) is asked again unless its facts are fresh: the user
    /// who just made the server group retries at once.
    /// Without a token left, the answer is "rate limit" at once.
    pub async fn view(
        self: &Arc<Self>,
        ids: &[String],
        groups: &[String],
        file: Option<Arc<Snapshot>>,
    ) -> View {
        self.collect(ids, groups, file, self.timeout, false).await
    }

    /// Every id at once, within `budget`, waiting for tokens within it (the CLI).
    pub async fn view_all(
        self: &Arc<Self>,
        ids: &[String],
        file: Option<Arc<Snapshot>>,
        budget: Duration,
    ) -> View {
        self.collect(ids, &[], file, budget, true).await
    }

    async fn collect(
        self: &Arc<Self>,
        ids: &[String],
        groups: &[String],
        file: Option<Arc<Snapshot>>,
        budget: Duration,
        patient: bool,
    ) -> View {
        let wanted: Vec<&String> = ids
            .iter()
            .filter(|id| {
                file.as_ref()
                    .is_none_or(|f| f.get(self.provider(), id).is_none())
            })
            .collect();
        let got = futures::future::join_all(
            wanted
                .iter()
                .map(|id| self.get_needing(id, groups, budget, patient)),
        )
        .await;
        let facts: HashMap<String, Result<Arc<Fact>, String>> = wanted
            .into_iter()
            .cloned()
            .zip(got.into_iter().map(|r| r.map_err(|e| e.to_string())))
            .collect();
        // Only a "not found" message names the region; most admissions need no look-up.
        let region = if facts
            .values()
            .any(|f| matches!(f, Ok(f) if **f == Fact::NotFound))
        {
            self.region().unwrap_or_else(|| "(unknown)".into())
        } else {
            String::new()
        };
        View {
            provider: self.provider(),
            region,
            file,
            facts,
        }
    }

    /// The cached fact, or one call shared by every admission that asks meanwhile.
    /// `patient`: wait for a rate-limit token within `budget` instead of failing at once.
    pub async fn get(
        self: &Arc<Self>,
        id: &str,
        budget: Duration,
        patient: bool,
    ) -> Result<Arc<Fact>, CloudError> {
        self.get_needing(id, &[], budget, patient).await
    }

    /// As [`Cloud::get`]; a cached load balancer whose server group list lacks one of
    /// `groups` is used only while fresh (as a "not found" is).
    pub async fn get_needing(
        self: &Arc<Self>,
        id: &str,
        groups: &[String],
        budget: Duration,
        patient: bool,
    ) -> Result<Arc<Fact>, CloudError> {
        if !valid_id(id) {
            return Ok(Arc::new(Fact::Invalid));
        }
        let lacks = |fact: &Fact| match fact {
            Fact::Found(lb) => lb
                .server_groups
                .as_ref()
                .is_some_and(|have| groups.iter().any(|g| !have.iter().any(|h| &h.id == g))),
            _ => false,
        };
        if let Some(fact) = self
            .cache
            .get_unless(id, self.now(), self.max_age(id), &lacks)
        {
            return Ok(fact);
        }
        let deadline = Instant::now() + budget;
        let mut rx = self.start(id, deadline, patient);
        let wait = async {
            loop {
                if let Some(r) = rx.borrow_and_update().clone() {
                    return r;
                }
                if rx.changed().await.is_err() {
                    return Err(CloudError::Other("the look-up was dropped".into()));
                }
            }
        };
        match tokio::time::timeout_at(deadline.into(), wait).await {
            // Whichever timer fired first (this one, or a call's with what was left of the
            // budget), the budget ran out: named as configured, not as what was left.
            Ok(Err(CloudError::Timeout(_))) | Err(_) => {
                Err(CloudError::Timeout(budget.as_millis()))
            }
            Ok(r) => r,
        }
    }

    /// Joins the call in flight for `id`, or starts one. The call runs to its end even when
    /// every admission waiting on it gave up: the next one finds the answer cached.
    fn start(self: &Arc<Self>, id: &str, deadline: Instant, patient: bool) -> cache::Pending {
        let (tx, rx) = match self.flights.join(id) {
            Ok(rx) => return rx,
            Err(new) => new,
        };
        let me = Arc::clone(self);
        let id = id.to_string();
        // The admission's deadline takes the token; the answer may land later, for the cache.
        let until = deadline.max(Instant::now() + self.timeout.max(Duration::from_secs(1)) * 4);
        tokio::spawn(async move {
            let tokens = if patient {
                Tokens::Until(deadline)
            } else {
                Tokens::Now
            };
            let r = me.source.fetch(&id, Some(until), tokens).await;
            if let Ok(fact) = &r {
                let n = me.cache.put(&id, Arc::clone(fact), me.now(), true);
                me.metrics.cached.set(n as i64);
            }
            me.flights.done(&id);
            let _ = tx.send(Some(r));
        });
        rx
    }

    /// The facts cached now, without asking the cloud (the audit).
    pub fn cached_view(&self, file: Option<Arc<Snapshot>>) -> View {
        let region = self.region().unwrap_or_else(|| "(unknown)".into());
        View {
            provider: self.provider(),
            region,
            file,
            facts: self
                .cache
                .all()
                .into_iter()
                .map(|(k, f)| (k, Ok(f)))
                .collect(),
        }
    }

    /// Every cached fact (for `inventory dump` and tests).
    pub fn snapshot(&self) -> Vec<(String, Arc<Fact>)> {
        self.cache.all()
    }

    /// The refresh's view of this cloud.
    fn refresher(&self) -> Refresh<'_> {
        Refresh {
            source: &self.source,
            cache: &self.cache,
            shard: &self.shard,
            metrics: &self.metrics,
            rounds: &self.rounds,
            every: self.refresh,
        }
    }

    /// One background round over `named` and the ids admissions asked for lately.
    pub async fn refresh_round(&self, named: &HashSet<String>) {
        self.refresher().round(named).await;
    }

    pub fn update_gauges(&self) {
        self.refresher().update_gauges();
    }

    /// Runs the refresh every `inventory.cloud.refresh`, for the ids `named` returns, and
    /// the gauges on their own beat (a long round does not hide stale facts).
    pub fn spawn_refresh(
        self: &Arc<Self>,
        named: impl Fn() -> HashSet<String> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut gauges = tokio::time::interval(GAUGES_EVERY);
            loop {
                gauges.tick().await;
                match me.upgrade() {
                    Some(c) => c.update_gauges(),
                    None => return,
                }
            }
        });
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.refresh);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                me.refresh_round(&named()).await;
            }
        })
    }

    /// Look-ups in flight now (tests, benchmarks).
    pub fn in_flight(&self) -> usize {
        self.flights.len()
    }
}

#[cfg(test)]
#[path = "cloud_tests.rs"]
mod tests;
