//! Load balancer facts from the provider's own API (`inventory.cloud`), read-only.
//!
//! Facts are cached per load balancer id. A background task reads again, every
//! `inventory.cloud.refresh`, every load balancer a cached Service names, so admissions
//! almost never wait. An admission that names a load balancer not yet seen looks it up
//! within `inventory.cloud.timeout`; concurrent admissions for one id share one call; a token
//! bucket (`inventory.cloud.qps`) caps all calls. Background calls retry with backoff,
//! admission calls do not. The file inventory's entries override the cloud's.

pub mod creds;
pub mod http;
pub mod sign;

mod alibaba;
mod ctyun;
mod huawei;
mod volcengine;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use tokio::sync::watch;

use crate::inventory::Snapshot;
use crate::vocab::config::CloudConfig;
use crate::vocab::ctx::{Inventory, Lookup};
use crate::vocab::lb::{Listener, LoadBalancer};
use crate::vocab::provider::Provider;
use crate::vocab::service::Svc;
use creds::{CredStore, Creds};
pub use http::CloudError;
use http::{Answer, Http};
use sign::{Req, Stamp};

/// What the cloud said of one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fact {
    Found(LoadBalancer),
    NotFound,
}

/// A "not found" is asked again this soon by an admission: the user who just created the
/// load balancer at the cloud retries at once.
const NOT_FOUND_TTL: Duration = Duration::from_secs(15);
/// One call may take this long in the background (admissions have their own budget).
const BACKGROUND_BUDGET: Duration = Duration::from_secs(10);
/// Ids no Service names and no admission asked for are dropped after this many refreshes.
const UNUSED_REFRESHES: u32 = 2;

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

#[derive(Debug)]
struct Entry {
    fact: Arc<Fact>,
    fetched: Instant,
    /// Refresh rounds since a Service or an admission last named it (an admission resets
    /// it under the read lock).
    unused: AtomicU32,
}

type Pending = watch::Receiver<Option<Result<Arc<Fact>, CloudError>>>;

/// A token bucket: `qps` tokens a second, as many in a burst (at least one).
#[derive(Debug)]
struct Bucket {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    fn new(qps: f64) -> Self {
        let qps = qps.max(0.01);
        let burst = qps.max(1.0);
        Self {
            qps,
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// Takes a token, waiting for one until `until`. Without a deadline (the background
    /// refresh) it leaves half the burst to admissions, so a long refresh round does not
    /// make a new Service's look-up wait.
    async fn take(&self, until: Option<Instant>) -> bool {
        let reserve = if until.is_none() {
            (self.burst / 2.0).floor()
        } else {
            0.0
        };
        loop {
            let wait = {
                let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                s.0 = (s.0 + now.duration_since(s.1).as_secs_f64() * self.qps).min(self.burst);
                s.1 = now;
                if s.0 >= 1.0 + reserve {
                    s.0 -= 1.0;
                    return true;
                }
                Duration::from_secs_f64((1.0 + reserve - s.0) / self.qps)
            };
            if until.is_some_and(|u| Instant::now() + wait > u) {
                return false;
            }
            tokio::time::sleep(wait).await;
        }
    }
}

/// What a provider module calls to reach its API.
pub(crate) struct Call<'a> {
    cloud: &'a Cloud,
    pub region: &'a str,
    pub creds: Arc<Creds>,
    /// The admission's deadline; `None` in the background.
    deadline: Option<Instant>,
}

impl Call<'_> {
    pub fn cluster_id(&self) -> Option<&str> {
        self.cloud.cluster_id.as_deref()
    }

    /// The endpoint override, or the provider's public endpoint for `service`.
    pub fn base(&self, public: String) -> Result<(String, String), CloudError> {
        let url = self.cloud.endpoint.clone().unwrap_or(public);
        http::base_and_host(&url).map_err(CloudError::Other)
    }

    pub fn stamp(&self) -> Stamp {
        Stamp::now()
    }

