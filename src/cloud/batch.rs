//! Reading many load balancers in one call: where a cloud's list API takes many ids (and its
//! listener list many load balancers), the background refresh asks for a batch at a time
//! instead of one id at a time. A batch answer says what exists; an id it does not list is
//! asked again alone, so only the cloud's documented "not found" answer ever makes a
//! "does not exist".

use std::collections::{BTreeMap, HashMap};

use super::outcome::CloudError;
use super::transport::Call;
use super::{Cloud, alibaba, ctyun, huawei, volcengine};
use crate::vocab::lb::{Listener, LoadBalancer};
use crate::vocab::provider::Provider;

/// The kind of `id` (ids of one kind share a list call) and how many one call takes.
fn limit(provider: Provider, id: &str) -> (&'static str, usize) {
    match provider {
        Provider::Alibaba => alibaba::batch(id),
        Provider::Huawei => huawei::batch(id),
        Provider::Volcengine => volcengine::batch(id),
        Provider::Ctyun => ctyun::batch(id),
    }
}

/// One round's ids in batches: one kind each, no more than one call takes. A batch of one
/// is read with the single-id calls.
pub(crate) fn plan(provider: Provider, ids: Vec<String>) -> Vec<Vec<String>> {
    let mut kinds: BTreeMap<&'static str, (usize, Vec<String>)> = BTreeMap::new();
    for id in ids {
        let (kind, max) = limit(provider, &id);
        kinds.entry(kind).or_insert((max, Vec::new())).1.push(id);
    }
    kinds
        .into_values()
        .flat_map(|(max, ids)| {
            ids.chunks(max.max(1))
                .map(<[String]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Listeners read once for a whole round, by load balancer id, for the kinds of id whose
/// region-wide list was read to its end. A kind missing here is read load balancer by load
/// balancer; a load balancer missing from a kind that is here has no listeners.
#[derive(Debug, Default)]
pub(crate) struct RoundListeners(HashMap<&'static str, HashMap<String, Vec<Listener>>>);

impl RoundListeners {
    /// Whether the listeners of `id`'s kind were read for the round.
    pub fn covers(&self, provider: Provider, id: &str) -> bool {
        self.0.contains_key(limit(provider, id).0)
    }

    /// The listeners of `id` (of `kind`), if its kind's list was read.
    pub fn of(&self, kind: &str, id: &str) -> Option<Vec<Listener>> {
        self.0
            .get(kind)
            .map(|by_lb| by_lb.get(id).cloned().unwrap_or_default())
    }
}

/// Region-wide listener lists are read when they take fewer calls than one list per load
/// balancer: for a kind with at least this many ids, and in at most half as many pages.
const REGION_LISTS_FROM: usize = 2;

impl Cloud {
    /// The round's region-wide listener lists (Volcengine: `DescribeListeners` and
    /// `DescribeNLBListeners` without a load balancer, 100 a page). A list that cannot be
    /// read to its end, or is longer than the calls it saves, is left out.
    pub(crate) async fn round_listeners(&self, ids: &[String]) -> RoundListeners {
        let mut round = RoundListeners::default();
        if self.provider != Provider::Volcengine {
            return round;
        }
        let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
        for id in ids {
            *kinds.entry(volcengine::batch(id).0).or_default() += 1;
        }
        for (kind, n) in kinds {
            if n < REGION_LISTS_FROM {
                continue;
            }
            let read = super::refresh::retried(|| async {
                let (region, creds) = self.region_and_credentials(None).await?;
                let call = Call::background(self, &region, creds);
                volcengine::region_listeners(&call, kind == "nlb", n / 2).await
            })
            .await;
            match read {
                Ok(by_lb) => {
                    round.0.insert(kind, by_lb);
                }
                Err(e) => {
                    self.count_incomplete(&e);
                    tracing::debug!(error = %e, kind, "cloud refresh: listeners read load balancer by load balancer");
                }
            }
        }
        round
    }

    /// One batch (from [`plan`]) in the background: the load balancers the cloud listed,
    /// listeners read to their end. Ids missing from the answer are not in it.
    pub(crate) async fn fetch_many(
        &self,
        ids: &[String],
        round: &RoundListeners,
    ) -> Result<Vec<LoadBalancer>, CloudError> {
        let (region, creds) = self.region_and_credentials(None).await?;
        let call = Call::background(self, &region, creds);
        let r = match self.provider {
            Provider::Alibaba => alibaba::fetch_many(&call, ids).await,
            Provider::Huawei => huawei::fetch_many(&call, ids).await,
            Provider::Volcengine => volcengine::fetch_many(&call, ids, round).await,
            Provider::Ctyun => ctyun::fetch_many(&call, ids).await,
        };
        if let Err(e) = &r {
            self.count_incomplete(e);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn batches_hold_one_kind_and_no_more_than_a_call_takes() {
        let mut all: Vec<String> = (0..25).map(|i| format!("lb-{i:02}")).collect();
        all.extend((0..3).map(|i| format!("nlb-{i}")));
        let b = plan(Provider::Alibaba, all);
        let sizes: Vec<usize> = b.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![10, 10, 5, 3]);
        assert!(b[3].iter().all(|id| id.starts_with("nlb-")));
        assert!(b[..3].iter().flatten().all(|id| id.starts_with("lb-")));
        assert_eq!(
            plan(Provider::Huawei, ids(&["a", "b"])),
            vec![ids(&["a", "b"])]
        );
        assert!(plan(Provider::Huawei, Vec::new()).is_empty());
        assert_eq!(
            plan(Provider::Volcengine, ids(&["clb-1", "nlb-1", "clb-2"])),
            vec![ids(&["clb-1", "clb-2"]), ids(&["nlb-1"])]
        );
        assert_eq!(
            plan(Provider::Ctyun, ids(&["a", "b"])),
            vec![ids(&["a", "b"])]
        );
    }
}
