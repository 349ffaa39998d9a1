//! Load balancer facts from the provider's own API (`inventory.cloud`), read-only.
//!
//! - `transport`: one way to call every cloud (token, sign, send, classify) into the closed
//!   set of outcomes in `outcome`; `paging` follows lists to their end or says "incomplete".
//! - `alibaba`, `ctyun`, `huawei`, `volcengine`: each cloud's requests and mappings only.
//! - `bucket`: the rate limit; `cache`: bounded facts and one call in flight per id;
//!   `refresh`: the background reads; `shard`: which replica refreshes which id;
//!   `view`: what one admission sees.
//!
//! An admission that names a load balancer not yet cached looks it up within
//! `inventory.cloud.timeout`, or is answered at once when no token is left.

pub mod creds;
pub mod http;
pub mod identity;
pub mod outcome;
pub mod proxy;
pub mod sign;
pub mod transport;

mod alibaba;
mod batch;
mod bucket;
mod cache;
mod ctyun;
mod huawei;
mod paging;
mod refresh;
pub mod shard;
mod view;
mod volcengine;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use crate::inventory::Snapshot;
use crate::vocab::config::CloudConfig;
use crate::vocab::ctx::Inventory;
use crate::vocab::lb::LoadBalancer;
use crate::vocab::provider::Provider;
use crate::vocab::service::Svc;
use bucket::Bucket;
use cache::{Cache, Flights};
use creds::CredStore;
use http::Http;
pub use outcome::CloudError;
use transport::{Call, Endpoint, Tokens};
pub use view::{INVALID_ID, View};

/// What the cloud said of one id.
#[derive(Debug, Clone, PartialEq, Eq)]
// Facts live behind an `Arc` in the cache, so the size of a found one costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Fact {
    Found(LoadBalancer),
    NotFound,
    /// The id cannot name a load balancer: not asked about.
    Invalid,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiLabels {
    pub provider: &'static str,
    pub operation: &'static str,
    pub result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabels {
    pub provider: &'static str,
    pub operation: &'static str,
}

fn api_histogram() -> Histogram {
    // 1 ms to ~16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The cloud metrics, registered by the server's metrics.
#[derive(Debug, Clone)]
pub struct CloudMetrics {
    pub requests: Family<ApiLabels, Counter>,
    pub latency: Family<OperationLabels, Histogram, fn() -> Histogram>,
    pub cached: Gauge,
    pub oldest_fact_age: Gauge,
}

impl Default for CloudMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(api_histogram),
            cached: Gauge::default(),
            oldest_fact_age: Gauge::default(),
        }
    }
}

/// Whether `id` can name a load balancer at all: every cloud's ids are short runs of
/// letters, digits, `-`, `_` and `.`. Anything else is answered without a call.
pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// A listener from an answer's port (a number, or a number in a string) and protocol;
/// `None` for a port that is not one.
pub(crate) fn listener(
    port: &serde_json::Value,
    protocol: &serde_json::Value,
    owner: String,
) -> Option<crate::vocab::lb::Listener> {
    let port = port
        .as_u64()
        .or_else(|| port.as_str().and_then(|p| p.parse().ok()))
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)?;
    Some(crate::vocab::lb::Listener {
        port,
        protocol: protocol.as_str().unwrap_or("TCP").to_ascii_uppercase(),
        owner,
    })
}

/// A string field, when it is set and not empty.
pub(crate) fn non_empty(v: &serde_json::Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(String::from)
}

/// Where the region comes from when the config names none.
pub type RegionSource = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The clock the cache and the bucket read (tests pass their own).
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// How long the background refresh waits for credentials being exchanged.
const CREDENTIALS_BACKGROUND: Duration = Duration::from_secs(10);

