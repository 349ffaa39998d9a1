//! Where the facts come from: the provider's client, reached through the channel with the
//! region and credentials of each call. One look-up, one batch, a round's listener lists;
//! what to keep of them is the cache's and the refresh's business.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cloud::auth::creds::Creds;
use crate::cloud::auth::store::CredStore;
use crate::cloud::base::fact::Fact;
use crate::cloud::base::metrics::ApiLabels;
use crate::cloud::base::outcome::CloudError;
use crate::cloud::base::retry::retried;
use crate::cloud::client::{Client, Round};
use crate::cloud::clients;
use crate::cloud::transport::{Call, Channel, Tokens};
use crate::vocab::lb::LoadBalancer;
use crate::vocab::provider::Provider;

/// Where the region comes from when the config names none.
pub type RegionSource = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// How long the background refresh waits for credentials being exchanged.
const CREDENTIALS_BACKGROUND: Duration = Duration::from_secs(10);

/// Region-wide listener lists are read when they take fewer calls than one list per load
/// balancer: for a kind with at least this many ids, and in at most half as many pages.
const REGION_LISTS_FROM: usize = 2;

/// The provider's API as lbguard reads it.
pub(crate) struct Source {
    pub(crate) channel: Channel,
    client: &'static dyn Client,
    region: Option<String>,
    /// Where the region comes from when the config does not say (the nodes' label).
    region_source: Mutex<Option<RegionSource>>,
    creds: Arc<CredStore>,
}

impl Source {
    pub(crate) fn new(channel: Channel, region: Option<String>, creds: Arc<CredStore>) -> Self {
        Self {
            client: clients::of(channel.provider),
            channel,
            region,
            region_source: Mutex::new(None),
            creds,
        }
    }

    pub(crate) fn provider(&self) -> Provider {
        self.channel.provider
    }

    /// The kind of `id` and how many of its kind one list call takes.
    pub(crate) fn batch(&self, id: &str) -> (&'static str, usize) {
        self.client.batch(id)
    }

    /// Short-lived credentials are fetched at start, before the first admission needs them.
    pub(crate) fn warm_credentials(&self) {
        self.creds.warm(&self.channel.http);
    }

    /// Reads the region from elsewhere (the cluster's nodes) when the config names none.
    pub(crate) fn set_region_source(&self, f: RegionSource) {
        *self.region_source.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
    }

    pub(crate) fn region(&self) -> Option<String> {
        self.region.clone().or_else(|| {
            let f = self
                .region_source
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            f.and_then(|f| f())
        })
    }

    /// Credentials to sign with, waiting at most until `deadline` (a while in the background)
    /// for an exchange; a failure is counted as the `Credentials` operation.
    pub(crate) async fn credentials(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Arc<Creds>, CloudError> {
        let wait = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => CREDENTIALS_BACKGROUND,
        };
        self.creds
            .current(&self.channel.http, wait)
            .await
            .inspect_err(|e| {
                self.channel
                    .metrics
                    .requests
                    .get_or_create(&ApiLabels {
                        provider: self.channel.provider.as_str(),
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
    ) -> Result<(String, Arc<Creds>), CloudError> {
        let region = self.region().ok_or_else(|| {
            CloudError::Other(
                "no region: set inventory.cloud.region or label the nodes topology.kubernetes.io/region".into(),
            )
        })?;
        Ok((region, self.credentials(deadline).await?))
    }

    /// One look-up at the provider's API.
    pub(crate) async fn fetch(
        &self,
        id: &str,
        deadline: Option<Instant>,
        tokens: Tokens,
    ) -> Result<Arc<Fact>, CloudError> {
        let (region, creds) = self.region_and_credentials(deadline).await?;
        let call = Call {
            channel: &self.channel,
            region: &region,
            creds,
            deadline,
            tokens,
        };
        let fact = self.client.fetch(&call, id).await;
        if let Err(e) = &fact {
            self.channel.count_incomplete(e);
        }
        Ok(Arc::new(fact?))
    }

    /// The round's region-wide listener lists (Volcengine: `DescribeListeners` and
    /// `DescribeNLBListeners` without a load balancer, 100 a page). A list that cannot be
    /// read to its end, or is longer than the calls it saves, is left out.
    pub(crate) async fn round_listeners(&self, ids: &[String]) -> Round {
        let mut round = Round::default();
        if !self.client.region_lists() {
            return round;
        }
        let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
        for id in ids {
            *kinds.entry(self.client.batch(id).0).or_default() += 1;
        }
        for (kind, n) in kinds {
            if n < REGION_LISTS_FROM {
                continue;
            }
            let read = retried(|| async {
                let (region, creds) = self.region_and_credentials(None).await?;
                let call = Call::background(&self.channel, &region, creds);
                self.client.region_listeners(&call, kind, n / 2).await
            })
            .await;
            match read {
                Ok(by_lb) => round.insert(kind, by_lb),
                Err(e) => {
                    self.channel.count_incomplete(&e);
                    tracing::debug!(error = %e, kind, "cloud refresh: listeners read load balancer by load balancer");
                }
            }
        }
        round
    }

    /// One batch (from `refresh::plan`) in the background: the load balancers the cloud
    /// listed, listeners read to their end. Ids missing from the answer are not in it.
    pub(crate) async fn fetch_many(
        &self,
        ids: &[String],
        round: &Round,
    ) -> Result<Vec<LoadBalancer>, CloudError> {
        let (region, creds) = self.region_and_credentials(None).await?;
        let call = Call::background(&self.channel, &region, creds);
        let r = self.client.fetch_many(&call, ids, round).await;
        if let Err(e) = &r {
            self.channel.count_incomplete(e);
        }
        r
    }
}