    /// Sends one signed request, under the token bucket and the time budget.
    pub async fn send(
        &self,
        operation: &'static str,
        base: &str,
        req: &Req,
    ) -> Result<Answer, CloudError> {
        let cloud = self.cloud;
        let labels = |result| ApiLabels {
            provider: cloud.provider.as_str(),
            operation,
            result,
        };
        if !cloud.bucket.take(self.deadline).await {
            cloud
                .metrics
                .requests
                .get_or_create(&labels("budget"))
                .inc();
            return Err(CloudError::Budget);
        }
        let budget = match self.deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => BACKGROUND_BUDGET,
        };
        let started = Instant::now();
        let result = cloud.http.send(base, req, budget).await;
        cloud
            .metrics
            .latency
            .get_or_create(&OperationLabels {
                provider: cloud.provider.as_str(),
                operation,
            })
            .observe(started.elapsed().as_secs_f64());
        let label = match &result {
            Ok(a) if a.status < 300 => "ok",
            Ok(a) if a.status == 404 => "not_found",
            Ok(a) if a.status == 429 => "throttled",
            Ok(a) if a.status == 401 || a.status == 403 => "auth_error",
            Ok(a) if a.status >= 500 => "server_error",
            Ok(_) => "error",
            Err(e) => e.label(),
        };
        cloud.metrics.requests.get_or_create(&labels(label)).inc();
        result
    }

    /// The cloud's message, without anything of the credentials, shortened.
    pub fn scrub(&self, message: &str) -> String {
        let mut m: String = message.chars().take(200).collect();
        for secret in [
            Some(&self.creds.access_key_id),
            Some(&self.creds.access_key_secret),
            self.creds.security_token.as_ref(),
        ]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        {
            m = m.replace(secret.as_str(), "***");
        }
        m
    }
}

/// The first of `keys` that holds a string in `v` ("" when none does): the clouds name their
/// error fields differently from one API to the next.
pub(crate) fn text<'a>(v: &'a serde_json::Value, keys: &[&str]) -> &'a str {
    keys.iter().find_map(|k| v[*k].as_str()).unwrap_or_default()
}

/// A listener from an answer's port (a number, or a number in a string) and protocol;
/// `None` for a port that is not one.
pub(crate) fn listener(
    port: &serde_json::Value,
    protocol: &serde_json::Value,
    owner: String,
) -> Option<Listener> {
    let port = port
        .as_u64()
        .or_else(|| port.as_str().and_then(|p| p.parse().ok()))
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)?;
    Some(Listener {
        port,
        protocol: protocol.as_str().unwrap_or("TCP").to_ascii_uppercase(),
        owner,
    })
}

/// A string field, when it is set and not empty.
pub(crate) fn non_empty(v: &serde_json::Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(String::from)
}

/// Whether an error code says that credentials, not the load balancer, are the problem
/// (`InvalidAccessKey.NotFound` is about the key).
pub(crate) fn about_credentials(code: &str) -> bool {
    let c = code.to_ascii_lowercase();
    [
        "accesskey",
        "signature",
        "credential",
        "token",
        "unauthorized",
        "authoriz",
    ]
    .iter()
    .any(|w| c.contains(w))
}

/// Whether an error says that the load balancer does not exist: a 404, or a "not found"
/// code, unless the code is about the credentials.
pub(crate) fn load_balancer_missing(status: u16, code: &str) -> bool {
    if about_credentials(code) {
        return false;
    }
    let c = code.to_ascii_lowercase();
    status == 404 || c.contains("notfound") || c.contains("not_found")
}

/// Classifies an HTTP status the provider module did not handle itself.
pub(crate) fn status_error(status: u16, code: &str, message: &str) -> CloudError {
    let what = if message.is_empty() {
        format!("HTTP {status} {code}")
    } else {
        format!("HTTP {status} {code}: {message}")
    };
    match status {
        429 => CloudError::Throttled(what),
        401 | 403 => CloudError::Auth(what),
        s if s >= 500 => CloudError::Server(what),
        _ => CloudError::Other(what),
    }
}