/// The cloud source: one per server, shared by every admission.
pub struct Cloud {
    provider: Provider,
    region: Option<String>,
    endpoint: Option<Endpoint>,
    cluster_id: Option<String>,
    timeout: Duration,
    refresh: Duration,
    http: Http,
    creds: Arc<CredStore>,
    bucket: Bucket,
    cache: Cache,
    flights: Flights,
    /// Which ids this replica refreshes (all, without a fleet).
    shard: Arc<shard::Shard>,
    /// Background rounds run so far.
    rounds: std::sync::atomic::AtomicU32,
    /// Set when a list by ids answered for others (the filter ignored): the refresh reads one
    /// id at a time from then on.
    one_at_a_time: std::sync::atomic::AtomicBool,
    clock: Clock,
    /// Where the region comes from when the config does not say (the nodes' label).
    region_source: Mutex<Option<RegionSource>>,
    pub metrics: CloudMetrics,
}

impl std::fmt::Debug for Cloud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cloud")
            .field("provider", &self.provider)
            .field("region", &self.region)
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
        Ok(Arc::new(Self {
            provider,
            region: cfg.region.clone(),
            endpoint,
            cluster_id,
            timeout: cfg.timeout.0,
            refresh: cfg.refresh.0,
            http,
            creds,
            bucket: Bucket::new(f64::from(cfg.qps) / f64::from(replicas.max(1)), clock()),
            cache: Cache::new(cfg.cache_size as usize),
            flights: Flights::default(),
            shard: Arc::default(),
            rounds: Default::default(),
            one_at_a_time: Default::default(),
            clock,
            region_source: Mutex::new(None),
            metrics,
        }))
    }

    /// Short-lived credentials are fetched at start, before the first admission needs them.
    pub fn warm_credentials(self: &Arc<Self>) {
        self.creds.warm(&self.http);
    }

    fn now(&self) -> Instant {
        (self.clock)()
    }

    pub fn provider(&self) -> Provider {
        self.provider
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
        *self.region_source.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
    }

    pub fn region(&self) -> Option<String> {
        self.region.clone().or_else(|| {
            let f = self
                .region_source
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            f.and_then(|f| f())
        })
    }

    /// The id a Service names, when it is a LoadBalancer of this provider.
    pub fn named_id(&self, svc: Option<&k8s_openapi::api::core::v1::Service>) -> Option<String> {
        let svc = Svc(svc?);
        if !svc.is_lb() {
            return None;
        }
        crate::providers::catalog(self.provider)
            .get(svc, "id")
            .map(|a| a.value.trim().to_string())
            .filter(|id| !id.is_empty())
    }

    /// The facts for an admission: cached, or looked up within `inventory.cloud.timeout`.
    /// Ids the file knows are not asked about.
    /// Without a token left, the answer is "rate limit" at once.
    pub async fn view(self: &Arc<Self>, ids: &[String], file: Option<Arc<Snapshot>>) -> View {
        self.collect(ids, file, self.timeout, false).await
    }

    /// Every id at once, within `budget`, waiting for tokens within it (the CLI).
    pub async fn view_all(
        self: &Arc<Self>,
        ids: &[String],
        file: Option<Arc<Snapshot>>,
        budget: Duration,
    ) -> View {
        self.collect(ids, file, budget, true).await
    }

    async fn collect(
        self: &Arc<Self>,
        ids: &[String],
        file: Option<Arc<Snapshot>>,
        budget: Duration,
        patient: bool,
    ) -> View {
        let deadline = Instant::now() + budget;
        let wanted: Vec<&String> = ids
            .iter()
            .filter(|id| {
                file.as_ref()
                    .is_none_or(|f| f.get(self.provider, id).is_none())
            })
            .collect();
        let got =
            futures::future::join_all(wanted.iter().map(|id| self.get(id, deadline, patient)))
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
            provider: self.provider,
            region,
            file,
            facts,
        }
    }

    /// The cached fact, or one call shared by every admission that asks meanwhile.
    /// `patient`: wait for a rate-limit token until `deadline` instead of failing at once.
    pub async fn get(
        self: &Arc<Self>,
        id: &str,
        deadline: Instant,
        patient: bool,
    ) -> Result<Arc<Fact>, CloudError> {
        if !valid_id(id) {
            return Ok(Arc::new(Fact::Invalid));
        }
        if let Some(fact) = self.cache.get(id, self.now(), self.max_age(id)) {
            return Ok(fact);
        }
        let budget = deadline.saturating_duration_since(Instant::now());
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
            Ok(r) => r,
            // The budget as configured (a few microseconds went to getting here).
            Err(_) => Err(CloudError::Timeout(budget.as_micros().div_ceil(1000))),
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
            let r = me.fetch(&id, Some(until), tokens).await;
            if let Ok(fact) = &r {
                let n = me.cache.put(&id, Arc::clone(fact), me.now(), true);
                me.metrics.cached.set(n as i64);
            }
            me.flights.done(&id);
            let _ = tx.send(Some(r));
        });
        rx
    }

    /// Credentials to sign with, waiting at most until `deadline` (a while in the background)
    /// for an exchange; a failure is counted as the `Credentials` operation.
    pub(crate) async fn credentials(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Arc<creds::Creds>, CloudError> {
        let wait = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => CREDENTIALS_BACKGROUND,
        };
        self.creds.current(&self.http, wait).await.inspect_err(|e| {
            self.metrics
                .requests
                .get_or_create(&ApiLabels {
                    provider: self.provider.as_str(),
                    operation: "Credentials",
                    result: e.label(),
                })
                .inc();
        })
    }

    /// The region and the credentials of a call, or why there are none.
    pub(crate) async fn region_and_credentials(
        &self,
        deadline: Option<Instant>,
    ) -> Result<(String, Arc<creds::Creds>), CloudError> {
        let region = self.region().ok_or_else(|| {
            CloudError::Other(
                "no region: set inventory.cloud.region or label the nodes topology.kubernetes.io/region".into(),
            )
        })?;
        Ok((region, self.credentials(deadline).await?))
    }

    /// A list by ids answered for ids it was not asked about: its filter is ignored, so batches
    /// cannot be trusted to be what they say. Said once; the refresh reads one id at a time.
    pub(crate) fn lists_ignore_ids(&self, operation: &str) {
        if !self
            .one_at_a_time
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(
                provider = %self.provider,
                operation,
                "the cloud's list ignored its filter of load balancer ids; the refresh reads one load balancer at a time from now on"
            );
        }
    }

    /// Every page answered, the list did not end: counted as its own outcome.
    pub(crate) fn count_incomplete(&self, r: &CloudError) {
        if let e @ CloudError::Incomplete(_) = r {
            self.metrics
                .requests
                .get_or_create(&ApiLabels {
                    provider: self.provider.as_str(),
                    operation: "ListListeners",
                    result: e.label(),
                })
                .inc();
        }
    }

    /// One look-up at the provider's API.
    async fn fetch(
        &self,
        id: &str,
        deadline: Option<Instant>,
        tokens: Tokens,
    ) -> Result<Arc<Fact>, CloudError> {
        let (region, creds) = self.region_and_credentials(deadline).await?;
        let call = Call {
            cloud: self,
            region: &region,
            creds,
            deadline,
            tokens,
        };
        let fact = match self.provider {
            Provider::Ctyun => ctyun::fetch(&call, id).await,
            Provider::Alibaba => alibaba::fetch(&call, id).await,
            Provider::Huawei => huawei::fetch(&call, id).await,
            Provider::Volcengine => volcengine::fetch(&call, id).await,
        };
        if let Err(e) = &fact {
            self.count_incomplete(e);
        }
        Ok(Arc::new(fact?))
    }

    /// The facts cached now, without asking the cloud (the audit).
    pub fn cached_view(&self, file: Option<Arc<Snapshot>>) -> View {
        let region = self.region().unwrap_or_else(|| "(unknown)".into());
        View {
            provider: self.provider,
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

    /// Look-ups in flight now (tests, benchmarks).
    pub fn in_flight(&self) -> usize {
        self.flights.len()
    }
}

#[cfg(test)]
#[path = "cloud_tests.rs"]
mod tests;
