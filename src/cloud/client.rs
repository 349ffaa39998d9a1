//! What a cloud's module offers the layers above: its single look-up, its batch list, and,
//! where the cloud has them, its region-wide listener lists. `clients::of` picks one per
//! provider; nothing above names a cloud.

use std::collections::HashMap;

use futures::future::BoxFuture;

use crate::cloud::base::fact::Fact;
use crate::cloud::base::outcome::CloudError;
use crate::cloud::transport::Call;
use crate::vocab::lb::{Listener, LoadBalancer};

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
        round: &'a RoundListeners,
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

/// Listeners read once for a whole round, by load balancer id, for the kinds of id whose
/// region-wide list was read to its end. A kind missing here is read load balancer by load
/// balancer; a load balancer missing from a kind that is here has no listeners.
#[derive(Debug, Default)]
pub(crate) struct RoundListeners(HashMap<&'static str, ByLoadBalancer>);

impl RoundListeners {
    /// Whether the listeners of ids of `kind` were read for the round.
    pub fn covers(&self, kind: &str) -> bool {
        self.0.contains_key(kind)
    }

    /// The listeners of `id` (of `kind`), if its kind's list was read.
    pub fn of(&self, kind: &str, id: &str) -> Option<Vec<Listener>> {
        self.0
            .get(kind)
            .map(|by_lb| by_lb.get(id).cloned().unwrap_or_default())
    }

    /// The listeners of `kind`'s region-wide list, read to its end.
    pub fn insert(&mut self, kind: &'static str, by_lb: ByLoadBalancer) {
        self.0.insert(kind, by_lb);
    }
}
