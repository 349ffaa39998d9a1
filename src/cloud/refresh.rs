//! The background refresh: every `inventory.cloud.refresh`, every load balancer a Service
//! names (and every one an admission asked for lately) is read again, so admissions almost
//! never wait. "Not found" ids are not read in the background; failures keep the last fact
//! and retry with backoff. The stale-facts gauge is kept current while a round runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Cloud;
use super::outcome::CloudError;

/// Up to three tries, with backoff, while the error is worth a retry.
pub(crate) async fn retried<T, F, Fut>(mut f: F) -> Result<T, CloudError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, CloudError>>,
{
    let mut backoff = Duration::from_millis(500);
    let mut attempt = 0;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if !e.transient() || attempt == 2 => return Err(e),
            Err(e) => {
                tracing::debug!(error = %e, attempt, "cloud refresh: retrying");
                tokio::time::sleep(backoff).await;
                backoff *= 4;
                attempt += 1;
            }
        }
    }
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
    provider: crate::vocab::provider::Provider,
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
        super::batch::plan(provider, own)
    };
    batches.sort_by_key(|b| !b.iter().any(|id| owns(id)));
    batches
}

/// How often the gauges are updated, whether or not a round runs.
const GAUGES_EVERY: Duration = Duration::from_secs(5);

impl Cloud {
    /// One background round over `named` and the ids admissions asked for lately.
    pub async fn refresh_round(&self, named: &HashSet<String>) {
        let idle = self.refresh * UNUSED_REFRESHES;
        let mut ids = self.cache.plan_round(named, self.now(), idle);
        // An id that cannot be one is never asked about, in the background either.
        ids.retain(|id| super::valid_id(id));
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
        let round = self.round_listeners(&ids).await;
        let alone = self.one_at_a_time.load(Ordering::Relaxed);
        for batch in own_first(self.provider, ids, |id| self.shard.owns(id), alone) {
            // One id alone is read with the single-id calls, unless its listeners are read.
            if let [id] = batch.as_slice()
                && !round.covers(self.provider, id)
            {
                self.refresh_one(id, named).await;
                continue;
            }
            match retried(|| self.fetch_many(&batch, &round)).await {
                Ok(found) => {
                    let now = self.now();
                    let listed: HashSet<String> = found.iter().map(|lb| lb.id.clone()).collect();
                    for lb in found {
                        let id = lb.id.clone();
                        let n = self.cache.put(
                            &id,
                            Arc::new(super::Fact::Found(lb)),
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
        match retried(|| self.fetch(id, None, super::Tokens::Background)).await {
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
}
