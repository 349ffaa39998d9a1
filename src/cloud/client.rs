//! What a cloud's module offers the layers above: its single look-up, its batch list, and,
//! where the cloud has them, its region-wide listener lists. `clients::of` picks one per
//! provider; nothing above names a cloud.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use crate::cloud::base::fact::Fact;
use crate::cloud::base::outcome::CloudError;
use crate::cloud::transport::Call;
use crate::vocab::lb::{Listener, LoadBalancer, ServerGroup};

/// Listeners by load balancer id, as a region-wide list answered them.
pub(crate) type ByLoadBalancer = HashMap<String, Vec<Listener>>;

/// One cloud's requests and mappings.
pub(crate) trait Client: Sync {
    /// The kind of `id` (ids of one kind share a list call) and how many one call takes.
    fn batch(&self, id: &str) -> (&'static str, usize);

    /// What the cloud says of one id.
    fn fetch<'a>(
        &'a self,
        call: &'a Call<'a>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Fact, CloudError>>;

    /// Many ids of one kind (a batch): the load balancers the cloud listed, listeners read to
    /// their end (from `round` where it has them). Ids missing from the answer are not in it.
    fn fetch_many<'a>(
        &'a self,
        call: &'a Call<'a>,
        ids: &'a [String],
        round: &'a Round,
    ) -> BoxFuture<'a, Result<Vec<LoadBalancer>, CloudError>>;

    /// Whether the cloud lists a region's listeners at once (without a load balancer).
    fn region_lists(&self) -> bool {
        false
    }

    /// Every listener of the region's load balancers of `kind`, in at most `max_pages`
    /// pages; only asked when [`Self::region_lists`].
    fn region_listeners<'a>(
        &'a self,
        _call: &'a Call<'a>,
        kind: &'static str,
        _max_pages: usize,
    ) -> BoxFuture<'a, Result<ByLoadBalancer, CloudError>> {
        Box::pin(async move {
            Err(CloudError::Other(format!(
                "no region-wide listener list for {kind}"
            )))
        })
    }
}

/// What a background round reads once and shares among its batches: the listeners of the
/// kinds of id whose region-wide list was read to its end (a kind missing here is read load
/// balancer by load balancer; a load balancer missing from a kind that is here has no
/// listeners), and the server groups of each VPC a batch asked about, so a VPC's list is read
/// once a round whatever the number of its load balancers, and held once in memory.
#[derive(Debug, Default)]
pub(crate) struct Round {
    listeners: HashMap<&'static str, ByLoadBalancer>,
    groups: Mutex<HashMap<String, Groups>>,
}

/// A VPC's server groups as read (`None`: not known, the list could not be read to its end).
pub(crate) type Groups = Option<Arc<[ServerGroup]>>;

impl Round {
    /// Whether the listeners of ids of `kind` were read for the round.
    pub fn covers(&self, kind: &str) -> bool {
        self.listeners.contains_key(kind)
    }

    /// The listeners of `id` (of `kind`), if its kind's list was read.
    pub fn of(&self, kind: &str, id: &str) -> Option<Vec<Listener>> {
        self.listeners
            .get(kind)
            .map(|by_lb| by_lb.get(id).cloned().unwrap_or_default())
    }

    /// The listeners of `kind`'s region-wide list, read to its end.
    pub fn insert(&mut self, kind: &'static str, by_lb: ByLoadBalancer) {
        self.listeners.insert(kind, by_lb);
    }

    /// The server groups of `vpc`, if a batch of this round read them.
    pub fn groups(&self, vpc: &str) -> Option<Groups> {
        self.lock().get(vpc).cloned()
    }

    /// The server groups of `vpc` as a batch read them, for the round's later batches.
    pub fn keep_groups(&self, vpc: &str, groups: Groups) {
        self.lock().insert(vpc.to_string(), groups);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Groups>> {
        self.groups.lock().unwrap_or_else(|p| p.into_inner())
    }
}