/// Where the region comes from when the config names none.
pub type RegionSource = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The cloud source: one per server, shared by every admission.
pub struct Cloud {
    provider: Provider,
    region: Option<String>,
    endpoint: Option<String>,
    cluster_id: Option<String>,
    timeout: Duration,
    refresh: Duration,
    http: Http,
    creds: Arc<CredStore>,
    bucket: Bucket,
    cache: RwLock<HashMap<String, Entry>>,
    pending: Mutex<HashMap<String, Pending>>,
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
        Ok(Arc::new(Self {
            provider,
            region: cfg.region.clone(),
            endpoint: cfg.endpoint.clone(),
            cluster_id,
            timeout: cfg.timeout.0,
            refresh: cfg.refresh.0,
            http: Http::new(extra_roots)?,
            creds,
            bucket: Bucket::new(f64::from(cfg.qps) / f64::from(replicas.max(1))),
            cache: RwLock::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            region_source: Mutex::new(None),
            metrics,
        }))
    }

    pub fn provider(&self) -> Provider {
        self.provider
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
    pub async fn view(self: &Arc<Self>, ids: &[String], file: Option<Arc<Snapshot>>) -> View {
        self.view_all(ids, file, self.timeout).await
    }

    /// Every id at once, within `budget`.
    pub async fn view_all(
        self: &Arc<Self>,
        ids: &[String],
        file: Option<Arc<Snapshot>>,
        budget: Duration,
    ) -> View {
        let deadline = Instant::now() + budget;
        let wanted: Vec<&String> = ids
            .iter()
            .filter(|id| {
                file.as_ref()
                    .is_none_or(|f| f.get(self.provider, id).is_none())
            })
            .collect();
        let got = futures::future::join_all(wanted.iter().map(|id| self.get(id, deadline))).await;
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
    pub async fn get(
        self: &Arc<Self>,
        id: &str,
        deadline: Instant,
    ) -> Result<Arc<Fact>, CloudError> {
        if let Some(fact) = self.cached(id) {
            return Ok(fact);
        }
        let budget = deadline.saturating_duration_since(Instant::now());
        let mut rx = self.start(id, deadline);
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
            Err(_) => Err(CloudError::Timeout(budget.as_millis())),
        }
    }

    fn cached(&self, id: &str) -> Option<Arc<Fact>> {
        let cache = self.cache.read().unwrap_or_else(|p| p.into_inner());
        let e = cache.get(id)?;
        if *e.fact == Fact::NotFound && e.fetched.elapsed() > NOT_FOUND_TTL {
            return None;
        }
        e.unused.store(0, Ordering::Relaxed);
        Some(Arc::clone(&e.fact))
    }

    /// Joins the call in flight for `id`, or starts one. The call runs to its end even when
    /// every admission waiting on it gave up: the next one finds the answer cached.
    fn start(self: &Arc<Self>, id: &str, deadline: Instant) -> Pending {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        // A call whose task ended without answering (it cannot, but then) is not joined.
        if let Some(rx) = pending.get(id)
            && rx.has_changed().is_ok()
        {
            return rx.clone();
        }
        let (tx, rx) = watch::channel(None);
        pending.insert(id.to_string(), rx.clone());
        drop(pending);
        let me = Arc::clone(self);
        let id = id.to_string();
        // Longer than the admission's budget, so a slow answer still lands in the cache.
        let deadline = deadline.max(Instant::now() + self.timeout.max(Duration::from_secs(1)) * 4);
        tokio::spawn(async move {
            let r = me.fetch(&id, Some(deadline)).await;
            if let Ok(fact) = &r {
                me.store(&id, Arc::clone(fact));
            }
            me.pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            let _ = tx.send(Some(r));
        });
        rx
    }

    fn store(&self, id: &str, fact: Arc<Fact>) {
        let mut cache = self.cache.write().unwrap_or_else(|p| p.into_inner());
        cache.insert(
            id.to_string(),
            Entry {
                fact,
                fetched: Instant::now(),
                unused: AtomicU32::new(0),
            },
        );
        self.metrics.cached.set(cache.len() as i64);
    }

    /// One look-up at the provider's API.
    async fn fetch(&self, id: &str, deadline: Option<Instant>) -> Result<Arc<Fact>, CloudError> {
        let region = self.region().ok_or_else(|| {
            CloudError::Other(
                "no region: set inventory.cloud.region or label the nodes topology.kubernetes.io/region".into(),
            )
        })?;
        let call = Call {
            cloud: self,
            region: &region,
            creds: self.creds.get(),
            deadline,
        };
        let fact = match self.provider {
            Provider::Ctyun => ctyun::fetch(&call, id).await,
            Provider::Alibaba => alibaba::fetch(&call, id).await,
            Provider::Huawei => huawei::fetch(&call, id).await,
            Provider::Volcengine => volcengine::fetch(&call, id).await,
        }?;
        Ok(Arc::new(fact))
    }

    /// One background round: every id in `named` (and every cached id an admission asked
    /// for lately) is read again; failures keep the last fact and retry with backoff.
    pub async fn refresh_round(&self, named: &HashSet<String>) {
        let ids: Vec<String> = {
            let mut cache = self.cache.write().unwrap_or_else(|p| p.into_inner());
            for (id, e) in cache.iter_mut() {
                if named.contains(id) {
                    e.unused.store(0, Ordering::Relaxed);
                } else {
                    e.unused.fetch_add(1, Ordering::Relaxed);
                }
            }
            cache.retain(|_, e| e.unused.load(Ordering::Relaxed) <= UNUSED_REFRESHES);
            self.metrics.cached.set(cache.len() as i64);
            named
                .iter()
                .chain(cache.keys())
                .cloned()
                .collect::<HashSet<_>>()
                .into_iter()
                .collect()
        };
        for id in ids {
            let mut backoff = Duration::from_millis(500);
            for attempt in 0..3 {
                match self.fetch(&id, None).await {
                    Ok(fact) => {
                        self.store(&id, fact);
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(load_balancer = %id, error = %e, attempt, "cloud refresh failed; the last facts stay");
                        if !e.transient() || attempt == 2 {
                            break;
                        }
                        tokio::time::sleep(backoff).await;
                        backoff *= 4;
                    }
                }
            }
        }
        self.update_gauges();
    }

    pub fn update_gauges(&self) {
        let cache = self.cache.read().unwrap_or_else(|p| p.into_inner());
        let oldest = cache
            .values()
            .map(|e| e.fetched.elapsed().as_secs())
            .max()
            .unwrap_or(0);
        self.metrics.cached.set(cache.len() as i64);
        self.metrics.oldest_fact_age.set(oldest as i64);
    }

    /// Runs the refresh every `inventory.cloud.refresh`, for the ids `named` returns.
    pub fn spawn_refresh(
        self: &Arc<Self>,
        named: impl Fn() -> HashSet<String> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.refresh);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut gauges = tokio::time::interval(Duration::from_secs(5));
            loop {
                tokio::select! {
                    _ = tick.tick() => me.refresh_round(&named()).await,
                    _ = gauges.tick() => me.update_gauges(),
                }
            }
        })
    }

    /// The facts cached now, without asking the cloud (the audit).
    pub fn cached_view(&self, file: Option<Arc<Snapshot>>) -> View {
        let region = self.region().unwrap_or_else(|| "(unknown)".into());
        let cache = self.cache.read().unwrap_or_else(|p| p.into_inner());
        View {
            provider: self.provider,
            region,
            file,
            facts: cache
                .iter()
                .map(|(k, e)| (k.clone(), Ok(Arc::clone(&e.fact))))
                .collect(),
        }
    }

    /// Every cached fact (for `inventory dump` and tests).
    pub fn snapshot(&self) -> Vec<(String, Arc<Fact>)> {
        let cache = self.cache.read().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<_> = cache
            .iter()
            .map(|(k, e)| (k.clone(), Arc::clone(&e.fact)))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// What the rules read: the cloud's view (which holds the file too), else the file, else
/// nothing.
pub fn inventory_of<'a>(view: Option<&'a View>, file: Option<&'a Snapshot>) -> &'a dyn Inventory {
    match (view, file) {
        (Some(v), _) => v,
        (None, Some(f)) => f,
        (None, None) => &crate::vocab::ctx::EmptyInventory,
    }
}

/// The inventory one admission sees: the file first, then what the cloud said.
#[derive(Debug)]
pub struct View {
    provider: Provider,
    region: String,
    file: Option<Arc<Snapshot>>,
    facts: HashMap<String, Result<Arc<Fact>, String>>,
}

impl View {
    /// What the cloud said of each id it was asked about: the facts, or why there are none.
    pub fn answers(&self) -> Vec<(&str, Result<Option<&LoadBalancer>, &str>)> {
        let mut v: Vec<_> = self
            .facts
            .iter()
            .map(|(id, r)| {
                let r = match r {
                    Ok(f) => match f.as_ref() {
                        Fact::Found(lb) => Ok(Some(lb)),
                        Fact::NotFound => Ok(None),
                    },
                    Err(e) => Err(e.as_str()),
                };
                (id.as_str(), r)
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// A view from fixed facts (tests, `check`).
    pub fn fixed(
        provider: Provider,
        region: &str,
        file: Option<Arc<Snapshot>>,
        facts: HashMap<String, Result<Arc<Fact>, String>>,
    ) -> Self {
        Self {
            provider,
            region: region.into(),
            file,
            facts,
        }
    }
}

impl Inventory for View {
    fn configured(&self) -> bool {
        true
    }

    fn lookup(&self, provider: Provider, id: &str) -> Lookup<'_> {
        if let Some(f) = &self.file
            && let Some(lb) = f.get(provider, id)
        {
            return Lookup::Found(lb);
        }
        if provider != self.provider {
            return Lookup::Unknown;
        }
        match self.facts.get(id) {
            Some(Ok(fact)) => match fact.as_ref() {
                Fact::Found(lb) => Lookup::Found(lb),
                Fact::NotFound => Lookup::NotFound {
                    region: &self.region,
                },
            },
            Some(Err(e)) => Lookup::Unavailable(e),
            None => Lookup::Unknown,
        }
    }
}

#[cfg(test)]
#[path = "cloud_tests.rs"]
mod tests;
