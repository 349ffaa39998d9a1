//! The background refresh: every `inventory.cloud.refresh`, every load balancer a Service
//! names (and every one an admission asked for lately) is read again, so admissions almost
//! never wait. "Not found" ids are not read in the background; failures keep the last fact
//! and retry with backoff. The stale-facts gauge is kept current while a round runs.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::cloud::base::fact::{Fact, valid_id};
use crate::cloud::base::metrics::CloudMetrics;
use crate::cloud::base::outcome::CloudError;
use crate::cloud::base::retry::retried;
use crate::cloud::cache::Cache;
use crate::cloud::clients;
use crate::cloud::shard::Shard;
use crate::cloud::source::Source;
use crate::cloud::transport::Tokens;
use crate::vocab::provider::Provider;

/// One round's ids in batches: one kind each, no more than one call takes. A batch of one
/// is read with the single-id calls.
pub(crate) fn plan(provider: Provider, ids: Vec<String>) -> Vec<Vec<String>> {
    let client = clients::of(provider);
    let mut kinds: BTreeMap<&'static str, (usize, Vec<String>)> = BTreeMap::new();
    for id in ids {
        let (kind, max) = client.batch(&id);
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

/// Ids no Service names and no admission asked for are dropped after this many refreshes.
const UNUSED_REFRESHES: u32 = 2;
/// A load balancer a Service names that another replica refreshes is read here once in this
/// many rounds, so the audit (which never calls the cloud) knows every one. Each round reads
/// its sixth of them (by a hash of the id), so no round carries them all.
pub const FOREIGN_ROUNDS: u32 = 6;

/// Which of the [`FOREIGN_ROUNDS`] rounds reads another replica's `id`.
fn foreign_slot(id: &str) -> u32 {
    use std::hash::{Hash, Hasher};
    // Fixed keys: the same slot on every replica and restart.
    let mut h = std::hash::DefaultHasher::new();
    id.hash(&mut h);
    (h.finish() % u64::from(FOREIGN_ROUNDS)) as u32
}
/// The round's batches (one id each when `alone`), this replica's own ids first: after a
/// start, when the audit's copy of every other id is read too, the ids admissions rely on
/// this replica for are fresh first.
fn own_first(
    provider: Provider,
    ids: Vec<String>,
    owns: impl Fn(&str) -> bool,
    alone: bool,
) -> Vec<Vec<String>> {
    let (mut own, other): (Vec<String>, Vec<String>) = ids.into_iter().partition(|id| owns(id));
    // One list per kind: a batch may hold the last of its own and the first of the others,
    // so the order costs no call. Then the batches with any of its own go first, whatever
    // their kind.
    own.extend(other);
    let mut batches = if alone {
        own.into_iter().map(|id| vec![id]).collect()
    } else {
        plan(provider, own)
    };
    batches.sort_by_key(|b| !b.iter().any(|id| owns(id)));
    batches
}

/// What a refresh round reads and writes, handed by the `Cloud`.
pub(crate) struct Refresh<'a> {
    pub source: &'a Source,
    pub cache: &'a Cache,
    pub shard: &'a Shard,
    pub metrics: &'a CloudMetrics,
    /// Background rounds run so far.
    pub rounds: &'a AtomicU32,
    /// `inventory.cloud.refresh`.
    pub every: Duration,
}

impl Refresh<'_> {
    fn now(&self) -> std::time::Instant {
        self.source.channel.now()
    }

    /// One background round over `named` and the ids admissions asked for lately.
    pub async fn round(&self, named: &HashSet<String>) {
        let idle = self.every * UNUSED_REFRESHES;
        let mut ids = self.cache.plan_round(named, self.now(), idle);
        // An id that cannot be one is never asked about, in the background either.
        ids.retain(|id| valid_id(id));
        // Another replica refreshes the rest: admissions re-ask what is older than a refresh,
        // and the audit's copy of a named one is read here once every FOREIGN_ROUNDS rounds
        // (at once when there is none).
        let now = self.now();
        let slot = self.rounds.fetch_add(1, Ordering::Relaxed) % FOREIGN_ROUNDS;
        ids.retain(|id| {
            self.shard.owns(id)
                || (named.contains(id)
                    && (self.cache.age(id, now).is_none() || foreign_slot(id) == slot))
        });
        self.update_gauges();
        let round = self.source.round_listeners(&ids).await;
        let alone = self.source.channel.one_at_a_time();
        for batch in own_first(self.source.provider(), ids, |id| self.shard.owns(id), alone) {
            // One id alone is read with the single-id calls, unless its listeners are read.
            if let [id] = batch.as_slice()
                && !round.covers(self.source.batch(id).0)
            {
                self.refresh_one(id, named).await;
                continue;
            }
            match retried(|| self.source.fetch_many(&batch, &round)).await {
                Ok(found) => {
                    let now = self.now();
                    let listed: HashSet<String> = found.iter().map(|lb| lb.id.clone()).collect();
                    for lb in found {
                        let id = lb.id.clone();
                        let n = self.cache.put(
                            &id,
                            Arc::new(Fact::Found(lb)),
                            now,
                            named.contains(&id),
                        );
                        self.metrics.cached.set(n as i64);
                    }
                    // Not listed is not "not found": only the single-id answer says that.
                    for id in batch.iter().filter(|id| !listed.contains(*id)) {
                        self.refresh_one(id, named).await;
                    }
                }
                // One load balancer's listeners may be past the bound, or the answer past
                // what lbguard reads: each on its own.
                Err(CloudError::Incomplete(_) | CloudError::TooLarge(_)) => {
                    for id in &batch {
                        self.refresh_one(id, named).await;
                    }
                }
                Err(e) => {
                    tracing::warn!(load_balancers = %batch.join(","), error = %e, "cloud refresh failed; the last facts stay");
                }
            }
        }
        self.update_gauges();
    }

    /// One id read again with the single-id calls.
    async fn refresh_one(&self, id: &str, named: &HashSet<String>) {
        match retried(|| self.source.fetch(id, None, Tokens::Background)).await {
            Ok(fact) => {
                let n = self.cache.put(id, fact, self.now(), named.contains(id));
                self.metrics.cached.set(n as i64);
            }
            Err(e) => {
                tracing::warn!(load_balancer = %id, error = %e, "cloud refresh failed; the last facts stay");
            }
        }
    }

    pub fn update_gauges(&self) {
        self.metrics.cached.set(self.cache.len() as i64);
        self.metrics
            .oldest_fact_age
            .set(self.cache.oldest_age(self.now(), |id| self.shard.owns(id)) as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_ids_are_read_before_the_audits_copy_of_the_others() {
        use crate::vocab::provider::Provider;
        // CLBs and NLBs (two kinds, two lists), half of each this replica's.
        let ids: Vec<String> = (0..30)
            .map(|i| format!("lb-{i:02}"))
            .chain((0..30).map(|i| format!("nlb-{i:02}")))
            .collect();
        let owns = |id: &str| id.ends_with(['1', '3', '5', '7', '9']);
        let batches = own_first(Provider::Alibaba, ids.clone(), owns, false);
        let flat: Vec<&String> = batches.iter().flatten().collect();
        assert_eq!(flat.len(), 60);
        // Every own id, CLB or NLB, comes before the first batch of others' alone; only a
        // batch that ends one kind's own ids holds others' too.
        let first_other = flat.iter().position(|id| !owns(id)).unwrap();
        let last_own = flat.iter().rposition(|id| owns(id)).unwrap();
        assert!(first_other >= 15, "{batches:?}");
        assert!(
            last_own < 40,
            "own ids wait for no whole batch of others': {batches:?}"
        );
        // As many calls as without the order: 30 CLBs ten a call, 30 NLBs twenty.
        assert_eq!(batches.len(), 3 + 2);
        // One at a time: own ones first still.
        let alone = own_first(Provider::Alibaba, ids, owns, true);
        assert_eq!(alone.len(), 60);
        assert!(alone[..30].iter().all(|b| owns(&b[0])));
        assert!(alone[30..].iter().all(|b| !owns(&b[0])));
    }

    #[test]
    fn the_others_load_balancers_spread_over_the_rounds() {
        let mut per_slot = [0u32; FOREIGN_ROUNDS as usize];
        for i in 0..6000 {
            per_slot[foreign_slot(&format!("lb-{i}")) as usize] += 1;
        }
        assert!(
            per_slot.iter().all(|n| (800..=1200).contains(n)),
            "{per_slot:?}"
        );
        assert_eq!(foreign_slot("lb-1"), foreign_slot("lb-1"));
    }

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
