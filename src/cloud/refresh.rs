//! The background refresh: every `inventory.cloud.refresh`, every load balancer a Service
//! names (and every one an admission asked for lately) is read again, so admissions almost
//! never wait. "Not found" ids are not read in the background; failures keep the last fact
//! and retry with backoff. The stale-facts gauge is kept current while a round runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::Cloud;
use super::outcome::CloudError;

/// Up to three tries, with backoff, while the error is worth a retry.
async fn retried<T, F, Fut>(mut f: F) -> Result<T, CloudError>
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
/// many rounds, so the audit (which never calls the cloud) knows every one.
pub const FOREIGN_ROUNDS: u32 = 6;
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
        // and the audit's copy of a named one is read here every FOREIGN_ROUNDS rounds.
        let now = self.now();
        let foreign_every = self.refresh * FOREIGN_ROUNDS;
        ids.retain(|id| {
            self.shard.owns(id)
                || (named.contains(id)
                    && self
                        .cache
                        .age(id, now)
                        .is_none_or(|a| a + self.refresh / 2 >= foreign_every))
        });
        self.update_gauges();
        for batch in super::batch::plan(self.provider, ids) {
            if let [id] = batch.as_slice() {
                self.refresh_one(id, named).await;
                continue;
            }
            match retried(|| self.fetch_many(&batch)).await {
                Ok(found) => {
                    let now = self.now();
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
                    for id in &batch {
                        if self.cache.age(id, now) != Some(Duration::ZERO) {
                            self.refresh_one(id, named).await;
                        }
                    }
                }
                // One load balancer's listeners may be past the bound: each on its own.
                Err(CloudError::Incomplete(_)) => {
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
